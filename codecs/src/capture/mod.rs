//! pcap / pcapng reading and pcap writing (wire.md 1 and 7, harness.md 1).
//!
//! [`CaptureReader`] streams records out of a capture without copying them: each
//! [`Record`] borrows the reader's buffer (or the caller's slice for
//! [`CaptureReader::from_slice`]) until the next call, so iterating a capture allocates nothing
//! per record and holds at most one block in memory, whatever the file size.
//!
//! - The format is detected from the first 4 bytes: classic pcap (microsecond `a1b2c3d4` or
//!   nanosecond `a1b23c4d`, either byte order) or pcapng (`0a0d0d0a`).
//! - Every timestamp becomes `u64` nanoseconds since the Unix epoch: pcap microseconds × 1000,
//!   pcap nanoseconds as they are, pcapng raw units scaled by the interface's `if_tsresol`
//!   (10^-n or 2^-n seconds, default 10^-6) plus its `if_tsoffset` seconds. Finer-than-ns
//!   resolutions are floored, as Wireshark does; a value past `u64::MAX` ns (year 2554)
//!   saturates at `u64::MAX` and one before the epoch at 0, never panicking.
//! - pcapng Interface Description Blocks give each interface its link type, snaplen and
//!   resolution; Enhanced, Simple and (obsolete) Packet Blocks are records; every other block is
//!   skipped without being buffered. Custom blocks (`0x00000BAD`, `0x40000BAD`) and systemd
//!   journal blocks take a frame number, because Wireshark shows them as frames: frame numbers
//!   stay equal to Wireshark's.
//! - Untrusted length fields never size an allocation: a record's captured length is capped at
//!   [`MAX_PACKET_BYTES`] (Wireshark's limit too) and a buffered pcapng block at
//!   [`MAX_BLOCK_BYTES`]. Any framing error ends the iteration: the error is returned once, with
//!   the byte offset and record number, and `next_record` returns `None` afterwards.
//!
//! The pcap file and record headers are parsed with `pcap-file` 2 ([`pcap_file::pcap::PcapParser`]).
//! pcapng blocks are framed here because `pcap-file` 2's pcapng parser ignores `if_tsresol`
//! (its `EnhancedPacketBlock::timestamp` is the raw count read as nanoseconds), rejects valid
//! Interface Description Blocks (an `if_tzone` option always fails its length check), allocates
//! a `Vec` for every packet block that has options, and buffers blocks of any size.
//!
//! [`PcapWriter`] writes nanosecond pcap files (used by the switch model for synthetic traces).

mod reader;
mod source;
mod ts;
mod writer;

use std::io;
use std::path::PathBuf;

use crate::packet::LinkStart;

pub use reader::{CaptureFormat, CaptureReader};
pub use source::{BlockSource, SliceSource, Source, StreamSource};
pub use ts::{TsGrain, TsResolution, pcapng_ts_ns};
pub use writer::PcapWriter;

/// Count `n` more records of link type `link` in `list`, kept in order of link type (the
/// records of link types no decoder here reads, as inspect, replay and init report them).
pub fn count_link(list: &mut Vec<(u32, u64)>, link: u32, n: u64) {
    match list.binary_search_by_key(&link, |&(l, _)| l) {
        Ok(i) => list[i].1 += n,
        Err(i) => list.insert(i, (link, n)),
    }
}

/// `list` in words: `link type 197: 43 records, link type 247: 1 record`.
pub fn describe_links(list: &[(u32, u64)]) -> String {
    list.iter()
        .map(|(l, n)| {
            format!(
                "link type {l}: {n} record{}",
                if *n == 1 { "" } else { "s" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Largest captured length a record may have: 256 KiB, Wireshark's `WTAP_MAX_PACKET_SIZE_STANDARD`.
pub const MAX_PACKET_BYTES: usize = 262_144;

/// A classic pcap record header's length: seconds, sub-seconds, captured and original length.
pub const PCAP_RECORD_HEADER_BYTES: usize = 16;

/// Largest pcapng block the reader buffers (packet and interface blocks): 1 MiB. Other block
/// types are skipped whatever their length.
pub const MAX_BLOCK_BYTES: usize = 1 << 20;

/// Most interfaces a pcapng section may describe (bounds the per-section table).
pub const MAX_INTERFACES: usize = 65_536;

/// EtherType of IPv4.
const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
const ETHERTYPE_IPV6: u16 = 0x86DD;

/// The link layer of a record: a tcpdump.org `LINKTYPE_*` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// `LINKTYPE_ETHERNET` (1): Ethernet II, with VLAN tags left to the packet decoder.
    Ethernet,
    /// `LINKTYPE_LINUX_SLL` (113): Linux cooked capture v1, a 16-byte header.
    LinuxSll,
    /// `LINKTYPE_LINUX_SLL2` (276): Linux cooked capture v2, a 20-byte header.
    LinuxSll2,
    /// `LINKTYPE_RAW` (101), also read from 12 and 14 (`DLT_RAW` of some systems): IPv4 or IPv6
    /// as the version nibble says.
    RawIp,
    /// `LINKTYPE_IPV4` (228): raw IPv4.
    Ipv4,
    /// `LINKTYPE_IPV6` (229): raw IPv6.
    Ipv6,
    /// Any other link type, with its number.
    Other(u32),
}

impl LinkType {
    /// The link type a `LINKTYPE_*` number names.
    pub const fn from_u32(value: u32) -> Self {
        match value {
            1 => LinkType::Ethernet,
            113 => LinkType::LinuxSll,
            276 => LinkType::LinuxSll2,
            101 | 12 | 14 => LinkType::RawIp,
            228 => LinkType::Ipv4,
            229 => LinkType::Ipv6,
            other => LinkType::Other(other),
        }
    }

    /// The `LINKTYPE_*` number written to a file (12 and 14 read as [`LinkType::RawIp`] come back
    /// as 101).
    pub const fn to_u32(self) -> u32 {
        match self {
            LinkType::Ethernet => 1,
            LinkType::LinuxSll => 113,
            LinkType::LinuxSll2 => 276,
            LinkType::RawIp => 101,
            LinkType::Ipv4 => 228,
            LinkType::Ipv6 => 229,
            LinkType::Other(v) => v,
        }
    }

    /// Length of the fixed link header before the network layer (`None` for Ethernet, whose
    /// length depends on its VLAN tags, and for unsupported link types).
    pub const fn header_len(self) -> Option<usize> {
        match self {
            LinkType::LinuxSll => Some(16),
            LinkType::LinuxSll2 => Some(20),
            LinkType::RawIp | LinkType::Ipv4 | LinkType::Ipv6 => Some(0),
            LinkType::Ethernet | LinkType::Other(_) => None,
        }
    }

    /// Where the packet decoder starts in `data` (a record's captured bytes).
    ///
    /// Ethernet stays with the decoder ([`LinkStart::Ethernet`], VLAN tags included). Linux
    /// cooked headers give the network header's offset and their protocol field as EtherType
    /// (SLL: bytes 14..16 of 16; SLL2: bytes 0..2 of 20); this can be a VLAN TPID when the
    /// kernel left the tag in the packet, in which case the decoder continues through the tags.
    /// Raw IP starts at offset 0 with the EtherType chosen by the version nibble.
    pub fn link_start(self, data: &[u8]) -> Result<LinkStart, LinkError> {
        let needed = match self.header_len() {
            Some(0) => 1,
            Some(n) => n,
            None if self == LinkType::Ethernet => return Ok(LinkStart::Ethernet),
            None => return Err(LinkError::Unsupported(self.to_u32())),
        };
        if data.len() < needed {
            return Err(LinkError::Truncated {
                link: self,
                needed,
                available: data.len(),
            });
        }
        let network = |offset, ether_type| LinkStart::Network { offset, ether_type };
        match self {
            LinkType::LinuxSll => Ok(network(16, u16::from_be_bytes([data[14], data[15]]))),
            LinkType::LinuxSll2 => Ok(network(20, u16::from_be_bytes([data[0], data[1]]))),
            LinkType::Ipv4 => Ok(network(0, ETHERTYPE_IPV4)),
            LinkType::Ipv6 => Ok(network(0, ETHERTYPE_IPV6)),
            _ => match data[0] >> 4 {
                4 => Ok(network(0, ETHERTYPE_IPV4)),
                6 => Ok(network(0, ETHERTYPE_IPV6)),
                v => Err(LinkError::UnknownIpVersion(v)),
            },
        }
    }
}

impl std::fmt::Display for LinkType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkType::Ethernet => f.write_str("Ethernet (1)"),
            LinkType::LinuxSll => f.write_str("Linux SLL (113)"),
            LinkType::LinuxSll2 => f.write_str("Linux SLL2 (276)"),
            LinkType::RawIp => f.write_str("raw IP (101)"),
            LinkType::Ipv4 => f.write_str("raw IPv4 (228)"),
            LinkType::Ipv6 => f.write_str("raw IPv6 (229)"),
            LinkType::Other(v) => write!(f, "link type {v}"),
        }
    }
}

/// One packet record of a capture, borrowing its bytes from the reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// 1-based frame number, equal to Wireshark's `frame.number`.
    pub frame_number: u64,
    /// Capture timestamp, ns since the Unix epoch (0 for a pcapng Simple Packet Block, which has
    /// none).
    pub ts_ns: u64,
    /// Length of the packet on the wire (`frame.len`).
    pub orig_len: u32,
    /// The captured bytes (`frame.cap_len` of them), link header included.
    pub data: &'a [u8],
    /// Link type of the record's interface.
    pub link: LinkType,
    /// pcapng interface id within its section (0 for pcap).
    pub interface_id: u32,
}

impl Record<'_> {
    /// True when the capture stored fewer bytes than the packet had (snaplen cut).
    pub fn is_truncated(&self) -> bool {
        (self.data.len() as u64) < u64::from(self.orig_len)
    }

    /// Where the packet decoder starts (see [`LinkType::link_start`]).
    pub fn link_start(&self) -> Result<LinkStart, LinkError> {
        self.link.link_start(self.data)
    }
}

/// Why a record's link header cannot lead to a network header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// The record is shorter than its link header.
    #[error("{link} header truncated: needs {needed} bytes, the record has {available}")]
    Truncated {
        /// The record's link type.
        link: LinkType,
        /// Bytes the link header needs.
        needed: usize,
        /// Bytes captured.
        available: usize,
    },
    /// A raw IP record whose first nibble is neither 4 nor 6.
    #[error("raw IP record starts with IP version {0}, expected 4 or 6")]
    UnknownIpVersion(u8),
    /// A link type the decoder does not handle.
    #[error(
        "link type {0} is not supported (accepted: Ethernet 1, Linux SLL 113, Linux SLL2 276, \
         raw IP 101/12/14, IPv4 228, IPv6 229)"
    )]
    Unsupported(u32),
}

/// What went wrong reading or writing a capture. Reading errors name the byte offset in the file
/// and, for records, the frame number the record would have had.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file could not be opened or created.
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Reading from the underlying reader failed.
    #[error("read error at byte {offset}: {source}")]
    Io {
        /// File offset of the read.
        offset: u64,
        /// The I/O error.
        source: io::Error,
    },
    /// The input holds no byte at all.
    #[error("empty capture: expected a pcap or pcapng file header")]
    Empty,
    /// The first 4 bytes are neither a pcap nor a pcapng magic number.
    #[error(
        "not a pcap or pcapng file: the first 4 bytes are {found:#010x}; expected a1b2c3d4 or \
         a1b23c4d (pcap, either byte order) or 0a0d0d0a (pcapng)"
    )]
    BadMagic {
        /// The first 4 bytes, big-endian.
        found: u32,
    },
    /// The input ends inside a file or section header.
    #[error("{what} at byte {offset} truncated: needs {needed} bytes, {available} left")]
    TruncatedHeader {
        /// Which header.
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// Bytes it needs.
        needed: usize,
        /// Bytes the input still had.
        available: usize,
    },
    /// A file or section header with a version this reader does not know.
    #[error(
        "{format} at byte {offset}: version {major}.{minor} not supported (expected {expected})"
    )]
    UnsupportedVersion {
        /// `pcap` or `pcapng`.
        format: &'static str,
        /// Where the header starts.
        offset: u64,
        /// Major version found.
        major: u16,
        /// Minor version found.
        minor: u16,
        /// Supported versions.
        expected: &'static str,
    },
    /// A pcapng Section Header Block whose byte-order magic is wrong.
    #[error(
        "pcapng section header at byte {offset}: byte-order magic {found:#010x}, expected \
         1a2b3c4d in either byte order"
    )]
    BadByteOrderMagic {
        /// Where the block starts.
        offset: u64,
        /// The 4 bytes found, big-endian.
        found: u32,
    },
    /// The input ends inside a pcap record header.
    #[error(
        "record {record} at byte {offset}: record header truncated: needs {needed} bytes, {available} left"
    )]
    TruncatedRecordHeader {
        /// Frame number the record would have had.
        record: u64,
        /// Where the record starts.
        offset: u64,
        /// Bytes the header needs.
        needed: usize,
        /// Bytes left in the input.
        available: usize,
    },
    /// The input ends inside a pcap record's data.
    #[error(
        "record {record} at byte {offset}: captured length {len} but only {available} data bytes \
         left (file cut in the middle of a record)"
    )]
    TruncatedRecord {
        /// Frame number the record would have had.
        record: u64,
        /// Where the record starts.
        offset: u64,
        /// Captured length from the record header.
        len: u32,
        /// Data bytes left in the input.
        available: usize,
    },
    /// A record claims more captured bytes than [`MAX_PACKET_BYTES`].
    #[error(
        "record {record} at byte {offset}: captured length {len} exceeds the limit of {max} bytes"
    )]
    RecordTooLarge {
        /// Frame number the record would have had.
        record: u64,
        /// Where the record starts.
        offset: u64,
        /// Captured length found.
        len: u32,
        /// The limit.
        max: usize,
    },
    /// The input ends inside a pcapng block.
    #[error(
        "pcapng block at byte {offset} (type {block_type:#010x}) truncated: needs {needed} bytes, \
         {available} left (file cut in the middle of a block)"
    )]
    TruncatedBlock {
        /// Where the block starts.
        offset: u64,
        /// Its type (0 when fewer than 4 bytes were left).
        block_type: u32,
        /// Bytes the block needs.
        needed: u64,
        /// Bytes left in the input.
        available: u64,
    },
    /// A pcapng block length that no valid block has.
    #[error("pcapng block at byte {offset} (type {block_type:#010x}): {reason}")]
    BadBlock {
        /// Where the block starts.
        offset: u64,
        /// Its type.
        block_type: u32,
        /// What is wrong, with the values found.
        reason: BadBlockReason,
    },
    /// A pcapng packet block names an interface its section did not describe.
    #[error(
        "record {record} at byte {offset}: interface {interface_id} is not described (the section \
         has {interfaces} interface description block(s))"
    )]
    UnknownInterface {
        /// Frame number the record would have had.
        record: u64,
        /// Where the block starts.
        offset: u64,
        /// The interface id found.
        interface_id: u32,
        /// How many interfaces the section describes.
        interfaces: usize,
    },
    /// More than [`MAX_INTERFACES`] interface descriptions in one section.
    #[error("pcapng block at byte {offset}: more than {max} interface descriptions in one section")]
    TooManyInterfaces {
        /// Where the Interface Description Block starts.
        offset: u64,
        /// The limit.
        max: usize,
    },
    /// Writing failed.
    #[error("write error after {offset} bytes: {source}")]
    Write {
        /// Bytes written before the failure.
        offset: u64,
        /// The I/O error.
        source: io::Error,
    },
    /// A timestamp a classic pcap cannot hold (seconds are a u32: after 2106-02-07T06:28:15Z).
    #[error("timestamp {ts_ns} ns is after 2106-02-07T06:28:15Z, the last second a pcap can hold")]
    TimestampOutOfRange {
        /// The timestamp.
        ts_ns: u64,
    },
    /// A packet to write is longer than [`MAX_PACKET_BYTES`].
    #[error("cannot write a {len}-byte packet: the limit is {max} bytes")]
    PacketTooLarge {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A packet to write whose original length is shorter than its captured bytes.
    #[error("original length {orig_len} is shorter than the {captured} captured bytes")]
    OrigLenTooShort {
        /// The original length given.
        orig_len: u32,
        /// Bytes given.
        captured: usize,
    },
}

/// What is wrong with a pcapng block (see [`CaptureError::BadBlock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadBlockReason {
    /// Total length not a multiple of 4 or below the minimum of its type.
    #[error("block total length {len} is not a multiple of 4 or is below the minimum of {min}")]
    BadLength {
        /// Length found.
        len: u32,
        /// Minimum for this block type.
        min: u32,
    },
    /// The trailing length differs from the leading one.
    #[error("trailing block length {trailer} differs from the leading length {len}")]
    LengthMismatch {
        /// Leading length.
        len: u32,
        /// Trailing length.
        trailer: u32,
    },
    /// A block this reader buffers is larger than [`MAX_BLOCK_BYTES`].
    #[error("block length {len} exceeds the limit of {max} bytes")]
    TooLarge {
        /// Length found.
        len: u32,
        /// The limit.
        max: usize,
    },
    /// A packet block's captured length runs past the end of the block.
    #[error("captured length {captured} runs past the block body ({available} bytes for data)")]
    CapturedLenPastBlock {
        /// Captured length found.
        captured: u32,
        /// Bytes the block has for data.
        available: usize,
    },
    /// An option's length runs past the end of the block.
    #[error("option {code} of length {len} runs past the end of the block")]
    OptionPastBlock {
        /// Option code.
        code: u16,
        /// Option length.
        len: u16,
    },
    /// An option whose length is wrong for its code.
    #[error("option {code} ({name}) has length {len}, expected {expected}")]
    BadOptionLength {
        /// Option code.
        code: u16,
        /// Option name.
        name: &'static str,
        /// Length found.
        len: u16,
        /// Length required.
        expected: u16,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_type_numbers_round_trip() {
        // Values from the tcpdump.org LINKTYPE_ registry.
        for (n, lt) in [
            (1, LinkType::Ethernet),
            (113, LinkType::LinuxSll),
            (276, LinkType::LinuxSll2),
            (101, LinkType::RawIp),
            (228, LinkType::Ipv4),
            (229, LinkType::Ipv6),
            (147, LinkType::Other(147)),
        ] {
            assert_eq!(LinkType::from_u32(n), lt);
            assert_eq!(lt.to_u32(), n);
        }
        assert_eq!(LinkType::from_u32(12), LinkType::RawIp);
        assert_eq!(LinkType::from_u32(14), LinkType::RawIp);
    }

    /// The names the CLI prints (`inspect`'s header, errors), with the registry's numbers.
    #[test]
    fn link_type_names() {
        let names: Vec<String> = [
            LinkType::Ethernet,
            LinkType::LinuxSll,
            LinkType::LinuxSll2,
            LinkType::RawIp,
            LinkType::Ipv4,
            LinkType::Ipv6,
            LinkType::Other(147),
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        let want = [
            "Ethernet (1)",
            "Linux SLL (113)",
            "Linux SLL2 (276)",
            "raw IP (101)",
            "raw IPv4 (228)",
            "raw IPv6 (229)",
            "link type 147",
        ];
        assert_eq!(names, want);
    }

    #[test]
    fn link_start_for_each_link_type() {
        let net = |offset, ether_type| Ok(LinkStart::Network { offset, ether_type });
        assert_eq!(LinkType::Ethernet.link_start(&[]), Ok(LinkStart::Ethernet));
        // SLL: packet type 0, ARPHRD 1, addr len 6, 8 address bytes, protocol 0x86dd.
        let mut sll = [0u8; 17];
        sll[2..4].copy_from_slice(&[0, 1]);
        sll[14..16].copy_from_slice(&[0x86, 0xdd]);
        assert_eq!(LinkType::LinuxSll.link_start(&sll), net(16, 0x86dd));
        // SLL2: protocol first.
        let mut sll2 = [0u8; 20];
        sll2[0..2].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(LinkType::LinuxSll2.link_start(&sll2), net(20, 0x0800));
        assert_eq!(LinkType::RawIp.link_start(&[0x45]), net(0, 0x0800));
        assert_eq!(LinkType::RawIp.link_start(&[0x60]), net(0, 0x86dd));
        assert_eq!(LinkType::Ipv6.link_start(&[0x00]), net(0, 0x86dd));
        // 228 says IPv4 whatever the first nibble (the decoder reports a wrong version).
        assert_eq!(LinkType::Ipv4.link_start(&[0x60]), net(0, 0x0800));
        assert_eq!(
            LinkType::RawIp.link_start(&[0x55]),
            Err(LinkError::UnknownIpVersion(5))
        );
        assert_eq!(
            LinkType::RawIp.link_start(&[]),
            Err(LinkError::Truncated {
                link: LinkType::RawIp,
                needed: 1,
                available: 0
            })
        );
        assert_eq!(
            LinkType::LinuxSll2.link_start(&sll2[..19]),
            Err(LinkError::Truncated {
                link: LinkType::LinuxSll2,
                needed: 20,
                available: 19
            })
        );
        assert_eq!(
            LinkType::Other(147).link_start(&sll2),
            Err(LinkError::Unsupported(147))
        );
    }

    #[test]
    fn truncation_compares_captured_and_original_length() {
        let data = [0u8; 64];
        let mut r = Record {
            frame_number: 1,
            ts_ns: 0,
            orig_len: 66,
            data: &data,
            link: LinkType::Ethernet,
            interface_id: 0,
        };
        assert!(r.is_truncated());
        r.orig_len = 64;
        assert!(!r.is_truncated());
    }
}
