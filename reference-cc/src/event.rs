//! What a model is fed ([`Event`]) and what it answers ([`Decision`]) — harness.md 2 and 3.

use ccreplay_codecs::shim::int::IntStack;

/// Dense flow number assigned by the harness (0, 1, 2, … in order of first appearance).
pub type FlowId = u32;

/// One input event (harness.md 2). `index` counts events of this flow from 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    /// Time in ns (C-2).
    pub t_ns: u64,
    /// Flow the event belongs to.
    pub flow: FlowId,
    /// Per-flow event ordinal, from 0.
    pub index: u64,
    /// What happened.
    pub kind: EventKind,
}

impl Event {
    /// The cause a decision made for this event carries (C-6).
    #[inline]
    pub const fn cause(&self) -> Cause {
        Cause::Event {
            kind: self.kind.name(),
            index: self.index,
        }
    }
}

/// The kinds of event of harness.md 2. Dialect fields a capture does not carry are `None`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EventKind {
    /// The sender transmitted a data packet.
    TxData {
        /// 24-bit PSN.
        psn: u32,
        /// Bytes on the wire counted by the model (IB payload bytes).
        bytes: u32,
        /// BTH opcode.
        opcode: u8,
    },
    /// The sender received an ACK.
    RxAck(AckInfo),
    /// The sender received a NAK.
    RxNak(AckInfo),
    /// The sender (reaction point) received a CNP.
    RxCnp,
    /// A data packet left a switch port (a switch-port capture: the egress mirror of the port).
    Dequeue {
        /// 24-bit PSN.
        psn: u32,
        /// Frame bytes on the wire (what the queue held).
        bytes: u32,
        /// BTH opcode.
        opcode: u8,
        /// IP ECN codepoint as the packet left (3 = CE: the switch marked it).
        ecn: u8,
        /// Egress queue length when the packet left, bytes, when the capture carries it (the
        /// port's own INT record, hpcc dialect); `None` otherwise.
        qlen_bytes: Option<u64>,
    },
    /// The receiver got a data packet.
    RxData {
        /// 24-bit PSN.
        psn: u32,
        /// IB payload bytes.
        bytes: u32,
        /// BTH opcode (RCC-3 counts FIRST / ONLY / LAST).
        opcode: u8,
        /// IP ECN codepoint (3 = CE).
        ecn: u8,
        /// RCC: sender transmit timestamp in ns.
        send_ts_ns: Option<u64>,
    },
}

/// What an ACK or NAK carries (harness.md 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckInfo {
    /// 24-bit PSN acknowledged.
    pub psn: u32,
    /// AETH syndrome.
    pub syndrome: u8,
    /// HPCC / FNCC INT stack.
    pub int: Option<IntStack>,
    /// FNCC / RCC: receiver's flow count N.
    pub n: Option<u16>,
    /// RCC: window assigned by the receiver, bytes.
    pub cwnd: Option<u32>,
    /// RCC: flags byte of the RCC extension.
    pub rcc_flags: Option<u8>,
    /// RCC: timestamp carried in the shim, ns.
    pub ts_ns: Option<u64>,
}

impl EventKind {
    /// The `kind` name used in JSON (harness.md 2).
    pub const fn name(&self) -> &'static str {
        match self {
            EventKind::TxData { .. } => "tx_data",
            EventKind::RxAck(_) => "rx_ack",
            EventKind::RxNak(_) => "rx_nak",
            EventKind::RxCnp => "rx_cnp",
            EventKind::RxData { .. } => "rx_data",
            EventKind::Dequeue { .. } => "dequeue",
        }
    }
}

/// Why a decision was made (harness.md 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// An input event of the flow.
    Event {
        /// Event kind name (`tx_data`, `rx_ack`, ...).
        kind: &'static str,
        /// The event's per-flow index.
        index: u64,
    },
    /// A model timer (name as the spec lists it, e.g. `alpha`, `rate_increase`, `cnp_interval`).
    Timer {
        /// Timer name.
        name: &'static str,
    },
}

/// Decision outputs (C-6). Absent outputs are `None` and are not serialized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    /// Sending rate in bps.
    pub rate_bps: Option<u64>,
    /// Window in bytes.
    pub window_bytes: Option<u64>,
    /// Receiver: a CNP is sent now.
    pub send_cnp: Option<bool>,
    /// Receiver (FNCC, RCC): N written into the ACK.
    pub ack_n: Option<u16>,
    /// Receiver (RCC): cwnd written into the ACK.
    pub ack_cwnd: Option<u32>,
    /// Receiver (RCC): flags written into the ACK.
    pub ack_flags: Option<u8>,
    /// Switch (DCQCN CP): the packet is marked CE.
    pub mark_ce: Option<bool>,
}

/// A state variable's value. f64 values are compared bit for bit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StateValue {
    /// Unsigned integer state.
    U64(u64),
    /// Signed integer state.
    I64(i64),
    /// Real-valued state (C-3).
    F64(f64),
    /// Flag.
    Bool(bool),
}

/// Maximum number of named state variables in one decision record.
pub const MAX_STATE: usize = 12;

/// Internal state after the event, named as in the paper (C-6).
///
/// Fixed capacity and no allocation: the names are one `'static` slice per model (a model
/// declares `const STATE_NAMES: &[&str]`), the values sit inline in the same order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct State {
    names: &'static [&'static str],
    values: [StateValue; MAX_STATE],
}

impl Default for State {
    fn default() -> Self {
        State {
            names: &[],
            values: [StateValue::U64(0); MAX_STATE],
        }
    }
}

impl State {
    /// A record with these names; `values` gives one value per name, in the same order.
    /// Names past [`MAX_STATE`] are dropped (the models never declare that many).
    #[inline]
    pub fn new(names: &'static [&'static str], values: &[StateValue]) -> Self {
        let n = names.len().min(values.len()).min(MAX_STATE);
        let mut v = [StateValue::U64(0); MAX_STATE];
        v[..n].copy_from_slice(&values[..n]);
        State {
            names: &names[..n],
            values: v,
        }
    }

    /// The named values, in the order the model declared them.
    pub fn fields(&self) -> impl Iterator<Item = (&'static str, StateValue)> + '_ {
        self.names.iter().copied().zip(self.values.iter().copied())
    }

    /// Look up one value by name.
    pub fn get(&self, name: &str) -> Option<StateValue> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// One decision (harness.md 3, C-6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// Time in ns.
    pub t_ns: u64,
    /// Flow.
    pub flow: FlowId,
    /// The event or timer that caused it.
    pub cause: Cause,
    /// Outputs.
    pub outputs: Outputs,
    /// State after the event.
    pub state: State,
}

impl Decision {
    /// A window-and-rate sender's decision on `ev` (HPCC, FNCC, `hpcc-ns3`) with an empty
    /// state record: the model fills its own in, or leaves it empty under
    /// [`crate::Model::outputs_only`].
    #[inline]
    pub fn rate_window(ev: &Event, rate_bps: u64, window_bytes: u64) -> Self {
        Decision {
            t_ns: ev.t_ns,
            flow: ev.flow,
            cause: ev.cause(),
            outputs: Outputs {
                rate_bps: Some(rate_bps),
                window_bytes: Some(window_bytes),
                ..Outputs::default()
            },
            state: State::default(),
        }
    }
}
