//! The example DUTs on the bundled `traces/hpcc_dumbbell` trace, through the replay engine:
//! the reference model's decisions and each DUT's are identical, the buggy builds differ.
//! This is what `ccreplay diff traces/hpcc_dumbbell.toml --dut ...` runs (examples/duts/README.md).

mod dut_common;

use ccreplay::dut::cabi::CAbiDut;
use ccreplay::dut::process::{DEFAULT_TIMEOUT, ProcessDut};
use ccreplay::dut::{Dut, DutFlow, DutSetup};
use ccreplay::replay::{Trace, replay_dut, replay_reference};
use ccreplay_reference_cc::Decision;
use dut_common::*;

fn trace() -> Trace {
    Trace::load(&root().join("traces/hpcc_dumbbell.toml")).expect("the bundled trace loads")
}

/// The setup the CLI gives a DUT: the manifest's model, its parameters with the network's
/// filled in, and the manifest's flows.
fn trace_setup(t: &Trace) -> DutSetup {
    let spec = t.model("hpcc").expect("the trace names hpcc");
    let params = t.manifest.model_params(spec);
    DutSetup {
        model: "hpcc".into(),
        params: serde_json::to_value(&params).unwrap(),
        flows: t
            .manifest
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| DutFlow {
                id: i as u32,
                local_ip: f.local_ip,
                local_qp: f.local_qp,
                remote_ip: f.remote_ip,
                remote_qp: f.remote_qp,
            })
            .collect(),
        capture_point: t.manifest.capture_point.kind().into(),
    }
}

fn reference_decisions(t: &Trace) -> Vec<Decision> {
    let mut out = Vec::new();
    replay_reference(t, t.model("hpcc").unwrap(), 1, |d| {
        out.push(*d);
        Ok(())
    })
    .expect("the reference replays the trace");
    out
}

fn dut_decisions(t: &Trace, dut: &mut dyn Dut) -> Vec<Decision> {
    let mut out = Vec::new();
    replay_dut(t, dut, |d| {
        out.push(*d);
        Ok(())
    })
    .expect("the DUT replays the trace");
    out
}

/// The reference output sorted per flow (the engine's documented order for independent flows
/// is by time, flow, then order within the flow; a DUT answers in trace order).
fn by_flow(mut v: Vec<Decision>) -> Vec<Decision> {
    v.sort_by_key(|d| (d.flow, d.t_ns));
    v
}

fn check(t: &Trace, good: &mut dyn Dut, bad: &mut dyn Dut) {
    let reference = by_flow(reference_decisions(t));
    assert!(reference.len() > 1000, "{} decisions", reference.len());
    let got = by_flow(dut_decisions(t, good));
    assert_identical(&reference, &got);
    let buggy = by_flow(dut_decisions(t, bad));
    assert!(first_difference(&reference, &buggy).is_some());
}

#[test]
fn python_dut_on_the_bundled_trace() {
    if !have_tool("python3") {
        return;
    }
    let t = trace();
    let s = trace_setup(&t);
    let py = root()
        .join("examples/duts/hpcc_dut.py")
        .display()
        .to_string();
    let mut good =
        ProcessDut::spawn_command_line(&format!("python3 {py}"), &s, DEFAULT_TIMEOUT).unwrap();
    let mut bad = ProcessDut::spawn_command_line(
        &format!("python3 {py} --bug wai-twice"),
        &s,
        DEFAULT_TIMEOUT,
    )
    .unwrap();
    check(&t, &mut good, &mut bad);
}

#[test]
fn c_dut_on_the_bundled_trace() {
    if !have_tool("gcc") {
        return;
    }
    let t = trace();
    let s = trace_setup(&t);
    let dir = scratch_dir("dut_trace");
    let build = |out: &str, defines: &[&str]| {
        let lib = dir.join(out);
        let ok = std::process::Command::new("gcc")
            .args(["-std=c11", "-O2", "-fPIC", "-shared", "-ffp-contract=off"])
            .args(defines)
            .arg("-I")
            .arg(root().join("harness/include"))
            .arg(root().join("examples/duts/hpcc_dut.c"))
            .arg("-o")
            .arg(&lib)
            .status()
            .unwrap()
            .success();
        assert!(ok, "gcc failed");
        lib
    };
    let mut good = CAbiDut::load(&build("libhpcc_dut.so", &[]), &s).unwrap();
    let mut bad = CAbiDut::load(
        &build("libhpcc_dut_bug.so", &["-DCCREPLAY_BUG_WAI_TWICE"]),
        &s,
    )
    .unwrap();
    check(&t, &mut good, &mut bad);
}
