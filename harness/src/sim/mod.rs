//! `ccreplay sim`: run a scenario file through the network engine of
//! `ccreplay_reference_cc::net` and write what it produced (docs/sim.md):
//!
//! - `STEM.pcap` per `[[taps]]` entry — every frame in or out of the host's NIC, written with
//!   the codecs' writers (real headers, valid ICRC, 802.1Qbb pause frames), with the tap's
//!   imperfections if it has any (timestamp resolution and jitter, lost frames: `TapOut`);
//! - `STEM.toml`, its manifest (docs/manifest.md), so `ccreplay replay` / `check` take it;
//! - per `[[switch_taps]]` entry, the egress mirror of a switch port (`STEM.out.pcap`, its
//!   manifest `STEM.toml`), the frames arriving for that port per ingress port
//!   (`STEM.in.PEER.pcap`), the switch's configuration (`STEM.switch.toml`) and the engine's
//!   account of every data packet that left the port (`STEM.truth.jsonl`): [`SwitchCapture`];
//! - `metrics.json` (docs/metrics.md).
//!
//! The bundled traces in `traces/` are the taps of the scenarios in `scenarios/bundled/`
//! ([`BUNDLED`]); `ccreplay synth` is the alias that regenerates them.

pub mod json_format;
pub mod scenario;
pub mod wire;

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::{CaptureError, PcapWriter};
use ccreplay_codecs::frame::EmitError;
use ccreplay_codecs::mirror::MirrorRepr;
use ccreplay_codecs::shim::int::IntStack;
use ccreplay_reference_cc::Decision;
use ccreplay_reference_cc::dcqcn::NicParams;
use ccreplay_reference_cc::dcqcn::cp::SplitMix64;
use ccreplay_reference_cc::net::{
    AckIntTruth, Cc, DataEcn, DequeueTruth, Metrics, NetConfig, NetError, Network, NodeId,
    NodeKind, Packet, RunResult, SwitchTapPoint, TapSink,
};
use ccreplay_reference_cc::rcc::ReceiverParams;

use crate::manifest::{
    CapturePoint, FlowSpec, IntSection, Manifest, ModelSpec, Network as Net, Source,
};
pub use scenario::{Scenario, SwitchTapSpec, TapPoint, TapSpec};
use wire::{FIRST_RECEIVER_QP, FIRST_SENDER_QP, Framer, ROCE_UDP_PORT, host_ip, host_numbers};

/// The bundled scenarios (name, file text): each tap is a trace in `traces/`.
pub const BUNDLED: &[(&str, &str)] = &[
    (
        "roce_dcqcn",
        include_str!("../../../scenarios/bundled/roce_dcqcn.toml"),
    ),
    (
        "dcqcn_increase",
        include_str!("../../../scenarios/bundled/dcqcn_increase.toml"),
    ),
    (
        "hpcc_dumbbell",
        include_str!("../../../scenarios/bundled/hpcc_dumbbell.toml"),
    ),
    (
        "hpcc_chain",
        include_str!("../../../scenarios/bundled/hpcc_chain.toml"),
    ),
    (
        "fncc_dumbbell",
        include_str!("../../../scenarios/bundled/fncc_dumbbell.toml"),
    ),
    (
        "fncc_chain",
        include_str!("../../../scenarios/bundled/fncc_chain.toml"),
    ),
    (
        "rcc_dumbbell",
        include_str!("../../../scenarios/bundled/rcc_dumbbell.toml"),
    ),
    (
        "rcc_bursts",
        include_str!("../../../scenarios/bundled/rcc_bursts.toml"),
    ),
    (
        "dcqcn_clamp",
        include_str!("../../../scenarios/bundled/dcqcn_clamp.toml"),
    ),
    (
        "dcqcn_np",
        include_str!("../../../scenarios/bundled/dcqcn_np.toml"),
    ),
    (
        "dcqcn_ns3",
        include_str!("../../../scenarios/bundled/dcqcn_ns3.toml"),
    ),
    (
        "roce_dcqcn_erspan",
        include_str!("../../../scenarios/bundled/roce_dcqcn_erspan.toml"),
    ),
    (
        "dcqcn_cp",
        include_str!("../../../scenarios/bundled/dcqcn_cp.toml"),
    ),
];

/// Why a simulation could not run or be written.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario file is wrong.
    #[error("scenario: {0}")]
    Scenario(String),
    /// No bundled scenario of that name (the names are [`BUNDLED`]'s; `synth` hints them).
    #[error("unknown bundled scenario `{0}`")]
    UnknownScenario(String),
    /// The engine refused the configuration or failed.
    #[error("{0}")]
    Net(#[from] NetError),
    /// A frame could not be written (a bug: every frame the engine builds is valid).
    #[error("writing a frame: {0}")]
    Emit(#[from] EmitError),
    /// A pcap record could not be written.
    #[error("writing a capture: {0}")]
    Capture(#[from] CaptureError),
    /// The frame the codecs wrote does not have the length the engine timed (a bug).
    #[error("frame length {emitted} differs from the simulated {expected} bytes")]
    FrameLength {
        /// Bytes written.
        emitted: usize,
        /// Bytes simulated.
        expected: u32,
    },
    /// A manifest could not be serialised.
    #[error("manifest {stem}: {message}")]
    Manifest {
        /// Capture stem.
        stem: String,
        /// Why.
        message: String,
    },
    /// Reading or writing a file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// One capture and its manifest, in memory.
#[derive(Clone, Debug)]
pub struct Capture {
    /// File stem.
    pub stem: String,
    /// Where it was taken.
    pub point: TapPoint,
    /// The pcap file.
    pub pcap: Vec<u8>,
    /// Records in it.
    pub packets: u64,
    /// The manifest text.
    pub manifest: String,
    /// The decisions of the model that drove the loop at the tapped host (the one the
    /// manifest names first, unless the tap's `models` names others), in the order the model
    /// made them. With a `[device]` bug: those of the model as the buggy NIC ran it (the
    /// manifest still names the correct model).
    pub decisions: Vec<Decision>,
}

/// The captures of one `[[switch_taps]]` entry, in memory (docs/sim.md "Switch port taps").
#[derive(Clone, Debug)]
pub struct SwitchCapture {
    /// File stem.
    pub stem: String,
    /// The switch's name.
    pub switch: String,
    /// The neighbour the port under test faces.
    pub peer: String,
    /// `STEM.out.pcap`: every frame leaving the port (start of transmission, after marking and
    /// stamping) and the PFC frames arriving on it.
    pub out_pcap: Vec<u8>,
    /// Records in it.
    pub out_packets: u64,
    /// `STEM.in.PEER.pcap` per port of the switch that saw frames for the port under test or
    /// sent PFC frames, in the switch's port order.
    pub ingress: Vec<IngressCapture>,
    /// `STEM.toml`: the manifest of the egress mirror (`switch_port`, `dcqcn-cp`).
    pub manifest: String,
    /// `STEM.switch.toml`: the switch's configuration and the ingress captures.
    pub switch_toml: String,
    /// `STEM.truth.jsonl`: one line per data packet that left the port.
    pub truth: String,
    /// Lines in it.
    pub truth_packets: u64,
    /// FNCC only: `STEM.ack.pcap`, every ACK and NAK the switch forwards with the port's INT
    /// record pushed into it, at its arrival, as it leaves; `None` for other models.
    pub ack_pcap: Option<Vec<u8>>,
    /// Records in it.
    pub ack_packets: u64,
    /// FNCC only: `STEM.ack_truth.jsonl`, one line per such ACK (empty for other models).
    pub ack_truth: String,
    /// Lines in it.
    pub ack_truth_packets: u64,
}

/// One ingress capture of a switch tap.
#[derive(Clone, Debug)]
pub struct IngressCapture {
    /// The neighbour the ingress port faces.
    pub peer: String,
    /// Its file name, `STEM.in.PEER.pcap`.
    pub file: String,
    /// The link's rate, bps.
    pub rate_bps: u64,
    /// The pcap file.
    pub pcap: Vec<u8>,
    /// Records in it.
    pub packets: u64,
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct SimOutput {
    /// Per `[[taps]]` entry.
    pub captures: Vec<Capture>,
    /// Per `[[switch_taps]]` entry.
    pub switch_captures: Vec<SwitchCapture>,
    /// What was measured.
    pub metrics: Metrics,
}

impl SimOutput {
    /// Record `--set` overrides in every manifest's `source.generator`
    /// ([`scenario::record_in_manifest`]), host and switch taps alike.
    pub fn record_overrides(&mut self, name: &str, sets: &[scenario::Override]) {
        for c in &mut self.captures {
            c.manifest = scenario::record_in_manifest(&c.manifest, name, sets);
        }
        for c in &mut self.switch_captures {
            c.manifest = scenario::record_in_manifest(&c.manifest, name, sets);
        }
    }
}

/// The bundled scenario `name`.
pub fn bundled(name: &str) -> Result<Scenario, SimError> {
    let (_, text) = BUNDLED
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| SimError::UnknownScenario(name.into()))?;
    Scenario::parse(text)
}

/// Seed offsets of a tap's generators (`ts_jitter_ns`, `drop_ppm`): "TAPJ" and "TAPD", so
/// they are streams of their own, apart from the engine's.
const JITTER_STREAM: u64 = 0x5441_504A << 32;
const DROP_STREAM: u64 = 0x5441_5044 << 32;
/// Seed offset of a switch tap's drop generators ("STPD"); each file of an entry has its own
/// (entry << 16 | file, file 0 the egress mirror, 1 + port index an ingress capture,
/// [`ACK_DROP_FILE`] the ACK mirror of an FNCC run).
const SWITCH_DROP_STREAM: u64 = 0x5354_5044 << 32;
/// The file number of `STEM.ack.pcap` in a switch tap entry's drop seed (ingress files use
/// their port index + 1).
const ACK_DROP_FILE: u64 = 0xAC4B;

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
struct TapOut {
    writer: PcapWriter<Vec<u8>>,
    packets: u64,
    resolution_ns: u64,
    jitter_ns: u64,
    drop_ppm: u32,
    jitter: SplitMix64,
    drop: SplitMix64,
    /// The last kept frame's jittered time, ns.
    last_ns: u64,
    /// A mirror session's encapsulation (`[[taps]]` `mirror`), and the frame it is built in.
    mirror: Option<MirrorRepr>,
    wrapped: Vec<u8>,
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
    fn new(t: &TapSpec, seed: u64, entry: usize) -> Result<Self, SimError> {
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
    fn exact(drop_ppm: u32, drop_seed: u64) -> Result<Self, SimError> {
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
struct SwitchOut {
    drop_ppm: u32,
    /// Seed of the entry's drop generators (before the file index).
    drop_seed: u64,
    /// The switch's neighbours in port order.
    ports: Vec<NodeId>,
    out: TapOut,
    /// Per port index: its ingress capture once it has a frame.
    ins: Vec<Option<TapOut>>,
    truth: String,
    truth_packets: u64,
    /// FNCC: `STEM.ack.pcap`.
    acks: Option<TapOut>,
    ack_truth: String,
    ack_truth_packets: u64,
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

struct Taps<'a> {
    framer: Framer,
    /// Per `[[taps]]` entry.
    outs: Vec<TapOut>,
    /// Per tapped host (the engine's tap index): its entries.
    entries: Vec<Vec<usize>>,
    /// Per `[[switch_taps]]` entry.
    switch_outs: Vec<SwitchOut>,
    /// Per tapped switch port (the engine's switch tap index): its entries.
    switch_entries: Vec<Vec<usize>>,
    /// Node names (truth lines).
    names: Vec<String>,
    progress: &'a mut dyn FnMut(u64),
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

/// The neighbours of `node` in port order (a node's ports are numbered in the order its
/// links are listed), each with the link's rate.
fn neighbours(cfg: &NetConfig, node: NodeId) -> Vec<(NodeId, u64)> {
    cfg.topology
        .links
        .iter()
        .filter_map(|l| {
            if l.a == node {
                Some((l.b, l.rate_bps))
            } else if l.b == node {
                Some((l.a, l.rate_bps))
            } else {
                None
            }
        })
        .collect()
}

/// Run `sc` (with `seed` instead of its own when given); `progress` gets the simulated time,
/// ns, now and then.
pub fn simulate(
    sc: &Scenario,
    seed: Option<u64>,
    progress: &mut dyn FnMut(u64),
) -> Result<SimOutput, SimError> {
    let (cfg, mp) = sc.to_config(seed)?;
    let net = Network::new(&cfg)?;
    let base_rtt_ns = net.base_rtt_ns();
    let host_cc: Vec<Cc> = cfg.taps.iter().map(|&h| net.host_cc(h)).collect();
    // The engine's tap index of each entry (entries on one host share it).
    let tap_of: Vec<usize> = sc
        .taps
        .iter()
        .map(|t| {
            let node = cfg.topology.node_id(&t.host).unwrap_or(0);
            cfg.taps.iter().position(|&n| n == node).unwrap_or(0)
        })
        .collect();
    let mut entries = vec![Vec::new(); cfg.taps.len()];
    for (i, &ti) in tap_of.iter().enumerate() {
        entries[ti].push(i);
    }
    // The same for switch taps: the engine's index of each entry's port.
    let node = |n: &str| cfg.topology.node_id(n).unwrap_or(0);
    let stap_of: Vec<usize> = sc
        .switch_taps
        .iter()
        .map(|t| {
            let (s, p) = (node(&t.switch), node(&t.peer));
            cfg.switch_taps
                .iter()
                .position(|x| x.switch == s && x.peer == p)
                .unwrap_or(0)
        })
        .collect();
    let mut switch_entries = vec![Vec::new(); cfg.switch_taps.len()];
    for (i, &ti) in stap_of.iter().enumerate() {
        switch_entries[ti].push(i);
    }
    let mut switch_outs = Vec::new();
    for (i, t) in sc.switch_taps.iter().enumerate() {
        let ports: Vec<NodeId> = neighbours(&cfg, node(&t.switch))
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let drop_seed = cfg.seed ^ SWITCH_DROP_STREAM ^ ((i as u64) << 16);
        switch_outs.push(SwitchOut {
            drop_ppm: t.drop_ppm,
            drop_seed,
            ins: ports.iter().map(|_| None).collect(),
            ports,
            out: TapOut::exact(t.drop_ppm, drop_seed)?,
            truth: String::new(),
            truth_packets: 0,
            acks: match cfg.cc {
                Cc::Fncc(_) => Some(TapOut::exact(t.drop_ppm, drop_seed ^ ACK_DROP_FILE)?),
                _ => None,
            },
            ack_truth: String::new(),
            ack_truth_packets: 0,
        });
    }
    let mut taps = Taps {
        framer: Framer::new(&cfg),
        outs: sc
            .taps
            .iter()
            .enumerate()
            .map(|(i, t)| TapOut::new(t, cfg.seed, i))
            .collect::<Result<_, _>>()?,
        entries,
        switch_outs,
        switch_entries,
        names: cfg.topology.nodes.iter().map(|n| n.name.clone()).collect(),
        progress,
    };
    let run: RunResult = net.run(&mut taps)?;
    let mut captures = Vec::new();
    for ((t, out), &ti) in sc.taps.iter().zip(taps.outs).zip(&tap_of) {
        let tr = &run.taps[ti];
        let manifest = manifest_text(
            sc,
            &cfg,
            &host_cc[ti],
            mp.nic.as_ref(),
            base_rtt_ns,
            t,
            tr,
            &run.metrics,
        )?;
        captures.push(Capture {
            stem: t.stem.clone(),
            point: t.point,
            packets: out.packets,
            pcap: out.writer.into_inner()?,
            manifest,
            decisions: match t.point {
                TapPoint::Sender => tr.sender_decisions.clone(),
                TapPoint::Receiver => tr.receiver_decisions.clone(),
            },
        });
    }
    let mut switch_captures = Vec::new();
    for (t, so) in sc.switch_taps.iter().zip(taps.switch_outs) {
        switch_captures.push(switch_capture(sc, &cfg, base_rtt_ns, t, so)?);
    }
    Ok(SimOutput {
        captures,
        switch_captures,
        metrics: run.metrics,
    })
}

/// The files of one `[[switch_taps]]` entry once the run is over.
fn switch_capture(
    sc: &Scenario,
    cfg: &NetConfig,
    base_rtt_ns: u64,
    t: &SwitchTapSpec,
    so: SwitchOut,
) -> Result<SwitchCapture, SimError> {
    let sw = cfg.topology.node_id(&t.switch).unwrap_or(0);
    let peer = cfg.topology.node_id(&t.peer).unwrap_or(0);
    let links = neighbours(cfg, sw);
    let rate = |n: NodeId| links.iter().find(|l| l.0 == n).map_or(0, |l| l.1);
    let names = &cfg.topology.nodes;
    let mut ingress = Vec::new();
    for (&p, out) in so.ports.iter().zip(so.ins) {
        let Some(out) = out else { continue };
        let name = names[p as usize].name.clone();
        ingress.push(IngressCapture {
            file: format!("{}.in.{name}.pcap", t.stem),
            peer: name,
            rate_bps: rate(p),
            packets: out.packets,
            pcap: out.writer.into_inner()?,
        });
    }
    // The switch's number among the switches (node order): its INT ID, clock and generator.
    let index = names[..sw as usize]
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .count() as u32;
    // The engine seeds switch i's RED generator with seed ^ i × 0x9E3779B9.
    let red_seed = cfg.seed ^ u64::from(index).wrapping_mul(0x9E37_79B9);
    let port_rate = rate(peer);
    let manifest = switch_manifest(sc, cfg, base_rtt_ns, t, port_rate, red_seed)?;
    let switch_toml = switch_toml(sc, cfg, t, port_rate, index, red_seed, &ingress);
    let (ack_packets, ack_pcap) = match so.acks {
        Some(a) => (a.packets, Some(a.writer.into_inner()?)),
        None => (0, None),
    };
    Ok(SwitchCapture {
        stem: t.stem.clone(),
        switch: t.switch.clone(),
        peer: t.peer.clone(),
        out_packets: so.out.packets,
        out_pcap: so.out.writer.into_inner()?,
        ingress,
        manifest,
        switch_toml,
        truth: so.truth,
        truth_packets: so.truth_packets,
        ack_pcap,
        ack_packets,
        ack_truth: so.ack_truth,
        ack_truth_packets: so.ack_truth_packets,
    })
}

/// `STEM.toml` of a switch tap: the egress mirror as a `switch_port` capture for `dcqcn-cp`.
fn switch_manifest(
    sc: &Scenario,
    cfg: &NetConfig,
    base_rtt_ns: u64,
    t: &SwitchTapSpec,
    port_rate_bps: u64,
    red_seed: u64,
) -> Result<String, SimError> {
    let stem = t.stem.as_str();
    let red = cfg
        .switch
        .red_for(port_rate_bps)
        .cloned()
        .unwrap_or_default();
    let mut params = toml::Table::new();
    let int = |v: u64| toml::Value::Integer(i64::try_from(v).unwrap_or(i64::MAX));
    params.insert("kmin_bytes".into(), int(red.kmin_bytes));
    params.insert("kmax_bytes".into(), int(red.kmax_bytes));
    params.insert("pmax".into(), toml::Value::Float(red.pmax));
    // The switch's generator (shared by its ports: a replay draws the same numbers when
    // only this port marks).
    params.insert("seed".into(), int(red_seed));
    let marking = match cfg.switch.red_for(port_rate_bps) {
        Some(_) => "RED as configured",
        None => "no RED in this run (the dcqcn-cp parameters are the defaults)",
    };
    let m = Manifest {
        capture: Some(format!("{stem}.out.pcap")),
        events: None,
        dialect: cfg.cc.dialect(),
        capture_point: CapturePoint::SwitchPort {
            port: format!("{}:{}", t.switch, t.peer),
        },
        network: Net {
            link_rate_bps: port_rate_bps,
            base_rtt_ns,
            mtu_bytes: u64::from(cfg.mtu_bytes),
            udp_port: ROCE_UDP_PORT,
            ..Net::default()
        },
        int: IntSection::default(),
        models: vec![ModelSpec {
            name: "dcqcn-cp".into(),
            params,
        }],
        flows: Vec::new(),
        source: Source {
            kind: "synthesized".into(),
            generator: format!("ccreplay sim {}", sc.name),
            seed: Some(cfg.seed),
            notes: Some(format!(
                "docs/sim.md \"Switch port taps\". Scenario {}: egress mirror of port {}:{} (the \
                 port of {} facing {}): every frame leaving it, at the start of its \
                 transmission, after ECN marking and INT stamping, and the PFC frames arriving \
                 on it; {marking}. {stem}.switch.toml holds the switch's configuration and the \
                 ingress captures, {stem}.truth.jsonl the engine's account of each data packet.",
                sc.name, t.switch, t.peer, t.switch, t.peer
            )),
        },
        observed: Default::default(),
        mirror: Default::default(),
    };
    let body = toml::to_string(&m).map_err(|e| SimError::Manifest {
        stem: stem.into(),
        message: e.to_string(),
    })?;
    Ok(format!(
        "# Generated by `ccreplay sim` from scenario `{}` (docs/sim.md). Do not edit: regenerate.\n{body}",
        sc.name
    ))
}

/// `STEM.switch.toml`: the configuration of the switch of a switch tap (no run results).
fn switch_toml(
    sc: &Scenario,
    cfg: &NetConfig,
    t: &SwitchTapSpec,
    port_rate_bps: u64,
    index: u32,
    red_seed: u64,
    ingress: &[IngressCapture],
) -> String {
    let q = |s: &str| toml::Value::String(s.to_string()).to_string();
    let sw = &cfg.switch;
    let mut o = format!(
        "# Generated by `ccreplay sim` from scenario `{}` (docs/sim.md \"Switch port taps\"). \
         Do not edit: regenerate.\n",
        sc.name
    );
    o += &format!("switch = {}\n", q(&t.switch));
    o += &format!("port_peer = {}\n", q(&t.peer));
    o += &format!("port_rate_bps = {port_rate_bps}\n");
    o += &format!("capture = {}\n", q(&format!("{}.out.pcap", t.stem)));
    // FNCC: the ACKs that got the port's INT record (the same condition as `SwitchOut::acks`).
    if matches!(cfg.cc, Cc::Fncc(_)) {
        o += &format!("acks = {}\n", q(&format!("{}.ack.pcap", t.stem)));
    }
    o += &format!("dialect = {}\n", q(cfg.cc.dialect().name()));
    o += &format!("buffer_bytes = {}\n", sw.buffer_bytes);
    o += "# The seed of the switch's RED generator (SplitMix64; the scenario seed for sw0).\n";
    o += &format!("seed = {red_seed}\n");
    if let Some(red) = sw.red_for(port_rate_bps) {
        o += "\n[red]\n";
        o += &format!("kmin_bytes = {}\n", red.kmin_bytes);
        o += &format!("kmax_bytes = {}\n", red.kmax_bytes);
        o += &format!("pmax = {}\n", toml::Value::Float(red.pmax));
    }
    if let Some(pfc) = &sw.pfc {
        o += "\n[pfc]\n";
        o += &format!("xoff_bytes = {}\n", pfc.xoff_bytes);
        o += &format!("xon_bytes = {}\n", pfc.xon_bytes);
        o += &format!("pause_quanta = {}\n", pfc.pause_quanta);
    }
    if matches!(cfg.cc.dialect(), Dialect::Hpcc | Dialect::Fncc) {
        let id = sw.switch_id_base.wrapping_add(index as u16) & 0x0FFF;
        o += "\n# ts = (capture ns + int_ts_offset_ns + switch_index x int_ts_step_ns) mod 2^24;\n";
        o += "# txBytes = floor((frame bytes sent before + int_tx_bytes_offset) / 128) mod 2^20;\n";
        o += "# qLen = floor(bytes waiting behind the packet / 80), at most 0xFFFF.\n";
        o += "[int]\n";
        o += &format!("switch_id = {id}\n");
        o += &format!("switch_index = {index}\n");
        o += &format!("int_ts_offset_ns = {}\n", sw.int_ts_offset_ns);
        o += &format!("int_ts_step_ns = {}\n", sw.int_ts_step_ns);
        o += &format!("int_tx_bytes_offset = {}\n", sw.int_tx_bytes_offset);
    }
    for i in ingress {
        o += "\n[[ingress]]\n";
        o += &format!("peer = {}\n", q(&i.peer));
        o += &format!("capture = {}\n", q(&i.file));
        o += &format!("rate_bps = {}\n", i.rate_bps);
    }
    o
}

/// A model's params struct as a TOML table (options that are `None` are left out, so on replay
/// the model's default applies: the value that ran).
fn spec<T: serde::Serialize>(stem: &str, name: &str, p: &T) -> Result<ModelSpec, SimError> {
    Ok(ModelSpec {
        name: name.into(),
        params: toml::Table::try_from(p).map_err(|e| SimError::Manifest {
            stem: format!("{stem} ({name})"),
            message: e.to_string(),
        })?,
    })
}

#[allow(clippy::too_many_arguments)]
fn manifest_text(
    sc: &Scenario,
    cfg: &NetConfig,
    cc: &Cc,
    nic: Option<&NicParams>,
    base_rtt_ns: u64,
    tap: &TapSpec,
    tr: &ccreplay_reference_cc::net::TapRun,
    metrics: &Metrics,
) -> Result<String, SimError> {
    let stem = tap.stem.as_str();
    let models = match (cc, tap.point) {
        (Cc::Dcqcn { rp, .. }, TapPoint::Sender) => {
            let nic = NicParams {
                line_rate_bps: rp.line_rate_bps,
                base_rtt_ns: rp.base_rtt_ns,
                mtu_bytes: rp.mtu_bytes,
                ..nic.cloned().unwrap_or_default()
            };
            vec![spec(stem, "dcqcn", rp)?, spec(stem, "dcqcn-nic", &nic)?]
        }
        (Cc::Dcqcn { np, .. }, TapPoint::Receiver) => vec![spec(stem, "dcqcn-np", np)?],
        (Cc::Hpcc(p), TapPoint::Sender) => vec![spec(stem, "hpcc", p)?],
        // No receiver model of its own; the tap's `models` may name one.
        (Cc::Hpcc(_), TapPoint::Receiver) if tap.models.is_some() => Vec::new(),
        (Cc::Hpcc(_), TapPoint::Receiver) => {
            return Err(SimError::Scenario(format!(
                "tap {stem}: HPCC has no receiver model; tap a sender"
            )));
        }
        (Cc::Fncc(p), TapPoint::Sender) => vec![spec(stem, "fncc", p)?],
        (Cc::Fncc(p), TapPoint::Receiver) => vec![spec(stem, "fncc-receiver", p)?],
        (Cc::Rcc { sender, .. }, TapPoint::Sender) => vec![spec(stem, "rcc-sender", sender)?],
        (Cc::Rcc { receiver, .. }, TapPoint::Receiver) => {
            vec![spec(stem, "rcc-receiver", receiver)?]
        }
        (Cc::HpccNs3(p), TapPoint::Sender) => vec![spec(stem, "hpcc-ns3", p)?],
        (Cc::HpccNs3(_), TapPoint::Receiver) if tap.models.is_some() => Vec::new(),
        (Cc::HpccNs3(_), TapPoint::Receiver) => {
            return Err(SimError::Scenario(format!(
                "tap {stem}: hpcc-ns3 has no receiver model; tap a sender"
            )));
        }
        (Cc::DcqcnNs3 { rp, .. }, TapPoint::Sender) => vec![spec(stem, "dcqcn-ns3", rp)?],
        (Cc::DcqcnNs3 { np, .. }, TapPoint::Receiver) => vec![spec(stem, "dcqcn-np", np)?],
    };
    let models = match &tap.models {
        None => models,
        Some(names) => tap_models(cfg, cc, base_rtt_ns, tap, &models, names)?,
    };
    let numbers = host_numbers(cfg);
    let ip = |node: u32| IpAddr::V4(host_ip(numbers[node as usize]));
    let host = ip(tr.host);
    let flows: Vec<FlowSpec> = match tap.point {
        TapPoint::Sender => tr
            .sender_flows
            .iter()
            .map(|&f| FlowSpec {
                local_ip: host,
                local_qp: FIRST_SENDER_QP + f,
                remote_ip: ip(cfg.flows[f as usize].dst),
                remote_qp: FIRST_RECEIVER_QP + f,
            })
            .collect(),
        TapPoint::Receiver => tr
            .receiver_flows
            .iter()
            .map(|&f| FlowSpec {
                local_ip: host,
                local_qp: FIRST_RECEIVER_QP + f,
                remote_ip: ip(cfg.flows[f as usize].src),
                remote_qp: FIRST_SENDER_QP + f,
            })
            .collect(),
    };
    let link_rate_bps = cc.line_rate_bps();
    let m = Manifest {
        capture: Some(format!("{stem}.pcap")),
        events: None,
        dialect: cfg.cc.dialect(),
        capture_point: match tap.point {
            TapPoint::Sender => CapturePoint::Sender { host },
            TapPoint::Receiver => CapturePoint::Receiver { host },
        },
        network: Net {
            link_rate_bps,
            base_rtt_ns,
            mtu_bytes: u64::from(cfg.mtu_bytes),
            udp_port: ROCE_UDP_PORT,
            ..Net::default()
        },
        int: IntSection::default(),
        models,
        flows,
        source: Source {
            kind: "synthesized".into(),
            generator: format!("ccreplay sim {}", sc.name),
            seed: Some(cfg.seed),
            notes: Some(notes(sc, cfg, tap, metrics)),
        },
        observed: Default::default(),
        mirror: Default::default(),
    };
    let body = toml::to_string(&m).map_err(|e| SimError::Manifest {
        stem: stem.into(),
        message: e.to_string(),
    })?;
    Ok(format!(
        "# Generated by `ccreplay sim` from scenario `{}` (docs/sim.md). Do not edit: regenerate.\n{body}",
        sc.name
    ))
}

/// The models a tap's `models` key names: each one of the point's own (`defaults`, with the
/// parameters that ran) or, at a receiver tap of a run without RCC's shim, `rcc-receiver` —
/// its defaults (docs/models/rcc.md) with the tapped host's link rate, the base RTT and the
/// MTU. Its data carry no send timestamp, so every delay sample is absent (RCC choice 5).
fn tap_models(
    cfg: &NetConfig,
    cc: &Cc,
    base_rtt_ns: u64,
    tap: &TapSpec,
    defaults: &[ModelSpec],
    names: &[String],
) -> Result<Vec<ModelSpec>, SimError> {
    let stem = tap.stem.as_str();
    let extra = tap.point == TapPoint::Receiver && cfg.cc.dialect() != Dialect::Rcc;
    names
        .iter()
        .map(|name| {
            if let Some(m) = defaults.iter().find(|m| &m.name == name) {
                return Ok(m.clone());
            }
            if extra && name == "rcc-receiver" {
                let p = ReceiverParams {
                    line_rate_bps: cc.line_rate_bps(),
                    base_rtt_ns,
                    mtu_bytes: u64::from(cfg.mtu_bytes),
                    ..ReceiverParams::default()
                };
                return spec(stem, name, &p);
            }
            let mut allowed: Vec<&str> = defaults.iter().map(|m| m.name.as_str()).collect();
            if extra {
                allowed.push("rcc-receiver");
            }
            Err(SimError::Scenario(format!(
                "tap {stem}: models: `{name}` cannot replay this {} {} tap; use {}",
                cfg.cc.dialect(),
                match tap.point {
                    TapPoint::Sender => "sender",
                    TapPoint::Receiver => "receiver",
                },
                allowed.join(", ")
            )))
        })
        .collect()
}

fn notes(sc: &Scenario, cfg: &NetConfig, tap: &TapSpec, m: &Metrics) -> String {
    let marks: u64 = m.ports.iter().map(|p| p.ecn_marked).sum();
    let qmax = m.ports.iter().map(|p| p.queue_max_bytes).max().unwrap_or(0);
    let red = cfg.switch.red.as_ref().map_or("off".to_string(), |r| {
        format!(
            "kmin_bytes {}, kmax_bytes {}, pmax {}",
            r.kmin_bytes, r.kmax_bytes, r.pmax
        )
    });
    let pfc = cfg.switch.pfc.map_or("off".to_string(), |p| {
        format!("xoff_bytes {}, xon_bytes {}", p.xoff_bytes, p.xon_bytes)
    });
    let dialect = cfg.cc.dialect();
    let echo = match dialect {
        Dialect::Roce => "receivers run dcqcn-np and send CNPs",
        Dialect::Hpcc => "switches push an INT hop into data on egress; receivers echo the stack",
        Dialect::Fncc => {
            "switches write the data-direction egress INT into ACKs (FNCC-3); receivers write N"
        }
        Dialect::Rcc => "receivers run rcc-receiver and write cwnd, N and flags into ACKs",
    };
    // Hosts whose data leave ECT(1) (`[hosts.NAME] ecn`); the others send ECT(0).
    let mut ect1: Vec<&str> = Vec::new();
    for &(h, _) in &cfg.host_data_ecn {
        let name = cfg.topology.nodes[h as usize].name.as_str();
        if cfg.data_ecn(h) == DataEcn::Ect1 && !ect1.contains(&name) {
            ect1.push(name);
        }
    }
    let ect1 = if ect1.is_empty() {
        String::new()
    } else {
        format!("; data of {} ECT(1), of the others ECT(0)", ect1.join(", "))
    };
    // A mirror session's capture says how it arrives (docs/wire.md 2.1).
    let mirrored = tap.mirror.as_ref().map_or(String::new(), |m| {
        format!(
            ", mirrored to a collector as {} session {} by 10.255.0.1",
            m.kind, m.session
        )
    });
    format!(
        "docs/sim.md. Scenario {} ({:?} topology), tap on {} ({:?}){mirrored}; {} flows; {} B WRITE \
         payloads, one ACK per data packet, go-back-N, RTO {} ns; {} ns run. Switches: shared \
         buffer {} B, RED {red}, PFC {pfc}; {echo}{ect1}. Run: {} events, {} drops, {marks} ECN \
         marks, {} pause frames, peak queue {qmax} B.",
        sc.name,
        topology_kind(sc),
        tap.host,
        tap.point,
        cfg.flows.len(),
        cfg.mtu_bytes,
        cfg.rto_ns,
        cfg.duration_ns,
        cfg.switch.buffer_bytes,
        m.events,
        m.drops,
        m.pfc.pause_frames,
    )
}

fn topology_kind(sc: &Scenario) -> &'static str {
    match sc.topology {
        scenario::TopologySpec::Incast { .. } => "incast",
        scenario::TopologySpec::Dumbbell { .. } => "dumbbell",
        scenario::TopologySpec::Chain { .. } => "chain",
        scenario::TopologySpec::FatTree { .. } => "fat_tree",
        scenario::TopologySpec::Custom { .. } => "custom",
    }
}

/// Write the captures and manifests of `out` into `dir` (created if needed), and
/// `metrics.json` when `metrics` is set, all or nothing (a failure leaves the old files, never
/// a new capture beside an old manifest). Returns the paths written.
pub fn write(out: &SimOutput, dir: &Path, metrics: bool) -> Result<Vec<PathBuf>, SimError> {
    std::fs::create_dir_all(dir).map_err(|source| SimError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut files: Vec<(PathBuf, &[u8])> = Vec::new();
    for c in &out.captures {
        files.push((dir.join(format!("{}.pcap", c.stem)), &c.pcap));
        files.push((dir.join(format!("{}.toml", c.stem)), c.manifest.as_bytes()));
    }
    for c in &out.switch_captures {
        let stem = &c.stem;
        files.push((dir.join(format!("{stem}.out.pcap")), &c.out_pcap));
        for i in &c.ingress {
            files.push((dir.join(&i.file), &i.pcap));
        }
        files.push((dir.join(format!("{stem}.toml")), c.manifest.as_bytes()));
        files.push((
            dir.join(format!("{stem}.switch.toml")),
            c.switch_toml.as_bytes(),
        ));
        files.push((dir.join(format!("{stem}.truth.jsonl")), c.truth.as_bytes()));
        if let Some(acks) = &c.ack_pcap {
            files.push((dir.join(format!("{stem}.ack.pcap")), acks));
            files.push((
                dir.join(format!("{stem}.ack_truth.jsonl")),
                c.ack_truth.as_bytes(),
            ));
        }
    }
    let text;
    if metrics {
        let p = dir.join("metrics.json");
        // The layout `ccreplay sim` writes (docs/metrics.md).
        text = scenario::metrics_json(&out.metrics, &[]).map_err(|e| SimError::Io {
            path: p.clone(),
            source: std::io::Error::other(e),
        })?;
        files.push((p, text.as_bytes()));
    }
    let refs: Vec<(&Path, &[u8])> = files.iter().map(|(p, b)| (p.as_path(), *b)).collect();
    crate::outfile::write_all_atomic(&refs).map_err(|source| SimError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    Ok(files.into_iter().map(|(p, _)| p).collect())
}

/// Regenerate every bundled trace into `dir` (no metrics). Returns the manifest paths.
pub fn generate_bundled(dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    let mut all = Vec::new();
    for (name, _) in BUNDLED {
        all.extend(generate_one(name, dir)?);
    }
    Ok(all)
}

/// Regenerate bundled scenario `name` into `dir`. Returns the manifest paths. A switch tap is
/// bundled as its egress mirror `STEM.out.pcap` and manifest `STEM.toml` only: `check` takes
/// every `*.toml` of `traces/` for a manifest, so `STEM.switch.toml`, the ingress captures and
/// the truth file stay with `ccreplay sim`.
pub fn generate_one(name: &str, dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    let sc = bundled(name)?;
    let mut out = simulate(&sc, None, &mut |_| {})?;
    let switch = std::mem::take(&mut out.switch_captures);
    let mut manifests: Vec<PathBuf> = write(&out, dir, false)?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    let mut files: Vec<(PathBuf, &[u8])> = Vec::new();
    for c in &switch {
        files.push((dir.join(format!("{}.out.pcap", c.stem)), &c.out_pcap));
        files.push((dir.join(format!("{}.toml", c.stem)), c.manifest.as_bytes()));
    }
    let refs: Vec<(&Path, &[u8])> = files.iter().map(|(p, b)| (p.as_path(), *b)).collect();
    crate::outfile::write_all_atomic(&refs).map_err(|source| SimError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    manifests.extend(switch.iter().map(|c| dir.join(format!("{}.toml", c.stem))));
    Ok(manifests)
}
