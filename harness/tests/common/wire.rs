//! What the `--dut wire` test files (dut_wire.rs, dut_wire_acks.rs) share: a pcap's records,
//! a capture rewritten record by record, `diff --dut wire --format json`, and
//! fncc_chain_receiver with its frames edited.

use ccreplay_codecs::Dialect;

use super::{repo, run as ccreplay};

/// The records of a little-endian pcap: (offset of the frame, its length).
pub fn records(pcap: &[u8]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let len = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        v.push((at + 16, len));
        at += 16 + len;
    }
    v
}

/// The same capture with `edit` applied to its records: (time, frame) in, records out (in
/// time order).
pub fn rewrite(
    pcap_path: &std::path::Path,
    edit: impl Fn(Vec<(u64, Vec<u8>)>) -> Vec<(u64, Vec<u8>)>,
) {
    let pcap = std::fs::read(pcap_path).unwrap();
    let mut recs: Vec<(u64, Vec<u8>)> = records(&pcap)
        .into_iter()
        .map(|(at, len)| {
            let h = at - 16;
            let s = u64::from(u32::from_le_bytes(pcap[h..h + 4].try_into().unwrap()));
            let ns = u64::from(u32::from_le_bytes(pcap[h + 4..h + 8].try_into().unwrap()));
            (s * 1_000_000_000 + ns, pcap[at..at + len].to_vec())
        })
        .collect();
    recs = edit(recs);
    recs.sort_by_key(|r| r.0);
    let mut w =
        ccreplay_codecs::capture::PcapWriter::new(std::fs::File::create(pcap_path).unwrap())
            .unwrap();
    for (t, f) in recs {
        w.write(t, &f).unwrap();
    }
    w.flush().unwrap();
}

pub fn diff_json(dir: &std::path::Path, manifest: &str) -> (i32, serde_json::Value, String) {
    diff_json_with(dir, manifest, &[])
}

/// [`diff_json`] with more arguments (`--allow KEY=VALUE`).
pub fn diff_json_with(
    dir: &std::path::Path,
    manifest: &str,
    more: &[&str],
) -> (i32, serde_json::Value, String) {
    let mut args = vec!["diff", manifest, "--dut", "wire", "--format", "json"];
    args.extend_from_slice(more);
    let (code, out, err) = ccreplay(dir, &args);
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, v, err)
}

// fncc_chain_receiver, flow 0 (h0 → h4, the capture's first data flow; tshark -r
// traces/fncc_chain_receiver.pcap -c 34): PSN 16777036 is lost. Frame 25: data 16777037 (the
// flow's 13th packet, event #12: 16777024..16777035 came before), answered by the NAK of frame
// 26 naming 16777036 with N = 1 (h0's is the only flow until 120 µs, FNCC-2); frame 27: data
// 16777038 (#13), dropped with no reply; frame 28: the retransmitted 16777036 (#14), ACK frame
// 29; frame 30: 16777037 (#15), ACK frame 31; frame 32: 16777038 (#16), ACK frame 33.
// (1-based frame numbers; the records below are 0-based.)

/// A copy of fncc_chain_receiver with `edit` applied to its records (0-based, time order).
pub fn fncc_chain(tag: &str, edit: impl Fn(&mut Vec<(u64, Vec<u8>)>)) -> super::Scratch {
    let dir = super::Scratch::new(&format!("wire-fncc-{tag}"));
    for ext in ["pcap", "toml"] {
        std::fs::copy(
            repo().join(format!("traces/fncc_chain_receiver.{ext}")),
            dir.join(format!("fncc_chain_receiver.{ext}")),
        )
        .unwrap();
    }
    rewrite(&dir.join("fncc_chain_receiver.pcap"), |mut recs| {
        // The frames named above, as tshark shows them.
        let psn = |f: &[u8]| u32::from_be_bytes([0, f[51], f[52], f[53]]);
        assert_eq!((recs[24].1[42], psn(&recs[24].1)), (7, 16777037));
        assert_eq!(
            (recs[25].1[42], recs[25].1[54], psn(&recs[25].1)),
            (0x11, 96, 16777036)
        );
        assert_eq!((recs[28].1[42], psn(&recs[28].1)), (0x11, 16777036));
        assert_eq!((recs[30].1[42], psn(&recs[30].1)), (0x11, 16777037));
        edit(&mut recs);
        recs
    });
    dir
}

/// Recompute an FNCC frame's ICRC (its last 4 bytes), as the NIC would send it.
pub fn fix_icrc(f: &mut [u8]) {
    super::fix_icrc(f, Dialect::Fncc);
}
