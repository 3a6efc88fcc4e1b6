//! The streaming capture reader.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use pcap_file::TsResolution as PcapTsResolution;
use pcap_file::pcap::PcapParser;

use super::source::{SliceSource, Source, StreamSource};
use super::ts::{TsResolution, pcap_ts_ns, pcapng_ts_ns};
use super::{
    BadBlockReason, CaptureError, LinkType, MAX_BLOCK_BYTES, MAX_INTERFACES, MAX_PACKET_BYTES,
    Record,
};

/// pcap file header length.
const PCAP_HEADER_BYTES: usize = 24;
use super::PCAP_RECORD_HEADER_BYTES;
/// pcapng block type + total length.
const BLOCK_HEADER_BYTES: usize = 8;
/// Smallest pcapng block: type, length, trailing length.
const MIN_BLOCK_BYTES: usize = 12;

/// pcapng block types (pcapng draft, section 11.1).
const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const PB: u32 = 0x0000_0002;
const SPB: u32 = 0x0000_0003;
const EPB: u32 = 0x0000_0006;
const SYSTEMD_JOURNAL: u32 = 0x0000_0009;
const CUSTOM: u32 = 0x0000_0BAD;
const CUSTOM_NO_COPY: u32 = 0x4000_0BAD;
/// Byte-order magic of a Section Header Block.
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

/// Fixed part of an Enhanced Packet Block body (and of the obsolete Packet Block).
const EPB_FIXED_BYTES: usize = 20;
/// Interface Description Block options.
const OPT_END: u16 = 0;
const IF_TSRESOL: u16 = 9;
const IF_TSOFFSET: u16 = 14;

/// The container a [`CaptureReader`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureFormat {
    /// Classic pcap.
    Pcap {
        /// Nanosecond magic (`a1b23c4d`) rather than microsecond.
        nanosecond: bool,
        /// Written big-endian.
        big_endian: bool,
        /// Link type of every record.
        link: LinkType,
        /// Snapshot length from the file header.
        snaplen: u32,
        /// Version (major, minor), 2.4 in practice.
        version: (u16, u16),
    },
    /// pcapng; link types and resolutions are per interface.
    PcapNg,
}

/// One interface of the current pcapng section.
#[derive(Clone, Copy, Debug)]
struct Interface {
    link: LinkType,
    snaplen: u32,
    tsresol: TsResolution,
    tsoffset_s: i64,
}

/// Where the next record lies in the source's available bytes, and what it says.
struct Loc {
    start: usize,
    len: usize,
    consume: usize,
    ts_ns: u64,
    orig_len: u32,
    link: LinkType,
    interface_id: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Pcap,
    PcapNg,
    Done,
}

/// Streams [`Record`]s out of a pcap or pcapng capture, borrowing each from its buffer.
///
/// ```no_run
/// # use ccreplay_codecs::capture::CaptureReader;
/// let mut reader = CaptureReader::open("trace.pcap")?;
/// while let Some(record) = reader.next_record() {
///     let record = record?;
///     println!("{} {} {}", record.frame_number, record.ts_ns, record.data.len());
/// }
/// # Ok::<(), ccreplay_codecs::capture::CaptureError>(())
/// ```
#[derive(Debug)]
pub struct CaptureReader<S> {
    src: S,
    /// File offset of the source's current position.
    offset: u64,
    /// Bytes of the record last returned, consumed at the next call.
    pending: usize,
    next_frame: u64,
    mode: Mode,
    format: CaptureFormat,
    pcap: Option<PcapParser>,
    ng_big_endian: bool,
    interfaces: Vec<Interface>,
    /// The pcap file header, to make readers that resume the capture elsewhere.
    pcap_header: [u8; PCAP_HEADER_BYTES],
}

impl CaptureReader<StreamSource<File>> {
    /// Opens a capture file and reads its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| CaptureError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Self::with_source(StreamSource::new(file))
    }
}

impl<R: Read> CaptureReader<StreamSource<R>> {
    /// Reads a capture from any reader (buffered internally: no `BufReader` needed).
    pub fn new(reader: R) -> Result<Self, CaptureError> {
        Self::with_source(StreamSource::new(reader))
    }
}

impl<'a> CaptureReader<SliceSource<'a>> {
    /// Reads a capture held in memory; records borrow `data` without copying.
    pub fn from_slice(data: &'a [u8]) -> Result<Self, CaptureError> {
        Self::with_source(SliceSource::new(data))
    }
}

impl<S: Source> CaptureReader<S> {
    /// Reads the file header (pcap) or first Section Header Block (pcapng) from `src`.
    pub fn with_source(src: S) -> Result<Self, CaptureError> {
        let mut r = CaptureReader {
            src,
            offset: 0,
            pending: 0,
            next_frame: 1,
            mode: Mode::Done,
            format: CaptureFormat::PcapNg,
            pcap: None,
            ng_big_endian: false,
            interfaces: Vec::new(),
            pcap_header: [0; PCAP_HEADER_BYTES],
        };
        let avail = r.src.fill(4).map_err(|e| io_error(0, e))?;
        let magic = match *avail {
            [] => return Err(CaptureError::Empty),
            [a, b, c, d, ..] => u32::from_be_bytes([a, b, c, d]),
            _ => return Err(truncated_header("file magic number", 0, 4, avail.len())),
        };
        match magic {
            0xA1B2_C3D4 | 0xD4C3_B2A1 | 0xA1B2_3C4D | 0x4D3C_B2A1 => r.read_pcap_header()?,
            SHB => {
                r.mode = Mode::PcapNg;
                r.read_shb()?;
            }
            found => return Err(CaptureError::BadMagic { found }),
        }
        Ok(r)
    }

    /// The container found in the header.
    pub fn format(&self) -> CaptureFormat {
        self.format
    }

    /// The byte source.
    pub fn source(&self) -> &S {
        &self.src
    }

    /// The byte source, giving up the reader.
    pub fn into_source(self) -> S {
        self.src
    }

    /// File offset of the next unread byte (after the record last returned).
    pub fn offset(&self) -> u64 {
        self.offset + self.pending as u64
    }

    /// The next record, borrowing the reader until the next call; `None` at the end of the
    /// capture and after an error.
    pub fn next_record(&mut self) -> Option<Result<Record<'_>, CaptureError>> {
        self.next_record_in().map(|r| r.map(|(rec, _)| rec))
    }

    /// [`next_record`](Self::next_record), with the source the record's bytes are borrowed
    /// from (to tell where they lie: [`BlockSource::locate`](super::BlockSource::locate)).
    pub fn next_record_in(&mut self) -> Option<Result<(Record<'_>, &S), CaptureError>> {
        if self.pending > 0 {
            self.src.consume(self.pending);
            self.offset += self.pending as u64;
            self.pending = 0;
        }
        let found = match self.mode {
            Mode::Pcap => self.next_pcap(),
            Mode::PcapNg => self.next_pcapng(),
            Mode::Done => return None,
        };
        match found {
            Ok(Some(loc)) => {
                let frame_number = self.next_frame;
                self.next_frame += 1;
                self.pending = loc.consume;
                let data = self
                    .src
                    .available()
                    .get(loc.start..loc.start + loc.len)
                    .unwrap_or(&[]);
                Some(Ok((
                    Record {
                        frame_number,
                        ts_ns: loc.ts_ns,
                        orig_len: loc.orig_len,
                        data,
                        link: loc.link,
                        interface_id: loc.interface_id,
                    },
                    &self.src,
                )))
            }
            Ok(None) => {
                self.mode = Mode::Done;
                None
            }
            Err(e) => {
                self.mode = Mode::Done;
                Some(Err(e))
            }
        }
    }

    /// A reader of the same classic pcap capture, resumed at a record boundary: `src` holds
    /// the file from offset `offset` on, and its first record is frame `next_frame`. It frames
    /// (and fails) exactly as this reader would from there, as long as `src` holds the file to
    /// its end or at least every record read from it whole; several threads can so frame
    /// parts of one file. `None` for pcapng, whose records depend on the blocks before them.
    pub fn resume_pcap<T: Source>(
        &self,
        src: T,
        offset: u64,
        next_frame: u64,
    ) -> Option<CaptureReader<T>> {
        if !matches!(self.format, CaptureFormat::Pcap { .. }) {
            return None;
        }
        let (_, parser) = PcapParser::new(&self.pcap_header).ok()?;
        Some(CaptureReader {
            src,
            offset,
            pending: 0,
            next_frame,
            mode: Mode::Pcap,
            format: self.format,
            pcap: Some(parser),
            ng_big_endian: false,
            interfaces: Vec::new(),
            pcap_header: self.pcap_header,
        })
    }

    /// The length of the classic pcap record whose header `header` starts with: its header and
    /// captured bytes, as its captured length field says (not checked against anything).
    /// `None` for pcapng, or when `header` is shorter than a record header.
    pub fn pcap_record_bytes(&self, header: &[u8]) -> Option<u64> {
        let CaptureFormat::Pcap { big_endian, .. } = self.format else {
            return None;
        };
        let h = header.get(..PCAP_RECORD_HEADER_BYTES)?;
        Some(PCAP_RECORD_HEADER_BYTES as u64 + u64::from(read_u32(h, 8, big_endian)))
    }

    /// The number of the frame the next record will be (from 1).
    pub fn next_frame(&self) -> u64 {
        self.next_frame
    }

    fn read_pcap_header(&mut self) -> Result<(), CaptureError> {
        let avail = self
            .src
            .fill(PCAP_HEADER_BYTES)
            .map_err(|e| io_error(0, e))?;
        if avail.len() < PCAP_HEADER_BYTES {
            return Err(truncated_header(
                "pcap file header",
                0,
                PCAP_HEADER_BYTES,
                avail.len(),
            ));
        }
        // The magic was checked, so pcap-file's header parser cannot fail here.
        let (_, parser) = PcapParser::new(avail).map_err(|_| CaptureError::BadMagic {
            found: u32::from_be_bytes([avail[0], avail[1], avail[2], avail[3]]),
        })?;
        let header = parser.header();
        let big_endian = header.endianness.is_big();
        // The link-type field's top bits carry FCS information (pcap draft, LinkType and
        // additional information); the link type is the low 26 bits.
        let link = LinkType::from_u32(read_u32(avail, 20, big_endian) & 0x03FF_FFFF);
        if header.version_major != 2 {
            return Err(CaptureError::UnsupportedVersion {
                format: "pcap",
                offset: 0,
                major: header.version_major,
                minor: header.version_minor,
                expected: "2.x",
            });
        }
        self.format = CaptureFormat::Pcap {
            nanosecond: header.ts_resolution == PcapTsResolution::NanoSecond,
            big_endian,
            link,
            snaplen: header.snaplen,
            version: (header.version_major, header.version_minor),
        };
        self.pcap_header
            .copy_from_slice(&avail[..PCAP_HEADER_BYTES]);
        self.pcap = Some(parser);
        self.mode = Mode::Pcap;
        self.src.consume(PCAP_HEADER_BYTES);
        self.offset = PCAP_HEADER_BYTES as u64;
        Ok(())
    }

    fn next_pcap(&mut self) -> Result<Option<Loc>, CaptureError> {
        let (
            Some(parser),
            CaptureFormat::Pcap {
                nanosecond,
                big_endian,
                link,
                ..
            },
        ) = (&self.pcap, self.format)
        else {
            return Ok(None);
        };
        let (record, offset) = (self.next_frame, self.offset);
        let avail = self
            .src
            .fill(PCAP_RECORD_HEADER_BYTES)
            .map_err(|e| io_error(offset, e))?;
        if avail.is_empty() {
            return Ok(None);
        }
        if avail.len() < PCAP_RECORD_HEADER_BYTES {
            return Err(CaptureError::TruncatedRecordHeader {
                record,
                offset,
                needed: PCAP_RECORD_HEADER_BYTES,
                available: avail.len(),
            });
        }
        // Check the captured length before buffering the record: never trust it for a size.
        let incl_len = read_u32(avail, 8, big_endian);
        if incl_len as usize > MAX_PACKET_BYTES {
            return Err(CaptureError::RecordTooLarge {
                record,
                offset,
                len: incl_len,
                max: MAX_PACKET_BYTES,
            });
        }
        let total = PCAP_RECORD_HEADER_BYTES + incl_len as usize;
        let avail = self.src.fill(total).map_err(|e| io_error(offset, e))?;
        if avail.len() < total {
            return Err(CaptureError::TruncatedRecord {
                record,
                offset,
                len: incl_len,
                available: avail.len() - PCAP_RECORD_HEADER_BYTES,
            });
        }
        // Enough bytes are buffered, so pcap-file's record parser cannot ask for more.
        let (_, raw) =
            parser
                .next_raw_packet(avail)
                .map_err(|_| CaptureError::TruncatedRecord {
                    record,
                    offset,
                    len: incl_len,
                    available: avail.len() - PCAP_RECORD_HEADER_BYTES,
                })?;
        Ok(Some(Loc {
            start: PCAP_RECORD_HEADER_BYTES,
            len: incl_len as usize,
            consume: total,
            ts_ns: pcap_ts_ns(raw.ts_sec, raw.ts_frac, nanosecond),
            orig_len: raw.orig_len,
            link,
            interface_id: 0,
        }))
    }

    /// Reads a Section Header Block at the current position: byte order, version; resets the
    /// interface table. Its options are skipped without being buffered.
    fn read_shb(&mut self) -> Result<(), CaptureError> {
        const FIXED: usize = BLOCK_HEADER_BYTES + 16; // magic, versions, section length
        let offset = self.offset;
        let avail = self.src.fill(FIXED).map_err(|e| io_error(offset, e))?;
        if avail.len() < 12 {
            return Err(truncated_header(
                "pcapng section header",
                offset,
                FIXED + 4,
                avail.len(),
            ));
        }
        let big_endian = match u32::from_be_bytes([avail[8], avail[9], avail[10], avail[11]]) {
            BYTE_ORDER_MAGIC => true,
            m if m == BYTE_ORDER_MAGIC.swap_bytes() => false,
            found => return Err(CaptureError::BadByteOrderMagic { offset, found }),
        };
        let len = read_u32(avail, 4, big_endian);
        check_block_len(offset, SHB, len, FIXED + 4)?;
        if avail.len() < FIXED {
            return Err(truncated_block(offset, SHB, len, avail.len()));
        }
        let (major, minor) = (
            read_u16(avail, 12, big_endian),
            read_u16(avail, 14, big_endian),
        );
        if major != 1 {
            return Err(CaptureError::UnsupportedVersion {
                format: "pcapng",
                offset,
                major,
                minor,
                expected: "1.x",
            });
        }
        self.ng_big_endian = big_endian;
        self.interfaces.clear();
        self.format = CaptureFormat::PcapNg;
        self.skip_block(offset, SHB, len)
    }

    /// Skips a whole block (whatever its size) and checks its trailing length.
    fn skip_block(&mut self, offset: u64, block_type: u32, len: u32) -> Result<(), CaptureError> {
        let body = u64::from(len) - 4;
        let skipped = self.src.skip(body).map_err(|e| io_error(offset, e))?;
        self.offset += skipped;
        let avail = self.src.fill(4).map_err(|e| io_error(self.offset, e))?;
        if skipped < body || avail.len() < 4 {
            return Err(CaptureError::TruncatedBlock {
                offset,
                block_type,
                needed: u64::from(len),
                available: skipped + avail.len().min(4) as u64,
            });
        }
        let trailer = read_u32(avail, 0, self.ng_big_endian);
        if trailer != len {
            return Err(bad_block(
                offset,
                block_type,
                BadBlockReason::LengthMismatch { len, trailer },
            ));
        }
        self.src.consume(4);
        self.offset += 4;
        Ok(())
    }

    fn next_pcapng(&mut self) -> Result<Option<Loc>, CaptureError> {
        loop {
            let offset = self.offset;
            let big = self.ng_big_endian;
            let avail = self
                .src
                .fill(MIN_BLOCK_BYTES)
                .map_err(|e| io_error(offset, e))?;
            if avail.is_empty() {
                return Ok(None);
            }
            let block_type = if avail.len() >= 4 {
                read_u32(avail, 0, big)
            } else {
                0
            };
            if avail.len() < MIN_BLOCK_BYTES {
                return Err(CaptureError::TruncatedBlock {
                    offset,
                    block_type,
                    needed: MIN_BLOCK_BYTES as u64,
                    available: avail.len() as u64,
                });
            }
            if block_type == SHB {
                self.read_shb()?;
                continue;
            }
            let len = read_u32(avail, 4, big);
            let min = match block_type {
                IDB => MIN_BLOCK_BYTES + 8,
                EPB | PB => MIN_BLOCK_BYTES + EPB_FIXED_BYTES,
                SPB => MIN_BLOCK_BYTES + 4,
                _ => MIN_BLOCK_BYTES,
            };
            check_block_len(offset, block_type, len, min)?;
            if !matches!(block_type, IDB | EPB | PB | SPB) {
                if matches!(block_type, CUSTOM | CUSTOM_NO_COPY | SYSTEMD_JOURNAL) {
                    self.next_frame += 1; // Wireshark shows these blocks as frames
                }
                self.skip_block(offset, block_type, len)?;
                continue;
            }
            if len as usize > MAX_BLOCK_BYTES {
                let reason = BadBlockReason::TooLarge {
                    len,
                    max: MAX_BLOCK_BYTES,
                };
                return Err(bad_block(offset, block_type, reason));
            }
            let len_us = len as usize;
            let avail = self.src.fill(len_us).map_err(|e| io_error(offset, e))?;
            if avail.len() < len_us {
                return Err(truncated_block(offset, block_type, len, avail.len()));
            }
            let trailer = read_u32(avail, len_us - 4, big);
            if trailer != len {
                let reason = BadBlockReason::LengthMismatch { len, trailer };
                return Err(bad_block(offset, block_type, reason));
            }
            let body = &avail[BLOCK_HEADER_BYTES..len_us - 4];
            if block_type == IDB {
                if self.interfaces.len() >= MAX_INTERFACES {
                    return Err(CaptureError::TooManyInterfaces {
                        offset,
                        max: MAX_INTERFACES,
                    });
                }
                let iface = parse_idb(body, big).map_err(|r| bad_block(offset, IDB, r))?;
                self.interfaces.push(iface);
                self.src.consume(len_us);
                self.offset += u64::from(len);
                continue;
            }
            let record = self.next_frame;
            let (interface_id, raw_ts, captured, orig_len, data_start) = match block_type {
                SPB => {
                    // No timestamp and no captured length: the packet fills the body, cut by
                    // the original length and by interface 0's snaplen.
                    let orig_len = read_u32(body, 0, big);
                    let mut captured = (body.len() - 4).min(orig_len as usize);
                    if let Some(iface) = self.interfaces.first().filter(|i| i.snaplen != 0) {
                        captured = captured.min(iface.snaplen as usize);
                    }
                    (0, None, captured as u32, orig_len, 4)
                }
                _ => {
                    let interface_id = if block_type == PB {
                        u32::from(read_u16(body, 0, big))
                    } else {
                        read_u32(body, 0, big)
                    };
                    let raw_ts = (u64::from(read_u32(body, 4, big)) << 32)
                        | u64::from(read_u32(body, 8, big));
                    let captured = read_u32(body, 12, big);
                    let orig_len = read_u32(body, 16, big);
                    (
                        interface_id,
                        Some(raw_ts),
                        captured,
                        orig_len,
                        EPB_FIXED_BYTES,
                    )
                }
            };
            if captured as usize > MAX_PACKET_BYTES {
                return Err(CaptureError::RecordTooLarge {
                    record,
                    offset,
                    len: captured,
                    max: MAX_PACKET_BYTES,
                });
            }
            if data_start + captured as usize > body.len() {
                let reason = BadBlockReason::CapturedLenPastBlock {
                    captured,
                    available: body.len() - data_start,
                };
                return Err(bad_block(offset, block_type, reason));
            }
            let Some(iface) = self.interfaces.get(interface_id as usize) else {
                return Err(CaptureError::UnknownInterface {
                    record,
                    offset,
                    interface_id,
                    interfaces: self.interfaces.len(),
                });
            };
            let ts_ns = raw_ts.map_or(0, |raw| pcapng_ts_ns(raw, iface.tsresol, iface.tsoffset_s));
            return Ok(Some(Loc {
                start: BLOCK_HEADER_BYTES + data_start,
                len: captured as usize,
                consume: len_us,
                ts_ns,
                orig_len,
                link: iface.link,
                interface_id,
            }));
        }
    }
}

/// An Interface Description Block body: link type, snaplen, `if_tsresol`, `if_tsoffset`.
fn parse_idb(body: &[u8], big: bool) -> Result<Interface, BadBlockReason> {
    let mut iface = Interface {
        link: LinkType::from_u32(u32::from(read_u16(body, 0, big))),
        snaplen: read_u32(body, 4, big),
        tsresol: TsResolution::MICRO,
        tsoffset_s: 0,
    };
    let mut opts = body.get(8..).unwrap_or(&[]);
    while opts.len() >= 4 {
        let code = read_u16(opts, 0, big);
        let len = read_u16(opts, 2, big);
        if code == OPT_END {
            break;
        }
        let padded = (usize::from(len) + 3) & !3;
        if 4 + padded > opts.len() {
            return Err(BadBlockReason::OptionPastBlock { code, len });
        }
        let value = &opts[4..4 + usize::from(len)];
        match code {
            IF_TSRESOL => {
                let [byte] = *value else {
                    return Err(bad_option(code, "if_tsresol", len, 1));
                };
                iface.tsresol = TsResolution::from_if_tsresol(byte);
            }
            IF_TSOFFSET => {
                if value.len() != 8 {
                    return Err(bad_option(code, "if_tsoffset", len, 8));
                }
                iface.tsoffset_s = read_u64(value, 0, big) as i64;
            }
            _ => {}
        }
        opts = &opts[4 + padded..];
    }
    Ok(iface)
}

fn bad_option(code: u16, name: &'static str, len: u16, expected: u16) -> BadBlockReason {
    BadBlockReason::BadOptionLength {
        code,
        name,
        len,
        expected,
    }
}

fn check_block_len(offset: u64, block_type: u32, len: u32, min: usize) -> Result<(), CaptureError> {
    if !len.is_multiple_of(4) || (len as usize) < min {
        let reason = BadBlockReason::BadLength {
            len,
            min: min as u32,
        };
        return Err(bad_block(offset, block_type, reason));
    }
    Ok(())
}

fn bad_block(offset: u64, block_type: u32, reason: BadBlockReason) -> CaptureError {
    CaptureError::BadBlock {
        offset,
        block_type,
        reason,
    }
}

fn truncated_block(offset: u64, block_type: u32, len: u32, available: usize) -> CaptureError {
    CaptureError::TruncatedBlock {
        offset,
        block_type,
        needed: u64::from(len),
        available: available as u64,
    }
}

fn truncated_header(
    what: &'static str,
    offset: u64,
    needed: usize,
    available: usize,
) -> CaptureError {
    CaptureError::TruncatedHeader {
        what,
        offset,
        needed,
        available,
    }
}

fn io_error(offset: u64, source: io::Error) -> CaptureError {
    CaptureError::Io { offset, source }
}

/// Reads `N` bytes at `at`; callers check the length first (zeros otherwise, never a panic).
fn bytes<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    b.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .unwrap_or([0; N])
}

fn read_u16(b: &[u8], at: usize, big: bool) -> u16 {
    let a = bytes::<2>(b, at);
    if big {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

fn read_u32(b: &[u8], at: usize, big: bool) -> u32 {
    let a = bytes::<4>(b, at);
    if big {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

fn read_u64(b: &[u8], at: usize, big: bool) -> u64 {
    let a = bytes::<8>(b, at);
    if big {
        u64::from_be_bytes(a)
    } else {
        u64::from_le_bytes(a)
    }
}
