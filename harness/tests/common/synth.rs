//! Small RoCEv2 captures written with the codecs' writer, for the pipeline and pairing tests.

use std::fs;
use std::path::{Path, PathBuf};

use ccreplay_codecs::Dialect;
use ccreplay_codecs::capture::PcapWriter;
use ccreplay_codecs::frame::{FrameRepr, IpRepr, RoceRepr, ShimRepr};
use ccreplay_codecs::ib::{AethRepr, BthRepr, Opcode};
use ccreplay_codecs::shim::IntConfig;
use ccreplay_codecs::shim::int::{IntHop, IntStack};

/// The sender host of the captures.
pub const SENDER: [u8; 4] = [10, 0, 0, 1];

/// One hpcc-dialect frame from `src` to `dst` (ECT(0), UDP 49152 to 4791) of `payload` bytes.
pub fn frame(
    src: [u8; 4],
    dst: [u8; 4],
    bth: BthRepr,
    int: IntStack,
    aeth: Option<AethRepr>,
    payload: usize,
) -> Vec<u8> {
    let mut roce = RoceRepr::for_opcode(bth);
    roce.shim = ShimRepr::Int(int);
    if aeth.is_some() {
        roce.aeth = aeth;
    }
    roce.payload = vec![0x5A; payload];
    emit(Dialect::Hpcc, src, dst, roce)
}

/// `roce` in a frame of `dialect` from `src` to `dst`: MACs 02:..:01 to 02:..:02, DSCP 26,
/// ECT(0), TTL 64, UDP 49152 to 4791, its ICRC computed.
pub fn emit(dialect: Dialect, src: [u8; 4], dst: [u8; 4], roce: RoceRepr) -> Vec<u8> {
    let f = FrameRepr {
        dst_mac: [2, 0, 0, 0, 0, 2],
        src_mac: [2, 0, 0, 0, 0, 1],
        vlans: [None, None],
        ip: IpRepr::V4 {
            src,
            dst,
            dscp: 26,
            ecn: 2,
            ttl: 64,
            identification: 0,
            options: vec![],
        },
        udp_src_port: 49152,
        udp_dst_port: 4791,
        roce,
    };
    let mut out = Vec::new();
    f.emit(dialect, IntConfig::default(), &mut out).unwrap();
    out
}

/// An hpcc sender-side capture: `flows` flows from 10.0.0.1 to 10.0.1.(1+i); flow i sends to
/// remote QP 0x100+i and is acknowledged on local QP 0x10+i. Each ACK echoes a one-hop INT
/// whose queue grows, so HPCC's window moves.
pub fn write_hpcc_trace(dir: &Path, name: &str, flows: u32, rounds: u32, pairing: &str) -> PathBuf {
    let mut w = PcapWriter::create(dir.join(format!("{name}.pcap"))).unwrap();
    let mut t = 1_700_000_000_000_000_000u64;
    for r in 0..rounds {
        for f in 0..flows {
            let remote = [10, 0, 1, 1 + f as u8];
            let data = BthRepr {
                opcode: Opcode::RC_WRITE_MIDDLE,
                dest_qp: 0x100 + f,
                psn: r,
                ..Default::default()
            };
            w.write(t, &frame(SENDER, remote, data, IntStack::new(), None, 1000))
                .unwrap();
            t += 80;
        }
        for f in 0..flows {
            let remote = [10, 0, 1, 1 + f as u8];
            let hop = IntHop {
                b: 2,
                ts: (r * 1000 + f * 10) & 0xFF_FFFF,
                tx_bytes: r * 8 * flows,
                qlen: (r % 20) as u16 * 200,
            };
            let int = IntStack::from_hops(0x001, &[hop]).unwrap();
            let ack = BthRepr {
                opcode: Opcode::RC_ACK,
                dest_qp: 0x10 + f,
                psn: r,
                ..Default::default()
            };
            w.write(
                t,
                &frame(
                    remote,
                    SENDER,
                    ack,
                    int,
                    Some(AethRepr {
                        syndrome: 0x1F,
                        msn: r,
                    }),
                    0,
                ),
            )
            .unwrap();
            t += 80;
        }
    }
    w.flush().unwrap();
    let manifest = format!(
        r#"dialect = "hpcc"
[capture_point]
kind = "sender"
host = "10.0.0.1"
[network]
link_rate_bps = 100_000_000_000
base_rtt_ns = 8_000
mtu_bytes = 1000
[[models]]
name = "hpcc"
params = {{ w_ai_bytes = 80.0 }}
{pairing}
[source]
kind = "synthesized"
generator = "harness/tests/common/synth.rs"
seed = 0
"#
    );
    let path = dir.join(format!("{name}.toml"));
    fs::write(&path, manifest).unwrap();
    path
}
