//! A Lumina testbed's dumps put in the switch's order (`ccreplay lumina`, docs/wire.md 2.3).
//!
//! The switch sends its copies round-robin to several dump servers, each writing its own
//! capture; and an aggregate made by concatenating them, or by `mergecap` (which orders by the
//! servers' clocks), is not in the order the packets went by. Replay reads a capture in order
//! and refuses copies out of the switch's order, so this merges the dumps by the switch's
//! sequence number into one capture: every record kept, byte for byte with its capture time;
//! a record that is no copy (ARP, another port) stays after the copy before it in its dump.
//! It holds the dumps in memory (a test iteration's dumps, not a day's).
//!
//! Role: reads captures (codecs `capture`, `Packet` for the copies' fields), writes one; uses
//! nothing else of the harness.

use std::path::{Path, PathBuf};

use ccreplay_codecs::capture::{CaptureError, CaptureReader, LinkType, PcapWriter};
use ccreplay_codecs::lumina::SEQ_MAX;
use ccreplay_codecs::{DecodeConfig, Packet};

/// Why the dumps could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A dump could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The dump.
        path: PathBuf,
        /// Why.
        source: CaptureError,
    },
    /// The dumps' records have different link types: one pcap cannot hold them.
    #[error(
        "{path} holds {found} records where the first dump's are {first}: a pcap has one link type"
    )]
    LinkTypes {
        /// The dump with the other link type.
        path: PathBuf,
        /// Its link type.
        found: LinkType,
        /// The first record's.
        first: LinkType,
    },
    /// No record is a copy to the port: nothing to order by.
    #[error(
        "no record of the {records} read is a Lumina copy to UDP port {port}: is that the port the switch sends its copies to?"
    )]
    NoCopies {
        /// Records read.
        records: u64,
        /// The port given.
        port: u16,
    },
}

/// What the merge did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Merged {
    /// The merged capture (an ns pcap).
    pub pcap: Vec<u8>,
    /// Records written: every record of every dump, less the duplicates.
    pub records: u64,
    /// Of them, Lumina copies.
    pub copies: u64,
    /// The first and last sequence numbers, in the switch's order.
    pub first_seq: u64,
    /// See `first_seq`.
    pub last_seq: u64,
    /// Sequence numbers between them no dump holds: copies the dump servers lost.
    pub missing: u64,
    /// Copies found twice (the same bytes under the same sequence number: dumps that overlap),
    /// written once.
    pub duplicates: u64,
    /// Sequence numbers held by two different copies (not written twice: both kept).
    pub conflicts: u64,
}

/// One record, with where it goes.
struct Item {
    /// The switch sequence number it follows: its own (a copy), or the copy's before it in
    /// its dump (0 before its first); then (`merge`) counted from the first copy in the
    /// switch's order, so the counter's wrap is no jump.
    key: u64,
    /// A copy (`true`) comes before the records that follow it in its dump.
    copy: bool,
    /// The dump and the record's place in it: a stable order among equals.
    dump: usize,
    index: u64,
    ts_ns: u64,
    orig_len: u32,
    data: Vec<u8>,
}

/// Merge `dumps` by the switch sequence number of the Lumina copies to UDP `port`.
pub fn merge(dumps: &[PathBuf], port: u16) -> Result<Merged, MergeError> {
    let cfg = DecodeConfig {
        lumina_port: port,
        ..DecodeConfig::default()
    };
    let mut items: Vec<Item> = Vec::new();
    let mut link: Option<LinkType> = None;
    let mut read = 0u64;
    for (d, path) in dumps.iter().enumerate() {
        let err = |source| MergeError::Read {
            path: path.clone(),
            source,
        };
        let mut reader = CaptureReader::open(path).map_err(err)?;
        // Records before a dump's first copy follow the first copy of all.
        let mut last_seq = 0u64;
        let mut index = 0u64;
        while let Some(rec) = reader.next_record() {
            let rec = rec.map_err(err)?;
            read += 1;
            match link {
                None => link = Some(rec.link),
                Some(l) if l != rec.link => {
                    return Err(MergeError::LinkTypes {
                        path: path.clone(),
                        found: rec.link,
                        first: l,
                    });
                }
                Some(_) => {}
            }
            let p = Packet::from_record(&rec, &cfg);
            let seq = p.lumina.map(|l| l.seq);
            if let Some(s) = seq {
                last_seq = s;
            }
            items.push(Item {
                key: last_seq,
                copy: seq.is_some(),
                dump: d,
                index,
                ts_ns: rec.ts_ns,
                orig_len: rec.orig_len,
                data: rec.data.to_vec(),
            });
            index += 1;
        }
    }
    let Some(base) = first_in_order(items.iter().filter(|i| i.copy).map(|i| i.key)) else {
        return Err(MergeError::NoCopies {
            records: read,
            port,
        });
    };
    for it in &mut items {
        // Records before their dump's first copy (0) follow the first copy of all.
        it.key = if it.copy || it.key != 0 {
            (it.key + SEQ_MAX - base % SEQ_MAX) % SEQ_MAX
        } else {
            0
        };
    }
    // A copy before the records that follow it in its dump; then dumps in the order given.
    items.sort_by_key(|i| (i.key, !i.copy, i.dump, i.index));
    let mut out = Merged::default();
    let mut w = PcapWriter::with_link_type(Vec::new(), link.unwrap_or(LinkType::Ethernet))
        .map_err(|source| MergeError::Read {
            path: dumps[0].clone(),
            source,
        })?;
    let mut last: Option<&Item> = None;
    for it in &items {
        if it.copy {
            if let Some(prev) = last.filter(|p| p.key == it.key) {
                if prev.data == it.data {
                    out.duplicates += 1;
                    continue;
                }
                out.conflicts += 1;
            } else if let Some(prev) = last {
                out.missing += it.key - prev.key - 1;
            }
            last = Some(it);
            out.copies += 1;
        }
        out.records += 1;
        // Writing into memory cannot fail.
        let _ = w.write_truncated(it.ts_ns, &it.data, it.orig_len);
    }
    let first = items.iter().find(|i| i.copy).map_or(0, |i| i.key);
    let last_key = last.map_or(0, |i| i.key);
    // Back to the switch's numbering, 1..=SEQ_MAX (a first copy numbered 0, which no switch
    // writes, does not underflow).
    let seq = |k: u64| (base + SEQ_MAX - 1 + k) % SEQ_MAX + 1;
    (out.first_seq, out.last_seq) = (seq(first), seq(last_key));
    out.pcap = w.into_inner().unwrap_or_default();
    Ok(out)
}

/// Whether `capture` looks like a Lumina dump to UDP `port`: of its first 10,000 records,
/// how many read as copies to the port and how many of those have the ICRC of the packet they
/// copy (a Lumina switch's copy does; a datagram that only looks like one almost never).
pub fn probe(capture: &Path, port: u16) -> Result<(u64, u64), CaptureError> {
    let cfg = DecodeConfig {
        lumina_port: port,
        ..DecodeConfig::default()
    };
    let mut reader = CaptureReader::open(capture)?;
    let (mut copies, mut valid, mut read) = (0, 0, 0);
    while let Some(Ok(rec)) = reader.next_record() {
        let p = Packet::from_record(&rec, &cfg);
        if p.lumina.is_some() {
            copies += 1;
            valid += u64::from(p.icrc_check().is_some_and(|(c, f)| c == f));
        }
        read += 1;
        if read == 10_000 {
            break;
        }
    }
    Ok((copies, valid))
}

/// The default output beside the first dump: `NAME.merged.pcap`.
pub fn default_output(first: &Path) -> PathBuf {
    let stem = first
        .file_stem()
        .map_or_else(|| "lumina".into(), |s| s.to_string_lossy().into_owned());
    first.with_file_name(format!("{stem}.merged.pcap"))
}

/// The sequence number the switch gave first among `seqs`: on the counter's cycle
/// (1..=SEQ_MAX), the one after the widest gap between two numbers the dumps hold — a dump
/// spans far less than the cycle, so its start is where the cycle is empty before it, wherever
/// the wrap falls and whichever dump was read first.
fn first_in_order(seqs: impl Iterator<Item = u64>) -> Option<u64> {
    let mut v: Vec<u64> = seqs.map(|s| s % SEQ_MAX).collect();
    v.sort_unstable();
    v.dedup();
    let (&lowest, &highest) = (v.first()?, v.last()?);
    // The gap from the highest round to the lowest, then each gap between neighbours.
    let mut best = (lowest + SEQ_MAX - highest, lowest);
    for w in v.windows(2) {
        best = best.max((w[1] - w[0], w[1]));
    }
    Some(best.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: 5..=9 start at 5; across the wrap (SEQ_MAX - 1, SEQ_MAX, 1, 2) at SEQ_MAX - 1;
    /// one number starts at itself.
    #[test]
    fn the_first_in_the_switchs_order() {
        assert_eq!(first_in_order([7, 5, 9, 6, 8].into_iter()), Some(5));
        assert_eq!(
            first_in_order([1, SEQ_MAX, 2, SEQ_MAX - 1].into_iter()),
            Some(SEQ_MAX - 1)
        );
        assert_eq!(first_in_order([42].into_iter()), Some(42));
        assert_eq!(first_in_order(std::iter::empty()), None);
    }
}
