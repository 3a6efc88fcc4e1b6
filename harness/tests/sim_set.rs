//! `ccreplay sim --set KEY=VALUE` (docs/sim.md "Overriding parameters"): an override changes
//! the run as the same edit of the scenario file would, is recorded in what the run writes,
//! and an unknown key is refused (exit 2) with the key named, like one in the file.
//!
//! The values asserted are the ones the tests pass on the command line, or the bundled
//! scenario's own (`scenarios/bundled/hpcc_dumbbell.toml`, read here).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ccreplay::sim::Scenario;
use ccreplay::sim::scenario::Override;

mod common;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn tmpdir(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("sim-set-{name}"))
}

const SCENARIO: &str = "scenarios/bundled/hpcc_dumbbell.toml";

fn sim(out: &Path, sets: &[&str]) -> Output {
    let mut args = vec!["sim", SCENARIO, "--out", out.to_str().unwrap()];
    for s in sets {
        args.extend(["--set", s]);
    }
    Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(&args)
        .current_dir(root())
        .output()
        .expect("run ccreplay")
}

fn sim_ok(out: &Path, sets: &[&str]) {
    let o = sim(out, sets);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{sets:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn manifest(p: &Path) -> toml::Table {
    toml::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn overrides_change_the_run_and_are_recorded() {
    let file: toml::Table =
        toml::from_str(&std::fs::read_to_string(root().join(SCENARIO)).unwrap()).unwrap();
    let file_duration = file["duration_ns"].as_integer().unwrap();
    assert_ne!(file_duration, 800_000);
    assert!(
        !file["params"]
            .as_table()
            .unwrap()
            .contains_key("w_ai_bytes")
    );

    let plain = tmpdir("plain");
    sim_ok(&plain, &[]);
    let set = tmpdir("set");
    let sets = [
        "duration_ns=800_000",
        "seed=7",
        "params.w_ai_bytes=40",
        "name=wai_40",
    ];
    sim_ok(&set, &sets);

    let (m0, m1) = (
        json(&plain.join("metrics.json")),
        json(&set.join("metrics.json")),
    );
    // Without overrides the file has no `overrides` key (the same bytes as before `--set`).
    assert!(m0.get("overrides").is_none());
    assert_eq!(m0["duration_ns"], file_duration);
    // With them: the values given, and the list as given, in order.
    assert_eq!(m1["duration_ns"], 800_000);
    assert_eq!(m1["seed"], 7);
    assert_eq!(m1["scenario"], "wai_40");
    assert_eq!(m1["overrides"], serde_json::json!(sets));
    // Samples every 1 µs (the default) over 0.8 ms (the last flow starts at 0.7 ms): flow 0
    // (start 0) has 800 rate samples.
    assert_eq!(
        m1["flows"][0]["rate_bps"]["t_ns"].as_array().unwrap().len(),
        800
    );

    // The manifest: the model parameter in [models.params], the seed, and the generator that
    // repeats the run.
    let t0 = manifest(&plain.join("hpcc_dumbbell.toml"));
    let t1 = manifest(&set.join("hpcc_dumbbell.toml"));
    let params = |t: &toml::Table| t["models"][0]["params"].as_table().unwrap().clone();
    assert!(!params(&t0).contains_key("w_ai_bytes"));
    assert_eq!(params(&t1)["w_ai_bytes"].as_float(), Some(40.0));
    assert_eq!(t1["source"]["seed"].as_integer(), Some(7));
    assert_eq!(
        t1["source"]["generator"].as_str(),
        Some(
            "ccreplay sim wai_40 --set duration_ns=800_000 --set seed=7 \
             --set params.w_ai_bytes=40 --set name=wai_40"
        )
    );
    assert_eq!(
        t0["source"]["generator"].as_str(),
        Some("ccreplay sim hpcc_dumbbell")
    );
    // A different run: a different capture.
    assert_ne!(
        std::fs::read(plain.join("hpcc_dumbbell.pcap")).unwrap(),
        std::fs::read(set.join("hpcc_dumbbell.pcap")).unwrap()
    );

    // The report shows them.
    let html = set.join("sim.html");
    let o = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args([
            "report",
            "sim",
            set.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(
        "<dt>overrides (sim --set)</dt><dd>duration_ns=800_000 seed=7 params.w_ai_bytes=40 name=wai_40</dd>"
    ));

    // The same overrides again: the same bytes.
    let again = tmpdir("again");
    sim_ok(&again, &sets);
    for f in ["metrics.json", "hpcc_dumbbell.toml", "hpcc_dumbbell.pcap"] {
        assert_eq!(
            std::fs::read(set.join(f)).unwrap(),
            std::fs::read(again.join(f)).unwrap(),
            "{f}"
        );
    }
    for d in [plain, set, again] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn unknown_keys_and_bad_paths_exit_2_naming_the_override() {
    let out = tmpdir("bad");
    for (set, says) in [
        ("bogus=1", "unknown field `bogus`"),
        ("params.bogus=1", "unknown field `bogus`"),
        ("topology.bogus=1", "unknown field `bogus`"),
        ("switch.red.bogus=1", "unknown field `bogus`"),
        ("duration_ns=soon", "invalid type: string \"soon\""),
        ("name.x=1", "`name` is a string, not a table"),
        ("flows.4.size_bytes=1", "`flows` has 4 entries"),
        ("flows.first.size_bytes=1", "`first` is not an index"),
    ] {
        let o = sim(&out, &[set]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(&format!("--set {set}: ")), "{set}: {err}");
        assert!(err.contains(says), "{set}: {err}");
    }
    // Several overrides, one wrong: that one is named.
    let o = sim(&out, &["seed=3", "params.w_ia_bytes=40"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("--set params.w_ia_bytes=40: "), "{err}");
    assert!(!err.contains("--set seed=3"), "{err}");
    // Not KEY=VALUE: refused before anything runs.
    for set in ["seed", "=3", "a..b=1"] {
        assert_eq!(sim(&out, &[set]).status.code(), Some(2), "{set}");
    }
    // Nothing was written.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn values_are_toml_or_else_strings() {
    let v = |s: &str| s.parse::<Override>().unwrap().value;
    assert_eq!(v("k=40"), toml::Value::Integer(40));
    assert_eq!(v("k=2_000_000"), toml::Value::Integer(2_000_000));
    assert_eq!(v("k=0x0A1"), toml::Value::Integer(0xA1));
    assert_eq!(v("k=0.95"), toml::Value::Float(0.95));
    assert_eq!(v("k=true"), toml::Value::Boolean(true));
    assert_eq!(v("k=\"h1\""), toml::Value::String("h1".into()));
    assert_eq!(v("k=h1"), toml::Value::String("h1".into()));
    assert_eq!(v("k=a=b"), toml::Value::String("a=b".into()));
    assert_eq!(
        v("k=[1, 2]"),
        toml::Value::Array(vec![toml::Value::Integer(1), toml::Value::Integer(2)])
    );
    // One value, not a document: a second line does not add a key.
    assert_eq!(v("k=1\nx = 2"), toml::Value::String("1\nx = 2".into()));
    let o: Override = "switch.pfc.xoff_bytes=100".parse().unwrap();
    assert_eq!(o.path, ["switch", "pfc", "xoff_bytes"]);
}

#[test]
fn overrides_equal_the_edited_file() {
    // `--set` gives the scenario that editing the file gives: nested tables created on the
    // way (`switch.pfc`), array elements by index (`flows.1`).
    let text = std::fs::read_to_string(root().join(SCENARIO)).unwrap();
    let sets: Vec<Override> = [
        "switch.pfc.xoff_bytes=100_000",
        "switch.pfc.xon_bytes=80_000",
        "flows.1.start_ns=250_000",
        "topology.prop_ns=2000",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    let with = Scenario::parse_with(&text, &sets).unwrap();
    let mut edited = Scenario::parse(&text).unwrap();
    edited.switch.pfc = Some(toml::from_str("xoff_bytes = 100_000\nxon_bytes = 80_000").unwrap());
    edited.flows[1].start_ns = 250_000;
    match &mut edited.topology {
        ccreplay::sim::scenario::TopologySpec::Incast { prop_ns, .. } => *prop_ns = 2000,
        t => panic!("hpcc_dumbbell is an incast: {t:?}"),
    }
    assert_eq!(with, edited);
    // No overrides: exactly the file.
    assert_eq!(
        Scenario::parse_with(&text, &[]).unwrap(),
        Scenario::parse(&text).unwrap()
    );
}
