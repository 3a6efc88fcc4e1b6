//! `ccreplay synth`: a small, deterministic, closed-loop trace generator — a stand-in for the
//! switch model of a later release, so that `ccreplay check` has bundled captures to check.
//!
//! One sender host with 2–4 flows (QPs), one bottleneck switch port, one receiver host
//! (docs/synth.md draws it). The senders are the reference models of `ccreplay-reference-cc`
//! run in closed loop: the generator feeds a sender model the events its NIC sees (`tx_data`
//! when it sends, `rx_ack` / `rx_nak` / `rx_cnp` on arrival) and applies the window and pacing
//! rate it decides; the receiver runs the receiver model (DCQCN NP, FNCC N, RCC Algorithm 1) and
//! writes its outputs into ACKs and CNPs; the switch marks ECN (DCQCN-1), stamps INT into HPCC
//! data packets and inserts the data-direction INT into FNCC ACKs (FNCC-3). Taps at the sender
//! NIC (and, for RCC, at the receiver NIC) write nanosecond pcaps through the codecs' frame
//! writer, each with a manifest (harness.md 1) naming the models, their parameters, the flow
//! pairing and the seed.
//!
//! Everything is a function of the [`Scenario`]: there is no clock, no hash-map iteration and
//! no randomness but the seeded generator, so the same scenario gives the same bytes.

mod sim;
mod wire;

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::CaptureError;
use ccreplay_codecs::frame::EmitError;
use ccreplay_reference_cc::dcqcn::cp::RedParams;
use ccreplay_reference_cc::dcqcn::{NicParams, NpParams, RpParams};
use ccreplay_reference_cc::fncc::SwitchError;
use ccreplay_reference_cc::rcc::{ReceiverParams, SenderParams};
use ccreplay_reference_cc::{Decision, ParamError, fncc, hpcc};

use crate::manifest::{CapturePoint, FlowSpec, IntSection, Manifest, ModelSpec, Network, Source};

pub use sim::{FlowStats, RunStats};

/// The sender host's IPv4 address in every synthesized trace.
pub const SENDER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The receiver host's IPv4 address.
pub const RECEIVER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// Simulated time 0 in ns since the Unix epoch (2025-01-01T00:00:00Z): every timestamp the
/// generator writes — pcap records, INT `TS`, RCC shims, model events — is this plus the
/// simulated time.
pub const EPOCH_NS: u64 = 1_735_689_600_000_000_000;
/// UDP source port of flow 0; flow `i` uses this + `i`.
pub const FIRST_UDP_PORT: u16 = 49_152;
/// QP of the sender's flow 0; flow `i` uses this + `i`.
pub const FIRST_SENDER_QP: u32 = 0x00_0101;
/// QP of the receiver's flow 0; flow `i` uses this + `i`.
pub const FIRST_RECEIVER_QP: u32 = 0x00_0201;
/// The largest number of flows a scenario may have.
pub const MAX_FLOWS: usize = 16;

/// The names of the bundled scenarios, in the order [`bundled`] returns them.
pub const SCENARIOS: &[&str] = &[
    "roce_dcqcn",
    "hpcc_dumbbell",
    "fncc_dumbbell",
    "rcc_dumbbell",
];

/// Why a trace could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// No bundled scenario of that name.
    #[error("unknown scenario `{0}` (known: {known})", known = SCENARIOS.join(", "))]
    UnknownScenario(String),
    /// A scenario value the generator cannot run with.
    #[error("scenario `{scenario}`: {what}")]
    Scenario {
        /// Scenario name.
        scenario: String,
        /// What is wrong and what is allowed.
        what: String,
    },
    /// A model rejected its parameters (C-7).
    #[error("scenario `{scenario}`, model `{model}`: {source}")]
    Params {
        /// Scenario name.
        scenario: String,
        /// Model name.
        model: &'static str,
        /// The parameter and why.
        source: ParamError,
    },
    /// A frame could not be written (a generator bug: every frame it builds is valid).
    #[error("writing a frame: {0}")]
    Emit(#[from] EmitError),
    /// The FNCC switch refused to insert its record (a generator bug).
    #[error("FNCC switch: {0}")]
    Switch(#[from] SwitchError),
    /// A model fired its timer and still reports it due (a model bug; the loop would stall).
    #[error("model `{model}` still has a timer due at {deadline_ns} ns after firing it")]
    StuckTimer {
        /// Model name.
        model: &'static str,
        /// The deadline, ns since the epoch.
        deadline_ns: u64,
    },
    /// A pcap record could not be written.
    #[error("writing a capture: {0}")]
    Capture(#[from] CaptureError),
    /// The frame the codecs wrote does not have the length the simulator timed (a bug).
    #[error("frame length {emitted} differs from the simulated {expected} bytes")]
    FrameLength {
        /// Bytes emitted.
        emitted: usize,
        /// Bytes the simulator serialised.
        expected: u32,
    },
    /// A manifest could not be serialised.
    #[error("writing the manifest of `{stem}`: {message}")]
    Manifest {
        /// File stem.
        stem: String,
        /// serde's message.
        message: String,
    },
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// OS error.
        source: std::io::Error,
    },
}

/// The congestion control a scenario runs, with every model's parameters.
///
/// `line_rate_bps`, `base_rtt_ns` and `mtu_bytes` of each model are overwritten from the
/// topology when the scenario runs (the receiver-side RCC model gets the bottleneck rate, its
/// last hop), so the manifests always state what ran.
#[derive(Clone, Debug)]
pub enum Cc {
    /// DCQCN: the `dcqcn` reaction point drives the sender, `dcqcn-np` generates CNPs at the
    /// receiver, and the switch RED/ECN-marks (DCQCN-1). `nic` is listed in the manifest so
    /// that `dcqcn-nic` is replayed on the same events; it does not drive the loop.
    Dcqcn {
        /// `dcqcn` (DCQCN-3), closed loop.
        rp: RpParams,
        /// `dcqcn-nic` (DCQCN-4), replay only.
        nic: NicParams,
        /// `dcqcn-np` (DCQCN-2) at the receiver.
        np: NpParams,
        /// The switch's RED thresholds (DCQCN-1).
        red: RedParams,
    },
    /// HPCC (`hpcc`); the receiver echoes the data packet's INT stack.
    Hpcc(hpcc::Params),
    /// FNCC: `fncc` at the sender, `fncc-receiver` N at the receiver, FNCC-3 at the switch.
    Fncc(fncc::Params),
    /// RCC: `rcc-sender` and `rcc-receiver`.
    Rcc {
        /// The sender.
        sender: SenderParams,
        /// The receiver (Algorithm 1).
        receiver: ReceiverParams,
    },
}

impl Cc {
    /// The dialect of the traces this congestion control produces (wire.md 5).
    pub fn dialect(&self) -> Dialect {
        match self {
            Cc::Dcqcn { .. } => Dialect::Roce,
            Cc::Hpcc(_) => Dialect::Hpcc,
            Cc::Fncc(_) => Dialect::Fncc,
            Cc::Rcc { .. } => Dialect::Rcc,
        }
    }
}

/// One flow (QP pair) of a scenario: a single RDMA WRITE message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowPlan {
    /// When the sender posts the message, ns of simulated time.
    pub start_ns: u64,
    /// Message length, bytes (> 0). A message longer than the run is simply cut by its end.
    pub message_bytes: u64,
    /// PSN of the first packet; `None` draws it from the seed.
    pub first_psn: Option<u32>,
}

/// Where packets are captured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Taps {
    /// File stem of the sender-NIC capture (data out; ACKs, NAKs, CNPs in), if wanted.
    pub sender: Option<String>,
    /// File stem of the receiver-NIC capture (data in), if wanted.
    pub receiver: Option<String>,
}

/// A complete, deterministic description of one run.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name (`ccreplay synth <name>`).
    pub name: String,
    /// Seed of the RED marking generator and of the first PSNs not given.
    pub seed: u64,
    /// Congestion control and model parameters.
    pub cc: Cc,
    /// Simulated time, ns: the run stops at this time.
    pub duration_ns: u64,
    /// Sender host link rate (its NIC and the link to the switch, both directions), bps.
    pub host_link_bps: u64,
    /// Bottleneck rate: the switch port towards the receiver and the receiver's NIC, bps.
    pub bottleneck_bps: u64,
    /// One-way propagation delay of each of the two links, ns.
    pub prop_ns: u64,
    /// Bottleneck port buffer, bytes (drop-tail beyond it).
    pub buffer_bytes: u64,
    /// IB payload per packet, bytes (a multiple of 4, at least 4).
    pub mtu_bytes: u32,
    /// Retransmission timeout of the go-back-N transport, ns.
    pub rto_ns: u64,
    /// 12-bit switch ID XORed into INT pathIDs.
    pub switch_id: u16,
    /// The flows, in start order.
    pub flows: Vec<FlowPlan>,
    /// The captures to write.
    pub taps: Taps,
}

/// The flows every bundled scenario runs: flow 0 from the start, flow 1 joins at 300 µs with a
/// 400 KB message (it finishes inside the run), flow 2 joins at 700 µs. Flow 0's first PSN is
/// 192 below the 24-bit wrap, so every bundled trace crosses it.
fn bundled_flows() -> Vec<FlowPlan> {
    vec![
        FlowPlan {
            start_ns: 0,
            message_bytes: 16 << 20,
            first_psn: Some(0xFF_FF40),
        },
        FlowPlan {
            start_ns: 300_000,
            message_bytes: 400_000,
            first_psn: None,
        },
        FlowPlan {
            start_ns: 700_000,
            message_bytes: 16 << 20,
            first_psn: None,
        },
    ]
}

fn bundled_scenario(name: &str, seed: u64, cc: Cc, taps: Taps) -> Scenario {
    Scenario {
        name: name.into(),
        seed,
        cc,
        duration_ns: 1_500_000,
        host_link_bps: 25_000_000_000,
        bottleneck_bps: 10_000_000_000,
        prop_ns: 1_000,
        buffer_bytes: 500_000,
        mtu_bytes: 1000,
        rto_ns: 1_000_000,
        switch_id: 0x0A1,
        flows: bundled_flows(),
        taps,
    }
}

fn sender_tap(stem: &str) -> Taps {
    Taps {
        sender: Some(stem.into()),
        receiver: None,
    }
}

/// A bundled scenario by name (see [`SCENARIOS`]).
pub fn scenario(name: &str) -> Result<Scenario, SynthError> {
    Ok(match name {
        "roce_dcqcn" => Scenario {
            // DCQCN reacts on 50-55 µs timers: a longer run, still under 2 MB.
            duration_ns: 2_000_000,
            ..bundled_scenario(
                name,
                0xDC9C_0001,
                Cc::Dcqcn {
                    // Paper defaults (seed 001 §5.2), but the byte counter and the increase
                    // steps are scaled to a 2 ms, 10 Gbps trace, so that byte-counter expiries
                    // (decisions on tx_data) and visible recoveries happen inside it.
                    rp: RpParams {
                        rpg_byte_reset: 100_000,
                        rpg_ai_rate: 400,
                        rpg_hai_rate: 4_000,
                        ..RpParams::default()
                    },
                    nic: NicParams::default(),
                    np: NpParams::default(),
                    // The paper's Kmin with a steep ramp to p = 1 at 20 KB: its 200 KB / 1 %
                    // ramp marks too late at a 25G -> 10G step and lets the queue fill the
                    // buffer. Between 5 and 20 KB the seeded generator decides (DCQCN-1).
                    red: RedParams {
                        kmin_bytes: 5_000,
                        kmax_bytes: 20_000,
                        pmax: 1.0,
                    },
                },
                sender_tap("roce_dcqcn"),
            )
        },
        "hpcc_dumbbell" => bundled_scenario(
            name,
            0x4ACC_0001,
            Cc::Hpcc(hpcc::Params {
                // HPCC-8's N: at most 3 flows share the link here, not 100.
                expected_flows: 4,
                ..hpcc::Params::default()
            }),
            sender_tap("hpcc_dumbbell"),
        ),
        "fncc_dumbbell" => bundled_scenario(
            name,
            0xF9CC_0001,
            Cc::Fncc(fncc::Params {
                expected_flows: 4,
                ..fncc::Params::default()
            }),
            sender_tap("fncc_dumbbell"),
        ),
        "rcc_dumbbell" => bundled_scenario(
            name,
            0x0ACC_0001,
            Cc::Rcc {
                sender: SenderParams::default(),
                receiver: ReceiverParams::default(),
            },
            Taps {
                sender: Some("rcc_sender".into()),
                receiver: Some("rcc_receiver".into()),
            },
        ),
        other => return Err(SynthError::UnknownScenario(other.into())),
    })
}

/// Every bundled scenario, in [`SCENARIOS`] order.
pub fn bundled() -> Vec<Scenario> {
    SCENARIOS.iter().filter_map(|n| scenario(n).ok()).collect()
}

/// One capture a run produced, in memory.
#[derive(Clone, Debug)]
pub struct Capture {
    /// File stem (`roce_dcqcn`): the capture is `<stem>.pcap`, the manifest `<stem>.toml`.
    pub stem: String,
    /// The pcap file's bytes.
    pub pcap: Vec<u8>,
    /// Packets in it.
    pub packets: u64,
    /// The manifest's text.
    pub manifest: String,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct Output {
    /// The captures, sender side first.
    pub captures: Vec<Capture>,
    /// The decisions of the closed-loop sender model, in the order it made them.
    pub sender_decisions: Vec<Decision>,
    /// The decisions of the receiver model (DCQCN NP, FNCC N, RCC), if the scenario has one.
    pub receiver_decisions: Vec<Decision>,
    /// Counters and per-flow figures.
    pub stats: RunStats,
}

impl Scenario {
    /// The dialect of the scenario's traces.
    pub fn dialect(&self) -> Dialect {
        self.cc.dialect()
    }

    fn invalid(&self, what: impl Into<String>) -> SynthError {
        SynthError::Scenario {
            scenario: self.name.clone(),
            what: what.into(),
        }
    }

    /// Reject values the generator cannot run with.
    pub fn validate(&self) -> Result<(), SynthError> {
        const MAX_RATE_BPS: u64 = 10_000_000_000_000;
        if !(1..=MAX_FLOWS).contains(&self.flows.len()) {
            return Err(self.invalid(format!("needs 1..={MAX_FLOWS} flows")));
        }
        for w in self.flows.windows(2) {
            if w[1].start_ns <= w[0].start_ns {
                return Err(self.invalid(
                    "flows must start in strictly increasing order (flow ids are dense in order \
                     of first appearance, harness.md 1)",
                ));
            }
        }
        if self.flows.iter().any(|f| f.message_bytes == 0) {
            return Err(self.invalid("message_bytes must be > 0"));
        }
        if self
            .flows
            .iter()
            .any(|f| f.first_psn.is_some_and(|p| p > 0xFF_FFFF))
        {
            return Err(self.invalid("first_psn must fit 24 bits"));
        }
        for (name, bps) in [
            ("host_link_bps", self.host_link_bps),
            ("bottleneck_bps", self.bottleneck_bps),
        ] {
            if bps == 0 || bps > MAX_RATE_BPS {
                return Err(self.invalid(format!("{name} must be in 1..=10^13")));
            }
        }
        if matches!(self.cc, Cc::Hpcc(_) | Cc::Fncc(_))
            && ccreplay_codecs::shim::int::LineRate::from_bps(self.bottleneck_bps).is_none()
        {
            return Err(self.invalid(
                "bottleneck_bps must have an INT line-rate code (10, 25, 40, 50, 100, 200, 400 \
                 or 800 Gbps; wire.md 5.1)",
            ));
        }
        if self.mtu_bytes < 4 || !self.mtu_bytes.is_multiple_of(4) || self.mtu_bytes > 4096 {
            return Err(self.invalid("mtu_bytes must be a multiple of 4 in 4..=4096"));
        }
        if self.duration_ns == 0 || self.duration_ns > 60_000_000_000 {
            return Err(self.invalid("duration_ns must be in 1..=60 s"));
        }
        if self.prop_ns > 1_000_000_000 || self.rto_ns == 0 || self.rto_ns > 60_000_000_000 {
            return Err(self.invalid("prop_ns must be <= 1 s and rto_ns in 1..=60 s"));
        }
        if self.buffer_bytes < u64::from(self.mtu_bytes) * 2 {
            return Err(self.invalid("buffer_bytes must hold at least two packets"));
        }
        if self.switch_id > 0x0FFF {
            return Err(self.invalid("switch_id must fit 12 bits"));
        }
        if self.taps.sender.is_none() && self.taps.receiver.is_none() {
            return Err(self.invalid("no capture to write: set taps.sender or taps.receiver"));
        }
        for stem in [&self.taps.sender, &self.taps.receiver]
            .into_iter()
            .flatten()
        {
            let ok = !stem.is_empty()
                && stem
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !ok {
                return Err(self.invalid(format!(
                    "capture stem `{stem}`: use letters, digits, `_` and `-` only"
                )));
            }
        }
        Ok(())
    }

    /// The unloaded round-trip time of a full-size middle data packet and its ACK, rounded up
    /// to whole ns: the `T` (base RTT) every model and manifest of the scenario uses.
    ///
    /// `serialise(data, host) + prop + serialise(data, bottleneck) + prop
    ///  + serialise(ack, bottleneck) + prop + serialise(ack, host) + prop`, with a frame
    /// serialised in `bytes × 8 / rate` (frame bytes as captured: no preamble, IFG or FCS).
    pub fn base_rtt_ns(&self) -> u64 {
        let d = self.dialect();
        let data = wire::frame_len(d, wire::Kind::Data, wire::WRITE_MIDDLE, self.mtu_bytes);
        let ack = wire::frame_len(d, wire::Kind::Ack, 0, 0);
        let ps = sim::ser_ps(data, self.host_link_bps)
            + sim::ser_ps(data, self.bottleneck_bps)
            + sim::ser_ps(ack, self.bottleneck_bps)
            + sim::ser_ps(ack, self.host_link_bps)
            + 4 * self.prop_ns * sim::PS_PER_NS;
        ps.div_ceil(sim::PS_PER_NS)
    }

    /// The parameters each model runs with, network values filled in from the topology.
    fn resolved_cc(&self) -> Cc {
        let (line, t, mtu) = (
            self.host_link_bps,
            self.base_rtt_ns(),
            u64::from(self.mtu_bytes),
        );
        match &self.cc {
            Cc::Dcqcn { rp, nic, np, red } => Cc::Dcqcn {
                rp: RpParams {
                    line_rate_bps: line,
                    base_rtt_ns: t,
                    mtu_bytes: mtu,
                    ..rp.clone()
                },
                nic: NicParams {
                    line_rate_bps: line,
                    base_rtt_ns: t,
                    mtu_bytes: mtu,
                    ..nic.clone()
                },
                np: NpParams {
                    // The NP sits on the receiver, whose link is the bottleneck.
                    line_rate_bps: self.bottleneck_bps,
                    base_rtt_ns: t,
                    mtu_bytes: mtu,
                    ..np.clone()
                },
                red: red.clone(),
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
                    // RCC's C is the receiver's last-hop bandwidth (seed 002 §III-C).
                    line_rate_bps: self.bottleneck_bps,
                    base_rtt_ns: t,
                    mtu_bytes: mtu,
                    ..receiver.clone()
                },
            },
        }
    }

    /// Run the scenario in memory: captures, manifests, decisions and figures.
    pub fn simulate(&self) -> Result<Output, SynthError> {
        self.validate()?;
        let cc = self.resolved_cc();
        let run = sim::Sim::new(self, &cc)?.run()?;
        let mut captures = Vec::new();
        for (tap, bytes, packets) in [
            (TapSide::Sender, run.sender_pcap, run.stats.sender_packets),
            (
                TapSide::Receiver,
                run.receiver_pcap,
                run.stats.receiver_packets,
            ),
        ] {
            let (Some(stem), Some(pcap)) = (self.tap_stem(tap), bytes) else {
                continue;
            };
            let manifest = self.manifest_text(tap, stem, &cc, &run.stats)?;
            captures.push(Capture {
                stem: stem.to_string(),
                pcap,
                packets,
                manifest,
            });
        }
        Ok(Output {
            captures,
            sender_decisions: run.sender_decisions,
            receiver_decisions: run.receiver_decisions,
            stats: run.stats,
        })
    }

    fn tap_stem(&self, tap: TapSide) -> Option<&str> {
        match tap {
            TapSide::Sender => self.taps.sender.as_deref(),
            TapSide::Receiver => self.taps.receiver.as_deref(),
        }
    }

    /// The manifest of one capture (harness.md 1).
    fn build_manifest(
        &self,
        tap: TapSide,
        stem: &str,
        cc: &Cc,
        stats: &RunStats,
    ) -> Result<Manifest, SynthError> {
        let spec = |name, p: &dyn ParamsTable| model_spec(stem, name, p);
        let models = match (cc, tap) {
            (Cc::Dcqcn { rp, nic, .. }, TapSide::Sender) => {
                vec![spec("dcqcn", rp)?, spec("dcqcn-nic", nic)?]
            }
            (Cc::Dcqcn { np, .. }, TapSide::Receiver) => vec![spec("dcqcn-np", np)?],
            (Cc::Hpcc(p), TapSide::Sender) => vec![spec("hpcc", p)?],
            (Cc::Hpcc(_), TapSide::Receiver) => {
                return Err(self.invalid("HPCC has no receiver model: capture the sender"));
            }
            (Cc::Fncc(p), TapSide::Sender) => vec![spec("fncc", p)?],
            (Cc::Fncc(p), TapSide::Receiver) => vec![spec("fncc-receiver", p)?],
            (Cc::Rcc { sender, .. }, TapSide::Sender) => vec![spec("rcc-sender", sender)?],
            (Cc::Rcc { receiver, .. }, TapSide::Receiver) => {
                vec![spec("rcc-receiver", receiver)?]
            }
        };
        let (local, remote, link) = match tap {
            TapSide::Sender => (SENDER_IP, RECEIVER_IP, self.host_link_bps),
            TapSide::Receiver => (RECEIVER_IP, SENDER_IP, self.bottleneck_bps),
        };
        let flows = (0..self.flows.len() as u32)
            .map(|i| {
                let (s, r) = (FIRST_SENDER_QP + i, FIRST_RECEIVER_QP + i);
                let (local_qp, remote_qp) = match tap {
                    TapSide::Sender => (s, r),
                    TapSide::Receiver => (r, s),
                };
                FlowSpec {
                    local_ip: IpAddr::V4(local),
                    local_qp,
                    remote_ip: IpAddr::V4(remote),
                    remote_qp,
                }
            })
            .collect();
        let host = IpAddr::V4(local);
        Ok(Manifest {
            capture: Some(format!("{stem}.pcap")),
            events: None,
            dialect: self.dialect(),
            capture_point: match tap {
                TapSide::Sender => CapturePoint::Sender { host },
                TapSide::Receiver => CapturePoint::Receiver { host },
            },
            network: Network {
                link_rate_bps: link,
                base_rtt_ns: self.base_rtt_ns(),
                mtu_bytes: u64::from(self.mtu_bytes),
                udp_port: wire::ROCE_UDP_PORT,
            },
            int: IntSection::default(),
            models,
            flows,
            source: Source {
                kind: "synthesized".into(),
                generator: format!("ccreplay synth {}", self.name),
                seed: Some(self.seed),
                notes: Some(self.notes(cc, stats)),
            },
        })
    }

    fn notes(&self, cc: &Cc, st: &RunStats) -> String {
        let mut s = format!(
            "docs/synth.md. Sender {SENDER_IP} ({} Gbps) -> switch {:#05x} -> receiver \
             {RECEIVER_IP}; bottleneck port {} Gbps, buffer {} B drop-tail, {} ns per link; \
             {} B WRITE payloads, one ACK per data packet, go-back-N, RTO {} ns; {} ns run.",
            self.host_link_bps / 1_000_000_000,
            self.switch_id,
            self.bottleneck_bps / 1_000_000_000,
            self.buffer_bytes,
            self.prop_ns,
            self.mtu_bytes,
            self.rto_ns,
            self.duration_ns,
        );
        match cc {
            Cc::Dcqcn { red, np, .. } => s.push_str(&format!(
                " Switch RED at enqueue: kmin_bytes {}, kmax_bytes {}, pmax {} (SplitMix64 seeded \
                 with the seed); receiver dcqcn-np min_time_between_cnps {} us. The loop runs \
                 `dcqcn`; `dcqcn-nic` is replayed on the same events.",
                red.kmin_bytes, red.kmax_bytes, red.pmax, np.min_time_between_cnps
            )),
            Cc::Hpcc(_) => s.push_str(
                " The switch pushes one INT hop into each data packet on egress; the receiver \
                 echoes the stack.",
            ),
            Cc::Fncc(p) => s.push_str(&format!(
                " The switch writes the data-direction egress INT into every ACK (FNCC-3); the \
                 receiver writes N with t_active_ns {}.",
                p.t_active_ns()
            )),
            Cc::Rcc { .. } => s.push_str(
                " The receiver runs rcc-receiver and writes cwnd, N and flags into every ACK.",
            ),
        }
        s.push_str(&format!(
            " Run: {} data packets sent, {} drops, {} ECN marks, {} CNPs, {} retransmitted, peak \
             queue {} B.",
            st.data_sent, st.drops, st.marks, st.cnps, st.retransmitted, st.max_queue_bytes
        ));
        s
    }

    fn manifest_text(
        &self,
        tap: TapSide,
        stem: &str,
        cc: &Cc,
        stats: &RunStats,
    ) -> Result<String, SynthError> {
        let m = self.build_manifest(tap, stem, cc, stats)?;
        let body = toml::to_string(&m).map_err(|e| SynthError::Manifest {
            stem: stem.into(),
            message: e.to_string(),
        })?;
        Ok(format!(
            "# Generated by `ccreplay synth {}` (docs/synth.md). Do not edit: regenerate.\n{body}",
            self.name
        ))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TapSide {
    Sender,
    Receiver,
}

/// A model's params struct as a TOML table (options that are `None` are left out, so on replay
/// the model's default applies: the value that ran).
trait ParamsTable {
    fn to_table(&self) -> Result<toml::Table, toml::ser::Error>;
}

impl<T: serde::Serialize> ParamsTable for T {
    fn to_table(&self) -> Result<toml::Table, toml::ser::Error> {
        toml::Table::try_from(self)
    }
}

fn model_spec(
    stem: &str,
    name: &'static str,
    params: &dyn ParamsTable,
) -> Result<ModelSpec, SynthError> {
    Ok(ModelSpec {
        name: name.into(),
        params: params.to_table().map_err(|e| SynthError::Manifest {
            stem: format!("{stem} ({name})"),
            message: e.to_string(),
        })?,
    })
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), SynthError> {
    std::fs::write(path, bytes).map_err(|source| SynthError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Run `scenario` and write each capture and its manifest into `out_dir` (created if needed).
/// Returns the manifest paths.
pub fn generate(scenario: &Scenario, out_dir: &Path) -> Result<Vec<PathBuf>, SynthError> {
    let out = scenario.simulate()?;
    std::fs::create_dir_all(out_dir).map_err(|source| SynthError::Io {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let mut manifests = Vec::new();
    for c in &out.captures {
        write_file(&out_dir.join(format!("{}.pcap", c.stem)), &c.pcap)?;
        let m = out_dir.join(format!("{}.toml", c.stem));
        write_file(&m, c.manifest.as_bytes())?;
        manifests.push(m);
    }
    Ok(manifests)
}

/// Write every bundled trace and its manifest into `out_dir`; returns the manifest paths.
pub fn generate_bundled(out_dir: &Path) -> Result<Vec<PathBuf>, SynthError> {
    let mut all = Vec::new();
    for s in bundled() {
        all.extend(generate(&s, out_dir)?);
    }
    Ok(all)
}
