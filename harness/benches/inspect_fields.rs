//! `inspect -e` per packet, capture in memory (issue 18.5; the whole command against tshark is
//! in docs/performance.md): the 2,553 packets of traces/roce_dcqcn.pcap 40 times over
//! (102,120 packets), the eight fields of the docs' measurement. `decode+fields` is what each
//! thread does per packet; `fields` the line alone, packets decoded beforehand; `json_record`
//! the JSON record `--format json` writes (and `-e` used to pick fields out of), for scale.

use std::hint::black_box;

use ccreplay::inspect::fields::{FieldOptions, Selection, TextBuf};
use ccreplay::jsonl::LineBuf;
use ccreplay_codecs::capture::{CaptureReader, LinkType, Record};
use ccreplay_codecs::packet::Packet;
use ccreplay_codecs::{DecodeConfig, Dialect};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const COPIES: usize = 40;
const FIELDS: [&str; 8] = [
    "frame.number",
    "frame.time_epoch",
    "ip.src",
    "ip.dst",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
    "infiniband.aeth.syndrome",
];
/// Lines written into one buffer before it is handed on, as a 1 MiB block's worth.
const BATCH: usize = 1024;

struct Owned {
    frame_number: u64,
    ts_ns: u64,
    orig_len: u32,
    data: Vec<u8>,
    link: LinkType,
    interface_id: u32,
}

impl Owned {
    fn record(&self) -> Record<'_> {
        Record {
            frame_number: self.frame_number,
            ts_ns: self.ts_ns,
            orig_len: self.orig_len,
            data: &self.data,
            link: self.link,
            interface_id: self.interface_id,
        }
    }
}

fn records() -> Vec<Owned> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/roce_dcqcn.pcap");
    let mut one = Vec::new();
    let mut r = CaptureReader::open(path).expect("bundled trace");
    while let Some(Ok(rec)) = r.next_record() {
        one.push(Owned {
            frame_number: rec.frame_number,
            ts_ns: rec.ts_ns,
            orig_len: rec.orig_len,
            data: rec.data.to_vec(),
            link: rec.link,
            interface_id: rec.interface_id,
        });
    }
    let mut all = Vec::with_capacity(one.len() * COPIES);
    for k in 0..COPIES {
        for o in &one {
            all.push(Owned {
                frame_number: (k * one.len()) as u64 + o.frame_number,
                data: o.data.clone(),
                ..*o
            });
        }
    }
    all
}

fn bench(c: &mut Criterion) {
    let recs = records();
    let cfg = DecodeConfig::for_dialect(Dialect::Roce);
    let sel = Selection::new(
        FIELDS.iter().map(|s| s.to_string()).collect(),
        FieldOptions::default(),
    );
    let mut g = c.benchmark_group("inspect_fields");
    g.throughput(Throughput::Elements(recs.len() as u64));
    g.sample_size(20);
    let mut out = TextBuf::with_capacity(1 << 18);
    g.bench_function("decode+fields", |b| {
        b.iter(|| {
            for chunk in recs.chunks(BATCH) {
                out.clear();
                for o in chunk {
                    let rec = o.record();
                    let p = Packet::from_record(&rec, &cfg);
                    sel.line(&rec, &p, None, &cfg, 100_000_000_000, &mut out);
                }
                black_box(out.as_bytes());
            }
        })
    });
    let decoded: Vec<(Record<'_>, Packet<'_>)> = recs
        .iter()
        .map(|o| {
            let rec = o.record();
            let p = Packet::from_record(&rec, &cfg);
            (rec, p)
        })
        .collect();
    g.bench_function("fields", |b| {
        b.iter(|| {
            for chunk in decoded.chunks(BATCH) {
                out.clear();
                for (rec, p) in chunk {
                    sel.line(rec, p, None, &cfg, 100_000_000_000, &mut out);
                }
                black_box(out.as_bytes());
            }
        })
    });
    let mut json = LineBuf::with_capacity(1 << 20);
    g.bench_function("json_record", |b| {
        b.iter(|| {
            for chunk in decoded.chunks(BATCH) {
                json.clear();
                for (rec, p) in chunk {
                    ccreplay::inspect::write_json(&mut json, rec, p, None, &cfg, 100_000_000_000);
                }
                black_box(json.as_bytes());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
