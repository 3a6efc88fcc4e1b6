#!/usr/bin/env python3
"""The HPCC authors' ns-3 simulator's senders as a ccreplay device under test speaking the
process protocol (docs/dut.md) on stdin / stdout: `--model hpcc-ns3` (rdma-hw.cc
`HandleAckHp` / `UpdateRateHp`, CC_MODE 3) or `--model dcqcn-ns3` (the `*Mlx` functions,
CC_MODE 1).

Written from the model page docs/models/ns3.md (rows N1-N14 and the dcqcn-ns3 table), with the
C++ double and uint64_t operations in the simulator's order: Python floats are IEEE doubles,
ints are exact and masked where the C++ wraps, and `(uint64_t)x` of a double is what GCC emits
on x86-64 (`cxx_f64_to_u64` below). So its decisions and state are bit-identical to the
reference models `hpcc-ns3` and `dcqcn-ns3`. dcqcn-ns3 has timers; like every external DUT
this one fires its own (docs/dut.md rule 2): before an event it answers with the decisions of
the timers due at or before the event's time, and `finish` with those due up to the trace end.

    python3 examples/duts/ns3_dut.py --model hpcc-ns3               # correct
    python3 examples/duts/ns3_dut.py --model dcqcn-ns3 --bug NAME   # one of DCQCN_BUGS

With `--bug`, a correct model runs beside the mutated one on the same requests; at the first
request whose replies differ (a decision's time, flow, cause, rate, window or state) the script
writes `bug first acts at event N (flow F, index I)` to stderr, N the 0-based position of that
event among the events it received, F and I the event's flow and index (the differing
decisions are the event's own or those of timers due after the previous event, up to its
time); when the first difference is in the timers fired by the final `finish` request,
`bug first acts at finish (after N events)`. Once, then never again; the same line also goes
into the file the environment variable DUT_BUG_LOG names, when set (the harness keeps a DUT's
stderr to itself). The same convention as dcqcn_dut.py.

Standard library only. Logs go to stderr; stdout carries protocol replies only.
"""

import argparse
import json
import math
import os
import sys
from fractions import Fraction

PROTOCOL = 1
PSN_MASK = 0xFFFFFF
TS_MASK = 0xFFFFFF  # IntHop::time, 24 bits
TX_MASK = 0xFFFFF  # IntHop::bytes, 20 bits
U32 = (1 << 32) - 1
U64 = (1 << 64) - 1
TWO_63 = float(1 << 63)
MAX_HOP = 5  # IntHeader::maxHop
BYTE_UNIT = 128  # IntHop::byteUnit
QLEN_UNIT = 80  # IntHop::qlenUnit
MAX_LINE_RATE_BPS = 10**13
MAX_INTERVAL_US = 1e9
# Line-rate codes of docs/wire.md 5.1, Gbps (the simulator writes 0..4 only); 8..15: none.
LINE_RATES_GBPS = [25, 50, 100, 200, 400, 800, 10, 40]

HPCC_STATE_SINGLE = ["R", "Rc", "U", "incStage", "lastUpdateSeq", "snd_nxt"]
HPCC_STATE_MULTI = ["R", "lastUpdateSeq", "u0", "u1", "u2", "u3", "u4",
                    "Rc0", "Rc1", "Rc2", "Rc3", "Rc4"]
DCQCN_STATE = ["Rc", "Rt", "alpha", "timer_stage", "alpha_cnp_arrived", "decrease_cnp_arrived"]

# Single-bug variants (`--bug NAME`): the mistakes a port of rdma-hw.cc makes, each one line
# away from docs/models/ns3.md. harness/tests/mutants_ns3.rs runs every one over the bundled
# ns3_* traces of its model.
HPCC_BUGS = {
    "tx-nowrap": "INT txBytes delta in uint64_t without the 20-bit mask (N5)",
    "ts-nowrap": "INT ts delta in uint64_t without the 24-bit mask (N5)",
    "qlen-bytes": "INT qLen read in bytes, not 80-byte units (N6)",
    "multi-rate-ignored": "MULTI_RATE 1 ignored: one U and Rc for the flow, not per hop (N8, N10)",
    "update-every-ack": "ack.seq vs lastUpdateSeq not tested: every ACK a committed update (N2)",
    "stage-off-by-one": "multiplicative step only once incStage > MI_THRESH, not >= (N9)",
    "fast-react-ignored": "FAST_REACT 1 ignored: ACKs within the RTT change nothing (N2)",
    "sample-feedback-always": "SAMPLE_FEEDBACK skips qLen-0 hops on committed updates too (N13)",
    "no-min-clamp": "the new rate not clamped at MIN_RATE (N9)",
    "fixed-window": "VAR_WIN ignored: the window is m_win, not m_win R / M (N14)",
    "first-hop": "MULTI_RATE 0: U from the first hop, not the most loaded one (N7)",
    "no-tau-clamp": "dt / tau not clamped to T: the EWMA weighs the old U by T - dt < 0 (N7, N8)",
    "nak-keeps-snd-nxt": "a NAK does not move snd_nxt back to snd_una (RecoverQueue, H9)",
}
DCQCN_BUGS = {
    "alpha-not-rescheduled": "UpdateAlphaMlx does not reschedule itself: alpha updated once (D3)",
    "decrease-no-1ns": "the first rate-decrease check at +RATE_DECREASE_INTERVAL, without the 1 ns (D2)",
    "fr-times-off-by-one": "FAST_RECOVERY_TIMES read as F + 1 timer rounds (D5)",
    "hyper-at-threshold": "hyper increase already at timer_stage = F: no additive round (D5)",
    "clamp-ignored": "CLAMP_TARGET_RATE ignored: Rt = Rc only after a round (D4)",
    "no-min-clamp": "the cut not clamped at MIN_RATE (D7)",
    "gain-complement": "EWMA_GAIN applied as 1 - g: alpha = g alpha + (1 - g) (D3)",
    "cut-round": "the cut rounded to the nearest bps, not truncated by (uint64_t) (C-3)",
    "half-round": "Rc/2 and Rt/2 rounded, not truncated by (uint64_t) (C-3)",
    "timer-not-restarted": "a cut does not restart the rate-increase timer (D6)",
    "no-line-clamp": "Rt not clamped at the line rate after an increase (D5)",
    "stage-not-reset": "a cut does not reset timer_stage (D4, D5)",
    "first-cnp-full-rate": "RATE_ON_FIRST_CNP ignored: the first CNP keeps the full rate (D7)",
}


class ParamError(Exception):
    pass


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def cxx_f64_to_u64(x):
    """C++ `(uint64_t)x` as GCC emits it on x86-64: below 2^63 `cvttsd2si`, else
    `cvttsd2si(x - 2^63)` with bit 63 flipped (ns3/mod.rs); +inf -> 0, NaN -> 2^63."""
    def cvttsd2si(v):
        if v > -TWO_63 - 1.0 and v < TWO_63:  # false for NaN
            return int(v)  # truncation toward zero
        return -(1 << 63)  # the "integer indefinite"
    if x >= TWO_63:
        return (cvttsd2si(x - TWO_63) & U64) ^ (1 << 63)
    return cvttsd2si(x) & U64


def psn_after(a, b):
    """C-2: `a` after `b` in 24-bit serial arithmetic."""
    d = (a - b) & PSN_MASK
    return 1 <= d < (1 << 23)


def micros_to_ns(name, us):
    """ns-3 `MicroSeconds(double)`: floor(us x 1000) computed exactly (0.3 -> 299 ns)."""
    if not (is_num(us) and math.isfinite(us) and 0 < us <= MAX_INTERVAL_US):
        raise ParamError("parameter `%s` must be a finite number of µs in (0, 10^9]" % name)
    ns = math.floor(Fraction(float(us)) * 1000)
    if ns < 1:
        raise ParamError("parameter `%s` must be at least 1 ns" % name)
    return ns


def take(params, defaults, model):
    p = dict(defaults)
    for k, v in params.items():
        if k not in p:
            raise ParamError("%s: unknown parameter `%s` (known: %s)" % (model, k, ", ".join(p)))
        p[k] = v
    return p


def flag(p, k):
    v = p[k]
    if isinstance(v, bool):
        return v
    if is_int(v) and v in (0, 1):
        return v == 1
    raise ParamError("parameter `%s` must be 0, 1, true or false" % k)


def uint(p, k, hi=U64):
    if not (is_int(p[k]) and 0 <= p[k] <= hi):
        raise ParamError("parameter `%s` must be an unsigned integer <= %d" % (k, hi))
    return p[k]


def common(p):
    line = uint(p, "line_rate_bps")
    if not 1 <= line <= MAX_LINE_RATE_BPS:
        raise ParamError("parameter `line_rate_bps` must be in 1..=10^13")
    mn = uint(p, "MIN_RATE")
    if not 1 <= mn <= line:
        raise ParamError("parameter `MIN_RATE` must be in 1..=line_rate_bps")
    return line, mn


def step(p, k, line):
    if uint(p, k) > line:
        raise ParamError("parameter `%s` must be in 0..=line_rate_bps" % k)
    return p[k]


# ---------------------------------------------------------------------------------------------
# hpcc-ns3 (docs/models/ns3.md N1-N14)


class Hop:
    """One INT record as the simulator's `IntHop` keeps it."""
    __slots__ = ("b", "ts", "tx", "qlen")

    def __init__(self, b=0, ts=0, tx=0, qlen=0):
        self.b, self.ts, self.tx, self.qlen = b, ts, tx, qlen


class HpccFlow:
    """`RdmaQueuePair` after `AddQueuePair` (N1)."""

    def __init__(self, m):
        self.started = False
        self.last_update_seq = 0
        self.snd_nxt = 0
        self.snd_una = None
        self.rate = m
        self.cur_rate = m
        self.u = 1.0
        self.inc_stage = 0
        self.hops = [Hop() for _ in range(MAX_HOP)]
        self.hop_u = [1.0] * MAX_HOP  # hp.hopState[i].u
        self.hop_rc = [m] * MAX_HOP  # hp.hopState[i].Rc
        self.hop_inc = [0] * MAX_HOP  # hp.hopState[i].incStage


class HpccNs3:
    DEFAULTS = {
        "line_rate_bps": 100_000_000_000, "base_rtt_ns": 13_000, "mtu_bytes": 1000,
        "win_bytes": None, "U_TARGET": 0.95, "MI_THRESH": 0, "RATE_AI": 50_000_000,
        "MIN_RATE": 100_000_000, "MULTI_RATE": 1, "FAST_REACT": 1, "INT_MULTI": 1,
        "VAR_WIN": 1, "HAS_WIN": 1, "SAMPLE_FEEDBACK": 0,
    }

    def __init__(self, params, bug):
        p = take(params, self.DEFAULTS, "hpcc-ns3")
        self.m, self.min_rate = common(p)
        t = uint(p, "base_rtt_ns")
        if not 1 <= t <= (1 << 53):
            raise ParamError("parameter `base_rtt_ns` must be in 1..=2^53")
        if uint(p, "mtu_bytes") == 0:
            raise ParamError("parameter `mtu_bytes` must be > 0")
        if not flag(p, "HAS_WIN"):
            raise ParamError("parameter `HAS_WIN` must be 1 for HPCC (u divides by m_win)")
        # third.cc's BDP `rtt * bw / 1e9 / 8` unless given.
        w = self.m * t // 1_000_000_000 // 8 if p["win_bytes"] is None else uint(p, "win_bytes")
        if not 1 <= w <= U32:
            raise ParamError("parameter `win_bytes` must be in 1..=2^32-1")
        eta = p["U_TARGET"]
        if not (is_num(eta) and 0 < eta <= 1):
            raise ParamError("parameter `U_TARGET` must be in (0, 1]")
        self.t = t
        self.win = w
        self.eta = float(eta)
        self.mi_thresh = uint(p, "MI_THRESH", U32)
        self.rai = step(p, "RATE_AI", self.m)
        self.int_multi = uint(p, "INT_MULTI", U32)
        if self.int_multi == 0:
            raise ParamError("parameter `INT_MULTI` must be >= 1")
        self.multi_rate = flag(p, "MULTI_RATE")
        self.fast_react = flag(p, "FAST_REACT")
        self.var_win = flag(p, "VAR_WIN")
        self.sample_feedback = flag(p, "SAMPLE_FEEDBACK")
        self.state_names = HPCC_STATE_MULTI if self.multi_rate else HPCC_STATE_SINGLE
        # What the mutated code computes with (the record keeps the configured names).
        self.calc_multi = self.multi_rate and bug != "multi-rate-ignored"
        self.bug = bug
        self.flows = {}

    def flow(self, fid):
        st = self.flows.get(fid)
        if st is None:
            st = self.flows[fid] = HpccFlow(self.m)
        return st

    def fire_until(self, t):
        return []  # no timers

    def on_event(self, ev):
        kind = ev["kind"]
        if kind == "tx_data":
            self.flow(ev["flow"]).snd_nxt = (ev["psn"] + 1) & PSN_MASK  # GetNxtPacket
            return []
        if kind not in ("rx_ack", "rx_nak"):
            return []  # not inputs of the simulator's HPCC
        st = self.flow(ev["flow"])
        self.on_ack(st, ev, kind == "rx_nak")
        return [self.decision(ev, st)]

    def get_qlen(self, h):
        """`IntHop::GetQlen()`: qlen x 80 x multi in uint32_t (N6)."""
        unit = 1 if self.bug == "qlen-bytes" else QLEN_UNIT
        return (h.qlen * unit & U32) * self.int_multi & U32

    def hop_u(self, hop, prev):
        """N5-N6: (tau, u) of one hop against its stored record; None when the simulator would
        divide by zero (no line rate, zero ts delta: docs/models/ns3.md H8), skipped."""
        code = hop.b & 0xF
        if code >= len(LINE_RATES_GBPS):
            return None
        line = LINE_RATES_GBPS[code] * 1_000_000_000
        if self.bug == "ts-nowrap":
            tau = (hop.ts - prev.ts) & U64
        else:
            tau = (hop.ts - prev.ts) & TS_MASK  # GetTimeDelta
        if tau == 0:
            return None
        duration = float(tau) * 1e-9  # `double duration = tau * 1e-9`
        if self.bug == "tx-nowrap":
            units = (hop.tx - prev.tx) & U64
        else:
            units = (hop.tx - prev.tx) & TX_MASK  # GetBytesDelta
        nbytes = units * BYTE_UNIT * self.int_multi & U64
        tx_rate = float(nbytes * 8 & U64) / duration
        qmin = min(self.get_qlen(hop), self.get_qlen(prev))
        # u = txRate / L + (double)qmin * M / L / W, left to right
        u = tx_rate / float(line) + float(qmin) * float(self.m) / float(line) / float(self.win)
        return tau, u

    def next_rate(self, rc, inc_stage, c):
        """N9: MD / MI or AI, then MIN_RATE and the line rate."""
        full = inc_stage > self.mi_thresh if self.bug == "stage-off-by-one" \
            else inc_stage >= self.mi_thresh
        if c >= 1.0 or full:
            r, s = (cxx_f64_to_u64(float(rc) / c) + self.rai) & U64, 0  # DataRate / double
        else:
            r, s = (rc + self.rai) & U64, (inc_stage + 1) & U32
        if r < self.min_rate and self.bug != "no-min-clamp":
            r = self.min_rate
        if r > self.m:
            r = self.m
        return r, s

    def update_rate(self, st, hops, fast):
        """`UpdateRateHp` after the first RTT (N5-N13)."""
        t = self.t
        big_u, dt = 0.0, 0
        first_taken = False
        updated = [False] * MAX_HOP
        any_updated = False
        skip_idle = self.sample_feedback and (fast or self.bug == "sample-feedback-always")
        for i, hop in enumerate(hops):
            if skip_idle and self.get_qlen(hop) == 0:
                continue  # N13
            r = self.hop_u(hop, st.hops[i])
            if r is None:
                continue
            tau, u = r
            updated[i] = True
            any_updated = True
            if not self.calc_multi:
                if self.bug == "first-hop":
                    if not first_taken:
                        big_u, dt, first_taken = u, tau, True
                elif u > big_u:  # N7: the first hop with the largest u
                    big_u, dt = u, tau
            else:
                if tau > t and self.bug != "no-tau-clamp":
                    tau = t  # N8
                # `(T - tau)` in uint64_t; the no-tau-clamp port writes it in signed doubles
                st.hop_u[i] = (st.hop_u[i] * float(t - tau) + u * float(tau)) / float(t)
            st.hops[i] = hop  # N12
        new_rate = 0
        new_inc = st.inc_stage
        per_rate = [0] * MAX_HOP
        per_inc = [0] * MAX_HOP
        if not self.calc_multi:
            if any_updated:
                if dt > t and self.bug != "no-tau-clamp":
                    dt = t  # N7
                st.u = (st.u * float(t - dt) + big_u * float(dt)) / float(t)
                new_rate, new_inc = self.next_rate(st.cur_rate, st.inc_stage, st.u / self.eta)
        else:
            new_rate = self.m  # N10: min over the hops
            for i in range(len(hops)):
                if updated[i]:
                    r, s = self.next_rate(st.hop_rc[i], st.hop_inc[i], st.hop_u[i] / self.eta)
                    per_rate[i], per_inc[i] = r, s
                    if r < new_rate:
                        new_rate = r
                elif st.hop_rc[i] < new_rate:
                    new_rate = st.hop_rc[i]
        if any_updated:
            st.rate = new_rate  # ChangeRate (N11)
        if not fast:
            if any_updated:
                st.cur_rate = new_rate
                st.inc_stage = new_inc
            if self.calc_multi:
                for i in range(len(hops)):
                    if updated[i]:
                        st.hop_rc[i], st.hop_inc[i] = per_rate[i], per_inc[i]

    def on_ack(self, st, ev, nak):
        """`ReceiveAck` + `HandleAckHp` (N2, N3, N4, H9)."""
        ack_seq = ev["psn"] if nak else (ev["psn"] + 1) & PSN_MASK
        if st.snd_una is None or psn_after(ack_seq, st.snd_una):
            st.snd_una = ack_seq  # Acknowledge
        if nak and self.bug != "nak-keeps-snd-nxt":
            st.snd_nxt = st.snd_una  # RecoverQueue, before HandleAckHp
        intst = ev.get("int")
        if intst is None:
            hops, nhop = [], 0
        else:
            hops = [Hop(h["b"], h["ts"], h["tx_bytes"], h["qlen"]) for h in intst["hops"]]
            nhop = intst["nhop"]
        fast_react = self.fast_react and self.bug != "fast-react-ignored"
        if not st.started:
            kind = "first"
        elif psn_after(ack_seq, st.last_update_seq) or self.bug == "update-every-ack":
            kind = "update"
        elif fast_react:
            kind = "fast"
        else:
            return  # FAST_REACT 0: ignored
        next_seq = st.snd_nxt
        if kind == "first":
            st.started = True  # N3: "first RTT"
            st.last_update_seq = next_seq
            if nhop <= MAX_HOP:
                st.hops[:len(hops)] = hops
            return
        fast = kind == "fast"
        if nhop <= MAX_HOP:  # N4
            self.update_rate(st, hops, fast)
        if not fast and psn_after(next_seq, st.last_update_seq):
            st.last_update_seq = next_seq

    def window(self, st):
        """`GetWin()` (N14): m_win x R / M in uint64_t, at least 1, with VAR_WIN."""
        if self.var_win and self.bug != "fixed-window":
            return max(1, (self.win * st.rate & U64) // self.m)
        return self.win

    def decision(self, ev, st):
        if self.multi_rate:
            values = [st.rate, st.last_update_seq] + st.hop_u + st.hop_rc
        else:
            values = [st.rate, st.cur_rate, st.u, st.inc_stage, st.last_update_seq, st.snd_nxt]
        return {
            "t": ev["t"],
            "flow": ev["flow"],
            "cause": {"kind": ev["kind"], "index": ev["index"]},
            "rate_bps": st.rate,
            "window_bytes": self.window(st),
            "state": dict(zip(self.state_names, values)),
        }


# ---------------------------------------------------------------------------------------------
# dcqcn-ns3 (docs/models/ns3.md, the dcqcn-ns3 table)


class DcqcnFlow:
    """`RdmaQueuePair::mlx` after `AddQueuePair`. A timer is (deadline, scheduling seq)."""

    def __init__(self, fid, line):
        self.fid = fid
        self.rc = line  # m_rate
        self.rt = line  # mlx.m_targetRate
        self.alpha = 1.0
        self.alpha_cnp = False
        self.decrease_cnp = False
        self.first_cnp = True
        self.stage = 0  # m_rpTimeStage
        self.timers = {"alpha": None, "rate_decrease": None, "rate_increase": None}
        self.next_seq = 0

    def schedule(self, name, now, delay):
        """`Simulator::Schedule`: ns-3 runs same-ns events in scheduling order (uid)."""
        seq = self.next_seq
        self.next_seq += 1
        at = now + delay
        self.timers[name] = (at, seq) if at <= U64 else None

    def earliest(self):
        due = [(v[0], v[1], k) for k, v in self.timers.items() if v is not None]
        return min(due) if due else None


class DcqcnNs3:
    DEFAULTS = {
        "line_rate_bps": 100_000_000_000, "base_rtt_ns": 13_000, "mtu_bytes": 1000,
        "ALPHA_RESUME_INTERVAL": 1.0, "RATE_DECREASE_INTERVAL": 4.0, "RP_TIMER": 900.0,
        "EWMA_GAIN": 0.00390625, "FAST_RECOVERY_TIMES": 1, "RATE_AI": 50_000_000,
        "RATE_HAI": 100_000_000, "MIN_RATE": 100_000_000, "CLAMP_TARGET_RATE": 0,
        "RATE_ON_FIRST_CNP": 1.0,
    }

    def __init__(self, params, bug):
        p = take(params, self.DEFAULTS, "dcqcn-ns3")
        self.line, self.min_rate = common(p)
        uint(p, "base_rtt_ns")
        uint(p, "mtu_bytes")
        self.alpha_ns = micros_to_ns("ALPHA_RESUME_INTERVAL", p["ALPHA_RESUME_INTERVAL"])
        self.decrease_ns = micros_to_ns("RATE_DECREASE_INTERVAL", p["RATE_DECREASE_INTERVAL"])
        self.rp_ns = micros_to_ns("RP_TIMER", p["RP_TIMER"])
        g = p["EWMA_GAIN"]
        if not (is_num(g) and 0 <= g <= 1):
            raise ParamError("parameter `EWMA_GAIN` must be in [0, 1]")
        self.g = float(g)
        self.threshold = uint(p, "FAST_RECOVERY_TIMES", U32)
        self.rai = step(p, "RATE_AI", self.line)
        self.rhai = step(p, "RATE_HAI", self.line)
        self.clamp = flag(p, "CLAMP_TARGET_RATE")
        f = p["RATE_ON_FIRST_CNP"]
        if not (is_num(f) and 0 < f <= 1):
            raise ParamError("parameter `RATE_ON_FIRST_CNP` must be in (0, 1]")
        self.first_fraction = float(f)
        self.bug = bug
        self.flows = {}

    def decision(self, fl, t, cause):
        values = [fl.rc, fl.rt, fl.alpha, fl.stage, fl.alpha_cnp, fl.decrease_cnp]
        return {"t": t, "flow": fl.fid, "cause": cause, "rate_bps": fl.rc,
                "state": dict(zip(DCQCN_STATE, values))}

    def cnp(self, fl, t):
        """`cnp_received_mlx`."""
        fl.alpha_cnp = True
        fl.decrease_cnp = True
        if fl.first_cnp:
            fl.alpha = 1.0
            fl.alpha_cnp = False
            fl.schedule("alpha", t, self.alpha_ns)
            # "add 1 ns to make sure rate decrease is after alpha update"
            extra = 0 if self.bug == "decrease-no-1ns" else 1
            fl.schedule("rate_decrease", t, self.decrease_ns + extra)
            f = 1.0 if self.bug == "first-cnp-full-rate" else self.first_fraction
            fl.rc = fl.rt = cxx_f64_to_u64(float(fl.rc) * f)
            fl.first_cnp = False

    def update_alpha(self, fl, t):
        """`UpdateAlphaMlx` (D3)."""
        g = self.g
        if self.bug == "gain-complement":
            g = 1.0 - g
        if fl.alpha_cnp:
            fl.alpha = (1.0 - g) * fl.alpha + g
        else:
            fl.alpha = fl.alpha * (1.0 - g)
        fl.alpha_cnp = False
        if self.bug != "alpha-not-rescheduled":
            fl.schedule("alpha", t, self.alpha_ns)

    def check_rate_decrease(self, fl, t):
        """`CheckRateDecreaseMlx` (D2, D4, D7); True when it cut."""
        fl.schedule("rate_decrease", t, self.decrease_ns)
        if not fl.decrease_cnp:
            return False
        clamp = self.clamp and self.bug != "clamp-ignored"
        if clamp or fl.stage != 0:
            fl.rt = fl.rc
        product = float(fl.rc) * (1.0 - fl.alpha / 2.0)
        cut = cxx_f64_to_u64(product + 0.5 if self.bug == "cut-round" else product)
        if self.min_rate < cut or self.bug == "no-min-clamp":
            fl.rc = cut
        else:
            fl.rc = self.min_rate
        if self.bug != "stage-not-reset":
            fl.stage = 0
        fl.decrease_cnp = False
        if self.bug != "timer-not-restarted":
            fl.schedule("rate_increase", t, self.rp_ns)
        return True

    def rate_increase(self, fl, t):
        """`RateIncEventTimerMlx` + `RateIncEventMlx` (D5)."""
        fl.schedule("rate_increase", t, self.rp_ns)
        f = self.threshold + 1 if self.bug == "fr-times-off-by-one" else self.threshold
        if fl.stage >= f:
            hyper = fl.stage >= f if self.bug == "hyper-at-threshold" else fl.stage > f
            fl.rt = (fl.rt + (self.rhai if hyper else self.rai)) & U64
            if fl.rt > self.line and self.bug != "no-line-clamp":
                fl.rt = self.line
        # else FastRecoveryMlx: Rt unchanged

        def half(bps):  # DataRate / 2: (uint64_t)(bps / 2.0)
            return cxx_f64_to_u64(float(bps) / 2.0 + (0.5 if self.bug == "half-round" else 0.0))
        fl.rc = (half(fl.rc) + half(fl.rt)) & U64
        fl.stage = min(fl.stage + 1, U32)

    def fire_one(self, fl, out):
        at, _, name = fl.earliest()
        fl.timers[name] = None
        if name == "alpha":
            self.update_alpha(fl, at)
        elif name == "rate_decrease":
            if self.check_rate_decrease(fl, at):
                out.append(self.decision(fl, at, {"kind": "timer", "name": name}))
        else:
            self.rate_increase(fl, at)
            out.append(self.decision(fl, at, {"kind": "timer", "name": name}))

    def fire_until(self, t):
        """Every timer due at or before t: earliest ns first, flows in id order, a flow's
        timers of one ns in scheduling order (ns-3: time, then uid)."""
        out = []
        while True:
            due = [e[0] for e in (f.earliest() for f in self.flows.values()) if e is not None]
            if not due or min(due) > t:
                return out
            d = min(due)
            for fid in sorted(self.flows):
                fl = self.flows[fid]
                while True:
                    e = fl.earliest()
                    if e is None or e[0] != d:
                        break
                    self.fire_one(fl, out)

    def on_event(self, ev):
        out = self.fire_until(ev["t"])  # C-5: timers first
        if ev["kind"] == "rx_cnp":
            fid = ev["flow"]
            fl = self.flows.get(fid)
            if fl is None:
                fl = self.flows[fid] = DcqcnFlow(fid, self.line)
            self.cnp(fl, ev["t"])
            out.append(self.decision(fl, ev["t"], {"kind": "rx_cnp", "index": ev["index"]}))
        # tx_data and the rest: not inputs (no byte counter, D5)
        return out


MODELS = {"hpcc-ns3": (HpccNs3, HPCC_BUGS), "dcqcn-ns3": (DcqcnNs3, DCQCN_BUGS)}


def send(obj):
    sys.stdout.write(json.dumps(obj, allow_nan=False))
    sys.stdout.write("\n")
    sys.stdout.flush()


class FirstAct:
    """Where the bug first acts: a correct model beside the mutated one, fed the same requests;
    the first request whose replies differ is reported once, on stderr and into DUT_BUG_LOG."""

    def __init__(self, shadow):
        self.shadow = shadow
        self.events = 0
        self.reported = False

    def report(self, line):
        self.reported = True
        print(line, file=sys.stderr, flush=True)
        path = os.environ.get("DUT_BUG_LOG")
        if path:
            with open(path, "w") as f:
                f.write(line + "\n")

    def event(self, msg, decisions):
        n = self.events
        self.events += 1
        if not self.reported and decisions != self.shadow.on_event(msg):
            self.report("bug first acts at event %d (flow %d, index %d)"
                        % (n, msg["flow"], msg["index"]))

    def finish(self, t, decisions):
        if not self.reported and decisions != self.shadow.fire_until(t):
            self.report("bug first acts at finish (after %d events)" % self.events)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(MODELS), required=True)
    ap.add_argument("--bug", help="enable one deliberate bug; hpcc-ns3: %s; dcqcn-ns3: %s"
                    % (", ".join(HPCC_BUGS), ", ".join(DCQCN_BUGS)))
    args = ap.parse_args()
    cls, bugs = MODELS[args.model]
    bug = args.bug
    if bug is not None and bug not in bugs:
        ap.error("--bug %s: not a bug of %s (choose from %s)"
                 % (bug, args.model, ", ".join(sorted(bugs))))

    model = None
    first_act = None
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            print("ns3_dut.py: stdin closed", file=sys.stderr)
            return 0
        msg = json.loads(line)
        t = msg.get("type")
        if t == "hello":
            if msg.get("protocol") != PROTOCOL:
                send({"type": "error",
                      "message": "this DUT speaks protocol %d, got %r" % (PROTOCOL, msg.get("protocol"))})
                return 2
            if msg.get("model") != args.model:
                send({"type": "error", "message": "this DUT implements `%s` (--model), not `%s`"
                      % (args.model, msg.get("model"))})
                return 2
            try:
                model = cls(msg.get("params") or {}, bug)
                if bug:
                    first_act = FirstAct(cls(msg.get("params") or {}, None))
            except ParamError as e:
                send({"type": "error", "message": str(e)})
                return 2
            send({"type": "hello", "protocol": PROTOCOL,
                  "name": args.model + "-py" + ("+bug-" + bug if bug else "")})
        elif t == "event" and model is not None:
            decisions = model.on_event(msg)
            if first_act is not None:
                first_act.event(msg, decisions)
            send({"type": "decisions", "decisions": decisions})
        elif t == "finish" and model is not None:
            decisions = model.fire_until(msg["t"])
            if first_act is not None:
                first_act.finish(msg["t"], decisions)
            send({"type": "decisions", "decisions": decisions})
            return 0
        else:
            send({"type": "error", "message": "unexpected message type %r" % t})
            return 2


if __name__ == "__main__":
    sys.exit(main())
