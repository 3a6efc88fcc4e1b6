//! The discrete-event loop (docs/synth.md "Event order").
//!
//! Time runs in integer picoseconds from 0, so that serialisation at 10 or 25 Gbps is exact
//! (800 and 320 ps per byte); every timestamp leaving the simulator — pcap records, INT `TS`,
//! RCC shims, model events — is [`super::EPOCH_NS`] plus the time floored to whole ns, and a
//! model timer due at ns `d` fires at ps `d × 1000`, before any packet of that ns (C-5).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::shim::int::{
    DEFAULT_MAX_HOPS, IntHop, IntStack, LineRate, QLEN_UNIT, TX_BYTES_UNIT,
};
use ccreplay_reference_cc::dcqcn::cp::{RedParams, SplitMix64, UniformSource, should_mark};
use ccreplay_reference_cc::dcqcn::{Np, Rp};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::rcc::{MessagePosition, Receiver as RccReceiver, Sender as RccSender};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, ParamError, fncc, hpcc};

use super::wire::{self, Fields, Framer, Kind};
use super::{Cc, EPOCH_NS, Scenario, SynthError};

/// Picoseconds per nanosecond.
pub(crate) const PS_PER_NS: u64 = 1_000;
const PSN_MASK: u32 = 0xFF_FFFF;
/// Half the PSN space: a PSN `d` ahead with `d < 2^23` is after (C-2).
const PSN_HALF: u32 = 1 << 23;
/// The switch's port towards the receiver: the data direction's egress (FNCC-3 table index).
const DATA_EGRESS_PORT: usize = 1;

/// Time to serialise `bytes` at `rate_bps`, ps (floored; exact at 10 and 25 Gbps).
pub(crate) fn ser_ps(bytes: u32, rate_bps: u64) -> u64 {
    let ps = u128::from(bytes) * 8 * 1_000_000_000_000 / u128::from(rate_bps.max(1));
    u64::try_from(ps).unwrap_or(u64::MAX)
}

/// Simulated ps -> absolute ns (floor).
fn abs_ns(ps: u64) -> u64 {
    EPOCH_NS + ps / PS_PER_NS
}

/// A model deadline (absolute ns) -> simulated ps.
fn deadline_ps(ns: u64) -> u64 {
    ns.saturating_sub(EPOCH_NS).saturating_mul(PS_PER_NS)
}

/// A point-to-point link in one direction: FIFO, never drops (only the bottleneck port queues
/// visibly; the other directions carry a fraction of its load).
#[derive(Clone, Copy, Debug)]
struct Link {
    rate_bps: u64,
    prop_ps: u64,
    free_ps: u64,
}

impl Link {
    /// Transmit `bytes` offered at `now`: (start, arrival of the last bit at the far end).
    fn send(&mut self, now: u64, bytes: u32) -> (u64, u64) {
        let start = now.max(self.free_ps);
        self.free_ps = start + ser_ps(bytes, self.rate_bps);
        (start, self.free_ps + self.prop_ps)
    }
}

/// A packet in flight.
#[derive(Clone, Copy, Debug)]
struct Pkt {
    f: Fields,
    wire_bytes: u32,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A data packet reaches the switch (enqueue at the bottleneck port).
    AtSwitch(Pkt),
    /// The bottleneck port finished a packet.
    PortFree,
    /// A data packet reaches the receiver NIC.
    AtReceiver(Pkt),
    /// An ACK / NAK / CNP reaches the switch on its way back.
    AtSwitchBack(Pkt),
    /// An ACK / NAK / CNP reaches the sender NIC.
    AtSender(Pkt),
}

#[derive(Clone, Copy, Debug)]
struct Scheduled {
    t_ps: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        (self.t_ps, self.seq) == (o.t_ps, o.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    /// Time, then insertion order: same-ps events run in the order they were scheduled.
    fn cmp(&self, o: &Self) -> Ordering {
        (self.t_ps, self.seq).cmp(&(o.t_ps, o.seq))
    }
}

/// The sender side of one flow: a go-back-N RC requester with a window and a pacer.
#[derive(Clone, Debug)]
struct TxFlow {
    start_ps: u64,
    message_bytes: u64,
    packets: u64,
    psn0: u32,
    /// Next packet (index in the message) to send; una = first not acknowledged.
    next: u64,
    una: u64,
    /// One past the highest packet ever sent (retransmissions are below it).
    high: u64,
    /// Window in bytes of payload in flight; `None` = rate-based only (DCQCN).
    window_bytes: Option<u64>,
    rate_bps: u64,
    /// Earliest time the pacer lets the next packet out.
    pace_ps: u64,
    rto_ps: Option<u64>,
    /// Per-flow event index at the sender tap (harness.md 2).
    events: u64,
}

impl TxFlow {
    fn psn(&self, k: u64) -> u32 {
        (self.psn0.wrapping_add(k as u32)) & PSN_MASK
    }

    fn payload(&self, k: u64, mtu: u32) -> u32 {
        let off = k * u64::from(mtu);
        (self.message_bytes - off).min(u64::from(mtu)) as u32
    }

    /// Payload bytes in packets `..k`.
    fn bytes_before(&self, k: u64, mtu: u32) -> u64 {
        (k * u64::from(mtu)).min(self.message_bytes)
    }

    fn opcode(&self, k: u64) -> u8 {
        match (k, self.packets) {
            (_, 1) => wire::WRITE_ONLY,
            (0, _) => wire::WRITE_FIRST,
            (k, n) if k + 1 == n => wire::WRITE_LAST,
            _ => wire::WRITE_MIDDLE,
        }
    }

    /// Has data and the window lets the next packet out (one packet always may go when nothing
    /// is in flight, so a window below one MTU cannot stall the flow).
    fn can_send(&self, mtu: u32) -> bool {
        if self.next >= self.packets {
            return false;
        }
        let inflight = self.bytes_before(self.next, mtu) - self.bytes_before(self.una, mtu);
        let len = u64::from(self.payload(self.next, mtu));
        match self.window_bytes {
            None => true,
            Some(w) => inflight == 0 || inflight + len <= w,
        }
    }

    /// The message index a PSN names, if it lies in `una..high` (or is `high`, for a NAK).
    fn index_of(&self, psn: u32) -> Option<u64> {
        let d = psn.wrapping_sub(self.psn(self.una)) & PSN_MASK;
        (d < PSN_HALF)
            .then_some(self.una + u64::from(d))
            .filter(|&k| k <= self.high)
    }
}

/// The receiver side of one flow: an RC responder.
#[derive(Clone, Debug, Default)]
struct RxFlow {
    /// Expected next packet (index in the message).
    expected: u64,
    nak_sent: bool,
    msn: u32,
    events: u64,
}

/// The bottleneck switch port towards the receiver.
#[derive(Debug)]
struct Port {
    rate_bps: u64,
    prop_ps: u64,
    line_code: u8,
    buffer_bytes: u64,
    queue: VecDeque<Pkt>,
    /// Bytes waiting, not counting the packet being transmitted.
    queued_bytes: u64,
    busy: bool,
    /// Bytes whose transmission has started.
    tx_bytes: u64,
    red: Option<RedParams>,
    rng: SplitMix64,
}

impl Port {
    /// The port's INT record now (wire.md 5.1 units: TS ns mod 2^24, txBytes in 128-byte units
    /// mod 2^20, qLen in 80-byte units saturating; the codecs' `IntHop` masks the widths).
    fn int_hop(&self, now_ps: u64) -> IntHop {
        IntHop {
            b: self.line_code,
            ts: abs_ns(now_ps) as u32,
            tx_bytes: (self.tx_bytes / TX_BYTES_UNIT) as u32,
            qlen: (self.queued_bytes / QLEN_UNIT).min(0xFFFF) as u16,
        }
    }
}

/// Figures of one flow over the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowStats {
    /// Data packets transmitted (retransmissions included).
    pub data_sent: u64,
    /// Packets acknowledged.
    pub acked: u64,
    /// Smallest, largest and last window the sender model set (bytes), if it sets one.
    pub window_min_max_last: Option<(u64, u64, u64)>,
    /// Smallest, largest and last pacing rate (bps).
    pub rate_min_max_last: (u64, u64, u64),
}

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Records in the sender capture.
    pub sender_packets: u64,
    /// Records in the receiver capture.
    pub receiver_packets: u64,
    /// Data packets transmitted.
    pub data_sent: u64,
    /// Of which retransmissions.
    pub retransmitted: u64,
    /// Data packets dropped at the bottleneck (buffer full).
    pub drops: u64,
    /// Data packets CE-marked by the switch.
    pub marks: u64,
    /// CNPs the receiver sent.
    pub cnps: u64,
    /// NAKs the receiver sent.
    pub naks: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Largest bottleneck queue, bytes.
    pub max_queue_bytes: u64,
    /// Per flow.
    pub flows: Vec<FlowStats>,
}

/// What a run hands back to `simulate`.
pub(crate) struct RunOutput {
    pub sender_pcap: Option<Vec<u8>>,
    pub receiver_pcap: Option<Vec<u8>>,
    pub sender_decisions: Vec<Decision>,
    pub receiver_decisions: Vec<Decision>,
    pub stats: RunStats,
}

/// The sender model, the receiver model, and a flow's window and rate before any decision.
type ModelsAndStart = (Box<dyn Model>, Option<Box<dyn Model>>, Option<u64>, u64);

pub(crate) struct Sim<'a> {
    sc: &'a Scenario,
    dialect: Dialect,
    now: u64,
    heap: BinaryHeap<Reverse<Scheduled>>,
    seq: u64,
    tx: Vec<TxFlow>,
    rx: Vec<RxFlow>,
    /// Sender NIC -> switch, switch -> sender, receiver NIC -> switch.
    up: Link,
    down: Link,
    back: Link,
    port: Port,
    sender_cc: Box<dyn Model>,
    receiver_cc: Option<Box<dyn Model>>,
    fncc_switch: Option<fncc::Switch>,
    framer: Framer,
    sender_tap: Option<PcapWriter<Vec<u8>>>,
    receiver_tap: Option<PcapWriter<Vec<u8>>>,
    scratch: Vec<Decision>,
    sender_decisions: Vec<Decision>,
    receiver_decisions: Vec<Decision>,
    stats: RunStats,
}

impl<'a> Sim<'a> {
    pub(crate) fn new(sc: &'a Scenario, cc: &Cc) -> Result<Self, SynthError> {
        let bad = |model: &'static str| {
            move |source: ParamError| SynthError::Params {
                scenario: sc.name.clone(),
                model,
                source,
            }
        };
        // The closed-loop models and each flow's window / rate before its first decision.
        let (sender_cc, receiver_cc, window0, rate0): ModelsAndStart = match cc {
            Cc::Dcqcn { rp, np, .. } => (
                Box::new(Rp::new(rp.clone()).map_err(bad("dcqcn"))?),
                Some(Box::new(Np::new(np.clone()).map_err(bad("dcqcn-np"))?)),
                None,
                rp.line_rate_bps, // DCQCN-3: start at line rate
            ),
            Cc::Hpcc(p) => {
                let m = hpcc::Hpcc::new(p).map_err(bad("hpcc"))?;
                let w = m.w_init_bytes();
                (Box::new(m), None, Some(w), hpcc_rate(w, p.base_rtt_ns)) // HPCC-1
            }
            Cc::Fncc(p) => {
                let m = fncc::Fncc::new(p).map_err(bad("fncc"))?;
                let w = m.w_init_bytes();
                let r = fncc::Receiver::new(p).map_err(bad("fncc-receiver"))?;
                (
                    Box::new(m),
                    Some(Box::new(r)),
                    Some(w),
                    hpcc_rate(w, p.base_rtt_ns),
                )
            }
            Cc::Rcc { sender, receiver } => {
                let s = RccSender::new(sender.clone()).map_err(bad("rcc-sender"))?;
                let w = s.window_bytes(0);
                let r = s.pacing_rate_bps(w);
                let rx = RccReceiver::new(receiver.clone()).map_err(bad("rcc-receiver"))?;
                (Box::new(s), Some(Box::new(rx)), Some(w), r)
            }
        };
        let mut psn_rng = SplitMix64::new(sc.seed ^ 0x5053_4E30); // "PSN0": not the RED stream
        let tx = sc
            .flows
            .iter()
            .map(|f| {
                let drawn = psn_rng.next_u32() & PSN_MASK;
                TxFlow {
                    start_ps: f.start_ns * PS_PER_NS,
                    message_bytes: f.message_bytes,
                    packets: f.message_bytes.div_ceil(u64::from(sc.mtu_bytes)),
                    psn0: f.first_psn.unwrap_or(drawn),
                    next: 0,
                    una: 0,
                    high: 0,
                    window_bytes: window0,
                    rate_bps: rate0,
                    pace_ps: 0,
                    rto_ps: None,
                    events: 0,
                }
            })
            .collect::<Vec<_>>();
        let prop_ps = sc.prop_ns * PS_PER_NS;
        let red = match cc {
            Cc::Dcqcn { red, .. } => {
                red.validate().map_err(bad("switch RED"))?;
                Some(red.clone())
            }
            _ => None,
        };
        let tap = |stem: &Option<String>| -> Result<_, SynthError> {
            stem.as_ref()
                .map(|_| PcapWriter::new(Vec::with_capacity(1 << 21)))
                .transpose()
                .map_err(SynthError::from)
        };
        let n = tx.len();
        Ok(Sim {
            sc,
            dialect: sc.dialect(),
            now: 0,
            heap: BinaryHeap::new(),
            seq: 0,
            rx: vec![RxFlow::default(); n],
            tx,
            up: Link {
                rate_bps: sc.host_link_bps,
                prop_ps,
                free_ps: 0,
            },
            down: Link {
                rate_bps: sc.host_link_bps,
                prop_ps,
                free_ps: 0,
            },
            back: Link {
                rate_bps: sc.bottleneck_bps,
                prop_ps,
                free_ps: 0,
            },
            port: Port {
                rate_bps: sc.bottleneck_bps,
                prop_ps,
                line_code: LineRate::from_bps(sc.bottleneck_bps).map_or(0xF, |c| c.0),
                buffer_bytes: sc.buffer_bytes,
                queue: VecDeque::new(),
                queued_bytes: 0,
                busy: false,
                tx_bytes: 0,
                red,
                rng: SplitMix64::new(sc.seed), // DCQCN-1: the seed in the manifest
            },
            sender_cc,
            receiver_cc,
            fncc_switch: matches!(cc, Cc::Fncc(_))
                .then(|| fncc::Switch::new(sc.switch_id, 2, DEFAULT_MAX_HOPS)),
            framer: Framer::new(sc.dialect()),
            sender_tap: tap(&sc.taps.sender)?,
            receiver_tap: tap(&sc.taps.receiver)?,
            scratch: Vec::with_capacity(8),
            sender_decisions: Vec::new(),
            receiver_decisions: Vec::new(),
            stats: RunStats {
                flows: vec![
                    FlowStats {
                        window_min_max_last: window0.map(|w| (w, w, w)),
                        rate_min_max_last: (rate0, rate0, rate0),
                        ..FlowStats::default()
                    };
                    n
                ],
                ..RunStats::default()
            },
        })
    }

    fn schedule(&mut self, t_ps: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse(Scheduled {
            t_ps,
            seq: self.seq,
            ev,
        }));
    }

    /// The flow the NIC sends next and when: the earliest pacer release among flows that may
    /// send (ties: lowest flow id), not before the NIC is free nor before now (a release in the
    /// past means the window, not the pacer, held the packet back).
    fn next_send(&self) -> Option<(u64, usize)> {
        let mut best: Option<(u64, usize)> = None;
        for (i, f) in self.tx.iter().enumerate() {
            if !f.can_send(self.sc.mtu_bytes) {
                continue;
            }
            let t = f.start_ps.max(f.pace_ps);
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, i));
            }
        }
        best.map(|(t, i)| (t.max(self.up.free_ps).max(self.now), i))
    }

    fn next_timer_ps(&self) -> Option<u64> {
        let s = self.sender_cc.next_timer_ns();
        let r = self.receiver_cc.as_ref().and_then(|m| m.next_timer_ns());
        [s, r]
            .into_iter()
            .flatten()
            .min()
            .map(|d| deadline_ps(d).max(self.now))
    }

    fn next_rto_ps(&self) -> Option<u64> {
        self.tx.iter().filter_map(|f| f.rto_ps).min()
    }

    /// Run to the end of the scenario. Same-ps order: model timers, then scheduled packet
    /// events (in scheduling order), then retransmission timeouts, then the NIC's next send.
    pub(crate) fn run(mut self) -> Result<RunOutput, SynthError> {
        let end_ps = self.sc.duration_ns * PS_PER_NS;
        loop {
            let t_timer = self.next_timer_ps();
            let t_ev = self.heap.peek().map(|e| e.0.t_ps);
            let t_rto = self.next_rto_ps();
            let send = self.next_send();
            let t_send = send.map(|s| s.0);
            let Some(t) = [t_timer, t_ev, t_rto, t_send].into_iter().flatten().min() else {
                break; // nothing left to do
            };
            if t >= end_ps {
                break;
            }
            self.now = t;
            if t_timer == Some(t) {
                self.fire_timers()?;
            } else if t_ev == Some(t) {
                if let Some(Reverse(e)) = self.heap.pop() {
                    self.handle(e.ev)?;
                }
            } else if t_rto == Some(t) {
                self.fire_rto();
            } else if let Some((_, i)) = send {
                self.send(i)?;
            }
        }
        let finish = |w: Option<PcapWriter<Vec<u8>>>| w.map(|w| w.into_inner()).transpose();
        Ok(RunOutput {
            sender_pcap: finish(self.sender_tap)?,
            receiver_pcap: finish(self.receiver_tap)?,
            sender_decisions: self.sender_decisions,
            receiver_decisions: self.receiver_decisions,
            stats: self.stats,
        })
    }

    /// C-5: every model timer due now, in deadline order; the sender's decisions are applied,
    /// the receiver's CNPs sent.
    fn fire_timers(&mut self) -> Result<(), SynthError> {
        while let Some(d) = self.sender_cc.next_timer_ns() {
            if deadline_ps(d) > self.now {
                break;
            }
            self.scratch.clear();
            self.sender_cc.on_timer(d, &mut self.scratch);
            stuck(self.sender_cc.as_ref(), d)?;
            self.apply_sender_decisions();
        }
        while let Some(m) = self.receiver_cc.as_mut() {
            let Some(d) = m.next_timer_ns() else { break };
            if deadline_ps(d) > self.now {
                break;
            }
            self.scratch.clear();
            m.on_timer(d, &mut self.scratch);
            stuck(m.as_ref(), d)?;
            self.receiver_outputs();
        }
        Ok(())
    }

    fn apply_sender_decisions(&mut self) {
        for d in &self.scratch {
            let (Some(f), Some(st)) = (
                self.tx.get_mut(d.flow as usize),
                self.stats.flows.get_mut(d.flow as usize),
            ) else {
                continue;
            };
            if let Some(r) = d.outputs.rate_bps {
                f.rate_bps = r.max(1);
                let (lo, hi, _) = st.rate_min_max_last;
                st.rate_min_max_last = (lo.min(r), hi.max(r), r);
            }
            if let Some(w) = d.outputs.window_bytes {
                f.window_bytes = Some(w);
                st.window_min_max_last = Some(match st.window_min_max_last {
                    Some((lo, hi, _)) => (lo.min(w), hi.max(w), w),
                    None => (w, w, w),
                });
            }
        }
        self.sender_decisions.extend_from_slice(&self.scratch);
    }

    /// The receiver model's decisions in `scratch`: CNPs to send now (DCQCN-2). Returns the
    /// ACK fields the decisions set (FNCC N; RCC cwnd, N, flags).
    fn receiver_outputs(&mut self) -> (u16, u32, u8) {
        let (mut n, mut cwnd, mut flags) = (0, 0, 0);
        let mut cnps = 0u32;
        let mut cnp_flows = [0u32; super::MAX_FLOWS];
        for d in &self.scratch {
            n = d.outputs.ack_n.unwrap_or(n);
            cwnd = d.outputs.ack_cwnd.unwrap_or(cwnd);
            flags = d.outputs.ack_flags.unwrap_or(flags);
            if d.outputs.send_cnp == Some(true) && (cnps as usize) < cnp_flows.len() {
                cnp_flows[cnps as usize] = d.flow;
                cnps += 1;
            }
        }
        self.receiver_decisions.extend_from_slice(&self.scratch);
        for &flow in &cnp_flows[..cnps as usize] {
            self.stats.cnps += 1;
            let f = self.reverse_fields(Kind::Cnp, flow, 0);
            self.send_back(f);
        }
        (n, cwnd, flags)
    }

    fn fire_rto(&mut self) {
        let now = self.now;
        for f in &mut self.tx {
            if f.rto_ps == Some(now) {
                f.next = f.una; // go back N
                f.rto_ps = None;
                self.stats.timeouts += 1;
            }
        }
    }

    fn sender_event(&mut self, flow: usize, kind: EventKind) {
        let f = &mut self.tx[flow];
        let ev = Event {
            t_ns: abs_ns(self.now),
            flow: flow as u32,
            index: f.events,
            kind,
        };
        f.events += 1;
        self.scratch.clear();
        self.sender_cc.on_event(&ev, &mut self.scratch);
        self.apply_sender_decisions();
    }

    /// The NIC transmits the next packet of flow `i` now.
    fn send(&mut self, i: usize) -> Result<(), SynthError> {
        let mtu = self.sc.mtu_bytes;
        let f = &self.tx[i];
        let k = f.next;
        let fields = Fields {
            kind: Kind::Data,
            flow: i as u32,
            psn: f.psn(k),
            opcode: f.opcode(k),
            payload: f.payload(k, mtu),
            message_bytes: f.message_bytes,
            ecn: if self.dialect == Dialect::Roce {
                wire::ECN_ECT0 // DCQCN needs ECN-capable data
            } else {
                0
            },
            int: IntStack::new(), // HPCC: the sender writes an empty stack (wire.md 5.2)
            ts_ns: abs_ns(self.now),
            syndrome: 0,
            msn: 0,
            ack_n: 0,
            ack_cwnd: 0,
            ack_flags: 0,
        };
        let wire_bytes = wire::frame_len(self.dialect, Kind::Data, fields.opcode, fields.payload);
        self.tap_sender(&fields)?;
        self.sender_event(
            i,
            EventKind::TxData {
                psn: fields.psn,
                bytes: fields.payload,
                opcode: fields.opcode,
            },
        );
        let now = self.now;
        let rto = self.sc.rto_ns * PS_PER_NS;
        let f = &mut self.tx[i];
        if k < f.high {
            self.stats.retransmitted += 1;
        }
        f.next = k + 1;
        f.high = f.high.max(k + 1);
        // The pacer spaces frames at the flow's rate; after an idle spell it restarts now.
        f.pace_ps = f.pace_ps.max(now) + ser_ps(wire_bytes, f.rate_bps);
        f.rto_ps.get_or_insert(now + rto);
        self.stats.data_sent += 1;
        self.stats.flows[i].data_sent += 1;
        let (_, arrive) = self.up.send(now, wire_bytes);
        self.schedule(
            arrive,
            Ev::AtSwitch(Pkt {
                f: fields,
                wire_bytes,
            }),
        );
        Ok(())
    }

    fn handle(&mut self, ev: Ev) -> Result<(), SynthError> {
        match ev {
            Ev::AtSwitch(p) => self.enqueue(p),
            Ev::PortFree => {
                self.port.busy = false;
                self.dequeue();
            }
            Ev::AtReceiver(p) => self.at_receiver(p)?,
            Ev::AtSwitchBack(p) => self.at_switch_back(p)?,
            Ev::AtSender(p) => self.at_sender(p)?,
        }
        Ok(())
    }

    /// Drop-tail, then DCQCN-1 RED/ECN marking on the queue the packet joins (bytes waiting
    /// ahead of it, the packet on the wire excluded).
    fn enqueue(&mut self, mut p: Pkt) {
        let port = &mut self.port;
        if port.queued_bytes + u64::from(p.wire_bytes) > port.buffer_bytes {
            self.stats.drops += 1;
            return;
        }
        if let Some(red) = &port.red
            && p.f.ecn != 0
            && should_mark(port.queued_bytes, red, &mut port.rng)
        {
            p.f.ecn = 3; // CE
            self.stats.marks += 1;
        }
        port.queued_bytes += u64::from(p.wire_bytes);
        port.queue.push_back(p);
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(port.queued_bytes);
        if !port.busy {
            self.dequeue();
        }
    }

    /// Start the next packet on the bottleneck; HPCC data get the egress INT hop (taken as the
    /// packet leaves: txBytes before it, qLen behind it, as the HPCC authors' switch does).
    fn dequeue(&mut self) {
        let now = self.now;
        let port = &mut self.port;
        let Some(mut p) = port.queue.pop_front() else {
            return;
        };
        port.queued_bytes -= u64::from(p.wire_bytes);
        if self.dialect == Dialect::Hpcc {
            let hop = port.int_hop(now);
            p.f.int.push(self.sc.switch_id, hop, DEFAULT_MAX_HOPS);
        }
        port.tx_bytes += u64::from(p.wire_bytes);
        port.busy = true;
        let done = now + ser_ps(p.wire_bytes, port.rate_bps);
        let arrive = done + port.prop_ps;
        self.schedule(done, Ev::PortFree);
        self.schedule(arrive, Ev::AtReceiver(p));
    }

    fn reverse_fields(&self, kind: Kind, flow: u32, psn: u32) -> Fields {
        Fields {
            kind,
            flow,
            psn,
            opcode: 0,
            payload: 0,
            message_bytes: 0,
            ecn: 0,
            int: IntStack::new(),
            ts_ns: 0,
            syndrome: match kind {
                Kind::Nak => wire::SYNDROME_NAK_PSN,
                _ => wire::SYNDROME_ACK,
            },
            msn: self.rx.get(flow as usize).map_or(0, |r| r.msn),
            ack_n: 0,
            ack_cwnd: 0,
            ack_flags: 0,
        }
    }

    /// The receiver NIC: tap, receiver model, RC responder (in-order accept, one NAK per gap,
    /// duplicates re-acknowledged), then the ACK or NAK.
    fn at_receiver(&mut self, p: Pkt) -> Result<(), SynthError> {
        let flow = p.f.flow as usize;
        if let Some(w) = self.receiver_tap.as_mut() {
            w.write(abs_ns(self.now), self.framer.frame(&p.f)?)?;
            self.stats.receiver_packets += 1;
        }
        let r = &mut self.rx[flow];
        let ev = Event {
            t_ns: abs_ns(self.now),
            flow: flow as u32,
            index: r.events,
            kind: EventKind::RxData {
                psn: p.f.psn,
                bytes: p.f.payload,
                opcode: p.f.opcode,
                ecn: p.f.ecn,
                send_ts_ns: (self.dialect == Dialect::Rcc).then_some(p.f.ts_ns),
            },
        };
        r.events += 1;
        self.scratch.clear();
        if let Some(m) = self.receiver_cc.as_mut() {
            m.on_event(&ev, &mut self.scratch);
        }
        let (n, cwnd, flags) = self.receiver_outputs();

        let tx = &self.tx[flow];
        let r = &mut self.rx[flow];
        let expected_psn = tx.psn(r.expected);
        let ahead = p.f.psn.wrapping_sub(expected_psn) & PSN_MASK;
        let reply = if ahead == 0 {
            r.expected += 1;
            r.nak_sent = false;
            if matches!(
                ccreplay_reference_cc::rcc::message_position(p.f.opcode),
                MessagePosition::Last | MessagePosition::Only
            ) {
                r.msn = (r.msn + 1) & PSN_MASK; // a message completed
            }
            Some((Kind::Ack, p.f.psn))
        } else if ahead < PSN_HALF {
            // A gap: NAK once (PSN sequence error, naming the expected PSN), drop the rest.
            (!std::mem::replace(&mut r.nak_sent, true)).then_some((Kind::Nak, expected_psn))
        } else {
            // A duplicate: acknowledge what was received.
            Some((Kind::Ack, expected_psn.wrapping_sub(1) & PSN_MASK))
        };
        if let Some((kind, psn)) = reply {
            if kind == Kind::Nak {
                self.stats.naks += 1;
            }
            let mut f = self.reverse_fields(kind, flow as u32, psn);
            if self.dialect == Dialect::Hpcc {
                f.int = p.f.int; // wire.md 5.3: the data packet's stack, unchanged
            }
            (f.ack_n, f.ack_cwnd, f.ack_flags) = (n, cwnd, flags);
            self.send_back(f);
        }
        Ok(())
    }

    /// Queue a packet on the receiver's NIC towards the switch. RCC stamps the receiver's
    /// transmit time into the shim (wire.md 5.5).
    fn send_back(&mut self, mut f: Fields) {
        let wire_bytes = wire::frame_len(self.dialect, f.kind, 0, 0);
        let (start, arrive) = self.back.send(self.now, wire_bytes);
        f.ts_ns = abs_ns(start);
        self.schedule(arrive, Ev::AtSwitchBack(Pkt { f, wire_bytes }));
    }

    /// FNCC-3: the ACK gets the data direction's egress INT as it passes; then on to the
    /// sender.
    fn at_switch_back(&mut self, mut p: Pkt) -> Result<(), SynthError> {
        if let Some(sw) = self.fncc_switch.as_mut()
            && matches!(p.f.kind, Kind::Ack | Kind::Nak)
        {
            sw.set_port_int(DATA_EGRESS_PORT, self.port.int_hop(self.now))?;
            sw.forward_ack(DATA_EGRESS_PORT, &mut p.f.int)?;
        }
        let (_, arrive) = self.down.send(self.now, p.wire_bytes);
        self.schedule(arrive, Ev::AtSender(p));
        Ok(())
    }

    fn tap_sender(&mut self, f: &Fields) -> Result<(), SynthError> {
        if let Some(w) = self.sender_tap.as_mut() {
            w.write(abs_ns(self.now), self.framer.frame(f)?)?;
            self.stats.sender_packets += 1;
        }
        Ok(())
    }

    /// The sender NIC: tap, the model's event, then the requester's transport.
    fn at_sender(&mut self, p: Pkt) -> Result<(), SynthError> {
        self.tap_sender(&p.f)?;
        let flow = p.f.flow as usize;
        let d = self.dialect;
        let info = AckInfo {
            psn: p.f.psn,
            syndrome: p.f.syndrome,
            int: matches!(d, Dialect::Hpcc | Dialect::Fncc).then_some(p.f.int),
            n: matches!(d, Dialect::Fncc | Dialect::Rcc).then_some(p.f.ack_n),
            cwnd: (d == Dialect::Rcc).then_some(p.f.ack_cwnd),
            rcc_flags: (d == Dialect::Rcc).then_some(p.f.ack_flags),
            ts_ns: (d == Dialect::Rcc).then_some(p.f.ts_ns),
        };
        let kind = match p.f.kind {
            Kind::Ack => EventKind::RxAck(info),
            Kind::Nak => EventKind::RxNak(info),
            Kind::Cnp => EventKind::RxCnp,
            Kind::Data => return Ok(()), // data never travels back
        };
        self.sender_event(flow, kind);

        let now = self.now;
        let rto = self.sc.rto_ns * PS_PER_NS;
        let f = &mut self.tx[flow];
        let before = f.una;
        match p.f.kind {
            Kind::Ack => {
                if let Some(k) = f.index_of(p.f.psn).filter(|&k| k < f.high) {
                    f.una = f.una.max(k + 1);
                    f.next = f.next.max(f.una);
                }
            }
            Kind::Nak => {
                if let Some(k) = f.index_of(p.f.psn) {
                    f.una = f.una.max(k);
                    f.next = f.una; // go back N
                }
            }
            Kind::Cnp | Kind::Data => {}
        }
        if f.una != before || p.f.kind == Kind::Nak {
            self.stats.flows[flow].acked += f.una - before;
            f.rto_ps = (f.una < f.high).then_some(now + rto);
        }
        Ok(())
    }
}

/// A model whose timer is still due at `d` after firing it would stall the loop (C-5).
fn stuck(m: &dyn Model, d: u64) -> Result<(), SynthError> {
    if m.next_timer_ns() == Some(d) {
        return Err(SynthError::StuckTimer {
            model: m.name(),
            deadline_ns: d,
        });
    }
    Ok(())
}

/// HPCC-1: `R = floor(W × 8e9 / T)`.
fn hpcc_rate(w_bytes: u64, base_rtt_ns: u64) -> u64 {
    let r = u128::from(w_bytes) * 8_000_000_000 / u128::from(base_rtt_ns.max(1));
    u64::try_from(r).unwrap_or(u64::MAX)
}
