//! A synthetic `hpcc` capture for the benchmarks: data packets (1 KiB payload, 1–3 INT hops),
//! ACKs carrying the echoed INT, and CNPs, mixed 6 : 3 : 1, with 64 flows. The data payload
//! size is a parameter: 1024 bytes for full packets, 64 for a header-dominated capture.

use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::frame::{FrameRepr, IpRepr, RoceRepr, ShimRepr};
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode};
use ccreplay_codecs::shim::IntConfig;
use ccreplay_codecs::shim::int::{IntHop, IntStack};

/// Distinct frames to cycle through (the content varies, the cost per packet does not).
const DISTINCT: usize = 1000;

fn frame(i: usize, payload_bytes: usize, flows: usize) -> FrameRepr {
    // 64 flows: packet i belongs to flow i mod 64 (the benchmarks' capture). More flows: ten
    // consecutive packets (6 data, 3 ACKs, 1 CNP) per flow, flows in turn.
    let flow = if flows == 64 {
        i % 64
    } else {
        (i / 10) % flows
    } as u32;
    let kind = i % 10;
    // The peer of each flow: 10.0.1.x for the first 256, then 10.0.2.x, ...
    let peer = [10, 0, 1 + (flow >> 8) as u8, flow as u8];
    let hops: Vec<IntHop> = (0..1 + i % 3)
        .map(|h| IntHop {
            b: 2,
            ts: (i as u32 * 997 + h as u32 * 131) & 0xFF_FFFF,
            tx_bytes: (i as u32 * 8 + h as u32) & 0xF_FFFF,
            qlen: (i % 50) as u16,
        })
        .collect();
    let int = IntStack::from_hops(0x100 + flow as u16, &hops).unwrap();
    let (bth, payload, aeth) = match kind {
        0..=5 => (
            BthRepr {
                opcode: Opcode::RC_WRITE_MIDDLE,
                dest_qp: 0x100 + flow,
                psn: i as u32,
                ..Default::default()
            },
            vec![0xA5; payload_bytes],
            None,
        ),
        6..=8 => (
            BthRepr {
                opcode: Opcode::RC_ACK,
                dest_qp: 0x200 + flow,
                psn: i as u32,
                ..Default::default()
            },
            Vec::new(),
            Some(AethRepr {
                syndrome: 0x1F,
                msn: i as u32 & 0xFF_FFFF,
            }),
        ),
        _ => (
            BthRepr {
                opcode: Opcode::CNP,
                becn: true,
                dest_qp: 0x200 + flow,
                ..Default::default()
            },
            Vec::new(),
            None,
        ),
    };
    let mut roce = RoceRepr::for_opcode(bth);
    roce.shim = ShimRepr::Int(int);
    roce.aeth = aeth.or(roce.aeth);
    roce.payload = payload;
    FrameRepr {
        dst_mac: [2, 0, 0, 0, 0, 2],
        src_mac: [2, 0, 0, 0, 0, 1],
        vlans: [None, None],
        // Data leaves the sender 10.0.0.1; ACKs and CNPs come back to it, so the capture is a
        // sender-side trace the harness can replay.
        ip: IpRepr::V4 {
            src: if kind <= 5 { [10, 0, 0, 1] } else { peer },
            dst: if kind <= 5 { peer } else { [10, 0, 0, 1] },
            dscp: 26,
            ecn: (i % 4) as u8,
            ttl: 64,
            identification: 0,
            options: Vec::new(),
        },
        udp_src_port: 49152 + (flow % 16384) as u16,
        udp_dst_port: 4791,
        roce,
    }
}

/// Write `packets` records into a nanosecond pcap held in memory.
#[allow(dead_code)] // the synth_capture example uses the general form
pub fn hpcc_capture(packets: usize, payload_bytes: usize) -> Vec<u8> {
    hpcc_capture_flows(packets, payload_bytes, 64)
}

/// [`hpcc_capture`] with `flows` flows (1 to 65 536).
#[allow(dead_code)] // the decode bench uses 64 flows only (through hpcc_capture)
pub fn hpcc_capture_flows(packets: usize, payload_bytes: usize, flows: usize) -> Vec<u8> {
    let distinct = if flows == 64 {
        DISTINCT
    } else {
        DISTINCT.max(10 * flows)
    };
    let frames: Vec<Vec<u8>> = (0..distinct)
        .map(|i| {
            let mut out = Vec::new();
            frame(i, payload_bytes, flows)
                .emit(Dialect::Hpcc, IntConfig::default(), &mut out)
                .expect("valid frame");
            out
        })
        .collect();
    let mut w = PcapWriter::new(Vec::with_capacity(packets * 1000)).expect("pcap header");
    for i in 0..packets {
        w.write(
            1_700_000_000_000_000_000 + i as u64 * 100,
            &frames[i % distinct],
        )
        .expect("in memory");
    }
    w.into_inner().expect("in memory")
}

/// Every record of `capture` as a switch's ERSPAN III mirror session delivers it: in outer
/// Ethernet / IPv4 / GRE / ERSPAN III (54 bytes more), session 5, stamped with its time in
/// 100 ns, at the same time.
pub fn erspan3(capture: &[u8]) -> Vec<u8> {
    use ccreplay_codecs::capture::{CaptureReader, PcapWriter};
    use ccreplay_codecs::mirror::{MirrorKind, MirrorRepr};
    let mut r = CaptureReader::from_slice(capture).unwrap();
    let mut w = PcapWriter::new(Vec::with_capacity(capture.len() * 11 / 10)).unwrap();
    let (mut buf, mut seq) = (Vec::new(), 0u32);
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let repr = MirrorRepr {
            kind: MirrorKind::ErspanIII,
            src_mac: [2, 0, 0, 0, 0, 0x5a],
            dst_mac: [2, 0, 0, 0, 0, 0xc0],
            src_ip: [10, 9, 0, 1],
            dst_ip: [10, 9, 0, 2],
            ttl: 63,
            key: None,
            seq,
            session: 5,
            vlan: 0,
            cos: 0,
            truncated: false,
            index: 1,
            timestamp: (rec.ts_ns / 100) as u32,
        };
        buf.clear();
        repr.write(rec.data, &mut buf).unwrap();
        w.write(rec.ts_ns, &buf).unwrap();
        seq = seq.wrapping_add(1);
    }
    w.into_inner().unwrap()
}
