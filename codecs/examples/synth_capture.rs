//! Write the benchmarks' synthetic `hpcc` capture to a file, for timing whole commands
//! (`ccreplay inspect`, `tshark`) on it.
//!
//! `cargo run --release -p ccreplay-codecs --example synth_capture -- OUT.pcap [PACKETS]`

#[path = "../benches/common/mod.rs"]
mod common;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: synth_capture OUT.pcap [PACKETS (default 1000000)]");
        std::process::exit(2);
    };
    let n: usize = args
        .next()
        .map_or(1_000_000, |s| s.parse().expect("PACKETS is a number"));
    let bytes = common::hpcc_capture(n, 1024);
    std::fs::write(&out, &bytes).unwrap_or_else(|e| {
        eprintln!("{out}: {e}");
        std::process::exit(2);
    });
    eprintln!("{out}: {n} packets, {} bytes", bytes.len());
}
