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
mod config;
mod flows;
mod mixtr;
mod models;
mod output;
mod scenario;
mod text;
mod topology;

use accounting::{Evidence, PortMiss};
pub use accounting::{IgnoreReason, RecordAccount};
pub use config::Config;
pub use flows::{Flow, node_ip, parse_flows, parse_trace_list, traced_hosts};
pub use mixtr::{EV_DEQU, EV_DROP, EV_ENQU, EV_RECV, Record, SimSetting};
use mixtr::{next_record, read_header};
use models::sender_models;
use output::{Group, OutDir, Side, stage_manifest};
pub use scenario::{ScenarioSummary, seconds_to_ns, write_scenario};
use text::{Toks, read_text};
pub use text::{parse_rate, parse_time_ns};
pub use topology::{Link, PathInfo, Topology};

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
/// ACKs waiting at most for their INT binding per flow; an ACK still waiting when the sender
/// receives one the receiver queued this many ACKs after it is taken as lost.
const ACK_QUEUE: usize = 4096;

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

/// Per-flow state of the conversion.
#[derive(Default)]
struct FlowState {
    sender_group: usize,
    sender_local: u32,
    sender_index: u64,
    receiver_group: usize,
    receiver_local: u32,
    receiver_index: u64,
    /// HPCC: whether the trace list names the sender / the receiver (true when it is unknown):
    /// nothing is kept for an INT that no record of the other end will take.
    tx_traced: bool,
    rx_traced: bool,
    /// HPCC: INT of the last data packet the receiver got (None: not rebuilt).
    last_int: Option<IntStack>,
    /// HPCC: ACKs / NAKs the receiver queued and the sender has not received yet, in the
    /// order queued.
    acks: VecDeque<WaitingAck>,
    /// HPCC: ACKs / NAKs the receiver queued so far (numbers them).
    acks_queued: u64,
}

/// An ACK / NAK the receiver queued, with the INT it carries, until the sender receives it.
#[derive(Clone, Copy)]
struct WaitingAck {
    /// Its place among the flow's queued ACKs (0, 1, ...).
    nth: u64,
    nak: bool,
    /// ns-3's seq: the next byte expected.
    seq: u32,
    int: Option<IntStack>,
}

/// Hops stamped so far on one data packet: (switch node, hop), in the order it met them.
#[derive(Clone, Copy, Default)]
struct Pending {
    n: usize,
    nodes: [u16; MAX_HOPS],
    hops: [IntHop; MAX_HOPS],
    /// Where the port of the last hop leads (None before the first hop): the next dequeue of
    /// the packet must be there, or a switch between was not traced.
    next: Option<u32>,
    /// A hop missing (the chain from the sender broken), more than [`MAX_HOPS`], or a port
    /// rate without an INT code: no INT for this packet.
    broken: bool,
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
        let is_traced = |h: u32| traced.as_ref().is_none_or(|t| t.contains(&h));
        let mut st = FlowState {
            tx_traced: is_traced(f.src),
            rx_traced: is_traced(f.dst),
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
                            && states[fi].rx_traced
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
                            // The packet's hops are its dequeue records, whatever path the
                            // topology gave before a LINK_DOWN; each must be where the port of
                            // the one before leads, the first beside the sender.
                            let p = pending.entry((fi, rec.seq)).or_default();
                            let first = topo.linked(flows[fi].src, node);
                            if p.next != Some(node) && first && p.next.is_some() {
                                // The same bytes leaving the first switch again: a
                                // retransmission starts over.
                                *p = Pending::default();
                            }
                            if p.next.map_or(!first, |x| x != node) {
                                p.broken = true;
                            }
                            if b.is_none() || p.n == MAX_HOPS {
                                p.broken = true;
                            } else {
                                p.nodes[p.n] = rec.node;
                                p.hops[p.n] = hop;
                                p.n += 1;
                            }
                            p.next = topo.peer(node, rec.intf);
                            p.broken |= p.next.is_none();
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
                            // Complete when the last hop's port leads here (no hop: the
                            // hosts are linked directly).
                            let p = pending.remove(&(fi, rec.seq)).unwrap_or_default();
                            let complete =
                                !p.broken && p.next.map_or(topo.linked(f.src, node), |x| x == node);
                            st.last_int = complete
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
                        if st.tx_traced {
                            if st.acks.len() == ACK_QUEUE {
                                st.acks.pop_front();
                            }
                            st.acks.push_back(WaitingAck {
                                nth: st.acks_queued,
                                nak: rec.l3 == 0xFD,
                                seq: rec.seq,
                                int: st.last_int,
                            });
                            st.acks_queued += 1;
                        }
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
                            // The first waiting ACK with this seq; those before it stay: lost
                            // or late (overtaken after a reroute), they are not consumed.
                            let at = st
                                .acks
                                .iter()
                                .position(|a| a.nak == nak && a.seq == rec.seq);
                            let int = match at.and_then(|j| st.acks.remove(j)) {
                                Some(a) => {
                                    // Overtaken by ACK_QUEUE later ACKs: taken as lost.
                                    while st
                                        .acks
                                        .front()
                                        .is_some_and(|w| w.nth + ACK_QUEUE as u64 <= a.nth)
                                    {
                                        st.acks.pop_front();
                                    }
                                    a.int
                                }
                                None => None,
                            };
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
             path not traced, its records missing, or no record of the receiver queueing the ACK)",
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
