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
//!
//! Role: the `sim` and `synth` commands' work; may use reference-cc's network engine, the codecs'
//! writers and the manifest. The files, by what they decide: this one runs a scenario and
//! writes its outputs all or nothing; `scenario/` reads scenario files; `taps.rs` writes
//! the taps' frames as the run goes; `manifests.rs` the files beside each capture; `wire.rs`
//! the addresses and frames; `json_format.rs` `metrics.json`'s layout.

pub mod json_format;
mod manifests;
pub mod scenario;
mod taps;
pub mod wire;

use manifests::{manifest_text, switch_capture};
use taps::{ACK_DROP_FILE, SWITCH_DROP_STREAM, SwitchOut, TapOut, Taps};

use std::path::{Path, PathBuf};

use ccreplay_codecs::capture::CaptureError;
use ccreplay_codecs::frame::EmitError;
use ccreplay_reference_cc::Decision;
use ccreplay_reference_cc::net::{Cc, Metrics, NetConfig, NetError, Network, NodeId, RunResult};

pub use scenario::{Scenario, SwitchTapSpec, TapPoint, TapSpec};
use wire::Framer;

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

/// The neighbours of `node` in port order (a node's ports are numbered in the order its
/// links are listed), each with the link's rate.
pub(super) fn neighbours(cfg: &NetConfig, node: NodeId) -> Vec<(NodeId, u64)> {
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
