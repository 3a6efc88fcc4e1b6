//! Scenario files (docs/sim.md "Scenario files"): TOML, unknown keys rejected.
//!
//! This file is the schema (every table and key a scenario may hold, with its default);
//! `resolve.rs` reads a file and turns it into the engine's configuration and the models'
//! parameters; `overrides.rs` is `--set KEY=VALUE` and what records it in the outputs.

use std::collections::BTreeMap;

use ccreplay_reference_cc::dcqcn::cp::RedParams;
use ccreplay_reference_cc::net::device::{DEFAULT_ALPHA_G, DEFAULT_IGNORE_CNP_NS};
use ccreplay_reference_cc::net::switch_device::{DEFAULT_AVG_WEIGHT, DEFAULT_XOFF_ERROR_BYTES};
use ccreplay_reference_cc::net::{
    Cc, DeviceConfig, NicBug, NodeKind, RedByRate, SwitchBug, SwitchDeviceConfig, Topology,
};
use serde::Deserialize;

use super::SimError;

mod overrides;
mod resolve;
pub use overrides::{Override, generator, metrics_json, record_in_manifest, write_metrics_json};
pub use resolve::ModelParams;

/// A scenario as written in its TOML file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name (metrics, manifests).
    pub name: String,
    /// Seed of the RED generators, first PSNs and ECMP (`--seed` overrides it).
    #[serde(default)]
    pub seed: u64,
    /// `dcqcn`, `hpcc`, `fncc` or `rcc`.
    pub model: String,
    /// Simulated time, ns.
    pub duration_ns: u64,
    /// WRITE payload bytes per packet.
    #[serde(default = "default_mtu")]
    pub mtu_bytes: u32,
    /// Go-back-N retransmission timeout, ns.
    #[serde(default = "default_rto")]
    pub rto_ns: u64,
    /// Metrics sample interval, ns.
    #[serde(default = "default_sample")]
    pub sample_interval_ns: u64,
    /// The models' `T`; default: the largest unloaded RTT over the flows.
    #[serde(default)]
    pub base_rtt_ns: Option<u64>,
    /// Hosts, switches, links.
    pub topology: TopologySpec,
    /// Switch settings.
    #[serde(default)]
    pub switch: SwitchSpec,
    /// The sender NIC of every host (default: the ideal NIC).
    #[serde(default)]
    pub device: DeviceSpec,
    /// Model parameters (names as in docs/models/; network values are filled in).
    #[serde(default)]
    pub params: toml::Table,
    /// Flows.
    #[serde(default)]
    pub flows: Vec<FlowEntry>,
    /// A CSV file of more flows, relative to the scenario file (docs/sim.md "Flows from a
    /// file"): header `src,dst,size_bytes,start_ns` and optionally `first_psn`, one flow a
    /// row, after the `[[flows]]` entries. Read by [`Scenario::load`]: tens of thousands of
    /// `[[flows]]` tables cost the TOML parser kilobytes each (100,000 flows: 339 MB).
    #[serde(default)]
    pub flows_file: Option<String>,
    /// Host NICs to capture.
    #[serde(default)]
    pub taps: Vec<TapSpec>,
    /// Every switch: bugs and INT clock drift (default: the correct switch).
    #[serde(default)]
    pub switch_device: SwitchDeviceSpec,
    /// Switch ports to capture (docs/sim.md "Switch port taps").
    #[serde(default)]
    pub switch_taps: Vec<SwitchTapSpec>,
    /// Links between switches going down or up (docs/sim.md "Link failures").
    #[serde(default)]
    pub link_events: Vec<LinkEventEntry>,
    /// Settings of single switches, by name (docs/sim.md "One switch, one host").
    #[serde(default)]
    pub switches: BTreeMap<String, OneSwitchSpec>,
    /// Settings of single hosts' NICs, by name (docs/sim.md "One switch, one host").
    #[serde(default)]
    pub hosts: BTreeMap<String, OneHostSpec>,
}

/// One `[[link_events]]` entry: the link between `a` and `b` (two switches) goes down, or
/// comes back up, at `at_ns`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkEventEntry {
    /// When, ns from the start (0 < at_ns < duration_ns).
    pub at_ns: u64,
    /// One end (a switch).
    pub a: String,
    /// The other end (a switch).
    pub b: String,
    /// `false` (default): the link goes down; `true`: it comes back up.
    #[serde(default)]
    pub up: bool,
}

/// `[switches.NAME]`: what one switch does differently from `[switch]`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OneSwitchSpec {
    /// Its INT clock's tick, ns: every `ts` it writes is floored to a multiple (default:
    /// `[switch]`'s).
    #[serde(default)]
    pub int_ts_resolution_ns: Option<u64>,
}

/// `[hosts.NAME]`: what one host's NIC does differently.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OneHostSpec {
    /// FNCC: whether the NIC writes N into its ACKs (FNCC-2; default true). False: a receiver
    /// NIC without FNCC-2 in a mixed deployment, whose ACKs carry N = 0 ("unknown").
    #[serde(default = "default_true")]
    pub writes_n: bool,
    /// DCQCN (`roce`): the ECN codepoint of the NIC's data packets, `"ect0"` (default) or
    /// `"ect1"` ([`DataEcn`]; RFC 3168: both ECN-capable, only CE is a mark).
    #[serde(default)]
    pub ecn: Option<String>,
}

fn default_true() -> bool {
    true
}

fn default_mtu() -> u32 {
    1000
}
fn default_rto() -> u64 {
    1_000_000
}
fn default_sample() -> u64 {
    1_000
}
fn default_prop() -> u64 {
    1_000
}
fn default_k() -> u32 {
    4
}
fn default_switches() -> u32 {
    3
}
fn default_one() -> u32 {
    1
}

/// `[topology]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum TopologySpec {
    /// N senders `h0`..`h{N-1}` and the receiver `hN` on `sw0`.
    Incast {
        /// N.
        #[serde(default = "default_one")]
        senders: u32,
        /// Sender link rate.
        host_bps: u64,
        /// Receiver link rate (default `host_bps`).
        #[serde(default)]
        receiver_bps: Option<u64>,
        /// Propagation delay of every link.
        #[serde(default = "default_prop")]
        prop_ns: u64,
    },
    /// Senders `h0`..`h{N-1}` on `sw0`, receivers `hN`..`h{2N-1}` on `sw1`.
    Dumbbell {
        /// N.
        #[serde(default = "default_one")]
        senders: u32,
        /// Host link rate.
        host_bps: u64,
        /// `sw0`–`sw1` rate.
        bottleneck_bps: u64,
        /// Propagation delay of every link.
        #[serde(default = "default_prop")]
        prop_ns: u64,
    },
    /// `sw0`–`sw1`–… with `hosts_per_switch` hosts on each.
    Chain {
        /// Switches (3: two bottlenecks).
        #[serde(default = "default_switches")]
        switches: u32,
        /// Hosts on each switch.
        #[serde(default = "default_one")]
        hosts_per_switch: u32,
        /// Host link rate.
        host_bps: u64,
        /// Inter-switch link rate.
        bottleneck_bps: u64,
        /// Propagation delay of every link.
        #[serde(default = "default_prop")]
        prop_ns: u64,
    },
    /// `hosts` hosts `h0`.. and `switches` switches `sw0`.. (in that node order) joined by the
    /// links listed; a node's ports are numbered in the order of its links.
    Custom {
        /// Hosts.
        hosts: u32,
        /// Switches.
        switches: u32,
        /// Propagation delay of a link that gives none.
        #[serde(default = "default_prop")]
        prop_ns: u64,
        /// The links.
        links: Vec<LinkEntry>,
    },
    /// A k-ary fat tree, every link at `link_bps`.
    FatTree {
        /// k (4: 16 hosts, 20 switches).
        #[serde(default = "default_k")]
        k: u32,
        /// Link rate.
        link_bps: u64,
        /// Propagation delay of every link.
        #[serde(default = "default_prop")]
        prop_ns: u64,
    },
}

impl TopologySpec {
    /// Build the topology.
    pub fn build(&self) -> Result<Topology, SimError> {
        let small = |n: u32, what: &str| {
            if (1..=1024).contains(&n) {
                Ok(())
            } else {
                Err(SimError::Scenario(format!(
                    "{what} = {n}: must be in 1..=1024"
                )))
            }
        };
        Ok(match *self {
            TopologySpec::Incast {
                senders,
                host_bps,
                receiver_bps,
                prop_ns,
            } => {
                small(senders, "senders")?;
                Topology::incast(senders, host_bps, receiver_bps.unwrap_or(host_bps), prop_ns)
            }
            TopologySpec::Dumbbell {
                senders,
                host_bps,
                bottleneck_bps,
                prop_ns,
            } => {
                small(senders, "senders")?;
                Topology::dumbbell(senders, host_bps, bottleneck_bps, prop_ns)
            }
            TopologySpec::Chain {
                switches,
                hosts_per_switch,
                host_bps,
                bottleneck_bps,
                prop_ns,
            } => {
                small(switches, "switches")?;
                small(hosts_per_switch, "hosts_per_switch")?;
                Topology::chain(
                    switches,
                    hosts_per_switch,
                    host_bps,
                    bottleneck_bps,
                    prop_ns,
                )
            }
            TopologySpec::FatTree {
                k,
                link_bps,
                prop_ns,
            } => Topology::fat_tree(k, link_bps, prop_ns)?,
            TopologySpec::Custom {
                hosts,
                switches,
                prop_ns,
                ref links,
            } => {
                small(hosts, "hosts")?;
                small(switches, "switches")?;
                let mut t = Topology::default();
                for i in 0..hosts {
                    t.add_node(format!("h{i}"), NodeKind::Host);
                }
                for i in 0..switches {
                    t.add_node(format!("sw{i}"), NodeKind::Switch);
                }
                for l in links {
                    let node = |n: &str| {
                        t.node_id(n).ok_or_else(|| {
                            SimError::Scenario(format!(
                                "topology.links: no node `{n}` (h0..h{}, sw0..sw{})",
                                hosts - 1,
                                switches - 1
                            ))
                        })
                    };
                    let (a, b) = (node(&l.a)?, node(&l.b)?);
                    t.add_link(a, b, l.rate_bps, l.prop_ns.unwrap_or(prop_ns));
                }
                t
            }
        })
    }
}

/// One link of a `custom` topology.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkEntry {
    /// One end.
    pub a: String,
    /// The other end.
    pub b: String,
    /// Its rate, both ways.
    pub rate_bps: u64,
    /// Its propagation delay (default: the topology's `prop_ns`).
    #[serde(default)]
    pub prop_ns: Option<u64>,
}

/// `[switch]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    /// Shared buffer per switch, bytes.
    #[serde(default = "default_buffer")]
    pub buffer_bytes: u64,
    /// RED/ECN marking (DCQCN-1); default off, except `dcqcn` scenarios, which get the
    /// paper's Kmin 5 KB, Kmax 200 KB, Pmax 1 % when the table is absent.
    #[serde(default)]
    pub red: Option<RedParams>,
    /// RED per egress port rate, `[{ rate_bps, kmin_bytes, kmax_bytes, pmax }, ...]`: ports of
    /// that rate use it instead of `red` (ns-3's KMIN/KMAX/PMAX maps); default none.
    #[serde(default)]
    pub red_by_rate: Vec<RedByRate>,
    /// PFC; default off.
    #[serde(default)]
    pub pfc: Option<PfcSpec>,
    /// INT switch ID of the first switch (12 bits).
    #[serde(default = "default_switch_id")]
    pub switch_id_base: u16,
    /// Added to the clock in every INT `ts`, ns (default 0). The switches' clock is the
    /// captures' time, which starts at 1735689600 s (its ns mod 2^24 = 5_701_632), so an offset
    /// of (2^24 - 5_701_632 - T) mod 2^24 wraps the 24-bit field T ns into the run.
    #[serde(default)]
    pub int_ts_offset_ns: u64,
    /// Added per switch to `int_ts_offset_ns`: switch `i` (sw`i`) runs `i` × this ahead, so
    /// the switches' clocks wrap at different times (default 0).
    #[serde(default)]
    pub int_ts_step_ns: u64,
    /// Start value of every switch port's INT `txBytes` counter, bytes (default 0): near
    /// 134_217_728 (2^20 units of 128 B) it wraps early in the run.
    #[serde(default)]
    pub int_tx_bytes_offset: u64,
    /// Tick of every switch's INT clock, ns: each `ts` is floored to a multiple of it
    /// (default 1, exact; `[switches.NAME]` sets one switch's).
    #[serde(default = "default_resolution")]
    pub int_ts_resolution_ns: u64,
}

fn default_buffer() -> u64 {
    16_000_000
}
fn default_switch_id() -> u16 {
    0x0A1
}

impl Default for SwitchSpec {
    fn default() -> Self {
        SwitchSpec {
            buffer_bytes: default_buffer(),
            red: None,
            red_by_rate: Vec::new(),
            pfc: None,
            switch_id_base: default_switch_id(),
            int_ts_offset_ns: 0,
            int_ts_step_ns: 0,
            int_tx_bytes_offset: 0,
            int_ts_resolution_ns: 1,
        }
    }
}

/// `[switch.pfc]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcSpec {
    /// XOFF threshold on one ingress port's buffered data bytes.
    pub xoff_bytes: u64,
    /// XON threshold.
    pub xon_bytes: u64,
    /// Pause time of an XOFF frame, quanta (default 65535).
    #[serde(default = "default_quanta")]
    pub pause_quanta: u16,
}

fn default_quanta() -> u16 {
    0xFFFF
}

/// `[device]`: the sender NIC of every host, its hardware and its bugs (docs/sim.md "NIC
/// hardware and bugs"). Every key absent is the ideal NIC.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    /// Significant bits of the programmed rate (0 = exact).
    #[serde(default)]
    pub rate_mantissa_bits: u32,
    /// Batch scheduling: frame bytes a flow sends back to back per pacer release (0 = off).
    #[serde(default)]
    pub burst_bytes: u32,
    /// Latency from a sender decision to its effect, ns (0 = at once).
    #[serde(default)]
    pub reaction_ns: u64,
    /// A NIC bug ([`NicBug::NAMES`]).
    #[serde(default)]
    pub bug: Option<String>,
    /// `ignore-cnp`: the window after a CNP in which further CNPs are ignored, ns
    /// (default 100 000).
    #[serde(default)]
    pub ignore_cnp_ns: Option<u64>,
    /// `alpha-gain`: the gain `g` the NIC uses (default 1/16).
    #[serde(default)]
    pub alpha_g: Option<f64>,
}

impl DeviceSpec {
    /// The engine's device for a `model` scenario: the bug named, its keys, and whether it
    /// applies to the model, checked.
    pub fn to_config(&self, cc: &Cc) -> Result<DeviceConfig, SimError> {
        let e = |m: String| SimError::Scenario(m);
        let names = || {
            NicBug::NAMES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let bug = match self.bug.as_deref() {
            None => None,
            Some(name) => Some(NicBug::from_name(name).ok_or_else(|| {
                e(format!(
                    "device.bug = \"{name}\": unknown bug; use one of {}",
                    names()
                ))
            })?),
        };
        let bug = match bug {
            Some(NicBug::IgnoreCnp { .. }) => Some(NicBug::IgnoreCnp {
                ignore_cnp_ns: self.ignore_cnp_ns.unwrap_or(DEFAULT_IGNORE_CNP_NS),
            }),
            Some(NicBug::AlphaGain { .. }) => Some(NicBug::AlphaGain {
                alpha_g: self.alpha_g.unwrap_or(DEFAULT_ALPHA_G),
            }),
            b => b,
        };
        let given = bug.as_ref().map_or("none", NicBug::name);
        if self.ignore_cnp_ns.is_some() && given != "ignore-cnp" {
            return Err(e(format!(
                "device.ignore_cnp_ns is a key of bug = \"ignore-cnp\" (the bug is {given})"
            )));
        }
        if self.alpha_g.is_some() && given != "alpha-gain" {
            return Err(e(format!(
                "device.alpha_g is a key of bug = \"alpha-gain\" (the bug is {given})"
            )));
        }
        let d = DeviceConfig {
            rate_mantissa_bits: self.rate_mantissa_bits,
            burst_bytes: self.burst_bytes,
            reaction_ns: self.reaction_ns,
            bug,
        };
        d.validate(cc).map_err(e)?;
        Ok(d)
    }
}

/// `[switch_device]`: every switch's bugs and INT clock drift (docs/sim.md "Switch bugs and
/// imperfections"). Every key absent is the correct switch.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchDeviceSpec {
    /// A switch bug ([`SwitchBug::NAMES`]).
    #[serde(default)]
    pub bug: Option<String>,
    /// `mark-average-queue`: the EWMA weight (default 1/64).
    #[serde(default)]
    pub avg_weight: Option<f64>,
    /// `xoff-threshold-off`: bytes added to the XOFF threshold (default 20 000).
    #[serde(default)]
    pub xoff_error_bytes: Option<i64>,
    /// Switch `i`'s INT clock runs fast by `i` × this, ppm (default 0).
    #[serde(default)]
    pub clock_drift_ppm: f64,
}

impl SwitchDeviceSpec {
    /// The engine's switch device: the bug named, its keys, and whether it can show in a
    /// `cc` run with (`red`) RED and (`pfc`) PFC, checked.
    pub fn to_config(&self, cc: &Cc, red: bool, pfc: bool) -> Result<SwitchDeviceConfig, SimError> {
        let e = |m: String| SimError::Scenario(m);
        let bug = match self.bug.as_deref() {
            None => None,
            Some(name) => Some(SwitchBug::from_name(name).ok_or_else(|| {
                e(format!(
                    "switch_device.bug = \"{name}\": unknown switch bug; use one of {}",
                    SwitchBug::names()
                ))
            })?),
        };
        let bug = match bug {
            Some(SwitchBug::MarkAverageQueue { .. }) => Some(SwitchBug::MarkAverageQueue {
                avg_weight: self.avg_weight.unwrap_or(DEFAULT_AVG_WEIGHT),
            }),
            Some(SwitchBug::XoffThresholdOff { .. }) => Some(SwitchBug::XoffThresholdOff {
                xoff_error_bytes: self.xoff_error_bytes.unwrap_or(DEFAULT_XOFF_ERROR_BYTES),
            }),
            b => b,
        };
        let given = bug.as_ref().map_or("none", SwitchBug::name);
        if self.avg_weight.is_some() && given != "mark-average-queue" {
            return Err(e(format!(
                "switch_device.avg_weight is a key of bug = \"mark-average-queue\" (the bug is \
                 {given})"
            )));
        }
        if self.xoff_error_bytes.is_some() && given != "xoff-threshold-off" {
            return Err(e(format!(
                "switch_device.xoff_error_bytes is a key of bug = \"xoff-threshold-off\" (the \
                 bug is {given})"
            )));
        }
        let d = SwitchDeviceConfig {
            bug,
            clock_drift_ppm: self.clock_drift_ppm,
        };
        d.validate(cc, red, pfc).map_err(e)?;
        Ok(d)
    }
}

/// One `[[switch_taps]]` entry: captures of a switch port under test (its egress mirror, the
/// frames arriving for it per ingress port) and the switch's configuration.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchTapSpec {
    /// The switch (a switch node's name).
    pub switch: String,
    /// The neighbour the port under test faces: its egress port towards this node.
    pub peer: String,
    /// File stem of `STEM.out.pcap`, `STEM.in.PEER.pcap`, `STEM.toml`, `STEM.switch.toml`
    /// and `STEM.truth.jsonl`.
    pub stem: String,
    /// Each frame is left out of each capture with this probability per million (seeded;
    /// default 0). The truth file keeps every packet.
    #[serde(default)]
    pub drop_ppm: u32,
}

/// One `[[flows]]` entry. `src` may name a range of hosts, `"h0..h15"`: one flow from each.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowEntry {
    /// Sending host, or a range `hA..hB` (inclusive).
    pub src: String,
    /// Receiving host.
    pub dst: String,
    /// Message size, bytes.
    pub size_bytes: u64,
    /// Start, ns.
    #[serde(default)]
    pub start_ns: u64,
    /// First PSN (24 bits); drawn from the seed when absent.
    #[serde(default)]
    pub first_psn: Option<u32>,
}

/// One row of a `flows_file`: a `[[flows]]` entry without a host range.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowRow {
    src: String,
    dst: String,
    size_bytes: u64,
    start_ns: u64,
    #[serde(default)]
    first_psn: Option<u32>,
}

/// Where a tap's manifest says the capture was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TapPoint {
    /// The host's sender models replay the capture.
    Sender,
    /// The host's receiver models replay it.
    Receiver,
}

/// One `[[taps]]` entry: a pcap of everything in and out of a host NIC, and its manifest.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapSpec {
    /// The host.
    pub host: String,
    /// `sender` or `receiver`.
    pub point: TapPoint,
    /// File stem of `STEM.pcap` and `STEM.toml`.
    pub stem: String,
    /// Timestamps are floored to this many ns (default 1); a multiple of 1000 writes a
    /// microsecond pcap.
    #[serde(default = "default_resolution")]
    pub ts_resolution_ns: u64,
    /// Each timestamp gets a seeded uniform offset in `[0, ts_jitter_ns]` before flooring
    /// (default 0), clamped so that the file's times never go back.
    #[serde(default)]
    pub ts_jitter_ns: u64,
    /// Each frame is left out of the capture with this probability per million (seeded;
    /// default 0). Only the capture loses it.
    #[serde(default)]
    pub drop_ppm: u32,
    /// The models the manifest names, in order (default: the scenario model's models for the
    /// tap's point, docs/sim.md). Besides those, a receiver tap of a `dcqcn`, `hpcc`, `fncc`,
    /// `hpcc-ns3` or `dcqcn-ns3` run may name `rcc-receiver`: an RCC receiver fed data that
    /// carry no timestamp shim (RCC choice 5: no delay sample).
    #[serde(default)]
    pub models: Option<Vec<String>>,
    /// The capture arrives as a switch's mirror session delivers it to a collector: each frame
    /// in this encapsulation (docs/wire.md 2.1).
    #[serde(default)]
    pub mirror: Option<TapMirror>,
}

/// `mirror = { kind = "erspan3", session = 5 }` of a `[[taps]]` entry.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapMirror {
    /// `erspan1`, `erspan2`, `erspan3` or `gretap`.
    pub kind: String,
    /// ERSPAN session ID, 0..=1023 (default 0; ERSPAN I and gretap carry none).
    #[serde(default)]
    pub session: u16,
}

impl TapMirror {
    /// The encapsulation named by `kind`.
    pub fn mirror_kind(&self) -> Option<ccreplay_codecs::mirror::MirrorKind> {
        ccreplay_codecs::mirror::MirrorKind::from_name(&self.kind)
    }
}

fn default_resolution() -> u64 {
    1
}

/// The largest `ts_resolution_ns` and `ts_jitter_ns`: 1 s.
const MAX_TAP_NS: u64 = 1_000_000_000;

impl TapSpec {
    /// True when the capture is exact (no imperfection key set).
    pub fn is_exact(&self) -> bool {
        self.ts_resolution_ns == 1 && self.ts_jitter_ns == 0 && self.drop_ppm == 0
    }

    fn check(&self) -> Result<(), SimError> {
        let e = |m: String| Err(SimError::Scenario(format!("tap {}: {m}", self.stem)));
        if !(1..=MAX_TAP_NS).contains(&self.ts_resolution_ns) {
            return e(format!(
                "ts_resolution_ns = {}: must be in 1..=10^9 ns",
                self.ts_resolution_ns
            ));
        }
        if self.ts_jitter_ns > MAX_TAP_NS {
            return e(format!(
                "ts_jitter_ns = {}: must be at most 10^9 ns",
                self.ts_jitter_ns
            ));
        }
        if self.drop_ppm > 1_000_000 {
            return e(format!(
                "drop_ppm = {}: must be at most 1_000_000",
                self.drop_ppm
            ));
        }
        if let Some(m) = &self.mirror {
            if m.mirror_kind().is_none() {
                return e(format!(
                    "mirror.kind = \"{}\": one of erspan1, erspan2, erspan3, gretap",
                    m.kind
                ));
            }
            if m.session > 1023 {
                return e(format!(
                    "mirror.session = {}: ERSPAN sessions are 0..=1023",
                    m.session
                ));
            }
        }
        if let Some(m) = &self.models {
            if m.is_empty() {
                return e("models = []: name at least one model".into());
            }
            if let Some(dup) = m.iter().enumerate().find(|(i, n)| m[..*i].contains(n)) {
                return e(format!("models: `{}` named twice", dup.1));
            }
        }
        Ok(())
    }
}
