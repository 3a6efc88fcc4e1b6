//! `ccreplay import ns3 CONFIG --scenario OUT.toml`: the simulator's experiment — config,
//! topology and flow files — as a `ccreplay sim` scenario (docs/sim.md), so the same
//! experiment runs closed loop in ccreplay with the simulator's own algorithm variants
//! (`hpcc-ns3`, `dcqcn-ns3`). No `mix.tr` is needed. What maps one to one and what is an
//! approximation is written into the scenario's comments and docs/import.md.

use std::fmt::Write as _;

use super::*;

/// third.cc's `buffer_size` default, MB (`BUFFER_SIZE`).
const DEFAULT_BUFFER_MB: u64 = 16;
/// switch-mmu.cc: `reserve` per port and `resume_offset`, bytes.
const MMU_RESERVE: u64 = 4 * 1024;
const MMU_RESUME_OFFSET: u64 = 3 * 1024;
/// third.cc: `shift = 3` (the dynamic threshold is 1/8 of the free buffer).
const PFC_SHIFT: u32 = 3;
/// Without a queue-monitoring window, at most this many samples per series over the run.
const MAX_SAMPLES: u64 = 10_000;
/// With one (`QLEN_MON_START` < `QLEN_MON_END`), this many samples across the window.
const WINDOW_SAMPLES: u64 = 1_000;
/// Up to this many flows are written as `[[flows]]` tables; more go to a CSV file beside the
/// scenario (`flows_file`): the TOML parser spends kilobytes on each table.
const INLINE_FLOWS: usize = 1_000;
/// third.cc's `qlen_mon_start` / `qlen_mon_end` when the config does not set them, ns.
const DEFAULT_QLEN_MON: (u64, u64) = (2_000_000_000, 2_100_000_000);

/// What [`write_scenario`] made.
#[derive(Clone, Debug, Default)]
pub struct ScenarioSummary {
    /// The scenario's text (also written to the file).
    pub text: String,
    /// Hosts, switches, links and flows of the experiment.
    pub hosts: usize,
    /// Switches.
    pub switches: usize,
    /// Links.
    pub links: usize,
    /// Flows.
    pub flows: usize,
    /// What the scenario could only approximate (also in its comments).
    pub warnings: Vec<String>,
}

/// `floor(s × 10^9)` computed exactly, as ns-3's `Seconds(double)` converts (the double to
/// 64.64 fixed point, times 10^9, the integer part), for `s` in `[0, 2^33)` s.
pub fn seconds_to_ns(s: f64) -> Option<u64> {
    if !(s.is_finite() && s >= 0.0 && s < (1u64 << 33) as f64) {
        return None;
    }
    if s == 0.0 {
        return Some(0);
    }
    let bits = s.to_bits();
    let exp_field = ((bits >> 52) & 0x7FF) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp_field == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), exp_field - 1075)
    };
    let scaled = u128::from(m) * 1_000_000_000;
    let ns = if e >= 0 {
        scaled << e
    } else if e > -128 {
        scaled >> (-e)
    } else {
        0
    };
    u64::try_from(ns).ok()
}

/// The config's `KMIN_MAP` / `KMAX_MAP` / `PMAX_MAP` (`n`, then `n` × (rate, value)).
fn rate_map(cfg: &Config, key: &str) -> Vec<(u64, String)> {
    let Some(v) = cfg.values(key) else {
        return Vec::new();
    };
    let n: usize = v.first().and_then(|n| n.parse().ok()).unwrap_or(0);
    v[1..]
        .chunks(2)
        .take(n)
        .filter_map(|c| Some((c.first()?.parse().ok()?, c.get(1)?.clone())))
        .collect()
}

/// Write the scenario of the experiment `config` names to `out` (staged, renamed into place).
pub fn write_scenario(config: &Path, out: &Path) -> Result<ScenarioSummary, ImportError> {
    let cfg = Config::load(config)?;
    let mut warnings = Vec::new();
    let cc_mode = cfg.uint("CC_MODE").unwrap_or(1);
    let model = match cc_mode {
        3 => "hpcc-ns3",
        1 => "dcqcn-ns3",
        m => {
            return Err(ImportError::Unsupported(format!(
                "{}: CC_MODE {m} has no ccreplay model (1 = DCQCN and 3 = HPCC have)",
                config.display()
            )));
        }
    };
    let mtu = cfg.uint("PACKET_PAYLOAD_SIZE").unwrap_or(1000);
    if !(64..=9000).contains(&mtu) {
        return Err(ImportError::Unsupported(format!(
            "{}: PACKET_PAYLOAD_SIZE {mtu}: ccreplay sim takes 64..=9000 bytes",
            config.display()
        )));
    }
    let topo_path = resolve(config, need(&cfg, "TOPOLOGY_FILE")?);
    let flow_path = resolve(config, need(&cfg, "FLOW_FILE")?);
    let topo = Topology::parse(&read_text(&topo_path)?, &topo_path)?;
    let flows = parse_flows(&read_text(&flow_path)?, &flow_path, &topo)?;
    if flows.is_empty() {
        return Err(ImportError::Incomplete {
            message: format!("{}: no flows", flow_path.display()),
            todo: "name an experiment with flows (FLOW_FILE of the config)".into(),
        });
    }

    // Nodes: ns-3 ids in order, hosts h0.., switches sw0.. (docs/sim.md "Custom topologies").
    let mut name = vec![String::new(); topo.nodes as usize];
    let (mut nh, mut ns) = (0usize, 0usize);
    for (i, n) in name.iter_mut().enumerate() {
        if topo.is_switch[i] {
            *n = format!("sw{ns}");
            ns += 1;
        } else {
            *n = format!("h{nh}");
            nh += 1;
        }
    }
    let mut degree = vec![0u32; topo.nodes as usize];
    for l in &topo.links {
        degree[l.a as usize] += 1;
        degree[l.b as usize] += 1;
        if l.error_rate != 0.0 {
            return Err(ImportError::Unsupported(format!(
                "{}: link {}-{} has error rate {}: ccreplay sim has no random link loss \
                 (set it to 0, or model the loss with [[link_events]])",
                topo_path.display(),
                l.a,
                l.b,
                l.error_rate
            )));
        }
    }
    // Nodes that no flow uses and no link joins are left out of nothing: the simulator makes
    // them, and so does the scenario (a host needs exactly one link, docs/sim.md).
    for (i, &d) in degree.iter().enumerate() {
        if !topo.is_switch[i] && d != 1 {
            return Err(ImportError::Unsupported(format!(
                "{}: host node {i} has {d} links: a ccreplay host has exactly one",
                topo_path.display()
            )));
        }
    }

    // Base RTT and window: third.cc's maxRtt / maxBdp over every host pair (GLOBAL_T 1).
    let hosts: Vec<u32> = (0..topo.nodes)
        .filter(|&n| !topo.is_switch[n as usize])
        .collect();
    let (mut max_rtt, mut max_bdp) = (0u64, 0u64);
    for &h in &hosts {
        let p = topo.paths_from(h, mtu);
        for &o in &hosts {
            if let Some(pi) = p[o as usize] {
                max_rtt = max_rtt.max(pi.rtt_ns());
                max_bdp = max_bdp.max(pi.bdp_bytes());
            }
        }
    }
    for (i, f) in flows.iter().enumerate() {
        if topo.paths_from(f.src, mtu)[f.dst as usize].is_none() {
            return Err(ImportError::Unsupported(format!(
                "{}: flow {i} (line {}): no path from node {} to node {}",
                flow_path.display(),
                f.line,
                f.src,
                f.dst
            )));
        }
    }
    if cfg.uint("GLOBAL_T").unwrap_or(1) != 1 {
        warnings.push(
            "GLOBAL_T 0 gives each host pair its own RTT and BDP; a scenario has one base RTT: \
             the largest (GLOBAL_T 1) is used"
                .into(),
        );
    }
    if cfg.uint("L2_ACK_INTERVAL").unwrap_or(1) != 1 {
        warnings
            .push("L2_ACK_INTERVAL is not 1: ccreplay's receivers acknowledge every packet".into());
    }
    if cfg.uint("INT_MULTI").unwrap_or(1) != 1 {
        warnings.push(
            "INT_MULTI is not 1: ccreplay's switches write INT in the wire units (INT_MULTI 1)"
                .into(),
        );
    }

    let stop_s = cfg.float("SIMULATOR_STOP_TIME").unwrap_or(DEFAULT_STOP_S);
    let duration_ns = seconds_to_ns(stop_s).filter(|&d| d > 0).ok_or_else(|| {
        ImportError::Unsupported(format!(
            "{}: SIMULATOR_STOP_TIME {stop_s} s is not a run length",
            config.display()
        ))
    })?;
    // The window the experimenter monitors queues in (third.cc monitor_buffer, every 100 ns
    // there) sets the resolution: 10 µs for the usual 10 ms window, where the run's whole
    // length (often a 2 s warm-up and a long tail) gave a few hundred µs and a handful of
    // samples of the flows' life. Samples before the first flow and after the network is
    // quiet are not taken (docs/metrics.md), so a fine interval costs only the active time.
    let mon_start = cfg.uint("QLEN_MON_START").unwrap_or(DEFAULT_QLEN_MON.0);
    let mon_end = cfg.uint("QLEN_MON_END").unwrap_or(DEFAULT_QLEN_MON.1);
    let sample_ns = if mon_end > mon_start {
        (mon_end - mon_start) / WINDOW_SAMPLES
    } else {
        duration_ns / MAX_SAMPLES
    }
    .max(1_000)
    // The engine's bound: at most 10^7 samples over the run.
    .max(duration_ns.div_ceil(10_000_000));
    let sample_why = if mon_end > mon_start {
        format!("QLEN_MON_START..QLEN_MON_END ({mon_start}..{mon_end} ns) / {WINDOW_SAMPLES}")
    } else {
        format!("the run / {MAX_SAMPLES} (no QLEN_MON window)")
    };

    let buffer_bytes = cfg.uint("BUFFER_SIZE").unwrap_or(DEFAULT_BUFFER_MB) * 1024 * 1024;
    // PFC: the simulator's threshold is dynamic, (buffer − headroom − reserve − shared used)
    // >> shift per ingress port (switch-mmu.cc GetPfcThreshold); a scenario's is static: the
    // threshold of an empty switch at the host rate, the smallest over switches.
    let nic_rate = hosts
        .iter()
        .filter_map(|&h| topo.nic_rate_bps(h))
        .next()
        .unwrap_or(0);
    let mut xoff = u64::MAX;
    for s in (0..topo.nodes).filter(|&n| topo.is_switch[n as usize]) {
        let ports: Vec<&Link> = topo.links.iter().filter(|l| l.a == s || l.b == s).collect();
        // third.cc: headroom = rate × delay / 8 / 1e9 × 3 per port (integer steps).
        let hdrm: u64 = ports
            .iter()
            .map(|l| {
                (u128::from(l.rate_bps) * u128::from(l.delay_ns) / 8 / 1_000_000_000 * 3) as u64
            })
            .sum();
        let free = buffer_bytes.saturating_sub(hdrm + MMU_RESERVE * ports.len() as u64);
        for l in &ports {
            let mut shift = PFC_SHIFT;
            let mut rate = l.rate_bps;
            while rate > nic_rate && shift > 0 {
                shift -= 1;
                rate /= 2;
            }
            xoff = xoff.min(free >> shift);
        }
    }

    let stem = out
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("ns3")
        .to_string();
    let q = |s: &str| toml::Value::String(s.into()).to_string();
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(
        w,
        "# Made by `ccreplay import ns3 {} --scenario {}` from the ns-3 simulator's experiment\n\
         # (alibaba-edu/High-Precision-Congestion-Control, scratch/third.cc): {}, {}.\n\
         # docs/import.md \"Experiments as scenarios\" says what maps one to one and what not.",
        config.display(),
        out.display(),
        topo_path.display(),
        flow_path.display()
    );
    let _ = writeln!(w, "name = {}", q(&stem));
    let _ = writeln!(w, "seed = 0");
    let _ = writeln!(w, "model = {}", q(model));
    let _ = writeln!(w, "# SIMULATOR_STOP_TIME {stop_s} s");
    let _ = writeln!(w, "duration_ns = {duration_ns}");
    let _ = writeln!(w, "mtu_bytes = {mtu}");
    let _ = writeln!(
        w,
        "# third.cc's maxRtt: 2 × path delay + Σ PACKET_PAYLOAD_SIZE × 8e9 / rate, largest pair"
    );
    let _ = writeln!(w, "base_rtt_ns = {max_rtt}");
    let _ = writeln!(
        w,
        "# {sample_why}; nothing is sampled before the first flow or once the network is quiet"
    );
    let _ = writeln!(w, "sample_interval_ns = {sample_ns}");
    // More than INLINE_FLOWS flows: a CSV beside the scenario, row k = the flow file's line
    // k + 1 (docs/sim.md "Flows from a file").
    let csv_path = (flows.len() > INLINE_FLOWS).then(|| out.with_extension("flows.csv"));
    if let Some(p) = &csv_path {
        let file = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let _ = writeln!(
            w,
            "# {} flows: row k of the CSV is line k + 1 of {}\nflows_file = {}",
            flows.len(),
            flow_path.display(),
            q(file.as_deref().unwrap_or_default())
        );
    }
    let mut csv = String::from("src,dst,size_bytes,start_ns,first_psn\n");
    let _ = writeln!(w, "\n[topology]\nkind = \"custom\"");
    let _ = writeln!(w, "hosts = {nh}\nswitches = {ns}");
    let _ = writeln!(w, "# ns-3 node ids: {}", node_map(&name));
    let _ = writeln!(w, "links = [");
    for l in &topo.links {
        let _ = writeln!(
            w,
            "  {{ a = {}, b = {}, rate_bps = {}, prop_ns = {} }},",
            q(&name[l.a as usize]),
            q(&name[l.b as usize]),
            l.rate_bps,
            l.delay_ns
        );
    }
    let _ = writeln!(w, "]");
    let _ = writeln!(w, "\n[switch]");
    let _ = writeln!(
        w,
        "# BUFFER_SIZE {} MB",
        cfg.uint("BUFFER_SIZE").unwrap_or(DEFAULT_BUFFER_MB)
    );
    let _ = writeln!(w, "buffer_bytes = {buffer_bytes}");
    // ECN: third.cc ConfigEcn(port, kmin[rate], kmax[rate], pmax[rate]), K in KB (× 1000).
    let (kmin, kmax, pmax) = (
        rate_map(&cfg, "KMIN_MAP"),
        rate_map(&cfg, "KMAX_MAP"),
        rate_map(&cfg, "PMAX_MAP"),
    );
    let mut rates: Vec<u64> = topo.links.iter().map(|l| l.rate_bps).collect();
    rates.sort_unstable();
    rates.dedup();
    let mut red = Vec::new();
    for &r in &rates {
        let find = |m: &[(u64, String)]| m.iter().find(|x| x.0 == r).map(|x| x.1.clone());
        match (find(&kmin), find(&kmax), find(&pmax)) {
            (Some(a), Some(b), Some(p)) => {
                let (a, b): (u64, u64) = (a.parse().unwrap_or(0), b.parse().unwrap_or(0));
                red.push(format!(
                    "  {{ rate_bps = {r}, kmin_bytes = {}, kmax_bytes = {}, pmax = {} }},",
                    a * 1000,
                    b * 1000,
                    p.parse::<f64>()
                        .map_or(p.clone(), |p| toml::Value::Float(p).to_string())
                ));
            }
            _ => warnings.push(format!(
                "no KMIN/KMAX/PMAX for links of {r} bps (the simulator asserts they are set): \
                 those ports use the [switch.red] default"
            )),
        }
    }
    if !red.is_empty() {
        let _ = writeln!(
            w,
            "# KMIN_MAP / KMAX_MAP (KB × 1000) / PMAX_MAP, by the port's link rate"
        );
        let _ = writeln!(w, "red_by_rate = [\n{}\n]", red.join("\n"));
    }
    if xoff != u64::MAX {
        let _ = writeln!(
            w,
            "# PFC: the simulator's dynamic threshold ((buffer - headroom - reserve - used) >> \
             shift) at an empty switch, static here; XON {MMU_RESUME_OFFSET} B below (resume_offset)"
        );
        let _ = writeln!(
            w,
            "[switch.pfc]\nxoff_bytes = {xoff}\nxon_bytes = {}",
            xoff.saturating_sub(MMU_RESUME_OFFSET)
        );
    }

    let win_bytes = max_bdp;
    let mut mw = Vec::new();
    let specs = sender_models(&cfg, cc_mode, win_bytes, &mut mw);
    warnings.extend(mw);
    let params = specs
        .iter()
        .find(|m| m.name == model)
        .map(|m| m.params.clone())
        .ok_or_else(|| {
            ImportError::Unsupported(format!("model {model} is not built into this ccreplay"))
        })?;
    let _ = writeln!(w, "\n# The config's parameters, else third.cc's defaults");
    if model == "hpcc-ns3" {
        let _ = writeln!(w, "[params]\n{params}");
    } else {
        let _ = writeln!(w, "[params.rp]\n{params}");
        // rdma-hw.cc ReceiveUdp: every ACK of a CE-marked packet carries the CNP flag; the
        // sender's RATE_DECREASE_INTERVAL paces the cuts. Here: a CNP per marked packet.
        let _ = writeln!(w, "[params.np]\nmin_time_between_cnps = 0\n");
    }
    for (i, f) in flows.iter().enumerate() {
        let start_ns = seconds_to_ns(f.start_s).ok_or_else(|| {
            ImportError::Unsupported(format!(
                "{}: flow {i} (line {}): start time {} s out of range",
                flow_path.display(),
                f.line,
                f.start_s
            ))
        })?;
        if csv_path.is_some() {
            let _ = writeln!(
                csv,
                "{},{},{},{start_ns},0",
                name[f.src as usize], name[f.dst as usize], f.size_bytes
            );
            continue;
        }
        let _ = writeln!(
            w,
            "[[flows]]\n# line {}: ns-3 {} -> {}, sport {}\nsrc = {}\ndst = {}\nsize_bytes = {}\n\
             start_ns = {start_ns}\nfirst_psn = 0\n",
            f.line,
            f.src,
            f.dst,
            f.sport,
            q(&name[f.src as usize]),
            q(&name[f.dst as usize]),
            f.size_bytes
        );
    }
    for wn in &warnings {
        let _ = writeln!(w, "# note: {wn}");
    }
    // Both staged, then renamed into place, the flows first: a failure leaves the old files,
    // and a scenario never names a CSV that is not there.
    let mut files: Vec<(&Path, &[u8])> = Vec::with_capacity(2);
    if let Some(p) = &csv_path {
        files.push((p, csv.as_bytes()));
    }
    files.push((out, o.as_bytes()));
    crate::outfile::write_all_atomic(&files).map_err(|source| ImportError::Io {
        path: out.into(),
        source,
    })?;
    Ok(ScenarioSummary {
        text: o,
        hosts: nh,
        switches: ns,
        links: topo.links.len(),
        flows: flows.len(),
        warnings,
    })
}

/// `0 = h0, 1 = sw0, ...`, runs of consecutive ids of one kind collapsed.
fn node_map(name: &[String]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < name.len() {
        let kind = name[i].starts_with('h');
        let mut j = i;
        while j + 1 < name.len() && name[j + 1].starts_with('h') == kind {
            j += 1;
        }
        parts.push(if i == j {
            format!("{i} = {}", name[i])
        } else {
            format!("{i}..{j} = {}..{}", name[i], name[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_convert_as_ns3_does() {
        assert_eq!(seconds_to_ns(2.0), Some(2_000_000_000));
        // 0.1 is 0.1000000000000000055511151231257827 as a double: floor(× 1e9) = 100,000,000.
        assert_eq!(seconds_to_ns(0.1), Some(100_000_000));
        // 0.3 is 0.299999999999999988897769753748434596 → 299,999,999 (not 300,000,000).
        assert_eq!(seconds_to_ns(0.3), Some(299_999_999));
        assert_eq!(seconds_to_ns(0.0), Some(0));
        assert_eq!(seconds_to_ns(-1.0), None);
        assert_eq!(seconds_to_ns(f64::NAN), None);
    }

    #[test]
    fn node_map_collapses_runs() {
        let n: Vec<String> = ["sw0", "h0", "h1", "h2", "sw1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(node_map(&n), "0 = sw0, 1..3 = h0..h2, 4 = sw1");
    }
}
