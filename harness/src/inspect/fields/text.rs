//! The output buffer of `inspect -e`: the lines of one batch of packets, values formatted
//! straight into it (no `fmt` machinery for numbers and addresses, no allocation per packet).

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Two decimal digits of every number below 100.
static DEC2: [[u8; 2]; 100] = {
    let mut t = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        t[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    t
};

/// Two hex digits of every byte.
static HEX2: [[u8; 2]; 256] = {
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX[i >> 4], HEX[i & 15]];
        i += 1;
    }
    t
};

/// 10^i.
const POW10: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// Decimal digits of `v` (1 for 0), without a division: log10 from log2, corrected once.
#[inline(always)]
fn dec_len(v: u64) -> usize {
    // v | 1 has v's digits (10^k is even) and is never 0.
    let v = v | 1;
    let bits = 64 - v.leading_zeros() as usize;
    // 1233 / 4096 is log10(2) to 4 digits: the digits are this guess or one more.
    let guess = (bits * 1233) >> 12;
    guess + (v >= POW10[guess]) as usize
}

/// `v` in decimal, its `n` = `dec_len(v)` digits ending before `b[end]`, pairs at a time.
#[inline(always)]
fn put_dec(b: &mut [u8], end: usize, mut v: u64, n: usize) {
    let d = &mut b[end - n..end];
    let mut i = n;
    while i >= 2 {
        d[i - 2..i].copy_from_slice(&DEC2[(v % 100) as usize]);
        v /= 100;
        i -= 2;
    }
    if i == 1 {
        d[0] = b'0' + v as u8;
    }
}

/// `"d."`, `"dd."` or `"ddd."` for each octet, padded to 4 bytes, and its length: an IPv4
/// address is four fixed-size copies.
static OCTETS: [([u8; 4], u8); 256] = {
    let mut t = [([0u8; 4], 0u8); 256];
    let mut i = 0;
    while i < 256 {
        let (h, te, o) = ((i / 100) as u8, ((i / 10) % 10) as u8, (i % 10) as u8);
        t[i] = if i >= 100 {
            ([b'0' + h, b'0' + te, b'0' + o, b'.'], 4)
        } else if i >= 10 {
            ([b'0' + te, b'0' + o, b'.', 0], 3)
        } else {
            ([b'0' + o, b'.', 0, 0], 2)
        };
        i += 1;
    }
    t
};

/// Bytes written so far, with zeroed slack past them, so that a value is written with one
/// bounds check and fixed-size copies.
#[derive(Default)]
pub struct TextBuf {
    bytes: Vec<u8>,
    len: usize,
}

impl TextBuf {
    /// An empty buffer with room for `cap` bytes.
    pub fn with_capacity(cap: usize) -> Self {
        TextBuf {
            bytes: vec![0; cap],
            len: 0,
        }
    }

    /// The bytes written.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Forget what was written (the allocation stays).
    pub fn clear(&mut self) {
        self.len = 0;
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

    /// Bytes as they are.
    #[inline]
    pub fn put(&mut self, b: &[u8]) {
        self.room(b.len());
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    /// One byte.
    #[inline(always)]
    pub fn byte(&mut self, c: u8) {
        self.room(1);
        self.bytes[self.len] = c;
        self.len += 1;
    }

    /// An unsigned integer in decimal.
    #[inline(always)]
    pub fn dec(&mut self, v: u64) {
        self.room(20);
        let n = dec_len(v);
        put_dec(&mut self.bytes, self.len + n, v, n);
        self.len += n;
    }

    /// `v` in lowercase hex, at least `width` digits (zero-padded), after `0x` if `prefix`:
    /// Wireshark's BASE_HEX (`0x` and the type's width) and FT_BYTES (two digits a byte).
    #[inline]
    pub fn hex(&mut self, v: u64, width: usize, prefix: bool) {
        let digits = width
            .max((67 - v.leading_zeros() as usize) / 4)
            .clamp(1, 16);
        self.room(digits + 2);
        let mut at = self.len;
        if prefix {
            self.bytes[at..at + 2].copy_from_slice(b"0x");
            at += 2;
        }
        // A byte (two digits) at a time from the right, then an odd count's first digit.
        let end = at + digits;
        let (mut i, mut v) = (end, v);
        while i - at >= 2 {
            self.bytes[i - 2..i].copy_from_slice(&HEX2[(v & 0xff) as usize]);
            v >>= 8;
            i -= 2;
        }
        if i > at {
            self.bytes[at] = HEX[(v & 15) as usize];
        }
        self.len = end;
    }

    /// Seconds since the epoch and 9 decimals (`frame.time_epoch`).
    #[inline]
    pub fn epoch(&mut self, ns: u64) {
        self.room(31);
        let (secs, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
        let n = dec_len(secs);
        let at = self.len + n;
        put_dec(&mut self.bytes, at, secs, n);
        self.bytes[at] = b'.';
        // Nine digits, zeros included.
        put_dec(&mut self.bytes, at + 10, frac, 9);
        self.len = at + 10;
    }

    /// A MAC address, `aa:bb:cc:dd:ee:ff`.
    #[inline]
    pub fn mac(&mut self, m: [u8; 6]) {
        self.room(18);
        let t = &mut self.bytes[self.len..self.len + 18];
        for (i, b) in m.iter().enumerate() {
            t[3 * i] = HEX[(b >> 4) as usize];
            t[3 * i + 1] = HEX[(b & 15) as usize];
            t[3 * i + 2] = b':';
        }
        self.len += 17;
    }

    /// An IPv4 address, `a.b.c.d`.
    #[inline]
    pub fn ipv4(&mut self, a: [u8; 4]) {
        self.room(16);
        let mut at = self.len;
        for o in a {
            let (text, n) = OCTETS[o as usize];
            self.bytes[at..at + 4].copy_from_slice(&text);
            at += n as usize;
        }
        self.len = at - 1; // the last octet's '.'
    }
}

/// For the values written by their `Display` (IPv6 addresses, error messages).
impl std::fmt::Write for TextBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.put(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut TextBuf)) -> String {
        let mut b = TextBuf::with_capacity(4); // small: every write must grow it
        f(&mut b);
        String::from_utf8(b.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn values_are_written_as_wireshark_shows_them() {
        // Digit-count edges: 1, 2, 3 digits; 2^64 - 1 = 18446744073709551615.
        for (v, s) in [
            (0, "0"),
            (9, "9"),
            (10, "10"),
            (99, "99"),
            (100, "100"),
            (u64::MAX, "18446744073709551615"),
        ] {
            assert_eq!(text(|b| b.dec(v)), s);
        }
        // Every digit-count edge, against std's formatting: 10^k - 1, 10^k, 10^k + 1.
        for k in 0..20u32 {
            let p = 10u64.pow(k);
            for v in [p - 1, p, p + 1] {
                assert_eq!(text(|b| b.dec(v)), v.to_string());
            }
        }
        // Hex digit-count edges against std's: 16^k - 1, 16^k for widths 0..=16.
        for k in 0..16u32 {
            for v in [(1u64 << (4 * k)) - 1, 1u64 << (4 * k)] {
                for w in 0..=16 {
                    assert_eq!(text(|b| b.hex(v, w, true)), format!("0x{v:0w$x}"));
                    assert_eq!(text(|b| b.hex(v, w, false)), format!("{v:0w$x}"));
                }
            }
        }
        // 2048 = 0x800 (FT_UINT16: 4 digits); 0x200001 in 6; a value wider than the width
        // keeps its digits; 0 is all zeros; 2^64 - 1 is 16 f's.
        assert_eq!(text(|b| b.hex(2048, 4, true)), "0x0800");
        assert_eq!(text(|b| b.hex(0x200001, 6, true)), "0x200001");
        assert_eq!(text(|b| b.hex(0x1_0000, 4, true)), "0x10000");
        assert_eq!(text(|b| b.hex(0, 8, true)), "0x00000000");
        assert_eq!(text(|b| b.hex(0, 0, true)), "0x0");
        assert_eq!(text(|b| b.hex(u64::MAX, 16, true)), "0xffffffffffffffff");
        // 1140850688 = 0x44000000: bytes 44 00 00 00.
        assert_eq!(text(|b| b.hex(1_140_850_688, 8, false)), "44000000");
        // 1735689600 s = 2025-01-01T00:00:00Z; 5 ns and 999,999,999 ns.
        assert_eq!(
            text(|b| b.epoch(1_735_689_600_000_000_005)),
            "1735689600.000000005"
        );
        assert_eq!(text(|b| b.epoch(999_999_999)), "0.999999999");
        assert_eq!(
            text(|b| b.mac([0x02, 0, 0xab, 0, 0, 0xff])),
            "02:00:ab:00:00:ff"
        );
        assert_eq!(text(|b| b.ipv4([255, 0, 10, 1])), "255.0.10.1");
        assert_eq!(text(|b| b.ipv4([9, 99, 100, 0])), "9.99.100.0");
        assert_eq!(
            text(|b| {
                b.put(b"a");
                b.byte(b'\t');
                b.dec(7)
            }),
            "a\t7"
        );
    }
}
