//! What the `ccreplay import ns3` test files (import_ns3.rs, import_ns3_int.rs) share: the
//! fixture of tests/fixtures/ns3, a scratch folder, running the importer and `replay`, and
//! reading what they wrote.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ccreplay"))
}

pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ns3")
}

pub fn tmpdir(name: &str) -> super::Scratch {
    super::Scratch::new(&format!("ns3-{name}"))
}

pub fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert!(o.status.code().is_some(), "killed by a signal (a panic?)");
    o
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Copy the fixture's inputs into `dir` (so tests can change one of them).
pub fn copy_fixture(dir: &Path) {
    for f in [
        "config_hpcc.txt",
        "config_dcqcn.txt",
        "topology.txt",
        "flow.txt",
        "trace.txt",
        "mix.tr",
    ] {
        fs::copy(fixture().join(f), dir.join(f)).unwrap();
    }
}

pub fn import(config: &Path, out: &Path) -> Output {
    run(bin()
        .args(["import", "ns3"])
        .arg(config)
        .arg("--out")
        .arg(out))
}

pub fn replay(trace: &Path, model: &str) -> Vec<u8> {
    let o = run(bin().arg("replay").arg(trace).args(["--model", model]));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}: {}",
        trace.display(),
        stderr(&o)
    );
    o.stdout
}

/// Copy every fixture file into `dir`.
pub fn copy_all(dir: &Path) {
    for e in fs::read_dir(fixture()).unwrap() {
        let p = e.unwrap().path();
        fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
    }
}

/// The last line of standard error (the summary line).
pub fn summary_line(o: &Output) -> String {
    stderr(o).lines().last().unwrap_or_default().to_string()
}
