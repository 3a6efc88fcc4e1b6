//! `inspect -e FIELD ...`: tshark's `-T fields` output, so a script can swap tshark for
//! ccreplay: one line per packet, the selected fields in order, with tshark's `-E` options
//! (`header`, `separator`, `aggregator`, `occurrence`, `quote`) and defaults, an absent field
//! empty, and Wireshark's display of the values it shows in hex (the table below).
//!
//! The selection is compiled once into one accessor per field ([`access::Field`]: the value
//! `inspect --format json` writes under that key, read from the decoded packet); each packet's
//! line is written from them straight into the batch's output buffer ([`TextBuf`]: numbers and
//! addresses formatted without `fmt`, no allocation per packet). Only what the selected fields
//! need is computed: the ICRC (a CRC over the whole packet) only for `ccreplay.icrc.*`.

mod access;
#[cfg(test)]
mod json_pick;
mod text;

pub use text::TextBuf;

use std::io::Write;

use ccreplay_codecs::DecodeConfig;
use ccreplay_codecs::capture::{CaptureReader, Record};
use ccreplay_codecs::packet::Packet;

use super::{InspectError, InspectOptions, Summary};
use access::{Cx, Field, Val};

/// How a field is shown, where tshark shows it other than the JSON's decimal number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Display {
    /// As in the JSON record (decimal numbers, strings unquoted).
    Plain,
    /// `0x` and at least this many hex digits (Wireshark's BASE_HEX: the type's width, even for
    /// a bitmasked field — `ipv6.flow` 0x12345 is `0x012345` in tshark 4.0's field output).
    Hex(usize),
    /// This many bytes as lowercase hex, no prefix (FT_BYTES).
    Bytes(usize),
}

/// The fields `inspect` writes that Wireshark 4.0 displays in hex, from `tshark -G fields`
/// (columns: abbrev, type, base, bitmask) of TShark 4.0.17:
/// `tshark -G fields | awk -F'\t' '$6=="BASE_HEX" || $4=="FT_BYTES" {print $3, $4, $7}'`,
/// kept to the keys inspect writes. Everything else inspect names the Wireshark way is
/// BASE_DEC (or an address, a time, a boolean shown as 0/1), as in the JSON.
const WIRESHARK_HEX: [(&str, Display); 18] = [
    ("eth.type", Display::Hex(4)),                 // FT_UINT16
    ("vlan.etype", Display::Hex(4)),               // FT_UINT16
    ("infiniband.bth.destqp", Display::Hex(6)),    // FT_UINT24
    ("infiniband.deth.q_key", Display::Hex(16)),   // FT_UINT64
    ("infiniband.deth.srcqp", Display::Hex(8)),    // FT_UINT32
    ("infiniband.invariant.crc", Display::Hex(8)), // FT_UINT32
    ("infiniband.reth.r_key", Display::Hex(8)),    // FT_UINT32
    ("infiniband.reth.va", Display::Hex(16)),      // FT_UINT64
    ("ipv6.flow", Display::Hex(6)),                // FT_UINT24, bitmask 0xfffff
    ("macc.opcode", Display::Hex(4)),              // FT_UINT16
    ("macc.cbfc.enbv", Display::Hex(4)),           // FT_UINT16
    ("infiniband.immdt", Display::Bytes(4)),       // FT_BYTES
    ("gre.proto", Display::Hex(4)),                // FT_UINT16
    ("gre.key", Display::Hex(8)),                  // FT_UINT32
    ("vxlan.flags", Display::Hex(4)),              // FT_UINT16
    ("geneve.flags", Display::Hex(2)),             // FT_UINT8
    ("geneve.proto_type", Display::Hex(4)),        // FT_UINT16
    ("geneve.vni", Display::Hex(6)),               // FT_UINT24, BASE_HEX_DEC
];

fn display_of(field: &str) -> Display {
    if field == "infiniband.ieth" {
        return Display::Bytes(4);
    }
    WIRESHARK_HEX
        .iter()
        .find(|(k, _)| *k == field)
        .map_or(Display::Plain, |(_, d)| *d)
}

/// Which occurrences of a repeated field to print (`-E occurrence=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Occurrence {
    /// All, joined by the aggregator (`a`, the default).
    All,
    /// The first (`f`).
    First,
    /// The last (`l`).
    Last,
    /// The n-th, 1-based (`n`).
    Nth(usize),
}

/// tshark's `-E` options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldOptions {
    /// A first line with the field names.
    pub header: bool,
    /// Between fields (default a tab).
    pub separator: String,
    /// Between occurrences of one field (default `,`).
    pub aggregator: String,
    /// Which occurrences.
    pub occurrence: Occurrence,
    /// Quote each field: `"` (`d`), `'` (`s`) or none (`n`, the default).
    pub quote: Option<char>,
}

impl Default for FieldOptions {
    fn default() -> Self {
        FieldOptions {
            header: false,
            separator: "\t".into(),
            aggregator: ",".into(),
            occurrence: Occurrence::All,
            quote: None,
        }
    }
}

impl FieldOptions {
    /// Apply one `-E KEY=VALUE`, as tshark reads it (`/t` a tab, `/s` a space).
    pub fn set(&mut self, s: &str) -> Result<(), String> {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("-E {s}: expected KEY=VALUE"))?;
        let sep = |v: &str| match v {
            "/t" => "\t".to_string(),
            "/s" => " ".to_string(),
            other => other.to_string(),
        };
        match k {
            "header" => self.header = matches!(v, "y" | "Y"),
            "separator" => self.separator = sep(v),
            "aggregator" => self.aggregator = sep(v),
            "occurrence" => {
                self.occurrence = match v {
                    "a" => Occurrence::All,
                    "f" => Occurrence::First,
                    "l" => Occurrence::Last,
                    n => match n.parse::<usize>() {
                        Ok(n) if n > 0 => Occurrence::Nth(n),
                        _ => return Err(format!("-E occurrence={v}: expected a, f, l or N >= 1")),
                    },
                }
            }
            "quote" => {
                self.quote = match v {
                    "d" => Some('"'),
                    "s" => Some('\''),
                    "n" => None,
                    _ => return Err(format!("-E quote={v}: expected d, s or n")),
                }
            }
            _ => {
                return Err(format!(
                    "-E {k}: unknown option (header, separator, aggregator, occurrence, quote)"
                ));
            }
        }
        Ok(())
    }
}

/// The selected fields, compiled once into accessors, and how to print them.
#[derive(Clone, Debug)]
pub struct Selection {
    names: Vec<String>,
    /// Per selected name, in order: what it reads and how it is shown.
    fields: Vec<(Field, Display)>,
    /// Some selected field needs the ICRC computed (a CRC over the whole packet).
    needs_icrc: bool,
    quote: Option<u8>,
    options: FieldOptions,
}

impl Selection {
    /// `-e` fields in order, with the `-E` options.
    pub fn new(names: Vec<String>, options: FieldOptions) -> Self {
        let fields: Vec<(Field, Display)> = names
            .iter()
            .map(|n| (Field::parse(n), display_of(n)))
            .collect();
        Selection {
            needs_icrc: fields.iter().any(|(f, _)| f.needs_icrc()),
            fields,
            names,
            // `d` or `s`: one ASCII byte.
            quote: options.quote.map(|q| q as u8),
            options,
        }
    }

    /// The `-E` options.
    pub fn options(&self) -> &FieldOptions {
        &self.options
    }

    /// True when some selected field needs [`Packet::icrc_check`].
    pub fn needs_icrc(&self) -> bool {
        self.needs_icrc
    }

    /// The header line (with `-E header=y`): the names, never quoted (as tshark writes it).
    pub fn header(&self, out: &mut Vec<u8>) {
        for (i, n) in self.names.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(self.options.separator.as_bytes());
            }
            out.extend_from_slice(n.as_bytes());
        }
        out.push(b'\n');
    }

    /// One output line for a decoded packet: each field read by its accessor and formatted
    /// into `out` (`icrc` is `Packet::icrc_check`'s result, needed only when
    /// [`Selection::needs_icrc`]).
    #[inline]
    pub fn line(
        &self,
        rec: &Record<'_>,
        p: &Packet<'_>,
        icrc: Option<(u32, u32)>,
        cfg: &DecodeConfig,
        pfc_link_bps: u64,
        out: &mut TextBuf,
    ) {
        let cx = Cx {
            rec,
            p,
            icrc,
            cfg,
            pfc_link_bps,
        };
        let sep = self.options.separator.as_bytes();
        for (i, &(f, d)) in self.fields.iter().enumerate() {
            if i > 0 {
                // Mostly one byte (tshark's `/t`, `/s`, `,`): no copy call for it.
                match sep {
                    &[c] => out.byte(c),
                    more => out.put(more),
                }
            }
            self.value(f.get(&cx), d, out);
        }
        out.byte(b'\n');
    }

    /// A value's chosen occurrences, joined and quoted; nothing (not even quotes, as tshark)
    /// when the field or the occurrence is absent.
    #[inline]
    fn value(&self, v: Val<'_>, d: Display, out: &mut TextBuf) {
        let (vals, n) = match v {
            Val::Absent => return,
            Val::Tags(vals, n) => (vals, usize::from(n)),
            one => {
                // One occurrence: the first, the last and the 1st are it.
                if matches!(self.options.occurrence, Occurrence::Nth(k) if k > 1) {
                    return;
                }
                self.open(out);
                scalar(one, d, out);
                self.open(out);
                return;
            }
        };
        let vals = &vals[..n];
        let one = match self.options.occurrence {
            Occurrence::All => {
                if vals.is_empty() {
                    return;
                }
                self.open(out);
                for (i, &x) in vals.iter().enumerate() {
                    if i > 0 {
                        out.put(self.options.aggregator.as_bytes());
                    }
                    scalar(Val::U(x), d, out);
                }
                self.open(out);
                return;
            }
            Occurrence::First => vals.first(),
            Occurrence::Last => vals.last(),
            Occurrence::Nth(k) => k.checked_sub(1).and_then(|i| vals.get(i)),
        };
        if let Some(&x) = one {
            self.open(out);
            scalar(Val::U(x), d, out);
            self.open(out);
        }
    }

    /// The quote before (and after) a value, if any.
    #[inline(always)]
    fn open(&self, out: &mut TextBuf) {
        if let Some(q) = self.quote {
            out.byte(q);
        }
    }
}

/// One occurrence, as Wireshark shows it.
#[inline]
fn scalar(v: Val<'_>, d: Display, out: &mut TextBuf) {
    use std::fmt::Write as _;
    match v {
        Val::U(n) => match d {
            Display::Plain => out.dec(n),
            Display::Hex(w) => out.hex(n, w, true),
            Display::Bytes(len) => out.hex(n, 2 * len, false),
        },
        Val::Epoch(ns) => out.epoch(ns),
        Val::Mac(m) => out.mac(m),
        Val::V4(a) => out.ipv4(a),
        Val::V6(a) => {
            let _ = write!(out, "{a}");
        }
        Val::Str(s) => out.put(s.as_bytes()),
        Val::Words(parts) => {
            for (i, p) in parts.iter().filter(|p| !p.is_empty()).enumerate() {
                if i > 0 {
                    out.byte(b' ');
                }
                out.put(p.as_bytes());
            }
        }
        Val::Message(e) => {
            let _ = write!(out, "{e}");
        }
        Val::Tags(..) | Val::Absent => {}
    }
}

/// What `-e` counts while it writes (tshark prints no summary; `--strict` needs the
/// malformed packets and those of a link type ccreplay does not read).
#[derive(Default)]
struct Counts {
    packets: u64,
    malformed: u64,
    unsupported_link: Vec<(u32, u64)>,
    cut_by_snaplen: u64,
    warnings: u64,
}

/// `inspect -e`: decode each packet and write the selected fields from it, on `workers`
/// threads, lines in capture order (the batches of [`crate::batches::par_batches`]). The
/// summary holds the packets, malformed packets, packets with warnings and the capture error;
/// nothing else is counted.
pub(super) fn run(
    path: &str,
    opts: &InspectOptions,
    selection: &Selection,
    out: &mut dyn Write,
    workers: usize,
) -> Result<Summary, InspectError> {
    let reader = CaptureReader::open(path).map_err(|source| InspectError::Open {
        path: path.to_string(),
        source,
    })?;
    if selection.options.header {
        let mut h = Vec::new();
        selection.header(&mut h);
        out.write_all(&h)?;
    }
    let (counts, capture_error) = crate::batches::par_batches(
        reader,
        workers,
        Counts::default,
        |c: &mut Counts, batch, o: &mut TextBuf| {
            o.clear();
            for rec in batch.records() {
                let p = Packet::from_record(&rec, &opts.decode);
                c.packets += 1;
                match super::damage(&rec, &p) {
                    super::Damage::Cut => c.cut_by_snaplen += 1,
                    super::Damage::Malformed => c.malformed += 1,
                    super::Damage::UnsupportedLink(link) => {
                        ccreplay_codecs::capture::count_link(&mut c.unsupported_link, link, 1)
                    }
                    super::Damage::None => {}
                }
                c.warnings += (p.warnings > 0) as u64;
                // A CRC over the whole packet: only when a field shows it.
                let icrc = if selection.needs_icrc {
                    p.icrc_check()
                } else {
                    None
                };
                selection.line(&rec, &p, icrc, &opts.decode, opts.pfc_link_bps, o);
            }
        },
        // A 1 MiB block of docs/performance.md's capture (573 bytes a packet) is 1,830 lines,
        // 123 KB with its eight fields.
        || TextBuf::with_capacity(1 << 18),
        |o| out.write_all(o.as_bytes()),
    )?;
    let mut s = Summary {
        capture_error,
        ..Summary::default()
    };
    for c in counts {
        s.packets += c.packets;
        s.malformed += c.malformed;
        for (link, n) in c.unsupported_link {
            s.unsupported_link += n;
            ccreplay_codecs::capture::count_link(&mut s.unsupported_link_types, link, n);
        }
        s.cut_by_snaplen += c.cut_by_snaplen;
        s.warnings += c.warnings;
    }
    out.flush()?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccreplay_codecs::Dialect;
    use ccreplay_codecs::shim::{IntConfig, IntLayout};
    use std::collections::BTreeSet;

    fn root() -> String {
        concat!(env!("CARGO_MANIFEST_DIR"), "/..").to_string()
    }

    fn options(opts: &[&str]) -> FieldOptions {
        let mut o = FieldOptions::default();
        for x in opts {
            o.set(x).unwrap();
        }
        o
    }

    /// Each record of `file` decoded with `cfg`, given to `f` with its ICRC check.
    fn each_packet(
        file: &str,
        cfg: &DecodeConfig,
        mut f: impl FnMut(&Record<'_>, &Packet<'_>, Option<(u32, u32)>),
    ) {
        let mut r = CaptureReader::open(format!("{}/{file}", root())).unwrap();
        while let Some(Ok(rec)) = r.next_record() {
            let p = Packet::from_record(&rec, cfg);
            f(&rec, &p, p.icrc_check());
        }
    }

    /// The `-e` lines of some frames of a bundled capture (plain RoCEv2).
    fn lines(file: &str, frames: &[u64], fields: &[&str], opts: &[&str]) -> Vec<String> {
        let sel = Selection::new(
            fields.iter().map(|s| s.to_string()).collect(),
            options(opts),
        );
        let cfg = DecodeConfig::for_dialect(Dialect::Roce);
        let mut out = Vec::new();
        each_packet(file, &cfg, |rec, p, icrc| {
            if frames.contains(&rec.frame_number) {
                let mut b = TextBuf::with_capacity(0);
                sel.line(rec, p, icrc, &cfg, 100_000_000_000, &mut b);
                out.push(String::from_utf8(b.as_bytes().to_vec()).unwrap());
            }
        });
        assert_eq!(out.len(), frames.len(), "{file}: frames {frames:?}");
        out
    }

    const OPCODES: &str = "tests/fixtures/roce_opcodes.pcap";

    // Values as tests/fixtures/roce_opcodes.expected.jsonl says the script set them (scapy),
    // converted to Wireshark's display by hand.
    #[test]
    fn fields_as_tshark_prints_them() {
        // Frame 4 (RC SEND_LAST_WITH_IMM): DestQP 259 = 0x000103 (FT_UINT24: 6 digits);
        // ImmDt 3235774467 = 0xC0DE0003, FT_BYTES c0 de 00 03.
        // Frame 7 (RC RDMA_WRITE_FIRST): VA 139637976752128 = 127 * 2^40 + 24576 =
        // 0x7F0000006000 (FT_UINT64: 16 digits), R_Key 10530822 = 0xA0B000 + 6 (FT_UINT32: 8),
        // DMA length 4102 (decimal). Frame 22 (SEND_LAST_WITH_INVALIDATE): IETH 14741525 =
        // 0xE0F015 -> 00e0f015. Frame 57 (UD SEND_ONLY): Q_Key 286326840 = 0x11110000 + 56
        // -> 0x0000000011110038, SrcQP 568 = 0x238 -> 0x00000238. Frame 80 (IPv6): flow
        // label 74565 = 0x12345, shown in FT_UINT24's 6 digits as tshark 4.0 does.
        // eth.type 2048 = 0x0800; 34525 = 0x86dd.
        let f = [
            "frame.number",
            "eth.type",
            "infiniband.bth.destqp",
            "infiniband.immdt",
            "infiniband.reth.va",
            "infiniband.reth.r_key",
            "infiniband.reth.dmalen",
            "infiniband.ieth",
            "infiniband.deth.q_key",
            "infiniband.deth.srcqp",
            "ipv6.src",
            "ipv6.flow",
            "no.such.field",
        ];
        assert_eq!(
            lines(OPCODES, &[4, 7, 22, 57, 80], &f, &[]),
            [
                "4\t0x0800\t0x000103\tc0de0003\t\t\t\t\t\t\t\t\t\n",
                "7\t0x0800\t0x000106\t\t0x00007f0000006000\t0x00a0b006\t4102\t\t\t\t\t\t\n",
                "22\t0x0800\t0x000115\t\t\t\t\t00e0f015\t\t\t\t\t\n",
                "57\t0x0800\t0x000138\t\t\t\t\t\t0x0000000011110038\t0x00000238\t\t\t\n",
                "80\t0x86dd\t0x00014f\t\t\t\t\t\t\t\tfd00::1\t0x012345\t\n",
            ]
        );
        // A field asked for twice is printed twice.
        assert_eq!(
            lines(OPCODES, &[4], &["frame.number", "frame.number"], &[]),
            ["4\t4\n"]
        );
    }

    // Frame 85 carries two 802.1Q tags: PCP 6, VID 10 outside, PCP 2, VID 4094 inside; frame
    // 84 an 802.1ad tag (TPID 34984 = 0x88a8: PCP 5, VID 200) then an 802.1Q one (PCP 1, VID
    // 300). tshark shows one occurrence of `vlan.*` per 802.1Q tag and of `ieee8021ad.*` per
    // 802.1ad tag.
    #[test]
    fn tshark_options_apply() {
        let tags = [
            "eth.type",
            "vlan.priority",
            "vlan.id",
            "ieee8021ad.id",
            "ccreplay.vlan.vid",
            "frame.number",
        ];
        let l = |opts: &[&str]| lines(OPCODES, &[84, 85], &tags, opts);
        // vlan.etype, per 802.1Q tag: the EtherType after it. Frame 83: one tag, then IPv4
        // (0x0800); 84: the 802.1Q tag is the inner one, then IPv4; 85: the outer tag is
        // followed by the inner one's TPID 0x8100, the inner one by IPv4.
        assert_eq!(
            lines(OPCODES, &[83, 84, 85], &["vlan.etype"], &[]),
            ["0x0800\n", "0x0800\n", "0x8100,0x0800\n"]
        );
        assert_eq!(
            l(&[]),
            [
                "0x88a8\t1\t300\t200\t200,300\t84\n",
                "0x8100\t6,2\t10,4094\t\t10,4094\t85\n"
            ]
        );
        assert_eq!(
            l(&["occurrence=f"]),
            [
                "0x88a8\t1\t300\t200\t200\t84\n",
                "0x8100\t6\t10\t\t10\t85\n"
            ]
        );
        assert_eq!(
            l(&["occurrence=l"]),
            [
                "0x88a8\t1\t300\t200\t300\t84\n",
                "0x8100\t2\t4094\t\t4094\t85\n"
            ]
        );
        // The 2nd occurrence: a field with one has none (empty, as absent).
        assert_eq!(
            l(&["occurrence=2"]),
            ["\t\t\t\t300\t\n", "\t2\t4094\t\t4094\t\n"]
        );
        assert_eq!(l(&["occurrence=3"]), ["\t\t\t\t\t\n", "\t\t\t\t\t\n"]);
        // Quotes around each value (all its occurrences), none around an absent one.
        assert_eq!(
            l(&["separator=;", "quote=d", "aggregator=/s"]),
            [
                "\"0x88a8\";\"1\";\"300\";\"200\";\"200 300\";\"84\"\n",
                "\"0x8100\";\"6 2\";\"10 4094\";;\"10 4094\";\"85\"\n"
            ]
        );
        assert_eq!(
            lines(
                OPCODES,
                &[85],
                &["frame.number", "x"],
                &["quote=s", "separator=/s"]
            ),
            ["'85' \n"]
        );
        let mut h = Vec::new();
        Selection::new(
            vec!["a.b".into(), "c".into()],
            options(&["header=y", "separator=,", "quote=d"]),
        )
        .header(&mut h);
        assert_eq!(h, b"a.b,c\n");
        let mut o = FieldOptions::default();
        assert!(o.set("occurrence=0").is_err());
        assert!(o.set("quote=x").is_err());
        assert!(o.set("colour=y").is_err());
        assert!(o.set("header").is_err());
    }

    #[test]
    fn indexed_names_parse_within_their_range() {
        use access::{HopPart, PfcPart};
        // Hops 0..15 (an nHop of 4 bits), priorities 0..8 (802.1Qbb), no leading zeros.
        assert_eq!(
            Field::parse("ccreplay.int.hop14.qlen"),
            Field::Hop(14, HopPart::Qlen)
        );
        assert_eq!(
            Field::parse("ccreplay.int.hop0.b"),
            Field::Hop(0, HopPart::B)
        );
        for bad in [
            "ccreplay.int.hop15.b",
            "ccreplay.int.hop01.b",
            "ccreplay.int.hop1",
            "ccreplay.int.hop.b",
            "macc.cbfc.pause_time.c8",
            "macc.cbfc.pause_time.c",
            "macc.cbfc.enbv.c1x",
            "eth",
        ] {
            assert_eq!(Field::parse(bad), Field::Unknown, "{bad}");
        }
        assert_eq!(
            Field::parse("macc.cbfc.pause_time.c7"),
            Field::Pfc(7, PfcPart::Quanta)
        );
        assert_eq!(
            Field::parse("ccreplay.pfc.pause_ns.c0"),
            Field::Pfc(0, PfcPart::PauseNs)
        );
    }

    /// The fixtures with each dialect (a capture read with another dialect's shims stops at
    /// other layers) and with stacks of up to 8 hops (detect_*_padded8 / _grown: nHop up to
    /// 7); with `all`, the bundled traces too, each with its own dialect.
    fn captures(all: bool) -> Vec<(String, DecodeConfig)> {
        let mut files: Vec<String> = Vec::new();
        for dir in if all {
            &["tests/fixtures", "traces"][..]
        } else {
            &["tests/fixtures"][..]
        } {
            for e in std::fs::read_dir(format!("{}/{dir}", root())).unwrap() {
                let name = e.unwrap().file_name().into_string().unwrap();
                if name.ends_with(".pcap") || name.ends_with(".pcapng") {
                    files.push(format!("{dir}/{name}"));
                }
            }
        }
        files.sort();
        let mut out = Vec::new();
        for f in files {
            if let Some(name) = f.strip_prefix("traces/") {
                // A trace with the dialect it was made in (its name says which).
                let d = ["hpcc", "fncc", "rcc"]
                    .into_iter()
                    .find(|d| name.starts_with(d))
                    .map_or(Ok(Dialect::Roce), str::parse)
                    .unwrap();
                out.push((f.clone(), DecodeConfig::for_dialect(d)));
                continue;
            }
            if f.ends_with("/lumina.pcap") {
                // A Lumina switch's copies to its dump port 5000 (docs/wire.md 2.3).
                out.push((
                    f.clone(),
                    DecodeConfig {
                        lumina_port: 5000,
                        ..DecodeConfig::for_dialect(Dialect::Roce)
                    },
                ));
            }
            for d in [Dialect::Roce, Dialect::Hpcc, Dialect::Fncc, Dialect::Rcc] {
                out.push((f.clone(), DecodeConfig::for_dialect(d)));
            }
            for layout in [IntLayout::Padded, IntLayout::Grown] {
                for d in [Dialect::Hpcc, Dialect::Fncc] {
                    let int = IntConfig {
                        layout,
                        max_hops: if layout == IntLayout::Padded { 8 } else { 15 },
                    };
                    out.push((
                        f.clone(),
                        DecodeConfig {
                            int,
                            ..DecodeConfig::for_dialect(d)
                        },
                    ));
                }
            }
        }
        out
    }

    /// docs/inspect.md: `-e` shows what the JSON record holds under the same key (displayed as
    /// Wireshark does). Compared, packet by packet, with the line picked out of the record by
    /// the oracle in `json_pick` (serde_json and `std::fmt`), for every key any bundled
    /// capture's records hold, under each occurrence and quoting option.
    #[test]
    fn every_key_reads_what_the_json_record_holds() {
        let caps = captures(true);
        let mut keys = BTreeSet::new();
        for (file, cfg) in &caps {
            each_packet(file, cfg, |rec, p, icrc| {
                let mut j = crate::jsonl::LineBuf::with_capacity(0);
                super::super::write_json(&mut j, rec, p, icrc, cfg, 100_000_000_000);
                let m: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_slice(j.as_bytes()).unwrap();
                keys.extend(m.keys().cloned());
            });
        }
        // A key written without an accessor would be empty here and fail below; check it
        // by name too, and that the bundled captures reach every named accessor.
        for k in &keys {
            assert_ne!(Field::parse(k), Field::Unknown, "{k}: no accessor");
        }
        for (name, _) in access::NAMED {
            // vlan.etype is tshark's only (per tag), not a JSON key: checked against tshark
            // (tests/inspect_fields.rs) and in `tshark_options_apply`.
            assert!(
                keys.contains(*name) || *name == "vlan.etype",
                "{name}: no bundled capture has it"
            );
        }
        // 184 on the bundled captures when this was written.
        assert!(keys.len() >= 184, "{} keys", keys.len());
        let mut names: Vec<String> = keys.into_iter().collect();
        // Names inspect never writes: empty.
        names.push("no.such.field".into());
        names.push("ccreplay.int.hop15.b".into());
        let mut compared = 0u64;
        for opts in [
            &[][..],
            &["separator=,", "quote=d", "aggregator=/s"][..],
            &["occurrence=f"][..],
            &["occurrence=l", "quote=s"][..],
            &["occurrence=2"][..],
        ] {
            let o = options(opts);
            let sel = Selection::new(names.clone(), o.clone());
            // The traces (real traffic, thousands of packets) with the default options.
            for (file, cfg) in &captures(opts.is_empty()) {
                each_packet(file, cfg, |rec, p, icrc| {
                    let mut j = crate::jsonl::LineBuf::with_capacity(0);
                    super::super::write_json(&mut j, rec, p, icrc, cfg, 100_000_000_000);
                    let want = json_pick::line(&names, &o, j.as_bytes());
                    let mut b = TextBuf::with_capacity(0);
                    sel.line(rec, p, icrc, cfg, 100_000_000_000, &mut b);
                    let got = std::str::from_utf8(b.as_bytes()).unwrap();
                    if got != want {
                        let (g, w): (Vec<_>, Vec<_>) = (
                            got.trim_end().split(&o.separator).collect(),
                            want.trim_end().split(&o.separator).collect(),
                        );
                        let i = (0..names.len()).find(|&i| g.get(i) != w.get(i));
                        panic!(
                            "{file} {cfg:?} {opts:?} frame {}: {:?}: -e {:?}, JSON {:?}",
                            rec.frame_number,
                            i.map(|i| &names[i]),
                            i.and_then(|i| g.get(i)),
                            i.and_then(|i| w.get(i)),
                        );
                    }
                    compared += 1;
                });
            }
        }
        assert!(compared > 10_000, "{compared} packets compared");
    }

    /// The same lines whatever the number of threads, over several 1 MiB batches, and the
    /// same as one packet at a time.
    #[test]
    fn output_does_not_depend_on_threads() {
        let file = format!("{}/traces/hpcc_dumbbell.pcap", root());
        let names: Vec<String> = [
            "frame.number",
            "frame.time_epoch",
            "ip.src",
            "infiniband.bth.destqp",
            "ccreplay.int.hop0.qlen",
            "ccreplay.icrc.valid",
        ]
        .map(String::from)
        .to_vec();
        let sel = Selection::new(names, options(&["header=y"]));
        let opts = InspectOptions {
            decode: DecodeConfig::for_dialect(Dialect::Hpcc),
            format: super::super::Format::Json,
            pfc_link_bps: 100_000_000_000,
        };
        let mut want = b"frame.number\tframe.time_epoch\tip.src\tinfiniband.bth.destqp\tccreplay.int.hop0.qlen\tccreplay.icrc.valid\n".to_vec();
        let mut n = 0;
        each_packet("traces/hpcc_dumbbell.pcap", &opts.decode, |rec, p, icrc| {
            let mut b = TextBuf::with_capacity(0);
            sel.line(rec, p, icrc, &opts.decode, opts.pfc_link_bps, &mut b);
            want.extend_from_slice(b.as_bytes());
            n += 1;
        });
        for workers in [1, 2, 3] {
            let mut out = Vec::new();
            let s = run(&file, &opts, &sel, &mut out, workers).unwrap();
            assert_eq!(s.packets, n);
            assert!(out == want, "{workers} threads");
        }
        let len = std::fs::metadata(&file).unwrap().len();
        assert!(len > crate::batches::BLOCK_BYTES as u64, "several batches");
    }
}
