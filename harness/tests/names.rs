//! Names are checked (issue 14.7): `--tol` and `--state` accept only what the model's decisions
//! carry, and the table of those names agrees with what the models write.

mod common;

use common::{repo, run};

use std::collections::BTreeSet;

fn ccreplay(args: &[&str]) -> (i32, String, String) {
    run(&repo(), args)
}

#[test]
fn an_unknown_tolerance_field_is_refused_with_the_valid_names() {
    let (code, out, err) = ccreplay(&[
        "diff",
        "traces/hpcc_dumbbell.toml",
        "--dut",
        "model:hpcc",
        "--tol",
        "nosuchfield=rel:0.1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(!out.contains("CONFORMANT"), "{out}");
    assert!(err.contains("nosuchfield"), "{err}");
    // HPCC-1..8: the sender sets a rate and a window; W and U are Algorithm 1's names.
    for name in ["rate_bps", "window_bytes", "state.W", "state.U"] {
        assert!(err.contains(name), "{name} missing from: {err}");
    }
}

#[test]
fn an_unknown_state_name_is_refused_with_the_valid_names() {
    let (code, out, err) = ccreplay(&[
        "diff",
        "traces/hpcc_dumbbell.toml",
        "--dut",
        "model:hpcc",
        "--state",
        "W,Wx",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(!out.contains("CONFORMANT"), "{out}");
    assert!(err.contains("Wx") && err.contains("W,Wc,U"), "{err}");
    // A DCQCN sender has no window: a window tolerance on it is a mistake too.
    let (code, _, err) = ccreplay(&[
        "diff",
        "traces/roce_dcqcn.toml",
        "--dut",
        "model:dcqcn",
        "--tol",
        "window_bytes=abs:1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("state.alpha"), "{err}");
}

#[test]
fn valid_names_are_accepted() {
    let (code, out, err) = ccreplay(&[
        "diff",
        "traces/hpcc_dumbbell.toml",
        "--dut",
        "model:hpcc",
        "--state",
        "W,Wc,U",
        "--tol",
        "state.U=abs:0",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("CONFORMANT"), "{out}");
}

/// A `model:NAME` DUT takes the manifest's parameters for NAME, not the reference model's
/// (the `diff --help` example: dcqcn's `dce_tcp_g = 0.0039` is no dcqcn-nic parameter).
#[test]
fn a_model_dut_takes_its_own_parameters() {
    let (code, _, err) = ccreplay(&[
        "diff",
        "traces/roce_dcqcn.toml",
        "--dut",
        "model:dcqcn-nic",
        "--tol",
        "rate_bps=rel:0.01",
    ]);
    // The two profiles differ (DCQCN-3 vs DCQCN-4): a comparison, not an input error.
    assert_eq!(code, 1, "{err}");
}

/// Every output and state name a model writes on the bundled traces is one the table lists,
/// and every state name listed is written (for models with one profile).
#[test]
fn the_name_table_matches_what_models_write() {
    let cases = [
        ("roce_dcqcn", "dcqcn", true),
        ("roce_dcqcn", "dcqcn-nic", true),
        ("roce_dcqcn", "dcqcn-ns3", true),
        ("hpcc_dumbbell", "hpcc", true),
        ("hpcc_dumbbell", "hpcc-ns3", false),
        ("fncc_dumbbell", "fncc", true),
        ("rcc_receiver", "rcc-receiver", true),
        ("rcc_sender", "rcc-sender", true),
    ];
    for (trace, model, all_state) in cases {
        let path = format!("traces/{trace}.toml");
        let dut = format!("model:{model}");
        let (code, out, err) = ccreplay(&["replay", &path, "--dut", &dut, "-q"]);
        assert_eq!(code, 0, "{trace} {model}: {err}");
        let fields = ccreplay::models::fields(model).unwrap();
        let mut outputs = BTreeSet::new();
        let mut state = BTreeSet::new();
        for line in out.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            for (k, x) in v.as_object().unwrap() {
                match k.as_str() {
                    "t" | "flow" | "cause" => {}
                    "state" => state.extend(x.as_object().unwrap().keys().cloned()),
                    _ => {
                        outputs.insert(k.clone());
                    }
                }
            }
        }
        assert!(!outputs.is_empty(), "{trace} {model}: no decisions");
        for o in &outputs {
            assert!(fields.outputs.contains(&o.as_str()), "{model}: output {o}");
        }
        for s in &state {
            assert!(fields.state.contains(&s.as_str()), "{model}: state {s}");
        }
        if all_state {
            let listed: BTreeSet<String> = fields.state.iter().map(|s| s.to_string()).collect();
            assert_eq!(state, listed, "{model}");
        }
    }
}
