//! The files written beside each capture once the run is over: a tap's manifest (its models
//! and the network they were run with), a switch tap's manifest and `STEM.switch.toml`.

use std::net::IpAddr;

use ccreplay_codecs::Dialect;
use ccreplay_reference_cc::dcqcn::NicParams;
use ccreplay_reference_cc::net::{Cc, DataEcn, Metrics, NetConfig, NodeId, NodeKind};
use ccreplay_reference_cc::rcc::ReceiverParams;

use super::scenario::{Scenario, SwitchTapSpec, TapPoint, TapSpec};
use super::taps::SwitchOut;
use super::wire::{FIRST_RECEIVER_QP, FIRST_SENDER_QP, ROCE_UDP_PORT, host_ip, host_numbers};
use super::{IngressCapture, SimError, SwitchCapture, neighbours, scenario};
use crate::manifest::{
    CapturePoint, FlowSpec, IntSection, Manifest, ModelSpec, Network as Net, Source,
};

/// The files of one `[[switch_taps]]` entry once the run is over.
pub(super) fn switch_capture(
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
pub(super) fn manifest_text(
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
