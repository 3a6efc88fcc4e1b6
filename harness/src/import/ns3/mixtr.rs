//! `mix.tr`: the binary trace, a `SimSetting` header then 56-byte `TraceFormat` records (`trace-
//! format.h`, x86-64 layout, little-endian).

use super::*;

pub const EV_RECV: u8 = 0;
/// Enqueue.
pub const EV_ENQU: u8 = 1;
/// Dequeue.
pub const EV_DEQU: u8 = 2;
/// Drop.
pub const EV_DROP: u8 = 3;

/// One `TraceFormat` record (trace-format.h), decoded from its 56 bytes:
/// `u64 time @0, u16 node @8, u8 intf @10, u8 qidx @11, u32 qlen @12, u32 sip @16,
/// u32 dip @20, u16 size @24, u8 l3Prot @26, u8 event @27, u8 ecn @28, u8 nodeType @29`, two
/// bytes of padding, then the union at 32 (8-aligned): data `u16 sport, u16 dport, u32 seq,
/// u64 ts, u16 pg, u16 payload`; ack `u16 sport, u16 dport, u16 flags, u16 pg, u32 seq, (4
/// bytes padding) u64 ts`; cnp `u16 fid, u8 qIndex, u8 ecnBits, u16 qfb, u16 total`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// ns.
    pub time: u64,
    /// Node id.
    pub node: u16,
    /// Interface (device index, from 1).
    pub intf: u8,
    /// Queue (priority class).
    pub qidx: u8,
    /// Bytes in that class of the port's queue (after a dequeue, before an enqueue).
    pub qlen: u32,
    /// IPs.
    pub sip: u32,
    /// IPs.
    pub dip: u32,
    /// Packet bytes (PPP + IP + ...).
    pub size: u16,
    /// 0x11 data, 0xFC ACK, 0xFD NACK, 0xFE PFC, 0xFF CNP.
    pub l3: u8,
    /// [`EV_RECV`] ...
    pub event: u8,
    /// IP ECN bits.
    pub ecn: u8,
    /// 0 host, 1 switch.
    pub node_type: u8,
    /// data/ack sport; cnp fid.
    pub sport: u16,
    /// data/ack dport.
    pub dport: u16,
    /// data or ack seq (bytes).
    pub seq: u32,
    /// ack flags.
    pub flags: u16,
    /// data payload bytes.
    pub payload: u16,
}

impl Record {
    /// Decode a record.
    pub fn decode(b: &[u8; RECORD_BYTES]) -> Record {
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let mut t = [0u8; 8];
        t.copy_from_slice(&b[0..8]);
        let l3 = b[26];
        let (seq, flags, payload) = match l3 {
            0xFC | 0xFD => (u32_at(40), u16_at(36), 0),
            0x11 | 0x06 => (u32_at(36), 0, u16_at(50)),
            _ => (0, 0, 0),
        };
        Record {
            time: u64::from_le_bytes(t),
            node: u16_at(8),
            intf: b[10],
            qidx: b[11],
            qlen: u32_at(12),
            sip: u32_at(16),
            dip: u32_at(20),
            size: u16_at(24),
            l3,
            event: b[27],
            ecn: b[28],
            node_type: b[29],
            sport: u16_at(32),
            dport: u16_at(34),
            seq,
            flags,
            payload,
        }
    }
}

/// The `SimSetting` header of `mix.tr`.
#[derive(Clone, Debug, Default)]
pub struct SimSetting {
    /// (node, intf) → port rate, bit/s.
    pub port_speed: HashMap<(u16, u8), u64>,
    /// Window bound (maxBdp), bytes.
    pub win: u32,
}

pub(super) fn read_exact_or(
    r: &mut impl Read,
    buf: &mut [u8],
    path: &Path,
    offset: u64,
    what: &str,
) -> Result<(), ImportError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(ImportError::Binary {
                    path: path.into(),
                    offset,
                    message: format!(
                        "{what} truncated: needs {} bytes, the file ends after {got}",
                        buf.len()
                    ),
                });
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(ImportError::Io {
                    path: path.into(),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Read the header; returns it and its length in bytes.
pub(super) fn read_header(
    r: &mut impl Read,
    path: &Path,
) -> Result<(SimSetting, u64), ImportError> {
    let mut b4 = [0u8; 4];
    read_exact_or(r, &mut b4, path, 0, "SimSetting header (port count)")?;
    let n = u32::from_le_bytes(b4);
    if n > 1 << 24 {
        return Err(ImportError::Binary {
            path: path.into(),
            offset: 0,
            message: format!("SimSetting lists {n} ports: not an ns-3 mix.tr"),
        });
    }
    let mut s = SimSetting::default();
    let mut off = 4u64;
    let mut e = [0u8; 11];
    for _ in 0..n {
        read_exact_or(r, &mut e, path, off, "SimSetting port entry")?;
        let node = u16::from_le_bytes([e[0], e[1]]);
        let mut bps = [0u8; 8];
        bps.copy_from_slice(&e[3..11]);
        s.port_speed.insert((node, e[2]), u64::from_le_bytes(bps));
        off += 11;
    }
    read_exact_or(r, &mut b4, path, off, "SimSetting window")?;
    s.win = u32::from_le_bytes(b4);
    Ok((s, off + 4))
}

/// Read the next record: `Ok(None)` at a clean end of file; a partial record is an error.
pub(super) fn next_record(
    r: &mut impl Read,
    buf: &mut [u8; RECORD_BYTES],
    path: &Path,
    offset: u64,
) -> Result<Option<Record>, ImportError> {
    let mut got = 0;
    while got < RECORD_BYTES {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => {
                return Err(ImportError::Binary {
                    path: path.into(),
                    offset,
                    message: format!(
                        "record truncated: {got} of {RECORD_BYTES} bytes before the end of the file"
                    ),
                });
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(ImportError::Io {
                    path: path.into(),
                    source,
                });
            }
        }
    }
    let rec = Record::decode(buf);
    if rec.event > EV_DROP {
        return Err(ImportError::Binary {
            path: path.into(),
            offset,
            message: format!(
                "unknown event type {} (expected 0 Recv, 1 Enqu, 2 Dequ, 3 Drop)",
                rec.event
            ),
        });
    }
    if rec.node_type > 1 {
        return Err(ImportError::Binary {
            path: path.into(),
            offset,
            message: format!(
                "unknown node type {} (expected 0 host, 1 switch)",
                rec.node_type
            ),
        });
    }
    Ok(Some(rec))
}
