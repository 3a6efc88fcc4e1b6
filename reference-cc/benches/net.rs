//! Simulated events per second of the network engine (`net`) on the load: a 16-to-1
//! incast, 100 Gbps links, 1 µs propagation, 10 ms of simulated time, no taps (issue 5 item 6:
//! target ≥ 5 M events/s on one core). HPCC (INT stamping on every data packet, a model
//! decision per ACK) and DCQCN with RED and PFC (CNPs, pause frames). And a k = 4 fat tree
//! with all-to-all traffic (240 flows of 100 KB at once, the ns-3 comparison's shape in
//! docs/performance.md): many flows in flight, a deep event queue, ECMP.

use std::hint::black_box;

use ccreplay_reference_cc::dcqcn::cp::RedParams;
use ccreplay_reference_cc::dcqcn::{NpParams, RpParams};
use ccreplay_reference_cc::hpcc;
use ccreplay_reference_cc::net::{Cc, FlowSpec, NetConfig, Network, NoTaps, PfcConfig, Topology};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const G100: u64 = 100_000_000_000;

fn incast(cc: Cc) -> NetConfig {
    let mut cfg = NetConfig::new("incast16", Topology::incast(16, G100, G100, 1_000), cc);
    cfg.duration_ns = 10_000_000;
    cfg.sample_interval_ns = 10_000;
    for src in 0..16 {
        cfg.flows.push(FlowSpec {
            src,
            dst: 16,
            size_bytes: 1 << 36,
            start_ns: 0,
            first_psn: None,
        });
    }
    cfg
}

/// k = 4 fat tree, 16 hosts, every host sends 100 KB to every other at t = 0, HPCC.
fn fat_tree_all_to_all() -> NetConfig {
    let topo = Topology::fat_tree(4, G100, 1_000).unwrap();
    let hosts: Vec<u32> = topo.hosts().collect();
    let cc = Cc::Hpcc(hpcc::Params {
        expected_flows: 15,
        ..hpcc::Params::default()
    });
    let mut cfg = NetConfig::new("fat4_all_to_all", topo, cc);
    cfg.duration_ns = 2_000_000;
    cfg.sample_interval_ns = 10_000;
    for &src in &hosts {
        for &dst in &hosts {
            if src != dst {
                cfg.flows.push(FlowSpec {
                    src,
                    dst,
                    size_bytes: 100_000,
                    start_ns: 0,
                    first_psn: None,
                });
            }
        }
    }
    cfg
}

fn bench(c: &mut Criterion) {
    let hpcc = incast(Cc::Hpcc(hpcc::Params {
        expected_flows: 16,
        ..hpcc::Params::default()
    }));
    let mut dcqcn = incast(Cc::Dcqcn {
        rp: RpParams::default(),
        np: NpParams::default(),
    });
    dcqcn.switch.red = Some(RedParams::default());
    dcqcn.switch.pfc = Some(PfcConfig::default());
    let mut g = c.benchmark_group("net_incast16_10ms");
    g.sample_size(10);
    for (name, cfg) in [("hpcc", hpcc), ("dcqcn_pfc", dcqcn)] {
        let events = Network::new(&cfg)
            .unwrap()
            .run(&mut NoTaps)
            .unwrap()
            .metrics
            .events;
        g.throughput(Throughput::Elements(events));
        g.bench_function(name, |b| {
            b.iter(|| {
                let run = Network::new(black_box(&cfg))
                    .unwrap()
                    .run(&mut NoTaps)
                    .unwrap();
                black_box(run.metrics.events)
            })
        });
    }
    g.finish();
    let fat = fat_tree_all_to_all();
    let events = Network::new(&fat)
        .unwrap()
        .run(&mut NoTaps)
        .unwrap()
        .metrics
        .events;
    let mut g = c.benchmark_group("net_fat4_all_to_all");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events));
    g.bench_function("hpcc", |b| {
        b.iter(|| {
            let run = Network::new(black_box(&fat))
                .unwrap()
                .run(&mut NoTaps)
                .unwrap();
            black_box(run.metrics.events)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
