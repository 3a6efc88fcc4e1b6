//! Classic pcap writing: nanosecond timestamps, or microsecond ones on request.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::{CaptureError, LinkType, MAX_PACKET_BYTES};

/// Nanosecond-resolution pcap magic (written little-endian: `4d 3c b2 a1`).
const MAGIC_NANOSECOND: u32 = 0xA1B2_3C4D;
/// Microsecond-resolution (the original) pcap magic (written little-endian: `d4 c3 b2 a1`).
const MAGIC_MICROSECOND: u32 = 0xA1B2_C3D4;

/// Writes a classic pcap with nanosecond timestamps (or microsecond ones,
/// [`PcapWriter::microsecond`]), little-endian, version 2.4, snaplen [`MAX_PACKET_BYTES`]: the
/// format Wireshark, tcpdump and `pcap-file` all read.
///
/// The 24-byte file header and 16-byte record headers are written here rather than through
/// `pcap-file`'s `PcapWriter`, which owns its writer without giving it back for a `flush`.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    link: LinkType,
    nanosecond: bool,
    written: u64,
}

impl PcapWriter<BufWriter<File>> {
    /// Creates (or truncates) `path` and writes an Ethernet pcap header.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, CaptureError> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|source| CaptureError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Self::new(BufWriter::new(file))
    }
}

impl<W: Write> PcapWriter<W> {
    /// Writes an Ethernet (link type 1) pcap header to `out`.
    pub fn new(out: W) -> Result<Self, CaptureError> {
        Self::with_link_type(out, LinkType::Ethernet)
    }

    /// Writes a pcap header with `link` to `out`.
    pub fn with_link_type(out: W, link: LinkType) -> Result<Self, CaptureError> {
        Self::start(out, link, true)
    }

    /// Writes an Ethernet pcap header with the microsecond magic (`a1b2c3d4`) to `out`: the
    /// records' timestamps are floored to µs.
    pub fn microsecond(out: W) -> Result<Self, CaptureError> {
        Self::start(out, LinkType::Ethernet, false)
    }

    fn start(out: W, link: LinkType, nanosecond: bool) -> Result<Self, CaptureError> {
        let mut w = PcapWriter {
            out,
            link,
            nanosecond,
            written: 0,
        };
        let magic = if nanosecond {
            MAGIC_NANOSECOND
        } else {
            MAGIC_MICROSECOND
        };
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&magic.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes()); // version 2.4
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        // 8..16: thiszone and sigfigs, 0.
        header[16..20].copy_from_slice(&(MAX_PACKET_BYTES as u32).to_le_bytes());
        header[20..24].copy_from_slice(&link.to_u32().to_le_bytes());
        w.put(&header)?;
        Ok(w)
    }

    /// Appends a whole packet captured at `ts_ns` (ns since the Unix epoch; floored to µs in
    /// a microsecond file).
    pub fn write(&mut self, ts_ns: u64, data: &[u8]) -> Result<(), CaptureError> {
        let orig_len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        self.write_truncated(ts_ns, data, orig_len)
    }

    /// Appends a packet of `orig_len` bytes of which only `data` was captured (a snaplen cut).
    pub fn write_truncated(
        &mut self,
        ts_ns: u64,
        data: &[u8],
        orig_len: u32,
    ) -> Result<(), CaptureError> {
        if data.len() > MAX_PACKET_BYTES {
            return Err(CaptureError::PacketTooLarge {
                len: data.len(),
                max: MAX_PACKET_BYTES,
            });
        }
        if (orig_len as usize) < data.len() {
            return Err(CaptureError::OrigLenTooShort {
                orig_len,
                captured: data.len(),
            });
        }
        let ts_sec = u32::try_from(ts_ns / 1_000_000_000)
            .map_err(|_| CaptureError::TimestampOutOfRange { ts_ns })?;
        let ns = (ts_ns % 1_000_000_000) as u32;
        let ts_frac = if self.nanosecond { ns } else { ns / 1000 };
        let mut header = [0u8; 16];
        header[0..4].copy_from_slice(&ts_sec.to_le_bytes());
        header[4..8].copy_from_slice(&ts_frac.to_le_bytes());
        header[8..12].copy_from_slice(&(data.len() as u32).to_le_bytes());
        header[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.put(&header)?;
        self.put(data)
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> Result<(), CaptureError> {
        let offset = self.written;
        self.out
            .flush()
            .map_err(|source| CaptureError::Write { offset, source })
    }

    /// True when the timestamps are in ns (the nanosecond magic), false for µs.
    pub fn is_nanosecond(&self) -> bool {
        self.nanosecond
    }

    /// The link type written in the header.
    pub fn link_type(&self) -> LinkType {
        self.link
    }

    /// Bytes written so far, header included.
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> Result<W, CaptureError> {
        self.flush()?;
        Ok(self.out)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), CaptureError> {
        let offset = self.written;
        self.out
            .write_all(bytes)
            .map_err(|source: io::Error| CaptureError::Write { offset, source })?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}
