//! What the CLI test files share: the repository root, running the binary under test, and
//! reading a model's rule coverage.
// Each test file uses some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

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
