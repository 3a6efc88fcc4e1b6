//! `dcqcn-cp` over arbitrary parameters and dequeue sequences: never a panic, one decision per
//! dequeue that carries a queue length and none otherwise, `p` in [0, 1] and equal to DCQCN-1's
//! ramp, marks always at p = 1 and never at p = 0, and the same decisions on a second run. The
//! cargo-fuzz target `model_dcqcn_cp` includes this file, so both run the same checks.

use ccreplay_reference_cc::dcqcn::cp::{RedParams, marking_probability};
use ccreplay_reference_cc::dcqcn::{CpParams, CpPort};
use ccreplay_reference_cc::{Decision, Event, EventKind, Model, StateValue};

fn take<const N: usize>(data: &mut &[u8]) -> [u8; N] {
    let mut b = [0u8; N];
    let n = data.len().min(N);
    b[..n].copy_from_slice(&data[..n]);
    *data = &data[n..];
    b
}

/// Run one input; panics when a property breaks.
pub fn check(mut data: &[u8]) {
    let kmin = u32::from_le_bytes(take(&mut data)) as u64;
    let kmax = kmin + u32::from_le_bytes(take(&mut data)) as u64;
    let pmax = u16::from_le_bytes(take(&mut data)) as f64 / 65535.0;
    let seed = u64::from_le_bytes(take(&mut data));
    let params = CpParams {
        kmin_bytes: kmin,
        kmax_bytes: kmax,
        pmax,
        seed,
        ..CpParams::default()
    };
    let red = RedParams {
        kmin_bytes: kmin,
        kmax_bytes: kmax,
        pmax,
    };
    let mut events = Vec::new();
    let mut t = 0u64;
    while data.len() >= 6 && events.len() < 2000 {
        let b: [u8; 6] = take(&mut data);
        t += b[0] as u64;
        let q = u32::from_le_bytes([b[1], b[2], b[3], b[4]]) as u64;
        let qlen_bytes = (b[5] & 1 == 0).then_some(q);
        events.push(Event {
            t_ns: t,
            flow: (b[5] >> 1) as u32 % 4,
            index: events.len() as u64,
            kind: EventKind::Dequeue {
                psn: 0,
                bytes: 1078,
                opcode: 7,
                ecn: b[5] >> 6,
                qlen_bytes,
            },
        });
    }
    let run = || {
        let mut m = CpPort::new(params.clone()).expect("valid by construction");
        let mut out: Vec<Decision> = Vec::new();
        for ev in &events {
            let before = out.len();
            m.on_event(ev, &mut out);
            let EventKind::Dequeue { qlen_bytes, .. } = ev.kind else {
                unreachable!()
            };
            assert_eq!(out.len() - before, qlen_bytes.is_some() as usize);
            if let (Some(q), Some(d)) = (qlen_bytes, out.get(before)) {
                let p = marking_probability(q, &red);
                assert!((0.0..=1.0).contains(&p));
                assert_eq!(d.state.get("p"), Some(StateValue::F64(p)));
                let mark = d.outputs.mark_ce.expect("mark_ce");
                if p == 0.0 {
                    assert!(!mark);
                }
                if p == 1.0 {
                    assert!(mark);
                }
            }
        }
        assert_eq!(m.next_timer_ns(), None);
        out
    };
    assert_eq!(run(), run());
}

#[cfg(test)]
mod tests {
    #[test]
    fn arbitrary_dequeue_sequences() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for len in 0..400usize {
            let data: Vec<u8> = (0..len * 7)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            super::check(&data);
        }
    }
}
