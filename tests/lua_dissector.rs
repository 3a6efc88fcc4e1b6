//! The Wireshark Lua dissector `contrib/wireshark/ccreplay.lua` against `ccreplay inspect`: on
//! every bundled trace (`traces/*.toml` and the captures they name, with the manifest's dialect,
//! INT layout, max_hops and UDP port passed as `-o ccreplay.*` preferences) and on the three
//! dialect fixtures of `tests/fixtures/`, real tshark runs with the dissector and every field it
//! registers is compared with inspect's JSON record of the same frame: the shims (`ccreplay.int.*`
//! with every INT hop, `ccreplay.fncc.*`, `ccreplay.rcc.*`, their offsets) and, since the
//! dissector hands BTH onwards to Wireshark's InfiniBand dissector past the shim, every
//! `infiniband.*` field inspect reports. A field one side has and the other lacks is a mismatch
//! too. The numbers on both sides come from two independent decoders (Lua over Wireshark's
//! dissection vs the Rust codecs); nothing here is a stored value, so a regenerated `traces/`
//! is checked as it is.
//!
//! tshark comes from Debian's `tshark` package (`.ci/run` installs it; Debian builds it with
//! Lua 5.2). Without tshark, or with a tshark that cannot run Lua, the test is skipped with a
//! message, unless `CCREPLAY_REQUIRE_TSHARK=1` (as in CI), where it fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use ccreplay::inspect::{self, Format, InspectOptions};
use ccreplay::manifest::Manifest;
use ccreplay_codecs::shim::IntLayout;
use ccreplay_codecs::{DecodeConfig, Dialect};
use ccreplay_tests::{fixture_dialect, fixtures_dir};
use serde_json::Value;

/// Fields the dissector registers that inspect does not have: bits of `ccreplay.rcc.flags`
/// shown for reading, not compared (the flags byte itself is).
const WIRESHARK_ONLY: [&str; 2] = ["ccreplay.rcc.flags.pid", "ccreplay.rcc.flags.in_network"];

/// How many mismatches the failure message lists (all are counted).
const SHOW_MISMATCHES: usize = 25;

/// Columns asked of tshark after the compared fields: a Lua error in the dissector (always a
/// failure), an exception in a Wireshark dissector it called, and the expert messages.
const DIAGNOSTICS: [&str; 3] = [
    "_ws.lua.error",
    "_ws.malformed.expert",
    "_ws.expert.message",
];

/// Why tshark may lack `infiniband.invariant.crc` where inspect has it: Wireshark 4.0's
/// InfiniBand dissector shows the ICRC only when exactly 4 bytes follow the headers it parsed
/// (packet-infiniband.c: `crc_length == 4`), so not after a CNP's 16 reserved bytes nor after
/// the dialect extension of an FNCC/RCC ACK, which it does not know; nor when one of its
/// payload heuristics threw an exception first (shown as a malformed packet).
fn icrc_not_shown(dialect: Dialect, record: &Value, malformed: bool) -> bool {
    let opcode = record.get("infiniband.bth.opcode").and_then(Value::as_u64);
    let ack_with_extension =
        matches!(dialect, Dialect::Fncc | Dialect::Rcc) && matches!(opcode, Some(0x11 | 0x51));
    opcode == Some(0x81) || ack_with_extension || malformed
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn plugin() -> PathBuf {
    root().join("contrib/wireshark/ccreplay.lua")
}

fn lua_arg() -> String {
    format!("lua_script:{}", plugin().display())
}

/// Skip (return None) or, under `CCREPLAY_REQUIRE_TSHARK=1`, fail.
fn unavailable(why: &str) -> Option<Vec<String>> {
    if std::env::var("CCREPLAY_REQUIRE_TSHARK").is_ok_and(|v| v == "1") {
        panic!("{why} (CCREPLAY_REQUIRE_TSHARK=1)");
    }
    eprintln!("{why}: skipping the Lua dissector comparison (apt-get install tshark)");
    None
}

/// The `ccreplay` fields tshark knows with the dissector loaded (`tshark -G fields`: rows
/// `F name abbrev type parent …`), or None when tshark or its Lua is missing.
fn registered_fields() -> Option<Vec<String>> {
    let Ok(out) = Command::new("tshark")
        .args(["-G", "fields", "-X", &lua_arg()]) // -G must come first
        .output()
    else {
        return unavailable("tshark not installed");
    };
    if !out.status.success() {
        return unavailable(&format!(
            "tshark -G fields with the Lua dissector failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            // FT_NONE rows are the expert-info entries, not fields.
            (c.len() > 4 && c[0] == "F" && c[3] != "FT_NONE" && c[4] == "ccreplay")
                .then(|| c[2].to_string())
        })
        .collect();
    if fields.is_empty() {
        // A tshark built without Lua ignores `-X lua_script:` and registers nothing.
        return unavailable("tshark registered no ccreplay field (built without Lua?)");
    }
    Some(fields)
}

/// One capture to compare and how to read it.
struct Capture {
    name: String,
    path: PathBuf,
    cfg: DecodeConfig,
    /// Also compare the `infiniband.*` fields (not in the variant runs, where a wrong dialect
    /// or layout makes BTH garbage that the two decoders are free to read differently).
    compare_ib: bool,
}

/// Every bundled trace, as its manifest describes it, then the dialect fixtures.
fn captures() -> Vec<Capture> {
    let mut v = Vec::new();
    let manifests = ccreplay::golden::find_traces(&root().join("traces")).expect("traces/");
    for m in manifests {
        let manifest = Manifest::load(&m).unwrap_or_else(|e| panic!("{}: {e}", m.display()));
        // Events files (the ns-3 imports) hold no frames for the dissector.
        if manifest.events.is_some() {
            continue;
        }
        let path = manifest.capture_path(&m);
        v.push(Capture {
            name: format!("traces/{}", path.file_name().unwrap().to_string_lossy()),
            path,
            cfg: manifest.decode_config(),
            compare_ib: true,
        });
    }
    for name in ["hpcc.pcap", "fncc.pcap", "rcc.pcap"] {
        v.push(Capture {
            name: format!("tests/fixtures/{name}"),
            path: fixtures_dir().join(name),
            cfg: DecodeConfig::for_dialect(fixture_dialect(name)),
            compare_ib: true,
        });
    }
    v
}

/// Edge cases, shims only: fixtures of every kind (all opcodes with RD ACKs, read responses and
/// atomic ACKs; malformed and snaplen-cut packets; pcapng) read in each shim dialect, and the
/// dialect fixtures with a grown INT layout and with max_hops 3 (nHop errors, cut stacks).
fn variant_captures() -> Vec<Capture> {
    let mut v = Vec::new();
    let others = [
        "roce_opcodes.pcap",
        "malformed.pcap",
        "roce_linktypes_snaplen.pcap",
        "roce_linktypes_multi.pcapng",
    ];
    for name in others {
        for d in [Dialect::Hpcc, Dialect::Fncc, Dialect::Rcc] {
            v.push(Capture {
                name: format!("tests/fixtures/{name} as {d}"),
                path: fixtures_dir().join(name),
                cfg: DecodeConfig::for_dialect(d),
                compare_ib: false,
            });
        }
    }
    for name in ["hpcc.pcap", "fncc.pcap"] {
        let base = DecodeConfig::for_dialect(fixture_dialect(name));
        let mut grown = base;
        grown.int.layout = IntLayout::Grown;
        let mut short = base;
        short.int.max_hops = 3;
        for (what, cfg) in [("grown", grown), ("max_hops 3", short)] {
            v.push(Capture {
                name: format!("tests/fixtures/{name} ({what})"),
                path: fixtures_dir().join(name),
                cfg,
                compare_ib: false,
            });
        }
    }
    v
}

/// inspect's per-packet records (the summary dropped).
fn inspect_records(c: &Capture) -> Vec<Value> {
    let opts = InspectOptions {
        decode: c.cfg,
        format: Format::Json,
        pfc_link_bps: 100_000_000_000,
    };
    let mut out = Vec::new();
    inspect::run(c.path.to_str().unwrap(), &opts, &mut out).expect("inspect");
    let mut v: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let summary = v.pop().expect("summary record");
    assert_eq!(summary["ccreplay.record"], "summary", "{}", c.name);
    v
}

/// The `-o` preferences that tell the dissector what the manifest says.
fn prefs(cfg: &DecodeConfig) -> Vec<String> {
    let layout = match cfg.int.layout {
        IntLayout::Padded => "padded",
        IntLayout::Grown => "grown",
    };
    [
        format!("ccreplay.dialect:{}", cfg.dialect.name()),
        format!("ccreplay.int_layout:{layout}"),
        format!("ccreplay.max_hops:{}", cfg.int.max_hops),
        format!("ccreplay.udp_port:{}", cfg.udp_port),
    ]
    .into_iter()
    .flat_map(|p| ["-o".to_string(), p])
    .collect()
}

/// tshark's `-T fields` rows by frame number: one cell per key, in `keys` order.
fn tshark_rows(c: &Capture, keys: &[String]) -> BTreeMap<u64, Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-X", &lua_arg()])
        .args(prefs(&c.cfg))
        .args(["-r", c.path.to_str().unwrap()])
        .args(["-T", "fields", "-E", "separator=\t", "-E", "occurrence=a"])
        .args(["-E", "aggregator=,", "-e", "frame.number"]);
    for k in keys.iter().map(String::as_str).chain(DIAGNOSTICS) {
        cmd.args(["-e", k]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark on {}: {}",
        c.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("Lua: Error"),
        "the Lua dissector failed on {}: {stderr}",
        c.name
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let mut cells = l.split('\t').map(str::to_string);
            let n = cells.next().unwrap().parse::<u64>().expect("frame.number");
            (n, cells.collect())
        })
        .collect()
}

/// A tshark cell as a number: decimal, `0x` hex, FT_BYTES hex digits (ImmDt, IETH), booleans.
/// `Err` when the field occurs more than once (a dissector that adds a field twice).
fn tshark_value(key: &str, cell: &str) -> Result<Option<u64>, String> {
    let cell = cell.trim();
    if cell.is_empty() {
        return Ok(None);
    }
    if cell.contains(',') {
        return Err(format!("repeated: {cell}"));
    }
    let n = if matches!(key, "infiniband.immdt" | "infiniband.ieth") {
        u64::from_str_radix(cell, 16).ok()
    } else if let Some(h) = cell.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else {
        match cell {
            "True" => Some(1),
            "False" => Some(0),
            _ => cell.parse::<u64>().ok(),
        }
    };
    n.map(Some).ok_or_else(|| format!("not a number: {cell}"))
}

/// The shim fields: every registered `ccreplay.` field but the Wireshark-only flag bits.
fn is_shim_key(k: &str) -> bool {
    ["ccreplay.int.", "ccreplay.fncc.", "ccreplay.rcc."]
        .iter()
        .any(|p| k.starts_with(p))
        || matches!(
            k,
            "ccreplay.offset.int"
                | "ccreplay.offset.rcc_shim"
                | "ccreplay.offset.fncc_ext"
                | "ccreplay.offset.rcc_ext"
                | "ccreplay.offset.bth"
        )
}

/// Collects mismatches: all counted, the first few kept for the failure message.
#[derive(Default)]
struct Mismatches {
    shown: Vec<String>,
    total: usize,
}

impl Mismatches {
    fn report(&mut self, m: String) {
        self.total += 1;
        if self.shown.len() < SHOW_MISMATCHES {
            self.shown.push(m);
        }
    }

    fn assert_none(&self) {
        assert!(
            self.total == 0,
            "{} mismatches between the Lua dissector and inspect; the first:\n{}",
            self.total,
            self.shown.join("\n")
        );
    }
}

/// The registered fields that inspect also writes (all but the Wireshark-only flag bits),
/// each checked to be a shim key of inspect.
fn compared_shim_fields(registered: &[String]) -> Vec<String> {
    let v: Vec<String> = registered
        .iter()
        .filter(|k| !WIRESHARK_ONLY.contains(&k.as_str()))
        .cloned()
        .collect();
    for k in &v {
        assert!(
            is_shim_key(k),
            "the dissector registers `{k}`, which is no shim key of inspect (docs/inspect.md)"
        );
    }
    v
}

/// Counts of values found equal on both sides.
#[derive(Default)]
struct Agreed {
    shim: usize,
    ib: usize,
    /// Values inspect has and tshark lacks for a stated reason (`icrc_not_shown`).
    excused: usize,
}

/// Compare one capture, frame by frame and field by field.
fn compare(c: &Capture, compared_shim: &[String], out: &mut Mismatches) -> Agreed {
    let records = inspect_records(c);
    let roce = c.cfg.dialect == Dialect::Roce;
    // Every shim key inspect writes must be one the dissector registers, or it would go
    // unchecked. With dialect roce the dissector hands every packet to InfiniBand untouched
    // and adds nothing, not even the BTH offset that inspect always writes.
    let mut ib_keys = BTreeSet::new();
    for r in &records {
        for k in r.as_object().unwrap().keys() {
            if is_shim_key(k) && !(roce && k == "ccreplay.offset.bth") {
                assert!(
                    compared_shim.contains(k),
                    "{}: inspect writes `{k}`, the dissector does not register it",
                    c.name
                );
            }
            if c.compare_ib && k.starts_with("infiniband.") {
                ib_keys.insert(k.clone());
            }
        }
    }
    let keys: Vec<String> = compared_shim
        .iter()
        .filter(|k| !(roce && *k == "ccreplay.offset.bth"))
        .cloned()
        .chain(ib_keys)
        .collect();
    let rows = tshark_rows(c, &keys);
    let inspect_frames: BTreeSet<u64> = records
        .iter()
        .map(|r| r["frame.number"].as_u64().unwrap())
        .collect();
    // Every packet inspect reports must be a tshark frame; tshark may number more (pcapng
    // blocks that carry no packet), but those must carry none of the compared fields.
    for n in &inspect_frames {
        if !rows.contains_key(n) {
            out.report(format!("{}: tshark has no frame {n}", c.name));
        }
    }
    for (n, cells) in &rows {
        if !inspect_frames.contains(n)
            && cells[..keys.len().min(cells.len())]
                .iter()
                .any(|c| !c.is_empty())
        {
            out.report(format!("{}: frame {n} has fields in tshark only", c.name));
        }
    }
    let mut agreed = Agreed::default();
    for r in &records {
        let n = r["frame.number"].as_u64().unwrap();
        let Some(cells) = rows.get(&n) else { continue };
        let diag = &cells[keys.len().min(cells.len())..];
        let diag_cell = |i: usize| diag.get(i).map_or("", |s| s.as_str());
        if !diag_cell(0).is_empty() {
            out.report(format!(
                "{} frame {n}: Lua error in the dissector: {}",
                c.name,
                diag_cell(2)
            ));
        }
        let malformed = !diag_cell(1).is_empty();
        let opcode = r.get("infiniband.bth.opcode").and_then(Value::as_u64);
        // RD packets: Wireshark 4.0 reads RDETH/DETH differently (tests/tshark_compare.rs);
        // their InfiniBand fields are not compared, their shims are.
        let rd = opcode.is_some_and(|op| op >> 5 == 2);
        for (k, cell) in keys.iter().zip(cells) {
            let is_ib = k.starts_with("infiniband.");
            if is_ib && rd {
                continue;
            }
            let ours = r.get(k).and_then(Value::as_u64);
            let theirs = match tshark_value(k, cell) {
                Ok(v) => v,
                Err(e) => {
                    out.report(format!("{} frame {n}: `{k}`: tshark {e}", c.name));
                    continue;
                }
            };
            if theirs.is_none()
                && ours.is_some()
                && k == "infiniband.invariant.crc"
                && icrc_not_shown(c.cfg.dialect, r, malformed)
            {
                agreed.excused += 1;
                continue;
            }
            let expected_by = "inspect";
            if ours != theirs {
                let show = |v: Option<u64>| v.map_or("absent".to_string(), |v| v.to_string());
                out.report(format!(
                    "{} frame {n}: `{k}`: {expected_by} {}, tshark {}",
                    c.name,
                    show(ours),
                    show(theirs)
                ));
            } else if ours.is_some() {
                if is_ib {
                    agreed.ib += 1;
                } else {
                    agreed.shim += 1;
                }
            }
        }
    }
    eprintln!(
        "{} ({}): {} packets, {} shim and {} InfiniBand values agree ({} excused)",
        c.name,
        c.cfg.dialect,
        records.len(),
        agreed.shim,
        agreed.ib,
        agreed.excused
    );
    agreed
}

#[test]
fn lua_dissector_agrees_with_inspect_on_every_shim_field() {
    let Some(registered) = registered_fields() else {
        return;
    };
    let compared_shim = compared_shim_fields(&registered);
    let mut mismatches = Mismatches::default();
    let (mut shim, mut ib, mut shim_captures) = (0, 0, 0);
    for c in captures() {
        let a = compare(&c, &compared_shim, &mut mismatches);
        if c.cfg.dialect != Dialect::Roce {
            // A shim capture where nothing was compared would make this test vacuous.
            assert!(a.shim > 0, "{}: no shim value compared", c.name);
            shim_captures += 1;
        }
        shim += a.shim;
        ib += a.ib;
    }
    mismatches.assert_none();
    assert!(shim_captures >= 3, "only {shim_captures} shim captures");
    eprintln!("Lua dissector: {shim} shim values and {ib} InfiniBand values agree with inspect");
}

#[test]
fn lua_dissector_agrees_with_inspect_on_edge_cases() {
    let Some(registered) = registered_fields() else {
        return;
    };
    let compared_shim = compared_shim_fields(&registered);
    let mut mismatches = Mismatches::default();
    let mut shim = 0;
    for c in variant_captures() {
        shim += compare(&c, &compared_shim, &mut mismatches).shim;
    }
    mismatches.assert_none();
    assert!(shim > 0, "no shim value compared in the edge cases");
    eprintln!("Lua dissector, edge cases: {shim} shim values agree with inspect");
}
