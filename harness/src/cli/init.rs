//! `ccreplay init`: write the manifest beside a capture from what the capture shows.

use std::path::PathBuf;

use clap::Args;

use ccreplay::detect::{self, survey::Survey};
use ccreplay::init::{self, InitOptions};

use super::{Failure, judge_input, load_trace, report_extraction, write_atomic};

#[derive(Args)]
pub(crate) struct InitArgs {
    /// The capture (pcap or pcapng); the manifest is written beside it, same stem, `.toml`.
    pub(crate) capture: PathBuf,
    /// A model to list (repeatable; default: the detected dialect's at the capture point).
    #[arg(long = "model")]
    pub(crate) models: Vec<String>,
    /// A parameter, `[MODEL.]KEY=VALUE` (repeatable): without MODEL, for every model;
    /// `line_rate_bps`, `base_rtt_ns` and `mtu_bytes` set `[network]` instead of the estimate.
    #[arg(long = "param", value_parser = init::parse_param)]
    pub(crate) params: Vec<(Option<String>, String, toml::Value)>,
    /// RoCEv2's UDP destination port.
    #[arg(long, default_value_t = 4791)]
    pub(crate) udp_port: u16,
    /// VXLAN's UDP destination port (0: not decoded); RoCEv2 inside VXLAN is read.
    #[arg(long, default_value_t = ccreplay_codecs::tunnel::VXLAN_UDP_PORT)]
    pub(crate) vxlan_port: u16,
    /// Geneve's UDP destination port (0: not decoded).
    #[arg(long, default_value_t = ccreplay_codecs::tunnel::GENEVE_UDP_PORT)]
    pub(crate) geneve_port: u16,
    /// The UDP destination port a Lumina testbed's switch sends its copies to: each is read
    /// as the packet it copies, with the switch's timestamp, sequence number and event
    /// (docs/wire.md 2.3; 0: none).
    #[arg(long, default_value_t = 0)]
    pub(crate) lumina_port: u16,
    /// Write the manifest here instead of beside the capture (`-` for standard output).
    #[arg(short, long)]
    pub(crate) out: Option<PathBuf>,
    /// Replace a manifest that is already there.
    #[arg(long)]
    pub(crate) force: bool,
}

pub(crate) fn run(a: InitArgs) -> Result<u8, Failure> {
    let target = a
        .out
        .clone()
        .unwrap_or_else(|| a.capture.with_extension("toml"));
    let to_stdout = target.as_os_str() == "-";
    if !to_stdout && target.exists() && !a.force {
        return Err(Failure::input(
            format!("{} exists: not replaced", target.display()),
            "give --force to replace it, or -o FILE to write elsewhere".to_string(),
        ));
    }
    let unreadable = |e: ccreplay_codecs::capture::CaptureError| {
        Failure::input(
            format!("{}: {e}", a.capture.display()),
            "init reads pcap and pcapng files (link types Ethernet, Linux SLL/SLL2, raw IP)"
                .to_string(),
        )
    };
    let mut ports = ccreplay_codecs::DecodeConfig {
        udp_port: a.udp_port,
        vxlan_port: a.vxlan_port,
        geneve_port: a.geneve_port,
        lumina_port: a.lumina_port,
        ..Default::default()
    };
    let read = |ports: &ccreplay_codecs::DecodeConfig| {
        let detection = detect::detect_file_on(&a.capture, ports).map_err(unreadable)?;
        let mut cfg = detection.config();
        if cfg.int.layout == ccreplay_codecs::shim::IntLayout::Grown {
            cfg.int.max_hops = 15;
        }
        let survey = Survey::read(&a.capture, &cfg, false).map_err(unreadable)?;
        Ok::<_, Failure>((detection, cfg, survey))
    };
    let (mut detection, mut cfg, mut survey) = read(&ports)?;
    // Every RoCEv2 packet with a Lumina switch's event in its TTL and its sequence number in
    // its source MAC: a dump as Lumina's dumper writes it, copies on the RoCEv2 port (read
    // as plain packets, the ones the switch dropped would replay as received).
    if ports.lumina_port == 0 && survey.roce > 0 && survey.lumina_like == survey.roce {
        eprintln!(
            "ccreplay: {}: every RoCEv2 packet carries a Lumina switch's event in its IPv4 TTL (0-3) and its sequence number in its source MAC: read as a Lumina testbed's dump, as Lumina's dumper writes it (`[mirror] lumina_port = {}`, docs/wire.md 2.3)",
            a.capture.display(),
            ports.udp_port
        );
        ports.lumina_port = ports.udp_port;
        (detection, cfg, survey) = read(&ports)?;
    }
    // The capture read again as the manifest will have it replayed; the sessions seen in the
    // whole capture kept for the manifest's comment.
    let again = |survey: &Survey, cfg: &ccreplay_codecs::DecodeConfig, switch_clock: bool| {
        let mut s = Survey::read(&a.capture, cfg, switch_clock).map_err(unreadable)?;
        (s.sessions, s.copied) = (survey.sessions.clone(), survey.copied.clone());
        Ok::<_, Failure>(s)
    };
    // The same packets mirrored by several sessions: the estimates from one session's copies
    // (another's copy of a packet would sit 0 ns from it).
    if let Some(session) = init::chosen_session(&survey) {
        cfg.mirror_session = Some(session);
        survey = again(&survey, &cfg, false)?;
    }
    // Every RoCEv2 packet stamped by a mirroring switch, finer than a microsecond: the
    // manifest times events by the switch (`[mirror] clock`), so the estimates do too.
    if init::switch_clock(&survey) || cfg.lumina_port != 0 {
        survey = again(&survey, &cfg, true)?;
    }
    let opts = InitOptions {
        models: a.models.clone(),
        params: a.params.clone(),
    };
    // `capture =` is relative to the manifest's folder: the file name beside it, else the
    // capture's absolute path.
    let same_dir = to_stdout
        || std::path::absolute(&target)
            .ok()
            .and_then(|t| t.parent().map(|p| p.to_path_buf()))
            == std::path::absolute(&a.capture)
                .ok()
                .and_then(|c| c.parent().map(|p| p.to_path_buf()));
    let field = if same_dir {
        a.capture
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        std::fs::canonicalize(&a.capture)
            .unwrap_or_else(|_| a.capture.clone())
            .display()
            .to_string()
    };
    let text =
        init::manifest_text(&a.capture, &field, &detection, &survey, &opts).map_err(|e| {
            if let init::InitError::Invalid(_) = e {
                // RoCEv2 was found: what failed is a value given or estimated.
                let hint = "give the value with `--param KEY=VALUE` (`ccreplay init --help`); `ccreplay init CAPTURE --param ... -o -` prints the manifest, with how each estimate was made";
                return Failure::input(e, hint.to_string());
            }
            // No RoCEv2: a Lumina dump, whose copies go to a port of the testbed's choosing?
            let lumina = survey
                .busiest_other_udp()
                .filter(|_| cfg.lumina_port == 0)
                .and_then(|(port, _)| {
                    let (copies, valid) = ccreplay::lumina::probe(&a.capture, port).ok()?;
                    (valid > 0 && valid * 2 >= copies).then_some((port, valid))
                });
            let hint = match lumina {
                Some((port, valid)) => format!(
                    "UDP {port} holds a Lumina switch's copies ({} of them check their ICRC with the packet's own ports put back): `ccreplay init CAPTURE --lumina-port {port}` (docs/wire.md 2.3)",
                    ccreplay::verdict::n(valid)
                ),
                None => init::nothing_hint(&survey, &cfg),
            };
            Failure::input(e, hint)
        })?;
    if let Some(e) = &survey.capture_error {
        eprintln!(
            "ccreplay: warning: {}: the capture ends early after {} frames ({e}); the manifest is from those",
            a.capture.display(),
            survey.frames
        );
    }
    if to_stdout {
        out!("{text}");
        return Ok(0);
    }
    write_atomic(&target, text.as_bytes())?;
    let guesses = text.lines().filter(|l| l.starts_with("# GUESS")).count();
    // The manifest, tried: a replay of every model it lists, judged as `replay` judges.
    let trace = load_trace(&target)?;
    for spec in &trace.manifest.models {
        let stats = ccreplay::replay::replay_reference(&trace, spec, 1, |_| Ok(()))
            .map_err(|e| Failure::input(e, None))?;
        if spec.name == trace.manifest.models[0].name {
            report_extraction(&trace, &stats.extract);
        }
        judge_input(
            &trace,
            &spec.name,
            &stats,
            false,
            spec.name != trace.manifest.models[0].name,
        )?;
        note!(
            "ccreplay: {}: {} events, {} decisions",
            spec.name,
            ccreplay::verdict::n(stats.events),
            ccreplay::verdict::n(stats.decisions)
        );
    }
    let flows = text.matches("[[flows]]").count();
    note!(
        "ccreplay: wrote {} ({}; {} flow{}{})",
        target.display(),
        detect::describe(&cfg, detection.best().max_n_hop),
        flows,
        super::plural(flows as u64),
        if guesses > 0 {
            format!(
                "; {guesses} GUESS line{} to check",
                super::plural(guesses as u64)
            )
        } else {
            String::new()
        }
    );
    Ok(0)
}
