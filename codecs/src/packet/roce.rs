//! The RoCEv2 layers of a frame: BTH, the dialect's shim, extension headers, payload, pad and
//! ICRC (wire.md 3-7).

use crate::error::{DecodeError, ErrorKind, Layer};
use crate::ib::ext::{
    AETH_LEN, ATOMIC_ACK_ETH_LEN, ATOMIC_ETH_LEN, DETH_LEN, IETH_LEN, IMM_DT_LEN, RDETH_LEN,
    RETH_LEN, view,
};
use crate::ib::{BTH_LEN, Bth, CNP_RESERVED_LEN, ExtHeaders, ICRC_LEN};
use crate::shim::{Dialect, FnccExtView, IntStackView, RCC_EXT_LEN, RCC_SHIM_LEN, RccExt};

use super::{AckExt, DecodeConfig, Packet, Roce, Shim};

impl<'a> Packet<'a> {
    /// Everything after UDP (`start`) up to `udp_end`: BTH, shim, extension headers,
    /// payload, pad and ICRC. `#[inline]`: called on every packet from network.rs, which rustc
    /// may put in another codegen unit.
    #[inline]
    pub(super) fn decode_roce(
        &mut self,
        start: usize,
        udp_end: usize,
        cfg: &DecodeConfig,
    ) -> Result<(), DecodeError> {
        // Disjoint borrows: the RoCE view is built in place in `self.roce` (no copy of the large
        // struct on the hot path) while warnings are counted beside it.
        let Packet {
            data,
            roce: roce_slot,
            warning,
            warnings,
            ..
        } = self;
        let data: &'a [u8] = data;
        let mut warn = |w: Option<DecodeError>| {
            if let Some(w) = w {
                warning.get_or_insert(w);
                *warnings = warnings.saturating_add(1);
            }
        };
        if udp_end < start + ICRC_LEN {
            return Err(DecodeError::new(
                Layer::Icrc,
                start,
                ErrorKind::BadLength {
                    field: "udp.length",
                    found: (udp_end + 8 - start) as u64,
                    expected: ">= 8 + BTH + ICRC",
                },
            ));
        }
        // The ICRC is the last 4 bytes of the UDP payload (wire.md 1). A record cut by snaplen
        // keeps what was captured of the body and has no ICRC.
        let icrc_at = udp_end - ICRC_LEN;
        let captured_end = udp_end.min(data.len());
        let complete = captured_end == udp_end;
        let body = data.get(start..icrc_at.min(captured_end)).unwrap_or(&[]);
        let icrc = data.get(icrc_at..udp_end).map(|b| [b[0], b[1], b[2], b[3]]);
        let mut off = start;
        let mut rest = body;

        let shim = match cfg.dialect {
            Dialect::Hpcc => {
                let (s, w) = IntStackView::parse(rest, off, cfg.int)?;
                warn(w);
                rest = &rest[s.wire_len..];
                off += s.wire_len;
                Shim::Int(s)
            }
            Dialect::Rcc => {
                let ts = view::<RCC_SHIM_LEN>(rest, Layer::RccShim, off)?;
                rest = &rest[RCC_SHIM_LEN..];
                off += RCC_SHIM_LEN;
                Shim::RccTimestamp(u64::from_be_bytes(*ts))
            }
            Dialect::Roce | Dialect::Fncc => Shim::None,
        };
        let bth = Bth::new_checked(rest, off)?;
        let bth_offset = off;
        rest = &rest[BTH_LEN..];
        off += BTH_LEN;
        let warning = bth.reserved_warning(bth_offset);
        warn(warning);

        let roce = roce_slot.insert(Roce {
            offset: start,
            shim,
            bth_offset,
            bth,
            rdeth: None,
            deth: None,
            reth: None,
            atomic_eth: None,
            aeth: None,
            atomic_ack_eth: None,
            imm_dt: None,
            ieth: None,
            cnp_reserved: None,
            ack_ext: AckExt::None,
            payload: rest,
            payload_offset: off,
            payload_wire_len: 0,
            pad: &rest[..0],
            icrc,
            icrc_offset: icrc_at,
        });
        let opcode = bth.opcode();
        if !opcode.is_known() {
            // wire.md 2: reported; the rest of the packet is kept as an opaque payload.
            return Err(DecodeError::new(
                Layer::Bth,
                bth_offset,
                ErrorKind::UnknownOpcode(opcode.0),
            ));
        }
        let layout = opcode.ext_headers();
        // Each extension header in wire order; `take` advances `rest` and `off`.
        macro_rules! take {
            ($flag:expr, $len:expr, $layer:expr, $field:ident) => {
                if layout.has($flag) {
                    let v = view::<{ $len }>(rest, $layer, off);
                    let v = match v {
                        Ok(v) => v,
                        Err(e) => {
                            roce.payload = &rest[..0];
                            roce.payload_offset = off;
                            return Err(e);
                        }
                    };
                    roce.$field = Some(v);
                    rest = &rest[$len..];
                    off += $len;
                }
            };
        }
        take!(ExtHeaders::RDETH, RDETH_LEN, Layer::Rdeth, rdeth);
        take!(ExtHeaders::DETH, DETH_LEN, Layer::Deth, deth);
        take!(ExtHeaders::RETH, RETH_LEN, Layer::Reth, reth);
        take!(
            ExtHeaders::ATOMIC_ETH,
            ATOMIC_ETH_LEN,
            Layer::AtomicEth,
            atomic_eth
        );
        take!(ExtHeaders::AETH, AETH_LEN, Layer::Aeth, aeth);
        take!(
            ExtHeaders::ATOMIC_ACK_ETH,
            ATOMIC_ACK_ETH_LEN,
            Layer::AtomicAckEth,
            atomic_ack_eth
        );
        take!(ExtHeaders::IMM_DT, IMM_DT_LEN, Layer::ImmDt, imm_dt);
        take!(ExtHeaders::IETH, IETH_LEN, Layer::Ieth, ieth);
        take!(ExtHeaders::CNP, CNP_RESERVED_LEN, Layer::Cnp, cnp_reserved);
        if let Some(r) = roce.cnp_reserved
            && !crate::shim::all_zero(r)
        {
            warn(Some(DecodeError::new(
                Layer::Cnp,
                off - CNP_RESERVED_LEN,
                ErrorKind::Reserved {
                    field: "cnp.reserved",
                    found: 1,
                },
            )));
        }
        if opcode.is_ack() {
            match cfg.dialect {
                Dialect::Fncc => {
                    let at = off;
                    let ext = (|| {
                        let n = view::<2>(rest, Layer::FnccExt, at)?;
                        let (int, w) = IntStackView::parse(&rest[2..], at + 2, cfg.int)?;
                        Ok::<_, DecodeError>((u16::from_be_bytes(*n), int, w))
                    })();
                    match ext {
                        Ok((n, int, w)) => {
                            warn(w);
                            rest = &rest[2 + int.wire_len..];
                            off += 2 + int.wire_len;
                            roce.ack_ext = AckExt::Fncc(FnccExtView { n, int });
                        }
                        Err(e) => {
                            roce.payload = &rest[..0];
                            roce.payload_offset = off;
                            return Err(e);
                        }
                    }
                }
                Dialect::Rcc => match view::<RCC_EXT_LEN>(rest, Layer::RccExt, off) {
                    Ok(b) => {
                        let e = RccExt::from_bytes(b);
                        warn(e.reserved_warning(off));
                        rest = &rest[RCC_EXT_LEN..];
                        off += RCC_EXT_LEN;
                        roce.ack_ext = AckExt::Rcc(e);
                    }
                    Err(e) => {
                        roce.payload = &rest[..0];
                        roce.payload_offset = off;
                        return Err(e);
                    }
                },
                Dialect::Roce | Dialect::Hpcc => {}
            }
        }
        // Payload, then PadCnt pad bytes, then the ICRC.
        let pad = bth.pad_cnt() as usize;
        roce.payload = rest;
        roce.payload_offset = off;
        roce.payload_wire_len = icrc_at.saturating_sub(off).saturating_sub(pad);
        if captured_end < icrc_at {
            // Cut by snaplen inside the payload: the headers are whole, the rest is not.
            return Err(DecodeError::truncated(
                Layer::Payload,
                off,
                icrc_at - off,
                captured_end - off,
            ));
        }
        if rest.len() < pad {
            return Err(DecodeError::new(
                Layer::Payload,
                off,
                ErrorKind::BadLength {
                    field: "bth.padcnt",
                    found: pad as u64,
                    expected: "<= bytes between the headers and the ICRC",
                },
            ));
        }
        let (payload, pad_bytes) = rest.split_at(rest.len() - pad);
        roce.payload = payload;
        roce.pad = pad_bytes;
        if complete {
            Ok(())
        } else {
            // Cut by snaplen inside the ICRC.
            Err(DecodeError::truncated(
                Layer::Icrc,
                icrc_at,
                ICRC_LEN,
                captured_end - icrc_at,
            ))
        }
    }
}
