//! The event loop (docs/sim.md "Event order").
//!
//! Events are small `Copy` values in a queue (queue.rs: a timing wheel over a heap) ordered
//! by (time ps, class, sequence):
//! at one instant model timers run first (C-5), then sender decisions that take effect late
//! (`[device]` `reaction_ns`), then packet and port events in the order they were scheduled,
//! then retransmission timeouts, then NIC wake-ups, then metric samples.
//! Packets live in a slab (`Vec<Packet>` + free list) and travel as `u32` handles, so the loop
//! allocates nothing per packet once the queues have grown.
//!
//! The files, by what they decide (this one holds the state they share):
//! - `build.rs`: the network built from its configuration (checks, ports, routes, models);
//! - `event_loop.rs`: the loop itself, model timers and retransmission timeouts;
//! - `nic.rs`: the host NIC's send side (scheduler, pacer, the sender model's decisions);
//! - `port.rs`: egress ports (what goes on the wire next, PFC frames, link failures);
//! - `switch.rs`: a packet at a switch (ECMP, FNCC-3, shared buffer, RED, PFC ingress);
//! - `delivery.rs`: a packet at a host (receiver and its ACKs, sender and go-back-N);
//! - `sample.rs`: metric samples and the run's metrics at its end.

mod build;
mod delivery;
mod event_loop;
mod nic;
mod port;
mod sample;
mod switch;

use std::collections::VecDeque;

use ccreplay_codecs::Dialect;
use ccreplay_codecs::shim::int::{
    DEFAULT_MAX_HOPS, IntHop, IntStack, IntStackHeader, QLEN_UNIT, TX_BYTES_UNIT,
};

use super::metrics::{JainWindow, Series};
use super::packet::{Packet, WRITE_FIRST, WRITE_LAST, WRITE_MIDDLE, WRITE_ONLY};
use super::queue::EventQueue;
use super::switch_device::drift_ns;
use super::topology::{NodeId, Routes};
use super::{EPOCH_NS, NetConfig, PS_PER_NS, prefetch, ser_ps};
use crate::dcqcn::cp::{RedParams, SplitMix64};
use crate::{Decision, Model, fncc};

const PSN_MASK: u32 = 0xFF_FFFF;
/// Half the PSN space: a PSN `d` ahead with `d < 2^23` is after (C-2).
const PSN_HALF: u32 = 1 << 23;
const NONE: u64 = u64::MAX;
/// The stack of a packet that carries none.
const NO_INT: IntStack = IntStack::new();
/// The records a switch appends at most (HPCC and FNCC switches alike: wire.md 5.2).
const MAX_HOPS: usize = DEFAULT_MAX_HOPS as usize;

/// The INT records of one slab slot (HPCC, FNCC), as the switches wrote them; nHop and
/// pathID are in the packet (`Packet::int_n`, `int_path`). One cache line, where an
/// `IntStack` (room for 15 records) is 184 bytes: the k = 8 tree holds 325,000 packets at
/// once, and a switch's append had been a miss on the stack's header (a third of the time
/// spent taking packets off the queues).
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
struct IntSlot([IntHop; MAX_HOPS]);
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

/// A FIFO of slab handles linked through `Network::link` (one `u32` per slab slot): a port's
/// queue is 8 bytes in its state and no allocation of its own (a `VecDeque` per queue was a
/// buffer somewhere for every enqueue and dequeue to reach).
#[derive(Clone, Copy, Debug)]
struct PktQueue {
    head: u32,
    tail: u32,
}

/// No packet: the end of a `PktQueue`.
const NO_PKT: u32 = u32::MAX;

impl PktQueue {
    const EMPTY: Self = PktQueue {
        head: NO_PKT,
        tail: NO_PKT,
    };

    #[inline]
    fn push_back(&mut self, link: &mut [u32], id: u32) {
        link[id as usize] = NO_PKT;
        if self.tail == NO_PKT {
            self.head = id;
        } else {
            link[self.tail as usize] = id;
        }
        self.tail = id;
    }

    #[inline]
    fn pop_front(&mut self, link: &[u32]) -> Option<u32> {
        let id = self.head;
        if id == NO_PKT {
            return None;
        }
        self.head = link[id as usize];
        if self.head == NO_PKT {
            self.tail = NO_PKT;
        }
        Some(id)
    }
}

/// Fields in the order the hot paths read them (`repr(C)`): what every transmission and
/// `start_next` touch in the first cache line, the rest of a switch hop in the next two,
/// counters and samples after (the k = 8 tree's ports do not stay in cache).
#[repr(C)]
struct PortState {
    busy: bool,
    /// False while the port's link is down (`NetConfig::link_events`).
    link_up: bool,
    xoff: bool,
    line_code: u8,
    /// A PFC frame to send next (its pause quanta).
    pfc_pending: Option<u16>,
    /// Host slot of the node, or `u32::MAX` at a switch.
    host: u32,
    /// Switch slot of the node, or `u32::MAX` at a host.
    switch: u32,
    /// Global index of the peer's port.
    peer_port: u32,
    /// Switch tap on this (egress) port: index in `NetConfig::switch_taps`, or `NO_TAP`.
    stap: u32,
    ctrl: PktQueue,
    data: PktQueue,
    /// Bytes waiting (not on the wire), data and control.
    queued_bytes: u64,
    /// Bytes whose transmission started (INT txBytes).
    tx_bytes: u64,
    /// IB payload bytes whose transmission started (`txbytes-no-headers`).
    tx_payload: u64,
    /// The peer paused our data until then (ps).
    paused_until: u64,
    /// ps per byte when exact (rate divides 8 × 10^12), else 0.
    ps_per_byte: u64,
    prop_ps: u64,
    /// The key (time ps, order) of this switch port's `PortFree`, reserved but not scheduled:
    /// the port went on the wire with nothing behind it, so the event would find nothing to
    /// do. It is scheduled with that key if anything reaches the port first (`try_start`),
    /// else dropped — the run is the same event for event, one queue push and pop fewer.
    free_later: Option<(u64, u64)>,
    queue_max: u64,
    /// Ingress side: data bytes buffered at this switch that arrived through this port.
    ingress_bytes: u64,
    /// INT clock offset, ns, and txBytes start value, bytes (`SwitchConfig`).
    int_ts_offset_ns: u64,
    int_tx_offset: u64,
    /// INT clock tick of the port's switch, ns (`SwitchConfig::int_ts_resolution_ns`,
    /// `NetConfig::switch_clocks`; 1 = exact).
    int_ts_res_ns: u64,
    /// INT clock drift of the port's switch, ppm (`[switch_device]` `clock_drift_ppm` × its
    /// number).
    drift: f64,
    rate_bps: u64,
    /// Index of this port at its node.
    index: u16,
    node: NodeId,
    /// Index of the port's link in the topology.
    link: u32,
    /// RED's average queue, bytes (`mark-average-queue`).
    avg_q: f64,
    peer: NodeId,
    /// The port's RED ramp (switch ports: [`SwitchConfig::red_for`] its rate).
    red: Option<RedParams>,
    paused_since: Option<u64>,
    paused_ps: u64,
    wake_at: u64,
    /// When the pending XOFF refresh is due (older refresh events are stale).
    refresh_at: u64,
    ecn_marked: u64,
    dropped: u64,
    pause_sent: u64,
    pause_received: u64,
    queue_samples: Vec<u64>,
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
        // Divisions by the constant unit, not by a unit chosen at run time (a `div`: tens of
        // cycles per hop).
        let qlen = if q.qlen_bytes {
            self.queued_bytes
        } else {
            self.queued_bytes / QLEN_UNIT
        };
        // The offsets start the switch's clock and counter where the scenario says (both 0 by
        // default); a coarse clock reads its time floored to its tick (the exact clock, tick 1,
        // without dividing).
        let clock_ns = abs_ns(clock_ps)
            .wrapping_add(self.int_ts_offset_ns)
            .wrapping_add(drift_ns(clock_ps / PS_PER_NS, self.drift));
        let ts = if self.int_ts_res_ns == 1 {
            clock_ns
        } else {
            clock_ns - clock_ns % self.int_ts_res_ns
        };
        IntHop {
            b: self.line_code,
            // The casts keep the low bits, IntHop masks the widths.
            ts: ts as u32,
            tx_bytes: (tx.wrapping_add(self.int_tx_offset) / TX_BYTES_UNIT) as u32,
            qlen: qlen.min(0xFFFF) as u16,
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
    /// Whether the sender / receiver model may set timers (`Model::has_timers`): HPCC's and
    /// FNCC's never do, and asking them after every event was a call per event.
    timers: [bool; 2],
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

/// Fields by the path that reads them (`repr(C)`): the k = 8 tree's NIC scheduler looks at
/// a hundred flows per host, each a miss when its fields are spread over the struct. Aligned
/// to a cache line, so that what `can_send` reads is one line (64 bytes) and sending a packet
/// one more, for every flow (unaligned, 344-byte states put most flows' first 64 bytes
/// across two lines).
#[repr(C, align(64))]
struct FlowState {
    // The NIC scheduler (`can_send`) and the ACK path: one cache line.
    next: u64,
    una: u64,
    packets: u64,
    message_bytes: u64,
    window_bytes: Option<u64>,
    high: u64,
    pace_ps: u64,
    // Sending a packet, the sender side of an ACK.
    start_ps: u64,
    rate_bps: u64,
    rto_ps: u64,
    rto_event: u64,
    tx_events: u64,
    hash: u64,
    psn0: u32,
    /// Index of the destination host among all hosts (routes).
    dst_route: u32,
    local_tx: u32,
    src_host: u32,
    // Receiver.
    expected: u64,
    rx_events: u64,
    delivered_bytes: u64,
    msn: u32,
    local_rx: u32,
    src_route: u32,
    dst_host: u32,
    nak_sent: bool,
    // Metrics.
    finish_ps: Option<u64>,
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
    /// The INT records of each slab slot (packet.rs `Packet`), kept only for the dialects
    /// that carry one (`has_int`); empty otherwise.
    ints: Vec<IntSlot>,
    has_int: bool,
    free: Vec<u32>,
    /// The next packet in its port queue, by slab slot (`PktQueue`).
    link: Vec<u32>,
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

impl Network {
    #[inline]
    fn route(&self, node: NodeId, host: u32, flow_hash: u64) -> u16 {
        // Mix the switch in, so that consecutive tiers do not choose alike.
        self.routes
            .next(node, host as usize, mix(flow_hash ^ u64::from(node)))
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
            self.link.push(NO_PKT);
            if self.has_int {
                self.ints.push(IntSlot::default());
            }
            (self.slab.len() - 1) as u32
        }
    }

    /// The INT stack of the packet in slot `id` (empty for a dialect without one): its
    /// `int_n` records, its pathID.
    #[inline]
    fn int_of(&self, id: u32) -> IntStack {
        let Some(slot) = self.ints.get(id as usize) else {
            return IntStack::new();
        };
        let p = &self.slab[id as usize];
        let n = usize::from(p.int_n).min(MAX_HOPS);
        IntStack::from_hops(p.int_path, &slot.0[..n]).unwrap_or_default()
    }

    /// [`Self::int_of`] written into `s`, an empty stack already in its place (the sender
    /// model's event): per ACK, no stack built elsewhere and copied in.
    #[inline]
    fn int_into(&self, id: u32, s: &mut IntStack) {
        let p = &self.slab[id as usize];
        let n = usize::from(p.int_n).min(MAX_HOPS);
        for (i, &hop) in self.ints[id as usize].0[..n].iter().enumerate() {
            s.set_hop(i, hop);
        }
        s.header = IntStackHeader {
            n_hop: n as u8,
            path_id: p.int_path,
        };
    }

    /// `IntStack::push` on the packet in slot `id` (wire.md 5.2: append the record,
    /// increment nHop, XOR the 12-bit switch ID into pathID; a full stack is left as it is),
    /// without reading the slot's records.
    #[inline]
    fn int_push(&mut self, id: u32, switch_id: u16, hop: IntHop) {
        let p = &mut self.slab[id as usize];
        let n = usize::from(p.int_n);
        if n < MAX_HOPS {
            self.ints[id as usize].0[n] = hop;
            p.int_n += 1;
            p.int_path ^= switch_id & 0x0FFF;
        }
    }

    /// Slot `id`'s INT stack becomes `s` (an FNCC switch's insertion, on an `IntStack`).
    fn set_int(&mut self, id: u32, s: &IntStack) {
        let hops = s.hops();
        let n = hops.len().min(MAX_HOPS);
        self.ints[id as usize].0[..n].copy_from_slice(&hops[..n]);
        let p = &mut self.slab[id as usize];
        (p.int_n, p.int_path) = (n as u8, s.path_id());
    }
}
