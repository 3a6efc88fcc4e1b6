//! `ccreplay inspect`: decode a capture packet by packet (harness.md 6).
//!
//! JSON Lines use Wireshark's field names where Wireshark has the field, with JSON numbers as
//! values (booleans as 0/1, as Wireshark prints them in field output), and `ccreplay.` names for
//! what Wireshark lacks: FECN/BECN, ICRC validity, the shims, PFC timing, offsets, errors. Every
//! key is listed in docs/inspect.md. A malformed packet still gives a record, with its frame
//! number and the error (layer, offset, reason); the run goes on.
//!
//! Role: the `inspect` command; may use the codecs and the JSON Lines writer (`jsonl`). This
//! file reads the capture and keeps the summary's tallies; `json.rs` and `text.rs` write the
//! two formats; `fields/` is `-e FIELD` (tshark's `-T fields`).

use rustc_hash::FxHashMap;
use std::io::{self, Write};
use std::net::IpAddr;

use ccreplay_codecs::DecodeConfig;
use ccreplay_codecs::capture::{CaptureReader, LinkError, Record, count_link};
use ccreplay_codecs::packet::Packet;

pub mod fields;
mod json;
mod text;

pub use json::write_json;
use json::{opcode_words, write_json_summary};
use text::{write_text, write_text_summary};

use crate::jsonl::LineBuf;

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One readable line per packet, then a summary table.
    Text,
    /// One JSON object per packet (JSON Lines), then one summary object.
    Json,
}

/// What `inspect` was asked to do.
#[derive(Clone, Copy, Debug)]
pub struct InspectOptions {
    /// Dialect, INT layout and RoCEv2 UDP port.
    pub decode: DecodeConfig,
    /// Output format.
    pub format: Format,
    /// Link rate used to turn PFC quanta into ns.
    pub pfc_link_bps: u64,
}

/// Counts reported at the end of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Records read.
    pub packets: u64,
    /// Packets whose decoding stopped at an error, the capture's snaplen and link types
    /// ccreplay does not read aside.
    pub malformed: u64,
    /// Records of a link type ccreplay does not read (native InfiniBand, ERF: 197, ...): not
    /// malformed, only not decoded; counted in `other` too.
    pub unsupported_link: u64,
    /// Those link types, with their records, by link type.
    pub unsupported_link_types: Vec<(u32, u64)>,
    /// Packets the capture's snaplen cut after their headers (captured length below the
    /// original, every header read): not malformed, only not all captured.
    pub cut_by_snaplen: u64,
    /// Packets with a reserved value set.
    pub warnings: u64,
    /// RoCEv2 packets, by opcode.
    pub by_opcode: Vec<(u8, u64)>,
    /// PFC frames.
    pub pfc: u64,
    /// RoCEv2 packets whose ICRC did not match.
    pub icrc_bad: u64,
    /// Packets that were neither RoCEv2 nor PFC.
    pub other: u64,
    /// Distinct (source IP, destination IP, DestQP) of RoCEv2 packets.
    pub flows: u64,
    /// Each of them with its packets, in order of first appearance.
    pub flow_list: Vec<FlowRow>,
    /// The capture ended with a framing error after this many records.
    pub capture_error: Option<String>,
}

/// One direction of RoCEv2 traffic (source, destination, DestQP) and its packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRow {
    /// Source IP.
    pub src: IpAddr,
    /// Destination IP.
    pub dst: IpAddr,
    /// BTH DestQP.
    pub dest_qp: u32,
    /// Counts.
    pub counts: FlowCounts,
}

/// Packets of one direction, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCounts {
    /// Frame number of the first.
    pub first_frame: u64,
    /// RoCEv2 packets.
    pub packets: u64,
    /// Flow data: SEND / WRITE requests and READ responses, not to QP1 (`Roce::is_flow_data`).
    pub data: u64,
    /// ACK / NAK.
    pub acks: u64,
    /// CNPs.
    pub cnps: u64,
    /// READ requests (the requester's, to the responder that answers with READ responses).
    pub read_requests: u64,
}

impl FlowCounts {
    fn merge(&mut self, o: &FlowCounts) {
        if self.packets == 0 || (o.packets > 0 && o.first_frame < self.first_frame) {
            self.first_frame = o.first_frame;
        }
        self.packets += o.packets;
        self.data += o.data;
        self.acks += o.acks;
        self.cnps += o.cnps;
        self.read_requests += o.read_requests;
    }
}

type FlowKey = (IpAddr, IpAddr, u32);

/// Decode one record.
pub fn decode_record<'a>(rec: &Record<'a>, cfg: &DecodeConfig) -> Packet<'a> {
    Packet::from_record(rec, cfg)
}

/// Accumulates the summary.
struct Tally {
    s: Summary,
    opcodes: [u64; 256],
    flows: FxHashMap<FlowKey, FlowCounts>,
    /// The flow of the packets just counted, not yet in `flows`: consecutive packets mostly
    /// share a flow, so the hash is paid once per run of them.
    last_flow: Option<(FlowKey, FlowCounts)>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            s: Summary::default(),
            opcodes: [0; 256],
            flows: FxHashMap::default(),
            last_flow: None,
        }
    }
}

impl Tally {
    fn add(&mut self, rec: &Record<'_>, p: &Packet<'_>, icrc_ok: Option<bool>) {
        let frame = rec.frame_number;
        self.s.packets += 1;
        match damage(rec, p) {
            Damage::Cut => self.s.cut_by_snaplen += 1,
            Damage::Malformed => self.s.malformed += 1,
            Damage::UnsupportedLink(link) => {
                self.s.unsupported_link += 1;
                count_link(&mut self.s.unsupported_link_types, link, 1);
            }
            Damage::None => {}
        }
        self.s.warnings += (p.warnings > 0) as u64;
        if let Some(r) = &p.roce {
            let op = r.bth.opcode();
            self.opcodes[op.0 as usize] += 1;
            if let Some(ip) = &p.ip {
                let key = (ip.addrs.src(), ip.addrs.dst(), r.bth.dest_qp());
                let c = match &mut self.last_flow {
                    Some((k, c)) if *k == key => c,
                    last => {
                        if let Some((k, c)) = last.take() {
                            self.flows.entry(k).or_default().merge(&c);
                        }
                        &mut last
                            .insert((
                                key,
                                FlowCounts {
                                    first_frame: frame,
                                    ..Default::default()
                                },
                            ))
                            .1
                    }
                };
                c.packets += 1;
                c.data += r.is_flow_data() as u64;
                c.acks += op.is_ack() as u64;
                c.cnps += op.is_cnp() as u64;
                c.read_requests += op.is_read_request() as u64;
            }
            self.s.icrc_bad += (icrc_ok == Some(false)) as u64;
        } else if p.pfc.is_some() {
            self.s.pfc += 1;
        } else {
            self.s.other += 1;
        }
    }

    /// Add another worker's counts.
    fn merge(&mut self, o: Tally) {
        let (a, b) = (&mut self.s, o.s);
        a.packets += b.packets;
        a.malformed += b.malformed;
        a.unsupported_link += b.unsupported_link;
        for (link, n) in b.unsupported_link_types {
            count_link(&mut a.unsupported_link_types, link, n);
        }
        a.cut_by_snaplen += b.cut_by_snaplen;
        a.warnings += b.warnings;
        a.pfc += b.pfc;
        a.icrc_bad += b.icrc_bad;
        a.other += b.other;
        for (x, y) in self.opcodes.iter_mut().zip(o.opcodes) {
            *x += y;
        }
        for (k, c) in o
            .flows
            .iter()
            .chain(o.last_flow.as_ref().map(|(k, c)| (k, c)))
        {
            self.flows.entry(*k).or_default().merge(c);
        }
    }

    fn finish(mut self) -> Summary {
        if let Some((k, c)) = self.last_flow.take() {
            self.flows.entry(k).or_default().merge(&c);
        }
        self.s.by_opcode = (0..256)
            .filter(|&i| self.opcodes[i] > 0)
            .map(|i| (i as u8, self.opcodes[i]))
            .collect();
        self.s.flows = self.flows.len() as u64;
        let mut list: Vec<FlowRow> = self
            .flows
            .iter()
            .map(|(&(src, dst, dest_qp), &counts)| FlowRow {
                src,
                dst,
                dest_qp,
                counts,
            })
            .collect();
        list.sort_by_key(|f| (f.counts.first_frame, f.src, f.dst, f.dest_qp));
        self.s.flow_list = list;
        self.s
    }
}

/// Errors that stop `inspect` before it reads a packet.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// The capture could not be opened or is not a capture.
    #[error("{path}: {source}")]
    Open {
        /// File.
        path: String,
        /// Why.
        source: ccreplay_codecs::capture::CaptureError,
    },
    /// Writing the output failed (e.g. a closed pipe).
    #[error("writing output: {0}")]
    Io(#[from] io::Error),
}

/// Run `inspect` on one file, writing records and the summary to `out`.
///
/// Packets are decoded and formatted on every core, in batches of records taken from the
/// reader in turn; the output is written in capture order and is the same whatever the number
/// of threads ([`run_with_workers`]).
pub fn run(
    path: &str,
    opts: &InspectOptions,
    out: &mut dyn Write,
) -> Result<Summary, InspectError> {
    run_with_workers(path, opts, out, crate::batches::default_workers())
}

/// [`run`] with `workers` decoding threads.
pub fn run_with_workers(
    path: &str,
    opts: &InspectOptions,
    out: &mut dyn Write,
    workers: usize,
) -> Result<Summary, InspectError> {
    run_inner(path, opts, out, workers)
}

/// `inspect -e FIELD ...`: the selected fields, one line per packet, as tshark's `-T fields`
/// writes them (no summary: tshark writes none). Written from the decoded packet
/// ([`fields`]); the summary returned counts the packets, the malformed ones and those with
/// warnings, and says how the capture ended (flows, opcodes and ICRCs are not tallied).
pub fn run_fields(
    path: &str,
    opts: &InspectOptions,
    selection: &fields::Selection,
    out: &mut dyn Write,
    workers: usize,
) -> Result<Summary, InspectError> {
    fields::run(path, opts, selection, out, workers)
}

fn run_inner(
    path: &str,
    opts: &InspectOptions,
    out: &mut dyn Write,
    workers: usize,
) -> Result<Summary, InspectError> {
    let reader = CaptureReader::open(path).map_err(|source| InspectError::Open {
        path: path.to_string(),
        source,
    })?;
    let (tallies, capture_error) = crate::batches::par_batches(
        reader,
        workers,
        Tally::default,
        |tally, batch, o: &mut LineBuf| {
            o.clear();
            for rec in batch.records() {
                let p = decode_record(&rec, &opts.decode);
                let icrc = p.icrc_check();
                tally.add(&rec, &p, icrc.map(|(c, f)| c == f));
                match opts.format {
                    Format::Json => write_json(o, &rec, &p, icrc, &opts.decode, opts.pfc_link_bps),
                    Format::Text => write_text(o, &rec, &p, icrc),
                }
            }
        },
        || LineBuf::with_capacity(1 << 20),
        |o| out.write_all(o.as_bytes()),
    )?;
    let mut tally = Tally::default();
    for t in tallies {
        tally.merge(t);
    }
    let mut summary = tally.finish();
    summary.capture_error = capture_error;
    let mut buf = Vec::new();
    match opts.format {
        Format::Json => write_json_summary(&mut buf, &summary),
        Format::Text => write_text_summary(&mut buf, &summary),
    }
    out.write_all(&buf)?;
    out.flush()?;
    Ok(summary)
}

/// How a record counts in the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Damage {
    /// Decoded without error.
    None,
    /// Cut by the capture's snaplen after its headers ([`cut_or_malformed`]).
    Cut,
    /// Malformed.
    Malformed,
    /// Of a link type ccreplay does not read (the link type): nothing was decoded, and
    /// nothing is wrong with the record.
    UnsupportedLink(u32),
}

/// How `rec`, decoded as `p`, counts.
pub(crate) fn damage(rec: &Record<'_>, p: &Packet<'_>) -> Damage {
    match cut_or_malformed(p, rec.is_truncated()) {
        None => Damage::None,
        Some(true) => Damage::Cut,
        // Asked again only of the records that failed: the decoder stopped at their link
        // header when the link type is one it does not read.
        Some(false) => match rec.link_start() {
            Err(LinkError::Unsupported(link)) => Damage::UnsupportedLink(link),
            _ => Damage::Malformed,
        },
    }
}

/// How a packet's decoding error counts: `Some(true)` cut by the capture's snaplen (or by the
/// switch that mirrored it: ERSPAN T) after its headers (the frame is shorter than it was on
/// the wire, and every header was read:
/// `Packet::headers_complete`, what `replay` replays as whole), `Some(false)` malformed (a
/// cut inside the headers too, as `replay` counts it), `None` no error.
pub(crate) fn cut_or_malformed(p: &Packet<'_>, record_cut: bool) -> Option<bool> {
    p.is_malformed()
        .then(|| p.cut(record_cut) && p.headers_complete())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output bytes and summary of `inspect` with `workers` threads.
    fn inspect_with(
        path: &str,
        dialect: ccreplay_codecs::Dialect,
        format: Format,
        workers: usize,
    ) -> (Vec<u8>, Summary) {
        let opts = InspectOptions {
            decode: DecodeConfig::for_dialect(dialect),
            format,
            pfc_link_bps: 100_000_000_000,
        };
        let mut out = Vec::new();
        let s = run_with_workers(path, &opts, &mut out, workers).expect("inspect");
        (out, s)
    }

    // Captures of several batches (more than BLOCK_BYTES) and with malformed
    // packets: the bytes written must not depend on how many threads decoded them.
    #[test]
    fn output_does_not_depend_on_threads() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        for (file, dialect) in [
            ("traces/hpcc_dumbbell.pcap", ccreplay_codecs::Dialect::Hpcc),
            (
                "tests/fixtures/malformed.pcap",
                ccreplay_codecs::Dialect::Roce,
            ),
            (
                "tests/fixtures/roce_linktypes_multi.pcapng",
                ccreplay_codecs::Dialect::Roce,
            ),
        ] {
            let path = format!("{root}/{file}");
            for format in [Format::Json, Format::Text] {
                let (one, s1) = inspect_with(&path, dialect, format, 1);
                assert!(s1.packets > 0, "{file}");
                for workers in [2, 3] {
                    let (many, s) = inspect_with(&path, dialect, format, workers);
                    assert_eq!(s, s1, "{file}: summary with {workers} threads");
                    assert!(one == many, "{file}: output with {workers} threads differs");
                }
            }
        }
        let len = std::fs::metadata(format!("{root}/traces/hpcc_dumbbell.pcap"))
            .expect("bundled trace")
            .len();
        assert!(len > crate::batches::BLOCK_BYTES as u64, "several batches");
    }
}
