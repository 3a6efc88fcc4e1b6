//! The C ABI DUT adapter (harness.md 4, docs/dut.md, harness/include/ccreplay_dut.h): the C
//! HPCC example, compiled here with gcc, agrees with the reference bit for bit; its buggy
//! build is caught at the first window update; libraries that break the ABI in each way the
//! adapter validates end in a `DutError` naming the event and the field.
//!
//! Skipped with a message when `gcc` is absent, unless `CI=true`.

// `DutError` is the `Dut` trait's error type; its size is not the tests' to change.
#![allow(clippy::result_large_err)]

mod dut_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use ccreplay::dut::cabi::{CAbiDut, DECISIONS_PER_CALL};
use ccreplay::dut::{Dut, DutError};
use ccreplay_reference_cc::hpcc::{self, Hpcc};
use ccreplay_reference_cc::{Cause, StateValue};
use dut_common::*;
use serde_json::json;

/// Compile `src` into a shared library named after `out` in this test binary's scratch
/// directory. Every build gets its own file: tests run in parallel, and a loaded library must
/// never be rewritten.
fn build(src: &Path, out: &str, defines: &[&str]) -> PathBuf {
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let dir = scratch_dir("dut_cabi");
    let lib = dir.join(format!("{}-{out}", BUILDS.fetch_add(1, Ordering::Relaxed)));
    let include = root().join("harness/include");
    let o = Command::new("gcc")
        .args([
            "-std=c11",
            "-O2",
            "-fPIC",
            "-shared",
            "-ffp-contract=off",
            "-Wall",
            "-Wextra",
            "-Werror",
        ])
        .args(defines)
        .arg("-I")
        .arg(&include)
        .arg(src)
        .arg("-o")
        .arg(&lib)
        .output()
        .expect("run gcc");
    assert!(
        o.status.success(),
        "gcc failed on {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    lib
}

fn hpcc_lib(bug: bool) -> PathBuf {
    let src = root().join("examples/duts/hpcc_dut.c");
    if bug {
        build(&src, "libhpcc_dut_bug.so", &["-DCCREPLAY_BUG_WAI_TWICE"])
    } else {
        build(&src, "libhpcc_dut.so", &[])
    }
}

/// A library that misbehaves as `MODE` says (see the source); compiled per mode.
const EVIL: &str = r#"
#include "ccreplay_dut.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

struct ccreplay_dut { int n; };

#ifndef ABI
#define ABI CCREPLAY_DUT_ABI_VERSION
#endif

uint32_t ccreplay_dut_abi_version(void) { return ABI; }

int32_t ccreplay_dut_create(const ccreplay_setup *s, ccreplay_dut **out, char *name, char *err) {
    (void)s; (void)err;
    *out = calloc(1, sizeof **out);
#if MODE == 20
    memset(name, 'n', CCREPLAY_NAME_MAX); /* no NUL */
#else
    snprintf(name, CCREPLAY_NAME_MAX, "evil-%d", MODE);
#endif
    return 0;
}

#define UNUSED __attribute__((unused))

UNUSED static void own(const ccreplay_event *ev, ccreplay_decision *o) {
    memset(o, 0, sizeof *o);
    o->t_ns = ev->t_ns;
    o->flow = ev->flow;
    o->cause_kind = ev->kind;
    o->cause_index = ev->index;
    o->present = CCREPLAY_OUT_RATE;
    o->rate_bps = 1000 + ev->index;
    o->n_state = 1;
    ccreplay_set_state(&o->state[0], "x", CCREPLAY_STATE_F64, ccreplay_f64_bits(0.5));
}

UNUSED static void tick(uint64_t t, ccreplay_decision *o) {
    memset(o, 0, sizeof *o);
    o->t_ns = t;
    o->cause_kind = CCREPLAY_CAUSE_TIMER;
    snprintf(o->timer_name, CCREPLAY_NAME_MAX, "tick");
    o->present = CCREPLAY_OUT_RATE;
    o->rate_bps = t;
}

UNUSED static int pending; /* MODE 6/7: timer decisions still to write */
UNUSED static uint64_t pending_t;
UNUSED static int pending_own;
UNUSED static ccreplay_event last;

UNUSED static int32_t flush(ccreplay_decision *out, size_t cap, size_t *n) {
    *n = 0;
    while (*n < cap && (pending > 0 || pending_own)) {
        if (pending > 0) { tick(pending_t - (uint64_t)pending, &out[*n]); pending--; }
        else { own(&last, &out[*n]); pending_own = 0; }
        (*n)++;
    }
    return (pending > 0 || pending_own) ? CCREPLAY_MORE : CCREPLAY_OK;
}

int32_t ccreplay_dut_event(ccreplay_dut *d, const ccreplay_event *ev, ccreplay_decision *out,
                           size_t cap, size_t *n, char *err) {
    (void)d;
    *n = 0;
    own(ev, &out[0]);
    *n = 1;
#if MODE == 1
    *n = cap + 1;
#elif MODE == 2
    memset(out[0].state[0].name, 'x', CCREPLAY_NAME_MAX);
#elif MODE == 3
    out[0].state[0].name[0] = (char)0xFF;
#elif MODE == 4
    snprintf(err, CCREPLAY_ERR_MAX, "model exploded at psn %u", ev->psn);
    return -7;
#elif MODE == 5
    out[0].cause_index = ev->index + 1;
#elif MODE == 6 || MODE == 7
    /* 100 timer decisions 100..1 ns before the event, then the event's own. */
    last = *ev;
    pending = 100;
    pending_t = ev->t_ns;
    pending_own = 1;
    return flush(out, cap, n);
#elif MODE == 8
    out[0].state[0].bits = ccreplay_f64_bits(NAN);
#elif MODE == 9
    out[0].present |= 1u << 9;
#elif MODE == 10
    out[0].n_state = 13;
#elif MODE == 11
    ccreplay_set_state(&out[0].state[0], "x", CCREPLAY_STATE_BOOL, 2);
#elif MODE == 12
    out[0].n_state = 2;
    ccreplay_set_state(&out[0].state[1], "x", CCREPLAY_STATE_U64, 1);
#elif MODE == 13
    ccreplay_set_state(&out[0].state[0], "a\"b", CCREPLAY_STATE_U64, 1);
#endif
    (void)err; (void)cap;
    return 0;
}

#if MODE == 6
int32_t ccreplay_dut_drain(ccreplay_dut *d, ccreplay_decision *out, size_t cap, size_t *n,
                           char *err) {
    (void)d; (void)err;
    return flush(out, cap, n);
}
#endif

int32_t ccreplay_dut_finish(ccreplay_dut *d, uint64_t t, ccreplay_decision *out, size_t cap,
                            size_t *n, char *err) {
    (void)d; (void)err; (void)cap;
#if MODE == 14
    tick(t + 1, &out[0]);
    *n = 1;
#else
    (void)t; (void)out;
    *n = 0;
#endif
    return 0;
}

#ifndef NO_DESTROY
void ccreplay_dut_destroy(ccreplay_dut *d) { free(d); }
#endif
"#;

fn evil(mode: u32, extra: &[&str]) -> PathBuf {
    let dir = scratch_dir("dut_cabi");
    let tag = extra.join("").replace(['-', '='], "_");
    let src = dir.join(format!("evil{mode}{tag}.c"));
    std::fs::write(&src, EVIL).unwrap();
    let mut defines = vec![format!("-DMODE={mode}")];
    defines.extend(extra.iter().map(|s| s.to_string()));
    let d: Vec<&str> = defines.iter().map(String::as_str).collect();
    build(&src, &format!("libevil{mode}{tag}.so"), &d)
}

fn load(lib: &Path, params: serde_json::Value) -> Result<CAbiDut, DutError> {
    CAbiDut::load(lib, &setup(params))
}

/// The error running the few-event stream through the library gives.
fn run_err(lib: &Path) -> DutError {
    let mut d = load(lib, json!({})).unwrap();
    run(&mut d, &few_events()).expect_err("the library must fail")
}

#[test]
fn c_hpcc_is_bit_identical_to_the_reference() {
    if !have_tool("gcc") {
        return;
    }
    let events = hpcc_events();
    let params = hpcc_params();
    let reference = reference(&params, &events);
    let w_init = Hpcc::new(&params).unwrap().w_init_bytes();
    assert_stream_exercises_hpcc(&reference, w_init);
    let mut dut = load(&hpcc_lib(false), serde_json::to_value(&params).unwrap()).unwrap();
    assert_eq!(dut.name(), "hpcc-c");
    let got = run(&mut dut, &events).unwrap();
    assert_identical(&reference, &got);
}

#[test]
fn c_hpcc_defaults_are_the_references() {
    if !have_tool("gcc") {
        return;
    }
    let events = hpcc_events();
    let reference = reference(&hpcc::Params::default(), &events);
    let mut dut = load(&hpcc_lib(false), json!({})).unwrap();
    let got = run(&mut dut, &events).unwrap();
    assert_identical(&reference, &got);
}

#[test]
fn c_bug_is_caught_at_the_first_window_update() {
    if !have_tool("gcc") {
        return;
    }
    let events = hpcc_events();
    let params = hpcc_params();
    let reference = reference(&params, &events);
    let w_init = Hpcc::new(&params).unwrap().w_init_bytes();
    let mut dut = load(&hpcc_lib(true), serde_json::to_value(&params).unwrap()).unwrap();
    assert_eq!(dut.name(), "hpcc-c+bug-wai-twice");
    let got = run(&mut dut, &events).unwrap();
    let first = first_difference(&reference, &got).expect("the bug must show");
    assert_eq!(first, first_window_change(&reference, w_init));
    assert!(matches!(
        reference[first].cause,
        Cause::Event {
            kind: "rx_ack" | "rx_nak",
            ..
        }
    ));
    // W_AI = 150,000 x 0.05 / 100 = 75 bytes (HPCC-8, W_init = 100 Gbps x 12 µs / 8); added
    // once more before the floor, W grows by 75 or 76 bytes.
    let extra =
        got[first].outputs.window_bytes.unwrap() - reference[first].outputs.window_bytes.unwrap();
    assert!(matches!(extra, 75 | 76), "W grew by {extra}");
}

#[test]
fn c_hpcc_refuses_bad_setups_with_its_message() {
    if !have_tool("gcc") {
        return;
    }
    let lib = hpcc_lib(false);
    let e = load(&lib, json!({"eta": 1.5})).err().unwrap();
    assert!(e.what.contains("ccreplay_dut_create failed"), "{e}");
    assert!(e.what.contains("`eta`"), "{e}");
    let e = load(&lib, json!({"etta": 0.9})).err().unwrap();
    assert!(e.what.contains("unknown parameter `etta`"), "{e}");
    let mut s = setup(json!({}));
    s.model = "dcqcn".into();
    let e = CAbiDut::load(&lib, &s).err().unwrap();
    assert!(e.what.contains("implements `hpcc`, not `dcqcn`"), "{e}");
}

#[test]
fn a_library_without_the_symbols_is_refused() {
    if !have_tool("gcc") {
        return;
    }
    let dir = scratch_dir("dut_cabi");
    let src = dir.join("empty.c"); // one test writes it
    std::fs::write(&src, "int ccreplay_unrelated(void) { return 0; }\n").unwrap();
    let e = load(&build(&src, "libempty.so", &[]), json!({}))
        .err()
        .unwrap();
    assert!(e.what.contains("no `ccreplay_dut_abi_version`"), "{e}");
    assert!(e.hint.as_deref().unwrap().contains("ccreplay_dut.h"), "{e}");
    let e = load(&evil(0, &["-DNO_DESTROY"]), json!({})).err().unwrap();
    assert!(e.what.contains("no `ccreplay_dut_destroy`"), "{e}");
}

#[test]
fn a_wrong_abi_version_is_refused() {
    if !have_tool("gcc") {
        return;
    }
    let e = load(&evil(0, &["-DABI=99"]), json!({})).err().unwrap();
    assert!(
        e.what.contains("C ABI version 99, the harness speaks 1"),
        "{e}"
    );
    assert!(e.hint.as_deref().unwrap().contains("rebuild"), "{e}");
}

#[test]
fn a_missing_library_is_refused() {
    let e = load(Path::new("/nonexistent/libdut.so"), json!({}))
        .err()
        .unwrap();
    assert!(e.what.contains("no such file"), "{e}");
    let dir = scratch_dir("dut_cabi");
    let not_a_lib = dir.join("not_a_library.so");
    std::fs::write(&not_a_lib, "text").unwrap();
    let e = load(&not_a_lib, json!({})).err().unwrap();
    assert!(e.what.starts_with("could not load"), "{e}");
}

#[test]
fn a_well_behaved_stub_passes() {
    if !have_tool("gcc") {
        return;
    }
    let mut d = load(&evil(0, &[]), json!({})).unwrap();
    assert_eq!(d.name(), "evil-0");
    let got = run(&mut d, &few_events()).unwrap();
    assert_eq!(got.len(), 3);
    for (i, d) in got.iter().enumerate() {
        assert_eq!(d.outputs.rate_bps, Some(1000 + i as u64));
        assert_eq!(d.state.get("x"), Some(StateValue::F64(0.5)));
    }
}

#[test]
fn invalid_decisions_name_the_event_and_the_field() {
    if !have_tool("gcc") {
        return;
    }
    let cases: &[(u32, &str)] = &[
        (1, "reported 65 decisions, but the capacity was 64"),
        (2, "state[0].name: no NUL within its 32 bytes"),
        (3, "state[0].name: not UTF-8"),
        (4, "returned error -7: model exploded at psn 7"),
        (
            5,
            "caused by tx_data #1 of flow 0, but the request was tx_data #0",
        ),
        (8, "state `x` is NaN"),
        (9, "unknown output bits 0x201"),
        (10, "n_state = 13, at most 12"),
        (11, "bool bits = 2"),
        (12, "state `x` appears twice"),
        (13, "control character, `\"` or `\\`"),
        (
            7,
            "CCREPLAY_MORE, but the library has no ccreplay_dut_drain",
        ),
    ];
    assert_eq!(DECISIONS_PER_CALL, 64);
    for (mode, want) in cases {
        let e = run_err(&evil(*mode, &[]));
        assert!(e.what.contains(want), "mode {mode}: {e}");
        // The first event (tx_data, psn 7, index 0) is named.
        let ev = e.event.as_deref().unwrap_or_default();
        assert!(
            ev.contains(r#""kind": "tx_data""#) && ev.contains(r#""index": 0"#),
            "mode {mode}: {e}"
        );
        assert!(e.dut.contains(&format!("evil-{mode}")), "mode {mode}: {e}");
        assert!(e.hint.is_some());
    }
    // A name without NUL from create.
    let e = load(&evil(20, &[]), json!({})).err().unwrap();
    assert!(e.what.contains("invalid name: no NUL"), "{e}");
    // A finish answer with a timer after the trace end.
    let mut d = load(&evil(14, &[]), json!({})).unwrap();
    let events = few_events();
    let e = run(&mut d, &events).unwrap_err();
    assert!(e.what.contains("is after the trace end"), "{e}");
    assert_eq!(e.event, None);
}

#[test]
fn more_and_drain_deliver_every_decision_in_order() {
    if !have_tool("gcc") {
        return;
    }
    let mut d = load(&evil(6, &[]), json!({})).unwrap();
    let events = few_events();
    let mut out = Vec::new();
    d.event(&events[1], &mut out).unwrap();
    // 100 timer decisions at t - 100 .. t - 1 (64 + 36 through drain), then the event's own.
    assert_eq!(out.len(), 101);
    for (k, dec) in out[..100].iter().enumerate() {
        assert_eq!(dec.cause, Cause::Timer { name: "tick" });
        assert_eq!(dec.t_ns, events[1].t_ns - 100 + k as u64);
    }
    assert_eq!(
        out[100].cause,
        Cause::Event {
            kind: "rx_ack",
            index: 1
        }
    );
    // Failed calls leave `out` as it was.
    let mut out = vec![out[0]];
    let e = {
        let mut bad = load(&evil(5, &[]), json!({})).unwrap();
        bad.event(&events[0], &mut out).unwrap_err()
    };
    assert!(e.what.contains("caused by"), "{e}");
    assert_eq!(out.len(), 1);
}
