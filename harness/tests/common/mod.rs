//! What the CLI test files share: the repository root, running the binary under test, and
//! reading a model's rule coverage.
// Each test file uses some of these.
#![allow(dead_code)]

pub mod ns3;
pub mod sim;
pub mod synth;
pub mod wire;

use std::path::{Path, PathBuf};
use std::process::Command;

use ccreplay_codecs::mirror::{MirrorKind, MirrorRepr};

/// The repository root (the workspace, parent of harness/).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Run `ccreplay ARGS` in `cwd`: (exit status, stdout, stderr).
pub fn run(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A test's scratch folder, `NAME-PID-N` under `CARGO_TARGET_TMPDIR` (the `tmp/` Cargo gives
/// integration tests in its target folder): the process id and a per-process counter make it
/// unique across concurrent test binaries and across the tests (and calls) of one. It is
/// created empty and removed with everything in it when dropped, also when the test fails
/// (the panic unwinds through the drop), so no run leaves files behind. To look at a failing
/// test's files, run it with `CCREPLAY_KEEP_SCRATCH=1`: then nothing is removed and each
/// folder's path is printed on stderr (which the test harness shows for a failing test).
/// Dereferences to its `Path`.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// A new, empty folder named after `name` (the test, and what in it needs the folder).
    pub fn new(name: &str) -> Scratch {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("{name}-{}-{n}", std::process::id()));
        // A killed run of a process with the same id may have left it.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Scratch(dir)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("CCREPLAY_KEEP_SCRATCH").is_some() {
            eprintln!("CCREPLAY_KEEP_SCRATCH: kept {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `ccreplay check ARGS --coverage --format json` run from the repository root (it must
/// conform): `model`'s rules and how often the traces exercised each, in the model's order.
pub fn coverage(model: &str, args: &[&str]) -> Vec<(String, u64)> {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--coverage", "--format", "json", "-q"]);
    let (code, out, err) = run(&repo(), &all);
    assert_eq!(code, 0, "check {args:?}: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["coverage"][model]["rules"]
        .as_array()
        .unwrap_or_else(|| panic!("{model} reports no coverage"))
        .iter()
        .map(|r| {
            (
                r["rule"].as_str().unwrap().to_string(),
                r["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The count of the one rule whose name starts with `prefix`.
pub fn count(c: &std::collections::BTreeMap<String, u64>, prefix: &str) -> u64 {
    let hits: Vec<_> = c.iter().filter(|(k, _)| k.starts_with(prefix)).collect();
    assert_eq!(hits.len(), 1, "{prefix}: {c:?}");
    *hits[0].1
}

/// A manifest, by its path from the repository root (`traces/NAME.toml`).
pub fn manifest(path: &str) -> toml::Table {
    let text = std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    toml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `[models.params]` a manifest gives `model`.
pub fn model_params(m: &toml::Table, model: &str) -> toml::Table {
    m["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str() == Some(model))
        .unwrap_or_else(|| panic!("the manifest names no {model}"))["params"]
        .as_table()
        .unwrap()
        .clone()
}

/// Every rule of `counts` outside `unreachable` (rule, why) ran at least three times, and
/// those inside never; every rule `unreachable` names exists.
pub fn assert_full<'a>(
    counts: impl IntoIterator<Item = (&'a String, &'a u64)>,
    unreachable: &[(&str, &str)],
) {
    let counts: Vec<(&String, &u64)> = counts.into_iter().collect();
    for (rule, n) in &counts {
        match unreachable.iter().find(|u| u.0 == rule.as_str()) {
            Some((_, why)) => assert_eq!(**n, 0, "{rule} is listed unreachable ({why})"),
            None => assert!(**n >= 3, "{rule}: {n} < 3 over the suite"),
        }
    }
    for (rule, _) in unreachable {
        assert!(counts.iter().any(|c| c.0 == rule), "unknown rule {rule}");
    }
}

/// Where a divergence is: (t ns, flow, the event index its cause names; None for a timer).
pub type At = (u64, u64, Option<u64>);

/// The earliest first divergence over the flows of a `diff --format json` report, either side
/// (a timer's pair shares its ns; an event's pair answers one event).
pub fn earliest_divergence(report: &serde_json::Value) -> Option<At> {
    let mut first: Option<At> = None;
    for f in report["flows"].as_array().unwrap() {
        let div = &f["first_divergence"];
        for side in [&div["reference"], &div["dut"]] {
            if side.is_null() {
                continue;
            }
            let at = (
                side["t"].as_u64().unwrap(),
                side["flow"].as_u64().unwrap(),
                side["cause"]["index"].as_u64(),
            );
            if first.is_none_or(|f| at.0 < f.0) {
                first = Some(at);
            }
        }
    }
    first
}

/// Where an example DUT says its bug first acts (the line its correct shadow writes to
/// DUT_BUG_LOG): `Ok(N)` for `bug first acts at event N (flow F, index I)`, F and I checked
/// against the trace's N-th event; `Err(N)` for `... at finish (after N events)`; None when
/// the bug never acted.
pub fn first_act(log: &str, events: &[serde_json::Value]) -> Option<Result<usize, usize>> {
    let line = log.lines().find(|l| l.starts_with("bug first acts at "))?;
    if let Some(rest) = line.strip_prefix("bug first acts at finish (after ") {
        return Some(Err(rest.trim_end_matches(" events)").parse().unwrap()));
    }
    let rest = line.strip_prefix("bug first acts at event ").unwrap();
    let (n, rest) = rest.split_once(" (flow ").unwrap();
    let (flow, index) = rest.trim_end_matches(')').split_once(", index ").unwrap();
    let n: usize = n.parse().unwrap();
    assert_eq!(
        (events[n]["flow"].as_u64(), events[n]["index"].as_u64()),
        (flow.parse().ok(), index.parse().ok()),
        "{line}: event {n} of the trace"
    );
    Some(Ok(n))
}

/// Whether a divergence lies in the reply where the bug first acts: that event's own decision
/// (named by flow and index: events can share a ns), or a timer's due after the previous
/// event's time and up to this one's (or after the last event, for `finish`).
pub fn in_reply(at: At, act: Result<usize, usize>, evs: &[serde_json::Value]) -> bool {
    let t = |k: usize| evs[k]["t"].as_u64().unwrap();
    let (ns, flow, index) = at;
    match (index, act) {
        (Some(i), Ok(n)) => {
            (evs[n]["flow"].as_u64(), evs[n]["index"].as_u64()) == (Some(flow), Some(i))
        }
        (Some(_), Err(_)) => false,
        (None, Ok(n)) => n.checked_sub(1).is_none_or(|p| ns > t(p)) && ns <= t(n),
        (None, Err(n)) => n.checked_sub(1).is_none_or(|p| ns > t(p)),
    }
}

/// One mutant's `diff` on one trace, judged: exit 0 or 1, exit 1 exactly when the DUT says its
/// bug acted, and then the first divergence (`first`) in the reply where the bug first acts —
/// a line in `wrong` when it is not. Whether the mutant was caught.
pub fn judge(
    what: &str,
    code: i32,
    log: &str,
    first: Option<At>,
    evs: &[serde_json::Value],
    wrong: &mut Vec<String>,
) -> bool {
    assert!(code == 0 || code == 1, "{what}: exit {code}");
    let act = first_act(log, evs);
    assert_eq!(
        code == 1,
        act.is_some(),
        "{what}: caught iff the bug acts ({log:?})"
    );
    let Some(act) = act else { return false };
    let (at, flow, index) = first.expect("a divergence");
    if !in_reply((at, flow, index), act, evs) {
        wrong.push(format!(
            "{what}: first divergence at {at} ns (flow {flow}, event {index:?}), the bug first \
             acts at {act:?}"
        ));
    }
    true
}

/// The events a replay of `manifest` (a path from the repository root) feeds its model, in
/// order (`replay --emit-events`, written into `dir` under `stem`).
pub fn emitted_events(manifest: &str, dir: &Path, stem: &str) -> Vec<serde_json::Value> {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join(format!("{stem}.events.jsonl"));
    let (code, _, err) = run(
        &repo(),
        &[
            "replay",
            manifest,
            "-q",
            "-o",
            dir.join(format!("{stem}.decisions.jsonl"))
                .to_str()
                .unwrap(),
            "--emit-events",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "replay {manifest}: {err}");
    std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The mirroring switch 10.9.0.1 (02:00:00:00:00:5a) sending to the collector 10.9.0.2: copy
/// `seq` of `session` at `index` (ERSPAN III: Hw ID), stamped `timestamp` (III, in 100 ns).
pub fn mirroring_switch(
    kind: MirrorKind,
    session: u16,
    index: u32,
    seq: u32,
    timestamp: u32,
) -> MirrorRepr {
    MirrorRepr {
        kind,
        src_mac: [2, 0, 0, 0, 0, 0x5a],
        dst_mac: [2, 0, 0, 0, 0, 0xc0],
        src_ip: [10, 9, 0, 1],
        dst_ip: [10, 9, 0, 2],
        ttl: 63,
        key: None,
        seq,
        session,
        vlan: 0,
        cos: 3,
        truncated: false,
        index,
        timestamp,
    }
}

/// A manifest's text without its `[[flows]]` (they are then paired from the capture): the
/// text between the first `[[flows]]` and `[source]` removed.
pub fn no_flows(text: &str) -> String {
    let (a, b) = (
        text.find("[[flows]]").unwrap(),
        text.find("[source]").unwrap(),
    );
    format!("{}{}", &text[..a], &text[b..])
}

/// The records of a little-endian nanosecond pcap (its magic checked), each with its time in
/// ns and its bytes (16-byte record header and data).
pub fn pcap_records(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    assert_eq!(
        &bytes[..4],
        &0xA1B2_3C4Du32.to_le_bytes(),
        "ns pcap, little-endian"
    );
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let (mut at, mut out) = (24, Vec::new());
    while at < bytes.len() {
        let t = u64::from(word(at)) * 1_000_000_000 + u64::from(word(at + 4));
        let end = at + 16 + word(at + 8) as usize;
        out.push((t, &bytes[at..end]));
        at = end;
    }
    out
}

/// True when tshark runs here (the independent dissector some tests compare with; `.ci/run`
/// installs it); without it those comparisons are skipped, unless CCREPLAY_REQUIRE_TSHARK=1.
pub fn tshark() -> bool {
    let ok = std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok && std::env::var("CCREPLAY_REQUIRE_TSHARK").is_ok_and(|v| v == "1") {
        panic!("tshark is required (CCREPLAY_REQUIRE_TSHARK=1) but not installed");
    }
    ok
}

/// `PROGRAM -T fields -e KEY... -E OPT...` on `capture` (relative to the repository): tshark
/// itself, or ccreplay's `inspect --dialect roce` (its path as `program`). Its stdout.
pub fn field_columns(program: &str, capture: &str, keys: &[&str], opts: &[&str]) -> String {
    let mut c = std::process::Command::new(program);
    c.current_dir(repo());
    if program == "tshark" {
        c.args(["-r", capture, "-T", "fields"]);
    } else {
        c.args(["inspect", capture, "--dialect", "roce"]);
    }
    for k in keys {
        c.args(["-e", k]);
    }
    for o in opts {
        c.args(["-E", o]);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{program}");
    String::from_utf8(out.stdout).unwrap()
}

/// `ccreplay sim SCENARIO --out DIR -q --set S...` (SCENARIO relative to the repository),
/// which must succeed.
pub fn sim(scenario: &str, dir: &Path, sets: &[&str]) {
    let sc = repo().join(scenario);
    let mut args = vec![
        "sim",
        sc.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
        "-q",
    ];
    for s in sets {
        args.extend(["--set", s]);
    }
    let (code, o, e) = run(&repo(), &args);
    assert_eq!(code, 0, "sim {args:?}: {o}{e}");
}

/// The last `*.switch.toml` by name a simulation wrote into `dir`: the bottleneck port in
/// every switch scenario (fncc_int's sw1_h2).
pub fn last_switch_setup(dir: &Path) -> PathBuf {
    let mut setups: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(".switch.toml"))
        .collect();
    setups.sort();
    setups.pop().expect("a switch tap")
}

/// Recompute a frame's ICRC (its last 4 bytes) as the NIC would send it, after a test changed
/// bytes it covers; `dialect` says where BTH starts.
pub fn fix_icrc(f: &mut [u8], dialect: ccreplay_codecs::Dialect) {
    let cfg = ccreplay_codecs::DecodeConfig::for_dialect(dialect);
    let (computed, _) = ccreplay_codecs::Packet::decode_ethernet(f, &cfg)
        .icrc_check()
        .unwrap();
    let n = f.len();
    f[n - 4..].copy_from_slice(&computed.to_be_bytes());
}

/// Set the 16-bit word at `at` of an Ethernet + IPv4 frame (no VLAN) to `new`, the IPv4
/// header checksum (at 24) updated as RFC 1624 eq. 3 says: HC' = ~(~HC + ~m + m').
pub fn set_ipv4_word(f: &mut [u8], at: usize, new: u16) {
    assert_eq!(u16::from_be_bytes([f[12], f[13]]), 0x0800);
    let old = u16::from_be_bytes([f[at], f[at + 1]]);
    f[at..at + 2].copy_from_slice(&new.to_be_bytes());
    let hc = u16::from_be_bytes([f[24], f[25]]);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    f[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}
