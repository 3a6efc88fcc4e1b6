//! The RoCEv2 invariant CRC (wire.md 4; RoCEv2 annex A17.3.3).
//!
//! CRC-32 (IEEE 802.3 / zlib: reflected, init and final xor 0xFFFFFFFF) over
//! 1. 8 bytes of 0xFF standing in for the LRH,
//! 2. the IP header with its variant fields masked to ones — IPv4: TOS, TTL, header checksum;
//!    IPv6: traffic class, flow label, hop limit — including IPv4 options and IPv6 extension
//!    headers as they are (as scapy's `scapy.contrib.roce` does),
//! 3. the UDP header with its checksum masked to 0xFFFF,
//! 4. the UDP payload up to the ICRC, with BTH byte 4 (FECN, BECN, Resv6) masked to 0xFF. Shim
//!    headers before BTH (hpcc, rcc dialects) are covered as they are.
//!
//! The CRC goes on the wire least-significant byte first; Wireshark's `infiniband.invariant.crc`
//! reads those 4 bytes big-endian, so it shows the byte-swapped value ([`wire_value`]).

use crc32fast::Hasher;

/// The IP header the ICRC covers.
#[derive(Clone, Copy, Debug)]
pub enum IpForIcrc<'a> {
    /// IPv4 header with options (20..60 bytes).
    V4(&'a [u8]),
    /// IPv6 fixed header (40 bytes) followed by its extension headers.
    V6(&'a [u8]),
}

/// Compute the ICRC as a CRC-32 value (not yet byte-swapped for the wire).
///
/// `udp_payload` excludes the 4 ICRC bytes; `bth_offset` is where BTH starts inside it (0, or the
/// shim length). Short inputs are hashed as they are, never indexed out of range.
pub fn compute(ip: IpForIcrc<'_>, udp_header: &[u8], udp_payload: &[u8], bth_offset: usize) -> u32 {
    let mut h = Hasher::new();
    h.update(&[0xFF; 8]);
    match ip {
        IpForIcrc::V4(hdr) => {
            let mut fixed = [0u8; 20];
            let n = hdr.len().min(20);
            fixed[..n].copy_from_slice(&hdr[..n]);
            fixed[1] = 0xFF; // TOS
            fixed[8] = 0xFF; // TTL
            fixed[10] = 0xFF; // header checksum
            fixed[11] = 0xFF;
            h.update(&fixed[..n]);
            if hdr.len() > 20 {
                h.update(&hdr[20..]);
            }
        }
        IpForIcrc::V6(hdr) => {
            let mut fixed = [0u8; 40];
            let n = hdr.len().min(40);
            fixed[..n].copy_from_slice(&hdr[..n]);
            fixed[0] |= 0x0F; // traffic class, high nibble
            fixed[1] = 0xFF; // traffic class low nibble + flow label
            fixed[2] = 0xFF;
            fixed[3] = 0xFF;
            fixed[7] = 0xFF; // hop limit
            h.update(&fixed[..n]);
            if hdr.len() > 40 {
                h.update(&hdr[40..]);
            }
        }
    }
    let mut udp = [0u8; 8];
    let n = udp_header.len().min(8);
    udp[..n].copy_from_slice(&udp_header[..n]);
    udp[6] = 0xFF;
    udp[7] = 0xFF;
    h.update(&udp);
    match udp_payload.get(bth_offset + 4) {
        Some(_) => {
            h.update(&udp_payload[..bth_offset + 4]);
            h.update(&[0xFF]);
            h.update(&udp_payload[bth_offset + 5..]);
        }
        None => h.update(udp_payload),
    }
    h.finalize()
}

/// The 4 bytes that go on the wire for a CRC value (least-significant byte first).
#[inline]
pub const fn to_wire(crc: u32) -> [u8; 4] {
    crc.to_le_bytes()
}

/// The value Wireshark shows as `infiniband.invariant.crc`: the 4 wire bytes read big-endian.
#[inline]
pub const fn wire_value(crc: u32) -> u32 {
    crc.swap_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The zlib CRC-32 check value: crc32(b"123456789") = 0xCBF43926 (IEEE 802.3 catalogue).
    #[test]
    fn polynomial_is_zlib() {
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
        assert_eq!(to_wire(0xCBF4_3926), [0x26, 0x39, 0xF4, 0xCB]);
        assert_eq!(wire_value(0xCBF4_3926), 0x2639_F4CB);
    }

    // A CNP built by scapy 2.8 (scapy.contrib.roce computes the ICRC):
    //   raw(IP(src="10.0.0.1", dst="10.0.0.2")/UDP(sport=49152, dport=4791)/cnp(0x12)).hex()
    // = 4500003c00010000401166ae0a0000010a000002 c00012b70028654c
    //   8100ffff4000001200000000 + 16 zero bytes + 9d55552f (the ICRC, as on the wire).
    #[test]
    fn scapy_cnp_known_answer() {
        let ip: [u8; 20] = [
            0x45, 0x00, 0x00, 0x3c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x66, 0xae, 0x0a, 0x00,
            0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
        ];
        let udp: [u8; 8] = [0xc0, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x65, 0x4c];
        let mut payload = [0u8; 28];
        payload[..12].copy_from_slice(&[
            0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x00, 0x12, 0x00, 0x00, 0x00, 0x00,
        ]);
        let crc = compute(IpForIcrc::V4(&ip), &udp, &payload, 0);
        assert_eq!(to_wire(crc), [0x9d, 0x55, 0x55, 0x2f]);
        assert_eq!(wire_value(crc), 0x9d55_552f);
    }
}
