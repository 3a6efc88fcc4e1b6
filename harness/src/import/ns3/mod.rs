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
//!
//! Role: `ccreplay import ns3`. This file is the import's entry ([`import`]: read the inputs,
//! refuse what would be incomplete, stream `mix.tr`, stage and commit the outputs); the other
//! files are named by what they read or write — [`Config`] (`config.txt`), `topology.rs`,
//! `flows.rs` (`flow.txt`, `trace.txt`), `mixtr.rs` (the bytes of `mix.tr`), `records.rs`
//! (what each record means), `models.rs` (the models a manifest names), `output.rs` (the
//! staged files), [`accounting`], and `scenario.rs` (`--scenario`). It may use the manifest
//! and protocol writers, [`crate::outfile`] (staging), [`super::pcap`] and the models' names;
//! it runs no model and prints nothing (cli/import.rs does).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use ccreplay_codecs::Dialect;

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
mod records;
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
use output::{Group, OutDir, Run, Side, stage_group};
use records::{Convert, FlowState, Outcome};
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
    let mut conv = Convert {
        topo: &topo,
        flows: &flows,
        setting: &setting,
        hpcc,
        mtu,
        int_multi,
        flow_of,
        cnp_flow,
        flow_pairs,
        states,
        groups,
        ports: HashMap::new(),
        pending: HashMap::new(),
        port_miss: HashMap::new(),
        buf: Vec::with_capacity(1024),
    };
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
        match conv.record(&rec, &mut summary)? {
            Outcome::Events => account.made_events += 1,
            Outcome::Int => account.rebuilt_int += 1,
            Outcome::Ignored(why) => account.ignore(why),
        }
    }
    summary.account = account;
    let Convert {
        states,
        mut groups,
        port_miss,
        ..
    } = conv;

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
    let run = Run {
        cfg: &cfg,
        cc_mode,
        hpcc,
        global_t,
        mtu,
        flows: &flows,
        topo: &topo,
        traced: &traced,
        out: &opts.out,
        config_name: &config_name,
    };
    for g in &mut groups {
        stage_group(g, &run, &mut staged, &mut summary, &mut model_warnings)?;
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
mod tests;
