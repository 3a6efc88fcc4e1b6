//! Typed decode errors: which layer, at which byte offset, what was expected and what was found
//! (wire.md 7). A [`DecodeError`] never carries a heap allocation, so reporting one is free on the
//! hot path.

use core::fmt;

/// The protocol layer a header or an error belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    /// Capture record (link type, snaplen).
    Frame,
    /// Ethernet II header.
    Ethernet,
    /// 802.1Q / 802.1ad VLAN tag.
    Vlan,
    /// Linux cooked capture header (SLL or SLL2).
    LinuxSll,
    /// IPv4 header with options.
    Ipv4,
    /// IPv6 header.
    Ipv6,
    /// IPv6 extension headers.
    Ipv6Ext,
    /// GRE header of a mirrored packet (mirror.rs).
    Gre,
    /// ERSPAN II / III header of a mirrored packet.
    Erspan,
    /// UDP header.
    Udp,
    /// VXLAN header of a tunnelled packet (tunnel.rs).
    Vxlan,
    /// Geneve header and options of a tunnelled packet.
    Geneve,
    /// INT stack shim (hpcc dialect, and inside the fncc ACK extension).
    IntStack,
    /// RCC transmit-timestamp shim.
    RccShim,
    /// InfiniBand Base Transport Header.
    Bth,
    /// Reliable Datagram Extended Transport Header.
    Rdeth,
    /// Datagram Extended Transport Header.
    Deth,
    /// RDMA Extended Transport Header.
    Reth,
    /// Atomic Extended Transport Header.
    AtomicEth,
    /// ACK Extended Transport Header.
    Aeth,
    /// Atomic ACK Extended Transport Header.
    AtomicAckEth,
    /// Immediate data.
    ImmDt,
    /// Invalidate Extended Transport Header.
    Ieth,
    /// CNP reserved bytes.
    Cnp,
    /// FNCC ACK extension (N + INT stack).
    FnccExt,
    /// RCC ACK extension (cwnd, N, flags).
    RccExt,
    /// IB payload and pad bytes.
    Payload,
    /// Invariant CRC.
    Icrc,
    /// IEEE 802.1Qbb PFC pause frame.
    Pfc,
}

impl Layer {
    /// Short lowercase name used in reports (`bth`, `aeth`, `int`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Layer::Frame => "frame",
            Layer::Ethernet => "eth",
            Layer::Vlan => "vlan",
            Layer::LinuxSll => "sll",
            Layer::Ipv4 => "ipv4",
            Layer::Ipv6 => "ipv6",
            Layer::Ipv6Ext => "ipv6_ext",
            Layer::Gre => "gre",
            Layer::Erspan => "erspan",
            Layer::Udp => "udp",
            Layer::Vxlan => "vxlan",
            Layer::Geneve => "geneve",
            Layer::IntStack => "int",
            Layer::RccShim => "rcc_shim",
            Layer::Bth => "bth",
            Layer::Rdeth => "rdeth",
            Layer::Deth => "deth",
            Layer::Reth => "reth",
            Layer::AtomicEth => "atomiceth",
            Layer::Aeth => "aeth",
            Layer::AtomicAckEth => "atomicacketh",
            Layer::ImmDt => "immdt",
            Layer::Ieth => "ieth",
            Layer::Cnp => "cnp",
            Layer::FnccExt => "fncc_ext",
            Layer::RccExt => "rcc_ext",
            Layer::Payload => "payload",
            Layer::Icrc => "icrc",
            Layer::Pfc => "pfc",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Fewer bytes than the header needs. `available` counts captured bytes, so a record cut by
    /// snaplen is reported here and never read past.
    Truncated {
        /// Bytes the header needs from its start.
        needed: usize,
        /// Bytes there were from its start.
        available: usize,
    },
    /// A length field disagrees with the bytes or with the header's rules.
    BadLength {
        /// The field (`ihl`, `udp.length`, `ip.total_len`, …).
        field: &'static str,
        /// The value found.
        found: u64,
        /// What was expected, in words (`>= 5`, `<= 1480`, …).
        expected: &'static str,
    },
    /// The BTH opcode is not one wire.md 2 lists; the rest of the packet is kept opaque.
    UnknownOpcode(u8),
    /// INT nHop larger than the configured `max_hops`.
    NHopTooLarge {
        /// nHop found.
        n_hop: u8,
        /// Configured maximum.
        max_hops: u8,
    },
    /// A reserved field holds a value the spec reserves (reported, not rejected: wire.md preamble).
    Reserved {
        /// The field.
        field: &'static str,
        /// The value found.
        found: u64,
    },
    /// A header the layer does not know how to read (e.g. an IPv4 header that is not version 4).
    Unsupported {
        /// What was found, in words.
        what: &'static str,
        /// The value found.
        found: u64,
    },
    /// The ICRC in the packet differs from the one computed over it.
    IcrcMismatch {
        /// Computed ICRC (as the big-endian read of the 4 bytes that should be on the wire).
        expected: u32,
        /// ICRC found in the packet (big-endian read of its 4 trailing bytes).
        found: u32,
    },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ErrorKind::Truncated { needed, available } => {
                write!(f, "truncated: needed {needed} bytes, found {available}")
            }
            ErrorKind::BadLength {
                field,
                found,
                expected,
            } => {
                write!(f, "bad length: {field} = {found}, expected {expected}")
            }
            ErrorKind::UnknownOpcode(op) => write!(f, "unknown opcode 0x{op:02x}"),
            ErrorKind::NHopTooLarge { n_hop, max_hops } => {
                write!(f, "nHop {n_hop} above max_hops {max_hops}")
            }
            ErrorKind::Reserved { field, found } => {
                write!(f, "reserved value: {field} = 0x{found:x}")
            }
            ErrorKind::Unsupported { what, found } => write!(f, "unsupported {what} ({found})"),
            ErrorKind::IcrcMismatch { expected, found } => {
                write!(
                    f,
                    "ICRC mismatch: computed 0x{expected:08x}, found 0x{found:08x}"
                )
            }
        }
    }
}

impl ErrorKind {
    /// A one-word reason for machine-readable reports.
    pub const fn reason(&self) -> &'static str {
        match self {
            ErrorKind::Truncated { .. } => "truncated",
            ErrorKind::BadLength { .. } => "bad_length",
            ErrorKind::UnknownOpcode(_) => "unknown_opcode",
            ErrorKind::NHopTooLarge { .. } => "nhop_too_large",
            ErrorKind::Reserved { .. } => "reserved_value",
            ErrorKind::Unsupported { .. } => "unsupported",
            ErrorKind::IcrcMismatch { .. } => "icrc_mismatch",
        }
    }
}

/// A decode error or warning: layer, byte offset from the start of the frame, and the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{layer} at byte {offset}: {kind}")]
pub struct DecodeError {
    /// The layer being read.
    pub layer: Layer,
    /// Byte offset of that layer's header from the start of the captured frame.
    pub offset: usize,
    /// What was wrong.
    pub kind: ErrorKind,
}

impl DecodeError {
    /// Shorthand constructor.
    #[inline]
    pub const fn new(layer: Layer, offset: usize, kind: ErrorKind) -> Self {
        DecodeError {
            layer,
            offset,
            kind,
        }
    }

    /// A truncation error for a header of `needed` bytes with `available` captured bytes.
    #[inline]
    pub const fn truncated(layer: Layer, offset: usize, needed: usize, available: usize) -> Self {
        DecodeError::new(layer, offset, ErrorKind::Truncated { needed, available })
    }
}
