//! A deterministic discrete-event network that runs the reference models in closed loop
//! (docs/sim.md): hosts whose NIC applies the sender model's window and pacing and runs the
//! receiver logic, full-duplex links with a rate and a propagation delay, and output-queued
//! switches with a shared buffer, RED/ECN marking from a seeded generator (DCQCN-1), HPCC INT
//! stamping on data egress, FNCC INT insertion into ACKs (FNCC-3) and PFC (802.1Qbb pause
//! frames with XOFF / XON thresholds on ingress bytes). The switches can have bugs and drifting
//! INT clocks ([`switch_device`]), and their ports can be tapped ([`NetConfig::switch_taps`]).
//!
//! Time is integer picoseconds from 0; every timestamp leaving the engine (taps, INT `TS`, RCC
//! shims, model events) is [`EPOCH_NS`] plus the time floored to ns. A model timer due at ns `d`
//! fires at ps `d × 1000`, before every packet event of that ps (C-5). The same
//! [`NetConfig`] always gives the same run: there is no clock, no hash-map iteration and no
//! randomness but the seeded generators.
//!
//! ```
//! use ccreplay_reference_cc::net::{Cc, NetConfig, Network, NoTaps, Topology, FlowSpec};
//! use ccreplay_reference_cc::hpcc;
//!
//! let topology = Topology::incast(2, 100_000_000_000, 100_000_000_000, 1_000);
//! let mut cfg = NetConfig::new("example", topology, Cc::Hpcc(hpcc::Params::default()));
//! cfg.duration_ns = 50_000;
//! for src in 0..2 {
//!     cfg.flows.push(FlowSpec { src, dst: 2, size_bytes: 100_000, start_ns: 0, first_psn: None });
//! }
//! let run = Network::new(&cfg).unwrap().run(&mut NoTaps).unwrap();
//! assert_eq!(run.metrics.drops, 0);
//! ```

pub mod device;
mod engine;
pub mod metrics;
pub mod packet;
mod queue;
pub mod switch_device;
pub mod topology;

use ccreplay_codecs::Dialect;
use ccreplay_codecs::shim::int::IntStack;

use crate::dcqcn::cp::RedParams;
use crate::dcqcn::{NpParams, RpParams};
use crate::ns3::{DcqcnNs3Params, HpccNs3Params};
use crate::rcc::{ReceiverParams, SenderParams};
use crate::{Decision, ParamError, fncc, hpcc};

pub use device::{DataEcn, DeviceConfig, NicBug, floor_rate};
pub use engine::Network;
pub use metrics::Metrics;
pub use packet::{Packet, PacketKind, frame_len};
pub use switch_device::{SwitchBug, SwitchDeviceConfig};
pub use topology::{LinkSpec, Node, NodeId, NodeKind, Topology};

/// 2025-01-01T00:00:00Z in ns since the Unix epoch: simulated time 0.
pub const EPOCH_NS: u64 = 1_735_689_600_000_000_000;
/// Picoseconds per nanosecond.
pub const PS_PER_NS: u64 = 1_000;

/// A hint to bring the cache line holding `x` into the caches ahead of its use (x86_64:
/// `PREFETCHT0`; elsewhere nothing).
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: a prefetch reads nothing and cannot fault; `x` is a live reference anyway.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Time to serialise `bytes` at `rate_bps`, ps (floored).
#[inline]
pub fn ser_ps(bytes: u32, rate_bps: u64) -> u64 {
    let rate = rate_bps.max(1);
    // A frame's bits × 10^12 fit in 64 bits (up to 2^64 / (8 × 10^12) ≈ 2.3 M bytes): one
    // 64-bit division per paced packet, where the 128-bit one was a library call. PFC pauses
    // (up to 0xFFFF × 64 bytes) take the wide path; the quotient is the same either way.
    if bytes <= 2_000_000 {
        return u64::from(bytes) * 8_000_000_000_000 / rate;
    }
    let ps = u128::from(bytes) * 8 * 1_000_000_000_000 / u128::from(rate);
    u64::try_from(ps).unwrap_or(u64::MAX)
}

/// The congestion control in the loop and its parameters (network values — line rate, base RTT,
/// MTU — are filled in per host from the topology; see [`Network::host_cc`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Cc {
    /// DCQCN: `dcqcn` reaction point at senders, `dcqcn-np` at receivers; data is ECT(0).
    Dcqcn {
        /// Reaction point.
        rp: RpParams,
        /// Notification point.
        np: NpParams,
    },
    /// HPCC at senders; switches stamp INT into data on egress, receivers echo it.
    Hpcc(hpcc::Params),
    /// FNCC at senders, `fncc-receiver` at receivers; switches write INT into ACKs.
    Fncc(fncc::Params),
    /// RCC: `rcc-sender` and `rcc-receiver`.
    Rcc {
        /// Sender.
        sender: SenderParams,
        /// Receiver.
        receiver: ReceiverParams,
    },
    /// The HPCC authors' ns-3 simulator's HPCC (`hpcc-ns3`, CC_MODE 3) at senders: rate-based,
    /// with the window derived from the rate (`VAR_WIN`); switches stamp INT as for HPCC.
    HpccNs3(HpccNs3Params),
    /// The ns-3 simulator's DCQCN (`dcqcn-ns3`, CC_MODE 1) at senders, `dcqcn-np` at receivers.
    DcqcnNs3 {
        /// Reaction point, the simulator's parameters.
        rp: DcqcnNs3Params,
        /// Notification point.
        np: NpParams,
    },
}

impl Cc {
    /// The wire dialect the models speak.
    pub fn dialect(&self) -> Dialect {
        match self {
            Cc::Dcqcn { .. } => Dialect::Roce,
            Cc::Hpcc(_) => Dialect::Hpcc,
            Cc::Fncc(_) => Dialect::Fncc,
            Cc::Rcc { .. } => Dialect::Rcc,
            Cc::HpccNs3(_) => Dialect::Hpcc,
            Cc::DcqcnNs3 { .. } => Dialect::Roce,
        }
    }

    /// Short model family name (`dcqcn`, `hpcc`, `fncc`, `rcc`, `hpcc-ns3`, `dcqcn-ns3`).
    pub fn family(&self) -> &'static str {
        match self {
            Cc::Dcqcn { .. } => "dcqcn",
            Cc::Hpcc(_) => "hpcc",
            Cc::Fncc(_) => "fncc",
            Cc::Rcc { .. } => "rcc",
            Cc::HpccNs3(_) => "hpcc-ns3",
            Cc::DcqcnNs3 { .. } => "dcqcn-ns3",
        }
    }

    /// The sender's line rate, bps, as the parameters hold it.
    pub fn line_rate_bps(&self) -> u64 {
        match self {
            Cc::Dcqcn { rp, .. } => rp.line_rate_bps,
            Cc::Hpcc(p) => p.line_rate_bps,
            Cc::Fncc(p) => p.line_rate_bps,
            Cc::Rcc { sender, .. } => sender.line_rate_bps,
            Cc::HpccNs3(p) => p.line_rate_bps,
            Cc::DcqcnNs3 { rp, .. } => rp.line_rate_bps,
        }
    }

    /// DCQCN in either profile: RED marking at switches by default, CNPs from receivers.
    pub fn is_dcqcn(&self) -> bool {
        matches!(self, Cc::Dcqcn { .. } | Cc::DcqcnNs3 { .. })
    }
}

/// PFC on every switch ingress port (802.1Qbb, priority [`packet::DATA_PRIORITY`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcConfig {
    /// XOFF: a pause is sent upstream when the data bytes buffered from one ingress port
    /// exceed this.
    pub xoff_bytes: u64,
    /// XON: a resume (pause time 0) is sent when they fall to this or below.
    pub xon_bytes: u64,
    /// Pause time of XOFF frames, in quanta of 512 bit times (refreshed at half of it while
    /// the port stays above XON).
    pub pause_quanta: u16,
}

impl Default for PfcConfig {
    fn default() -> Self {
        PfcConfig {
            xoff_bytes: 100_000,
            xon_bytes: 80_000,
            pause_quanta: 0xFFFF,
        }
    }
}

/// What every switch does.
#[derive(Clone, Debug, PartialEq)]
pub struct SwitchConfig {
    /// Shared buffer of the switch, bytes (data and control frames waiting in any queue). A
    /// data packet that does not fit is dropped.
    pub buffer_bytes: u64,
    /// RED/ECN marking at enqueue on the egress data queue (DCQCN-1). Marks only ECN-capable
    /// packets, so it has no effect on the dialects other than `roce`.
    pub red: Option<RedParams>,
    /// RED per egress port rate: a switch port whose link runs at `rate_bps` marks with these
    /// parameters instead of `red` (ns-3's `KMIN_MAP` / `KMAX_MAP` / `PMAX_MAP`, third.cc
    /// `ConfigEcn` by the port's `DataRate`). Empty: every port uses `red`.
    pub red_by_rate: Vec<RedByRate>,
    /// PFC, if on.
    pub pfc: Option<PfcConfig>,
    /// INT switch ID of `sw0`-like switch number 0 (12 bits); switch `i` gets base + i.
    pub switch_id_base: u16,
    /// Added to the simulation clock in the INT `ts` every switch stamps (ns; the field keeps
    /// it mod 2^24): a switch clock started near its wrap makes the wrap happen in a short run.
    pub int_ts_offset_ns: u64,
    /// Added per switch to that offset: switch `i`'s clock runs `i` × this ahead (unsynchronized
    /// clocks, so their counters wrap at different times).
    pub int_ts_step_ns: u64,
    /// Start value of every switch port's INT `txBytes` counter, bytes (the field keeps it in
    /// 128-byte units mod 2^20): near 2^27 it wraps after a few hundred packets.
    pub int_tx_bytes_offset: u64,
    /// Tick of every switch's INT clock, ns (1 = exact; [`NetConfig::switch_clocks`] sets one
    /// switch's): every `ts` is the switch's clock floored to a multiple of it, so two records
    /// within one tick carry the same `ts` (HPCC-3).
    pub int_ts_resolution_ns: u64,
}

/// The RED ramp of the switch ports of one link rate ([`SwitchConfig::red_by_rate`]).
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedByRate {
    /// The ports' link rate, bps.
    pub rate_bps: u64,
    /// Their ramp.
    #[serde(flatten)]
    pub red: RedParams,
}

impl SwitchConfig {
    /// The RED ramp of a switch port whose link runs at `rate_bps`.
    pub fn red_for(&self, rate_bps: u64) -> Option<&RedParams> {
        self.red_by_rate
            .iter()
            .find(|r| r.rate_bps == rate_bps)
            .map(|r| &r.red)
            .or(self.red.as_ref())
    }
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            buffer_bytes: 16_000_000,
            red: None,
            red_by_rate: Vec::new(),
            pfc: None,
            switch_id_base: 0x0A1,
            int_ts_offset_ns: 0,
            int_ts_step_ns: 0,
            int_tx_bytes_offset: 0,
            int_ts_resolution_ns: 1,
        }
    }
}

/// One flow: an RC QP pair carrying one RDMA WRITE message of `size_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Message size, bytes.
    pub size_bytes: u64,
    /// When the sender may start, ns.
    pub start_ns: u64,
    /// First PSN; drawn from the seed when `None`.
    pub first_psn: Option<u32>,
}

/// Everything a run needs.
#[derive(Clone, Debug, PartialEq)]
pub struct NetConfig {
    /// Scenario name (metrics).
    pub name: String,
    /// Seed of the RED generators, the first PSNs and the ECMP hash.
    pub seed: u64,
    /// Hosts, switches, links.
    pub topology: Topology,
    /// The congestion control.
    pub cc: Cc,
    /// Switch settings.
    pub switch: SwitchConfig,
    /// Flows, in any order (a host numbers its flows by start time, then by position here).
    pub flows: Vec<FlowSpec>,
    /// Simulated time, ns.
    pub duration_ns: u64,
    /// WRITE payload bytes per packet (a multiple of 4).
    pub mtu_bytes: u32,
    /// Retransmission timeout of the go-back-N requester, ns.
    pub rto_ns: u64,
    /// Base RTT `T` every model uses; `None` = the largest unloaded RTT over the flows.
    pub base_rtt_ns: Option<u64>,
    /// Metrics sample interval, ns.
    pub sample_interval_ns: u64,
    /// Hosts whose NIC is tapped: the sink gets every frame in or out of them, and their
    /// models' decisions are recorded.
    pub taps: Vec<NodeId>,
    /// The sender NIC of every host: hardware behaviours and bugs (default: the ideal NIC).
    pub device: DeviceConfig,
    /// Every switch: bugs and INT clock drift (default: the correct switch).
    pub switch_device: SwitchDeviceConfig,
    /// Switch ports under test: the sink gets what arrives for them and what leaves them
    /// ([`TapSink::record_switch`]). Default: none.
    pub switch_taps: Vec<SwitchTap>,
    /// Links between switches going down or up during the run (ns-3's `LINK_DOWN`); the
    /// switches reroute at once. Default: none.
    pub link_events: Vec<LinkEvent>,
    /// Switches whose INT clock tick differs from [`SwitchConfig::int_ts_resolution_ns`].
    /// Default: none.
    pub switch_clocks: Vec<SwitchClock>,
    /// FNCC receiver NICs that do not implement FNCC-2: their ACKs carry `N` = 0. Default:
    /// none (every receiver writes `N`).
    pub hosts_without_n: Vec<NodeId>,
    /// `roce` hosts whose data packets carry another ECN-capable codepoint than ECT(0)
    /// ([`DataEcn`]; a host listed twice takes its last entry). Default: none.
    pub host_data_ecn: Vec<(NodeId, DataEcn)>,
}

/// A link between two switches goes down or comes back up at `at_ns` (docs/sim.md "Link
/// failures"). Down: the frames queued for it at both ends are dropped, the frames on the
/// wire are lost, nothing is sent on it, and the switches forward on shortest paths over the
/// links still up (the ECMP choice as before among them). Up: it carries traffic again and
/// the routes are those over every link up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkEvent {
    /// When, ns from the start.
    pub at_ns: u64,
    /// Index of the link in [`Topology::links`].
    pub link: u32,
    /// `false`: the link goes down; `true`: it comes back up.
    pub up: bool,
}

/// A switch whose INT timestamps have a resolution of `int_ts_resolution_ns` (a coarse
/// switch clock, as ASICs that count in ticks have): every `ts` it writes is its clock
/// floored to a multiple of it, so two records within one tick carry the same `ts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchClock {
    /// The switch.
    pub switch: NodeId,
    /// The tick, ns (1 = the exact clock).
    pub int_ts_resolution_ns: u64,
}

/// A switch port under test: the egress port of `switch` facing its neighbour `peer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchTap {
    /// The switch.
    pub switch: NodeId,
    /// The neighbour the port faces.
    pub peer: NodeId,
}

/// Where a switch tap saw a frame ([`TapSink::record_switch`]). Times: a frame that arrives
/// is recorded at the end of its reception, a frame sent at the start of its transmission
/// (as host taps do).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SwitchTapPoint {
    /// The frame arrived at the switch through its port facing `from` and is routed to the
    /// port under test: as it arrived (before this switch marks ECN or stamps INT), whether
    /// the buffer then takes it or drops it.
    Arrived {
        /// The neighbour it came from.
        from: NodeId,
    },
    /// A PFC frame the switch starts sending out of its port facing `to` (any port of the
    /// switch: its ingress side's XOFF / XON).
    PauseSent {
        /// The neighbour it goes to.
        to: NodeId,
    },
    /// The frame starts leaving the port under test (after marking and stamping): data,
    /// control and PFC frames. For a data packet, what happened to it in the switch.
    Departed {
        /// Data packets: the engine's account of the packet.
        truth: Option<DequeueTruth>,
    },
    /// A PFC frame arrived on the port under test from its peer.
    PauseReceived,
    /// FNCC: an ACK or NAK of a flow whose data leaves through the port under test arrived at
    /// the switch, which pushed the port's INT record into it (FNCC-3) and forwards it (the
    /// buffer took it): the frame as it leaves the switch, at its arrival.
    AckInt {
        /// The record and the port's counters behind it.
        truth: AckIntTruth,
    },
}

/// What the engine knows of the INT record an FNCC switch pushed into an ACK for the port
/// under test ([`SwitchTapPoint::AckInt`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckIntTruth {
    /// The record's index in the ACK's INT stack: the records already in it (`nHop` before
    /// the push), 0 at the switch in front of the receiver.
    pub hop_index: u8,
    /// Frame bytes whose transmission started on the port before that instant (no offset,
    /// no modulo).
    pub tx_bytes: u64,
    /// Bytes waiting in the port's queues then (data and control, the frame on the wire not
    /// counted).
    pub queued_bytes: u64,
}

/// What the engine knows of a data packet leaving a port under test (ground truth for tests
/// of a judge that reconstructs it from the captures).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DequeueTruth {
    /// When it arrived at the switch (end of reception), absolute ns.
    pub t_in_ns: u64,
    /// The neighbour it came from.
    pub from: NodeId,
    /// Bytes waiting in the egress port's queues (data and control, the frame on the wire not
    /// counted) when it was enqueued, before it: the queue RED sees.
    pub qlen_at_enqueue: u64,
    /// Bytes still waiting when it left, after removing it: the queue INT `qLen` reports.
    pub qlen_at_dequeue: u64,
    /// Whether this switch CE-marked it.
    pub marked: bool,
    /// The RED marking probability applied to it (0 without RED or when not ECN-capable).
    pub p: f64,
}

impl NetConfig {
    /// A config with the defaults: seed 0, 1 ms, 1000-byte MTU, RTO 1 ms, 1 µs samples,
    /// [`SwitchConfig::default`], no flows, no taps, the ideal NIC and the correct switch, no
    /// link events, exact INT clocks, every FNCC receiver writing `N`.
    pub fn new(name: impl Into<String>, topology: Topology, cc: Cc) -> Self {
        NetConfig {
            name: name.into(),
            seed: 0,
            topology,
            cc,
            switch: SwitchConfig::default(),
            flows: Vec::new(),
            duration_ns: 1_000_000,
            mtu_bytes: 1000,
            rto_ns: 1_000_000,
            base_rtt_ns: None,
            sample_interval_ns: 1_000,
            taps: Vec::new(),
            device: DeviceConfig::default(),
            switch_device: SwitchDeviceConfig::default(),
            switch_taps: Vec::new(),
            link_events: Vec::new(),
            switch_clocks: Vec::new(),
            hosts_without_n: Vec::new(),
            host_data_ecn: Vec::new(),
        }
    }

    /// The ECN codepoint host `h`'s data packets leave with in the `roce` dialect: its
    /// [`NetConfig::host_data_ecn`] entry, ECT(0) without one.
    pub fn data_ecn(&self, h: NodeId) -> DataEcn {
        self.host_data_ecn
            .iter()
            .rev()
            .find(|(n, _)| *n == h)
            .map_or(DataEcn::Ect0, |(_, e)| *e)
    }

    /// Reject a [`NetConfig::host_data_ecn`] entry that is not a host, or any entry in a
    /// dialect other than `roce` (its data is Not-ECT: no codepoint to choose).
    pub fn validate_host_data_ecn(&self) -> Result<(), String> {
        for &(h, ecn) in &self.host_data_ecn {
            let Some(node) = self.topology.nodes.get(h as usize) else {
                return Err(format!("data ECN: node {h} does not exist"));
            };
            if node.kind != NodeKind::Host {
                return Err(format!("data ECN: {} is not a host", node.name));
            }
            if self.cc.dialect() != Dialect::Roce {
                return Err(format!(
                    "{}: ecn = \"{}\" needs ECN-capable data (dcqcn, dcqcn-ns3); {} sends Not-ECT",
                    node.name,
                    ecn.name(),
                    self.cc.family()
                ));
            }
        }
        Ok(())
    }
}

/// Receives the frames seen at tapped host NICs, in the order the host's models are fed, and
/// at tapped switch ports ([`TapSink::record_switch`]).
pub trait TapSink {
    /// `pkt` with INT stack `int` (empty when the dialect or the packet has none) left
    /// (`outgoing`) or reached the NIC of tapped host `tap` (index in [`NetConfig::taps`]) at
    /// absolute time `t_ns`.
    fn record(
        &mut self,
        tap: usize,
        t_ns: u64,
        pkt: &Packet,
        int: &IntStack,
        outgoing: bool,
    ) -> Result<(), NetError>;

    /// `pkt` with INT stack `int` was seen at switch tap `tap` (index in
    /// [`NetConfig::switch_taps`]) at absolute time `t_ns`, at `at`. The default ignores it.
    fn record_switch(
        &mut self,
        _tap: usize,
        _t_ns: u64,
        _pkt: &Packet,
        _int: &IntStack,
        _at: SwitchTapPoint,
    ) -> Result<(), NetError> {
        Ok(())
    }

    /// Called every 2^16 events with the simulated time, ns from 0 (progress bars).
    fn progress(&mut self, _now_ns: u64) {}
}

/// A sink that drops everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTaps;

impl TapSink for NoTaps {
    fn record(
        &mut self,
        _: usize,
        _: u64,
        _: &Packet,
        _: &IntStack,
        _: bool,
    ) -> Result<(), NetError> {
        Ok(())
    }
}

/// What a tapped host's models did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TapRun {
    /// The host.
    pub host: NodeId,
    /// Scenario flow ids the host sends, in its sender model's flow-id order.
    pub sender_flows: Vec<u32>,
    /// Scenario flow ids the host receives, in its receiver model's flow-id order (first data
    /// packet in).
    pub receiver_flows: Vec<u32>,
    /// Every decision of the host's sender model, in order (with a `[device]` bug: of the
    /// model as the buggy NIC runs it, [`NicBug::wrap`]).
    pub sender_decisions: Vec<Decision>,
    /// Every decision of the host's receiver model, in order.
    pub receiver_decisions: Vec<Decision>,
}

/// The result of [`Network::run`].
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Per entry of [`NetConfig::taps`].
    pub taps: Vec<TapRun>,
    /// What was measured.
    pub metrics: Metrics,
}

/// Why a network cannot be built or run.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The configuration is inconsistent.
    #[error("{0}")]
    Config(String),
    /// A model rejected its parameters.
    #[error("model {model}: {source}")]
    Params {
        /// Model name.
        model: &'static str,
        /// Why.
        #[source]
        source: ParamError,
    },
    /// A model's timer is still due after it fired (C-5): the loop would spin.
    #[error("model {model} did not advance its timer past {deadline_ns} ns")]
    StuckTimer {
        /// Model name.
        model: &'static str,
        /// The deadline.
        deadline_ns: u64,
    },
    /// The FNCC switch logic refused an ACK (stack full: more switches than INT records).
    #[error("FNCC switch: {0}")]
    Fncc(#[from] fncc::SwitchError),
    /// The tap sink failed.
    #[error("tap: {0}")]
    Tap(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand values on both sides of the 64-bit path's limit: 1,000 bytes at 100 Gbps =
    /// 8,000 bits / 10^11 bit/s = 80 ns = 80,000 ps; at 3 bit/s, 8,000 × 10^12 / 3 =
    /// 2,666,666,666,666,666 ps (floored); 2,000,000 bytes (the last on the 64-bit path) at
    /// 1 bit/s = 1.6 × 10^19 ps (below 2^64 ≈ 1.84 × 10^19); a full PFC pause, 0xFFFF × 64 =
    /// 4,194,240 bytes (the wide path), at 100 Gbps = 33,553,920 bits / 10^11 = 335,539,200 ps;
    /// at 1 bit/s 3.36 × 10^19 ps does not fit and saturates; rate 0 counts as 1 bit/s.
    #[test]
    fn serialisation_times() {
        assert_eq!(ser_ps(1_000, 100_000_000_000), 80_000);
        assert_eq!(ser_ps(1_000, 3), 2_666_666_666_666_666);
        assert_eq!(ser_ps(2_000_000, 1), 16_000_000_000_000_000_000);
        assert_eq!(ser_ps(4_194_240, 100_000_000_000), 335_539_200);
        assert_eq!(ser_ps(4_194_240, 1), u64::MAX);
        assert_eq!(ser_ps(1_000, 0), ser_ps(1_000, 1));
    }

    #[test]
    fn host_data_ecn_is_per_host_and_roce_only() {
        // incast(1, ..): h0 sends, h1 receives, sw0 (node 2) between.
        let topo = Topology::incast(1, 25_000_000_000, 10_000_000_000, 1_000);
        let dcqcn = Cc::Dcqcn {
            rp: RpParams::default(),
            np: NpParams::default(),
        };
        let mut cfg = NetConfig::new("ecn", topo.clone(), dcqcn);
        assert_eq!(
            (cfg.data_ecn(0), cfg.data_ecn(1)),
            (DataEcn::Ect0, DataEcn::Ect0)
        );
        cfg.host_data_ecn = vec![(0, DataEcn::Ect1)];
        assert_eq!(
            (cfg.data_ecn(0), cfg.data_ecn(1)),
            (DataEcn::Ect1, DataEcn::Ect0)
        );
        assert_eq!(cfg.validate_host_data_ecn(), Ok(()));
        // A host listed twice takes its last entry.
        cfg.host_data_ecn.push((0, DataEcn::Ect0));
        assert_eq!(cfg.data_ecn(0), DataEcn::Ect0);
        // Not a host, no such node.
        cfg.host_data_ecn = vec![(2, DataEcn::Ect1)];
        assert!(
            cfg.validate_host_data_ecn()
                .unwrap_err()
                .contains("is not a host")
        );
        cfg.host_data_ecn = vec![(9, DataEcn::Ect1)];
        assert!(
            cfg.validate_host_data_ecn()
                .unwrap_err()
                .contains("does not exist")
        );
        // HPCC data is Not-ECT: nothing to choose.
        let mut hpcc = NetConfig::new("ecn", topo, Cc::Hpcc(hpcc::Params::default()));
        hpcc.host_data_ecn = vec![(0, DataEcn::Ect1)];
        let e = hpcc.validate_host_data_ecn().unwrap_err();
        assert!(e.contains("needs ECN-capable data"), "{e}");
    }
}
