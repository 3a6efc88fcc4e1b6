//! `--dut observed` (issue 15): a sender judged by what it put on the wire.
//!
//! Hand-computed cases on tests/fixtures/observed/ (make_observed.py: one DCQCN flow on a
//! 10 Gbps link, 1,058-byte frames — 846.4 ns each at line rate), the default allowances
//! (reaction 5 µs, burst 8,192 B, rate ±2 %, timing 200 ns, resolution measured):
//! - `paced`: frames every 846.4 ns, the line rate the reference keeps (no CNP). Alone it is
//!   no verdict: the reference decides nothing, so its packets were held to nothing but the
//!   link rate every model starts at (exit 2, nothing compared). With a CNP 1 µs after its last
//!   packet ([`late_cnp`]: one decision, no packet after it) its 79 gaps are judged at that
//!   rate: conformant.
//! - `slow`: frames every 1,000 ns (alone: nothing compared, as `paced`; with the late CNP:) The deficit at the lowest allowed rate (9.8 Gbps) grows by
//!   9.8e9 × 1,000 ns / 8 − 1,058 = 167 B per gap. Every timestamp is a whole µs, so the
//!   measured resolution is 1,000 ns and the bound is 8,192 + 9.8e9 × 2 × (1,000 + 200) ns / 8
//!   = 11,132 B: first exceeded after 67 gaps (11,189 B, 57 B over), at packet 67 = tx_data #67.
//!   With `--allow resolution=1ns` the bound is 8,192 + 9.8e9 × 402 ns / 8 = 8,684.45 B:
//!   after 53 gaps (8,851 B), tx_data #53.
//! - `cnp`: paced, and a CNP 100 ns after packet 10 (t = 8,564 ns): the reference cuts to
//!   5 Gbps (DCQCN-3 with alpha = 1). The old rate stays allowed until the previous packet is
//!   5 µs past the CNP: packet 17 (t = 14,389 ns) is the first that far, so packet 18 is the
//!   first judged at 5.1 Gbps (5 × 1.02): its theoretical time runs 1,058 × 8 / 5.1 Gbps =
//!   1,659.6 ns per packet while the sender keeps 846.4 ns — 813.2 ns earlier per packet. The
//!   bound is 8,192 × 8 / 5.1 Gbps + 2 × 201 ns = 13,252.2 ns: 16 packets make 13,011 ns,
//!   17 make 13,824 ns (572 ns over) — packet 18 + 16 = 34, which is event #35 (the CNP is
//!   event #11 of the flow).

mod common;

use common::{repo, run as ccreplay};

fn fixture(name: &str) -> String {
    repo()
        .join(format!("tests/fixtures/observed/{name}.toml"))
        .display()
        .to_string()
}

fn diff(name: &str, extra: &[&str]) -> (i32, String, String) {
    let f = fixture(name);
    let mut args = vec!["diff", f.as_str(), "--dut", "observed"];
    args.extend_from_slice(extra);
    ccreplay(&repo(), &args)
}

/// The records (time, frame) of a fixture's capture.
fn frames(name: &str) -> Vec<(u64, Vec<u8>)> {
    let path = repo().join(format!("tests/fixtures/observed/{name}.pcap"));
    let mut r = CaptureReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        v.push((rec.ts_ns, rec.data.to_vec()));
    }
    v
}

/// A folder holding the fixture `name` (`NAME.pcap`, `NAME.toml`) with, 1 µs after its last
/// packet, the CNP of `cnp.pcap` (to the flow's QP 0x111): the reference cuts the rate once,
/// and no packet comes after it — the packets are judged as before, against the line rate
/// the reference holds until then, in a run where the reference decided something.
fn late_cnp(name: &str) -> common::Scratch {
    let dir = common::Scratch::new(&format!("observed-late-{name}"));
    let cnp = frames("cnp")
        .into_iter()
        .find(|(_, f)| f.len() < 100)
        .unwrap()
        .1;
    let data = frames(name);
    let mut w =
        PcapWriter::new(std::fs::File::create(dir.join(format!("{name}.pcap"))).unwrap()).unwrap();
    for (t, f) in &data {
        w.write(*t, f).unwrap();
    }
    w.write(data.last().unwrap().0 + 1_000, &cnp).unwrap();
    w.into_inner().unwrap();
    let src = repo().join(format!("tests/fixtures/observed/{name}.toml"));
    std::fs::copy(src, dir.join(format!("{name}.toml"))).unwrap();
    dir
}

/// `diff NAME.toml --dut observed` on [`late_cnp`]`(name)`.
fn diff_late(name: &str, extra: &[&str]) -> (i32, String, String) {
    let dir = late_cnp(name);
    let toml = format!("{name}.toml");
    let mut args = vec!["diff", toml.as_str(), "--dut", "observed"];
    args.extend_from_slice(extra);
    ccreplay(&dir, &args)
}

/// A capture in which the reference decides nothing — no CNP reached a DCQCN sender — holds
/// nothing the sender had to react to: its packets could only be held to the link rate every
/// model starts at (which `init` may have estimated from those very packets). That is nothing
/// compared: exit 2 with why and what capture is needed, never CONFORMANT (`paced`, at that
/// rate) nor DIFFERS (`slow`, under it) — in `diff`, `report diff` and `check`, whose summary
/// counts it as an ERROR. The same packets with one CNP after them are judged (below).
#[test]
fn a_sender_the_reference_decided_nothing_on_is_not_judged() {
    let (code, out, err) = diff("paced", &[]);
    assert_eq!(code, 2, "{out}{err}");
    // 80 WRITE_MIDDLE packets (make_observed.py), no ACK, no CNP: 80 events, 0 decisions.
    assert!(
        out.starts_with(&format!(
            "ERROR: not enough to judge the sender: {}: dcqcn made no decisions on 80 events \
             (tx_data 80): nothing to compare — the reference kept the link rate it starts at \
             (10 Gbps, network.link_rate_bps), so the sender's 80 data packets show nothing of \
             its congestion control\n",
            repo().join("tests/fixtures/observed/paced.pcap").display()
        )),
        "{out}"
    );
    assert!(!out.contains("CONFORMANT"), "{out}");
    assert!(
        err.contains(
            "hint: dcqcn reacts to CNPs only, and none reached the sender: no switch marked its \
             packets while the capture ran, or the capture holds one direction; capture both \
             directions of the port while the flow is congested; docs/observed.md \"What a \
             capture must hold\""
        ),
        "{err}"
    );
    let (code, out, _) = diff("slow", &[]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("dcqcn made no decisions on 80 events"),
        "{out}"
    );
    assert!(!out.contains("DIFFERENCES FOUND"), "{out}");

    let scratch = common::Scratch::new("observed-undecided");
    let html = scratch.join("r.html");
    let (code, _, _) = ccreplay(
        &repo(),
        &[
            "report",
            "diff",
            &fixture("paced"),
            "--dut",
            "observed",
            "-o",
            html.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2);
    assert!(!html.exists(), "a page of nothing compared");
    // `check`: the pair is an ERROR with the hint, counted as such in the summary.
    for name in ["paced", "slow"] {
        for ext in ["pcap", "toml"] {
            std::fs::copy(
                repo().join(format!("tests/fixtures/observed/{name}.{ext}")),
                scratch.join(format!("{name}.{ext}")),
            )
            .unwrap();
        }
    }
    let (code, out, _) = ccreplay(&scratch, &["check", ".", "--dut", "observed"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("   ERROR  paced / dcqcn: not enough to judge the sender: "),
        "{out}"
    );
    assert!(out.contains("(hint: dcqcn reacts to CNPs only"), "{out}");
    assert!(!out.contains("DIFFERS"), "{out}");
    assert!(
        out.contains("0 of 2 judged trace/model pairs conform; 2 ERROR: nothing compared\n"),
        "{out}"
    );
    let (code, out, _) = ccreplay(
        &scratch,
        &["check", ".", "--dut", "observed", "--format", "json"],
    );
    assert_eq!(code, 2);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&j["conform"], &j["total"], &j["errors"]),
        (&0.into(), &2.into(), &2.into())
    );
    // `replay` has no observed DUT to run: it says which command judges one.
    let (code, _, err) = ccreplay(&scratch, &["replay", "paced.toml", "--dut", "observed"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("hint: ccreplay diff paced.toml --dut observed (docs/observed.md)"),
        "{err}"
    );
}

#[test]
fn a_sender_at_the_reference_rate_conforms() {
    let (code, out, err) = diff_late("paced", &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("flow 0: 80 data packets, 0 ACK/NAK, 1 reference decisions\n"),
        "{out}"
    );
    assert!(out.contains("81 events (tx_data 80, rx_cnp 1)"), "{out}");
    assert!(out.contains("CONFORMANT"), "{out}");
}

#[test]
fn a_slow_sender_is_caught_where_its_deficit_passes_the_bound() {
    let (code, out, err) = diff_late("slow", &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("resolution 1000 ns (measured)"), "{out}");
    assert!(out.contains("caused by tx_data #67:"), "{out}");
    assert!(out.contains("too_slow: 57 bytes short"), "{out}");
    assert!(out.contains("≥ 9800000000 bps"), "{out}");
    let (code, out, _) = diff_late("slow", &["--allow", "resolution=1ns"]);
    assert_eq!(code, 1);
    assert!(out.contains("caused by tx_data #53:"), "{out}");
    // 167 × 53 − 8,684.45 = 166.55
    assert!(out.contains("too_slow: 167 bytes short"), "{out}");
}

#[test]
fn a_sender_that_ignores_a_cnp_is_too_fast_once_the_reaction_allowance_is_spent() {
    let (code, out, err) = diff("cnp", &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("caused by tx_data #35:"), "{out}");
    assert!(out.contains("too_fast: 572 ns early"), "{out}");
    assert!(out.contains("≤ 5100000000 bps"), "{out}");
    assert!(
        out.contains("decided_by       reference rx_cnp #11"),
        "{out}"
    );
    // A firmware allowed 20 µs to react: packet 34 (28,778 ns) is the first 20 µs past the
    // CNP (28,564 ns), so packet 35 is the first judged at 5.1 Gbps, and the 17th early one
    // from it is packet 51 (event #52).
    let (code, out, _) = diff("cnp", &["--allow", "reaction=20us"]);
    assert_eq!(code, 1);
    assert!(out.contains("caused by tx_data #52:"), "{out}");
    // A burst allowance of 16 KiB: 16,384 × 8 / 5.1 Gbps + 402 = 26,102.4 ns, passed by the
    // 33rd early packet (26,835.6 ns): packet 18 + 32 = 50, event #51.
    let (code, out, _) = diff("cnp", &["--allow", "burst=16KiB"]);
    assert_eq!(code, 1);
    assert!(out.contains("caused by tx_data #51:"), "{out}");
}

#[test]
fn allowances_come_from_the_manifest_and_the_command_line_overrides() {
    let dir = late_cnp("slow");
    let src = repo().join("tests/fixtures/observed");
    let manifest = std::fs::read_to_string(src.join("slow.toml")).unwrap();
    std::fs::write(
        dir.join("slow.toml"),
        format!("{manifest}\n[observed]\nresolution = \"1ns\"\n"),
    )
    .unwrap();
    let (code, out, _) = ccreplay(&dir, &["diff", "slow.toml", "--dut", "observed"]);
    assert_eq!(code, 1);
    assert!(out.contains("caused by tx_data #53:"), "{out}");
    let (_, out, _) = ccreplay(
        &dir,
        &[
            "diff",
            "slow.toml",
            "--dut",
            "observed",
            "--allow",
            "resolution=1us",
        ],
    );
    assert!(out.contains("caused by tx_data #67:"), "{out}");
    // A misspelt allowance is refused with the names, never ignored.
    let (code, _, err) = ccreplay(
        &dir,
        &[
            "diff",
            "slow.toml",
            "--dut",
            "observed",
            "--allow",
            "latency=1us",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown allowance `latency`"), "{err}");
}

/// The bundled sender captures come from `ccreplay sim`, whose NICs apply the reference's
/// decisions exactly: each conforms with the default allowances.
#[test]
fn every_bundled_sender_capture_conforms() {
    for (trace, model) in [
        ("roce_dcqcn", "dcqcn"),
        ("hpcc_dumbbell", "hpcc"),
        ("hpcc_chain", "hpcc"),
        ("fncc_dumbbell", "fncc"),
        ("rcc_sender", "rcc-sender"),
    ] {
        let t = repo().join(format!("traces/{trace}.toml"));
        let (code, out, err) = ccreplay(
            &repo(),
            &[
                "diff",
                t.to_str().unwrap(),
                "--model",
                model,
                "--dut",
                "observed",
            ],
        );
        assert_eq!(code, 0, "{trace}: {out}{err}");
        assert!(out.contains("CONFORMANT"), "{trace}: {out}");
    }
}

#[test]
fn a_receiver_capture_or_a_receiver_model_is_not_judged_by_transmit_times() {
    let t = repo().join("traces/rcc_receiver.toml");
    let (code, _, err) = ccreplay(&repo(), &["diff", t.to_str().unwrap(), "--dut", "observed"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--dut wire"), "{err}");
    // A sender's capture, replayed through a model that decides no rate nor window.
    let dir = common::Scratch::new("observed-np");
    let src = repo().join("tests/fixtures/observed");
    std::fs::copy(src.join("paced.pcap"), dir.join("paced.pcap")).unwrap();
    let manifest = std::fs::read_to_string(src.join("paced.toml")).unwrap();
    std::fs::write(
        dir.join("paced.toml"),
        format!("{manifest}\n[[models]]\nname = \"dcqcn-np\"\n"),
    )
    .unwrap();
    let (code, _, err) = ccreplay(
        &dir,
        &[
            "diff",
            "paced.toml",
            "--model",
            "dcqcn-np",
            "--dut",
            "observed",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("decides no sending rate or window"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Captures in the forms real capture tools write (issue 15.4), made from the bundled HPCC
// sender capture: what a verdict needs, and a clear error where the capture holds too little.
// ---------------------------------------------------------------------------------------

use ccreplay_codecs::capture::{CaptureReader, PcapWriter};

/// (time, frame, is the host's own frame) of every record of the bundled HPCC sender capture.
fn hpcc_records() -> Vec<(u64, Vec<u8>, bool)> {
    let mut r = CaptureReader::open(repo().join("traces/hpcc_dumbbell.pcap")).unwrap();
    let mut v = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        // IPv4 source at bytes 26..30: the tapped host is 10.0.0.1.
        let own = rec.data.get(26..30) == Some(&[10, 0, 0, 1][..]);
        v.push((rec.ts_ns, rec.data.to_vec(), own));
    }
    v
}

/// A folder holding `hpcc.pcap[ng]` (written by `write`) and the bundled manifest pointing at
/// it, with `edit` applied to the manifest text.
fn derived(
    tag: &str,
    ext: &str,
    write: impl FnOnce(&std::path::Path),
    edit: impl Fn(String) -> String,
) -> common::Scratch {
    let dir = common::Scratch::new(&format!("observed-{tag}"));
    write(&dir.join(format!("hpcc.{ext}")));
    let m = std::fs::read_to_string(repo().join("traces/hpcc_dumbbell.toml")).unwrap();
    let m = m.replace(
        "capture = \"hpcc_dumbbell.pcap\"",
        &format!("capture = \"hpcc.{ext}\""),
    );
    std::fs::write(dir.join("hpcc.toml"), edit(m)).unwrap();
    dir
}

fn judge(dir: &std::path::Path) -> (i32, String, String) {
    ccreplay(dir, &["diff", "hpcc.toml", "--dut", "observed"])
}

/// A minimal little-endian pcapng: one section, `ifaces` Ethernet interfaces with their
/// `if_tsresol` (6 = µs, 9 = ns), Enhanced Packet Blocks (interface, time ns, frame).
fn pcapng(path: &std::path::Path, ifaces: &[u8], records: &[(u32, u64, &[u8])]) {
    fn block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
        let len = (12 + body.len()) as u32;
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&len.to_le_bytes());
    }
    let mut out = Vec::new();
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    block(&mut out, 0x0A0D_0D0A, &shb);
    for &res in ifaces {
        let mut idb = Vec::new();
        idb.extend_from_slice(&1u16.to_le_bytes()); // LINKTYPE_ETHERNET
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&262_144u32.to_le_bytes());
        // if_tsresol (9), 1 byte, padded to 4; opt_endofopt.
        idb.extend_from_slice(&[9, 0, 1, 0, res, 0, 0, 0, 0, 0, 0, 0]);
        block(&mut out, 1, &idb);
    }
    for &(iface, ts_ns, data) in records {
        let unit = 10u64.pow(9 - u32::from(ifaces[iface as usize]));
        let raw = ts_ns / unit;
        let mut epb = Vec::new();
        epb.extend_from_slice(&iface.to_le_bytes());
        epb.extend_from_slice(&((raw >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(raw as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(data);
        epb.resize(epb.len().div_ceil(4) * 4, 0);
        block(&mut out, 6, &epb);
    }
    std::fs::write(path, out).unwrap();
}

#[test]
fn a_microsecond_pcap_conforms_with_its_resolution_measured() {
    let dir = derived(
        "us",
        "pcap",
        |p| {
            let mut w = PcapWriter::microsecond(std::fs::File::create(p).unwrap()).unwrap();
            for (t, f, _) in hpcc_records() {
                w.write(t / 1000 * 1000, &f).unwrap();
            }
            w.flush().unwrap();
        },
        |m| m,
    );
    let (code, out, err) = judge(&dir);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("resolution 1000 ns (measured)"), "{out}");
    // A base RTT below the resolution: transmit times cannot show a reaction — no verdict.
    let dir2 = derived(
        "us-rtt",
        "pcap",
        |p| std::fs::copy(dir.join("hpcc.pcap"), p).map(drop).unwrap(),
        |m| {
            let at = m.find("base_rtt_ns = ").unwrap();
            let end = at + m[at..].find('\n').unwrap();
            format!("{}base_rtt_ns = 900{}", &m[..at], &m[end..])
        },
    );
    let (code, out, err) = judge(&dir2);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.starts_with("ERROR: not enough to judge the sender: timestamps resolve 1000 ns, coarser than the base RTT of 900 ns"), "{out}");
    assert!(!out.contains("CONFORMANT"), "{out}");
}

#[test]
fn pcapng_interfaces_keep_their_own_resolution_and_the_coarsest_bounds_the_error() {
    // Transmitted frames on interface 0 in µs, received on interface 1 in ns: a mirror of
    // each direction, as a two-port capture card writes them.
    let recs = hpcc_records();
    let dir = derived(
        "ng",
        "pcapng",
        |p| {
            let rows: Vec<(u32, u64, &[u8])> = recs
                .iter()
                .map(|(t, f, own)| (u32::from(!own), *t, f.as_slice()))
                .collect();
            pcapng(p, &[6, 9], &rows);
        },
        |m| m,
    );
    let (code, out, err) = judge(&dir);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("resolution 1000 ns (measured)"), "{out}");
}

#[test]
fn a_capture_of_one_direction_or_cut_by_the_snaplen_gives_no_verdict() {
    // The data direction only: HPCC's window needs the ACKs.
    let recs = hpcc_records();
    let dir = derived(
        "oneway",
        "pcap",
        |p| {
            let mut w = PcapWriter::new(std::fs::File::create(p).unwrap()).unwrap();
            for (t, f, own) in &recs {
                if *own {
                    w.write(*t, f).unwrap();
                }
            }
            w.flush().unwrap();
        },
        |m| m,
    );
    let (code, out, err) = judge(&dir);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("flow 0: 685 data packets but no ACK seen"),
        "{out}"
    );
    assert!(out.contains("mirror both directions"), "{out}");
    // Both directions, cut at 70 bytes: the ACKs' INT (after Ethernet 14 + IPv4 20 + UDP 8)
    // is lost, so are the ACKs.
    let dir2 = derived(
        "snap",
        "pcap",
        |p| {
            let mut w = PcapWriter::new(std::fs::File::create(p).unwrap()).unwrap();
            for (t, f, _) in &recs {
                let cut = f.len().min(70);
                w.write_truncated(*t, &f[..cut], f.len() as u32).unwrap();
            }
            w.flush().unwrap();
        },
        |m| m,
    );
    let (code, out, err) = judge(&dir2);
    assert_eq!(code, 2, "{out}{err}");
    assert!(!out.contains("CONFORMANT"), "{out}");
    let all = format!("{out}{err}");
    assert!(all.contains("snapshot length"), "{all}");
}

#[test]
fn check_judges_each_sender_capture_against_its_first_rate_or_window_model() {
    let (code, out, err) = ccreplay(&repo(), &["check", "--dut", "observed"]);
    assert_eq!(code, 0, "{out}{err}");
    // One judged pair per sender manifest of traces/ (a sender capture point, from a capture
    // or an events file: roce_dcqcn, dcqcn_increase, hpcc_dumbbell, ..., the ns3_* imports).
    let senders = std::fs::read_dir(repo().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter(|p| {
            let m: toml::Table = std::fs::read_to_string(p).unwrap().parse().unwrap();
            m["capture_point"]["kind"].as_str() == Some("sender")
        })
        .count();
    assert!(senders >= 8, "{senders}");
    assert!(
        out.contains(&format!(
            "{senders} of {senders} judged trace/model pairs conform"
        )),
        "{out}"
    );
    assert!(
        out.contains("n/a  rcc_receiver / rcc-receiver: not judged"),
        "{out}"
    );
    assert!(
        out.contains("n/a  roce_dcqcn / dcqcn-nic: not judged"),
        "{out}"
    );
    // The fixtures: the one ignoring a CNP differs; the paced and the slow sender got no CNP,
    // so the reference decided nothing on them: nothing compared, two errors.
    let dir = repo().join("tests/fixtures/observed");
    let scratch = common::Scratch::new("observed-junit");
    let junit = scratch.join("j.xml");
    let (code, out, _) = ccreplay(
        &repo(),
        &[
            "check",
            dir.to_str().unwrap(),
            "--dut",
            "observed",
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("0 of 3 judged trace/model pairs conform; 2 ERROR: nothing compared"),
        "{out}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<failure").count(), 1, "{xml}");
    assert_eq!(xml.matches("<error").count(), 2, "{xml}");
    assert!(xml.contains("cnp / dcqcn / observed"), "{xml}");
    // With a CNP after their last packet (late_cnp) they are judged: the paced sender
    // conforms, the slow one and the one ignoring a CNP do not.
    let late = common::Scratch::new("observed-junit-late");
    for name in ["paced", "slow"] {
        let d = late_cnp(name);
        for ext in ["pcap", "toml"] {
            let f = format!("{name}.{ext}");
            std::fs::copy(d.join(&f), late.join(&f)).unwrap();
        }
    }
    for ext in ["pcap", "toml"] {
        std::fs::copy(
            dir.join(format!("cnp.{ext}")),
            late.join(format!("cnp.{ext}")),
        )
        .unwrap();
    }
    let (code, out, _) = ccreplay(
        &late,
        &["check", ".", "--dut", "observed", "--junit", "j.xml"],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("1 of 3 judged trace/model pairs conform\n"),
        "{out}"
    );
    let xml = std::fs::read_to_string(late.join("j.xml")).unwrap();
    assert_eq!(xml.matches("<failure").count(), 2, "{xml}");
    assert!(xml.contains("paced / dcqcn / observed"), "{xml}");
    // A folder with no sender capture judges nothing: an error, never a pass.
    let (code, _, err) = ccreplay(
        &repo(),
        &[
            "check",
            repo().join("traces/rcc_receiver.toml").to_str().unwrap(),
            "--dut",
            "observed",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nothing judged"), "{err}");
}

/// The bundled DCQCN capture's NIC ran the paper's DCQCN (`dcqcn`); after the same CNPs the
/// firmware variant (`dcqcn-nic`, docs/models/) keeps a higher rate, so against it the same
/// NIC sends too slowly — a NIC built to one variant is told apart from the other.
#[test]
fn a_sender_running_another_variant_is_caught() {
    let t = repo().join("traces/roce_dcqcn.toml");
    let (code, out, err) = ccreplay(
        &repo(),
        &[
            "diff",
            t.to_str().unwrap(),
            "--model",
            "dcqcn-nic",
            "--dut",
            "observed",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("too_slow"), "{out}");
}

/// `report diff --dut observed`: per flow the observed rate against the reference's, and a
/// tick at each CNP the reference reacted to — the capture's 32 CNPs (its accounting) over
/// the three flows.
#[test]
fn the_html_report_charts_observed_against_reference_with_the_feedback_marked() {
    let scratch = common::Scratch::new("observed-html");
    let out = scratch.join("r.html");
    let t = repo().join("traces/roce_dcqcn.toml");
    let (code, o, e) = ccreplay(
        &repo(),
        &[
            "report",
            "diff",
            t.to_str().unwrap(),
            "--dut",
            "observed",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{o}{e}");
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("observed rate"), "legend");
    assert!(html.contains("reference rate"), "legend");
    let ticks: u64 = html
        .match_indices("feedback events (CNP, NAK): ")
        .map(|(at, m)| {
            let rest = &html[at + m.len()..];
            rest[..rest.find('<').unwrap()].parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(ticks, 32);
}

/// The report lists the flows with something compared or decided. `paced` (flow 0: QP 0x222,
/// its feedback to QP 0x111) and a second flow of the manifest (data to QP 0x333, feedback
/// to 0x444) of which the capture holds no data, only feedback 1 µs after flow 0's last
/// packet: an ACK — DCQCN decides nothing on it, and no packet is judged, so the report is
/// flow 0's alone (with a CNP to flow 0 1 µs later still, so that the reference decided
/// something in the run: [`late_cnp`]) — or a CNP: the reference cuts the rate (DCQCN-3), a
/// decision with no packet after it to judge, and the flow is listed with it.
#[test]
fn flows_with_nothing_compared_or_decided_are_left_out() {
    use ccreplay_codecs::frame::FrameRepr;
    use ccreplay_codecs::ib::{AethRepr, Opcode};
    use ccreplay_codecs::shim::IntConfig;
    use ccreplay_codecs::{DecodeConfig, Dialect, Packet};
    let src = repo().join("tests/fixtures/observed");
    let frames = |name: &str| {
        let mut r = CaptureReader::open(src.join(name)).unwrap();
        let mut v = Vec::new();
        while let Some(rec) = r.next_record() {
            let rec = rec.unwrap();
            v.push((rec.ts_ns, rec.data.to_vec()));
        }
        v
    };
    let paced = frames("paced.pcap");
    let cnp = frames("cnp.pcap")
        .into_iter()
        .find(|(_, f)| f.len() < 100)
        .unwrap()
        .1;
    // The CNP sent to QP 0x444 instead, or an ACK (syndrome 0x1F, PSN 0x1000) in its place;
    // the ICRC computed anew by the codecs' writer.
    let cfg = DecodeConfig::for_dialect(Dialect::Roce);
    let feedback = |ack: bool| {
        let mut f = FrameRepr::from_packet(&Packet::decode_ethernet(&cnp, &cfg)).unwrap();
        f.roce.bth.dest_qp = 0x444;
        if ack {
            f.roce.bth.opcode = Opcode::RC_ACK;
            (f.roce.bth.becn, f.roce.bth.psn) = (false, 0x1000);
            f.roce.cnp_reserved = None;
            f.roce.aeth = Some(AethRepr {
                syndrome: 0x1F,
                msn: 0,
            });
        }
        let mut out = Vec::new();
        f.emit(Dialect::Roce, IntConfig::default(), &mut out)
            .unwrap();
        out
    };
    let flows = "\n[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x111\nremote_ip = \"10.0.0.2\"\nremote_qp = 0x222\n\n[[flows]]\nlocal_ip = \"10.0.0.1\"\nlocal_qp = 0x444\nremote_ip = \"10.0.0.2\"\nremote_qp = 0x333\n";
    let manifest = std::fs::read_to_string(src.join("paced.toml")).unwrap();
    let dir = common::Scratch::new("observed-lone");
    let t = paced.last().unwrap().0 + 1_000;
    let mut runs = Vec::new();
    for (name, ack) in [("ack", true), ("cnp", false)] {
        let path = dir.join(format!("{name}.pcap"));
        let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
        for (ts, f) in &paced {
            w.write(*ts, f).unwrap();
        }
        w.write(t, &feedback(ack)).unwrap();
        if ack {
            w.write(t + 1_000, &cnp).unwrap();
        }
        w.into_inner().unwrap();
        std::fs::write(
            dir.join(format!("{name}.toml")),
            manifest.replace("paced.pcap", &format!("{name}.pcap")) + flows,
        )
        .unwrap();
        let toml = format!("{name}.toml");
        runs.push(ccreplay(&dir, &["diff", &toml, "--dut", "observed"]));
    }
    let (code, out, err) = &runs[0];
    assert_eq!(*code, 0, "{out}{err}");
    assert!(
        out.contains("82 events (tx_data 80, rx_ack 1, rx_cnp 1)"),
        "{out}"
    );
    assert!(!out.contains("\nflow 1:"), "{out}");
    assert!(out.contains("CONFORMANT: 1 flows"), "{out}");
    let (code, out, err) = &runs[1];
    assert_eq!(*code, 0, "{out}{err}");
    assert!(
        out.contains("\nflow 1: ok — 1 reference decisions, 0 observed"),
        "{out}"
    );
    assert!(out.contains("CONFORMANT: 2 flows"), "{out}");
    // Flow 0's 80 packets had no decision to follow (the CNP went to flow 1): judged, against
    // the link rate only, and its header line says so.
    assert!(
        out.contains("flow 0: 80 data packets, 0 ACK/NAK, 0 reference decisions (nothing to react to: held to the link rate only)\n"),
        "{out}"
    );
}
