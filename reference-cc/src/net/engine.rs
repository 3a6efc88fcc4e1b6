//! The event loop (docs/sim.md "Event order").
//!
//! Events are small `Copy` values in a queue (queue.rs: a timing wheel over a heap) ordered
//! by (time ps, class, sequence):
//! at one instant model timers run first (C-5), then sender decisions that take effect late
//! (`[device]` `reaction_ns`), then packet and port events in the order they were scheduled,
//! then retransmission timeouts, then NIC wake-ups, then metric samples.
//! Packets live in a slab (`Vec<Packet>` + free list) and travel as `u32` handles, so the loop
//! allocates nothing per packet once the queues have grown.

use std::collections::VecDeque;

use ccreplay_codecs::Dialect;
use ccreplay_codecs::shim::int::{
    DEFAULT_MAX_HOPS, IntHop, IntStack, LineRate, QLEN_UNIT, TX_BYTES_UNIT,
};

use super::metrics::{
    FlowMetrics, JainWindow, Metrics, PfcMetrics, PortMetrics, Series, percentile,
};
use super::packet::{
    ECN_CE, Packet, PacketKind, SYNDROME_ACK, SYNDROME_NAK_PSN, WRITE_FIRST, WRITE_LAST,
    WRITE_MIDDLE, WRITE_ONLY, frame_len,
};
use super::queue::EventQueue;
use super::switch_device::{SwitchBug, drift_ns, ewma};
use super::topology::{NodeId, NodeKind, PortMap, Routes, port_map};
use super::{
    AckIntTruth, Cc, DequeueTruth, EPOCH_NS, LinkEvent, NetConfig, NetError, PS_PER_NS, RunResult,
    SwitchTapPoint, TapRun, TapSink, device, ser_ps,
};
use crate::dcqcn::cp::{RedParams, SplitMix64, UniformSource, marking_probability, should_mark};
use crate::dcqcn::{Np, NpParams, Rp, RpParams};
use crate::event::AckInfo;
use crate::ns3::{DcqcnNs3, DcqcnNs3Params, HpccNs3, HpccNs3Params};
use crate::rcc::{
    MessagePosition, Receiver as RccReceiver, ReceiverParams, Sender as RccSender, SenderParams,
    message_position,
};
use crate::{Decision, Event, EventKind, Model, ParamError, fncc, hpcc};

const PSN_MASK: u32 = 0xFF_FFFF;
/// Half the PSN space: a PSN `d` ahead with `d < 2^23` is after (C-2).
const PSN_HALF: u32 = 1 << 23;
const NONE: u64 = u64::MAX;
/// The stack of a packet that carries none.
const NO_INT: IntStack = IntStack::new();
/// No switch tap on a port.
const NO_TAP: u32 = u32::MAX;

/// Event classes: the order of events at one instant.
const CLASS_TIMER: u64 = 0;
const CLASS_APPLY: u64 = 1;
const CLASS_PACKET: u64 = 2;
const CLASS_RTO: u64 = 3;
const CLASS_NIC: u64 = 4;
const CLASS_SAMPLE: u64 = 5;

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The last bit of packet `pkt` reached `port` (global port index) of its node.
    Arrive { port: u32, pkt: u32 },
    /// `port` finished transmitting.
    PortFree { port: u32 },
    /// A pause of `port` may have expired: try to transmit.
    PortWake { port: u32 },
    /// Model timers of host slot `host`, `side` 0 = sender model, 1 = receiver model.
    Timer { host: u32, side: u8 },
    /// Retransmission timer of flow `flow`.
    Rto { flow: u32 },
    /// A pacer of host slot `host` releases.
    NicWake { host: u32 },
    /// Re-send XOFF on `port` if its ingress is still above XON.
    PfcRefresh { port: u32 },
    /// Link event `event` (index in `Network::link_events`) happens.
    Link { event: u32 },
    /// Apply the oldest delayed sender decision (`Network::delayed`).
    Apply,
    /// Take a metrics sample.
    Sample,
}

/// Simulated ps -> absolute ns (floor).
#[inline]
fn abs_ns(ps: u64) -> u64 {
    EPOCH_NS + ps / PS_PER_NS
}

/// A model deadline (absolute ns) -> simulated ps.
#[inline]
fn deadline_ps(ns: u64) -> u64 {
    ns.saturating_sub(EPOCH_NS).saturating_mul(PS_PER_NS)
}

/// SplitMix64's output function: a well-mixed 64-bit hash of `x`.
#[inline]
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// How the switches write INT (`[switch_device]` bugs; both false for the correct switch).
#[derive(Clone, Copy, Debug, Default)]
struct IntQuirks {
    /// txBytes counts IB payload bytes only.
    tx_payload: bool,
    /// qLen in bytes instead of 80-byte units.
    qlen_bytes: bool,
}

/// What the engine tracks of a data packet in a switch, by slab handle, when a switch tap or
/// a switch bug needs it (`Network::track`).
#[derive(Clone, Copy, Debug, Default)]
struct PktMeta {
    /// Arrival at the switch, ps.
    t_in_ps: u64,
    /// Bytes waiting in the egress port's queues when it was enqueued (before it).
    q_enq: u64,
    /// RED probability applied and whether it was marked here.
    p: f64,
    marked: bool,
}

struct PortState {
    /// INT clock offset, ns, and txBytes start value, bytes (`SwitchConfig`).
    int_ts_offset_ns: u64,
    int_tx_offset: u64,
    /// INT clock tick of the port's switch, ns (`SwitchConfig::int_ts_resolution_ns`,
    /// `NetConfig::switch_clocks`; 1 = exact).
    int_ts_res_ns: u64,
    /// False while the port's link is down (`NetConfig::link_events`).
    link_up: bool,
    /// Index of the port's link in the topology.
    link: u32,
    /// INT clock drift of the port's switch, ppm (`[switch_device]` `clock_drift_ppm` × its
    /// number).
    drift: f64,
    /// Switch tap on this (egress) port: index in `NetConfig::switch_taps`, or `NO_TAP`.
    stap: u32,
    /// RED's average queue, bytes (`mark-average-queue`).
    avg_q: f64,
    /// IB payload bytes whose transmission started (`txbytes-no-headers`).
    tx_payload: u64,
    node: NodeId,
    /// Host slot of the node, or `u32::MAX` at a switch.
    host: u32,
    /// Switch slot of the node, or `u32::MAX` at a host.
    switch: u32,
    /// Index of this port at its node.
    index: u16,
    peer: NodeId,
    /// Global index of the peer's port.
    peer_port: u32,
    rate_bps: u64,
    /// The port's RED ramp (switch ports: [`SwitchConfig::red_for`] its rate).
    red: Option<RedParams>,
    /// ps per byte when exact (rate divides 8 × 10^12), else 0.
    ps_per_byte: u64,
    prop_ps: u64,
    line_code: u8,
    busy: bool,
    ctrl: VecDeque<u32>,
    data: VecDeque<u32>,
    /// Bytes waiting (not on the wire), data and control.
    queued_bytes: u64,
    /// Bytes whose transmission started (INT txBytes).
    tx_bytes: u64,
    /// A PFC frame to send next (its pause quanta).
    pfc_pending: Option<u16>,
    /// The peer paused our data until then (ps).
    paused_until: u64,
    paused_since: Option<u64>,
    paused_ps: u64,
    wake_at: u64,
    /// When the pending XOFF refresh is due (older refresh events are stale).
    refresh_at: u64,
    /// Ingress side: data bytes buffered at this switch that arrived through this port.
    ingress_bytes: u64,
    xoff: bool,
    ecn_marked: u64,
    dropped: u64,
    pause_sent: u64,
    pause_received: u64,
    queue_samples: Vec<u64>,
    queue_max: u64,
}

impl PortState {
    #[inline]
    fn ser(&self, bytes: u32) -> u64 {
        if self.ps_per_byte != 0 {
            u64::from(bytes) * self.ps_per_byte
        } else {
            ser_ps(bytes, self.rate_bps)
        }
    }

    /// The port's INT record now, its clock read at `clock_ps` (now, but the packet's arrival
    /// with `ingress-timestamp`) (wire.md 5.1 units: TS ns mod 2^24, txBytes in 128-byte units
    /// mod 2^20, qLen in 80-byte units saturating; `IntHop` masks the widths).
    fn int_hop(&self, clock_ps: u64, q: IntQuirks) -> IntHop {
        let tx = if q.tx_payload {
            self.tx_payload
        } else {
            self.tx_bytes
        };
        let qlen_unit = if q.qlen_bytes { 1 } else { QLEN_UNIT };
        // The offsets start the switch's clock and counter where the scenario says (both 0 by
        // default); a coarse clock reads its time floored to its tick.
        let clock_ns = abs_ns(clock_ps)
            .wrapping_add(self.int_ts_offset_ns)
            .wrapping_add(drift_ns(clock_ps / PS_PER_NS, self.drift));
        IntHop {
            b: self.line_code,
            // The casts keep the low bits, IntHop masks the widths.
            ts: (clock_ns - clock_ns % self.int_ts_res_ns) as u32,
            tx_bytes: (tx.wrapping_add(self.int_tx_offset) / TX_BYTES_UNIT) as u32,
            qlen: (self.queued_bytes / qlen_unit).min(0xFFFF) as u16,
        }
    }

    /// A PFC frame arrived: pause data until `until` (`until <= now` resumes).
    fn pause(&mut self, now: u64, until: u64) {
        if let Some(s) = self.paused_since
            && self.paused_until <= now
        {
            // The previous pause expired on its own.
            self.paused_ps += self.paused_until.saturating_sub(s);
            self.paused_since = None;
        }
        if until <= now {
            if let Some(s) = self.paused_since.take() {
                self.paused_ps += now - s;
            }
            self.paused_until = now;
        } else {
            self.paused_since.get_or_insert(now);
            self.paused_until = until;
        }
    }

    fn paused_total(&self, end: u64) -> u64 {
        self.paused_ps
            + self
                .paused_since
                .map_or(0, |s| self.paused_until.min(end).saturating_sub(s))
    }
}

struct SwitchState {
    node: NodeId,
    int_id: u16,
    /// Bytes in the shared buffer.
    used: u64,
    rng: SplitMix64,
    fncc: Option<fncc::Switch>,
    first_port: u32,
    /// Switch taps on ports of this switch (they record the PFC frames it sends).
    taps: Vec<u32>,
}

struct HostState {
    node: NodeId,
    port: u32,
    sender: Option<Box<dyn Model>>,
    receiver: Option<Box<dyn Model>>,
    /// Flows this host sends, by sender-model flow id.
    tx_flows: Vec<u32>,
    /// `tx_flows` without the finished ones (every packet acknowledged: they never send
    /// again), in the same order: what the NIC's scheduler looks through.
    live_tx: Vec<u32>,
    /// Each `live_tx` flow's pacer release, `max(pace_ps, start_ps)` (it changes only when
    /// the flow sends): the scheduler scans this array and reads a flow's state only when
    /// its release would win.
    live_release: Vec<u64>,
    /// Flows this host receives, by receiver-model flow id (first data packet in).
    rx_flows: Vec<u32>,
    timer_at: [u64; 2],
    wake_at: u64,
    /// Batch scheduling (`burst_bytes`): the flow whose batch is under way (`u32::MAX`: none)
    /// and the frame bytes it has sent in it.
    batch_flow: u32,
    batch_bytes: u64,
    tap: Option<usize>,
    /// FNCC-2 on this NIC: false writes `N` = 0 into its ACKs (`NetConfig::hosts_without_n`).
    writes_n: bool,
    /// ECN bits of its `roce` data packets (`NetConfig::host_data_ecn`; RFC 3168 ECT).
    data_ecn: u8,
    sender_decisions: Vec<Decision>,
    receiver_decisions: Vec<Decision>,
}

struct FlowState {
    src_host: u32,
    dst_host: u32,
    /// Index of the destination host among all hosts (routes).
    dst_route: u32,
    src_route: u32,
    local_tx: u32,
    local_rx: u32,
    hash: u64,
    start_ps: u64,
    message_bytes: u64,
    packets: u64,
    psn0: u32,
    next: u64,
    una: u64,
    high: u64,
    window_bytes: Option<u64>,
    rate_bps: u64,
    pace_ps: u64,
    rto_ps: u64,
    rto_event: u64,
    tx_events: u64,
    // receiver
    expected: u64,
    nak_sent: bool,
    msn: u32,
    rx_events: u64,
    // metrics
    finish_ps: Option<u64>,
    delivered_bytes: u64,
    delivered_at_sample: u64,
    throughput: Series,
    rate_series: Series,
    window_series: Series,
}

impl FlowState {
    #[inline]
    fn psn(&self, k: u64) -> u32 {
        (self.psn0.wrapping_add(k as u32)) & PSN_MASK
    }

    #[inline]
    fn payload(&self, k: u64, mtu: u32) -> u32 {
        let off = k * u64::from(mtu);
        (self.message_bytes - off).min(u64::from(mtu)) as u32
    }

    #[inline]
    fn bytes_before(&self, k: u64, mtu: u32) -> u64 {
        (k * u64::from(mtu)).min(self.message_bytes)
    }

    fn opcode(&self, k: u64) -> u8 {
        match (k, self.packets) {
            (_, 1) => WRITE_ONLY,
            (0, _) => WRITE_FIRST,
            (k, n) if k + 1 == n => WRITE_LAST,
            _ => WRITE_MIDDLE,
        }
    }

    /// Has data and the window lets the next packet out (one packet always may go when nothing
    /// is in flight, so a window below one MTU cannot stall the flow).
    #[inline]
    fn can_send(&self, mtu: u32) -> bool {
        if self.next >= self.packets {
            return false;
        }
        match self.window_bytes {
            None => true,
            Some(w) => {
                let inflight = self.bytes_before(self.next, mtu) - self.bytes_before(self.una, mtu);
                inflight == 0 || inflight + u64::from(self.payload(self.next, mtu)) <= w
            }
        }
    }

    /// The message index a PSN names, if it lies in `una..=high`.
    fn index_of(&self, psn: u32) -> Option<u64> {
        let d = psn.wrapping_sub(self.psn(self.una)) & PSN_MASK;
        (d < PSN_HALF)
            .then_some(self.una + u64::from(d))
            .filter(|&k| k <= self.high)
    }
}

/// The network, ready to run once.
pub struct Network {
    cfg: NetConfig,
    dialect: Dialect,
    base_rtt_ns: u64,
    end_ps: u64,
    now: u64,
    seq: u64,
    events: u64,
    queue: EventQueue<Ev>,
    slab: Vec<Packet>,
    /// The INT stack of each slab slot (packet.rs `Packet`), kept only for the dialects
    /// that carry one (`has_int`); empty otherwise.
    ints: Vec<IntStack>,
    has_int: bool,
    free: Vec<u32>,
    ports: Vec<PortState>,
    switches: Vec<SwitchState>,
    hosts: Vec<HostState>,
    flows: Vec<FlowState>,
    routes: Routes,
    /// The routes after each link event, in the order of `link_events`.
    later_routes: Vec<Routes>,
    /// Link events in time order: (ps, link, up).
    link_events: Vec<(u64, u32, bool)>,
    /// Per node: host slot or switch slot.
    slot: Vec<u32>,
    port_base: Vec<u32>,
    scratch: Vec<Decision>,
    /// Sender decisions waiting to take effect (`reaction_ns`): flow, rate, window, in the
    /// order they take effect (one delay for all, so FIFO).
    delayed: VecDeque<(u32, Option<u64>, Option<u64>)>,
    sample_ps: u64,
    sample_times: Vec<u64>,
    /// Jain's index, sample by sample (metrics.rs).
    jain: Option<JainWindow>,
    /// Flows whose series are sampled now (started, not past the sample after their finish),
    /// in no particular order: a sample costs the active flows, not every flow of the run.
    sampling: Vec<u32>,
    /// Flow ids by start time, and how many of them `sampling` has taken in.
    by_start: Vec<u32>,
    started: usize,
    /// The earliest finish so far, ps (`NONE`: none yet).
    first_finish_ps: u64,
    drops: u64,
    /// Whether `meta` is kept (a switch tap, or `ingress-timestamp`).
    track: bool,
    meta: Vec<PktMeta>,
    quirks: IntQuirks,
    /// The XOFF threshold the switches use (`xoff-threshold-off`), bytes.
    xoff_at: u64,
}

/// The sender model, the receiver model, a flow's window and rate before any decision.
type HostModels = (
    Option<Box<dyn Model>>,
    Option<Box<dyn Model>>,
    Option<u64>,
    u64,
);

fn bad(model: &'static str) -> impl Fn(ParamError) -> NetError {
    move |source| NetError::Params { model, source }
}

/// HPCC-1: `R = floor(W × 8e9 / T)`.
fn hpcc_rate(w_bytes: u64, base_rtt_ns: u64) -> u64 {
    let r = u128::from(w_bytes) * 8_000_000_000 / u128::from(base_rtt_ns.max(1));
    u64::try_from(r).unwrap_or(u64::MAX)
}

impl Network {
    /// Check `cfg` and build the network (models included).
    pub fn new(cfg: &NetConfig) -> Result<Self, NetError> {
        let cfg = cfg.clone();
        let topo = &cfg.topology;
        topo.validate()?;
        let err = |m: String| Err(NetError::Config(m));
        if cfg.mtu_bytes < 4 || !cfg.mtu_bytes.is_multiple_of(4) || cfg.mtu_bytes > 4096 {
            return err("mtu_bytes must be a multiple of 4 in 4..=4096".into());
        }
        if cfg.duration_ns == 0 || cfg.duration_ns > 60_000_000_000 {
            return err("duration_ns must be in 1..=60 s".into());
        }
        if cfg.rto_ns == 0 || cfg.rto_ns > 60_000_000_000 {
            return err("rto_ns must be in 1..=60 s".into());
        }
        if cfg.sample_interval_ns == 0 || cfg.duration_ns / cfg.sample_interval_ns > 10_000_000 {
            return err("sample_interval_ns must be > 0 and give at most 10^7 samples".into());
        }
        let samples = (cfg.duration_ns / cfg.sample_interval_ns + 1).min(1 << 16) as usize;
        if cfg.switch.buffer_bytes < u64::from(cfg.mtu_bytes) * 2 {
            return err("switch buffer_bytes must hold at least two packets".into());
        }
        if cfg.switch.switch_id_base > 0x0FFF {
            return err("switch_id_base must fit 12 bits".into());
        }
        for r in &cfg.switch.red_by_rate {
            r.red.validate().map_err(bad("switch RED by rate"))?;
        }
        if let Some(red) = &cfg.switch.red {
            red.validate().map_err(bad("switch RED"))?;
        }
        if let Some(p) = &cfg.switch.pfc
            && (p.xon_bytes > p.xoff_bytes || p.pause_quanta == 0)
        {
            return err("PFC: xon_bytes must be <= xoff_bytes and pause_quanta > 0".into());
        }
        cfg.device.validate(&cfg.cc).map_err(NetError::Config)?;
        cfg.validate_host_data_ecn().map_err(NetError::Config)?;
        cfg.switch_device
            .validate(
                &cfg.cc,
                cfg.switch.red.is_some() || !cfg.switch.red_by_rate.is_empty(),
                cfg.switch.pfc.is_some(),
            )
            .map_err(NetError::Config)?;
        let dialect = cfg.cc.dialect();
        let n_nodes = topo.nodes.len();
        let pm: PortMap = port_map(topo);
        let host_nodes: Vec<NodeId> = topo.hosts().collect();
        let mut slot = vec![u32::MAX; n_nodes];
        let mut port_base = vec![0u32; n_nodes];
        let mut nports = 0u32;
        for (i, p) in pm.iter().enumerate() {
            port_base[i] = nports;
            nports += p.len() as u32;
        }
        let routes = Routes::build(topo, &pm, &host_nodes, &[])?;
        // Link events (docs/sim.md "Link failures"), in time order (then file order), each
        // toggling a link between two switches. The routes of every state are built here, so
        // an event allocates nothing.
        let mut order_ev: Vec<usize> = (0..cfg.link_events.len()).collect();
        order_ev.sort_by_key(|&i| (cfg.link_events[i].at_ns, i));
        let mut down = vec![false; topo.links.len()];
        let mut later_routes = Vec::with_capacity(order_ev.len());
        let mut link_events = Vec::with_capacity(order_ev.len());
        let name = |n: NodeId| topo.nodes[n as usize].name.as_str();
        for &i in &order_ev {
            let LinkEvent { at_ns, link, up } = cfg.link_events[i];
            let Some(l) = topo.links.get(link as usize) else {
                return err(format!(
                    "link event at {at_ns} ns: no link {link} (the topology has {})",
                    topo.links.len()
                ));
            };
            let pair = format!("{}–{}", name(l.a), name(l.b));
            let switch = |n: NodeId| topo.nodes[n as usize].kind == NodeKind::Switch;
            if !switch(l.a) || !switch(l.b) {
                return err(format!(
                    "link event on {pair}: only a link between two switches goes down or up"
                ));
            }
            if at_ns == 0 || at_ns >= cfg.duration_ns {
                return err(format!(
                    "link event on {pair} at {at_ns} ns: must be inside the run (0 < at_ns < {})",
                    cfg.duration_ns
                ));
            }
            if down[link as usize] != up {
                let state = if up { "up" } else { "down" };
                return err(format!(
                    "link event on {pair} at {at_ns} ns: the link is already {state}"
                ));
            }
            down[link as usize] = !up;
            let r = Routes::build(topo, &pm, &host_nodes, &down).map_err(|e| {
                NetError::Config(format!("with link {pair} down from {at_ns} ns: {e}"))
            })?;
            later_routes.push(r);
            link_events.push((at_ns * PS_PER_NS, link, up));
        }
        for (i, &h) in host_nodes.iter().enumerate() {
            slot[h as usize] = i as u32;
        }
        let mut switches = Vec::new();
        for (i, n) in topo.nodes.iter().enumerate() {
            if n.kind == NodeKind::Switch {
                let s = switches.len() as u32;
                slot[i] = s;
                let int_id = cfg.switch.switch_id_base.wrapping_add(s as u16) & 0x0FFF;
                switches.push(SwitchState {
                    node: i as NodeId,
                    int_id,
                    used: 0,
                    // DCQCN-1: the seed in the manifest drives switch 0's marking.
                    rng: SplitMix64::new(cfg.seed ^ u64::from(s).wrapping_mul(0x9E37_79B9)),
                    fncc: matches!(cfg.cc, Cc::Fncc(_))
                        .then(|| fncc::Switch::new(int_id, pm[i].len(), DEFAULT_MAX_HOPS)),
                    first_port: port_base[i],
                    taps: Vec::new(),
                });
            }
        }
        let mut ports = Vec::with_capacity(nports as usize);
        for (i, p) in pm.iter().enumerate() {
            let is_host = topo.nodes[i].kind == NodeKind::Host;
            for (pi, &(peer, peer_idx, li)) in p.iter().enumerate() {
                let l = topo.links[li as usize];
                let exact = 8_000_000_000_000u64;
                ports.push(PortState {
                    int_ts_res_ns: if is_host {
                        1
                    } else {
                        cfg.switch.int_ts_resolution_ns
                    },
                    link_up: true,
                    link: li,
                    int_ts_offset_ns: if is_host {
                        0
                    } else {
                        cfg.switch.int_ts_offset_ns.wrapping_add(
                            cfg.switch.int_ts_step_ns.wrapping_mul(u64::from(slot[i])),
                        )
                    },
                    int_tx_offset: cfg.switch.int_tx_bytes_offset,
                    drift: if is_host {
                        0.0
                    } else {
                        cfg.switch_device.drift_ppm(slot[i])
                    },
                    stap: NO_TAP,
                    avg_q: 0.0,
                    tx_payload: 0,
                    node: i as NodeId,
                    host: if is_host { slot[i] } else { u32::MAX },
                    switch: if is_host { u32::MAX } else { slot[i] },
                    index: pi as u16,
                    peer,
                    peer_port: port_base[peer as usize] + u32::from(peer_idx),
                    rate_bps: l.rate_bps,
                    red: if is_host {
                        None
                    } else {
                        cfg.switch.red_for(l.rate_bps).cloned()
                    },
                    ps_per_byte: if exact.is_multiple_of(l.rate_bps) {
                        exact / l.rate_bps
                    } else {
                        0
                    },
                    prop_ps: l.prop_ns * PS_PER_NS,
                    line_code: LineRate::from_bps(l.rate_bps).map_or(0xF, |c| c.0),
                    busy: false,
                    ctrl: VecDeque::new(),
                    data: VecDeque::new(),
                    queued_bytes: 0,
                    tx_bytes: 0,
                    pfc_pending: None,
                    paused_until: 0,
                    paused_since: None,
                    paused_ps: 0,
                    wake_at: NONE,
                    refresh_at: NONE,
                    ingress_bytes: 0,
                    xoff: false,
                    ecn_marked: 0,
                    dropped: 0,
                    pause_sent: 0,
                    pause_received: 0,
                    // A switch port keeps one sample per interval for the whole run: reserved
                    // at once (up to 2^16), not grown and copied sample by sample.
                    queue_samples: Vec::with_capacity(if is_host { 0 } else { samples }),
                    queue_max: 0,
                });
            }
        }
        if matches!(dialect, Dialect::Hpcc | Dialect::Fncc)
            && let Some(p) = ports
                .iter()
                .find(|p| p.host == u32::MAX && LineRate::from_bps(p.rate_bps).is_none())
        {
            return err(format!(
                "a switch port runs at {} bps, which has no INT line-rate code (10, 25, 40, \
                 50, 100, 200, 400 or 800 Gbps; wire.md 5.1)",
                p.rate_bps
            ));
        }
        // Flows: validate, then number per host by (start, position).
        let mut order: Vec<usize> = (0..cfg.flows.len()).collect();
        order.sort_by_key(|&i| (cfg.flows[i].start_ns, i));
        for f in &cfg.flows {
            let host = |n: NodeId| {
                topo.nodes
                    .get(n as usize)
                    .is_some_and(|x| x.kind == NodeKind::Host)
            };
            if !host(f.src) || !host(f.dst) || f.src == f.dst {
                return err(format!(
                    "flow {}->{}: src and dst must be two distinct hosts",
                    f.src, f.dst
                ));
            }
            if f.size_bytes == 0 || f.size_bytes > 1 << 40 {
                return err("flow size_bytes must be in 1..=2^40".into());
            }
            if f.first_psn.is_some_and(|p| p > PSN_MASK) {
                return err("first_psn must fit 24 bits".into());
            }
            if f.start_ns >= cfg.duration_ns {
                return err(format!(
                    "a flow starts at {} ns, after the run ends ({} ns)",
                    f.start_ns, cfg.duration_ns
                ));
            }
        }
        for (ti, t) in cfg.switch_taps.iter().enumerate() {
            let name = |n: NodeId| {
                topo.nodes
                    .get(n as usize)
                    .map_or_else(|| format!("node {n}"), |x| x.name.clone())
            };
            if topo
                .nodes
                .get(t.switch as usize)
                .is_none_or(|n| n.kind != NodeKind::Switch)
            {
                return err(format!("switch tap on {}: not a switch", name(t.switch)));
            }
            let Some(pi) = pm[t.switch as usize]
                .iter()
                .position(|&(peer, _, _)| peer == t.peer)
            else {
                return err(format!(
                    "switch tap on {}: {} is not a neighbour of it (neighbours: {})",
                    name(t.switch),
                    name(t.peer),
                    pm[t.switch as usize]
                        .iter()
                        .map(|&(p, _, _)| name(p))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            };
            let port = &mut ports[(port_base[t.switch as usize] + pi as u32) as usize];
            if port.stap != NO_TAP {
                return err(format!(
                    "two switch taps on port {}:{}",
                    name(t.switch),
                    name(t.peer)
                ));
            }
            port.stap = ti as u32;
            switches[slot[t.switch as usize] as usize]
                .taps
                .push(ti as u32);
        }
        for &t in &cfg.taps {
            if topo
                .nodes
                .get(t as usize)
                .is_none_or(|n| n.kind != NodeKind::Host)
            {
                return err(format!("tap on node {t}: taps are on hosts"));
            }
        }
        let tick_ok = |r: u64| (1..=(1 << 24)).contains(&r);
        if !tick_ok(cfg.switch.int_ts_resolution_ns) {
            return err(format!(
                "int_ts_resolution_ns = {}: must be in 1..=2^24 ns",
                cfg.switch.int_ts_resolution_ns
            ));
        }
        for (i, c) in cfg.switch_clocks.iter().enumerate() {
            let is_switch = topo
                .nodes
                .get(c.switch as usize)
                .is_some_and(|n| n.kind == NodeKind::Switch);
            if !is_switch {
                return err(format!("INT clock of node {}: not a switch", c.switch));
            }
            let sw = name(c.switch);
            if !tick_ok(c.int_ts_resolution_ns) {
                return err(format!(
                    "{sw}: int_ts_resolution_ns = {}: must be in 1..=2^24 ns",
                    c.int_ts_resolution_ns
                ));
            }
            if cfg.switch_clocks[..i].iter().any(|o| o.switch == c.switch) {
                return err(format!("{sw}: INT clock given twice"));
            }
            let first = port_base[c.switch as usize] as usize;
            for p in &mut ports[first..first + pm[c.switch as usize].len()] {
                p.int_ts_res_ns = c.int_ts_resolution_ns;
            }
        }
        for t in &cfg.switch_taps {
            let tick = ports[port_base[t.switch as usize] as usize].int_ts_res_ns;
            if tick > 1 {
                // The switch judge (docs/switch.md) models an INT clock that counts ns.
                return err(format!(
                    "switch tap on {}: its INT clock ticks every {tick} ns; a switch tap judges \
                     a clock in ns (int_ts_resolution_ns = 1)",
                    name(t.switch)
                ));
            }
        }
        for &h in &cfg.hosts_without_n {
            if topo
                .nodes
                .get(h as usize)
                .is_none_or(|n| n.kind != NodeKind::Host)
            {
                return err(format!("receiver without N: node {h} is not a host"));
            }
            if !matches!(cfg.cc, Cc::Fncc(_)) {
                return err(format!(
                    "{}: only an FNCC receiver writes N (FNCC-2); this run is {}",
                    name(h),
                    cfg.cc.family()
                ));
            }
        }
        let mut hosts: Vec<HostState> = host_nodes
            .iter()
            .map(|&h| HostState {
                node: h,
                port: port_base[h as usize],
                sender: None,
                receiver: None,
                tx_flows: Vec::new(),
                live_tx: Vec::new(),
                live_release: Vec::new(),
                rx_flows: Vec::new(),
                timer_at: [NONE; 2],
                wake_at: NONE,
                batch_flow: u32::MAX,
                batch_bytes: 0,
                tap: cfg.taps.iter().position(|&t| t == h),
                writes_n: !cfg.hosts_without_n.contains(&h),
                data_ecn: cfg.data_ecn(h).codepoint(),
                sender_decisions: Vec::new(),
                receiver_decisions: Vec::new(),
            })
            .collect();
        let mut psn_rng = SplitMix64::new(cfg.seed ^ 0x5053_4E30); // "PSN0": not a RED stream
        let mut flows: Vec<FlowState> = cfg
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let drawn = psn_rng.next_u32() & PSN_MASK;
                FlowState {
                    src_host: slot[f.src as usize],
                    dst_host: slot[f.dst as usize],
                    dst_route: slot[f.dst as usize],
                    src_route: slot[f.src as usize],
                    local_tx: 0,
                    local_rx: u32::MAX,
                    hash: five_tuple_hash(
                        cfg.seed,
                        slot[f.src as usize],
                        slot[f.dst as usize],
                        i as u32,
                    ),
                    start_ps: f.start_ns * PS_PER_NS,
                    message_bytes: f.size_bytes,
                    packets: f.size_bytes.div_ceil(u64::from(cfg.mtu_bytes)),
                    psn0: f.first_psn.unwrap_or(drawn),
                    next: 0,
                    una: 0,
                    high: 0,
                    window_bytes: None,
                    rate_bps: 0,
                    pace_ps: 0,
                    rto_ps: NONE,
                    rto_event: NONE,
                    tx_events: 0,
                    expected: 0,
                    nak_sent: false,
                    msn: 0,
                    rx_events: 0,
                    finish_ps: None,
                    delivered_bytes: 0,
                    delivered_at_sample: 0,
                    throughput: Series::default(),
                    rate_series: Series::default(),
                    window_series: Series::default(),
                }
            })
            .collect();
        for &i in &order {
            let f = &mut flows[i];
            let h = &mut hosts[f.src_host as usize];
            f.local_tx = h.tx_flows.len() as u32;
            h.tx_flows.push(i as u32);
            h.live_tx.push(i as u32);
            h.live_release.push(f.start_ps);
        }
        let jain = JainWindow::new(flows.iter().map(|f| f.start_ps / PS_PER_NS));
        let mut by_start: Vec<u32> = (0..flows.len() as u32).collect();
        by_start.sort_by_key(|&i| flows[i as usize].start_ps);
        let mut net = Network {
            dialect,
            base_rtt_ns: 0,
            end_ps: cfg.duration_ns * PS_PER_NS,
            now: 0,
            seq: 0,
            events: 0,
            queue: EventQueue::new(),
            slab: Vec::with_capacity(1024),
            ints: Vec::new(),
            has_int: matches!(dialect, Dialect::Hpcc | Dialect::Fncc),
            free: Vec::with_capacity(1024),
            ports,
            switches,
            hosts,
            flows,
            routes,
            later_routes,
            link_events,
            slot,
            port_base,
            scratch: Vec::with_capacity(16),
            delayed: VecDeque::new(),
            sample_ps: cfg.sample_interval_ns * PS_PER_NS,
            sample_times: Vec::new(),
            jain,
            sampling: Vec::new(),
            by_start,
            started: 0,
            first_finish_ps: NONE,
            drops: 0,
            track: !cfg.switch_taps.is_empty()
                || cfg.switch_device.bug == Some(SwitchBug::IngressTimestamp),
            meta: Vec::new(),
            quirks: IntQuirks {
                tx_payload: cfg
                    .switch_device
                    .bug
                    .as_ref()
                    .is_some_and(SwitchBug::int_tx_payload_only),
                qlen_bytes: cfg
                    .switch_device
                    .bug
                    .as_ref()
                    .is_some_and(SwitchBug::int_qlen_in_bytes),
            },
            xoff_at: cfg
                .switch
                .pfc
                .map_or(0, |p| cfg.switch_device.xoff_threshold(p.xoff_bytes)),
            cfg,
        };
        net.base_rtt_ns = match net.cfg.base_rtt_ns {
            Some(t) if t > 0 => t,
            Some(_) => return err("base_rtt_ns must be > 0".into()),
            None => net.unloaded_rtt_ns(),
        };
        // Models per host that sends or receives.
        for h in 0..net.hosts.len() {
            let sends = !net.hosts[h].tx_flows.is_empty();
            let receives = net.flows.iter().any(|f| f.dst_host == h as u32);
            if !sends && !receives {
                continue;
            }
            let (s, r, w0, r0) = net.build_models(net.hosts[h].node)?;
            if sends {
                net.hosts[h].sender = s;
                let r0 = net.cfg.device.program_rate(r0.max(1));
                for &fi in &net.hosts[h].tx_flows {
                    let f = &mut net.flows[fi as usize];
                    f.window_bytes = w0;
                    f.rate_bps = r0;
                }
            }
            if receives {
                net.hosts[h].receiver = r;
            }
        }
        Ok(net)
    }

    /// The base RTT `T` every model of the run uses, ns.
    pub fn base_rtt_ns(&self) -> u64 {
        self.base_rtt_ns
    }

    /// The largest unloaded RTT over the flows: a full-size WRITE_MIDDLE out and its ACK back
    /// along the flow's path, `Σ links (ser(data) + ser(ack) + 2 × prop)`, rounded up to ns.
    fn unloaded_rtt_ns(&self) -> u64 {
        let data = frame_len(
            self.dialect,
            PacketKind::Data,
            WRITE_MIDDLE,
            self.cfg.mtu_bytes,
        );
        let ack = frame_len(self.dialect, PacketKind::Ack, 0, 0);
        let mut worst = 0;
        for f in &self.flows {
            let mut ps = 0u64;
            let mut port = self.hosts[f.src_host as usize].port;
            for _ in 0..64 {
                let p = &self.ports[port as usize];
                ps += p.ser(data) + p.ser(ack) + 2 * p.prop_ps;
                let peer = p.peer;
                if self.slot[peer as usize] == f.dst_host
                    && self.cfg.topology.nodes[peer as usize].kind == NodeKind::Host
                {
                    break;
                }
                let sw = &self.switches[self.slot[peer as usize] as usize];
                let out = self.route(sw.node, f.dst_route, f.hash);
                port = self.port_base[peer as usize] + u32::from(out);
            }
            worst = worst.max(ps);
        }
        worst.div_ceil(PS_PER_NS).max(1)
    }

    #[inline]
    fn route(&self, node: NodeId, host: u32, flow_hash: u64) -> u16 {
        // Mix the switch in, so that consecutive tiers do not choose alike.
        self.routes
            .next(node, host as usize, mix(flow_hash ^ u64::from(node)))
    }

    /// The parameters the models of `host` run with (network values from the topology:
    /// `line_rate_bps` is the host's link rate — for the RCC receiver and the DCQCN NP too,
    /// their last hop — and `base_rtt_ns` is [`Network::base_rtt_ns`]). These are the
    /// scenario's parameters: a `[device]` bug's parameter change is not in them.
    pub fn host_cc(&self, host: NodeId) -> Cc {
        let line = self
            .slot
            .get(host as usize)
            .and_then(|&s| self.hosts.get(s as usize))
            .map_or(0, |h| self.ports[h.port as usize].rate_bps);
        let (t, mtu) = (self.base_rtt_ns, u64::from(self.cfg.mtu_bytes));
        // Both DCQCN profiles' notification points.
        let np_here = |np: &NpParams| NpParams {
            line_rate_bps: line,
            base_rtt_ns: t,
            mtu_bytes: mtu,
            ..np.clone()
        };
        match &self.cfg.cc {
            Cc::Dcqcn { rp, np } => Cc::Dcqcn {
                rp: RpParams {
                    line_rate_bps: line,
                    base_rtt_ns: t,
                    mtu_bytes: mtu,
                    ..rp.clone()
                },
                np: np_here(np),
            },
            Cc::Hpcc(p) => Cc::Hpcc(hpcc::Params {
                line_rate_bps: line,
                base_rtt_ns: t,
                mtu_bytes: mtu,
                ..p.clone()
            }),
            Cc::Fncc(p) => Cc::Fncc(fncc::Params {
                line_rate_bps: line,
                base_rtt_ns: t,
                mtu_bytes: mtu,
                ..p.clone()
            }),
            Cc::Rcc { receiver, .. } => Cc::Rcc {
                sender: SenderParams {
                    line_rate_bps: line,
                    base_rtt_ns: t,
                    mtu_bytes: mtu,
                },
                receiver: ReceiverParams {
                    line_rate_bps: line,
                    base_rtt_ns: t,
                    mtu_bytes: mtu,
                    ..receiver.clone()
                },
            },
            Cc::HpccNs3(p) => Cc::HpccNs3(HpccNs3Params {
                line_rate_bps: line,
                base_rtt_ns: t,
                mtu_bytes: mtu,
                ..p.clone()
            }),
            Cc::DcqcnNs3 { rp, np } => Cc::DcqcnNs3 {
                rp: DcqcnNs3Params {
                    line_rate_bps: line,
                    base_rtt_ns: t,
                    mtu_bytes: mtu,
                    ..rp.clone()
                },
                np: np_here(np),
            },
        }
    }

    /// The models of `host`, its sender model as the NIC runs it (`[device]` bug).
    fn build_models(&self, host: NodeId) -> Result<HostModels, NetError> {
        let (s, r, w0, r0) = self.plain_models(host)?;
        let Some(bug) = &self.cfg.device.bug else {
            return Ok((s, r, w0, r0));
        };
        let start = device::Start {
            window_bytes: w0,
            rate_bps: r0.max(1),
        };
        let s = s.map(|m| bug.wrap(m, start, self.base_rtt_ns));
        Ok((s, r, w0, r0))
    }

    /// The models of `host`, unwrapped (with a DCQCN bug's parameter change).
    fn plain_models(&self, host: NodeId) -> Result<HostModels, NetError> {
        Ok(match self.host_cc(host) {
            Cc::Dcqcn { mut rp, np } => {
                if let Some(bug) = &self.cfg.device.bug {
                    bug.adjust_rp(&mut rp);
                }
                let line = rp.line_rate_bps;
                (
                    Some(Box::new(Rp::new(rp).map_err(bad("dcqcn"))?)),
                    Some(Box::new(Np::new(np).map_err(bad("dcqcn-np"))?)),
                    None,
                    line, // DCQCN-3: start at line rate
                )
            }
            Cc::Hpcc(p) => {
                let m = hpcc::Hpcc::new(&p).map_err(bad("hpcc"))?;
                let w = m.w_init_bytes();
                (
                    Some(Box::new(m)),
                    None,
                    Some(w),
                    hpcc_rate(w, p.base_rtt_ns),
                ) // HPCC-1
            }
            Cc::Fncc(p) => {
                let m = fncc::Fncc::new(&p).map_err(bad("fncc"))?;
                let w = m.w_init_bytes();
                let r = fncc::Receiver::new(&p).map_err(bad("fncc-receiver"))?;
                (
                    Some(Box::new(m)),
                    Some(Box::new(r)),
                    Some(w),
                    hpcc_rate(w, p.base_rtt_ns),
                )
            }
            Cc::HpccNs3(p) => {
                // The simulator's QP starts at the line rate with the window `m_win`
                // (rdma-hw.cc `AddQueuePair`; `VAR_WIN` scales it by rate / max rate = 1).
                let m = HpccNs3::new(&p).map_err(bad("hpcc-ns3"))?;
                let w = p.has_win.then(|| m.win_bytes());
                (Some(Box::new(m)), None, w, p.line_rate_bps)
            }
            Cc::DcqcnNs3 { rp, np } => {
                let line = rp.line_rate_bps;
                (
                    Some(Box::new(DcqcnNs3::new(&rp).map_err(bad("dcqcn-ns3"))?)),
                    Some(Box::new(Np::new(np).map_err(bad("dcqcn-np"))?)),
                    None,
                    line, // the simulator's QP starts at m_max_rate
                )
            }
            Cc::Rcc { sender, receiver } => {
                let s = RccSender::new(sender).map_err(bad("rcc-sender"))?;
                let w = s.window_bytes(0); // RCC-1: C × T before any ACK
                let r = s.pacing_rate_bps(w);
                let rx = RccReceiver::new(receiver).map_err(bad("rcc-receiver"))?;
                (Some(Box::new(s)), Some(Box::new(rx)), Some(w), r)
            }
        })
    }

    #[inline]
    fn schedule(&mut self, t_ps: u64, class: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(t_ps, class << 56 | self.seq, ev);
    }

    #[inline]
    fn alloc(&mut self, p: Packet) -> u32 {
        if let Some(i) = self.free.pop() {
            self.slab[i as usize] = p;
            i
        } else {
            self.slab.push(p);
            if self.has_int {
                self.ints.push(IntStack::new());
            }
            (self.slab.len() - 1) as u32
        }
    }

    /// A packet with an empty INT stack (a sender's data, an FNCC ACK before the switches,
    /// a CNP): its slot's stack is cleared.
    #[inline]
    fn alloc_clear(&mut self, p: Packet) -> u32 {
        let id = self.alloc(p);
        if self.has_int {
            self.ints[id as usize] = IntStack::new();
        }
        id
    }

    /// The INT stack of slot `id` (empty for a dialect without one).
    #[inline]
    fn int_of(&self, id: u32) -> &IntStack {
        self.ints.get(id as usize).unwrap_or(&NO_INT)
    }

    /// Run to the end of [`NetConfig::duration_ns`]; taps go to `sink`.
    pub fn run(mut self, sink: &mut dyn TapSink) -> Result<RunResult, NetError> {
        for h in 0..self.hosts.len() {
            if !self.hosts[h].tx_flows.is_empty() {
                let first = self.hosts[h].tx_flows[0] as usize;
                let t = self.flows[first].start_ps;
                self.wake_nic(h as u32, t);
            }
            self.arm_timers(h as u32);
        }
        self.schedule(self.sample_ps, CLASS_SAMPLE, Ev::Sample);
        // Scheduled first: a link event comes before the packet events of its instant.
        for i in 0..self.link_events.len() {
            let t = self.link_events[i].0;
            self.schedule(t, CLASS_PACKET, Ev::Link { event: i as u32 });
        }
        while let Some((t_ps, _, ev)) = self.queue.pop() {
            if t_ps > self.end_ps {
                break;
            }
            self.now = t_ps;
            self.events += 1;
            if self.events & 0xFFFF == 0 {
                sink.progress(self.now / PS_PER_NS);
            }
            match ev {
                Ev::Arrive { port, pkt } => self.arrive(port, pkt, sink)?,
                Ev::PortFree { port } => {
                    self.ports[port as usize].busy = false;
                    self.try_start(port, sink)?;
                }
                Ev::PortWake { port } => {
                    let p = &mut self.ports[port as usize];
                    if p.wake_at == self.now {
                        p.wake_at = NONE;
                    }
                    self.try_start(port, sink)?;
                }
                Ev::Timer { host, side } => self.fire_timers(host, side, sink)?,
                Ev::Rto { flow } => self.fire_rto(flow, sink)?,
                Ev::NicWake { host } => {
                    let h = &mut self.hosts[host as usize];
                    if h.wake_at == self.now {
                        h.wake_at = NONE;
                    }
                    let port = h.port;
                    self.try_start(port, sink)?;
                }
                Ev::PfcRefresh { port } => {
                    let p = &mut self.ports[port as usize];
                    if p.refresh_at == self.now {
                        p.refresh_at = NONE;
                        if p.xoff
                            && let Some(pfc) = self.cfg.switch.pfc
                        {
                            self.send_pfc(port, pfc.pause_quanta, sink)?;
                        }
                    }
                }
                Ev::Apply => self.apply_delayed(sink)?,
                Ev::Link { event } => self.link_event(event as usize, sink)?,
                Ev::Sample => self.sample(),
            }
        }
        self.now = self.end_ps;
        sink.progress(self.cfg.duration_ns);
        Ok(self.finish())
    }

    fn sample(&mut self) {
        let t_ns = self.now / PS_PER_NS;
        self.sample_times.push(t_ns);
        let secs = self.cfg.sample_interval_ns;
        while let Some(&fi) = self.by_start.get(self.started)
            && self.flows[fi as usize].start_ps <= self.now
        {
            self.sampling.push(fi);
            self.started += 1;
        }
        let mut i = 0;
        while let Some(&fi) = self.sampling.get(i) {
            let f = &mut self.flows[fi as usize];
            // From its start to the first sample at or after its end (which holds its last
            // bytes): a finished flow's series stop, so memory follows the active flows, not
            // flows × run length.
            if f.finish_ps
                .is_some_and(|fin| self.now >= fin.saturating_add(self.sample_ps))
            {
                self.sampling.swap_remove(i);
                continue;
            }
            i += 1;
            let d = f.delivered_bytes - f.delivered_at_sample;
            f.delivered_at_sample = f.delivered_bytes;
            let bps = u128::from(d) * 8_000_000_000 / u128::from(secs);
            f.throughput
                .push(t_ns, u64::try_from(bps).unwrap_or(u64::MAX));
            f.rate_series.push(t_ns, f.rate_bps);
            if let Some(w) = f.window_bytes {
                f.window_series.push(t_ns, w);
            }
        }
        for p in &mut self.ports {
            if p.switch != u32::MAX {
                p.queue_samples.push(p.queued_bytes);
            }
        }
        if let Some(j) = &mut self.jain {
            // No flow finished before this sample: every finish so far is at or after it.
            let running = self.first_finish_ps == NONE || t_ns <= self.first_finish_ps / PS_PER_NS;
            j.sample_counts(t_ns, running, self.flows.iter().map(|f| f.delivered_bytes));
        }
        let next = self.now + self.sample_ps;
        if next <= self.end_ps {
            self.schedule(next, CLASS_SAMPLE, Ev::Sample);
        }
    }

    /// Schedule a NIC wake-up of host slot `h` at `t` unless an earlier one is pending.
    #[inline]
    fn wake_nic(&mut self, h: u32, t: u64) {
        let t = t.max(self.now);
        let host = &mut self.hosts[h as usize];
        if t < host.wake_at {
            host.wake_at = t;
            self.schedule(t, CLASS_NIC, Ev::NicWake { host: h });
        }
    }

    /// Schedule the host's model timers (C-5) when a deadline is earlier than the pending one.
    fn arm_timers(&mut self, h: u32) {
        for side in 0..2u8 {
            let host = &self.hosts[h as usize];
            let m = if side == 0 {
                &host.sender
            } else {
                &host.receiver
            };
            let Some(d) = m.as_ref().and_then(|m| m.next_timer_ns()) else {
                continue;
            };
            let t = deadline_ps(d).max(self.now);
            if t < host.timer_at[side as usize] {
                self.hosts[h as usize].timer_at[side as usize] = t;
                self.schedule(t, CLASS_TIMER, Ev::Timer { host: h, side });
            }
        }
    }

    fn fire_timers(&mut self, h: u32, side: u8, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let hi = h as usize;
        if self.hosts[hi].timer_at[side as usize] == self.now {
            self.hosts[hi].timer_at[side as usize] = NONE;
        }
        loop {
            let host = &mut self.hosts[hi];
            let m = if side == 0 {
                host.sender.as_mut()
            } else {
                host.receiver.as_mut()
            };
            let Some(m) = m else { break };
            let Some(d) = m.next_timer_ns() else { break };
            if deadline_ps(d) > self.now {
                break;
            }
            self.scratch.clear();
            m.on_timer(d, &mut self.scratch);
            if m.next_timer_ns() == Some(d) {
                return Err(NetError::StuckTimer {
                    model: m.name(),
                    deadline_ns: d,
                });
            }
            if side == 0 {
                self.apply_sender_decisions(hi);
            } else {
                self.receiver_outputs(hi);
            }
        }
        self.arm_timers(h);
        let port = self.hosts[hi].port;
        self.try_start(port, sink)
    }

    /// The sender model's decisions in `scratch`: the flows' rates and windows, now or, with
    /// `[device]` `reaction_ns`, that much later.
    fn apply_sender_decisions(&mut self, h: usize) {
        let dev = &self.cfg.device;
        let host = &mut self.hosts[h];
        let mut delayed = 0;
        for d in &self.scratch {
            let Some(&fi) = host.tx_flows.get(d.flow as usize) else {
                continue;
            };
            let (rate, window) = (d.outputs.rate_bps, d.outputs.window_bytes);
            if dev.reaction_ns == 0 {
                set_flow(&mut self.flows[fi as usize], rate, window, dev);
            } else if rate.is_some() || window.is_some() {
                self.delayed.push_back((fi, rate, window));
                delayed += 1;
            }
        }
        if host.tap.is_some() {
            host.sender_decisions.extend_from_slice(&self.scratch);
        }
        let t = self.now + self.cfg.device.reaction_ns * PS_PER_NS;
        for _ in 0..delayed {
            self.schedule(t, CLASS_APPLY, Ev::Apply);
        }
    }

    /// The oldest delayed decision takes effect (`reaction_ns` after the model made it).
    fn apply_delayed(&mut self, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let Some((fi, rate, window)) = self.delayed.pop_front() else {
            return Ok(());
        };
        let f = &mut self.flows[fi as usize];
        set_flow(f, rate, window, &self.cfg.device);
        let port = self.hosts[f.src_host as usize].port;
        self.try_start(port, sink)
    }

    /// The receiver model's decisions in `scratch`: CNPs to send now (DCQCN-2), and the ACK
    /// fields the decisions set (FNCC N; RCC cwnd, N, flags).
    fn receiver_outputs(&mut self, h: usize) -> (u16, u32, u8) {
        let (mut n, mut cwnd, mut flags) = (0, 0, 0);
        let mut cnps = 0usize;
        let mut cnp_flows = [0u32; 16];
        for d in &self.scratch {
            n = d.outputs.ack_n.unwrap_or(n);
            cwnd = d.outputs.ack_cwnd.unwrap_or(cwnd);
            flags = d.outputs.ack_flags.unwrap_or(flags);
            if d.outputs.send_cnp == Some(true) && cnps < cnp_flows.len() {
                cnp_flows[cnps] = d.flow;
                cnps += 1;
            }
        }
        if self.hosts[h].tap.is_some() {
            self.hosts[h]
                .receiver_decisions
                .extend_from_slice(&self.scratch);
        }
        for &local in &cnp_flows[..cnps] {
            let Some(&fi) = self.hosts[h].rx_flows.get(local as usize) else {
                continue;
            };
            let mut p = Packet::new(PacketKind::Cnp, fi);
            p.wire_bytes = frame_len(self.dialect, PacketKind::Cnp, 0, 0);
            self.queue_ctrl(self.hosts[h].port, p);
        }
        (n, cwnd, flags)
    }

    /// Queue a control frame (ACK, NAK, CNP) at a host port; strict priority over data.
    fn queue_ctrl(&mut self, port: u32, p: Packet) {
        let id = self.alloc_clear(p);
        self.queue_ctrl_id(port, id);
    }

    /// Queue the control frame in slot `id` at a host port.
    fn queue_ctrl_id(&mut self, port: u32, id: u32) {
        let bytes = u64::from(self.slab[id as usize].wire_bytes);
        let ps = &mut self.ports[port as usize];
        ps.ctrl.push_back(id);
        ps.queued_bytes += bytes;
    }

    fn fire_rto(&mut self, fi: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let f = &mut self.flows[fi as usize];
        if f.rto_event != self.now {
            return Ok(());
        }
        f.rto_event = NONE;
        if f.rto_ps == NONE {
            return Ok(());
        }
        if f.rto_ps > self.now {
            // Progress pushed the deadline back: one pending event per flow.
            f.rto_event = f.rto_ps;
            let t = f.rto_ps;
            self.schedule(t, CLASS_RTO, Ev::Rto { flow: fi });
            return Ok(());
        }
        f.next = f.una; // go back N
        f.rto_ps = NONE;
        let h = f.src_host;
        let port = self.hosts[h as usize].port;
        self.try_start(port, sink)
    }

    fn set_rto(&mut self, fi: u32, t: u64) {
        let f = &mut self.flows[fi as usize];
        f.rto_ps = t;
        if t != NONE && f.rto_event == NONE {
            f.rto_event = t;
            self.schedule(t, CLASS_RTO, Ev::Rto { flow: fi });
        }
    }

    /// Start the next transmission on `port` if it is idle: a pending PFC frame, then control
    /// frames, then data (unless paused by PFC).
    fn try_start(&mut self, port: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let p = &mut self.ports[port as usize];
        if p.busy {
            return Ok(());
        }
        if !p.link_up {
            // Down: nothing is routed here; an XON or XOFF for the peer is lost.
            p.pfc_pending = None;
            return Ok(());
        }
        let now = self.now;
        if let Some(q) = p.pfc_pending.take() {
            let mut pkt = Packet::new(PacketKind::Pfc, 0);
            pkt.pfc_quanta = q;
            pkt.pfc_from = p.node;
            pkt.wire_bytes = frame_len(self.dialect, PacketKind::Pfc, 0, 0);
            if p.switch != u32::MAX {
                // Switch taps: the ingress side's decision, and a frame leaving a tapped port.
                let (to, stap) = (p.peer, p.stap);
                for &t in &self.switches[p.switch as usize].taps {
                    sink.record_switch(
                        t as usize,
                        abs_ns(now),
                        &pkt,
                        &NO_INT,
                        SwitchTapPoint::PauseSent { to },
                    )?;
                }
                if stap != NO_TAP {
                    let at = SwitchTapPoint::Departed { truth: None };
                    sink.record_switch(stap as usize, abs_ns(now), &pkt, &NO_INT, at)?;
                }
            }
            let id = self.alloc(pkt);
            return self.transmit(port, id);
        }
        if let Some(id) = p.ctrl.pop_front() {
            let bytes = self.slab[id as usize].wire_bytes;
            p.queued_bytes -= u64::from(bytes);
            if p.host != u32::MAX {
                let h = p.host as usize;
                // RCC: the shim carries the receiver's transmit time (wire.md 5.5).
                self.slab[id as usize].ts_ns = abs_ns(now);
                if let Some(tap) = self.hosts[h].tap {
                    let int = self.int_of(id);
                    sink.record(tap, abs_ns(now), &self.slab[id as usize], int, true)?;
                }
            } else {
                self.switches[p.switch as usize].used -= u64::from(bytes);
                let stap = p.stap;
                if stap != NO_TAP {
                    let at = SwitchTapPoint::Departed { truth: None };
                    let (pkt, int) = (&self.slab[id as usize], self.int_of(id));
                    sink.record_switch(stap as usize, abs_ns(now), pkt, int, at)?;
                }
            }
            return self.transmit(port, id);
        }
        if p.paused_until > now {
            if p.wake_at > p.paused_until {
                p.wake_at = p.paused_until;
                let t = p.paused_until;
                self.schedule(t, CLASS_PACKET, Ev::PortWake { port });
            }
            return Ok(());
        }
        if p.host != u32::MAX {
            let h = p.host;
            return self.host_send(h, port, sink);
        }
        let Some(id) = p.data.pop_front() else {
            return Ok(());
        };
        let bytes = u64::from(self.slab[id as usize].wire_bytes);
        p.queued_bytes -= bytes;
        let sw = p.switch as usize;
        if matches!(self.cfg.switch_device.bug, Some(SwitchBug::MarkOnDequeue))
            && let Some(red) = &p.red
            && self.slab[id as usize].ecn != 0
        {
            // `mark-on-dequeue`: RED on the bytes still waiting behind the packet.
            let q = p.queued_bytes;
            let marked = should_mark(q, red, &mut self.switches[sw].rng);
            if marked {
                self.slab[id as usize].ecn = ECN_CE;
                p.ecn_marked += 1;
            }
            if let Some(m) = self.meta.get_mut(id as usize) {
                m.p = marking_probability(q, red);
                m.marked = marked;
            }
        }
        if self.dialect == Dialect::Hpcc {
            // HPCC: the egress INT hop, taken as the packet leaves (txBytes before it, qLen
            // behind it, as the HPCC authors' switch does).
            let clock = if self.cfg.switch_device.bug == Some(SwitchBug::IngressTimestamp) {
                self.meta[id as usize].t_in_ps
            } else {
                now
            };
            let hop = p.int_hop(clock, self.quirks);
            let sw = &self.switches[p.switch as usize];
            self.ints[id as usize].push(sw.int_id, hop, DEFAULT_MAX_HOPS);
        }
        self.switches[sw].used -= bytes;
        let ingress = self.switches[sw].first_port + u32::from(self.slab[id as usize].ingress);
        let p = &self.ports[port as usize];
        if p.stap != NO_TAP {
            let m = self.meta[id as usize];
            let truth = DequeueTruth {
                t_in_ns: abs_ns(m.t_in_ps),
                from: self.ports[ingress as usize].peer,
                qlen_at_enqueue: m.q_enq,
                qlen_at_dequeue: p.queued_bytes,
                marked: m.marked,
                p: m.p,
            };
            let at = SwitchTapPoint::Departed { truth: Some(truth) };
            let (pkt, int) = (&self.slab[id as usize], self.int_of(id));
            sink.record_switch(p.stap as usize, abs_ns(now), pkt, int, at)?;
        }
        self.transmit(port, id)?;
        // PFC: the ingress port's buffered bytes drop; XON when at or below the threshold.
        let ip = &mut self.ports[ingress as usize];
        ip.ingress_bytes -= bytes;
        if let Some(pfc) = self.cfg.switch.pfc
            && ip.xoff
            && ip.ingress_bytes <= pfc.xon_bytes
        {
            ip.xoff = false;
            self.send_pfc(ingress, 0, sink)?;
        }
        Ok(())
    }

    /// A link goes down or up (docs/sim.md "Link failures"): the switches take the routes of
    /// the new state; going down, both ends drop what they hold for it.
    fn link_event(&mut self, i: usize, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let (_, link, up) = self.link_events[i];
        self.routes = std::mem::replace(&mut self.later_routes[i], Routes::empty());
        let l = self.cfg.topology.links[link as usize];
        let ends = [l.a, l.b].map(|n| {
            let first = self.port_base[n as usize];
            let k = self.ports[first as usize..]
                .iter()
                .position(|p| p.node == n && p.link == link)
                .unwrap_or(0);
            first + k as u32
        });
        for port in ends {
            self.ports[port as usize].link_up = up;
            if up {
                self.try_start(port, sink)?;
            } else {
                self.flush_port(port, sink)?;
            }
        }
        Ok(())
    }

    /// Drop everything switch port `port` holds (its link went down): queued frames leave the
    /// shared buffer and, for data, their ingress port's PFC count (which may send an XON);
    /// a pending PFC frame and a pause from the peer end.
    fn flush_port(&mut self, port: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let now = self.now;
        let p = &mut self.ports[port as usize];
        p.pfc_pending = None;
        p.pause(now, now);
        let sw = p.switch as usize;
        while let Some(id) = self.ports[port as usize].ctrl.pop_front() {
            let bytes = u64::from(self.slab[id as usize].wire_bytes);
            self.drop_queued(port, sw, id, bytes);
        }
        while let Some(id) = self.ports[port as usize].data.pop_front() {
            let bytes = u64::from(self.slab[id as usize].wire_bytes);
            self.drop_queued(port, sw, id, bytes);
            let ingress = self.switches[sw].first_port + u32::from(self.slab[id as usize].ingress);
            let ip = &mut self.ports[ingress as usize];
            ip.ingress_bytes -= bytes;
            if let Some(pfc) = self.cfg.switch.pfc
                && ip.xoff
                && ip.ingress_bytes <= pfc.xon_bytes
            {
                ip.xoff = false;
                self.send_pfc(ingress, 0, sink)?;
            }
        }
        Ok(())
    }

    /// A frame queued at switch port `port` is dropped (its link went down).
    fn drop_queued(&mut self, port: u32, sw: usize, id: u32, bytes: u64) {
        let p = &mut self.ports[port as usize];
        p.queued_bytes -= bytes;
        p.dropped += 1;
        self.switches[sw].used -= bytes;
        self.drops += 1;
        self.free.push(id);
    }

    /// Send a PFC frame out of switch port `port` (quanta 0 = XON), ahead of anything queued.
    fn send_pfc(&mut self, port: u32, quanta: u16, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let p = &mut self.ports[port as usize];
        p.pfc_pending = Some(quanta);
        if quanta != 0 {
            p.pause_sent += 1;
            // Refresh before the pause runs out (a quantum is 512 bit times); never with
            // `no-pause-refresh`.
            if self.cfg.switch_device.refreshes_pauses() {
                let pause_ps = quanta_ps(quanta, p.rate_bps);
                let t = self.now + (pause_ps / 2).max(1);
                p.refresh_at = t;
                self.schedule(t, CLASS_PACKET, Ev::PfcRefresh { port });
            }
        }
        self.try_start(port, sink)
    }

    /// Put packet `id` on the wire of `port` now.
    #[inline]
    fn transmit(&mut self, port: u32, id: u32) -> Result<(), NetError> {
        let p = &mut self.ports[port as usize];
        let bytes = self.slab[id as usize].wire_bytes;
        p.busy = true;
        p.tx_bytes += u64::from(bytes);
        p.tx_payload += u64::from(self.slab[id as usize].payload);
        let done = self.now + p.ser(bytes);
        let arrive = done + p.prop_ps;
        let peer_port = p.peer_port;
        self.schedule(done, CLASS_PACKET, Ev::PortFree { port });
        self.schedule(
            arrive,
            CLASS_PACKET,
            Ev::Arrive {
                port: peer_port,
                pkt: id,
            },
        );
        Ok(())
    }

    /// The NIC of host slot `h` picks the flow whose pacer released earliest (ties: lowest
    /// sender flow id) among those that may send, and sends its next packet now; or wakes up
    /// when the first pacer releases. With `[device]` `burst_bytes`, a flow's batch under way
    /// goes first, whatever its pacer says.
    fn host_send(&mut self, h: u32, port: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let mtu = self.cfg.mtu_bytes;
        let now = self.now;
        // (release, flow, its index in `live_tx`)
        let mut best: Option<(u64, u32, usize)> = None;
        // Batch scheduling: a batch under way goes on while its flow may send.
        let host = &self.hosts[h as usize];
        let batch = host.batch_flow;
        if batch != u32::MAX {
            if self.flows[batch as usize].can_send(mtu)
                && let Some(k) = host.live_tx.iter().position(|&x| x == batch)
            {
                best = Some((now, batch, k));
            } else {
                self.hosts[h as usize].batch_flow = u32::MAX;
            }
        }
        if best.is_none() {
            let host = &self.hosts[h as usize];
            for (k, (&fi, &release)) in host.live_tx.iter().zip(&host.live_release).enumerate() {
                // Only an earlier release wins (ties: the first in order); then may it send?
                if best.is_none_or(|(r, _, _)| release < r) && self.flows[fi as usize].can_send(mtu)
                {
                    best = Some((release, fi, k));
                }
            }
        }
        let Some((release, fi, slot)) = best else {
            return Ok(());
        };
        if release > now {
            self.wake_nic(h, release);
            return Ok(());
        }
        let f = &self.flows[fi as usize];
        let k = f.next;
        let mut pkt = Packet::new(PacketKind::Data, fi);
        pkt.psn = f.psn(k);
        pkt.opcode = f.opcode(k);
        pkt.payload = f.payload(k, mtu);
        // DCQCN needs ECN-capable data, ECT(0) or the host's ECT(1) (`[hosts.NAME]` `ecn`);
        // HPCC: the sender writes an empty stack (wire.md 5.2).
        pkt.ecn = if self.dialect == Dialect::Roce {
            self.hosts[h as usize].data_ecn
        } else {
            0
        };
        pkt.ts_ns = abs_ns(now);
        pkt.wire_bytes = frame_len(self.dialect, PacketKind::Data, pkt.opcode, pkt.payload);
        let local = f.local_tx;
        if let Some(tap) = self.hosts[h as usize].tap {
            sink.record(tap, abs_ns(now), &pkt, &NO_INT, true)?;
        }
        self.sender_event(
            h as usize,
            fi,
            local,
            EventKind::TxData {
                psn: pkt.psn,
                bytes: pkt.payload,
                opcode: pkt.opcode,
            },
        );
        let rto = self.cfg.rto_ns * PS_PER_NS;
        let f = &mut self.flows[fi as usize];
        f.next = k + 1;
        f.high = f.high.max(k + 1);
        // The pacer spaces frames at the flow's rate; after an idle spell it restarts now.
        f.pace_ps = f.pace_ps.max(now) + ser_ps(pkt.wire_bytes, f.rate_bps);
        self.hosts[h as usize].live_release[slot] = f.pace_ps.max(f.start_ps);
        if f.rto_ps == NONE {
            self.set_rto(fi, now + rto);
        }
        let burst = u64::from(self.cfg.device.burst_bytes);
        if burst > 0 {
            // The batch goes on until it holds `burst_bytes`; a new one starts with this frame
            // when the flow was not the one batching.
            let host = &mut self.hosts[h as usize];
            let before = if host.batch_flow == fi {
                host.batch_bytes
            } else {
                0
            };
            let sent = before + u64::from(pkt.wire_bytes);
            (host.batch_flow, host.batch_bytes) = if sent >= burst {
                (u32::MAX, 0)
            } else {
                (fi, sent)
            };
        }
        let id = self.alloc_clear(pkt);
        self.transmit(port, id)
    }

    fn sender_event(&mut self, h: usize, fi: u32, local: u32, kind: EventKind) {
        let f = &mut self.flows[fi as usize];
        let ev = Event {
            t_ns: abs_ns(self.now),
            flow: local,
            index: f.tx_events,
            kind,
        };
        f.tx_events += 1;
        self.feed_sender(h, &ev);
    }

    /// The sender model of host slot `h` takes `ev`; its decisions apply.
    fn feed_sender(&mut self, h: usize, ev: &Event) {
        self.scratch.clear();
        if let Some(m) = self.hosts[h].sender.as_mut() {
            m.on_event(ev, &mut self.scratch);
        }
        self.apply_sender_decisions(h);
        self.arm_timers(h as u32);
    }

    fn arrive(&mut self, port: u32, id: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        if !self.ports[port as usize].link_up {
            // On the wire when its link went down: lost (counted at the port that sent it).
            let from = self.ports[port as usize].peer_port;
            self.ports[from as usize].dropped += 1;
            self.drops += 1;
            self.free.push(id);
            return Ok(());
        }
        let kind = self.slab[id as usize].kind;
        if kind == PacketKind::Pfc {
            let pkt = self.slab[id as usize];
            self.free.push(id);
            let now = self.now;
            let p = &mut self.ports[port as usize];
            p.pause_received += 1;
            if p.host != u32::MAX
                && let Some(tap) = self.hosts[p.host as usize].tap
            {
                sink.record(tap, abs_ns(now), &pkt, &NO_INT, false)?;
            }
            if p.stap != NO_TAP {
                let at = SwitchTapPoint::PauseReceived;
                sink.record_switch(p.stap as usize, abs_ns(now), &pkt, &NO_INT, at)?;
            }
            let pause_ps = quanta_ps(pkt.pfc_quanta, p.rate_bps);
            p.pause(now, now + pause_ps);
            return self.try_start(port, sink);
        }
        let p = &self.ports[port as usize];
        if p.host != u32::MAX {
            let h = p.host;
            return match kind {
                PacketKind::Data => self.at_receiver(h, id, sink),
                _ => self.at_sender(h, id, sink),
            };
        }
        self.at_switch(port, id, sink)
    }

    /// A switch: route, FNCC-3 for ACKs, then the egress port's queue (shared buffer,
    /// RED/ECN, PFC ingress accounting).
    fn at_switch(&mut self, in_port: u32, id: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let (sw, node) = {
            let p = &self.ports[in_port as usize];
            (p.switch as usize, p.node)
        };
        let pkt = &self.slab[id as usize];
        let f = &self.flows[pkt.flow as usize];
        let (dst, kind) = if pkt.kind == PacketKind::Data {
            (f.dst_route, pkt.kind)
        } else {
            (f.src_route, pkt.kind)
        };
        let out = self.route(node, dst, f.hash);
        let out_port = self.switches[sw].first_port + u32::from(out);
        let bytes = u64::from(pkt.wire_bytes);
        let stap = self.ports[out_port as usize].stap;
        if stap != NO_TAP {
            // The port under test's ingress side: the frame as it arrived.
            let from = self.ports[in_port as usize].peer;
            let at = SwitchTapPoint::Arrived { from };
            sink.record_switch(stap as usize, abs_ns(self.now), pkt, self.int_of(id), at)?;
        }
        // A switch tap on the data direction's egress port: the ACK whose INT got its record.
        let mut ack_tap = None;
        if matches!(kind, PacketKind::Ack | PacketKind::Nak) && self.switches[sw].fncc.is_some() {
            // FNCC-3: the data direction's egress towards the ACK's source (the receiver).
            let data_out = self.route(node, f.dst_route, f.hash);
            let dp = &self.ports[(self.switches[sw].first_port + u32::from(data_out)) as usize];
            let hop = dp.int_hop(self.now, self.quirks);
            if dp.stap != NO_TAP {
                let truth = AckIntTruth {
                    hop_index: self.ints[id as usize].n_hop(),
                    tx_bytes: dp.tx_bytes,
                    queued_bytes: dp.queued_bytes,
                };
                ack_tap = Some((dp.stap, truth));
            }
            if let Some(fs) = self.switches[sw].fncc.as_mut() {
                fs.set_port_int(usize::from(data_out), hop)?;
                fs.forward_ack(usize::from(data_out), &mut self.ints[id as usize])?;
            }
        }
        if self.switches[sw].used + bytes > self.cfg.switch.buffer_bytes {
            self.free.push(id);
            self.ports[out_port as usize].dropped += 1;
            self.drops += 1;
            return Ok(());
        }
        if let Some((t, truth)) = ack_tap {
            // Forwarded: as it leaves (nothing else changes an ACK in the switch).
            let at = SwitchTapPoint::AckInt { truth };
            let (pkt, int) = (&self.slab[id as usize], self.int_of(id));
            sink.record_switch(t as usize, abs_ns(self.now), pkt, int, at)?;
        }
        self.switches[sw].used += bytes;
        let op = &mut self.ports[out_port as usize];
        if kind != PacketKind::Data {
            op.ctrl.push_back(id);
            op.queued_bytes += bytes;
        } else {
            // DCQCN-1: RED on the bytes waiting ahead of the packet (the one on the wire
            // excluded), only ECN-capable packets.
            let pkt = &mut self.slab[id as usize];
            let q_enq = op.queued_bytes;
            let (mut p, mut marked) = (0.0, false);
            match &self.cfg.switch_device.bug {
                None => {
                    if let Some(red) = &op.red
                        && pkt.ecn != 0
                    {
                        marked = should_mark(q_enq, red, &mut self.switches[sw].rng);
                        if self.track {
                            p = marking_probability(q_enq, red);
                        }
                    }
                }
                Some(SwitchBug::MarkAverageQueue { avg_weight }) => {
                    // RED on the average queue, floored to whole bytes.
                    op.avg_q = ewma(op.avg_q, q_enq, *avg_weight);
                    if let Some(red) = &op.red
                        && pkt.ecn != 0
                    {
                        let q = op.avg_q as u64;
                        marked = should_mark(q, red, &mut self.switches[sw].rng);
                        p = marking_probability(q, red);
                    }
                }
                // Decided as it leaves.
                Some(SwitchBug::MarkOnDequeue) => {}
                Some(_) => {
                    if let Some(red) = &op.red
                        && pkt.ecn != 0
                    {
                        marked = should_mark(q_enq, red, &mut self.switches[sw].rng);
                        p = marking_probability(q_enq, red);
                    }
                }
            }
            if marked {
                pkt.ecn = ECN_CE;
                op.ecn_marked += 1;
            }
            pkt.ingress = self.ports[in_port as usize].index;
            if self.track {
                let i = id as usize;
                if self.meta.len() <= i {
                    self.meta
                        .resize(self.slab.len().max(i + 1), PktMeta::default());
                }
                self.meta[i] = PktMeta {
                    t_in_ps: self.now,
                    q_enq,
                    p,
                    marked,
                };
            }
            let op = &mut self.ports[out_port as usize];
            op.data.push_back(id);
            op.queued_bytes += bytes;
            op.queue_max = op.queue_max.max(op.queued_bytes);
            let ip = &mut self.ports[in_port as usize];
            ip.ingress_bytes += bytes;
            if let Some(pfc) = self.cfg.switch.pfc
                && !ip.xoff
                && ip.ingress_bytes > self.xoff_at
            {
                ip.xoff = true;
                self.send_pfc(in_port, pfc.pause_quanta, sink)?;
            }
        }
        self.try_start(out_port, sink)
    }

    /// The receiver NIC: tap, receiver model, RC responder (in-order accept, one NAK per gap,
    /// duplicates re-acknowledged), then the ACK or NAK.
    /// The data packet is in slot `id`; its ACK or NAK takes the slot over (an HPCC ACK
    /// echoes the data packet's INT stack unchanged, wire.md 5.3: it stays where it is).
    fn at_receiver(&mut self, h: u32, id: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let hi = h as usize;
        let pkt = self.slab[id as usize];
        let fi = pkt.flow;
        if let Some(tap) = self.hosts[hi].tap {
            sink.record(tap, abs_ns(self.now), &pkt, self.int_of(id), false)?;
        }
        if self.flows[fi as usize].local_rx == u32::MAX {
            self.flows[fi as usize].local_rx = self.hosts[hi].rx_flows.len() as u32;
            self.hosts[hi].rx_flows.push(fi);
        }
        let f = &mut self.flows[fi as usize];
        let ev = Event {
            t_ns: abs_ns(self.now),
            flow: f.local_rx,
            index: f.rx_events,
            kind: EventKind::RxData {
                psn: pkt.psn,
                bytes: pkt.payload,
                opcode: pkt.opcode,
                ecn: pkt.ecn,
                send_ts_ns: (self.dialect == Dialect::Rcc).then_some(pkt.ts_ns),
            },
        };
        f.rx_events += 1;
        self.scratch.clear();
        if let Some(m) = self.hosts[hi].receiver.as_mut() {
            m.on_event(&ev, &mut self.scratch);
        }
        let (n, cwnd, flags) = self.receiver_outputs(hi);
        self.arm_timers(h);

        let f = &mut self.flows[fi as usize];
        let expected_psn = f.psn(f.expected);
        let ahead = pkt.psn.wrapping_sub(expected_psn) & PSN_MASK;
        let reply = if ahead == 0 {
            f.expected += 1;
            f.nak_sent = false;
            f.delivered_bytes += u64::from(pkt.payload);
            if matches!(
                message_position(pkt.opcode),
                MessagePosition::Last | MessagePosition::Only
            ) {
                f.msn = (f.msn + 1) & PSN_MASK; // a message completed
            }
            Some((PacketKind::Ack, pkt.psn))
        } else if ahead < PSN_HALF {
            // A gap: NAK once (PSN sequence error, naming the expected PSN), drop the rest.
            (!std::mem::replace(&mut f.nak_sent, true)).then_some((PacketKind::Nak, expected_psn))
        } else {
            // A duplicate: acknowledge what was received.
            Some((PacketKind::Ack, expected_psn.wrapping_sub(1) & PSN_MASK))
        };
        if let Some((kind, psn)) = reply {
            let mut a = Packet::new(kind, fi);
            a.psn = psn;
            a.syndrome = if kind == PacketKind::Nak {
                SYNDROME_NAK_PSN
            } else {
                SYNDROME_ACK
            };
            a.msn = f.msn;
            (a.ack_n, a.ack_cwnd, a.ack_flags) = (n, cwnd, flags);
            if !self.hosts[hi].writes_n {
                a.ack_n = 0; // a NIC without FNCC-2: N unknown (wire.md 4)
            }
            a.wire_bytes = frame_len(self.dialect, kind, 0, 0);
            self.slab[id as usize] = a;
            if self.dialect != Dialect::Hpcc && self.has_int {
                self.ints[id as usize] = IntStack::new(); // FNCC: the switches fill the ACK's
            }
            self.queue_ctrl_id(self.hosts[hi].port, id);
        } else {
            self.free.push(id);
        }
        let port = self.hosts[hi].port;
        self.try_start(port, sink)
    }

    /// The sender NIC: tap, the model's event, then the requester's transport.
    /// The ACK, NAK or CNP in slot `id` reaches its sender.
    fn at_sender(&mut self, h: u32, id: u32, sink: &mut dyn TapSink) -> Result<(), NetError> {
        let hi = h as usize;
        let pkt = self.slab[id as usize];
        if let Some(tap) = self.hosts[hi].tap {
            sink.record(tap, abs_ns(self.now), &pkt, self.int_of(id), false)?;
        }
        self.free.push(id);
        let fi = pkt.flow;
        let d = self.dialect;
        // Built where it is used: the INT stack is most of the event's size.
        let info = || AckInfo {
            psn: pkt.psn,
            syndrome: pkt.syndrome,
            int: self.has_int.then(|| self.ints[id as usize]),
            n: matches!(d, Dialect::Fncc | Dialect::Rcc).then_some(pkt.ack_n),
            cwnd: (d == Dialect::Rcc).then_some(pkt.ack_cwnd),
            rcc_flags: (d == Dialect::Rcc).then_some(pkt.ack_flags),
            ts_ns: (d == Dialect::Rcc).then_some(pkt.ts_ns),
        };
        let f = &self.flows[fi as usize];
        let ev = Event {
            t_ns: abs_ns(self.now),
            flow: f.local_tx,
            index: f.tx_events,
            kind: match pkt.kind {
                PacketKind::Ack => EventKind::RxAck(info()),
                PacketKind::Nak => EventKind::RxNak(info()),
                _ => EventKind::RxCnp,
            },
        };
        self.flows[fi as usize].tx_events += 1;
        self.feed_sender(hi, &ev);

        let now = self.now;
        let rto = self.cfg.rto_ns * PS_PER_NS;
        let f = &mut self.flows[fi as usize];
        let before = f.una;
        match pkt.kind {
            PacketKind::Ack => {
                if let Some(k) = f.index_of(pkt.psn).filter(|&k| k < f.high) {
                    f.una = f.una.max(k + 1);
                    f.next = f.next.max(f.una);
                }
            }
            PacketKind::Nak => {
                if let Some(k) = f.index_of(pkt.psn) {
                    f.una = f.una.max(k);
                    f.next = f.una; // go back N
                }
            }
            _ => {}
        }
        if f.una != before || pkt.kind == PacketKind::Nak {
            if f.una == f.packets && f.finish_ps.is_none() {
                f.finish_ps = Some(now);
                self.first_finish_ps = self.first_finish_ps.min(now);
                let host = &mut self.hosts[hi];
                if let Some(k) = host.live_tx.iter().position(|&x| x == fi) {
                    host.live_tx.remove(k);
                    host.live_release.remove(k);
                }
            }
            let t = if f.una < f.high { now + rto } else { NONE };
            self.set_rto(fi, t);
        }
        let port = self.hosts[hi].port;
        self.try_start(port, sink)
    }

    fn finish(mut self) -> RunResult {
        let end = self.end_ps;
        let names = &self.cfg.topology.nodes;
        let mut taps: Vec<TapRun> = self
            .cfg
            .taps
            .iter()
            .map(|&n| TapRun {
                host: n,
                ..TapRun::default()
            })
            .collect();
        for h in &mut self.hosts {
            if let Some(t) = h.tap {
                taps[t].sender_flows = h.tx_flows.clone();
                taps[t].receiver_flows = h.rx_flows.clone();
                taps[t].sender_decisions = std::mem::take(&mut h.sender_decisions);
                taps[t].receiver_decisions = std::mem::take(&mut h.receiver_decisions);
            }
        }
        let host_name = |slot: u32| names[self.hosts[slot as usize].node as usize].name.clone();
        let flows: Vec<FlowMetrics> = self
            .flows
            .iter_mut()
            .enumerate()
            .map(|(i, f)| {
                let start_ns = f.start_ps / PS_PER_NS;
                let finish_ns = f.finish_ps.map(|t| t / PS_PER_NS);
                FlowMetrics {
                    id: i as u32,
                    src: host_name(f.src_host),
                    dst: host_name(f.dst_host),
                    size_bytes: f.message_bytes,
                    start_ns,
                    finish_ns,
                    fct_ns: finish_ns.map(|t| t - start_ns),
                    bytes_acked: f.bytes_before(f.una, self.cfg.mtu_bytes),
                    throughput_bps: std::mem::take(&mut f.throughput),
                    rate_bps: std::mem::take(&mut f.rate_series),
                    window_bytes: std::mem::take(&mut f.window_series),
                }
            })
            .collect();
        let duration_ns = self.cfg.duration_ns;
        let mut total_pause = 0u64;
        let mut total_paused_ps = 0u64;
        let ports: Vec<PortMetrics> = self
            .ports
            .iter_mut()
            .filter(|p| p.switch != u32::MAX)
            .map(|p| {
                let paused_ps = p.paused_total(end);
                total_pause += p.pause_sent;
                total_paused_ps += paused_ps;
                let samples = std::mem::take(&mut p.queue_samples);
                let node = names[p.node as usize].name.clone();
                PortMetrics {
                    name: format!("{node}:p{}", p.index),
                    node,
                    port: u32::from(p.index),
                    peer: names[p.peer as usize].name.clone(),
                    rate_bps: p.rate_bps,
                    tx_bytes: p.tx_bytes,
                    utilization: p.tx_bytes as f64 * 8.0
                        / (p.rate_bps as f64 * duration_ns as f64 * 1e-9),
                    queue_p95_bytes: percentile(&samples, 0.95),
                    queue_max_bytes: p.queue_max,
                    queue_bytes: Series {
                        t_ns: self.sample_times.clone(),
                        v: samples,
                    },
                    ecn_marked: p.ecn_marked,
                    dropped: p.dropped,
                    pfc: PfcMetrics {
                        pause_frames_sent: p.pause_sent,
                        paused_ns: paused_ps / PS_PER_NS,
                        pause_frames_received: p.pause_received,
                    },
                }
            })
            .collect();
        // Host NICs paused by their switch count too.
        for p in self.ports.iter().filter(|p| p.host != u32::MAX) {
            total_paused_ps += p.paused_total(end);
        }
        let jain = self.jain.as_ref().and_then(JainWindow::index);
        let metrics = Metrics {
            version: 1,
            scenario: self.cfg.name.clone(),
            seed: self.cfg.seed,
            model: self.cfg.cc.family().to_string(),
            duration_ns,
            sample_interval_ns: self.cfg.sample_interval_ns,
            events: self.events,
            base_rtt_ns: self.base_rtt_ns,
            flows,
            ports,
            pfc: super::metrics::PfcTotals {
                pause_frames: total_pause,
                paused_ns: total_paused_ps / PS_PER_NS,
            },
            drops: self.drops,
            jain_index: jain,
        };
        RunResult { taps, metrics }
    }
}

/// Program a flow's rate limiter and window with a decision's outputs (the limiter keeps
/// `rate_mantissa_bits` of the rate).
#[inline]
fn set_flow(f: &mut FlowState, rate: Option<u64>, window: Option<u64>, dev: &device::DeviceConfig) {
    if let Some(r) = rate {
        f.rate_bps = dev.program_rate(r.max(1));
    }
    if let Some(w) = window {
        f.window_bytes = Some(w);
    }
}

/// A PFC pause of `quanta` (802.1Qbb: 512 bit times each) at `rate_bps`, ps: the time to
/// send `quanta × 64` bytes. u128 inside: 0xFFFF × 512 × 10^12 overflows u64.
fn quanta_ps(quanta: u16, rate_bps: u64) -> u64 {
    super::ser_ps(u32::from(quanta) * 64, rate_bps)
}

/// ECMP key: a seeded hash of the flow's 5-tuple as the taps write it (docs/sim.md
/// "Addresses": host numbers stand for the IPs, UDP source port `49152 + flow mod 16384`,
/// destination port 4791, protocol 17), the same at every switch of the path.
fn five_tuple_hash(seed: u64, src_host: u32, dst_host: u32, flow: u32) -> u64 {
    let sport = 49_152 + u64::from(flow % 16_384);
    let tuple =
        (u64::from(src_host) << 40 | u64::from(dst_host) << 16 | sport) ^ mix(4_791 << 8 | 17);
    mix(seed ^ mix(tuple))
}
