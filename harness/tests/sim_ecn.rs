//! `[hosts.NAME] ecn = "ect1"` (docs/sim.md "One switch, one host"): a host whose NIC sends
//! its DCQCN data as ECT(1) instead of ECT(0). RFC 3168 section 5: ECT(1) = 0b01 and ECT(0) =
//! 0b10 both say "ECN-capable"; a RED switch marks either to CE = 0b11 (DCQCN-1), and only CE
//! is a mark to the notification point (DCQCN-2). The ECN bits are read back from the captures
//! with `inspect` (the codecs) and, when installed, with tshark (`ip.dsfield.ecn`).

mod common;

use std::path::Path;
use std::process::Command;

/// One 25 Gbps sender h0 into a 10 Gbps receiver link (incast of one: the bottleneck is sw0's
/// port to h1), 1 µs links, a 5,000 B message (5 packets: WRITE_FIRST, three MIDDLE, LAST) at
/// line rate (DCQCN-3), and RED with Kmin = Kmax = 0: a packet is marked exactly when a
/// frame waits ahead of it (q > Kmax: p = 1, no draw), never when the queue ahead is empty.
///
/// Frames (docs/wire.md): WRITE_FIRST 14 + 20 + 8 + 12 + 16 (RETH) + 1,000 + 4 = 1,074 B, the
/// others 1,058 B. At 25 Gbps they take 343.68 and 338.56 ns, at 10 Gbps 859.2 and 846.4 ns.
/// h0 sends back to back from 0: packet k (1-based) has left h0 at 343.68 + (k − 1) × 338.56
/// ns and is in sw0 1,000 ns later: 1,343.68, 1,682.24, 2,020.80, 2,359.36, 2,697.92 ns. sw0
/// sends #1 on 1,343.68..2,202.88 and #2 on 2,202.88..3,049.28. So (the frame on the wire not
/// counted): #2 finds no frame waiting (q = 0, not marked); #3 finds #2 (q = 1,058), #4 finds
/// #3 (#2 on the wire: 1,058), #5 finds #3 and #4 (2,116): all three marked. At h1:
/// ECN = [ECT, ECT, CE, CE, CE] with ECT the sender's codepoint; at h0 all five are ECT.
const SCENARIO: &str = r#"
name = "ecn_option"
seed = 1
model = "dcqcn"
duration_ns = 20_000

[topology]
kind = "incast"
senders = 1
host_bps = 25_000_000_000
receiver_bps = 10_000_000_000
prop_ns = 1_000

[switch.red]
kmin_bytes = 0
kmax_bytes = 0
pmax = 1.0

[[flows]]
src = "h0"
dst = "h1"
size_bytes = 5_000
start_ns = 0

[[taps]]
host = "h0"
point = "sender"
stem = "h0"

[[taps]]
host = "h1"
point = "receiver"
stem = "h1"
"#;

fn scratch(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("sim-ecn-{name}"))
}

/// `ccreplay sim` of `text` into `dir`: (exit status, stderr).
fn sim(dir: &Path, text: &str, set: &[&str]) -> (i32, String) {
    let file = dir.join("scenario.toml");
    std::fs::write(&file, text).unwrap();
    let mut args = vec![
        "sim".to_string(),
        file.display().to_string(),
        "--out".to_string(),
        dir.join("out").display().to_string(),
        "-q".to_string(),
    ];
    for s in set {
        args.extend(["--set".to_string(), s.to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = common::run(dir, &args);
    (code, err)
}

/// The ECN bits of h0's data frames (from 10.0.0.1, WRITE opcodes 6-10) in capture `stem`, in
/// file order, by `inspect -e`.
fn data_ecn(dir: &Path, stem: &str) -> Vec<u8> {
    let pcap = dir.join("out").join(format!("{stem}.pcap"));
    let (code, out, err) = common::run(
        dir,
        &[
            "inspect",
            pcap.to_str().unwrap(),
            "-q",
            "-e",
            "ip.src",
            "-e",
            "infiniband.bth.opcode",
            "-e",
            "ip.dsfield.ecn",
        ],
    );
    assert_eq!(code, 0, "{err}");
    out.lines()
        .filter_map(|l| {
            let v: Vec<&str> = l.split('\t').collect();
            let data = v[0] == "10.0.0.1" && matches!(v[1], "6" | "7" | "8" | "9" | "10");
            data.then(|| v[2].parse().unwrap())
        })
        .collect()
}

/// tshark's `ip.dsfield.ecn` of every frame from 10.0.0.1 (h0 sends only data): None when
/// tshark is not installed.
fn tshark_ecn(dir: &Path, stem: &str) -> Option<Vec<u8>> {
    let pcap = dir.join("out").join(format!("{stem}.pcap"));
    let out = Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap(), "-Y", "ip.src == 10.0.0.1"])
        .args(["-T", "fields", "-e", "ip.dsfield.ecn"])
        .output()
        .ok()?;
    assert!(out.status.success(), "tshark failed on {}", pcap.display());
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect(),
    )
}

#[test]
fn an_ect1_host_sends_ect1_and_the_switch_marks_it_to_ce() {
    // (the host option, h0's codepoint at its own tap, what h1 receives).
    let cases: [(&[&str], u8, [u8; 5]); 3] = [
        // Default: ECT(0) = 0b10.
        (&[], 2, [2, 2, 3, 3, 3]),
        (&["hosts.h0.ecn=ect0"], 2, [2, 2, 3, 3, 3]),
        // ECT(1) = 0b01: the same two packets pass unmarked, the same three become CE.
        (&["hosts.h0.ecn=ect1"], 1, [1, 1, 3, 3, 3]),
    ];
    for (set, ect, received) in cases {
        let dir = scratch("wire");
        let (code, err) = sim(&dir, SCENARIO, set);
        assert_eq!(code, 0, "{set:?}: {err}");
        assert_eq!(data_ecn(&dir, "h0"), [ect; 5], "{set:?}: h0's tap");
        assert_eq!(data_ecn(&dir, "h1"), received, "{set:?}: h1's tap");
        if let Some(t) = tshark_ecn(&dir, "h0") {
            assert_eq!(t, [ect; 5], "{set:?}: tshark, h0's tap");
        }
        if let Some(t) = tshark_ecn(&dir, "h1") {
            assert_eq!(t, received, "{set:?}: tshark, h1's tap");
        }
        // The receiver's dcqcn-np takes only CE for a mark: its first CNP answers packet #3
        // (index 2, the first CE), whichever ECT the sender wrote.
        let (code, out, err) = common::run(
            &dir,
            &[
                "replay",
                dir.join("out/h1.toml").to_str().unwrap(),
                "--model",
                "dcqcn-np",
                "-q",
            ],
        );
        assert_eq!(code, 0, "{err}");
        let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
        assert_eq!(first["cause"]["index"], 2, "{set:?}: {first}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_bad_ecn_option_is_refused() {
    let dir = scratch("bad");
    for (set, says) in [
        (
            "hosts.h0.ecn=ce",
            "[hosts.h0] ecn = \"ce\": unknown codepoint; use one of ect0, ect1",
        ),
        ("hosts.sw0.ecn=ect1", "`sw0` is not a host"),
        // HPCC data is Not-ECT: no ECN-capable codepoint to choose.
        ("model=hpcc", "needs ECN-capable data"),
    ] {
        let mut sets = vec![set];
        if set == "model=hpcc" {
            sets.push("hosts.h0.ecn=ect1");
        }
        let (code, err) = sim(&dir, SCENARIO, &sets);
        assert_eq!(code, 2, "{sets:?}: {err}");
        assert!(err.contains(says), "{sets:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
