//! What the `ccreplay sim` test files (sim.rs, sim_scenarios.rs) share: the repository root,
//! a scratch folder, a bundled scenario's text, a capture's records and data packets, and a
//! reference replay of a tap to compare with the closed loop's decisions.

use std::path::{Path, PathBuf};

use ccreplay::replay::{self, Trace};
use ccreplay::sim;
use ccreplay_codecs::DecodeConfig;
use ccreplay_codecs::capture::CaptureReader;
use ccreplay_codecs::packet::Packet;
use ccreplay_reference_cc::{Cause, Decision};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh folder for this process (several `cargo test` runs may share the target folder).
pub fn tmp_dir(name: &str) -> super::Scratch {
    super::Scratch::new(name)
}

/// The text of the bundled scenario `name`.
pub fn bundled_text(name: &str) -> &'static str {
    sim::BUNDLED.iter().find(|b| b.0 == name).unwrap().1
}

/// (absolute ns, frame bytes) of every record.
pub fn records(pcap: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let mut r = CaptureReader::from_slice(pcap).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        assert_eq!(rec.data.len() as u32, rec.orig_len, "no snaplen cut");
        out.push((rec.ts_ns, rec.data.to_vec()));
    }
    out
}

/// The RoCEv2 data packets of a capture (BTH opcodes that carry a payload).
pub fn data_packets(pcap: &[u8], cfg: &DecodeConfig) -> usize {
    records(pcap)
        .iter()
        .filter(|(_, d)| {
            Packet::decode_ethernet(d, cfg)
                .roce
                .is_some_and(|r| r.bth.opcode().is_data())
        })
        .count()
}

/// Decisions of a reference replay of `stem` with model `name`, in the harness's order, and
/// the time of the trace's last event.
pub fn replay_trace(manifest: &Path, name: &str) -> (Vec<Decision>, u64) {
    let trace = Trace::load(manifest).unwrap();
    let spec = trace.model(name).unwrap().clone();
    let mut got = Vec::new();
    let mut last_t = 0;
    let stats = replay::replay_reference(&trace, &spec, 1, |d| {
        got.push(*d);
        Ok(())
    })
    .unwrap();
    assert_eq!(stats.extract.malformed, 0, "{}", manifest.display());
    assert!(stats.extract.unpaired_acks.is_empty());
    replay::for_each_event(&trace, |e| last_t = last_t.max(e.t_ns)).unwrap();
    (got, last_t)
}

/// The closed loop's decisions up to the trace's last event, in the replay's order: per-flow
/// models sorted by (time, flow), stable within a flow.
pub fn closed_loop(decisions: &[Decision], last_t: u64, per_flow: bool) -> Vec<Decision> {
    let mut v: Vec<Decision> = decisions
        .iter()
        .filter(|d| d.t_ns <= last_t)
        .copied()
        .collect();
    if per_flow {
        v.sort_by_key(|d| (d.t_ns, d.flow));
    }
    v
}

pub fn cause(d: &Decision) -> &'static str {
    match d.cause {
        Cause::Event { kind, .. } => kind,
        Cause::Timer { name } => name,
    }
}
