//! Events in and decisions out as JSON Lines (harness.md 2, 3): the format of `replay` output,
//! golden files, `--events` input and the external-process DUT protocol. Documented, with every
//! field and unit, in docs/protocol.md; versioned by [`PROTOCOL_VERSION`].
//!
//! Writing goes through [`crate::jsonl::Obj`] (no allocation per record, a fixed key order, so
//! a text diff of two golden files is readable); f64 state is written with `ryu`'s shortest
//! round-trip form, so reading it back gives the same bits.

use ccreplay_codecs::shim::int::{IntHop, IntStack};
use ccreplay_reference_cc::event::AckInfo;
use ccreplay_reference_cc::event::MAX_STATE;
use ccreplay_reference_cc::{Cause, Decision, Event, EventKind, Outputs, State, StateValue};
use serde_json::{Map, Value};

use crate::intern;
use crate::jsonl::Obj;

/// Version of the event / decision JSON and of the DUT process protocol.
pub const PROTOCOL_VERSION: u64 = 1;

// ---------------------------------------------------------------------------------------------
// Events

fn write_int(o: &mut Obj<'_>, s: &IntStack) {
    let mut a = Vec::with_capacity(64);
    a.push(b'[');
    for (i, h) in s.hops().iter().enumerate() {
        if i > 0 {
            a.extend_from_slice(b", ");
        }
        let mut h_obj = Obj::new(&mut a);
        h_obj
            .u("b", h.b)
            .u("ts", h.ts)
            .u("tx_bytes", h.tx_bytes)
            .u("qlen", h.qlen);
        h_obj.close();
    }
    a.push(b']');
    let mut int = Vec::with_capacity(a.len() + 32);
    let mut io = Obj::new(&mut int);
    io.u("nhop", s.n_hop())
        .u("path_id", s.path_id())
        .raw("hops", &a);
    io.close();
    o.raw("int", &int);
}

fn write_ack(o: &mut Obj<'_>, a: &AckInfo) {
    o.u("psn", a.psn).u("syndrome", a.syndrome);
    if let Some(s) = &a.int {
        write_int(o, s);
    }
    if let Some(n) = a.n {
        o.u("n", n);
    }
    if let Some(c) = a.cwnd {
        o.u("cwnd", c);
    }
    if let Some(f) = a.rcc_flags {
        o.u("rcc_flags", f);
    }
    if let Some(t) = a.ts_ns {
        o.u("ts", t);
    }
}

/// Append one event as a JSON line.
pub fn write_event(buf: &mut Vec<u8>, ev: &Event) {
    let mut o = Obj::new(buf);
    o.u("t", ev.t_ns)
        .u("flow", ev.flow)
        .u("index", ev.index)
        .s("kind", ev.kind.name());
    match &ev.kind {
        EventKind::TxData { psn, bytes, opcode } => {
            o.u("psn", *psn).u("bytes", *bytes).u("opcode", *opcode);
        }
        EventKind::RxAck(a) | EventKind::RxNak(a) => write_ack(&mut o, a),
        EventKind::RxCnp => {}
        EventKind::RxData {
            psn,
            bytes,
            opcode,
            ecn,
            send_ts_ns,
        } => {
            o.u("psn", *psn)
                .u("bytes", *bytes)
                .u("opcode", *opcode)
                .u("ecn", *ecn);
            if let Some(t) = send_ts_ns {
                o.u("send_ts", *t);
            }
        }
        EventKind::Dequeue {
            psn,
            bytes,
            opcode,
            ecn,
            qlen_bytes,
        } => {
            o.u("psn", *psn)
                .u("bytes", *bytes)
                .u("opcode", *opcode)
                .u("ecn", *ecn);
            if let Some(q) = qlen_bytes {
                o.u("qlen_bytes", *q);
            }
        }
    }
    o.end();
}

/// Why a JSON line is not a valid event or decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError(msg.into()))
}

fn get_u64(m: &Map<String, Value>, k: &str) -> Result<u64, ParseError> {
    match m.get(k) {
        Some(v) => v
            .as_u64()
            .ok_or_else(|| ParseError(format!("`{k}` must be an unsigned integer, got {v}"))),
        None => err(format!("missing `{k}`")),
    }
}

fn opt_u64(m: &Map<String, Value>, k: &str) -> Result<Option<u64>, ParseError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ParseError(format!("`{k}` must be an unsigned integer, got {v}"))),
    }
}

fn bounded<T: TryFrom<u64>>(v: u64, k: &str, max: u64) -> Result<T, ParseError> {
    if v > max {
        return err(format!("`{k}` = {v} is above its largest value {max}"));
    }
    T::try_from(v).map_err(|_| ParseError(format!("`{k}` out of range")))
}

fn parse_int(v: &Value) -> Result<IntStack, ParseError> {
    let m = v
        .as_object()
        .ok_or_else(|| ParseError("`int` must be an object".into()))?;
    let path_id: u16 = bounded(get_u64(m, "path_id")?, "int.path_id", 0x0FFF)?;
    let hops = m
        .get("hops")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError("`int.hops` must be an array".into()))?;
    if hops.len() > 15 {
        return err(format!("`int.hops` has {} records, at most 15", hops.len()));
    }
    let mut list = [IntHop::default(); 15];
    for (i, h) in hops.iter().enumerate() {
        let h = h
            .as_object()
            .ok_or_else(|| ParseError("an INT hop must be an object".into()))?;
        list[i] = IntHop {
            b: bounded(get_u64(h, "b")?, "b", 15)?,
            ts: bounded(get_u64(h, "ts")?, "ts", 0xFF_FFFF)?,
            tx_bytes: bounded(get_u64(h, "tx_bytes")?, "tx_bytes", 0xF_FFFF)?,
            qlen: bounded(get_u64(h, "qlen")?, "qlen", 0xFFFF)?,
        };
    }
    if let Some(n) = opt_u64(m, "nhop")?
        && n != hops.len() as u64
    {
        return err(format!(
            "`int.nhop` = {n} but {} hops are listed",
            hops.len()
        ));
    }
    IntStack::from_hops(path_id, &list[..hops.len()])
        .ok_or_else(|| ParseError("too many hops".into()))
}

fn parse_ack(m: &Map<String, Value>) -> Result<AckInfo, ParseError> {
    Ok(AckInfo {
        psn: bounded(get_u64(m, "psn")?, "psn", 0xFF_FFFF)?,
        syndrome: bounded(get_u64(m, "syndrome")?, "syndrome", 0xFF)?,
        int: m.get("int").map(parse_int).transpose()?,
        n: opt_u64(m, "n")?
            .map(|v| bounded(v, "n", 0xFFFF))
            .transpose()?,
        cwnd: opt_u64(m, "cwnd")?
            .map(|v| bounded(v, "cwnd", u32::MAX as u64))
            .transpose()?,
        rcc_flags: opt_u64(m, "rcc_flags")?
            .map(|v| bounded(v, "rcc_flags", 0xFF))
            .transpose()?,
        ts_ns: opt_u64(m, "ts")?,
    })
}

/// Read one event from a JSON object.
pub fn parse_event(v: &Value) -> Result<Event, ParseError> {
    let m = v
        .as_object()
        .ok_or_else(|| ParseError("an event must be a JSON object".into()))?;
    let kind = m
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| ParseError("missing `kind`".into()))?;
    let kind = match kind {
        "tx_data" => EventKind::TxData {
            psn: bounded(get_u64(m, "psn")?, "psn", 0xFF_FFFF)?,
            bytes: bounded(get_u64(m, "bytes")?, "bytes", u32::MAX as u64)?,
            opcode: bounded(get_u64(m, "opcode")?, "opcode", 0xFF)?,
        },
        "rx_ack" => EventKind::RxAck(parse_ack(m)?),
        "rx_nak" => EventKind::RxNak(parse_ack(m)?),
        "rx_cnp" => EventKind::RxCnp,
        "rx_data" => EventKind::RxData {
            psn: bounded(get_u64(m, "psn")?, "psn", 0xFF_FFFF)?,
            bytes: bounded(get_u64(m, "bytes")?, "bytes", u32::MAX as u64)?,
            opcode: bounded(get_u64(m, "opcode")?, "opcode", 0xFF)?,
            ecn: bounded(get_u64(m, "ecn")?, "ecn", 3)?,
            send_ts_ns: opt_u64(m, "send_ts")?,
        },
        "dequeue" => EventKind::Dequeue {
            psn: bounded(get_u64(m, "psn")?, "psn", 0xFF_FFFF)?,
            bytes: bounded(get_u64(m, "bytes")?, "bytes", u32::MAX as u64)?,
            opcode: bounded(get_u64(m, "opcode")?, "opcode", 0xFF)?,
            ecn: bounded(get_u64(m, "ecn")?, "ecn", 3)?,
            qlen_bytes: opt_u64(m, "qlen_bytes")?,
        },
        other => {
            return err(format!(
                "unknown event kind `{other}` (expected tx_data, rx_ack, rx_nak, rx_cnp, rx_data, dequeue)"
            ));
        }
    };
    Ok(Event {
        t_ns: get_u64(m, "t")?,
        flow: bounded(get_u64(m, "flow")?, "flow", u32::MAX as u64)?,
        index: get_u64(m, "index")?,
        kind,
    })
}

// ---------------------------------------------------------------------------------------------
// Decisions

fn write_outputs(o: &mut Obj<'_>, out: &Outputs) {
    if let Some(v) = out.rate_bps {
        o.u("rate_bps", v);
    }
    if let Some(v) = out.window_bytes {
        o.u("window_bytes", v);
    }
    if let Some(v) = out.send_cnp {
        o.boolean("send_cnp", v);
    }
    if let Some(v) = out.ack_n {
        o.u("ack_n", v);
    }
    if let Some(v) = out.ack_cwnd {
        o.u("ack_cwnd", v);
    }
    if let Some(v) = out.ack_flags {
        o.u("ack_flags", v);
    }
    if let Some(v) = out.mark_ce {
        o.boolean("mark_ce", v);
    }
}

fn write_state_value(o: &mut Obj<'_>, k: &str, v: StateValue) {
    match v {
        StateValue::U64(x) => {
            o.u(k, x);
        }
        StateValue::I64(x) => {
            o.i(k, x);
        }
        StateValue::F64(x) => {
            o.f(k, x);
        }
        StateValue::Bool(x) => {
            o.boolean(k, x);
        }
    }
}

fn write_cause_obj(buf: &mut Vec<u8>, kind: &str, index: Option<u64>, name: Option<&str>) {
    let mut c = Obj::new(buf);
    c.s("kind", kind);
    if let Some(i) = index {
        c.u("index", i);
    }
    if let Some(n) = name {
        c.s("name", n);
    }
    c.close();
}

/// Append one decision of a reference model as a JSON line: `t`, `flow`, `cause`, the outputs
/// present, then `state` (C-6) in the model's order.
pub fn write_decision(buf: &mut Vec<u8>, d: &Decision, scratch: &mut Vec<u8>) {
    scratch.clear();
    match d.cause {
        Cause::Event { kind, index } => write_cause_obj(scratch, kind, Some(index), None),
        Cause::Timer { name } => write_cause_obj(scratch, "timer", None, Some(name)),
    }
    let split = scratch.len();
    {
        let mut st = Obj::new(scratch);
        for (n, v) in d.state.fields() {
            write_state_value(&mut st, n, v);
        }
        st.close();
    }
    let mut o = Obj::new(buf);
    o.u("t", d.t_ns)
        .u("flow", d.flow)
        .raw("cause", &scratch[..split]);
    write_outputs(&mut o, &d.outputs);
    o.raw("state", &scratch[split..]);
    o.end();
}

fn parse_state_value(k: &str, v: &Value) -> Result<StateValue, ParseError> {
    Ok(match v {
        Value::Bool(b) => StateValue::Bool(*b),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                StateValue::U64(u)
            } else if let Some(i) = n.as_i64() {
                StateValue::I64(i)
            } else {
                StateValue::F64(
                    n.as_f64()
                        .ok_or_else(|| ParseError(format!("state `{k}`: bad number")))?,
                )
            }
        }
        other => {
            return err(format!(
                "state `{k}` must be a number or a boolean, got {other}"
            ));
        }
    })
}

/// Read one decision from a JSON object. State and timer names are interned
/// ([`crate::intern`]); at most [`MAX_STATE`] state values.
pub fn parse_decision(v: &Value) -> Result<Decision, ParseError> {
    let m = v
        .as_object()
        .ok_or_else(|| ParseError("a decision must be a JSON object".into()))?;
    let c = m
        .get("cause")
        .and_then(Value::as_object)
        .ok_or_else(|| ParseError("missing `cause` object".into()))?;
    let kind = c
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| ParseError("missing `cause.kind`".into()))?;
    let too_many = || ParseError(format!("more than {} distinct names", intern::MAX_NAMES));
    let cause = if kind == "timer" {
        let name = c
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ParseError("a timer cause needs `name`".into()))?;
        Cause::Timer {
            name: intern::name(name).ok_or_else(too_many)?,
        }
    } else {
        let kind = match kind {
            "tx_data" | "rx_ack" | "rx_nak" | "rx_cnp" | "rx_data" | "dequeue" => {
                intern::name(kind).ok_or_else(too_many)?
            }
            other => return err(format!("unknown cause kind `{other}`")),
        };
        Cause::Event {
            kind,
            index: get_u64(c, "index")?,
        }
    };
    let send_cnp = match m.get("send_cnp") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => return err(format!("`send_cnp` must be a boolean, got {other}")),
    };
    let mark_ce = match m.get("mark_ce") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => return err(format!("`mark_ce` must be a boolean, got {other}")),
    };
    let outputs = Outputs {
        rate_bps: opt_u64(m, "rate_bps")?,
        window_bytes: opt_u64(m, "window_bytes")?,
        send_cnp,
        ack_n: opt_u64(m, "ack_n")?
            .map(|v| bounded(v, "ack_n", 0xFFFF))
            .transpose()?,
        ack_cwnd: opt_u64(m, "ack_cwnd")?
            .map(|v| bounded(v, "ack_cwnd", u32::MAX as u64))
            .transpose()?,
        ack_flags: opt_u64(m, "ack_flags")?
            .map(|v| bounded(v, "ack_flags", 0xFF))
            .transpose()?,
        mark_ce,
    };
    let mut names: Vec<&'static str> = Vec::new();
    let mut values: Vec<StateValue> = Vec::new();
    if let Some(s) = m.get("state") {
        let s = s
            .as_object()
            .ok_or_else(|| ParseError("`state` must be an object".into()))?;
        if s.len() > MAX_STATE {
            return err(format!(
                "`state` has {} values, at most {MAX_STATE}",
                s.len()
            ));
        }
        for (k, v) in s {
            names.push(intern::name(k).ok_or_else(too_many)?);
            values.push(parse_state_value(k, v)?);
        }
    }
    let names = intern::list(&names).ok_or_else(too_many)?;
    Ok(Decision {
        t_ns: get_u64(m, "t")?,
        flow: bounded(get_u64(m, "flow")?, "flow", u32::MAX as u64)?,
        cause,
        outputs,
        state: State::new(names, &values),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_round_trip() {
        let int = IntStack::from_hops(
            0xABC,
            &[IntHop {
                b: 2,
                ts: 0xFF_FFFF,
                tx_bytes: 1,
                qlen: 80,
            }],
        )
        .unwrap();
        let events = [
            Event {
                t_ns: 5,
                flow: 1,
                index: 0,
                kind: EventKind::TxData {
                    psn: 0xFF_FFFF,
                    bytes: 1000,
                    opcode: 0x0A,
                },
            },
            Event {
                t_ns: 9,
                flow: 1,
                index: 1,
                kind: EventKind::RxAck(AckInfo {
                    psn: 7,
                    syndrome: 0x1F,
                    int: Some(int),
                    n: Some(4),
                    cwnd: Some(33_750),
                    rcc_flags: Some(1),
                    ts_ns: Some(1_000_000_123),
                }),
            },
            Event {
                t_ns: 10,
                flow: 0,
                index: 2,
                kind: EventKind::RxCnp,
            },
            Event {
                t_ns: 11,
                flow: 0,
                index: 3,
                kind: EventKind::RxData {
                    psn: 3,
                    bytes: 64,
                    opcode: 4,
                    ecn: 3,
                    send_ts_ns: Some(8),
                },
            },
        ];
        for ev in events {
            let mut buf = Vec::new();
            write_event(&mut buf, &ev);
            let v: Value = serde_json::from_slice(&buf).unwrap();
            assert_eq!(
                parse_event(&v).unwrap(),
                ev,
                "{}",
                String::from_utf8_lossy(&buf)
            );
        }
    }

    #[test]
    fn event_errors_name_the_field() {
        let v: Value = serde_json::from_str(
            r#"{"t":1,"flow":0,"index":0,"kind":"tx_data","psn":16777216,"bytes":1,"opcode":0}"#,
        )
        .unwrap();
        assert_eq!(
            parse_event(&v).unwrap_err().0,
            "`psn` = 16777216 is above its largest value 16777215"
        );
        let v: Value =
            serde_json::from_str(r#"{"t":1,"flow":0,"index":0,"kind":"rx_magic"}"#).unwrap();
        assert!(
            parse_event(&v)
                .unwrap_err()
                .0
                .starts_with("unknown event kind `rx_magic`")
        );
    }

    #[test]
    fn decision_round_trip_keeps_f64_bits() {
        const NAMES: &[&str] = &["W", "U", "alpha", "pid"];
        // 0.1 + 0.2 is not 0.3 in binary: its shortest form is 0.30000000000000004.
        let u = 0.1f64 + 0.2;
        let d = Decision {
            t_ns: 12,
            flow: 3,
            cause: Cause::Timer { name: "alpha" },
            outputs: Outputs {
                rate_bps: Some(40_000_000_000),
                send_cnp: Some(true),
                ..Outputs::default()
            },
            state: State::new(
                NAMES,
                &[
                    StateValue::U64(1500),
                    StateValue::F64(u),
                    StateValue::F64(1.0),
                    StateValue::Bool(false),
                ],
            ),
        };
        let (mut buf, mut scratch) = (Vec::new(), Vec::new());
        write_decision(&mut buf, &d, &mut scratch);
        let text = String::from_utf8(buf.clone()).unwrap();
        assert_eq!(
            text,
            "{\"t\": 12, \"flow\": 3, \"cause\": {\"kind\": \"timer\", \"name\": \"alpha\"}, \
             \"rate_bps\": 40000000000, \"send_cnp\": true, \"state\": {\"W\": 1500, \
             \"U\": 0.30000000000000004, \"alpha\": 1.0, \"pid\": false}}\n"
        );
        let back = parse_decision(&serde_json::from_slice(&buf).unwrap()).unwrap();
        assert_eq!(back, d);
        assert_eq!(
            back.state
                .get("U")
                .map(|v| matches!(v, StateValue::F64(x) if x.to_bits() == u.to_bits())),
            Some(true)
        );
        let mut again = Vec::new();
        write_decision(&mut again, &back, &mut scratch);
        assert_eq!(again, buf);
    }
}
