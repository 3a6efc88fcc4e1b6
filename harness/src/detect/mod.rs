//! Dialect detection: which dialect and INT layout read a capture's RoCEv2 packets cleanly.
//!
//! Role: `inspect` without `--dialect`, `init`, and the hints of `replay`/`diff`/`check` when a
//! manifest's dialect damages packets. May use: codecs (decoding, the ICRC) and nothing of the
//! replay.
//!
//! The ICRC covers every byte from BTH to the end of the payload (wire.md 4), so it only
//! validates when the bytes before BTH (hpcc's INT stack, rcc's timestamp) are skipped by the
//! right amount: it is the oracle. What it cannot tell apart, a shim that sits inside the
//! covered bytes (fncc's N and INT after the AETH), the header structure does: an ACK or CNP
//! with bytes left over after its headers is a misreading, and so is a stack that overruns.
//! Each candidate reads the first sampled packets; the one that reads most of them cleanly and
//! wholly wins, then the one that sets fewest reserved bits and finds the most shims; ties go to the simpler reading (roce, then the documented defaults).

pub mod link_rate;
pub mod survey;

use std::path::Path;

use ccreplay_codecs::capture::{CaptureError, CaptureReader};
use ccreplay_codecs::packet::{AckExt, Shim};
use ccreplay_codecs::shim::{IntConfig, IntLayout};
use ccreplay_codecs::{DecodeConfig, Dialect, LinkStart, Packet};

/// RoCEv2 packets read to decide (the first ones of the capture).
pub const SAMPLE: usize = 2_000;

/// Most INT records a stack may hold (nHop is 4 bits, wire.md 5.2).
const MAX_HOPS: u8 = 15;
/// The manifest's default `max_hops`.
const DEFAULT_HOPS: u8 = 5;

/// How one candidate configuration reads the sampled packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    /// The candidate.
    pub config: DecodeConfig,
    /// Packets read without error whose ICRC matches (or was cut off by snaplen).
    pub clean: u64,
    /// Packets whose decoding stopped at an error.
    pub malformed: u64,
    /// Packets that decoded but whose ICRC does not match.
    pub bad_icrc: u64,
    /// Clean ACK/NAK or CNP packets with bytes left after their headers.
    pub unexplained: u64,
    /// Clean packets with a reserved value set.
    pub warnings: u64,
    /// Clean packets carrying the dialect's shim or ACK extension.
    pub shims: u64,
    /// Largest nHop seen in a clean packet's INT stack.
    pub max_n_hop: u8,
}

impl Reading {
    fn new(config: DecodeConfig) -> Self {
        Reading {
            config,
            clean: 0,
            malformed: 0,
            bad_icrc: 0,
            unexplained: 0,
            warnings: 0,
            shims: 0,
            max_n_hop: 0,
        }
    }

    /// Ranking key, larger is better: packets read cleanly and wholly (an ACK with bytes left
    /// over is a misreading), then fewest reserved values set, then most shims found.
    fn key(&self) -> (u64, std::cmp::Reverse<u64>, u64) {
        (self.whole(), std::cmp::Reverse(self.warnings), self.shims)
    }

    /// Packets this reading damages (malformed or bad ICRC).
    pub fn damaged(&self) -> u64 {
        self.malformed + self.bad_icrc
    }

    /// Packets read cleanly and wholly: clean, and no ACK/CNP with bytes left unread.
    pub fn whole(&self) -> u64 {
        self.clean - self.unexplained
    }

    /// What this reading gets wrong, in words (`["2,000 with a bad ICRC"]`); empty when it
    /// reads every sampled packet whole.
    pub fn misreadings(&self) -> Vec<String> {
        use crate::verdict::n;
        let mut w = Vec::new();
        if self.malformed > 0 {
            w.push(format!("{} malformed", n(self.malformed)));
        }
        if self.bad_icrc > 0 {
            w.push(format!("{} with a bad ICRC", n(self.bad_icrc)));
        }
        if self.unexplained > 0 {
            w.push(format!(
                "{} ACK/CNP with bytes left unread",
                n(self.unexplained)
            ));
        }
        w
    }
}

/// The outcome of a detection.
#[derive(Clone, Debug)]
pub struct Detection {
    /// RoCEv2 packets (UDP to the RoCEv2 port) sampled.
    pub sampled: u64,
    /// How many of them carry a complete ICRC (the oracle).
    pub with_icrc: u64,
    /// Every candidate's reading, in candidate order.
    pub readings: Vec<Reading>,
    /// Index of the chosen reading.
    pub best: usize,
}

impl Detection {
    /// The chosen reading.
    pub fn best(&self) -> &Reading {
        &self.readings[self.best]
    }

    /// The chosen configuration.
    pub fn config(&self) -> DecodeConfig {
        self.best().config
    }

    /// How `config` reads the sample (its dialect and INT layout; max_hops matters for the
    /// padded layout only).
    pub fn reading(&self, config: &DecodeConfig) -> Option<&Reading> {
        let same = |r: &&Reading| {
            r.config.dialect == config.dialect
                && (!uses_int(config.dialect)
                    || (r.config.int.layout == config.int.layout
                        && (config.int.layout == IntLayout::Grown
                            || r.config.int.max_hops == config.int.max_hops)))
        };
        self.readings.iter().find(same)
    }

    /// True when the chosen reading is strictly better than `config`'s: it damages fewer
    /// packets, or explains more of them.
    pub fn better_than(&self, config: &DecodeConfig) -> bool {
        match self.reading(config) {
            Some(r) => self.best().key() > r.key() && self.sampled > 0,
            None => self.sampled > 0,
        }
    }

    /// One line: what was chosen and why, with the runner-up of another dialect.
    pub fn why(&self) -> String {
        use crate::verdict::n;
        if self.sampled == 0 {
            return format!(
                "no RoCEv2 packet (UDP to port {}) among the frames read: reading as roce",
                self.config().udp_port
            );
        }
        let b = self.best();
        let mut s = format!(
            "{} of {} RoCEv2 packets read cleanly as {}",
            n(b.clean),
            n(self.sampled),
            describe(&b.config, b.max_n_hop)
        );
        if self.with_icrc == 0 {
            s.push_str(
                " (no packet carries its ICRC, cut by snaplen: chosen on header structure alone)",
            );
        } else if b.clean > 0 {
            s.push_str(" with a valid ICRC");
        }
        if b.clean == 0 && !b.misreadings().is_empty() {
            // Why none did, for the reading that came closest: a capture whose every ICRC
            // fails (a tool that does not keep it, or rewrote headers) is told so.
            s.push_str(&format!(" ({})", b.misreadings().join(", ")));
        }
        if b.shims > 0 && b.config.dialect != Dialect::Roce {
            s.push_str(&format!(", {} carrying its shims", n(b.shims)));
        }
        let runner = self
            .readings
            .iter()
            .filter(|r| r.config.dialect != b.config.dialect)
            .max_by_key(|r| r.key());
        if let Some(r) = runner {
            let mut why = r.misreadings();
            if why.is_empty() && r.shims < b.shims {
                why.push(format!("{} shims found", n(r.shims)));
            }
            if !why.is_empty() {
                s.push_str(&format!(
                    "; as {}: {}",
                    r.config.dialect.name(),
                    why.join(", ")
                ));
            }
        }
        s
    }
}

fn uses_int(d: Dialect) -> bool {
    matches!(d, Dialect::Hpcc | Dialect::Fncc)
}

/// The dialect and INT layout of a configuration, as a user reads it: `hpcc (INT padded to 5
/// hops)`. `max_n_hop` is the largest nHop seen (for the grown layout).
pub fn describe(c: &DecodeConfig, max_n_hop: u8) -> String {
    if !uses_int(c.dialect) {
        return format!("`{}`", c.dialect.name());
    }
    match c.int.layout {
        IntLayout::Padded => format!(
            "`{}` (INT stacks padded to {} hops)",
            c.dialect.name(),
            c.int.max_hops
        ),
        IntLayout::Grown => format!(
            "`{}` (INT stacks grown, up to {} hops seen)",
            c.dialect.name(),
            max_n_hop
        ),
    }
}

/// The manifest keys that select a configuration (`dialect`, and `[int]` where it matters).
pub fn manifest_keys(c: &DecodeConfig, max_n_hop: u8) -> String {
    if !uses_int(c.dialect) {
        return format!("dialect = \"{}\"", c.dialect.name());
    }
    let (layout, hops) = match c.int.layout {
        IntLayout::Padded => ("padded", c.int.max_hops),
        IntLayout::Grown => ("grown", max_n_hop.max(DEFAULT_HOPS)),
    };
    format!(
        "dialect = \"{}\" with [int] layout = \"{layout}\", max_hops = {hops}",
        c.dialect.name()
    )
}

/// Every candidate, simplest first: roce; hpcc and fncc with stacks padded to the default 5
/// hops, to 1..15 hops, and grown; rcc.
pub fn candidates(udp_port: u16) -> Vec<DecodeConfig> {
    candidates_on(&DecodeConfig {
        udp_port,
        ..DecodeConfig::default()
    })
}

/// [`candidates`] on `ports`' UDP ports (RoCEv2's, VXLAN's, Geneve's).
pub fn candidates_on(ports: &DecodeConfig) -> Vec<DecodeConfig> {
    let cfg = |dialect, layout, max_hops| DecodeConfig {
        dialect,
        int: IntConfig { layout, max_hops },
        mirror_session: None,
        ..*ports
    };
    let mut v = vec![cfg(Dialect::Roce, IntLayout::Padded, DEFAULT_HOPS)];
    for d in [Dialect::Hpcc, Dialect::Fncc] {
        v.push(cfg(d, IntLayout::Padded, DEFAULT_HOPS));
        for h in (1..=MAX_HOPS).filter(|&h| h != DEFAULT_HOPS) {
            v.push(cfg(d, IntLayout::Padded, h));
        }
        v.push(cfg(d, IntLayout::Grown, MAX_HOPS));
    }
    v.push(cfg(Dialect::Rcc, IntLayout::Padded, DEFAULT_HOPS));
    v
}

/// One sampled frame, copied (detection reads a few thousand frames, once).
struct Sampled {
    data: Vec<u8>,
    orig_len: usize,
    start: LinkStart,
}

/// Detect from the first [`SAMPLE`] RoCEv2 packets of a capture file.
pub fn detect_file(path: &Path, udp_port: u16) -> Result<Detection, CaptureError> {
    detect_file_on(
        path,
        &DecodeConfig {
            udp_port,
            ..DecodeConfig::default()
        },
    )
}

/// [`detect_file`] on `ports`' UDP ports (RoCEv2's, VXLAN's, Geneve's: a manifest's
/// `[network]`, init's and inspect's options).
pub fn detect_file_on(path: &Path, ports: &DecodeConfig) -> Result<Detection, CaptureError> {
    let udp_port = ports.udp_port;
    let mut reader = CaptureReader::open(path)?;
    let mut sample = Vec::new();
    let probe = DecodeConfig {
        mirror_session: None,
        ..*ports
    };
    // Frames read at most: a capture of other traffic with no RoCEv2 is not read to its end.
    let mut budget = 200 * SAMPLE;
    while let Some(rec) = reader.next_record() {
        // A capture that ends early still has its first packets to judge.
        let Ok(rec) = rec else { break };
        budget -= 1;
        if budget == 0 {
            break;
        }
        let Ok(start) = rec.link_start() else {
            continue;
        };
        let orig_len = (rec.orig_len as usize).max(rec.data.len());
        let p = Packet::decode(rec.data, orig_len, start, &probe);
        if p.udp.is_some_and(|u| u.dst_port == udp_port) {
            sample.push(Sampled {
                data: rec.data.to_vec(),
                orig_len,
                start,
            });
            if sample.len() == SAMPLE {
                break;
            }
        }
    }
    Ok(detect(&sample, &probe))
}

fn detect(sample: &[Sampled], ports: &DecodeConfig) -> Detection {
    let mut readings: Vec<Reading> = candidates_on(ports).into_iter().map(Reading::new).collect();
    let mut with_icrc = 0;
    for s in sample {
        let mut has_icrc = false;
        for r in readings.iter_mut() {
            let p = Packet::decode(&s.data, s.orig_len, s.start, &r.config);
            let icrc = p.icrc_check();
            has_icrc |= icrc.is_some();
            if !p.headers_complete() || p.roce.is_none() {
                r.malformed += 1;
                continue;
            }
            if icrc.is_some_and(|(c, f)| c != f) {
                r.bad_icrc += 1;
                continue;
            }
            r.clean += 1;
            let roce = p.roce.as_ref().expect("checked above");
            r.warnings += (p.warnings > 0) as u64;
            let op = roce.bth.opcode();
            if (op.is_ack() || op.is_cnp()) && roce.payload_wire_len > 0 {
                r.unexplained += 1;
            }
            if !matches!(roce.shim, Shim::None) || !matches!(roce.ack_ext, AckExt::None) {
                r.shims += 1;
            }
            if let Some(s) = roce.int_stack() {
                r.max_n_hop = r.max_n_hop.max(s.n_hop());
            }
        }
        with_icrc += has_icrc as u64;
    }
    let best = (0..readings.len())
        .rev()
        .max_by_key(|&i| readings[i].key())
        .unwrap_or(0);
    // `max_by_key` keeps the last maximum: iterating in reverse makes it the first candidate.
    Detection {
        sampled: sample.len() as u64,
        with_icrc,
        readings,
        best,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_start_with_the_simplest_readings() {
        let c = candidates(4791);
        assert_eq!(c[0].dialect, Dialect::Roce);
        assert_eq!(
            (c[1].dialect, c[1].int.layout, c[1].int.max_hops),
            (Dialect::Hpcc, IntLayout::Padded, 5)
        );
        assert_eq!(c.last().unwrap().dialect, Dialect::Rcc);
        // roce, 2 × (15 padded + grown), rcc.
        assert_eq!(c.len(), 1 + 2 * 16 + 1);
    }

    #[test]
    fn nothing_sampled_reads_as_roce() {
        let d = detect(&[], &DecodeConfig::default());
        assert_eq!(d.config().dialect, Dialect::Roce);
        assert!(d.why().contains("no RoCEv2 packet"), "{}", d.why());
        assert!(!d.better_than(&DecodeConfig::default()));
    }
}
