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
        self.buf
            .extend_from_slice(b.format(ns / 1_000_000_000).as_bytes());
        self.buf.push(b'.');
        let frac = ns % 1_000_000_000;
        let digits = b.format(frac).as_bytes();
        self.buf.resize(self.buf.len() + 9 - digits.len(), b'0');
        self.buf.extend_from_slice(digits);
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
            "{\"a.b\": 42, \"f\": 1, \"t\": 1700000000.000000123, \"s\": \"x\\\"\\n\\u0001\", \"d\": \"3.5\", \"m\": \"02:00:ab:00:00:ff\", \"ip\": \"10.0.0.255\", \"w\": \"RC SEND_FIRST\", \"c\": \"CNP\"}\n"
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["a.b"], 42);
        assert_eq!(v["s"], "x\"\n\u{1}");
    }
}
