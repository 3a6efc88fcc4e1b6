//! What the run writes as it goes: each host tap's frames with its imperfections (`TapOut`),
//! each switch tap's files (`SwitchOut`), and the engine's [`TapSink`] that feeds them.

use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::mirror::MirrorRepr;
use ccreplay_codecs::shim::int::IntStack;
use ccreplay_reference_cc::dcqcn::cp::SplitMix64;
use ccreplay_reference_cc::net::{
    AckIntTruth, DequeueTruth, NetError, NodeId, Packet, SwitchTapPoint, TapSink,
};

use super::SimError;
use super::scenario::TapSpec;
use super::wire::Framer;

/// Seed offsets of a tap's generators (`ts_jitter_ns`, `drop_ppm`): "TAPJ" and "TAPD", so
/// they are streams of their own, apart from the engine's.
const JITTER_STREAM: u64 = 0x5441_504A << 32;
const DROP_STREAM: u64 = 0x5441_5044 << 32;
/// Seed offset of a switch tap's drop generators ("STPD"); each file of an entry has its own
/// (entry << 16 | file, file 0 the egress mirror, 1 + port index an ingress capture,
/// [`ACK_DROP_FILE`] the ACK mirror of an FNCC run).
pub(super) const SWITCH_DROP_STREAM: u64 = 0x5354_5044 << 32;
/// The file number of `STEM.ack.pcap` in a switch tap entry's drop seed (ingress files use
/// their port index + 1).
pub(super) const ACK_DROP_FILE: u64 = 0xAC4B;

/// `x` (uniform in 0..2^64) scaled to `0..n`.
#[inline]
fn below(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// The capture of one `[[taps]]` entry as its tap records it: with `ts_resolution_ns`,
/// `ts_jitter_ns` and `drop_ppm` at their defaults, every frame at its exact time.
///
/// Per frame, in order: the drop generator draws (a frame is lost when the draw, scaled to
/// 0..10^6, is below `drop_ppm`); a kept frame's time gets the jitter generator's offset
/// (scaled to `0..=ts_jitter_ns`), is raised to the previous kept frame's jittered time if
/// below it, and is floored to a multiple of `ts_resolution_ns` (absolute ns). The generators
/// are SplitMix64 seeded from the scenario seed, the entry's index and a stream constant, so
/// the same seed loses the same frames whatever the jitter.
pub(super) struct TapOut {
    pub(super) writer: PcapWriter<Vec<u8>>,
    pub(super) packets: u64,
    pub(super) resolution_ns: u64,
    pub(super) jitter_ns: u64,
    pub(super) drop_ppm: u32,
    pub(super) jitter: SplitMix64,
    pub(super) drop: SplitMix64,
    /// The last kept frame's jittered time, ns.
    pub(super) last_ns: u64,
    /// A mirror session's encapsulation (`[[taps]]` `mirror`), and the frame it is built in.
    pub(super) mirror: Option<MirrorRepr>,
    pub(super) wrapped: Vec<u8>,
}

/// The encapsulation a `[[taps]]` entry's `mirror` asks for: from the mirroring switch
/// 10.255.0.1 (02:00:00:00:ff:01) to the collector 10.255.0.2 (02:00:00:00:ff:02), the frames'
/// own VLAN kept (ERSPAN II En 3), ERSPAN II index 1 / III Hw ID 1; GRE's sequence number
/// counts the session's frames and ERSPAN III's timestamp is the frame's exact time in 100 ns
/// (the switch's clock; `ts_jitter_ns` and `ts_resolution_ns` are the collector's).
fn tap_mirror(t: &TapSpec) -> Option<MirrorRepr> {
    let m = t.mirror.as_ref()?;
    Some(MirrorRepr {
        kind: m.mirror_kind()?,
        src_mac: [2, 0, 0, 0, 0xff, 1],
        dst_mac: [2, 0, 0, 0, 0xff, 2],
        src_ip: [10, 255, 0, 1],
        dst_ip: [10, 255, 0, 2],
        ttl: 64,
        key: None,
        seq: 0,
        session: m.session,
        vlan: 0,
        cos: 0,
        truncated: false,
        index: 1,
        timestamp: 0,
    })
}

impl TapOut {
    pub(super) fn new(t: &TapSpec, seed: u64, entry: usize) -> Result<Self, SimError> {
        let out = Vec::with_capacity(1 << 20);
        let writer = if t.ts_resolution_ns.is_multiple_of(1000) {
            PcapWriter::microsecond(out)?
        } else {
            PcapWriter::new(out)?
        };
        let e = entry as u64;
        Ok(TapOut {
            writer,
            packets: 0,
            resolution_ns: t.ts_resolution_ns.max(1),
            jitter_ns: t.ts_jitter_ns,
            drop_ppm: t.drop_ppm,
            jitter: SplitMix64::new(seed ^ JITTER_STREAM ^ e),
            drop: SplitMix64::new(seed ^ DROP_STREAM ^ e),
            last_ns: 0,
            mirror: tap_mirror(t),
            wrapped: Vec::new(),
        })
    }

    /// A nanosecond capture with exact times that loses `drop_ppm` of its frames, drawn from
    /// SplitMix64(`drop_seed`).
    pub(super) fn exact(drop_ppm: u32, drop_seed: u64) -> Result<Self, SimError> {
        Ok(TapOut {
            writer: PcapWriter::new(Vec::with_capacity(1 << 16))?,
            packets: 0,
            resolution_ns: 1,
            jitter_ns: 0,
            drop_ppm,
            jitter: SplitMix64::new(0),
            drop: SplitMix64::new(drop_seed),
            last_ns: 0,
            mirror: None,
            wrapped: Vec::new(),
        })
    }

    fn record(&mut self, t_ns: u64, frame: &[u8]) -> Result<(), NetError> {
        if self.drop_ppm > 0 && below(self.drop.next_u64(), 1_000_000) < u64::from(self.drop_ppm) {
            return Ok(());
        }
        let mut t = t_ns;
        if self.jitter_ns > 0 {
            t = t.saturating_add(below(self.jitter.next_u64(), self.jitter_ns + 1));
            t = t.max(self.last_ns);
            self.last_ns = t;
        }
        t -= t % self.resolution_ns;
        let frame = match &mut self.mirror {
            Some(m) => {
                m.seq = self.packets as u32;
                // The switch stamps the copy as it mirrors it: the jitter is the path to the
                // collector and the collector's clock, not the switch's.
                m.timestamp = (t_ns / 100) as u32;
                self.wrapped.clear();
                m.write(frame, &mut self.wrapped)
                    .map_err(|e| NetError::Tap(e.to_string()))?;
                &self.wrapped[..]
            }
            None => frame,
        };
        self.writer
            .write(t, frame)
            .map_err(|e| NetError::Tap(e.to_string()))?;
        self.packets += 1;
        Ok(())
    }
}

/// What one `[[switch_taps]]` entry is writing.
pub(super) struct SwitchOut {
    pub(super) drop_ppm: u32,
    /// Seed of the entry's drop generators (before the file index).
    pub(super) drop_seed: u64,
    /// The switch's neighbours in port order.
    pub(super) ports: Vec<NodeId>,
    pub(super) out: TapOut,
    /// Per port index: its ingress capture once it has a frame.
    pub(super) ins: Vec<Option<TapOut>>,
    pub(super) truth: String,
    pub(super) truth_packets: u64,
    /// FNCC: `STEM.ack.pcap`.
    pub(super) acks: Option<TapOut>,
    pub(super) ack_truth: String,
    pub(super) ack_truth_packets: u64,
}

impl SwitchOut {
    fn ingress(&mut self, peer: NodeId) -> Result<&mut TapOut, NetError> {
        let i = self.ports.iter().position(|&p| p == peer).unwrap_or(0);
        let slot = &mut self.ins[i];
        if slot.is_none() {
            let t = TapOut::exact(self.drop_ppm, self.drop_seed ^ (i as u64 + 1))
                .map_err(|e| NetError::Tap(e.to_string()))?;
            *slot = Some(t);
        }
        Ok(slot.as_mut().expect("set above"))
    }
}

pub(super) struct Taps<'a> {
    pub(super) framer: Framer,
    /// Per `[[taps]]` entry.
    pub(super) outs: Vec<TapOut>,
    /// Per tapped host (the engine's tap index): its entries.
    pub(super) entries: Vec<Vec<usize>>,
    /// Per `[[switch_taps]]` entry.
    pub(super) switch_outs: Vec<SwitchOut>,
    /// Per tapped switch port (the engine's switch tap index): its entries.
    pub(super) switch_entries: Vec<Vec<usize>>,
    /// Node names (truth lines).
    pub(super) names: Vec<String>,
    pub(super) progress: &'a mut dyn FnMut(u64),
}

impl TapSink for Taps<'_> {
    fn record(
        &mut self,
        tap: usize,
        t_ns: u64,
        pkt: &Packet,
        int: &IntStack,
        _out: bool,
    ) -> Result<(), NetError> {
        let bytes = self
            .framer
            .frame(pkt, int)
            .map_err(|e| NetError::Tap(e.to_string()))?;
        for &i in &self.entries[tap] {
            self.outs[i].record(t_ns, bytes)?;
        }
        Ok(())
    }

    fn record_switch(
        &mut self,
        tap: usize,
        t_ns: u64,
        pkt: &Packet,
        int: &IntStack,
        at: SwitchTapPoint,
    ) -> Result<(), NetError> {
        let bytes = self
            .framer
            .frame(pkt, int)
            .map_err(|e| NetError::Tap(e.to_string()))?;
        for &i in &self.switch_entries[tap] {
            let so = &mut self.switch_outs[i];
            match at {
                SwitchTapPoint::Arrived { from: peer } | SwitchTapPoint::PauseSent { to: peer } => {
                    so.ingress(peer)?.record(t_ns, bytes)?;
                }
                SwitchTapPoint::PauseReceived => so.out.record(t_ns, bytes)?,
                SwitchTapPoint::Departed { truth } => {
                    so.out.record(t_ns, bytes)?;
                    if let Some(tr) = truth {
                        truth_line(&mut so.truth, t_ns, pkt, &tr, &self.names);
                        so.truth_packets += 1;
                    }
                }
                SwitchTapPoint::AckInt { truth } => {
                    if let Some(acks) = so.acks.as_mut() {
                        acks.record(t_ns, bytes)?;
                        ack_truth_line(&mut so.ack_truth, t_ns, &truth);
                        so.ack_truth_packets += 1;
                    }
                }
            }
        }
        Ok(())
    }

    fn progress(&mut self, now_ns: u64) {
        (self.progress)(now_ns);
    }
}

/// One line of `STEM.truth.jsonl` (docs/sim.md "Switch port taps").
fn truth_line(out: &mut String, t_out_ns: u64, pkt: &Packet, tr: &DequeueTruth, names: &[String]) {
    let line = serde_json::json!({
        "t_in": tr.t_in_ns,
        "t_out": t_out_ns,
        "ingress": names.get(tr.from as usize).map_or("", String::as_str),
        "bytes": pkt.wire_bytes,
        "flow": pkt.flow,
        "psn": pkt.psn,
        "qlen_at_enqueue": tr.qlen_at_enqueue,
        "qlen_at_dequeue": tr.qlen_at_dequeue,
        "marked": tr.marked,
        "p": tr.p,
    });
    out.push_str(&line.to_string());
    out.push('\n');
}

/// One line of `STEM.ack_truth.jsonl` (docs/sim.md "Switch port taps").
fn ack_truth_line(out: &mut String, t_ns: u64, tr: &AckIntTruth) {
    let line = serde_json::json!({
        "t": t_ns,
        "hop_index": tr.hop_index,
        "tx_bytes_sent": tr.tx_bytes,
        "queued_bytes": tr.queued_bytes,
    });
    out.push_str(&line.to_string());
    out.push('\n');
}
