//! `check` on a selection (issue 14.6): trace files or names, `--shard I/N` for CI matrices,
//! and golden files that no trace uses.

mod common;

use common::repo;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn check(args: &[&str], cwd: &Path) -> (i32, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .arg("check")
        .args(args)
        .args(["--format", "json"])
        .current_dir(cwd)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(stdout.trim()).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn pairs(v: &serde_json::Value) -> BTreeSet<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["trace"].as_str().unwrap(),
                r["model"].as_str().unwrap()
            )
        })
        .collect()
}

/// The bundled suite's trace/model pairs, counted from the manifests of traces/ (one pair per
/// `[[models]]` entry of each).
fn manifest_pairs() -> usize {
    std::fs::read_dir(repo().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let m: toml::Table = std::fs::read_to_string(&p).unwrap().parse().unwrap();
            m["models"].as_array().map_or(0, Vec::len)
        })
        .sum()
}

/// Shards of the bundled suite: every trace/model pair of the manifests of traces/ in exactly
/// one shard, for 1 to 6 shards.
#[test]
fn shards_partition_the_traces_for_every_count() {
    let (code, all, err) = check(&[], &repo());
    assert_eq!(code, 0, "{err}");
    let all = pairs(&all);
    assert_eq!(all.len(), manifest_pairs());
    for n in 1..=6 {
        let mut union = BTreeSet::new();
        let mut total = 0;
        for i in 1..=n {
            let shard = format!("{i}/{n}");
            let (code, v, err) = check(&["--shard", &shard], &repo());
            assert_eq!(code, 0, "{shard}: {err}");
            let p = pairs(&v);
            assert!(!p.is_empty(), "{shard}");
            // A trace's models stay together in one shard.
            for x in &p {
                let trace = x.split('/').next().unwrap();
                assert!(
                    all.iter()
                        .filter(|a| a.starts_with(&format!("{trace}/")))
                        .all(|a| p.contains(a))
                );
            }
            total += p.len();
            union.extend(p);
            // The same shard twice: the same traces.
            assert_eq!(pairs(&check(&["--shard", &shard], &repo()).1), pairs(&v));
        }
        assert_eq!(union, all, "n = {n}");
        assert_eq!(total, all.len(), "n = {n}: a pair in two shards");
    }
    // More shards than traces: a job that checks nothing is an error, not a pass.
    let traces: BTreeSet<&str> = all.iter().map(|p| p.split('/').next().unwrap()).collect();
    let past = format!("{0}/{0}", traces.len() + 1);
    let (code, _, err) = check(&["--shard", &past], &repo());
    assert_eq!(code, 2, "{err}");
    for bad in ["0/3", "4/3", "1/0", "x"] {
        let (code, _, _) = check(&["--shard", bad], &repo());
        assert_eq!(code, 2, "{bad}");
    }
}

#[test]
fn traces_by_file_capture_or_name() {
    let (code, v, err) = check(
        &["traces/hpcc_dumbbell.toml", "traces/roce_dcqcn.pcap"],
        &repo(),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        pairs(&v),
        [
            "hpcc_dumbbell/hpcc",
            "roce_dcqcn/dcqcn",
            "roce_dcqcn/dcqcn-nic"
        ]
        .map(String::from)
        .into()
    );
    let (code, v, err) = check(&["--trace", "rcc_sender"], &repo());
    assert_eq!(code, 0, "{err}");
    assert_eq!(pairs(&v), ["rcc_sender/rcc-sender".to_string()].into());
    let (code, _, err) = check(&["--trace", "hpcc"], &repo());
    assert_eq!(code, 2);
    assert!(err.contains("hpcc_dumbbell"), "the names are listed: {err}");
    let (code, _, err) = check(&["traces/nope.toml"], &repo());
    assert_eq!(code, 2, "{err}");
}

#[test]
fn golden_files_no_trace_uses_are_reported() {
    let dir = common::Scratch::new("unref");
    let g = dir.join("golden");
    for e in walk(&repo().join("golden")) {
        let to = g.join(e.strip_prefix(repo().join("golden")).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&e, to).unwrap();
    }
    // A model renamed and a trace removed left these behind.
    std::fs::copy(
        g.join("hpcc_dumbbell/hpcc.jsonl"),
        g.join("hpcc_dumbbell/hpcc-v1.jsonl"),
    )
    .unwrap();
    std::fs::create_dir_all(g.join("gone")).unwrap();
    std::fs::write(g.join("gone/dcqcn.jsonl"), "").unwrap();
    let gs = g.to_str().unwrap();
    let junit = dir.join("j.xml");

    let (code, v, err) = check(&["--golden", gs], &repo());
    assert_eq!(code, 0, "warn is the default: {err}");
    assert!(
        err.contains("warning: 2 golden files no trace uses"),
        "{err}"
    );
    assert!(
        err.contains("hpcc-v1.jsonl") && err.contains("gone/dcqcn.jsonl"),
        "{err}"
    );
    assert_eq!(v["unreferenced"].as_array().unwrap().len(), 2);

    let (code, _, err) = check(
        &[
            "--golden",
            gs,
            "--unreferenced",
            "reject",
            "--junit",
            junit.to_str().unwrap(),
        ],
        &repo(),
    );
    assert_eq!(code, 1, "{err}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("unreferenced golden files") && xml.contains("<failure"),
        "{xml}"
    );

    let (code, _, err) = check(&["--golden", gs, "--unreferenced", "ignore"], &repo());
    assert_eq!(code, 0);
    assert!(!err.contains("no trace uses"), "{err}");
    // A selection is not the whole suite: the others' golden files are not orphans.
    let (code, _, err) = check(
        &[
            "--golden",
            gs,
            "--unreferenced",
            "reject",
            "--trace",
            "rcc_sender",
        ],
        &repo(),
    );
    assert_eq!(code, 0, "{err}");
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}
