//! Tap imperfections (`[[taps]]` `ts_resolution_ns`, `ts_jitter_ns`, `drop_ppm`, `mirror`) and the NIC
//! model (`[device]`) through `ccreplay::sim` (docs/sim.md "NIC hardware and bugs" and "Tap
//! imperfections"), on the small observed-DUT scenario `scenarios/observed/dcqcn_sender.toml`.
//! Each imperfect capture is checked frame by frame against the exact capture of the same run:
//! the network does not change, only what the tap records.

use std::path::PathBuf;

use ccreplay::replay::{self, Trace};
use ccreplay::sim::scenario::Override;
use ccreplay::sim::{Scenario, SimOutput, simulate};
use ccreplay_codecs::capture::{CaptureFormat, CaptureReader};
use ccreplay_reference_cc::{Cause, Decision, StateValue};

mod common;

fn scenario_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/observed/dcqcn_sender.toml")
}

fn run(sets: &[&str]) -> SimOutput {
    let sets: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    let sc = Scenario::load_with(&scenario_path(), &sets).unwrap();
    simulate(&sc, None, &mut |_| {}).unwrap()
}

/// (ts ns, frame bytes) of every record, and whether the file is a nanosecond pcap.
fn records(pcap: &[u8]) -> (Vec<(u64, Vec<u8>)>, bool) {
    let mut r = CaptureReader::from_slice(pcap).unwrap();
    let ns = match r.format() {
        CaptureFormat::Pcap { nanosecond, .. } => nanosecond,
        f => panic!("{f:?}"),
    };
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        out.push((rec.ts_ns, rec.data.to_vec()));
    }
    (out, ns)
}

fn exact() -> (SimOutput, Vec<(u64, Vec<u8>)>) {
    let out = run(&[]);
    let (recs, ns) = records(&out.captures[0].pcap);
    assert!(ns, "the default stays a nanosecond pcap");
    // The exact capture has ns timestamps that are not all µs multiples (else the checks
    // below could not fail).
    assert!(recs.iter().any(|(t, _)| t % 1000 != 0));
    (out, recs)
}

#[test]
fn microsecond_resolution_writes_a_microsecond_pcap() {
    let (_, want) = exact();
    let out = run(&["taps.0.ts_resolution_ns=1000"]);
    let pcap = &out.captures[0].pcap;
    // Classic pcap magic a1b2c3d4, little-endian.
    assert_eq!(&pcap[0..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
    let (got, ns) = records(pcap);
    assert!(!ns);
    assert_eq!(got.len(), want.len());
    for ((t, f), (te, fe)) in got.iter().zip(&want) {
        assert_eq!(f, fe);
        assert_eq!(*t, te - te % 1000);
    }
    // 2 µs: still a µs file, times floored to 2000 ns.
    let (got, ns) = records(&run(&["taps.0.ts_resolution_ns=2000"]).captures[0].pcap);
    assert!(!ns);
    assert!(got.iter().zip(&want).all(|(g, w)| g.0 == w.0 - w.0 % 2000));
    // 7 ns: a nanosecond file, times floored to multiples of 7.
    let (got, ns) = records(&run(&["taps.0.ts_resolution_ns=7"]).captures[0].pcap);
    assert!(ns);
    assert!(got.iter().zip(&want).all(|(g, w)| g.0 == w.0 - w.0 % 7));
}

/// Every jittered time t satisfies exact <= t <= exact + J: the offset is in [0, J], and the
/// clamp raises a time only to the previous record's, which is at most its own exact + J <=
/// this record's exact + J (exact times never decrease). The file's times never decrease.
#[test]
fn jitter_stays_within_bounds_and_reproduces() {
    let (_, want) = exact();
    let a = run(&["taps.0.ts_jitter_ns=500"]);
    let (got, ns) = records(&a.captures[0].pcap);
    assert!(ns);
    assert_eq!(got.len(), want.len());
    for ((t, f), (te, fe)) in got.iter().zip(&want) {
        assert_eq!(f, fe);
        assert!(*te <= *t && *t <= te + 500, "{t} vs exact {te}");
    }
    assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
    // The offsets are spread over [0, 500]: some near each end (N ≈ 2000 draws, uniform).
    let off: Vec<u64> = got.iter().zip(&want).map(|(g, w)| g.0 - w.0).collect();
    assert!(off.iter().any(|&o| o < 50) && off.iter().any(|&o| o > 450));
    // The same seed gives the same bytes; another seed other offsets.
    assert_eq!(
        a.captures[0].pcap,
        run(&["taps.0.ts_jitter_ns=500"]).captures[0].pcap
    );
    let (other, _) = records(&run(&["taps.0.ts_jitter_ns=500", "seed=7"]).captures[0].pcap);
    let (other_exact, _) = records(&run(&["seed=7"]).captures[0].pcap);
    let off7: Vec<u64> = other
        .iter()
        .zip(&other_exact)
        .map(|(g, w)| g.0 - w.0)
        .collect();
    assert_ne!(off[..100], off7[..100]);
    // With µs resolution too: floored after the jitter, so floor(exact) <= t <= exact + J.
    let (got, ns) = records(
        &run(&["taps.0.ts_jitter_ns=1500", "taps.0.ts_resolution_ns=1000"]).captures[0].pcap,
    );
    assert!(!ns);
    for ((t, _), (te, _)) in got.iter().zip(&want) {
        assert!(te - te % 1000 <= *t && *t <= te + 1500 && t % 1000 == 0);
    }
    assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
}

/// `drop_ppm` = 100 000: each frame is lost with p = 0.1, so of N frames the number lost is
/// Binomial(N, 0.1), standard deviation sqrt(0.09 N); the run's count must lie within 5
/// deviations of 0.1 N (a seed outside that has probability below 10^-6). The kept frames are
/// the exact capture's, in order, at their exact times; the same seed loses the same frames,
/// whatever the jitter (the generators are separate); the network, the manifest and the
/// decisions are unchanged.
#[test]
fn drop_ppm_loses_about_that_share_the_same_way_per_seed() {
    let (base, want) = exact();
    let a = run(&["taps.0.drop_ppm=100000"]);
    let (got, _) = records(&a.captures[0].pcap);
    let n = want.len() as f64;
    let lost = n - got.len() as f64;
    let sd = (0.09 * n).sqrt();
    assert!(
        (lost - 0.1 * n).abs() <= 5.0 * sd,
        "{lost} of {n} lost, expected {} ± {}",
        0.1 * n,
        5.0 * sd
    );
    assert_eq!(a.captures[0].packets, got.len() as u64);
    // A subsequence of the exact capture.
    let mut it = want.iter();
    for g in &got {
        assert!(
            it.any(|w| w == g),
            "a kept frame not in the exact capture, in order"
        );
    }
    let kept = |o: &SimOutput| -> Vec<Vec<u8>> {
        records(&o.captures[0].pcap)
            .0
            .into_iter()
            .map(|(_, f)| f)
            .collect()
    };
    assert_eq!(
        a.captures[0].pcap,
        run(&["taps.0.drop_ppm=100000"]).captures[0].pcap
    );
    let jittered = run(&["taps.0.drop_ppm=100000", "taps.0.ts_jitter_ns=300"]);
    assert_eq!(kept(&jittered), kept(&a));
    assert_ne!(
        kept(&run(&["taps.0.drop_ppm=100000", "seed=7"])),
        kept(&run(&["seed=7"]))
    );
    // Only the capture changes.
    assert_eq!(a.captures[0].manifest, base.captures[0].manifest);
    assert_eq!(a.captures[0].decisions, base.captures[0].decisions);
    assert_eq!(
        serde_json::to_string(&a.metrics).unwrap(),
        serde_json::to_string(&base.metrics).unwrap()
    );
    // 1 000 000 ppm loses everything, 0 nothing.
    assert!(
        records(&run(&["taps.0.drop_ppm=1000000"]).captures[0].pcap)
            .0
            .is_empty()
    );
}

/// The manifest without `source.notes` (which counts the run's events, marks and queue).
fn manifest_sans_notes(text: &str) -> toml::Table {
    let mut t: toml::Table = toml::from_str(text).unwrap();
    if let Some(toml::Value::Table(s)) = t.get_mut("source") {
        s.remove("notes");
    }
    t
}

/// A `[device]` bug changes what the tapped NIC does (its capture), not what its manifest
/// says: the manifest names the reference model and the scenario's parameters.
#[test]
fn device_bug_changes_the_capture_not_the_manifest() {
    let (base, _) = exact();
    for bug in [
        "cut-twice",
        "ignore-cnp",
        "no-additive-increase",
        "alpha-gain",
    ] {
        let set = format!("device.bug={bug}");
        let out = run(&[set.as_str()]);
        assert_ne!(out.captures[0].pcap, base.captures[0].pcap, "{bug}");
        assert_eq!(
            manifest_sans_notes(&out.captures[0].manifest),
            manifest_sans_notes(&base.captures[0].manifest),
            "{bug}"
        );
    }
    for set in [
        "device.reaction_ns=2000",
        "device.rate_mantissa_bits=4",
        "device.burst_bytes=8000",
    ] {
        assert_ne!(run(&[set]).captures[0].pcap, base.captures[0].pcap, "{set}");
    }
}

#[test]
fn bad_device_and_tap_keys_are_errors() {
    let err = |sets: &[&str]| -> String {
        let sets: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
        Scenario::load_with(&scenario_path(), &sets)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| panic!("{sets:?} accepted"))
    };
    let e = err(&["device.bug=cut-thrice"]);
    assert!(
        e.contains("cut-twice") && e.contains("int-wrong-hop"),
        "{e}"
    );
    let e = err(&["device.bug=int-wrong-hop"]);
    assert!(e.contains("not of dcqcn"), "{e}");
    let e = err(&["device.ignore_cnp_ns=5"]);
    assert!(e.contains("ignore-cnp"), "{e}");
    let e = err(&["device.bug=alpha-gain", "device.alpha_g=2.0"]);
    assert!(e.contains("alpha_g"), "{e}");
    let e = err(&["device.burst=1"]);
    assert!(e.contains("burst_bytes"), "{e}");
    let e = err(&["taps.0.ts_resolution_ns=0"]);
    assert!(e.contains("ts_resolution_ns"), "{e}");
    let e = err(&["taps.0.drop_ppm=1000001"]);
    assert!(e.contains("drop_ppm"), "{e}");
    let e = err(&["taps.0.ts_jitter_ns=2000000000"]);
    assert!(e.contains("ts_jitter_ns"), "{e}");
    // The bug keys with their bug are fine.
    run(&["device.bug=ignore-cnp", "device.ignore_cnp_ns=30000"]);
    run(&["device.bug=alpha-gain", "device.alpha_g=0.5"]);
}

/// A fresh folder for this process.
fn tmp_dir(name: &str) -> common::Scratch {
    common::Scratch::new(&format!("sim-device-{name}"))
}

/// Does a reference replay of the run's tap give back the decisions the NIC's model made in
/// the loop (up to the capture's last event; the DCQCN reaction point is per flow, so in
/// (time, flow) order)?
fn closed_loop_agrees(out: &SimOutput, name: &str) -> bool {
    let dir = tmp_dir(name);
    ccreplay::sim::write(out, &dir, false).unwrap();
    let cap = &out.captures[0];
    let trace = Trace::load(&dir.join(format!("{}.toml", cap.stem))).unwrap();
    let spec = trace.model("dcqcn").unwrap().clone();
    let mut got: Vec<Decision> = Vec::new();
    replay::replay_reference(&trace, &spec, 1, |d| {
        got.push(*d);
        Ok(())
    })
    .unwrap();
    let mut last_t = 0;
    replay::for_each_event(&trace, |e| last_t = last_t.max(e.t_ns)).unwrap();
    let mut want: Vec<Decision> = cap
        .decisions
        .iter()
        .filter(|d| d.t_ns <= last_t)
        .copied()
        .collect();
    want.sort_by_key(|d| (d.t_ns, d.flow));
    let _ = std::fs::remove_dir_all(&dir);
    got == want
}

/// A correct NIC's hardware (a coarse limiter, batches, a reaction latency) changes when
/// packets go, but the model still sees in the capture every event it was fed: the replay
/// reproduces its decisions bit for bit. A buggy NIC's capture does not (its model was fed a
/// CNP twice; the reference is fed it once).
#[test]
fn correct_hardware_keeps_closed_loop_agreement_a_bug_breaks_it() {
    assert!(closed_loop_agrees(&run(&[]), "ideal"));
    let hw = run(&[
        "device.rate_mantissa_bits=5",
        "device.burst_bytes=6000",
        "device.reaction_ns=3000",
    ]);
    assert!(closed_loop_agrees(&hw, "hardware"));
    assert!(!closed_loop_agrees(
        &run(&["device.bug=cut-twice"]),
        "cut-twice"
    ));
}

/// What the observed scenarios' headers promise, at their own seeds: the DCQCN sender gets
/// CNPs every few tens of µs and goes through cuts, fast recovery (max stage < F = 5),
/// additive and hyper increase (min stage > F), without drops; the HPCC sender's windows
/// change on most ACKs, and `int-wrong-hop` changes what h0 gets of the shared port.
#[test]
fn observed_scenarios_exercise_what_their_headers_say() {
    let out = run(&[]);
    assert_eq!(out.metrics.drops, 0);
    let ds = &out.captures[0].decisions;
    let stage = |d: &Decision, n: &str| match d.state.get(n) {
        Some(StateValue::U64(v)) => v,
        v => panic!("{n}: {v:?}"),
    };
    let (mut cnp, mut fr, mut ai, mut hai) = (Vec::new(), 0, 0, 0);
    for d in ds {
        match d.cause {
            Cause::Event { kind: "rx_cnp", .. } => cnp.push(d.t_ns),
            Cause::Timer { name: "alpha" } => {}
            _ => {
                let (t, b) = (stage(d, "timer_stage"), stage(d, "byte_stage"));
                if t.max(b) < 5 {
                    fr += 1;
                } else if t.min(b) > 5 {
                    hai += 1;
                } else {
                    ai += 1;
                }
            }
        }
    }
    assert!(cnp.len() >= 20, "{} CNPs", cnp.len());
    let mut gaps: Vec<u64> = cnp.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    let median = gaps[gaps.len() / 2];
    assert!(
        (5_000..=60_000).contains(&median),
        "median CNP gap {median} ns"
    );
    assert!(fr > 0 && ai > 0 && hai > 0, "FR {fr}, AI {ai}, HAI {hai}");

    let hpcc = |sets: &[&str]| {
        let sets: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
        let p = scenario_path().with_file_name("hpcc_sender.toml");
        simulate(&Scenario::load_with(&p, &sets).unwrap(), None, &mut |_| {}).unwrap()
    };
    let ideal = hpcc(&[]);
    let w: Vec<u64> = ideal.captures[0]
        .decisions
        .iter()
        .filter(|d| d.flow == 0)
        .filter_map(|d| d.outputs.window_bytes)
        .collect();
    let changes = w.windows(2).filter(|p| p[0] != p[1]).count();
    assert!(
        changes * 2 > w.len() && w.len() > 300,
        "{changes} of {}",
        w.len()
    );
    let buggy = hpcc(&["device.bug=int-wrong-hop"]);
    let acked = |o: &SimOutput, f: usize| o.metrics.flows[f].bytes_acked as f64;
    // h0's first flow gets more, h3's cross traffic (flow 1) less, than with a correct NIC.
    assert!(acked(&buggy, 0) > 1.2 * acked(&ideal, 0));
    assert!(acked(&buggy, 1) < 0.8 * acked(&ideal, 1));
}

/// `[[taps]]` `mirror` (docs/sim.md): every record is the exact capture's frame, at the same
/// time, inside the outer Ethernet / IPv4 / GRE / ERSPAN III the collector receives — GRE's
/// sequence number the record's number from 0, ERSPAN's timestamp the time in 100 ns (mod
/// 2^32; the exact time also when the collector's clock jitters), session 5, Hw ID 1 — read
/// back by the codecs; a kind or session ERSPAN does not have is refused.
#[test]
fn a_mirror_tap_writes_the_exact_frames_encapsulated() {
    use ccreplay_codecs::mirror::MirrorKind;
    use ccreplay_codecs::packet::Packet;
    let (_, want) = exact();
    let text = std::fs::read_to_string(scenario_path()).unwrap();
    let with = |mirror: &str| {
        text.replacen(
            "stem = \"dcqcn_sender\"\n",
            &format!("stem = \"dcqcn_sender\"\nmirror = {mirror}\n"),
            1,
        )
    };
    let sc = Scenario::parse(&with("{ kind = \"erspan3\", session = 5 }")).unwrap();
    let out = simulate(&sc, None, &mut |_| {}).unwrap();
    let (got, _) = records(&out.captures[0].pcap);
    assert_eq!(got.len(), want.len());
    for (i, ((t, rec), (t0, frame))) in got.iter().zip(&want).enumerate() {
        assert_eq!(t, t0, "record {i}");
        let p = Packet::decode_ethernet(rec, &Default::default());
        let m = p
            .mirror
            .unwrap_or_else(|| panic!("record {i}: {:?}", p.error));
        let e = m.erspan.unwrap();
        assert_eq!(m.kind, MirrorKind::ErspanIII);
        assert_eq!(&rec[m.inner..], &frame[..], "record {i}");
        assert_eq!(m.gre.seq, Some(i as u32));
        assert_eq!(e.timestamp(), (t / 100) as u32);
        assert_eq!((e.span_id(), e.hw_id(), e.gra()), (5, 1, 1));
        assert_eq!(m.ip.addrs.src().to_string(), "10.255.0.1");
    }
    // The collector's clock jitters (`ts_jitter_ns`); the switch's stamp is the exact time.
    let jittered = with("{ kind = \"erspan3\", session = 5 }\nts_jitter_ns = 20_000");
    let out = simulate(&Scenario::parse(&jittered).unwrap(), None, &mut |_| {}).unwrap();
    let (got, _) = records(&out.captures[0].pcap);
    let mut late = 0;
    for (i, ((t, rec), (t0, _))) in got.iter().zip(&want).enumerate() {
        let p = Packet::decode_ethernet(rec, &Default::default());
        let e = p.mirror.unwrap().erspan.unwrap();
        assert_eq!(e.timestamp(), (t0 / 100) as u32, "record {i}");
        assert!(t >= t0, "record {i}");
        late += usize::from(t > t0);
    }
    assert!(late > got.len() / 2, "{late} of {} records late", got.len());
    for (mirror, why) in [
        (
            "{ kind = \"erspan4\" }",
            "mirror.kind = \"erspan4\": one of erspan1, erspan2, erspan3, gretap",
        ),
        (
            "{ kind = \"erspan2\", session = 1024 }",
            "mirror.session = 1024: ERSPAN sessions are 0..=1023",
        ),
    ] {
        let err = Scenario::parse(&with(mirror)).unwrap_err().to_string();
        assert!(err.contains(why), "{err}");
    }
}
