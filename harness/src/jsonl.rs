//! A minimal, allocation-free JSON Lines writer for flat records with a fixed key order.
//!
//! `inspect` writes millions of records; going through `serde_json::Value` per packet would
//! allocate a map per line. Keys here are `'static` ASCII names (never escaped), values are
//! integers, booleans as 0/1, decimal literals, or strings escaped per RFC 8259.

/// One JSON object being written into a byte buffer.
pub struct Obj<'a> {
    buf: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    /// Open an object at the end of `buf`.
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        buf.push(b'{');
        Obj { buf, first: true }
    }

    #[inline]
    fn key(&mut self, k: &str) {
        if !self.first {
            self.buf.extend_from_slice(b", ");
        }
        self.first = false;
        self.buf.push(b'"');
        self.buf.extend_from_slice(k.as_bytes());
        self.buf.extend_from_slice(b"\": ");
    }

    /// An unsigned integer.
    #[inline]
    pub fn u(&mut self, k: &str, v: impl Into<u64>) -> &mut Self {
        self.key(k);
        let mut b = itoa::Buffer::new();
        self.buf.extend_from_slice(b.format(v.into()).as_bytes());
        self
    }

    /// A signed integer.
    #[inline]
    pub fn i(&mut self, k: &str, v: i64) -> &mut Self {
        self.key(k);
        let mut b = itoa::Buffer::new();
        self.buf.extend_from_slice(b.format(v).as_bytes());
        self
    }

    /// A finite f64 in its shortest round-trip form (`ryu`), always with a `.` or an exponent
    /// so a reader can tell it from an integer. Non-finite values (which the models never
    /// produce) are written as `null`.
    #[inline]
    pub fn f(&mut self, k: &str, v: f64) -> &mut Self {
        self.key(k);
        if v.is_finite() {
            let mut b = ryu::Buffer::new();
            self.buf.extend_from_slice(b.format_finite(v).as_bytes());
        } else {
            self.buf.extend_from_slice(b"null");
        }
        self
    }

    /// A JSON boolean.
    #[inline]
    pub fn boolean(&mut self, k: &str, v: bool) -> &mut Self {
        self.key(k);
        self.buf
            .extend_from_slice(if v { b"true" } else { b"false" });
        self
    }

    /// A flag as 0 or 1 (Wireshark's representation of booleans in field output).
    #[inline]
    pub fn flag(&mut self, k: &str, v: bool) -> &mut Self {
        self.key(k);
        self.buf.push(if v { b'1' } else { b'0' });
        self
    }

    /// Seconds and nanoseconds as a decimal JSON number (`1700000000.123456789`).
    pub fn epoch(&mut self, k: &str, ns: u64) -> &mut Self {
        self.key(k);
        let mut b = itoa::Buffer::new();
        // A string, as tshark writes it: a JSON number would lose the nanoseconds in jq.
        self.buf.push(b'"');
        self.buf
            .extend_from_slice(b.format(ns / 1_000_000_000).as_bytes());
        self.buf.push(b'.');
        let frac = ns % 1_000_000_000;
        let digits = b.format(frac).as_bytes();
        self.buf.resize(self.buf.len() + 9 - digits.len(), b'0');
        self.buf.extend_from_slice(digits);
        self.buf.push(b'"');
        self
    }

    /// A string value, escaped.
    pub fn s(&mut self, k: &str, v: &str) -> &mut Self {
        self.key(k);
        escape_into(self.buf, v);
        self
    }

    /// A MAC address as `"aa:bb:cc:dd:ee:ff"` (no formatting machinery: this is per packet).
    pub fn mac(&mut self, k: &str, m: [u8; 6]) -> &mut Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.key(k);
        let mut t = [b':'; 19];
        t[0] = b'"';
        t[18] = b'"';
        for (i, b) in m.iter().enumerate() {
            t[1 + 3 * i] = HEX[(b >> 4) as usize];
            t[2 + 3 * i] = HEX[(b & 15) as usize];
        }
        self.buf.extend_from_slice(&t);
        self
    }

    /// An IPv4 address as `"a.b.c.d"`.
    pub fn ipv4(&mut self, k: &str, a: [u8; 4]) -> &mut Self {
        self.key(k);
        self.buf.push(b'"');
        let mut b = itoa::Buffer::new();
        for (i, o) in a.iter().enumerate() {
            if i > 0 {
                self.buf.push(b'.');
            }
            self.buf.extend_from_slice(b.format(*o).as_bytes());
        }
        self.buf.push(b'"');
        self
    }

    /// A string value made of parts joined by a space, none of which needs escaping
    /// (`'static` names such as an opcode's transport and operation).
    pub fn words(&mut self, k: &str, parts: &[&str]) -> &mut Self {
        self.key(k);
        self.buf.push(b'"');
        let mut first = true;
        for p in parts.iter().filter(|p| !p.is_empty()) {
            if !first {
                self.buf.push(b' ');
            }
            first = false;
            self.buf.extend_from_slice(p.as_bytes());
        }
        self.buf.push(b'"');
        self
    }

    /// A pre-rendered JSON value (an array or object the caller built).
    pub fn raw(&mut self, k: &str, json: &[u8]) -> &mut Self {
        self.key(k);
        self.buf.extend_from_slice(json);
        self
    }

    /// Append text produced by `f` as a string value (no intermediate String).
    pub fn display(&mut self, k: &str, v: impl core::fmt::Display) -> &mut Self {
        use std::io::Write;
        self.key(k);
        let start = self.buf.len();
        let _ = write!(self.buf, "{v}");
        if self.buf[start..]
            .iter()
            .any(|&c| c == b'"' || c == b'\\' || c < 0x20)
        {
            let text = String::from_utf8_lossy(&self.buf[start..]).into_owned();
            self.buf.truncate(start);
            escape_into(self.buf, &text);
        } else {
            self.buf.insert(start, b'"');
            self.buf.push(b'"');
        }
        self
    }

    /// Close the object and end the line.
    pub fn end(self) {
        self.buf.extend_from_slice(b"}\n");
    }

    /// Close the object without ending the line (a nested object).
    pub fn close(self) {
        self.buf.push(b'}');
    }
}

/// Longest key [`Key`] holds, quotes, comma and colon included.
pub const KEY_CAP: usize = 64;

/// A key pre-rendered as `,"name":` and padded to [`KEY_CAP`] bytes, so writing it is one
/// fixed-size copy (a few vector moves) instead of a `memcpy` call sized at run time.
pub struct Key {
    bytes: [u8; KEY_CAP],
    len: usize,
}

impl Key {
    /// Render `name` (ASCII, nothing to escape; checked at compile time when used in a const).
    pub const fn new(name: &str) -> Key {
        let n = name.as_bytes();
        assert!(n.len() + 4 <= KEY_CAP, "key too long");
        let mut bytes = [0u8; KEY_CAP];
        bytes[0] = b',';
        bytes[1] = b'"';
        let mut i = 0;
        while i < n.len() {
            assert!(n[i] >= 0x20 && n[i] < 0x7F && n[i] != b'"' && n[i] != b'\\');
            bytes[2 + i] = n[i];
            i += 1;
        }
        bytes[2 + n.len()] = b'"';
        bytes[3 + n.len()] = b':';
        Key {
            bytes,
            len: n.len() + 4,
        }
    }

    /// The name, without quotes.
    pub fn name(&self) -> &str {
        std::str::from_utf8(&self.bytes[2..self.len - 2]).unwrap_or("")
    }
}

/// A `&'static Key` for a literal name, built at compile time.
#[macro_export]
macro_rules! key {
    ($name:expr) => {{
        const K: $crate::jsonl::Key = $crate::jsonl::Key::new($name);
        &K
    }};
}

/// Room a field needs at most, apart from strings: a key and a 20-digit number or an address.
const FIELD_ROOM: usize = KEY_CAP + 48;

/// An output buffer for compact JSON Lines (`{"k":v,"k2":v2}`, no spaces), written by
/// [`Rec`]. Its bytes past `len` are scratch space kept zeroed-allocated, so fixed-size writes
/// need one bounds check and no `memcpy` call.
#[derive(Default)]
pub struct LineBuf {
    bytes: Vec<u8>,
    len: usize,
    scratch: Vec<u8>,
}

impl LineBuf {
    /// An empty buffer with room for `cap` bytes.
    pub fn with_capacity(cap: usize) -> Self {
        LineBuf {
            bytes: vec![0; cap],
            len: 0,
            scratch: Vec::new(),
        }
    }

    /// The bytes written.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Bytes written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forget what was written (the allocation stays).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Append bytes as they are.
    pub fn extend(&mut self, b: &[u8]) {
        self.room(b.len());
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    /// Append text as a JSON string literal, escaped per RFC 8259 (bytes ≥ 0x80 are kept:
    /// the text is UTF-8).
    fn escaped(&mut self, v: &[u8]) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.room(6 * v.len() + 2);
        let b = &mut self.bytes;
        let mut at = self.len;
        b[at] = b'"';
        at += 1;
        for &c in v {
            let esc: &[u8] = match c {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                c if c < 0x20 => {
                    let e = [
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX[(c >> 4) as usize],
                        HEX[(c & 15) as usize],
                    ];
                    b[at..at + 6].copy_from_slice(&e);
                    at += 6;
                    continue;
                }
                c => {
                    b[at] = c;
                    at += 1;
                    continue;
                }
            };
            b[at..at + esc.len()].copy_from_slice(esc);
            at += esc.len();
        }
        b[at] = b'"';
        self.len = at + 1;
    }

    #[inline(always)]
    fn room(&mut self, n: usize) {
        if self.bytes.len() - self.len < n {
            self.grow(n);
        }
    }

    #[cold]
    fn grow(&mut self, n: usize) {
        let want = (self.len + n).max(self.bytes.len() * 2).max(1 << 12);
        self.bytes.resize(want, 0);
    }

    /// Start a record (a JSON object on its own line).
    #[inline]
    pub fn rec(&mut self) -> Rec<'_> {
        let start = self.len;
        Rec { b: self, start }
    }
}

impl std::io::Write for LineBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.extend(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Two ASCII digits of every number below 100.
static DIGITS2: [[u8; 2]; 100] = {
    let mut t = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        t[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    t
};

/// Write `v` in decimal at `b[at..]` (20 bytes of room needed); returns the digits written.
#[inline(always)]
fn put_u64(b: &mut [u8], at: usize, v: u64) -> usize {
    if v < 10 {
        b[at] = b'0' + v as u8;
        return 1;
    }
    if v < 100 {
        b[at..at + 2].copy_from_slice(&DIGITS2[v as usize]);
        return 2;
    }
    let n = v.ilog10() as usize + 1;
    let out = &mut b[at..at + 20];
    let mut v = v;
    let mut i = n;
    while v >= 100 {
        let r = (v % 100) as usize;
        v /= 100;
        i -= 2;
        out[i..i + 2].copy_from_slice(&DIGITS2[r]);
    }
    if v >= 10 {
        out[i - 2..i].copy_from_slice(&DIGITS2[v as usize]);
    } else {
        out[i - 1] = b'0' + v as u8;
    }
    n
}

/// One compact JSON object being written into a [`LineBuf`]. Every key is written with a
/// leading comma; [`Rec::end`] turns the first one into the opening brace.
pub struct Rec<'a> {
    b: &'a mut LineBuf,
    start: usize,
}

impl Rec<'_> {
    #[inline(always)]
    fn key(&mut self, k: &Key, value_room: usize) -> usize {
        self.b.room(KEY_CAP + value_room);
        let at = self.b.len;
        self.b.bytes[at..at + KEY_CAP].copy_from_slice(&k.bytes);
        at + k.len
    }

    /// An unsigned integer.
    #[inline(always)]
    pub fn u(&mut self, k: &Key, v: impl Into<u64>) -> &mut Self {
        let at = self.key(k, FIELD_ROOM - KEY_CAP);
        let n = put_u64(&mut self.b.bytes, at, v.into());
        self.b.len = at + n;
        self
    }

    /// A flag as 0 or 1 (Wireshark's representation of booleans in field output).
    #[inline(always)]
    pub fn flag(&mut self, k: &Key, v: bool) -> &mut Self {
        let at = self.key(k, 1);
        self.b.bytes[at] = b'0' + v as u8;
        self.b.len = at + 1;
        self
    }

    /// Seconds and nanoseconds as a decimal JSON number (`1700000000.123456789`).
    #[inline]
    pub fn epoch(&mut self, k: &Key, ns: u64) -> &mut Self {
        let at = self.key(k, FIELD_ROOM - KEY_CAP);
        let b = &mut self.b.bytes;
        // A string, as tshark writes it: a JSON number would lose the nanoseconds in jq.
        b[at] = b'"';
        let at = at + 1;
        let n = put_u64(b, at, ns / 1_000_000_000);
        let at = at + n;
        b[at] = b'.';
        // Nine digits, zeros included: 1 + 4 × 2.
        let mut frac = ns % 1_000_000_000;
        let d = &mut b[at + 1..at + 10];
        for i in (0..4).rev() {
            let r = (frac % 100) as usize;
            frac /= 100;
            d[1 + 2 * i..3 + 2 * i].copy_from_slice(&DIGITS2[r]);
        }
        d[0] = b'0' + frac as u8;
        b[at + 10] = b'"';
        self.b.len = at + 11;
        self
    }

    /// A MAC address as `"aa:bb:cc:dd:ee:ff"`.
    #[inline]
    pub fn mac(&mut self, k: &Key, m: [u8; 6]) -> &mut Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let at = self.key(k, 19);
        let t = &mut self.b.bytes[at..at + 19];
        t[0] = b'"';
        for (i, b) in m.iter().enumerate() {
            t[1 + 3 * i] = HEX[(b >> 4) as usize];
            t[2 + 3 * i] = HEX[(b & 15) as usize];
            t[3 + 3 * i] = b':';
        }
        t[18] = b'"';
        self.b.len = at + 19;
        self
    }

    /// An IPv4 address as `"a.b.c.d"`.
    #[inline]
    pub fn ipv4(&mut self, k: &Key, a: [u8; 4]) -> &mut Self {
        let mut at = self.key(k, 17);
        let b = &mut self.b.bytes;
        b[at] = b'"';
        at += 1;
        for (i, o) in a.iter().enumerate() {
            at += put_u64(b, at, *o as u64);
            b[at] = if i < 3 { b'.' } else { b'"' };
            at += 1;
        }
        self.b.len = at;
        self
    }

    /// A string value, escaped.
    pub fn s(&mut self, k: &Key, v: &str) -> &mut Self {
        let at = self.key(k, 0);
        self.b.len = at;
        self.b.escaped(v.as_bytes());
        self
    }

    /// A string value made of parts joined by a space, none of which needs escaping.
    pub fn words(&mut self, k: &Key, parts: &[&str]) -> &mut Self {
        let at = self.key(k, 0);
        self.b.len = at;
        self.b.extend(b"\"");
        let mut first = true;
        for p in parts.iter().filter(|p| !p.is_empty()) {
            if !first {
                self.b.extend(b" ");
            }
            first = false;
            self.b.extend(p.as_bytes());
        }
        self.b.extend(b"\"");
        self
    }

    /// An array of unsigned integers.
    pub fn u_array(&mut self, k: &Key, vs: impl Iterator<Item = u64>) -> &mut Self {
        let at = self.key(k, 0);
        self.b.len = at;
        self.b.extend(b"[");
        for (i, v) in vs.enumerate() {
            if i > 0 {
                self.b.extend(b",");
            }
            self.b.room(20);
            let n = put_u64(&mut self.b.bytes, self.b.len, v);
            self.b.len += n;
        }
        self.b.extend(b"]");
        self
    }

    /// Text produced by `v`'s `Display` as a string value.
    pub fn display(&mut self, k: &Key, v: impl core::fmt::Display) -> &mut Self {
        use std::io::Write;
        let at = self.key(k, 0);
        self.b.len = at;
        let mut tmp = std::mem::take(&mut self.b.scratch);
        tmp.clear();
        let _ = write!(tmp, "{v}");
        self.b.escaped(&tmp);
        self.b.scratch = tmp;
        self
    }

    /// Close the object and end the line (`{}` for an object without keys).
    #[inline]
    pub fn end(self) {
        if self.b.len == self.start {
            self.b.extend(b"{}\n");
        } else {
            self.b.bytes[self.start] = b'{';
            self.b.extend(b"}\n");
        }
    }
}

/// Write `v` as a JSON string literal.
pub fn escape_into(buf: &mut Vec<u8>, v: &str) {
    buf.push(b'"');
    for c in v.bytes() {
        match c {
            b'"' => buf.extend_from_slice(b"\\\""),
            b'\\' => buf.extend_from_slice(b"\\\\"),
            b'\n' => buf.extend_from_slice(b"\\n"),
            b'\r' => buf.extend_from_slice(b"\\r"),
            b'\t' => buf.extend_from_slice(b"\\t"),
            c if c < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                buf.extend_from_slice(b"\\u00");
                buf.push(HEX[(c >> 4) as usize]);
                buf.push(HEX[(c & 15) as usize]);
            }
            c => buf.push(c),
        }
    }
    buf.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_valid_json() {
        let mut b = Vec::new();
        let mut o = Obj::new(&mut b);
        o.u("a.b", 42u32)
            .flag("f", true)
            .epoch("t", 1_700_000_000_000_000_123)
            .s("s", "x\"\n\u{1}");
        o.display("d", 3.5)
            .mac("m", [0x02, 0, 0xab, 0, 0, 0xff])
            .ipv4("ip", [10, 0, 0, 255]);
        o.words("w", &["RC", "SEND_FIRST"]).words("c", &["CNP", ""]);
        o.end();
        let line = String::from_utf8(b).unwrap();
        assert_eq!(
            line,
            "{\"a.b\": 42, \"f\": 1, \"t\": \"1700000000.000000123\", \"s\": \"x\\\"\\n\\u0001\", \"d\": \"3.5\", \"m\": \"02:00:ab:00:00:ff\", \"ip\": \"10.0.0.255\", \"w\": \"RC SEND_FIRST\", \"c\": \"CNP\"}\n"
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["a.b"], 42);
        assert_eq!(v["s"], "x\"\n\u{1}");
    }

    #[test]
    fn compact_record_writes_every_value_kind() {
        let mut b = LineBuf::with_capacity(8); // small: every write must grow it
        let mut o = b.rec();
        // Digit-count edges: 1, 2, 3 digits and u64::MAX (2^64 - 1 = 18446744073709551615).
        o.u(crate::key!("a"), 0u8)
            .u(crate::key!("b"), 9u8)
            .u(crate::key!("c"), 10u8)
            .u(crate::key!("d"), 99u8)
            .u(crate::key!("e"), 100u8)
            .u(crate::key!("f"), 1_000_000_007u64)
            .u(crate::key!("g"), u64::MAX)
            .flag(crate::key!("h"), true)
            .epoch(crate::key!("t"), 1_700_000_000_000_000_123)
            .epoch(crate::key!("t0"), 5)
            .mac(crate::key!("m"), [0x02, 0, 0xab, 0, 0, 0xff])
            .ipv4(crate::key!("ip"), [255, 0, 10, 1])
            .s(crate::key!("s"), "x\"\\\n\u{1}é")
            .words(crate::key!("w"), &["RC", "SEND_FIRST"])
            .u_array(crate::key!("v"), [0x8100u64, 0x88a8].into_iter())
            .display(crate::key!("d2"), "a\tb");
        o.end();
        b.rec().end();
        let text = String::from_utf8(b.as_bytes().to_vec()).unwrap();
        assert_eq!(
            text,
            "{\"a\":0,\"b\":9,\"c\":10,\"d\":99,\"e\":100,\"f\":1000000007,\
             \"g\":18446744073709551615,\"h\":1,\"t\":\"1700000000.000000123\",\"t0\":\"0.000000005\",\
             \"m\":\"02:00:ab:00:00:ff\",\"ip\":\"255.0.10.1\",\"s\":\"x\\\"\\\\\\n\\u0001é\",\
             \"w\":\"RC SEND_FIRST\",\"v\":[33024,34984],\"d2\":\"a\\tb\"}\n{}\n"
        );
        let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(v["g"], u64::MAX);
        assert_eq!(v["s"], "x\"\\\n\u{1}é");
        assert_eq!(crate::key!("frame.number").name(), "frame.number");
    }
}
