//! `ccreplay init`: a manifest written from what a capture shows (issue 14.5).
//!
//! Role: turn a [`Detection`] (dialect, INT layout) and a [`Survey`] (tap host, flows, link
//! rate, base RTT, MTU) into manifest text, every inferred value with a comment saying how it
//! was found and how to correct it. May use: detect/, manifest (to check what it writes),
//! models (to check parameters). Writing the file is the CLI's (cli/init.rs).

use std::path::Path;

use ccreplay_codecs::shim::IntLayout;
use ccreplay_codecs::{DecodeConfig, Dialect, tunnel};

use crate::detect::Detection;
use crate::detect::survey::Survey;
use crate::manifest::Manifest;
use crate::verdict::{OtherPort, n};

/// Keys of `--param` that are the `[network]`'s, not a model's.
pub const NETWORK_KEYS: [&str; 3] = ["line_rate_bps", "base_rtt_ns", "mtu_bytes"];

/// The comment above the model parameters init writes at their defaults: `diff` looks for it
/// to say that a verdict with differences may come from them.
pub const GUESSED_PARAMS: &str = "# GUESS: the model's defaults";

/// What the user asked for.
#[derive(Clone, Debug, Default)]
pub struct InitOptions {
    /// Models to list (default: the dialect's at the capture point).
    pub models: Vec<String>,
    /// `[MODEL.]KEY=VALUE` parameters, in the order given.
    pub params: Vec<(Option<String>, String, toml::Value)>,
}

/// Why no manifest could be written.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The capture holds nothing to build a manifest on.
    #[error("{0}")]
    Nothing(String),
    /// A parameter or model the user gave is wrong.
    #[error("{0}")]
    Invalid(String),
}

/// Parse `--param [MODEL.]KEY=VALUE`; VALUE is a TOML value (`0.95`, `4`, `true`, `[]`), or a
/// string when it is none.
pub fn parse_param(s: &str) -> Result<(Option<String>, String, toml::Value), String> {
    let (key, value) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected [MODEL.]KEY=VALUE"))?;
    let (model, key) = match key.split_once('.') {
        Some((m, k)) => (Some(m.trim().to_string()), k.trim().to_string()),
        None => (None, key.trim().to_string()),
    };
    if key.is_empty() {
        return Err(format!("`{s}`: no KEY before `=`"));
    }
    let value = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    Ok((model, key, value))
}

/// The models a capture of `dialect` at `kind` replays by default.
pub fn default_models(dialect: Dialect, kind: &str) -> Result<Vec<&'static str>, String> {
    Ok(match (dialect, kind) {
        (_, "switch_port") => vec!["dcqcn-cp"],
        (Dialect::Roce, "sender") => vec!["dcqcn"],
        (Dialect::Roce, _) => vec!["dcqcn-np"],
        (Dialect::Hpcc, "sender") => vec!["hpcc"],
        (Dialect::Hpcc, _) => {
            return Err(
                "HPCC decides at the sender: no model replays an hpcc capture taken at a receiver (capture at the sender, or give --model)"
                    .into(),
            );
        }
        (Dialect::Fncc, "sender") => vec!["fncc"],
        (Dialect::Fncc, _) => vec!["fncc-receiver"],
        (Dialect::Rcc, "sender") => vec!["rcc-sender"],
        (Dialect::Rcc, _) => vec!["rcc-receiver"],
    })
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The ERSPAN session `init` replays when the capture holds the same packets mirrored by
/// several sessions (each would replay once per copy, the verdict's error): the one with the
/// most RoCEv2 packets, the lowest on a tie. None when no packet came twice, or when a copy
/// was the port's own or had no session — which `[mirror] session` cannot leave out (the
/// replay's error then says how to keep one copy).
pub fn chosen_session(survey: &Survey) -> Option<u16> {
    if survey.copied.is_empty()
        || survey
            .copied
            .keys()
            .any(|(a, b)| a.is_none() || b.is_none())
    {
        return None;
    }
    survey
        .sessions
        .iter()
        .filter_map(|(s, n)| Some(((*s)?, *n)))
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(s, _)| s)
}

/// The end of `[mirror]` for a capture whose every packet is stamped: why this clock, and the
/// `clock` key (commented out when the capture's clock is kept).
fn clock_lines(survey: &Survey) -> [&'static str; 2] {
    if switch_clock(survey) {
        [
            "# the path to the collector added jitter, so the switch's clock times the events",
            "clock = \"switch\"",
        ]
    } else if survey.stamp_unit_ns >= 1_000 {
        [
            "# the stamps are coarser than the capture's clock, which times the events",
            "# clock = \"switch\"",
        ]
    } else {
        [
            "# as close as the stamps' unit allows: the capture's finer clock times the events",
            "# clock = \"switch\"",
        ]
    }
}

/// Every RoCEv2 packet carries a mirroring switch's ERSPAN III stamp.
fn all_stamped(survey: &Survey) -> bool {
    survey.roce > 0 && survey.stamped == survey.roce
}

/// True when the events should be timed by the mirroring switches' clocks: every RoCEv2
/// packet is stamped, in units finer than a microsecond (Gra 0's 100 µs is coarser than any
/// capture's clock), and the capture's times stray from the stamps by two of their units or
/// more — more than an exact capture clock could (the stamps floor the time, and each clock's
/// origin is its first copy's capture time): the path to the collector added its jitter.
pub fn switch_clock(survey: &Survey) -> bool {
    let (lo, hi) = survey.switch_clock.capture_minus_switch_ns;
    let unit = survey.stamp_unit_ns;
    all_stamped(survey) && unit < 1_000 && hi.saturating_sub(lo) >= 2 * unit as i64
}

/// What to try when the capture holds no RoCEv2 packet (`manifest_text`'s `Nothing`), by the
/// UDP port most of its other packets go to: RoCEv2 on another port, or an overlay tunnel's
/// (docs/wire.md 2.2) on a port not read.
pub fn nothing_hint(survey: &Survey, cfg: &DecodeConfig) -> String {
    let Some((port, _)) = survey.busiest_other_udp() else {
        return "`ccreplay inspect CAPTURE` shows what the capture holds".to_string();
    };
    match OtherPort::of(port, cfg) {
        OtherPort::TunnelEmpty(t) => format!(
            "UDP {port} is the {t} port, and these packets carry no Ethernet or IP frame inside: `ccreplay inspect CAPTURE` shows what they hold"
        ),
        OtherPort::TunnelMoved(t, key) => format!(
            "UDP {port} is {t}'s port, which --{key}-port moved: leave it out to read the RoCEv2 inside"
        ),
        OtherPort::LinuxVxlan => "UDP 8472 is Linux's VXLAN port: if the packets are VXLAN, `ccreplay init CAPTURE --vxlan-port 8472` reads the RoCEv2 inside".to_string(),
        OtherPort::Other => {
            format!("if port {port} carries RoCEv2, `ccreplay init CAPTURE --udp-port {port}`")
        }
    }
}

/// The manifest text for `capture`; `capture_field` is what `capture =` says (its path from
/// the manifest's folder).
pub fn manifest_text(
    capture: &Path,
    capture_field: &str,
    detection: &Detection,
    survey: &Survey,
    opts: &InitOptions,
) -> Result<String, InitError> {
    let cfg = detection.config();
    if survey.roce == 0 {
        // The frame that cut a damaged capture short, when that is why it holds none.
        let cut = survey
            .capture_error
            .as_ref()
            .map(|e| format!(" (the capture ends early: {e})"))
            .unwrap_or_default();
        let mut other = survey
            .busiest_other_udp()
            .map(|(port, count)| format!("; {} are UDP to port {port}", n(count)))
            .unwrap_or_default();
        if !survey.unsupported_links.is_empty() {
            other.push_str(&format!(
                "; records of a link type ccreplay does not read ({}: a native InfiniBand capture carries no RoCEv2)",
                ccreplay_codecs::capture::describe_links(&survey.unsupported_links)
            ));
        }
        // RoCEv2 that none of the readings took whole: say how the closest one failed.
        let b = detection.best();
        let why = if detection.sampled > 0 && !b.misreadings().is_empty() {
            format!(
                " ({} sampled: as {}, {})",
                n(detection.sampled),
                b.config.dialect.name(),
                b.misreadings().join(", ")
            )
        } else {
            String::new()
        };
        return Err(InitError::Nothing(format!(
            "{} holds no RoCEv2 packet (UDP to port {}) that reads cleanly in {} frame{}{why}{cut}{other}: nothing to replay",
            capture.display(),
            cfg.udp_port,
            n(survey.frames),
            if survey.frames == 1 { "" } else { "s" },
        )));
    }
    let file = capture
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut t = String::new();
    let mut line = |s: &str| {
        t.push_str(s);
        t.push('\n');
    };
    line(&format!(
        "# Written by `ccreplay init {file}` from what the capture shows (docs/manifest.md)."
    ));
    line("# Each inferred value has a comment saying how it was found; GUESS marks one the");
    line("# capture could not tell: set it to your setup's value.");
    line(&format!("capture = {}", toml_str(capture_field)));
    line(&format!("# {}", detection.why()));
    line(&format!("dialect = \"{}\"", cfg.dialect.name()));
    line("");

    // The capture point.
    line("[capture_point]");
    let host = survey.tap_host();
    let kind = match host {
        Some(h) => {
            let (sent, received) = survey.data_of(h);
            let kind = if sent >= received {
                "sender"
            } else {
                "receiver"
            };
            // Its one peer is on every packet too (a capture of the link between two NICs,
            // as a Lumina dump is): say which side is replayed and how to take the other.
            let peer = survey
                .ips
                .iter()
                .find(|&(ip, &c)| *ip != h && c == survey.roce)
                .map(|(ip, _)| *ip);
            line(&format!(
                "# {h} is on every one of the {} RoCEv2 packets; it sends {} data packets and receives {}",
                n(survey.roce),
                n(sent),
                n(received)
            ));
            if let Some(p) = peer {
                let (other_kind, verb) = if kind == "sender" {
                    ("receiver", "receives")
                } else {
                    ("sender", "sends")
                };
                line(&format!(
                    "# so is its one peer, {p}: for that NIC (the one that {verb} the data), kind = \"{other_kind}\", host = \"{p}\""
                ));
            } else if sent > 0 && received > 0 {
                line(&format!(
                    "# (data both ways: replayed as the {kind}; change `kind` for the other side)"
                ));
            }
            line(&format!("kind = \"{kind}\""));
            line(&format!("host = \"{h}\""));
            kind
        }
        None => {
            let stem = capture
                .file_stem()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            line(&format!(
                "# no address is on every RoCEv2 packet ({} addresses): a switch port's mirror",
                survey.ips.len()
            ));
            line("kind = \"switch_port\"");
            line("# GUESS: name the switch and port, for reports (e.g. \"tor1:17\")");
            line(&format!("port = {}", toml_str(&stem)));
            "switch_port"
        }
    };
    if let Some(pp) = survey.path_pair {
        // docs/verdicts.md "Packets seen at two points of their path".
        line(&format!(
            "# {} packets are here twice, seen at two points of their path (frame {} is frame {} again, TTL {} after {}: a mirror session with two ports of the path, or captures merged): {}",
            n(survey.path_copies),
            pp.frame,
            pp.of,
            pp.ttl,
            pp.of_ttl,
            if kind == "switch_port" {
                "a switch port's capture must be of one port — keep one (`tshark -Y 'ip.ttl == N'`)"
            } else {
                "the replay uses the host's copies (what it sends as it leaves, what it receives as it arrives)"
            }
        ));
    }
    line("");

    // The network: given values win over estimates.
    let given = |key: &str| {
        opts.params
            .iter()
            .rev()
            .find(|(m, k, _)| m.is_none() && k == key)
            .map(|(_, _, v)| v.clone())
    };
    line("[network]");
    let estimates = [
        ("link_rate_bps", "line_rate_bps", survey.link_rate(host)),
        (
            "base_rtt_ns",
            "base_rtt_ns",
            survey.base_rtt(host.filter(|_| kind == "sender")),
        ),
        ("mtu_bytes", "mtu_bytes", survey.mtu()),
    ];
    for (key, param, est) in estimates {
        if let Some(v) = given(param) {
            line(&format!(
                "# given on the command line (--param {param}=...)"
            ));
            line(&format!("{key} = {v}"));
            continue;
        }
        let tag = if est.measured { "measured" } else { "GUESS" };
        line(&format!("# {tag}: {}", est.how));
        line(&format!("{key} = {}", est.value));
    }
    line(&format!("udp_port = {}", cfg.udp_port));
    // The tunnels' ports only when not IANA's (docs/wire.md 2.2).
    for (key, port, default) in [
        ("vxlan_port", cfg.vxlan_port, tunnel::VXLAN_UDP_PORT),
        ("geneve_port", cfg.geneve_port, tunnel::GENEVE_UDP_PORT),
    ] {
        if port != default {
            line(&format!("{key} = {port}"));
        }
    }
    line("");

    if matches!(cfg.dialect, Dialect::Hpcc | Dialect::Fncc) {
        line("[int]");
        let (layout, hops) = match cfg.int.layout {
            IntLayout::Padded => ("padded", cfg.int.max_hops),
            IntLayout::Grown => ("grown", detection.best().max_n_hop.max(5)),
        };
        let seen = detection.best().max_n_hop;
        line(&format!(
            "# detected with the dialect; up to {seen} hop{} filled",
            if seen == 1 { "" } else { "s" }
        ));
        line(&format!("max_hops = {hops}"));
        line(&format!("layout = \"{layout}\""));
        line("");
    }

    // The models and their parameters.
    let models: Vec<String> = if opts.models.is_empty() {
        default_models(cfg.dialect, kind)
            .map_err(InitError::Invalid)?
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        opts.models.clone()
    };
    for (m, k, _) in &opts.params {
        if let Some(m) = m
            && !models.contains(m)
        {
            return Err(InitError::Invalid(format!(
                "--param {m}.{k}: `{m}` is not among the models ({})",
                models.join(", ")
            )));
        }
    }
    for m in &models {
        let mut given = toml::Table::new();
        for (pm, k, v) in &opts.params {
            let network = pm.is_none() && NETWORK_KEYS.contains(&k.as_str());
            if (pm.is_none() && !network) || pm.as_deref() == Some(m.as_str()) {
                given.insert(k.clone(), v.clone());
            }
        }
        line("[[models]]");
        if opts.models.is_empty() {
            line(&format!(
                "# the model for `{}` at a {kind} (--model to choose; `ccreplay replay --help` lists them)",
                cfg.dialect.name()
            ));
        }
        line(&format!("name = {}", toml_str(m)));
        // The device's configuration is not on the wire: every parameter the model reads is
        // written, the ones not given at its default, so a user sees what to set (a NIC
        // configured otherwise differs from its first decisions on).
        let mut defaults = crate::models::default_params(m).unwrap_or_default();
        defaults.retain(|k, _| !NETWORK_KEYS.contains(&k) && !given.contains_key(k));
        if !given.is_empty() || !defaults.is_empty() {
            line("");
            line("[models.params]");
        }
        if !given.is_empty() {
            line("# given (--param)");
            let text = toml::to_string(&given).map_err(|e| InitError::Invalid(e.to_string()))?;
            t_push(&mut line, &text);
        }
        if !defaults.is_empty() {
            line(&format!(
                "{GUESSED_PARAMS} (docs/models/{}.md): set your device's configured values",
                model_doc(m)
            ));
            let text = toml::to_string(&defaults).map_err(|e| InitError::Invalid(e.to_string()))?;
            t_push(&mut line, &text);
        }
        line("");
    }

    // The flows.
    if kind != "switch_port" {
        let host = host.expect("a host at a sender or receiver");
        let flows = survey.flows();
        let mut written = 0;
        let mut unpaired = Vec::new();
        for f in &flows {
            let (local, remote) = if kind == "sender" {
                (f.data.src, f.data.dst)
            } else {
                (f.data.dst, f.data.src)
            };
            if local != host {
                continue;
            }
            let Some(fb) = f.feedback else {
                unpaired.push(f);
                continue;
            };
            // At a sender the local QP is the one its ACKs carry; at a receiver, its data's.
            let (local_qp, remote_qp) = if kind == "sender" {
                (fb.dest_qp, f.data.dest_qp)
            } else {
                (f.data.dest_qp, fb.dest_qp)
            };
            line("[[flows]]");
            if f.feedback_reads > 0 {
                line(&format!(
                    "# {} data packets, {} ACK/NAK/CNP; paired by PSN with its READ request{} ({})",
                    n(f.data_packets),
                    n(f.feedback_packets),
                    if f.feedback_reads == 1 { "" } else { "s" },
                    n(f.feedback_reads)
                ));
            } else {
                line(&format!(
                    "# {} data packets, {} ACK/NAK/CNP; paired by PSN",
                    n(f.data_packets),
                    n(f.feedback_packets)
                ));
            }
            line(&format!("local_ip = \"{local}\""));
            line(&format!("local_qp = {local_qp}"));
            line(&format!("remote_ip = \"{remote}\""));
            line(&format!("remote_qp = {remote_qp}"));
            line("");
            written += 1;
        }
        let mut by_hand = false;
        for f in unpaired {
            // ACKs from its peer that could answer it or another QP's same PSNs.
            let maybe: Vec<String> = survey
                .ambiguous
                .keys()
                .filter(|d| d.src == f.data.dst && d.dst == f.data.src)
                .map(|d| format!("0x{:06x}", d.dest_qp))
                .collect();
            if maybe.is_empty() {
                line(&format!(
                    "# {} -> {} QP 0x{:06x} ({} data packets): no ACK answers its PSNs, so no [[flows]] entry; its",
                    f.data.src,
                    f.data.dst,
                    f.data.dest_qp,
                    n(f.data_packets)
                ));
                line("# data is still replayed, paired by IP pair (docs/manifest.md)");
            } else {
                line(&format!(
                    "# {} -> {} QP 0x{:06x} ({} data packets): another QP to {} sent the same PSNs at the same time,",
                    f.data.src,
                    f.data.dst,
                    f.data.dest_qp,
                    n(f.data_packets),
                    f.data.dst
                ));
                line(&format!(
                    "# so the ACKs on QP {} could answer either: pair it by hand, a [[flows]] entry with the",
                    maybe.join(", ")
                ));
                line("# local_qp its ACKs come back on (docs/manifest.md \"Flows\")");
                by_hand = true;
            }
        }
        if written == 0 && !by_hand {
            line("# no flow pairs its data with ACKs: flows are paired by IP pair at replay");
        }
    }

    let session = chosen_session(survey);
    if let Some(chosen) = session {
        line("[mirror]");
        let list: Vec<String> = survey
            .sessions
            .iter()
            .filter_map(|(s, c)| Some(format!("{} ({} RoCEv2 packets)", (*s)?, n(*c))))
            .collect();
        line(&format!(
            "# the same packets were mirrored by more than one ERSPAN session: {};",
            list.join(", ")
        ));
        line(&format!(
            "# each packet would replay once per copy, so session {chosen}'s are replayed (set another to replay its)"
        ));
        line(&format!("session = {chosen}"));
        if !all_stamped(survey) {
            line("");
        }
    }
    if cfg.lumina_port != 0 {
        // A Lumina dump: its switch's timestamps are what Lumina's own analysis reads.
        if session.is_none() {
            line("[mirror]");
        }
        line(&format!(
            "# a Lumina testbed's dump (docs/wire.md 2.3): {} of its {} RoCEv2 packets are the switch's",
            n(survey.stamped),
            n(survey.roce)
        ));
        if cfg.lumina_port == cfg.udp_port {
            line(
                "# copies as Lumina's dumper writes them (on the RoCEv2 port, their ports put back), numbered and",
            );
            line("# stamped at the switch's ingress in ns, which times the events");
        } else {
            line(
                "# copies to this port, numbered and stamped at the switch's ingress in ns, which times the events",
            );
        }
        line(&format!("lumina_port = {}", cfg.lumina_port));
        line("clock = \"switch\"");
        line("");
    } else if all_stamped(survey) {
        let (lo, hi) = survey.switch_clock.capture_minus_switch_ns;
        if session.is_none() {
            line("[mirror]");
        }
        line(&format!(
            "# every RoCEv2 packet was mirrored as ERSPAN III, stamped by the switch in {} ns units;",
            n(survey.stamp_unit_ns)
        ));
        line(&format!(
            "# the capture's times were {} to {} ns from those stamps (docs/manifest.md):",
            crate::verdict::n_signed(lo),
            crate::verdict::n_signed(hi)
        ));
        for l in clock_lines(survey) {
            line(l);
        }
        line("");
    }
    line("[source]");
    line("kind = \"captured\"");
    line("# generator = \"NIC or switch model, firmware, capture tool\"");
    // What was written must be a manifest `replay` takes.
    let m = Manifest::parse(&t, Path::new("init"))
        .map_err(|e| InitError::Invalid(format!("the manifest would not parse: {e}")))?;
    // And models that build with the parameters given (C-7: named when rejected).
    for spec in &m.models {
        crate::models::build(&spec.name, &m.model_params(spec))
            .map_err(|e| InitError::Invalid(e.to_string()))?;
    }
    Ok(t)
}

/// The page of docs/models/ that documents model `name`'s parameters.
fn model_doc(name: &str) -> &'static str {
    if name.ends_with("-ns3") {
        "ns3"
    } else if name.starts_with("dcqcn") {
        "dcqcn"
    } else if name.starts_with("fncc") {
        "fncc"
    } else if name.starts_with("rcc") {
        "rcc"
    } else {
        "hpcc"
    }
}

fn t_push(line: &mut impl FnMut(&str), text: &str) {
    for l in text.lines() {
        line(l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a capture without RoCEv2 is told to try, by where its other UDP goes and which
    /// tunnel ports were read (docs/manifest.md).
    #[test]
    fn no_roce_names_the_option_that_reads_the_udp() {
        let hint = |other: &[(u16, u64)], vxlan: u16, geneve: u16| {
            let mut s = Survey::default();
            s.other_udp.extend(other.iter().copied());
            let cfg = DecodeConfig {
                vxlan_port: vxlan,
                geneve_port: geneve,
                ..DecodeConfig::default()
            };
            nothing_hint(&s, &cfg)
        };
        let (v, g) = (4789, 6081);
        assert_eq!(
            hint(&[], v, g),
            "`ccreplay inspect CAPTURE` shows what the capture holds"
        );
        // The tunnels' own ports, read: their packets hold no frame.
        assert!(hint(&[(4789, 5)], v, g).starts_with("UDP 4789 is the VXLAN port, and these"));
        assert!(hint(&[(6081, 5)], v, g).starts_with("UDP 6081 is the Geneve port, and these"));
        // Moved away from IANA's: the option that moved them.
        assert!(
            hint(&[(4789, 5)], 8472, g)
                .starts_with("UDP 4789 is VXLAN's port, which --vxlan-port moved")
        );
        assert!(
            hint(&[(6081, 5)], v, 0)
                .starts_with("UDP 6081 is Geneve's port, which --geneve-port moved")
        );
        assert!(hint(&[(8472, 2)], v, g).contains("`ccreplay init CAPTURE --vxlan-port 8472`"));
        // Another port, the busiest (the lowest of a tie).
        assert_eq!(
            hint(&[(5000, 7), (4792, 7), (53, 2)], v, g),
            "if port 4792 carries RoCEv2, `ccreplay init CAPTURE --udp-port 4792`"
        );
        assert!(hint(&[(5000, 8), (4792, 7)], v, g).contains("--udp-port 5000"));
    }

    /// The switch's clock when every packet is stamped finer than 1 µs and the capture strays
    /// from the stamps by two of their units or more; a comment saying why otherwise.
    #[test]
    fn the_switch_clock_is_chosen_by_the_spread() {
        let survey = |roce: u64, stamped: u64, unit: u64, lo: i64, hi: i64| {
            let mut s = Survey::default();
            (s.roce, s.stamped, s.stamp_unit_ns) = (roce, stamped, unit);
            s.switch_clock.capture_minus_switch_ns = (lo, hi);
            s
        };
        // 100 ns stamps: a spread of 199 ns is what flooring to them allows, 200 is not.
        assert!(!switch_clock(&survey(10, 10, 100, -50, 149)));
        assert!(switch_clock(&survey(10, 10, 100, -50, 150)));
        assert_eq!(
            clock_lines(&survey(10, 10, 100, -50, 150))[1],
            "clock = \"switch\""
        );
        assert!(clock_lines(&survey(10, 10, 100, -50, 149))[0].starts_with("# as close as"));
        // One packet without a stamp, or none at all: the capture's clock.
        assert!(!switch_clock(&survey(10, 9, 100, 0, 50_000)));
        assert!(!switch_clock(&survey(0, 0, 0, 0, 0)));
        // 100 µs stamps are coarser than any capture's clock, whatever the spread.
        assert!(!switch_clock(&survey(10, 10, 100_000, 0, 900_000)));
        assert!(
            clock_lines(&survey(10, 10, 100_000, 0, 900_000))[0]
                .starts_with("# the stamps are coarser")
        );
        // IEEE 1588 stamps (1 ns): 2 ns of spread already says the collector added some.
        assert!(switch_clock(&survey(10, 10, 1, 0, 2)));
    }

    #[test]
    fn params_are_toml_values_with_an_optional_model() {
        let (m, k, v) = parse_param("eta=0.95").unwrap();
        assert_eq!((m, k.as_str(), v), (None, "eta", toml::Value::Float(0.95)));
        let (m, k, v) = parse_param("dcqcn-nic.rpg_gd=11").unwrap();
        assert_eq!(
            (m.as_deref(), k.as_str(), v),
            (Some("dcqcn-nic"), "rpg_gd", toml::Value::Integer(11))
        );
        let (_, _, v) = parse_param("reserved_line_rates=[]").unwrap();
        assert_eq!(v, toml::Value::Array(vec![]));
        let (_, _, v) = parse_param("name=tor1").unwrap();
        assert_eq!(v, toml::Value::String("tor1".into()));
        assert!(parse_param("eta").is_err());
        assert!(parse_param("=1").is_err());
    }

    #[test]
    fn every_dialect_has_a_model_at_a_sender() {
        for d in Dialect::ALL {
            let m = default_models(d, "sender").unwrap();
            for name in m {
                assert!(crate::models::fields(name).is_some(), "{name}");
            }
        }
        assert!(default_models(Dialect::Hpcc, "receiver").is_err());
    }
}
