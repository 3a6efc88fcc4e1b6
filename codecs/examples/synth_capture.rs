//! Write the benchmarks' synthetic `hpcc` capture to a file, for timing whole commands
//! (`ccreplay inspect`, `tshark`) on it.
//!
//! `cargo run --release -p ccreplay-codecs --example synth_capture -- OUT.pcap [PACKETS] [FLOWS]
//! [erspan3]` (64 flows by default; with more, ten consecutive packets per flow, flows in
//! turn; `erspan3`: every packet as a switch's ERSPAN III mirror session delivers it)

#[path = "../benches/common/mod.rs"]
mod common;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!(
            "usage: synth_capture OUT.pcap [PACKETS (default 1000000)] [FLOWS (default 64)] [erspan3]"
        );
        std::process::exit(2);
    };
    let n: usize = args
        .next()
        .map_or(1_000_000, |s| s.parse().expect("PACKETS is a number"));
    let flows: usize = args
        .next()
        .map_or(64, |s| s.parse().expect("FLOWS is a number"));
    assert!((1..=65_536).contains(&flows), "FLOWS is 1 to 65536");
    let mut bytes = common::hpcc_capture_flows(n, 1024, flows);
    if args.next().as_deref() == Some("erspan3") {
        bytes = common::erspan3(&bytes);
    }
    std::fs::write(&out, &bytes).unwrap_or_else(|e| {
        eprintln!("{out}: {e}");
        std::process::exit(2);
    });
    eprintln!("{out}: {n} packets, {flows} flows, {} bytes", bytes.len());
}
