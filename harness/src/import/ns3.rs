//! `ccreplay import ns3 CONFIG --out DIR`: the outputs of the ns-3 simulator published with the
//! HPCC paper (GitHub `alibaba-edu/High-Precision-Congestion-Control`, `simulation/`) turned
//! into events files with manifests, one per sending host and one per receiving host.
//!
//! Inputs, as `simulation/scratch/third.cc` reads and writes them:
//! - `config.txt`: `KEY value...` lines (third.cc's `main`), naming the other files;
//! - `topology.txt`: `nodes switches links`, the switch ids, then `src dst rate delay error`
//!   per link;
//! - `flow.txt`: the flow count, then `src dst pg dport size start_s` per flow; the simulator
//!   gives each host *pair*'s flows UDP source ports 10000, 10001, ... in file order
//!   ([`parse_flows`] cites the lines of third.cc);
//! - `trace.txt`: the count, then the traced node ids (ids past the node count are skipped, as
//!   third.cc skips them);
//! - `mix.tr` (`TRACE_OUTPUT_FILE`): the binary trace, a `SimSetting` header (u32 count,
//!   count × (u16 node, u8 intf, u64 bps) packed, u32 win) then 56-byte `TraceFormat` records
//!   (`trace-format.h`, x86-64 layout, little-endian; see [`Record`]).
//!
//! Events, per flow: at the sender, `tx_data` from the host's dequeue records and `rx_ack` /
//! `rx_nak` (+ `rx_cnp` for DCQCN, whose CNP is the ACK's CNP flag) from its receive records; at
//! the receiver, `rx_data` from its receive records. ns-3 sequence numbers are byte offsets:
//! PSN = seq / PACKET_PAYLOAD_SIZE; an ACK of next-expected byte E acknowledges PSN
//! ceil(E / mtu) − 1, a NAK names PSN E / mtu (the convention of the models, HPCC-7).
//!
//! HPCC INT (CC_MODE 3) is not in the trace: it is rebuilt from each switch port's records the
//! way `switch-node.cc` `SwitchNotifyDequeue` stamps it — time of the dequeue, the port's bytes
//! dequeued before this packet (every packet's `size`, from the start of the run), the port's
//! queue bytes over all classes after the dequeue (each class's bytes are tracked from its
//! enqueue records, `qlen + size`, and dequeue records, `qlen`), and the port's rate — in the
//! simulator's units (`IntHop::Set`: bytes / (128 × INT_MULTI), qlen / (80 × INT_MULTI)). The
//! receiver copies the data packet's INT into the ACK it sends (`rdma-hw.cc` `ReceiveUdp`);
//! that ACK carries it to the sender. An ACK whose INT could not be rebuilt (a switch on the
//! path not traced, a record missing) is written without `int` and counted in the report.
//!
//! When every frame can be made from a file's events (DCQCN; HPCC with no ACK lacking its INT),
//! the same events are also written as a pcap with its own manifest ([`super::pcap`]).
//!
//! Nothing is lost silently ([`accounting`]): every record made events, rebuilt INT, or is
//! counted as ignored by [`IgnoreReason`]; a flow of the flow file without any event, a trace
//! list naming no host and a `mix.tr` without records are errors
//! ([`ImportError::Incomplete`]), and then nothing is written — every output file is staged
//! and renamed into place only once all of them are complete.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use ccreplay_codecs::Dialect;
use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::{Event, EventKind};

use super::ImportError;
use super::pcap::{PcapFlow, stage_pcap};
use crate::manifest::{CapturePoint, FlowSpec, IntSection, Manifest, ModelSpec, Network, Source};
use crate::protocol;

pub mod accounting;
use accounting::{Evidence, PortMiss};
pub use accounting::{IgnoreReason, RecordAccount};

/// Size of one `TraceFormat` record.
pub const RECORD_BYTES: usize = 56;
/// First UDP source port of each host pair's flows (third.cc: `portNumder[i][j] = 10000`).
pub const FIRST_SPORT: u16 = 10000;
/// third.cc's default `simulator_stop_time`, s.
const DEFAULT_STOP_S: f64 = 3.01;
/// The RDMA WRITE opcode of a data packet at byte `seq` with `payload` bytes of a message of
/// `size` bytes (ns-3 has no BTH: the position in the message decides).
fn write_opcode(seq: u64, payload: u64, size: u64) -> u8 {
    use ccreplay_codecs::ib::Opcode;
    match (seq == 0, seq + payload >= size) {
        (true, true) => Opcode::RC_WRITE_ONLY.0,
        (true, false) => Opcode::RC_WRITE_FIRST.0,
        (false, true) => Opcode::RC_WRITE_LAST.0,
        (false, false) => Opcode::RC_WRITE_MIDDLE.0,
    }
}

/// The 24-bit PSN of the packet at byte `seq` (one PSN per `mtu` bytes).
fn psn_of(seq: u64, mtu: u64) -> u32 {
    ((seq / mtu) & 0xFF_FFFF) as u32
}
/// AETH syndromes: ACK (credit field 0x1F), NAK PSN sequence error.
const SYNDROME_ACK: u8 = 0x1F;
const SYNDROME_NAK: u8 = 0x60;
/// `qbbHeader::FLAG_CNP` = bit 0 of the ACK's flags.
const FLAG_CNP: u16 = 1;
/// `IntHeader::maxHop`.
const MAX_HOPS: usize = 5;
/// ACKs waiting at most for their INT binding per flow.
const ACK_QUEUE: usize = 4096;

// ---------------------------------------------------------------------------------------------
// Text inputs

/// One whitespace-separated token and its line.
struct Tok {
    text: String,
    line: u64,
}

fn read_text(path: &Path) -> Result<String, ImportError> {
    std::fs::read_to_string(path).map_err(|source| ImportError::Io {
        path: path.into(),
        source,
    })
}

fn tokens(text: &str) -> Vec<Tok> {
    let mut v = Vec::new();
    for (i, l) in text.lines().enumerate() {
        for t in l.split_whitespace() {
            v.push(Tok {
                text: t.to_string(),
                line: i as u64 + 1,
            });
        }
    }
    v
}

/// A sequential reader of tokens that reports the file and line of a bad or missing one.
struct Toks<'a> {
    path: &'a Path,
    toks: Vec<Tok>,
    at: usize,
}

impl<'a> Toks<'a> {
    fn new(path: &'a Path, text: &str) -> Self {
        Toks {
            path,
            toks: tokens(text),
            at: 0,
        }
    }

    fn bad(&self, line: u64, message: String) -> ImportError {
        ImportError::Line {
            path: self.path.into(),
            line,
            message,
        }
    }

    fn next(&mut self, what: &str) -> Result<&Tok, ImportError> {
        if self.at >= self.toks.len() {
            let line = self.toks.last().map_or(1, |t| t.line);
            return Err(self.bad(line, format!("file ends before {what}")));
        }
        self.at += 1;
        Ok(&self.toks[self.at - 1])
    }

    fn parse<T: std::str::FromStr>(&mut self, what: &str) -> Result<T, ImportError> {
        let t = self.next(what)?;
        let (text, line) = (t.text.clone(), t.line);
        text.parse()
            .map_err(|_| self.bad(line, format!("{what}: `{text}` is not a valid number")))
    }

    fn line(&self) -> u64 {
        self.toks
            .get(self.at.saturating_sub(1))
            .map_or(1, |t| t.line)
    }
}

/// An ns-3 `DataRate` string (`100Gbps`, `50Mb/s`, `1.5GBps`) in bit/s.
pub fn parse_rate(s: &str) -> Option<u64> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let (unit, per_s) = if let Some(u) = unit.strip_suffix("ps") {
        (u, true)
    } else if let Some(u) = unit.strip_suffix("/s") {
        (u, true)
    } else {
        (unit, false)
    };
    if !per_s {
        return None;
    }
    let (unit, bits) = if let Some(u) = unit.strip_suffix('b') {
        (u, 1.0)
    } else if let Some(u) = unit.strip_suffix('B') {
        (u, 8.0)
    } else {
        return None;
    };
    let scale = match unit {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bps = (v * scale * bits).round();
    (0.0..9.0e18).contains(&bps).then_some(bps as u64)
}

/// An ns-3 `Time` string (`0.001ms`, `1us`, `500ns`, `2s`) in ns.
pub fn parse_time_ns(s: &str) -> Option<u64> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let scale = match unit {
        "s" | "" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        _ => return None,
    };
    let ns = (v * scale).round();
    (0.0..9.0e18).contains(&ns).then_some(ns as u64)
}

/// How many values a config key takes and of which kind (third.cc's `main`).
#[derive(Clone, Copy)]
enum Kind {
    Uint,
    Float,
    Rate,
    Text,
    /// LINK_DOWN: three unsigned integers.
    Uint3,
    /// KMAX_MAP / KMIN_MAP: n, then n × (rate, unsigned).
    MapUint,
    /// PMAX_MAP: n, then n × (rate, float).
    MapFloat,
}

const KEYS: &[(&str, Kind)] = &[
    ("ENABLE_QCN", Kind::Uint),
    ("USE_DYNAMIC_PFC_THRESHOLD", Kind::Uint),
    ("CLAMP_TARGET_RATE", Kind::Uint),
    ("PAUSE_TIME", Kind::Float),
    ("DATA_RATE", Kind::Text),
    ("LINK_DELAY", Kind::Text),
    ("PACKET_PAYLOAD_SIZE", Kind::Uint),
    ("L2_CHUNK_SIZE", Kind::Uint),
    ("L2_ACK_INTERVAL", Kind::Uint),
    ("L2_BACK_TO_ZERO", Kind::Uint),
    ("TOPOLOGY_FILE", Kind::Text),
    ("FLOW_FILE", Kind::Text),
    ("TRACE_FILE", Kind::Text),
    ("TRACE_OUTPUT_FILE", Kind::Text),
    ("SIMULATOR_STOP_TIME", Kind::Float),
    ("ALPHA_RESUME_INTERVAL", Kind::Float),
    ("RP_TIMER", Kind::Float),
    ("EWMA_GAIN", Kind::Float),
    ("FAST_RECOVERY_TIMES", Kind::Uint),
    ("RATE_AI", Kind::Rate),
    ("RATE_HAI", Kind::Rate),
    ("ERROR_RATE_PER_LINK", Kind::Float),
    ("CC_MODE", Kind::Uint),
    ("RATE_DECREASE_INTERVAL", Kind::Float),
    ("MIN_RATE", Kind::Rate),
    ("FCT_OUTPUT_FILE", Kind::Text),
    ("HAS_WIN", Kind::Uint),
    ("GLOBAL_T", Kind::Uint),
    ("MI_THRESH", Kind::Uint),
    ("VAR_WIN", Kind::Uint),
    ("FAST_REACT", Kind::Uint),
    ("U_TARGET", Kind::Float),
    ("INT_MULTI", Kind::Uint),
    ("RATE_BOUND", Kind::Uint),
    ("ACK_HIGH_PRIO", Kind::Uint),
    ("DCTCP_RATE_AI", Kind::Rate),
    ("PFC_OUTPUT_FILE", Kind::Text),
    ("LINK_DOWN", Kind::Uint3),
    ("ENABLE_TRACE", Kind::Uint),
    ("KMAX_MAP", Kind::MapUint),
    ("KMIN_MAP", Kind::MapUint),
    ("PMAX_MAP", Kind::MapFloat),
    ("BUFFER_SIZE", Kind::Uint),
    ("QLEN_MON_FILE", Kind::Text),
    ("QLEN_MON_START", Kind::Uint),
    ("QLEN_MON_END", Kind::Uint),
    ("MULTI_RATE", Kind::Uint),
    ("SAMPLE_FEEDBACK", Kind::Uint),
    ("PINT_LOG_BASE", Kind::Float),
    ("PINT_PROB", Kind::Float),
];

/// A parsed `config.txt`: every known key's values (checked against their kind), and the keys
/// the simulator would ignore.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The file.
    pub path: PathBuf,
    values: HashMap<String, Vec<String>>,
    /// Unknown keys with their lines (third.cc skips them; reported as warnings).
    pub unknown: Vec<(u64, String)>,
}

impl Config {
    /// Parse config text; `path` names the file in errors. One `KEY value...` per line; blank
    /// lines and lines starting with `#` are skipped.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ImportError> {
        let mut c = Config {
            path: path.into(),
            ..Config::default()
        };
        for (i, l) in text.lines().enumerate() {
            let line = i as u64 + 1;
            let bad = |message: String| ImportError::Line {
                path: path.into(),
                line,
                message,
            };
            let mut it = l.split_whitespace();
            let Some(key) = it.next() else { continue };
            if key.starts_with('#') {
                continue;
            }
            let vals: Vec<&str> = it.collect();
            let Some(&(_, kind)) = KEYS.iter().find(|(k, _)| *k == key) else {
                c.unknown.push((line, key.to_string()));
                continue;
            };
            let want = match kind {
                Kind::Uint3 => 3,
                Kind::MapUint | Kind::MapFloat => {
                    let n: usize = vals
                        .first()
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| bad(format!("{key}: expected the number of entries")))?;
                    n.checked_mul(2)
                        .and_then(|x| x.checked_add(1))
                        .unwrap_or(usize::MAX)
                }
                _ => 1,
            };
            if vals.len() != want {
                return Err(bad(format!(
                    "{key}: expected {want} value{}, found {}",
                    if want == 1 { "" } else { "s" },
                    vals.len()
                )));
            }
            let check = |v: &str, k: Kind| -> Result<(), ImportError> {
                let ok = match k {
                    Kind::Uint | Kind::Uint3 => v.parse::<u64>().is_ok(),
                    Kind::Float => v.parse::<f64>().is_ok_and(f64::is_finite),
                    Kind::Rate => parse_rate(v).is_some(),
                    _ => true,
                };
                if ok {
                    Ok(())
                } else {
                    Err(bad(format!("{key}: `{v}` is not a valid {}", kind_name(k))))
                }
            };
            match kind {
                Kind::MapUint | Kind::MapFloat => {
                    for pair in vals[1..].chunks(2) {
                        check(pair[0], Kind::Uint)?;
                        check(
                            pair[1],
                            if matches!(kind, Kind::MapUint) {
                                Kind::Uint
                            } else {
                                Kind::Float
                            },
                        )?;
                    }
                }
                k => {
                    for v in &vals {
                        check(v, k)?;
                    }
                }
            }
            c.values.insert(
                key.to_string(),
                vals.iter().map(|s| s.to_string()).collect(),
            );
        }
        Ok(c)
    }

    /// Read and parse a config file.
    pub fn load(path: &Path) -> Result<Config, ImportError> {
        Self::parse(&read_text(path)?, path)
    }

    fn first(&self, key: &str) -> Option<&str> {
        self.values
            .get(key)
            .and_then(|v| v.first())
            .map(String::as_str)
    }

    /// An unsigned key (checked at parse time).
    pub fn uint(&self, key: &str) -> Option<u64> {
        self.first(key).and_then(|v| v.parse().ok())
    }

    /// A float key.
    pub fn float(&self, key: &str) -> Option<f64> {
        self.first(key).and_then(|v| v.parse().ok())
    }

    /// A rate key in bit/s.
    pub fn rate_bps(&self, key: &str) -> Option<u64> {
        self.first(key).and_then(parse_rate)
    }

    /// A text key.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.first(key)
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Uint | Kind::Uint3 | Kind::MapUint => "unsigned integer",
        Kind::Float | Kind::MapFloat => "number",
        Kind::Rate => "ns-3 DataRate (e.g. 50Mb/s, 100Gbps)",
        Kind::Text => "value",
    }
}

/// One link of the topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// Node ids.
    pub a: u32,
    /// Node ids.
    pub b: u32,
    /// Rate, bit/s.
    pub rate_bps: u64,
    /// Propagation delay, ns.
    pub delay_ns: u64,
}

/// `topology.txt`.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    /// Node count.
    pub nodes: u32,
    /// `is_switch[i]`.
    pub is_switch: Vec<bool>,
    /// Links in file order (a node's interfaces are numbered from 1 in this order, as
    /// `QbbHelper::Install` adds devices).
    pub links: Vec<Link>,
    /// Per node: (neighbour, rate, delay) in link order.
    adj: Vec<Vec<(u32, u64, u64)>>,
}

impl Topology {
    /// Parse topology text.
    pub fn parse(text: &str, path: &Path) -> Result<Topology, ImportError> {
        let mut t = Toks::new(path, text);
        let nodes: u32 = t.parse("the node count")?;
        let switches: u32 = t.parse("the switch count")?;
        let links: u32 = t.parse("the link count")?;
        if nodes > 1 << 16 {
            return Err(t.bad(t.line(), format!("{nodes} nodes: at most 65536")));
        }
        let mut is_switch = vec![false; nodes as usize];
        for _ in 0..switches {
            let s: u32 = t.parse("a switch id")?;
            if s >= nodes {
                return Err(t.bad(t.line(), format!("switch id {s} >= node count {nodes}")));
            }
            is_switch[s as usize] = true;
        }
        let mut v = Vec::new();
        for _ in 0..links {
            let a: u32 = t.parse("a link's first node")?;
            let b: u32 = t.parse("a link's second node")?;
            let rate = t.next("a link's rate")?;
            let (rate_text, line) = (rate.text.clone(), rate.line);
            let rate_bps = parse_rate(&rate_text).filter(|&r| r > 0).ok_or_else(|| {
                t.bad(
                    line,
                    format!("link rate `{rate_text}` is not an ns-3 DataRate"),
                )
            })?;
            let delay = t.next("a link's delay")?;
            let (delay_text, line) = (delay.text.clone(), delay.line);
            let delay_ns = parse_time_ns(&delay_text)
                .ok_or_else(|| t.bad(line, format!("link delay `{delay_text}` is not a time")))?;
            let _error_rate: f64 = t.parse("a link's error rate")?;
            if a >= nodes || b >= nodes {
                return Err(t.bad(line, format!("link {a}-{b}: node id >= {nodes}")));
            }
            v.push(Link {
                a,
                b,
                rate_bps,
                delay_ns,
            });
        }
        let mut adj = vec![Vec::new(); nodes as usize];
        for l in &v {
            adj[l.a as usize].push((l.b, l.rate_bps, l.delay_ns));
            adj[l.b as usize].push((l.a, l.rate_bps, l.delay_ns));
        }
        Ok(Topology {
            nodes,
            is_switch,
            links: v,
            adj,
        })
    }

    /// Neighbours of `n`: (node, rate, delay), in link order.
    fn neighbours(&self, n: u32) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        self.adj.get(n as usize).into_iter().flatten().copied()
    }

    /// The rate of a host's NIC (its first link), bit/s.
    pub fn nic_rate_bps(&self, host: u32) -> Option<u64> {
        self.neighbours(host).next().map(|x| x.1)
    }

    /// third.cc `CalculateRoute` from `src`: BFS through switches; for each node reached, its
    /// hop count, summed delay, summed per-hop transmission delay of one `mtu` packet
    /// (`mtu × 8e9 / bw`, integer), and smallest link rate — first path found, links in file
    /// order.
    pub fn paths_from(&self, src: u32, mtu: u64) -> Vec<Option<PathInfo>> {
        let mut out: Vec<Option<PathInfo>> = vec![None; self.nodes as usize];
        out[src as usize] = Some(PathInfo {
            hops: 0,
            delay_ns: 0,
            tx_delay_ns: 0,
            bw_bps: u64::MAX,
        });
        let mut q = vec![src];
        let mut i = 0;
        while i < q.len() {
            let now = q[i];
            i += 1;
            let Some(p) = out[now as usize] else { continue };
            for (next, rate, delay) in self.neighbours(now) {
                if out[next as usize].is_some() {
                    continue;
                }
                out[next as usize] = Some(PathInfo {
                    hops: p.hops + 1,
                    delay_ns: p.delay_ns.saturating_add(delay),
                    tx_delay_ns: p
                        .tx_delay_ns
                        .saturating_add(mtu.saturating_mul(8_000_000_000) / rate),
                    bw_bps: p.bw_bps.min(rate),
                });
                // Only switches forward (hosts are never a middle point).
                if self.is_switch[next as usize] {
                    q.push(next);
                }
            }
        }
        out
    }
}

/// A path found by [`Topology::paths_from`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathInfo {
    /// Links on the path.
    pub hops: u32,
    /// Summed propagation delay, ns.
    pub delay_ns: u64,
    /// Summed transmission delay of one MTU packet, ns.
    pub tx_delay_ns: u64,
    /// Smallest link rate, bit/s.
    pub bw_bps: u64,
}

impl PathInfo {
    /// third.cc: `rtt = delay × 2 + txDelay`.
    pub fn rtt_ns(&self) -> u64 {
        self.delay_ns
            .saturating_mul(2)
            .saturating_add(self.tx_delay_ns)
    }
    /// third.cc: `bdp = rtt × bw / 1e9 / 8` (integer).
    pub fn bdp_bytes(&self) -> u64 {
        ((self.rtt_ns() as u128 * self.bw_bps as u128) / 1_000_000_000 / 8) as u64
    }
}

/// One flow of `flow.txt`.
#[derive(Clone, Debug, PartialEq)]
pub struct Flow {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Priority group.
    pub pg: u32,
    /// Destination UDP port.
    pub dport: u16,
    /// UDP source port the simulator gave it: 10000 + the flow's rank among the flows of its
    /// (source, destination) pair, in file order, modulo 2^16 ([`parse_flows`]).
    pub sport: u16,
    /// Message size, bytes.
    pub size_bytes: u64,
    /// Start time, s.
    pub start_s: f64,
    /// Line of the flow file.
    pub line: u64,
}

/// Parse `flow.txt`; hosts must be hosts of `topo`.
///
/// Source ports are numbered as the simulator numbers them, per (source, destination) host
/// pair — `simulation/scratch/third.cc` of alibaba-edu/High-Precision-Congestion-Control
/// (commit 9f4be2a):
///
/// ```text
/// 118 // maintain port number for each host pair
/// 119 std::unordered_map<uint32_t, unordered_map<uint32_t, uint16_t> > portNumder;
/// 137     uint32_t port = portNumder[flow_input.src][flow_input.dst]++; // get a new port number
/// 983 // maintain port number for each host
/// 988     portNumder[i][j] = 10000; // each host pair use port number from 10000
/// ```
///
/// Line 137 runs in `ScheduleFlowInputs`, which takes the flows in file order, so the k-th flow
/// (from 0) of a pair gets 10000 + k; the counter is a `uint16_t`, so it wraps to 0 after
/// 65535 as the simulator's does. Two flows of one pair that end up with the same source port
/// (65536 flows apart) cannot be told apart in `mix.tr`: that is an error.
pub fn parse_flows(text: &str, path: &Path, topo: &Topology) -> Result<Vec<Flow>, ImportError> {
    let mut t = Toks::new(path, text);
    let n: u32 = t.parse("the flow count")?;
    let mut next_port: HashMap<(u32, u32), u16> = HashMap::new();
    let mut taken: HashMap<(u32, u32, u16), u64> = HashMap::new();
    let mut v = Vec::new();
    for _ in 0..n {
        let src: u32 = t.parse("a flow's source node")?;
        let dst: u32 = t.parse("a flow's destination node")?;
        let pg: u32 = t.parse("a flow's priority group")?;
        let dport: u16 = t.parse("a flow's destination port")?;
        let size_bytes: u64 = t.parse("a flow's size")?;
        let start_s: f64 = t.parse("a flow's start time")?;
        let line = t.line();
        for h in [src, dst] {
            if h >= topo.nodes || topo.is_switch[h as usize] {
                return Err(t.bad(line, format!("node {h} is not a host of the topology")));
            }
        }
        if !start_s.is_finite() || start_s < 0.0 {
            return Err(t.bad(line, format!("start time {start_s} s is not a time")));
        }
        let port = next_port.entry((src, dst)).or_insert(FIRST_SPORT);
        let sport = *port;
        *port = port.wrapping_add(1);
        if let Some(first) = taken.insert((src, dst, sport), line) {
            return Err(t.bad(
                line,
                format!(
                    "host {src} -> host {dst}: this flow gets UDP source port {sport} like the \
                     flow of line {first} (third.cc's 16-bit port counter of the pair wrapped), \
                     so mix.tr cannot tell their packets apart"
                ),
            ));
        }
        v.push(Flow {
            src,
            dst,
            pg,
            dport,
            sport,
            size_bytes,
            start_s,
            line,
        });
    }
    Ok(v)
}

/// Parse `trace.txt` (the traced node ids, as written: see [`traced_hosts`]).
pub fn parse_trace_list(text: &str, path: &Path) -> Result<Vec<u32>, ImportError> {
    let mut t = Toks::new(path, text);
    let n: u32 = t.parse("the node count")?;
    (0..n).map(|_| t.parse("a node id")).collect()
}

/// The hosts a trace list makes the simulator trace: its ids below the node count (third.cc
/// skips the others: `if (nid >= n.GetN()) continue;`) that are not switches, sorted.
pub fn traced_hosts(list: &[u32], topo: &Topology) -> Vec<u32> {
    let mut v: Vec<u32> = list
        .iter()
        .copied()
        .filter(|&n| n < topo.nodes && !topo.is_switch[n as usize])
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// third.cc `node_id_to_ip`: 11.x.y.1.
pub fn node_ip(id: u32) -> u32 {
    0x0b00_0001 + (id / 256) * 0x0001_0000 + (id % 256) * 0x0000_0100
}

// ---------------------------------------------------------------------------------------------
// mix.tr

/// ns-3 `enum Event`.
pub const EV_RECV: u8 = 0;
/// Enqueue.
pub const EV_ENQU: u8 = 1;
/// Dequeue.
pub const EV_DEQU: u8 = 2;
/// Drop.
pub const EV_DROP: u8 = 3;

/// One `TraceFormat` record (trace-format.h), decoded from its 56 bytes:
/// `u64 time @0, u16 node @8, u8 intf @10, u8 qidx @11, u32 qlen @12, u32 sip @16,
/// u32 dip @20, u16 size @24, u8 l3Prot @26, u8 event @27, u8 ecn @28, u8 nodeType @29`, two
/// bytes of padding, then the union at 32 (8-aligned): data `u16 sport, u16 dport, u32 seq,
/// u64 ts, u16 pg, u16 payload`; ack `u16 sport, u16 dport, u16 flags, u16 pg, u32 seq, (4
/// bytes padding) u64 ts`; cnp `u16 fid, u8 qIndex, u8 ecnBits, u16 qfb, u16 total`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// ns.
    pub time: u64,
    /// Node id.
    pub node: u16,
    /// Interface (device index, from 1).
    pub intf: u8,
    /// Queue (priority class).
    pub qidx: u8,
    /// Bytes in that class of the port's queue (after a dequeue, before an enqueue).
    pub qlen: u32,
    /// IPs.
    pub sip: u32,
    /// IPs.
    pub dip: u32,
    /// Packet bytes (PPP + IP + ...).
    pub size: u16,
    /// 0x11 data, 0xFC ACK, 0xFD NACK, 0xFE PFC, 0xFF CNP.
    pub l3: u8,
    /// [`EV_RECV`] ...
    pub event: u8,
    /// IP ECN bits.
    pub ecn: u8,
    /// 0 host, 1 switch.
    pub node_type: u8,
    /// data/ack sport; cnp fid.
    pub sport: u16,
    /// data/ack dport.
    pub dport: u16,
    /// data or ack seq (bytes).
    pub seq: u32,
    /// ack flags.
    pub flags: u16,
    /// data payload bytes.
    pub payload: u16,
}

impl Record {
    /// Decode a record.
    pub fn decode(b: &[u8; RECORD_BYTES]) -> Record {
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let mut t = [0u8; 8];
        t.copy_from_slice(&b[0..8]);
        let l3 = b[26];
        let (seq, flags, payload) = match l3 {
            0xFC | 0xFD => (u32_at(40), u16_at(36), 0),
            0x11 | 0x06 => (u32_at(36), 0, u16_at(50)),
            _ => (0, 0, 0),
        };
        Record {
            time: u64::from_le_bytes(t),
            node: u16_at(8),
            intf: b[10],
            qidx: b[11],
            qlen: u32_at(12),
            sip: u32_at(16),
            dip: u32_at(20),
            size: u16_at(24),
            l3,
            event: b[27],
            ecn: b[28],
            node_type: b[29],
            sport: u16_at(32),
            dport: u16_at(34),
            seq,
            flags,
            payload,
        }
    }
}

/// The `SimSetting` header of `mix.tr`.
#[derive(Clone, Debug, Default)]
pub struct SimSetting {
    /// (node, intf) → port rate, bit/s.
    pub port_speed: HashMap<(u16, u8), u64>,
    /// Window bound (maxBdp), bytes.
    pub win: u32,
}

fn read_exact_or(
    r: &mut impl Read,
    buf: &mut [u8],
    path: &Path,
    offset: u64,
    what: &str,
) -> Result<(), ImportError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(ImportError::Binary {
                    path: path.into(),
                    offset,
                    message: format!(
                        "{what} truncated: needs {} bytes, the file ends after {got}",
                        buf.len()
                    ),
                });
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(ImportError::Io {
                    path: path.into(),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Read the header; returns it and its length in bytes.
fn read_header(r: &mut impl Read, path: &Path) -> Result<(SimSetting, u64), ImportError> {
    let mut b4 = [0u8; 4];
    read_exact_or(r, &mut b4, path, 0, "SimSetting header (port count)")?;
    let n = u32::from_le_bytes(b4);
    if n > 1 << 24 {
        return Err(ImportError::Binary {
            path: path.into(),
            offset: 0,
            message: format!("SimSetting lists {n} ports: not an ns-3 mix.tr"),
        });
    }
    let mut s = SimSetting::default();
    let mut off = 4u64;
    let mut e = [0u8; 11];
    for _ in 0..n {
        read_exact_or(r, &mut e, path, off, "SimSetting port entry")?;
        let node = u16::from_le_bytes([e[0], e[1]]);
        let mut bps = [0u8; 8];
        bps.copy_from_slice(&e[3..11]);
        s.port_speed.insert((node, e[2]), u64::from_le_bytes(bps));
        off += 11;
    }
    read_exact_or(r, &mut b4, path, off, "SimSetting window")?;
    s.win = u32::from_le_bytes(b4);
    Ok((s, off + 4))
}

/// Read the next record: `Ok(None)` at a clean end of file; a partial record is an error.
fn next_record(
    r: &mut impl Read,
    buf: &mut [u8; RECORD_BYTES],
    path: &Path,
    offset: u64,
) -> Result<Option<Record>, ImportError> {
    let mut got = 0;
    while got < RECORD_BYTES {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => {
                return Err(ImportError::Binary {
                    path: path.into(),
                    offset,
                    message: format!(
                        "record truncated: {got} of {RECORD_BYTES} bytes before the end of the file"
                    ),
                });
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(ImportError::Io {
                    path: path.into(),
                    source,
                });
            }
        }
    }
    let rec = Record::decode(buf);
    if rec.event > EV_DROP {
        return Err(ImportError::Binary {
            path: path.into(),
            offset,
            message: format!(
                "unknown event type {} (expected 0 Recv, 1 Enqu, 2 Dequ, 3 Drop)",
                rec.event
            ),
        });
    }
    if rec.node_type > 1 {
        return Err(ImportError::Binary {
            path: path.into(),
            offset,
            message: format!(
                "unknown node type {} (expected 0 host, 1 switch)",
                rec.node_type
            ),
        });
    }
    Ok(Some(rec))
}

// ---------------------------------------------------------------------------------------------
// The import

/// Options of an import.
#[derive(Clone, Debug)]
pub struct Options {
    /// `config.txt`.
    pub config: PathBuf,
    /// Output folder.
    pub out: PathBuf,
    /// Read this `mix.tr` instead of the config's `TRACE_OUTPUT_FILE`.
    pub mix: Option<PathBuf>,
}

/// What an import wrote and what it could not rebuild.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Files written (events files and manifests), sorted.
    pub written: Vec<PathBuf>,
    /// Records read.
    pub records: u64,
    /// Events written.
    pub events: u64,
    /// What became of the records: made events, rebuilt INT, ignored (by reason). The three
    /// add up to [`Summary::records`].
    pub account: RecordAccount,
    /// HPCC: ACKs (and NAKs) written with their rebuilt INT.
    pub acks_with_int: u64,
    /// HPCC: ACKs written without INT, because it could not be rebuilt.
    pub acks_without_int: u64,
    /// Events files also written as a pcap with its manifest (`<stem>_capture.pcap`).
    pub pcaps: u64,
    /// Warnings (unknown config keys, parameters the simulator left unset, ...).
    pub warnings: Vec<String>,
}

/// The path of a file the config names: beside the config if it exists there (by its path or
/// its file name), else as given (relative to the current directory, as the simulator reads
/// it).
fn resolve(config: &Path, name: &str) -> PathBuf {
    let dir = config.parent().unwrap_or(Path::new("."));
    let given = Path::new(name);
    if given.is_absolute() {
        return given.into();
    }
    let beside = dir.join(given);
    if beside.exists() {
        return beside;
    }
    if let Some(f) = given.file_name() {
        let by_name = dir.join(f);
        if by_name.exists() {
            return by_name;
        }
    }
    given.into()
}

fn need<'a>(cfg: &'a Config, key: &str) -> Result<&'a str, ImportError> {
    cfg.text(key).ok_or_else(|| {
        ImportError::Unsupported(format!(
            "{}: no {key} line (the simulator needs it)",
            cfg.path.display()
        ))
    })
}

fn model_available(name: &str) -> bool {
    crate::models::MODELS.iter().any(|m| m.0 == name)
}

fn int_value(v: u64) -> toml::Value {
    toml::Value::Integer(v.min(i64::MAX as u64) as i64)
}

/// The models of a sender manifest and their parameters: the ns-3 profile (when built into
/// this binary) with the values the simulator used — the config's, else third.cc's default —
/// and the paper profile with the parameters that map one to one.
fn sender_models(
    cfg: &Config,
    cc_mode: u64,
    win_bytes: u64,
    warnings: &mut Vec<String>,
) -> Vec<ModelSpec> {
    let mut models = Vec::new();
    let mut t = toml::Table::new();
    let put_u = |t: &mut toml::Table, key: &str, default: Option<u64>| {
        if let Some(v) = cfg.uint(key).or(default) {
            t.insert(key.into(), int_value(v));
        }
    };
    if cc_mode == 3 {
        put_u(&mut t, "MI_THRESH", Some(5));
        put_u(&mut t, "MULTI_RATE", Some(1));
        put_u(&mut t, "FAST_REACT", Some(1));
        put_u(&mut t, "INT_MULTI", Some(1));
        put_u(&mut t, "VAR_WIN", Some(0));
        put_u(&mut t, "HAS_WIN", Some(1));
        put_u(&mut t, "SAMPLE_FEEDBACK", Some(0));
        t.insert(
            "U_TARGET".into(),
            toml::Value::Float(cfg.float("U_TARGET").unwrap_or(0.95)),
        );
        t.insert(
            "MIN_RATE".into(),
            int_value(cfg.rate_bps("MIN_RATE").unwrap_or(100_000_000)),
        );
        match cfg.rate_bps("RATE_AI") {
            Some(r) => {
                t.insert("RATE_AI".into(), int_value(r));
            }
            None => warnings.push(
                "RATE_AI is not in the config (third.cc has no default): the model's default is used"
                    .into(),
            ),
        }
        t.insert("win_bytes".into(), int_value(win_bytes));
        if cfg.uint("HAS_WIN") == Some(0) {
            warnings.push(
                "HAS_WIN 0: hpcc-ns3 rejects a window of 0 (the simulator divides by it); only \
                 the paper profile `hpcc` is named"
                    .into(),
            );
        } else if model_available("hpcc-ns3") {
            models.push(ModelSpec {
                name: "hpcc-ns3".into(),
                params: t,
            });
        } else {
            warnings.push(
                "model hpcc-ns3 is not built into this ccreplay: only `hpcc` is named".into(),
            );
        }
        let mut p = toml::Table::new();
        p.insert(
            "eta".into(),
            toml::Value::Float(cfg.float("U_TARGET").unwrap_or(0.95)),
        );
        p.insert(
            "max_stage".into(),
            int_value(cfg.uint("MI_THRESH").unwrap_or(5)),
        );
        models.push(ModelSpec {
            name: "hpcc".into(),
            params: p,
        });
    } else {
        let mut put_f = |t: &mut toml::Table, key: &str, default: Option<f64>| {
            if let Some(v) = cfg.float(key).or(default) {
                t.insert(key.into(), toml::Value::Float(v));
            } else {
                warnings.push(format!(
                    "{key} is not in the config and third.cc leaves it unset: the model's default is used"
                ));
            }
        };
        put_f(&mut t, "ALPHA_RESUME_INTERVAL", Some(55.0));
        put_f(&mut t, "RATE_DECREASE_INTERVAL", Some(4.0));
        put_f(&mut t, "RP_TIMER", None);
        // third.cc's `ewma_gain = 1 / 16` is integer division: 0.
        put_f(&mut t, "EWMA_GAIN", Some(0.0));
        put_u(&mut t, "FAST_RECOVERY_TIMES", Some(5));
        put_u(&mut t, "CLAMP_TARGET_RATE", Some(0));
        for (key, default) in [
            ("RATE_AI", None),
            ("RATE_HAI", None),
            ("MIN_RATE", Some(100_000_000)),
        ] {
            match cfg.rate_bps(key).or(default) {
                Some(v) => {
                    t.insert(key.into(), int_value(v));
                }
                None => warnings.push(format!(
                    "{key} is not in the config (third.cc has no default): the model's default is used"
                )),
            }
        }
        if model_available("dcqcn-ns3") {
            models.push(ModelSpec {
                name: "dcqcn-ns3".into(),
                params: t,
            });
        } else {
            warnings.push(
                "model dcqcn-ns3 is not built into this ccreplay: only `dcqcn` is named".into(),
            );
        }
        // The paper profile: rates in whole Mbps, F in stages.
        let mut p = toml::Table::new();
        if let Some(f) = cfg.uint("FAST_RECOVERY_TIMES") {
            p.insert("rpg_threshold".into(), int_value(f));
        }
        for (key, name) in [
            ("RATE_AI", "rpg_ai_rate"),
            ("RATE_HAI", "rpg_hai_rate"),
            ("MIN_RATE", "rpg_min_rate"),
        ] {
            if let Some(r) = cfg.rate_bps(key)
                && r % 1_000_000 == 0
            {
                p.insert(name.into(), int_value(r / 1_000_000));
            }
        }
        models.push(ModelSpec {
            name: "dcqcn".into(),
            params: p,
        });
    }
    models
}

/// Which side of a flow a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Side {
    Sender,
    Receiver,
}

/// One output events file: its flows (global flow index → local id) and writer.
struct Group {
    side: Side,
    host: u32,
    stem: String,
    flows: Vec<usize>,
    w: BufWriter<File>,
    path: PathBuf,
    /// Renames the complete file onto `path`; removes it if the import fails.
    pending: Option<crate::outfile::Pending>,
    base_rtt_ns: u64,
    win_bytes: u64,
    /// HPCC: ACKs written without INT (the pcap needs none).
    acks_without_int: u64,
    /// Events written.
    events: u64,
}

/// Stage a manifest at `path`: written to its temporary file, renamed by the returned guard's
/// `commit` (removed if it is dropped).
fn stage_manifest(path: &Path, m: &Manifest) -> Result<crate::outfile::Pending, ImportError> {
    let body = toml::to_string(m).map_err(|e| {
        ImportError::Unsupported(format!(
            "{}: cannot write the manifest: {e}",
            path.display()
        ))
    })?;
    let io = |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (mut f, pending) = crate::outfile::Pending::create(path).map_err(io)?;
    f.write_all(body.as_bytes())
        .and_then(|()| f.flush())
        .map_err(io)?;
    Ok(pending)
}

/// The output folder, created for this import: the folders it had to create are removed again
/// (when still empty) unless [`OutDir::keep`] is called, so a failed import leaves no folder
/// behind.
struct OutDir {
    created: Vec<PathBuf>,
}

impl OutDir {
    fn create(dir: &Path) -> Result<OutDir, ImportError> {
        let mut created = Vec::new();
        let mut d = Some(dir);
        while let Some(p) = d {
            if p.as_os_str().is_empty() || p.exists() {
                break;
            }
            created.push(p.to_path_buf());
            d = p.parent();
        }
        std::fs::create_dir_all(dir).map_err(|source| ImportError::Io {
            path: dir.into(),
            source,
        })?;
        Ok(OutDir { created })
    }

    fn keep(mut self) {
        self.created.clear();
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        // Deepest first; `remove_dir` leaves a folder someone else wrote into.
        for d in &self.created {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// Per-flow state of the conversion.
#[derive(Default)]
struct FlowState {
    sender_group: usize,
    sender_local: u32,
    sender_index: u64,
    receiver_group: usize,
    receiver_local: u32,
    receiver_index: u64,
    /// Switches on the path (BFS hops − 1): the INT hop count a complete stack has.
    switches: u32,
    /// HPCC: INT of the last data packet the receiver got (None: not rebuilt).
    last_int: Option<IntStack>,
    /// HPCC: ACKs / NAKs the receiver queued, with the INT they carry: (nak, seq, int).
    acks: VecDeque<(bool, u32, Option<IntStack>)>,
}

/// Hops stamped so far on one data packet: (switch node, hop).
#[derive(Clone, Copy, Default)]
struct Pending {
    n: usize,
    nodes: [u16; MAX_HOPS],
    hops: [IntHop; MAX_HOPS],
    overflow: bool,
}

/// A switch port's counters, to rebuild the INT it stamps.
#[derive(Clone, Copy, Default)]
struct Port {
    tx_bytes: u64,
    class_bytes: [u64; 8],
}

/// INT line-rate code (wire.md 5.1; the same codes as ns-3's `IntHop::Set` for 25..400G).
fn rate_code(bps: u64) -> Option<u8> {
    Some(match bps {
        25_000_000_000 => 0,
        50_000_000_000 => 1,
        100_000_000_000 => 2,
        200_000_000_000 => 3,
        400_000_000_000 => 4,
        800_000_000_000 => 5,
        10_000_000_000 => 6,
        40_000_000_000 => 7,
        _ => return None,
    })
}

fn write_ev(g: &mut Group, buf: &mut Vec<u8>, ev: &Event) -> Result<(), ImportError> {
    buf.clear();
    protocol::write_event(buf, ev);
    g.events += 1;
    g.w.write_all(buf).map_err(|source| ImportError::Io {
        path: g.path.clone(),
        source,
    })
}

/// What one record came to.
enum Outcome {
    Events,
    Int,
    Ignored(IgnoreReason),
}

/// A packet of no flow: between the hosts of a flow (its ports are wrong: remembered for the
/// error about that flow) or other traffic. `sender` / `receiver` / `ports` in the data
/// direction.
fn no_flow(
    pairs: &HashSet<(u32, u32)>,
    miss: &mut HashMap<(u32, u32), PortMiss>,
    sender: u32,
    receiver: u32,
    ports: (u16, Option<u16>),
) -> Outcome {
    if pairs.contains(&(sender, receiver)) {
        miss.entry((sender, receiver))
            .or_insert(PortMiss {
                records: 0,
                first: ports,
            })
            .records += 1;
        Outcome::Ignored(IgnoreReason::UnknownPorts)
    } else {
        Outcome::Ignored(IgnoreReason::OtherTraffic)
    }
}

/// Where the bytes of a staged file are until it is committed (a special file is written in
/// place, see `outfile::create`).
fn staged_path(path: &Path) -> PathBuf {
    if crate::outfile::is_special(path) {
        path.into()
    } else {
        crate::outfile::temp_path(path)
    }
}

/// The first `max` items joined by `; `, then `; and N more`.
fn list_some(items: &[String], max: usize) -> String {
    let mut s = items[..items.len().min(max)].join("; ");
    if items.len() > max {
        s.push_str(&format!("; and {} more", items.len() - max));
    }
    s
}

/// Run an import (see the module documentation). Streams `mix.tr` once. Writes nothing unless
/// it succeeds: every file is staged, then all are renamed into place.
pub fn import(opts: &Options) -> Result<Summary, ImportError> {
    let cfg = Config::load(&opts.config)?;
    let mut summary = Summary::default();
    for (line, key) in &cfg.unknown {
        summary.warnings.push(format!(
            "{}:{line}: unknown key {key} (the simulator ignores it)",
            cfg.path.display()
        ));
    }
    let cc_mode = cfg.uint("CC_MODE").unwrap_or(1);
    if cc_mode != 1 && cc_mode != 3 {
        return Err(ImportError::Unsupported(format!(
            "{}: CC_MODE {cc_mode} is not modelled (1 = DCQCN and 3 = HPCC are; 7 TIMELY, 8 DCTCP, \
             10 HPCC-PINT are not)",
            cfg.path.display()
        )));
    }
    let hpcc = cc_mode == 3;
    let mtu = cfg.uint("PACKET_PAYLOAD_SIZE").unwrap_or(1000);
    if mtu == 0 {
        return Err(ImportError::Unsupported(format!(
            "{}: PACKET_PAYLOAD_SIZE 0",
            cfg.path.display()
        )));
    }
    let int_multi = cfg.uint("INT_MULTI").unwrap_or(1).max(1);
    let global_t = cfg.uint("GLOBAL_T").unwrap_or(1);
    let stop_s = cfg.float("SIMULATOR_STOP_TIME").unwrap_or(DEFAULT_STOP_S);
    let topo_path = resolve(&opts.config, need(&cfg, "TOPOLOGY_FILE")?);
    let flow_path = resolve(&opts.config, need(&cfg, "FLOW_FILE")?);
    let mix_path = match &opts.mix {
        Some(m) => m.clone(),
        None => resolve(&opts.config, need(&cfg, "TRACE_OUTPUT_FILE")?),
    };
    let topo = Topology::parse(&read_text(&topo_path)?, &topo_path)?;
    let flows = parse_flows(&read_text(&flow_path)?, &flow_path, &topo)?;
    if flows.is_empty() {
        return Err(ImportError::Incomplete {
            message: format!(
                "{}: no flows (its first line, the flow count, is 0): nothing to import",
                flow_path.display()
            ),
            todo: "import the outputs of a run with flows (FLOW_FILE of the config)".into(),
        });
    }
    let trace_path = cfg.text("TRACE_FILE").map(|t| resolve(&opts.config, t));
    let trace_list: Option<Vec<u32>> = match &trace_path {
        Some(p) => match std::fs::read_to_string(p) {
            Ok(text) => Some(parse_trace_list(&text, p)?),
            Err(e) => {
                summary.warnings.push(format!(
                    "{}: {e}: the traced hosts are unknown (TRACE_FILE of {})",
                    p.display(),
                    opts.config.display()
                ));
                None
            }
        },
        None => None,
    };
    let traced: Option<Vec<u32>> = trace_list.as_deref().map(|l| traced_hosts(l, &topo));
    if let (Some(list), Some(hosts), Some(p)) = (&trace_list, &traced, &trace_path)
        && hosts.is_empty()
    {
        let switches: Vec<String> = list
            .iter()
            .filter(|&&n| n < topo.nodes && topo.is_switch[n as usize])
            .map(|n| n.to_string())
            .collect();
        let beyond: Vec<String> = list
            .iter()
            .filter(|&&n| n >= topo.nodes)
            .map(|n| n.to_string())
            .collect();
        let mut named = Vec::new();
        if list.is_empty() {
            named.push("its count is 0".to_string());
        }
        if !switches.is_empty() {
            named.push(format!("switches {} only", switches.join(", ")));
        }
        if !beyond.is_empty() {
            named.push(format!(
                "{} not below the node count {}, which the simulator skips",
                beyond.join(", "),
                topo.nodes
            ));
        }
        return Err(ImportError::Incomplete {
            message: format!(
                "{}: the trace list names no host ({}): the simulator records only the nodes it \
                 names, so no flow has events",
                p.display(),
                named.join("; ")
            ),
            todo: format!(
                "name the flows' hosts in {} (the count, then the node ids), keep ENABLE_TRACE 1 \
                 in {}, and run the simulator again",
                p.display(),
                opts.config.display()
            ),
        });
    }
    if hpcc && let Some(tr) = &trace_list {
        let untraced: Vec<u32> = (0..topo.nodes)
            .filter(|&n| topo.is_switch[n as usize] && !tr.contains(&n))
            .collect();
        if !untraced.is_empty() {
            summary.warnings.push(format!(
                "switches {untraced:?} are not in the trace list: INT cannot be rebuilt for \
                 packets crossing them (their ACKs are written without `int`)"
            ));
        }
    }

    // Paths: RTT and BDP per host pair (third.cc's pairRtt / pairBdp; maxRtt / maxBdp).
    let hosts: Vec<u32> = (0..topo.nodes)
        .filter(|&n| !topo.is_switch[n as usize])
        .collect();
    // Paths are kept for the flows' sources only; with GLOBAL_T 1 every host pair is visited
    // for the largest RTT and BDP.
    let sources: HashSet<u32> = flows.iter().map(|f| f.src).collect();
    let mut paths: HashMap<u32, Vec<Option<PathInfo>>> = HashMap::new();
    let (mut max_rtt, mut max_bdp) = (0u64, 0u64);
    for &h in &hosts {
        if global_t != 1 && !sources.contains(&h) {
            continue;
        }
        let p = topo.paths_from(h, mtu);
        if global_t == 1 {
            for &o in &hosts {
                if let Some(pi) = p[o as usize] {
                    max_rtt = max_rtt.max(pi.rtt_ns());
                    max_bdp = max_bdp.max(pi.bdp_bytes());
                }
            }
        }
        if sources.contains(&h) {
            paths.insert(h, p);
        }
    }
    let mut flow_paths = Vec::with_capacity(flows.len());
    for (i, f) in flows.iter().enumerate() {
        let path = paths
            .get(&f.src)
            .and_then(|p| p[f.dst as usize])
            .ok_or_else(|| {
                ImportError::Unsupported(format!(
                    "{}: flow {i} from node {} to node {}: no path in the topology",
                    flow_path.display(),
                    f.src,
                    f.dst
                ))
            })?;
        flow_paths.push(path);
    }

    // mix.tr: its header, and at least one record after it — before anything is created.
    let file = File::open(&mix_path).map_err(|source| ImportError::Io {
        path: mix_path.clone(),
        source,
    })?;
    let mut r = BufReader::with_capacity(1 << 16, file);
    let (setting, mut offset) = read_header(&mut r, &mix_path)?;
    let no_records = r
        .fill_buf()
        .map_err(|source| ImportError::Io {
            path: mix_path.clone(),
            source,
        })?
        .is_empty();
    if no_records {
        let off = if cfg.uint("ENABLE_TRACE") == Some(0) {
            " (it has ENABLE_TRACE 0)"
        } else {
            ""
        };
        return Err(ImportError::Incomplete {
            message: format!(
                "{}: no trace records: the simulator wrote its header only; set ENABLE_TRACE 1 \
                 in {}{off} and name the hosts to trace in its TRACE_FILE list, then run it \
                 again",
                mix_path.display(),
                opts.config.display()
            ),
            todo: format!(
                "the simulator writes the header only with ENABLE_TRACE 0 or with a trace list \
                 ({}) naming no node it has (docs/import.md \"Errors\")",
                trace_path
                    .as_deref()
                    .map_or_else(|| "TRACE_FILE".into(), |p| p.display().to_string())
            ),
        });
    }

    // Declared before the files staged in it: dropped after them, so it is empty by then.
    let out_dir = OutDir::create(&opts.out)?;
    // Groups: a sender file per host (per host pair when GLOBAL_T 0: the RTT differs), a
    // receiver file per host.
    let mut groups: Vec<Group> = Vec::new();
    let mut by_key: BTreeMap<(Side, u32, u32), usize> = BTreeMap::new();
    let mut states: Vec<FlowState> = Vec::with_capacity(flows.len());
    let mut flow_of: HashMap<(u32, u32, u16, u16), usize> = HashMap::new();
    // A CNP names its flow by source port only (`fid`): (sender IP, receiver IP, sport).
    let mut cnp_flow: HashMap<(u32, u32, u16), usize> = HashMap::new();
    // (sender IP, receiver IP) of every flow: a packet between them with ports of no flow
    // points at a flow file that is not the simulator's.
    let flow_pairs: HashSet<(u32, u32)> = flows
        .iter()
        .map(|f| (node_ip(f.src), node_ip(f.dst)))
        .collect();
    for (i, f) in flows.iter().enumerate() {
        let path = flow_paths[i];
        let (rtt, bdp) = if global_t == 1 {
            (max_rtt, max_bdp)
        } else {
            (path.rtt_ns(), path.bdp_bytes())
        };
        let mut st = FlowState {
            switches: path.hops.saturating_sub(1),
            ..FlowState::default()
        };
        for side in [Side::Sender, Side::Receiver] {
            let (host, peer) = match side {
                Side::Sender => (f.src, if global_t == 1 { 0 } else { f.dst }),
                Side::Receiver => (f.dst, 0),
            };
            let gi = match by_key.get(&(side, host, peer)) {
                Some(&g) => g,
                None => {
                    let stem = match (side, global_t == 1) {
                        (Side::Sender, true) => format!("sender_{host}"),
                        (Side::Sender, false) => format!("sender_{host}_to_{}", f.dst),
                        (Side::Receiver, _) => format!("receiver_{host}"),
                    };
                    let path = opts.out.join(format!("{stem}.jsonl"));
                    let (file, pending) =
                        crate::outfile::Pending::create(&path).map_err(|source| {
                            ImportError::Io {
                                path: path.clone(),
                                source,
                            }
                        })?;
                    groups.push(Group {
                        side,
                        host,
                        stem,
                        flows: Vec::new(),
                        w: BufWriter::with_capacity(1 << 16, file),
                        path,
                        pending: Some(pending),
                        base_rtt_ns: rtt,
                        win_bytes: bdp,
                        acks_without_int: 0,
                        events: 0,
                    });
                    by_key.insert((side, host, peer), groups.len() - 1);
                    groups.len() - 1
                }
            };
            let local = groups[gi].flows.len() as u32;
            groups[gi].flows.push(i);
            match side {
                Side::Sender => {
                    st.sender_group = gi;
                    st.sender_local = local;
                }
                Side::Receiver => {
                    st.receiver_group = gi;
                    st.receiver_local = local;
                }
            }
        }
        states.push(st);
        // parse_flows made (src, dst, sport) unique.
        flow_of.insert((node_ip(f.src), node_ip(f.dst), f.sport, f.dport), i);
        cnp_flow.insert((node_ip(f.src), node_ip(f.dst), f.sport), i);
    }

    // Stream mix.tr.
    let mut rec_buf = [0u8; RECORD_BYTES];
    let mut buf = Vec::with_capacity(1024);
    let mut ports: HashMap<(u16, u8), Port> = HashMap::new();
    let mut pending: HashMap<(usize, u32), Pending> = HashMap::new();
    let mut port_miss: HashMap<(u32, u32), PortMiss> = HashMap::new();
    let mut account = RecordAccount::default();
    let mut last_t = 0u64;
    while let Some(rec) = next_record(&mut r, &mut rec_buf, &mix_path, offset)? {
        let at = offset;
        offset += RECORD_BYTES as u64;
        summary.records += 1;
        if rec.time < last_t {
            return Err(ImportError::Binary {
                path: mix_path.clone(),
                offset: at,
                message: format!(
                    "time {} ns is before the previous record's {last_t} ns (records are in \
                     simulation order)",
                    rec.time
                ),
            });
        }
        last_t = rec.time;
        let data_flow = || {
            flow_of
                .get(&(rec.sip, rec.dip, rec.sport, rec.dport))
                .copied()
        };
        let ack_flow = || {
            flow_of
                .get(&(rec.dip, rec.sip, rec.dport, rec.sport))
                .copied()
        };
        let node = rec.node as u32;
        let outcome = if node >= topo.nodes || topo.is_switch[node as usize] != (rec.node_type == 1)
        {
            Outcome::Ignored(IgnoreReason::UnknownNode)
        } else if rec.node_type == 1 {
            // A switch: only HPCC needs its ports (the INT they stamp).
            if !hpcc {
                Outcome::Ignored(IgnoreReason::SwitchDcqcn)
            } else {
                let port = ports.entry((rec.node, rec.intf)).or_default();
                let q = rec.qidx as usize;
                match rec.event {
                    EV_ENQU => {
                        if q < 8 {
                            port.class_bytes[q] = rec.qlen as u64 + rec.size as u64;
                        }
                        Outcome::Int
                    }
                    EV_DEQU => {
                        if q < 8 {
                            port.class_bytes[q] = rec.qlen as u64;
                        }
                        if rec.l3 == 0x11
                            && let Some(fi) = data_flow()
                        {
                            let total: u64 = if q < 8 {
                                port.class_bytes.iter().sum()
                            } else {
                                rec.qlen as u64
                            };
                            let b = setting
                                .port_speed
                                .get(&(rec.node, rec.intf))
                                .copied()
                                .and_then(rate_code);
                            let hop = IntHop {
                                b: b.unwrap_or(0),
                                ts: (rec.time & 0xFF_FFFF) as u32,
                                tx_bytes: ((port.tx_bytes / int_multi.saturating_mul(128))
                                    & 0xF_FFFF) as u32,
                                qlen: (total / int_multi.saturating_mul(80)).min(0xFFFF) as u16,
                            };
                            let p = pending.entry((fi, rec.seq)).or_default();
                            if p.nodes[..p.n].contains(&rec.node) {
                                // The same packet again at this switch: a retransmission.
                                *p = Pending::default();
                            }
                            if b.is_none() || p.n == MAX_HOPS {
                                p.overflow = true;
                            } else {
                                p.nodes[p.n] = rec.node;
                                p.hops[p.n] = hop;
                                p.n += 1;
                            }
                        }
                        port.tx_bytes += rec.size as u64;
                        Outcome::Int
                    }
                    _ => Outcome::Ignored(IgnoreReason::SwitchRecvDrop),
                }
            }
        } else {
            // A host.
            let me = node_ip(node);
            match (rec.event, rec.l3) {
                (_, 0xFE) => Outcome::Ignored(IgnoreReason::Pfc),
                (_, l3) if !matches!(l3, 0x11 | 0xFC | 0xFD | 0xFF) => {
                    Outcome::Ignored(IgnoreReason::OtherProtocol)
                }
                (EV_DROP, _) => Outcome::Ignored(IgnoreReason::HostDrop),
                (EV_DEQU, 0x11) if rec.sip == me => match data_flow() {
                    None => no_flow(
                        &flow_pairs,
                        &mut port_miss,
                        rec.sip,
                        rec.dip,
                        (rec.sport, Some(rec.dport)),
                    ),
                    Some(fi) => {
                        let f = &flows[fi];
                        let st = &mut states[fi];
                        let opcode = write_opcode(rec.seq as u64, rec.payload as u64, f.size_bytes);
                        let ev = Event {
                            t_ns: rec.time,
                            flow: st.sender_local,
                            index: st.sender_index,
                            kind: EventKind::TxData {
                                psn: psn_of(rec.seq as u64, mtu),
                                bytes: rec.payload as u32,
                                opcode,
                            },
                        };
                        st.sender_index += 1;
                        write_ev(&mut groups[st.sender_group], &mut buf, &ev)?;
                        summary.events += 1;
                        Outcome::Events
                    }
                },
                (EV_RECV, 0x11) if rec.dip == me => match data_flow() {
                    None => no_flow(
                        &flow_pairs,
                        &mut port_miss,
                        rec.sip,
                        rec.dip,
                        (rec.sport, Some(rec.dport)),
                    ),
                    Some(fi) => {
                        let f = &flows[fi];
                        let st = &mut states[fi];
                        if hpcc {
                            let p = pending.remove(&(fi, rec.seq)).unwrap_or_default();
                            st.last_int = (!p.overflow && p.n as u32 == st.switches)
                                .then(|| {
                                    let path_id =
                                        p.nodes[..p.n].iter().fold(0u16, |x, &n| x ^ (n & 0x0FFF));
                                    IntStack::from_hops(path_id, &p.hops[..p.n])
                                })
                                .flatten();
                        }
                        let opcode = write_opcode(rec.seq as u64, rec.payload as u64, f.size_bytes);
                        let ev = Event {
                            t_ns: rec.time,
                            flow: st.receiver_local,
                            index: st.receiver_index,
                            kind: EventKind::RxData {
                                psn: psn_of(rec.seq as u64, mtu),
                                bytes: rec.payload as u32,
                                opcode,
                                ecn: rec.ecn & 3,
                                send_ts_ns: None,
                            },
                        };
                        st.receiver_index += 1;
                        write_ev(&mut groups[st.receiver_group], &mut buf, &ev)?;
                        summary.events += 1;
                        Outcome::Events
                    }
                },
                // Data entering a host's queue: the sender's event is the dequeue.
                (EV_ENQU, 0x11) if rec.sip == me => Outcome::Ignored(IgnoreReason::HostQueue),
                (EV_ENQU, 0xFC | 0xFD) if rec.sip == me && hpcc => match ack_flow() {
                    // The receiver queues the ACK it just built from the data packet it got.
                    None => no_flow(
                        &flow_pairs,
                        &mut port_miss,
                        rec.dip,
                        rec.sip,
                        (rec.dport, Some(rec.sport)),
                    ),
                    Some(fi) => {
                        let st = &mut states[fi];
                        if st.acks.len() == ACK_QUEUE {
                            st.acks.pop_front();
                        }
                        st.acks.push_back((rec.l3 == 0xFD, rec.seq, st.last_int));
                        Outcome::Int
                    }
                },
                // ACK / NAK / CNP entering (DCQCN) or leaving the receiver's queue.
                (EV_ENQU | EV_DEQU, 0xFC | 0xFD | 0xFF) if rec.sip == me => {
                    Outcome::Ignored(IgnoreReason::HostQueue)
                }
                (EV_RECV, 0xFC | 0xFD) if rec.dip == me => match ack_flow() {
                    None => no_flow(
                        &flow_pairs,
                        &mut port_miss,
                        rec.dip,
                        rec.sip,
                        (rec.dport, Some(rec.sport)),
                    ),
                    Some(fi) => {
                        let nak = rec.l3 == 0xFD;
                        let st = &mut states[fi];
                        let int = if hpcc {
                            let mut found = None;
                            while let Some((k, s, i)) = st.acks.pop_front() {
                                if k == nak && s == rec.seq {
                                    found = Some(i);
                                    break;
                                }
                            }
                            let int = found.flatten();
                            if int.is_some() {
                                summary.acks_with_int += 1;
                            } else {
                                summary.acks_without_int += 1;
                                groups[st.sender_group].acks_without_int += 1;
                            }
                            int
                        } else {
                            None
                        };
                        let e = rec.seq as u64;
                        let psn = if nak {
                            e / mtu
                        } else {
                            // ACK of next-expected byte E: the last PSN received, ceil(E / mtu) − 1.
                            e.div_ceil(mtu).wrapping_sub(1)
                        };
                        let info = AckInfo {
                            psn: (psn & 0xFF_FFFF) as u32,
                            syndrome: if nak { SYNDROME_NAK } else { SYNDROME_ACK },
                            int,
                            n: None,
                            cwnd: None,
                            rcc_flags: None,
                            ts_ns: None,
                        };
                        let ev = Event {
                            t_ns: rec.time,
                            flow: st.sender_local,
                            index: st.sender_index,
                            kind: if nak {
                                EventKind::RxNak(info)
                            } else {
                                EventKind::RxAck(info)
                            },
                        };
                        st.sender_index += 1;
                        write_ev(&mut groups[st.sender_group], &mut buf, &ev)?;
                        summary.events += 1;
                        if !hpcc && rec.flags & FLAG_CNP != 0 {
                            // DCQCN (rdma-hw.cc ReceiveAck): the ACK's CNP flag, after the ACK.
                            let ev = Event {
                                t_ns: rec.time,
                                flow: st.sender_local,
                                index: st.sender_index,
                                kind: EventKind::RxCnp,
                            };
                            st.sender_index += 1;
                            write_ev(&mut groups[st.sender_group], &mut buf, &ev)?;
                            summary.events += 1;
                        }
                        Outcome::Events
                    }
                },
                // ns-3's HPCC ignores CNP packets (`ReceiveCnp` only initialises a rate).
                (EV_RECV, 0xFF) if rec.dip == me && hpcc => Outcome::Ignored(IgnoreReason::CnpHpcc),
                (EV_RECV, 0xFF) if rec.dip == me => {
                    // A CNP packet: fid is the flow's source port.
                    match cnp_flow.get(&(rec.dip, rec.sip, rec.sport)).copied() {
                        None => no_flow(
                            &flow_pairs,
                            &mut port_miss,
                            rec.dip,
                            rec.sip,
                            (rec.sport, None),
                        ),
                        Some(fi) => {
                            let st = &mut states[fi];
                            let ev = Event {
                                t_ns: rec.time,
                                flow: st.sender_local,
                                index: st.sender_index,
                                kind: EventKind::RxCnp,
                            };
                            st.sender_index += 1;
                            write_ev(&mut groups[st.sender_group], &mut buf, &ev)?;
                            summary.events += 1;
                            Outcome::Events
                        }
                    }
                }
                _ => Outcome::Ignored(IgnoreReason::NotOwn),
            }
        };
        match outcome {
            Outcome::Events => account.made_events += 1,
            Outcome::Int => account.rebuilt_int += 1,
            Outcome::Ignored(why) => account.ignore(why),
        }
    }
    summary.account = account;

    // A flow of the flow file without a single event is an error naming it (issue 18):
    // returning here drops every staged file and the folder made for them.
    let silent: Vec<String> = flows
        .iter()
        .enumerate()
        .filter(|&(i, _)| states[i].sender_index + states[i].receiver_index == 0)
        .map(|(i, f)| {
            let evidence = Evidence {
                stop_s,
                traced: traced.as_deref(),
                port_miss: &port_miss,
                last_record_ns: last_t,
                mix: &mix_path,
                trace_file: trace_path.as_deref(),
            };
            format!(
                "{}: {}",
                accounting::describe(i, f),
                accounting::no_events_cause(f, &evidence)
            )
        })
        .collect();
    if !silent.is_empty() {
        let mut message = format!(
            "{}: {} of its {} flows {} no event in {} (nothing written):",
            flow_path.display(),
            silent.len(),
            flows.len(),
            if silent.len() == 1 { "has" } else { "have" },
            mix_path.display()
        );
        for l in silent.iter().take(10) {
            message.push_str("\n  ");
            message.push_str(l);
        }
        if silent.len() > 10 {
            message.push_str(&format!("\n  and {} more", silent.len() - 10));
        }
        return Err(ImportError::Incomplete {
            message,
            todo: format!(
                "each flow says why; the config, {}, the trace list and {} must be of one \
                 simulator run (docs/import.md \"Errors\")",
                flow_path.display(),
                mix_path.display()
            ),
        });
    }
    // A side of a flow without events (its host not traced, or the run ended first): said.
    // Keyed by side and whether the host is traced (None: the trace list is unknown).
    let mut one_sided: BTreeMap<(Side, Option<bool>), Vec<String>> = BTreeMap::new();
    for (i, f) in flows.iter().enumerate() {
        for (side, host, n) in [
            (Side::Sender, f.src, states[i].sender_index),
            (Side::Receiver, f.dst, states[i].receiver_index),
        ] {
            if n == 0 {
                let is_traced = traced.as_ref().map(|t| t.contains(&host));
                one_sided
                    .entry((side, is_traced))
                    .or_default()
                    .push(accounting::describe(i, f));
            }
        }
    }
    for ((side, is_traced), list) in &one_sided {
        let (who, what) = match side {
            Side::Sender => ("sending", "sender"),
            Side::Receiver => ("receiving", "receiver"),
        };
        let why = match is_traced {
            Some(false) => format!("their {who} hosts are not in the trace list"),
            Some(true) => format!(
                "their {who} hosts are traced, but {} holds no such record of them (the run \
                 may have stopped first)",
                mix_path.display()
            ),
            None => format!(
                "{} holds no such record of them at their {who} hosts",
                mix_path.display()
            ),
        };
        summary.warnings.push(format!(
            "{} flow{} without {what} events: {why}: {}",
            list.len(),
            if list.len() == 1 { "" } else { "s" },
            list_some(list, 5)
        ));
    }

    // Stage every file (events, manifests, pcaps), then rename them all into place.
    let config_name = opts.config.display().to_string();
    let mut staged: Vec<(PathBuf, crate::outfile::Pending)> = Vec::new();
    let mut model_warnings = Vec::new();
    for g in &mut groups {
        g.w.flush().map_err(|source| ImportError::Io {
            path: g.path.clone(),
            source,
        })?;
    }
    for g in &mut groups {
        let Some(events_pending) = g.pending.take() else {
            continue;
        };
        if g.events == 0 {
            // Every flow has events somewhere, so this is the side of untraced hosts.
            summary.warnings.push(format!(
                "{}: not written: no events (host {} {})",
                g.path.display(),
                g.host,
                if traced.as_ref().is_some_and(|t| !t.contains(&g.host)) {
                    "is not in the trace list"
                } else {
                    "has no record of these flows"
                }
            ));
            continue;
        }
        let events_at = staged_path(&g.path);
        staged.push((g.path.clone(), events_pending));
        let models = match g.side {
            Side::Sender => sender_models(&cfg, cc_mode, g.win_bytes, &mut model_warnings),
            Side::Receiver if !hpcc => vec![ModelSpec {
                name: "dcqcn-np".into(),
                params: toml::Table::new(),
            }],
            Side::Receiver => {
                summary.warnings.push(format!(
                    "{}: events only, no manifest (HPCC has no receiver model)",
                    g.path.display()
                ));
                continue;
            }
        };
        let host_ip = IpAddr::V4(Ipv4Addr::from(node_ip(g.host)));
        let flows_spec = g
            .flows
            .iter()
            .map(|&fi| {
                let f = &flows[fi];
                let (local, remote) = match g.side {
                    Side::Sender => (f.src, f.dst),
                    Side::Receiver => (f.dst, f.src),
                };
                // ns-3 has no QPs: numbered from the flow's source port, sender 0x01xxxx,
                // receiver 0x02xxxx.
                let (lq, rq) = match g.side {
                    Side::Sender => (0x01_0000 | f.sport as u32, 0x02_0000 | f.sport as u32),
                    Side::Receiver => (0x02_0000 | f.sport as u32, 0x01_0000 | f.sport as u32),
                };
                FlowSpec {
                    local_ip: IpAddr::V4(Ipv4Addr::from(node_ip(local))),
                    local_qp: lq,
                    remote_ip: IpAddr::V4(Ipv4Addr::from(node_ip(remote))),
                    remote_qp: rq,
                }
            })
            .collect();
        let m = Manifest {
            capture: None,
            events: Some(format!("{}.jsonl", g.stem)),
            dialect: if hpcc { Dialect::Hpcc } else { Dialect::Roce },
            capture_point: match g.side {
                Side::Sender => CapturePoint::Sender { host: host_ip },
                Side::Receiver => CapturePoint::Receiver { host: host_ip },
            },
            network: Network {
                link_rate_bps: topo.nic_rate_bps(g.host).unwrap_or(1),
                base_rtt_ns: g.base_rtt_ns.max(1),
                mtu_bytes: mtu,
                udp_port: 4791,
            },
            int: IntSection::default(),
            models,
            flows: flows_spec,
            source: Source {
                kind: "synthesized".into(),
                generator: format!(
                    "ns-3 HPCC simulator (alibaba-edu/High-Precision-Congestion-Control), \
                     ccreplay import ns3 {config_name}"
                ),
                seed: None,
                notes: Some(format!(
                    "CC_MODE {cc_mode}; flows of flow.txt in order (flow i = [[flows]] entry i); \
                     base_rtt_ns / win from third.cc's {} RTT and BDP",
                    if global_t == 1 {
                        "largest (GLOBAL_T 1)"
                    } else {
                        "pair's (GLOBAL_T 0)"
                    }
                )),
            },
            observed: Default::default(),
        };
        let path = opts.out.join(format!("{}.toml", g.stem));
        staged.push((path.clone(), stage_manifest(&path, &m)?));
        // The same events as packets, when every frame can be made from them: an HPCC ACK
        // without its INT cannot.
        if g.acks_without_int > 0 {
            summary
                .warnings
                .push(format!("{}: no pcap (ACKs without INT)", g.path.display()));
            continue;
        }
        let pflows: Vec<PcapFlow> = g
            .flows
            .iter()
            .zip(&m.flows)
            .map(|(&fi, spec)| PcapFlow {
                spec: spec.clone(),
                udp_src_port: flows[fi].sport,
                message_bytes: flows[fi].size_bytes,
            })
            .collect();
        let stem = format!("{}_capture", g.stem);
        let pcap = opts.out.join(format!("{stem}.pcap"));
        let (_, pcap_pending) =
            stage_pcap(&events_at, &pcap, m.dialect, &m.capture_point, &pflows)?;
        staged.push((pcap, pcap_pending));
        let mut mc = m.clone();
        mc.events = None;
        mc.capture = Some(format!("{stem}.pcap"));
        let path = opts.out.join(format!("{stem}.toml"));
        staged.push((path.clone(), stage_manifest(&path, &mc)?));
        summary.pcaps += 1;
    }
    for (path, p) in staged {
        p.commit().map_err(|source| ImportError::Io {
            path: path.clone(),
            source,
        })?;
        summary.written.push(path);
    }
    out_dir.keep();
    model_warnings.sort();
    model_warnings.dedup();
    summary.warnings.extend(model_warnings);
    if hpcc && summary.acks_without_int > 0 {
        summary.warnings.push(format!(
            "{} of {} ACKs/NAKs written without INT: it could not be rebuilt (a switch on the \
             path not traced, or its records missing)",
            summary.acks_without_int,
            summary.acks_with_int + summary.acks_without_int
        ));
    }
    summary.written.sort();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_times_in_ns3_syntax() {
        assert_eq!(parse_rate("100Gbps"), Some(100_000_000_000));
        assert_eq!(parse_rate("50Mb/s"), Some(50_000_000));
        assert_eq!(parse_rate("1KiBps"), Some(8 * 1024));
        assert_eq!(parse_rate("100G"), None);
        assert_eq!(parse_time_ns("0.001ms"), Some(1_000));
        assert_eq!(parse_time_ns("1us"), Some(1_000));
        assert_eq!(parse_time_ns("2x"), None);
    }

    #[test]
    fn node_ips_follow_third_cc() {
        // 0x0b000001 + 2 × 0x100 = 0x0b000201 = 11.0.2.1; node 257: + 0x10000 + 0x100.
        assert_eq!(Ipv4Addr::from(node_ip(2)).to_string(), "11.0.2.1");
        assert_eq!(Ipv4Addr::from(node_ip(257)).to_string(), "11.1.1.1");
    }

    #[test]
    fn config_errors_name_the_line() {
        let e = Config::parse("CC_MODE 3\nRATE_AI fast\n", Path::new("c.txt"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.txt:2: RATE_AI: `fast` is not a valid"),
            "{e}"
        );
        let e = Config::parse("KMAX_MAP 2 1 2\n", Path::new("c.txt"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "c.txt:1: KMAX_MAP: expected 5 values, found 3");
        let c = Config::parse("FOO 1\nCC_MODE 3\n", Path::new("c.txt")).unwrap();
        assert_eq!(c.unknown, vec![(1, "FOO".to_string())]);
        assert_eq!(c.uint("CC_MODE"), Some(3));
    }
}
