//! `ccreplay sim`: run a scenario file through the network engine of
//! `ccreplay_reference_cc::net` and write what it produced (docs/sim.md):
//!
//! - `STEM.pcap` per `[[taps]]` entry — every frame in or out of the host's NIC, written with
//!   the codecs' writers (real headers, valid ICRC, 802.1Qbb pause frames), with the tap's
//!   imperfections if it has any (timestamp resolution and jitter, lost frames: `TapOut`);
//! - `STEM.toml`, its manifest (docs/manifest.md), so `ccreplay replay` / `check` take it;
//! - `metrics.json` (docs/metrics.md).
//!
//! The bundled traces in `traces/` are the taps of the scenarios in `scenarios/bundled/`
//! ([`BUNDLED`]); `ccreplay synth` is the alias that regenerates them.

pub mod scenario;
pub mod wire;

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::{CaptureError, PcapWriter};
use ccreplay_codecs::frame::EmitError;
use ccreplay_reference_cc::Decision;
use ccreplay_reference_cc::dcqcn::NicParams;
use ccreplay_reference_cc::dcqcn::cp::SplitMix64;
use ccreplay_reference_cc::net::{
    Cc, Metrics, NetConfig, NetError, Network, Packet, RunResult, TapSink,
};

use crate::manifest::{
    CapturePoint, FlowSpec, IntSection, Manifest, ModelSpec, Network as Net, Source,
};
pub use scenario::{Scenario, TapPoint, TapSpec};
use wire::{FIRST_RECEIVER_QP, FIRST_SENDER_QP, Framer, ROCE_UDP_PORT, host_ip, host_numbers};

/// The bundled scenarios (name, file text): each tap is a trace in `traces/`.
pub const BUNDLED: &[(&str, &str)] = &[
    (
        "roce_dcqcn",
        include_str!("../../../scenarios/bundled/roce_dcqcn.toml"),
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
        "rcc_dumbbell",
        include_str!("../../../scenarios/bundled/rcc_dumbbell.toml"),
    ),
];

/// Why a simulation could not run or be written.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario file is wrong.
    #[error("scenario: {0}")]
    Scenario(String),
    /// No bundled scenario of that name.
    #[error(
        "unknown bundled scenario `{0}` (known: roce_dcqcn, hpcc_dumbbell, fncc_dumbbell, rcc_dumbbell)"
    )]
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
    /// The decisions of the model the manifest names first (the one that drove the loop),
    /// in the order the model made them. With a `[device]` bug: those of the model as the
    /// buggy NIC ran it (the manifest still names the correct model).
    pub decisions: Vec<Decision>,
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct SimOutput {
    /// Per `[[taps]]` entry.
    pub captures: Vec<Capture>,
    /// What was measured.
    pub metrics: Metrics,
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
        self.writer
            .write(t, frame)
            .map_err(|e| NetError::Tap(e.to_string()))?;
        self.packets += 1;
        Ok(())
    }
}

struct Taps<'a> {
    framer: Framer,
    /// Per `[[taps]]` entry.
    outs: Vec<TapOut>,
    /// Per tapped host (the engine's tap index): its entries.
    entries: Vec<Vec<usize>>,
    progress: &'a mut dyn FnMut(u64),
}

impl TapSink for Taps<'_> {
    fn record(&mut self, tap: usize, t_ns: u64, pkt: &Packet, _out: bool) -> Result<(), NetError> {
        let bytes = self
            .framer
            .frame(pkt)
            .map_err(|e| NetError::Tap(e.to_string()))?;
        for &i in &self.entries[tap] {
            self.outs[i].record(t_ns, bytes)?;
        }
        Ok(())
    }

    fn progress(&mut self, now_ns: u64) {
        (self.progress)(now_ns);
    }
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
    let mut taps = Taps {
        framer: Framer::new(&cfg),
        outs: sc
            .taps
            .iter()
            .enumerate()
            .map(|(i, t)| TapOut::new(t, cfg.seed, i))
            .collect::<Result<_, _>>()?,
        entries,
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
    Ok(SimOutput {
        captures,
        metrics: run.metrics,
    })
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
    let link_rate_bps = match cc {
        Cc::Dcqcn { rp, .. } => rp.line_rate_bps,
        Cc::Hpcc(p) => p.line_rate_bps,
        Cc::Fncc(p) => p.line_rate_bps,
        Cc::Rcc { sender, .. } => sender.line_rate_bps,
    };
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
    format!(
        "docs/sim.md. Scenario {} ({:?} topology), tap on {} ({:?}); {} flows; {} B WRITE \
         payloads, one ACK per data packet, go-back-N, RTO {} ns; {} ns run. Switches: shared \
         buffer {} B, RED {red}, PFC {pfc}; {echo}. Run: {} events, {} drops, {marks} ECN \
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
    let text;
    if metrics {
        let p = dir.join("metrics.json");
        let mut t = serde_json::to_string_pretty(&out.metrics).map_err(|e| SimError::Io {
            path: p.clone(),
            source: std::io::Error::other(e),
        })?;
        t.push('\n');
        text = t;
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

/// Regenerate bundled scenario `name` into `dir`. Returns the manifest paths.
pub fn generate_one(name: &str, dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    let sc = bundled(name)?;
    let out = simulate(&sc, None, &mut |_| {})?;
    Ok(write(&out, dir, false)?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect())
}
