//! 24-bit PSN serial-number arithmetic (algorithms.md C-2).

/// PSNs are 24 bits wide.
pub const PSN_MASK: u32 = 0xFF_FFFF;

/// `a` is after `b` when `(a − b) mod 2^24` is in `1..2^23` (C-2).
#[inline]
pub const fn psn_after(a: u32, b: u32) -> bool {
    let d = a.wrapping_sub(b) & PSN_MASK;
    d >= 1 && d < (1 << 23)
}

/// `a + n` modulo 2^24.
#[inline]
pub const fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_comparison() {
        assert!(psn_after(1, 0));
        assert!(!psn_after(0, 0));
        assert!(!psn_after(0, 1));
        // Across the wrap: 0x000002 is after 0xFFFFFE ((2 - 0xFFFFFE) mod 2^24 = 4).
        assert!(psn_after(2, 0xFF_FFFE));
        // Exactly half the space apart is *not* after (2^23 is outside 1..2^23).
        assert!(!psn_after(1 << 23, 0));
        assert!(psn_after((1 << 23) - 1, 0));
        assert_eq!(psn_add(0xFF_FFFF, 2), 1);
    }
}
