//! `inspect -e FIELD ...`: tshark's `-T fields` output, so a script can swap tshark for
//! ccreplay: one line per packet, the selected fields in order, with tshark's `-E` options
//! (`header`, `separator`, `aggregator`, `occurrence`, `quote`) and defaults, an absent field
//! empty, and Wireshark's display of the values it shows in hex (the table below).
//!
//! It reads the record `inspect --format json` writes for the packet (compact JSON, flat keys,
//! values that are numbers, strings or arrays of them) and picks the fields out of it: one
//! linear scan per record, no allocation per packet beyond the output.

/// How a field is shown, where tshark shows it other than the JSON's decimal number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Display {
    /// As in the JSON record (decimal numbers, strings unquoted).
    Plain,
    /// `0x` and this many hex digits (Wireshark's BASE_HEX: the type's width, or the bitmask's).
    Hex(usize),
    /// This many bytes as lowercase hex, no prefix (FT_BYTES).
    Bytes(usize),
}

/// The fields `inspect` writes that Wireshark 4.0 displays in hex, from `tshark -G fields`
/// (columns: abbrev, type, base, bitmask) of TShark 4.0.17:
/// `tshark -G fields | awk -F'\t' '$6=="BASE_HEX" || $4=="FT_BYTES" {print $3, $4, $7}'`,
/// kept to the keys inspect writes. Everything else inspect names the Wireshark way is
/// BASE_DEC (or an address, a time, a boolean shown as 0/1), as in the JSON.
const WIRESHARK_HEX: [(&str, Display); 12] = [
    ("eth.type", Display::Hex(4)),                 // FT_UINT16
    ("vlan.etype", Display::Hex(4)),               // FT_UINT16
    ("infiniband.bth.destqp", Display::Hex(6)),    // FT_UINT24
    ("infiniband.deth.q_key", Display::Hex(16)),   // FT_UINT64
    ("infiniband.deth.srcqp", Display::Hex(8)),    // FT_UINT32
    ("infiniband.invariant.crc", Display::Hex(8)), // FT_UINT32
    ("infiniband.reth.r_key", Display::Hex(8)),    // FT_UINT32
    ("infiniband.reth.va", Display::Hex(16)),      // FT_UINT64
    ("ipv6.flow", Display::Hex(5)),                // FT_UINT24, bitmask 0xfffff
    ("macc.opcode", Display::Hex(4)),              // FT_UINT16
    ("macc.cbfc.enbv", Display::Hex(4)),           // FT_UINT16
    ("infiniband.immdt", Display::Bytes(4)),       // FT_BYTES
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

/// The selected fields and how to print them.
#[derive(Clone, Debug)]
pub struct Selection {
    names: Vec<String>,
    display: Vec<Display>,
    /// Field name → its positions among `names` (a field may be asked for twice).
    index: rustc_hash::FxHashMap<Vec<u8>, Vec<usize>>,
    /// `lengths[n]`: some selected name is `n` bytes long.
    lengths: Vec<bool>,
    /// The options.
    pub options: FieldOptions,
}

impl Selection {
    /// `-e` fields in order, with the `-E` options.
    pub fn new(names: Vec<String>, options: FieldOptions) -> Self {
        let display = names.iter().map(|n| display_of(n)).collect();
        let mut index: rustc_hash::FxHashMap<Vec<u8>, Vec<usize>> = Default::default();
        for (i, n) in names.iter().enumerate() {
            index.entry(n.as_bytes().to_vec()).or_default().push(i);
        }
        let mut lengths = vec![false; names.iter().map(String::len).max().unwrap_or(0) + 1];
        for n in &names {
            lengths[n.len()] = true;
        }
        Selection {
            names,
            display,
            index,
            lengths,
            options,
        }
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

    fn quoted(&self, out: &mut Vec<u8>, v: &[u8]) {
        match self.options.quote {
            Some(q) => {
                let mut b = [0u8; 4];
                let q = q.encode_utf8(&mut b).as_bytes();
                out.extend_from_slice(q);
                out.extend_from_slice(v);
                out.extend_from_slice(q);
            }
            None => out.extend_from_slice(v),
        }
    }

    /// One output line from one compact JSON record (`{"k":v,...}`): one pass over the record
    /// finds every selected field (`slots` is the caller's, reused from packet to packet).
    pub fn line(
        &self,
        record: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
        slots: &mut Vec<Option<(usize, usize)>>,
    ) {
        slots.clear();
        slots.resize(self.names.len(), None);
        for_each_field(record, |k, start, end| {
            // Most keys are not selected: their length already says so, without hashing.
            if !self.lengths.get(k.len()).copied().unwrap_or(false) {
                return;
            }
            if let Some(idx) = self.index.get(k) {
                for &i in idx {
                    slots[i] = Some((start, end));
                }
            }
        });
        for (i, slot) in slots.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(self.options.separator.as_bytes());
            }
            // Absent: empty, unquoted even with -E quote (as tshark).
            let Some((a, b)) = *slot else {
                continue;
            };
            scratch.clear();
            self.value(&record[a..b], self.display[i], scratch);
            self.quoted(out, scratch);
        }
        out.push(b'\n');
    }

    /// A value, its occurrences (array elements) chosen and joined.
    fn value(&self, v: &[u8], d: Display, out: &mut Vec<u8>) {
        if v.first() != Some(&b'[') {
            scalar(v, d, out);
            return;
        }
        let one = match self.options.occurrence {
            Occurrence::All => {
                for (i, x) in array_items(v).enumerate() {
                    if i > 0 {
                        out.extend_from_slice(self.options.aggregator.as_bytes());
                    }
                    scalar(x, d, out);
                }
                return;
            }
            Occurrence::First => array_items(v).next(),
            Occurrence::Last => array_items(v).last(),
            Occurrence::Nth(n) => array_items(v).nth(n - 1),
        };
        if let Some(x) = one {
            scalar(x, d, out);
        }
    }
}

/// One scalar: a number shown as `d` says, or a string unescaped.
fn scalar(v: &[u8], d: Display, out: &mut Vec<u8>) {
    if v.first() == Some(&b'"') {
        if v.contains(&b'\\') {
            if let Ok(s) = serde_json::from_slice::<String>(v) {
                out.extend_from_slice(s.as_bytes());
            }
        } else {
            out.extend_from_slice(&v[1..v.len().saturating_sub(1)]);
        }
        return;
    }
    let n = std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    match (d, n) {
        (Display::Hex(w), Some(n)) => {
            use std::io::Write as _;
            let _ = write!(out, "0x{n:0w$x}");
        }
        (Display::Bytes(len), Some(n)) => {
            use std::io::Write as _;
            let _ = write!(out, "{n:0w$x}", w = 2 * len);
        }
        _ => out.extend_from_slice(v),
    }
}

/// Every (key, value start, value end) of a compact record, in order.
fn for_each_field(rec: &[u8], mut f: impl FnMut(&[u8], usize, usize)) {
    let mut i = 1; // after '{'
    while i < rec.len() && rec[i] == b'"' {
        // Keys are plain names (no escapes): up to the next quote.
        let Some(klen) = rec[i + 1..].iter().position(|&c| c == b'"') else {
            return;
        };
        let kend = i + 1 + klen;
        let vstart = kend + 2; // past `":`
        let Some(vlen) = rec.get(vstart..).and_then(value_len) else {
            return;
        };
        f(&rec[i + 1..kend], vstart, vstart + vlen);
        i = vstart + vlen + 1; // past ',' (or '}')
    }
}

/// Length of the JSON value at the start of `s` (a number, string, array or literal).
fn value_len(s: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut esc = false;
    for (i, &c) in s.iter().enumerate() {
        if in_str {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b',' | b'}' | b'\n' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    Some(s.len())
}

/// The elements of a JSON array of scalars, without collecting them (this runs per packet).
fn array_items(v: &[u8]) -> impl Iterator<Item = &[u8]> {
    let inner = &v[1..v.len().saturating_sub(1)];
    let mut i = 0;
    std::iter::from_fn(move || {
        let n = value_len(inner.get(i..)?)?;
        if n == 0 {
            return None;
        }
        let item = &inner[i..i + n];
        i += n + 1;
        Some(item)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REC: &[u8] = br#"{"frame.number":7,"eth.type":2048,"s":"a\"b","v":[33024,34984],"infiniband.bth.destqp":2097153,"infiniband.immdt":1140850688,"t":"1.000000005"}"#;

    fn line(fields: &[&str], opts: &[&str]) -> String {
        let mut o = FieldOptions::default();
        for x in opts {
            o.set(x).unwrap();
        }
        let sel = Selection::new(fields.iter().map(|s| s.to_string()).collect(), o);
        let (mut out, mut scratch, mut slots) = (Vec::new(), Vec::new(), Vec::new());
        sel.line(REC, &mut out, &mut scratch, &mut slots);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn fields_as_tshark_prints_them() {
        // 2048 = 0x0800 (4 digits, FT_UINT16); 2097153 = 0x200001 (6, FT_UINT24);
        // 1140850688 = 0x44000000, as bytes 44 00 00 00.
        assert_eq!(
            line(
                &[
                    "frame.number",
                    "eth.type",
                    "infiniband.bth.destqp",
                    "infiniband.immdt",
                    "t"
                ],
                &[]
            ),
            "7\t0x0800\t0x200001\t44000000\t1.000000005\n"
        );
        assert_eq!(line(&["nope", "frame.number", "nope"], &[]), "\t7\t\n");
        assert_eq!(line(&["frame.number", "frame.number"], &[]), "7\t7\n");
        assert_eq!(line(&["s"], &[]), "a\"b\n");
    }

    #[test]
    fn tshark_options_apply() {
        assert_eq!(line(&["v"], &[]), "33024,34984\n");
        assert_eq!(line(&["v"], &["occurrence=f"]), "33024\n");
        assert_eq!(line(&["v"], &["occurrence=l"]), "34984\n");
        assert_eq!(line(&["v"], &["occurrence=2"]), "34984\n");
        assert_eq!(line(&["v"], &["occurrence=3"]), "\n");
        assert_eq!(line(&["v"], &["aggregator=/s"]), "33024 34984\n");
        assert_eq!(
            line(&["frame.number", "v"], &["separator=;", "quote=d"]),
            "\"7\";\"33024,34984\"\n"
        );
        assert_eq!(
            line(&["frame.number", "x"], &["quote=s", "separator=/s"]),
            "'7' \n"
        );
        let mut o = FieldOptions::default();
        assert!(o.set("occurrence=0").is_err());
        assert!(o.set("quote=x").is_err());
        assert!(o.set("colour=y").is_err());
        assert!(o.set("header").is_err());
    }
}
