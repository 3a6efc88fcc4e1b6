#!/usr/bin/env python3
"""An RCC receiver and sender (RCC paper Algorithm 1, sections III-B..E; ccreplay RCC-1..5,
docs/models/rcc.md) as a ccreplay device under test speaking the process protocol (docs/dut.md)
on stdin / stdout. The hello's `model` picks the side: `rcc-receiver` (Algorithm 1 on every
data packet: one-way delay, message count N, fair share C*T/N, the last-hop and in-network
tests, the PID window; writes cwnd, N and flags into the ACK) or `rcc-sender` (window = the
cwnd of every ACK / NAK, pacing at cwnd * 8e9 / T capped at the line rate).

Written from docs/models/rcc.md (rows A1-A10, P1-P5, choices 1-9) and the paper, not from the
Rust reference (reference-cc/src/rcc/). Integers stay Python integers; the real-valued PID state
is IEEE doubles computed in the order eqs. 3-5 write them, and tanh is musl's (the `libm` crate
C-3 names), so decisions are bit-identical to the reference's.

    python3 examples/duts/rcc_dut.py                   # correct
    python3 examples/duts/rcc_dut.py --bug NAME        # one of RECEIVER_BUGS / SENDER_BUGS

With --bug, the script runs the correct algorithm beside the mutated one on the same events and,
at the first event whose decisions differ (outputs or state), writes one line
`bug first acts at event N of flow F (KIND, t = T ns)` (N = the event's per-flow index) to
stderr and, when the environment variable DUT_BUG_LOG names a file, to that file as well
(the harness keeps a DUT's stderr to itself). Standard library only. Logs go to stderr; stdout
carries protocol replies only.
"""

import argparse
import json
import math
import os
import struct
import sys

PROTOCOL = 1
BITS_NS_PER_BYTE_S = 8_000_000_000  # bytes * 8e9 / ns = bps
U32_MAX = (1 << 32) - 1
U16_MAX = (1 << 16) - 1
U64_MAX = (1 << 64) - 1
I64_MAX = (1 << 63) - 1
MAX_GAIN = 1e12  # Kp, Kd bound that keeps U finite (C-3)
FLAG_PID = 1  # ack_flags bit 0: the flow is in PID mode
FLAG_IN_NETWORK = 2  # ack_flags bit 1: in-network congestion detected at this packet

# Single-bug variants (`--bug NAME`): mistakes an RCC implementation can make, each a line or
# two away from the correct one. harness/tests/mutants_rcc.rs runs every one over the bundled
# RCC traces; docs/conformance.md (RCC) lists where each is caught.
RECEIVER_BUGS = {
    "last-hop-ge": "last-hop test B_R >= C*T*eta (Algorithm 1 line 10 read literally; A5 says >)",
    "br-current-round": "B_R = the bytes of the current round so far, not of the previous one",
    "round-from-packet": "a new B_R round starts at the packet that rolled it, not at start + k*T",
    "fair-round": "fair share rounded to the nearest byte, not floored",
    "last-not-counted": "LAST does not close the message: N is never decremented by it",
    "only-not-counted": "a one-packet message (ONLY) is not counted in N",
    "first-counted-twice": "a FIRST of a flow already in a message counts it again",
    "middle-no-open": "MIDDLE / LAST of a flow not in a message do not open one",
    "run-not-reset": "a delay at or below base*(1+delta) does not reset the consecutive count",
    "pid-not-sticky": "a flow in PID mode leaves it when the in-network test fails (line 6)",
    "last-hop-first": "the last-hop test is checked before PID mode (lines 6 and 10 swapped)",
    "flag-entry-only": "flag bit 1 set only when the flow enters PID mode, not while in it",
    "pid-sign": "eq. 5 with the sign flipped: W = W_prev * (1 + tanh U)",
    "e-in-us": "E in microseconds instead of seconds (eq. 3 unit slip)",
    "kd-on-e": "derivative term Kd * E instead of Kd * (E - E_prev) (eq. 4)",
    "target-delta": "PID target base*(1+delta) instead of base*(1+delta/2) (eq. 2)",
    "e-prev-zero-on-entry": "E_prev reset to 0 when the flow enters PID mode (choice 4)",
    "w-prev-fair": "each PID step starts from this packet's fair share, not the last window",
    "pid-round": "PID window rounded to the nearest byte, not floored (C-3)",
    "no-mtu-clamp": "PID window not clamped up to 1 MTU (P5)",
    "no-fair-clamp": "PID window not capped at the fair share (P5)",
    "mtu-wins": "clamp order max(min(W, fair), MTU): 1 MTU wins over a smaller fair share",
}
SENDER_BUGS = {
    "nak-ignored": "the cwnd of a NAK is not applied (only ACKs carry the window)",
    "rate-round": "pacing rate rounded to the nearest bps, not floored",
    "no-rate-cap": "pacing rate not capped at the line rate (choice 9)",
    "t-whole-us": "T truncated to whole microseconds in the pacing rate",
    "stale-cwnd": "the window of the previous ACK applied (one ACK late)",
    "window-per-rtt": "window and rate updated at most once per T per flow, not per ACK",
    "window-in-mtus": "window kept in whole MTUs (floored, at least one)",
    "min-one-mtu": "a window below 1 MTU raised to 1 MTU (choice 7 applies it as received)",
    "no-grow": "a larger cwnd ignored: the window only shrinks",
}
BUGS = dict(RECEIVER_BUGS, **SENDER_BUGS)


class ParamError(Exception):
    pass


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_common(p):
    """C-7 checks shared by both sides: C, T, the MTU, and a BDP that fits the u32 cwnd."""
    for k in ("line_rate_bps", "base_rtt_ns", "mtu_bytes"):
        if not (is_int(p[k]) and 0 <= p[k] <= U64_MAX):
            raise ParamError("parameter `%s` must be an unsigned integer" % k)
    if p["line_rate_bps"] == 0:
        raise ParamError("line_rate_bps must be > 0")
    if p["base_rtt_ns"] == 0:
        raise ParamError("base_rtt_ns must be > 0")
    if not 1 <= p["mtu_bytes"] <= U32_MAX:
        raise ParamError("mtu_bytes must be in 1..=2^32-1")
    if p["line_rate_bps"] * p["base_rtt_ns"] // BITS_NS_PER_BYTE_S > U32_MAX:
        raise ParamError("C * T / 8e9 exceeds the 32-bit cwnd field (base_rtt_ns)")


def merge(defaults, params):
    p = dict(defaults)
    for k, v in params.items():
        if k not in p:
            raise ParamError("unknown parameter `%s` (known: %s)" % (k, ", ".join(p)))
        p[k] = v
    return p


# --- tanh as musl computes it (C-3: the `libm` crate, a port of musl) -----------------------

def _bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _from_bits(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INVLN2 = 1.44269504088896338700e+00
_Q1 = -3.33333333333331316428e-02
_Q2 = 1.58730158725481460165e-03
_Q3 = -7.93650757867487942473e-05
_Q4 = 4.00821782732936239552e-06
_Q5 = -2.01099218183624371326e-07
_O_THRESHOLD = 7.09782712893383973096e+02


def expm1(x):
    """musl expm1 (FreeBSD s_expm1.c): exp(x) - 1 in IEEE doubles, operation by operation."""
    u = _bits(x)
    hx = (u >> 32) & 0x7FFFFFFF
    sign = u >> 63
    if hx >= 0x4043687A:  # |x| >= 56 ln 2
        if x != x:
            return x
        if sign:
            return -1.0
        if x > _O_THRESHOLD:
            return x * 8.98846567431158e307 * 2.0  # overflow to inf
    c = 0.0
    if hx > 0x3FD62E42:  # |x| > 0.5 ln 2
        if hx < 0x3FF0A2B2:  # and |x| < 1.5 ln 2
            if not sign:
                hi = x - _LN2_HI
                lo = _LN2_LO
                k = 1
            else:
                hi = x + _LN2_HI
                lo = -_LN2_LO
                k = -1
        else:
            k = int(_INVLN2 * x + (-0.5 if sign else 0.5))  # C truncation
            t = float(k)
            hi = x - t * _LN2_HI
            lo = t * _LN2_LO
        x = hi - lo
        c = (hi - x) - lo
    elif hx < 0x3C900000:  # |x| < 2^-54
        return x
    else:
        k = 0
    hfx = 0.5 * x
    hxs = x * hfx
    r1 = 1.0 + hxs * (_Q1 + hxs * (_Q2 + hxs * (_Q3 + hxs * (_Q4 + hxs * _Q5))))
    t = 3.0 - r1 * hfx
    e = hxs * ((r1 - t) / (6.0 - x * t))
    if k == 0:
        return x - (x * e - hxs)
    e = x * (e - c) - c
    e -= hxs
    if k == -1:
        return 0.5 * (x - e) - 0.5
    if k == 1:
        if x < -0.25:
            return -2.0 * (e - (x + 0.5))
        return 1.0 + 2.0 * (x - e)
    twopk = _from_bits((0x3FF + k) << 52)
    if k < 0 or k > 56:
        y = x - e + 1.0
        if k == 1024:
            y = y * 2.0 * 8.98846567431158e307
        else:
            y = y * twopk
        return y - 1.0
    uk = _from_bits((0x3FF - k) << 52)  # 2^-k
    if k < 20:
        y = (x - e + (1.0 - uk)) * twopk
    else:
        y = (x - (e + uk) + 1.0) * twopk
    return y


def tanh(x):
    """musl tanh: tanh(x) from expm1, in the branches of its |x| ranges."""
    u = _bits(x)
    sign = u >> 63
    u &= (1 << 63) - 1
    x = _from_bits(u)
    w = u >> 32
    if w > 0x3FE193EA:  # |x| > log(3)/2 or nan
        if w > 0x40340000:  # |x| > 20 or nan
            t = 1.0 - 0.0 / x if x == x else x
        else:
            t = expm1(2.0 * x)
            t = 1.0 - 2.0 / (t + 2.0)
    elif w > 0x3FD058AE:  # |x| > log(5/3)/2
        t = expm1(2.0 * x)
        t = t / (t + 2.0)
    elif w >= 0x00100000:  # |x| >= 2^-1022
        t = expm1(-2.0 * x)
        t = -t / (t + 2.0)
    else:  # subnormal
        t = x
    return -t if sign else t


# --- receiver ---------------------------------------------------------------------------------

def position(opcode):
    """docs/models/rcc.md A2 / rcc/opcode table (IBTA vol. 1 §9.2 Table 39): FIRST, MIDDLE, LAST,
    ONLY, or None for anything that is not message data."""
    transport = opcode >> 5
    if transport == 4 or transport > 5:  # CNP, manufacturer-specific
        return None
    op = opcode & 0x1F
    if op in (0x00, 0x06, 0x0D):
        return "first"
    if op in (0x01, 0x07, 0x0E):
        return "middle"
    if op in (0x02, 0x03, 0x08, 0x09, 0x0F, 0x16):
        return "last"
    if op in (0x04, 0x05, 0x0A, 0x0B, 0x10, 0x17):
        return "only"
    return None


class RxFlow:
    __slots__ = ("in_message", "consecutive", "pid", "u", "e_prev", "cwnd")

    def __init__(self):
        self.in_message = False
        self.consecutive = 0
        self.pid = False
        self.u = 0.0
        self.e_prev = 0.0
        self.cwnd = None


class Receiver:
    """Algorithm 1 for every flow of one receiver (N and B_R are shared)."""

    STATE = ["N", "fair_share", "rtt_ns", "consecutive", "B_R", "pid", "U", "E", "W"]

    def __init__(self, params, bug):
        p = merge({
            "line_rate_bps": 100_000_000_000,
            "base_rtt_ns": 12_000,
            "mtu_bytes": 1000,
            "base_delay_ns": None,
            "n": 3,
            "delta": 0.2,
            "eta": 0.95,
            "kp": 1e4,
            "kd": 1e5,
        }, params)
        check_common(p)
        if not (is_int(p["n"]) and 1 <= p["n"] <= U32_MAX):
            raise ParamError("n must be an integer >= 1")
        for k in ("delta", "eta", "kp", "kd"):
            if not is_num(p[k]):
                raise ParamError("parameter `%s` must be a number" % k)
        delta, eta, kp, kd = (float(p[k]) for k in ("delta", "eta", "kp", "kd"))
        if not (0.0 < delta < 1.0):
            raise ParamError("delta must be in (0, 1)")
        if not (0.0 < eta <= 1.0):
            raise ParamError("eta must be in (0, 1]")
        for k, v in (("kp", kp), ("kd", kd)):
            if not (0.0 <= v <= MAX_GAIN):
                raise ParamError("%s must be in [0, 1e12]" % k)
        base = p["base_delay_ns"]
        if base is None:
            base = p["base_rtt_ns"]  # choice 1
        elif not (is_int(base) and 1 <= base <= U64_MAX):
            raise ParamError("base_delay_ns must be an integer > 0")
        self.c = p["line_rate_bps"]
        self.t = p["base_rtt_ns"]
        self.mtu = p["mtu_bytes"]
        self.n = p["n"]
        self.kp = kp
        self.kd = kd
        base = float(base)
        self.above = base * (1.0 + delta)  # eq. 1 threshold, ns
        self.target = base * (1.0 + delta / 2.0)  # eq. 2, ns
        if bug == "target-delta":
            self.target = base * (1.0 + delta)
        # A5: C * T / 8e9 * eta, f64 in that order.
        self.last_hop_bytes = float(self.c) * float(self.t) / 8e9 * eta
        self.bug = bug
        self.flows = {}
        self.n_open = 0  # N: open messages
        self.round_start = None
        self.round_bytes = 0
        self.b_r = 0

    def fair_share(self, n):
        """A3: floor(C * T / 8e9 / N) bytes, exact integers."""
        num, den = self.c * self.t, BITS_NS_PER_BYTE_S * max(n, 1)
        if self.bug == "fair-round":
            return (2 * num + den) // (2 * den)
        return num // den

    def roll(self, t):
        """Choice 2: rounds of T ns from the first packet; B_R = the previous round's bytes, 0
        when a whole round passed without packets."""
        if self.round_start is None:
            self.round_start = t
            return
        if t < self.round_start or t - self.round_start < self.t:
            return
        k = (t - self.round_start) // self.t
        self.b_r = self.round_bytes if k == 1 else 0
        self.round_bytes = 0
        if self.bug == "round-from-packet":
            self.round_start = t
        else:
            self.round_start += k * self.t

    def on_event(self, ev):
        if ev["kind"] != "rx_data":
            return []
        bug = self.bug
        t = ev["t"]
        self.roll(t)
        self.round_bytes += ev["bytes"]
        b_r = self.round_bytes if bug == "br-current-round" else self.b_r

        # A1, RCC-2: one-way delay; a timestamp after the arrival gives 0; none: no sample.
        ts = ev.get("send_ts")
        rtt = None if ts is None else max(t - ts, 0)

        # A2, RCC-3 and choice 3: +1 at a message's first packet.
        pos = position(ev["opcode"])
        st = self.flows.get(ev["flow"])
        if st is None:
            st = self.flows[ev["flow"]] = RxFlow()
        if pos is not None:
            opens = not st.in_message
            if bug == "only-not-counted" and pos == "only":
                opens = False
            if bug == "first-counted-twice" and pos == "first":
                opens = True
            if bug == "middle-no-open" and pos in ("middle", "last"):
                opens = False
            if opens:
                st.in_message = True
                self.n_open += 1
        n_used = max(self.n_open, 1)
        fair = self.fair_share(n_used)

        # A4, RCC-4: n consecutive samples above base * (1 + delta).
        e = None
        if rtt is not None:
            e = (float(rtt) - self.target) / 1e9  # eq. 3, seconds
            if bug == "e-in-us":
                e = (float(rtt) - self.target) / 1e3
            if float(rtt) > self.above:
                st.consecutive += 1
            elif bug != "run-not-reset":
                st.consecutive = 0
        # A5 (strict >, section III-C) and A6.
        if bug == "last-hop-ge":
            last_hop = float(b_r) >= self.last_hop_bytes
        else:
            last_hop = float(b_r) > self.last_hop_bytes
        in_network = st.consecutive >= self.n and not last_hop

        # A7-A10, Algorithm 1 lines 6-19.
        w_prev = fair if st.cwnd is None else st.cwnd  # choice 4
        was_pid = st.pid
        if bug == "pid-not-sticky" and st.pid and not in_network:
            st.pid = False
        if bug == "last-hop-first" and st.pid and last_hop:
            cwnd = fair
        elif st.pid:
            cwnd = self.pid(st, e, w_prev, fair)
        elif last_hop:
            cwnd = fair
        elif in_network:
            st.pid = True
            st.u = 0.0
            if bug == "e-prev-zero-on-entry":
                st.e_prev = 0.0
            cwnd = self.pid(st, e, w_prev, fair)
        else:
            cwnd = fair
        st.cwnd = cwnd
        if e is not None:
            st.e_prev = e

        # A2: -1 after the message's last packet.
        closes = pos in ("last", "only") and st.in_message
        if bug == "last-not-counted" and pos == "last":
            closes = False
        if closes:
            st.in_message = False
            self.n_open -= 1

        flags = FLAG_PID if st.pid else 0
        if in_network and not (bug == "flag-entry-only" and was_pid):
            flags |= FLAG_IN_NETWORK  # choice 8
        return [{
            "t": t,
            "flow": ev["flow"],
            "cause": {"kind": "rx_data", "index": ev["index"]},
            "ack_cwnd": min(cwnd, U32_MAX),
            "ack_n": min(n_used, U16_MAX),
            "ack_flags": flags,
            "state": {
                "N": n_used,
                "fair_share": fair,
                "rtt_ns": -1 if rtt is None else min(rtt, I64_MAX),
                "consecutive": st.consecutive,
                "B_R": b_r,
                "pid": st.pid,
                "U": st.u,
                "E": st.e_prev,
                "W": cwnd,
            },
        }]

    def pid(self, st, e, w_prev, fair):
        """P3-P5 (eqs. 4-5, RCC-5); without a sample U is kept and W only re-clamped."""
        bug = self.bug
        if bug == "w-prev-fair":
            w_prev = fair
        w = w_prev
        if e is not None:
            if bug == "kd-on-e":
                st.u = st.u + self.kp * e + self.kd * e
            else:
                st.u = st.u + self.kp * e + self.kd * (e - st.e_prev)  # eq. 4
            if bug == "pid-sign":
                x = float(w_prev) * (1.0 + tanh(st.u))
            else:
                x = float(w_prev) * (1.0 - tanh(st.u))  # eq. 5
            w = int(math.floor(x + 0.5)) if bug == "pid-round" else int(math.floor(x))
        # P5: [1 MTU, fair share], the fair share winning below one MTU (choice 7).
        if bug == "no-mtu-clamp":
            return min(w, fair)
        if bug == "no-fair-clamp":
            return max(w, self.mtu)
        if bug == "mtu-wins":
            return max(min(w, fair), self.mtu)
        return min(max(w, self.mtu), fair)


# --- sender -----------------------------------------------------------------------------------

class Sender:
    """RCC-1: window = the last cwnd an ACK or NAK carried; R = min(floor(cwnd*8e9/T), C)."""

    STATE = ["cwnd"]

    def __init__(self, params, bug):
        p = merge({"line_rate_bps": 100_000_000_000, "base_rtt_ns": 12_000, "mtu_bytes": 1000},
                  params)
        check_common(p)
        self.c = p["line_rate_bps"]
        self.t = p["base_rtt_ns"]
        self.mtu = p["mtu_bytes"]
        self.bug = bug
        self.window = {}  # flow -> current window
        self.last_cwnd = {}  # flow -> cwnd of the previous ACK (stale-cwnd)
        self.updated = {}  # flow -> time of the last update (window-per-rtt)

    def rate(self, w):
        t = self.t
        if self.bug == "t-whole-us":
            t = max(t // 1000, 1) * 1000
        num = w * BITS_NS_PER_BYTE_S
        r = (2 * num + t) // (2 * t) if self.bug == "rate-round" else num // t
        return r if self.bug == "no-rate-cap" else min(r, self.c)

    def on_event(self, ev):
        kind = ev["kind"]
        if kind not in ("rx_ack", "rx_nak"):
            return []
        cwnd = ev.get("cwnd")
        if cwnd is None:
            return []  # no RCC extension: nothing to apply
        if kind == "rx_nak" and self.bug == "nak-ignored":
            return []
        f = ev["flow"]
        bug = self.bug
        start = self.c * self.t // BITS_NS_PER_BYTE_S  # the start window C*T/8e9 (III-B)
        w = cwnd
        if bug == "stale-cwnd":
            w = self.last_cwnd.get(f, cwnd)
            self.last_cwnd[f] = cwnd
        elif bug == "window-per-rtt":
            last = self.updated.get(f)
            if last is not None and ev["t"] - last < self.t:
                w = self.window[f]
            else:
                self.updated[f] = ev["t"]
        elif bug == "window-in-mtus":
            w = max(cwnd // self.mtu, 1) * self.mtu
        elif bug == "min-one-mtu":
            w = max(cwnd, self.mtu)
        elif bug == "no-grow":
            w = min(cwnd, self.window.get(f, start))
        self.window[f] = w
        return [{
            "t": ev["t"],
            "flow": f,
            "cause": {"kind": kind, "index": ev["index"]},
            "rate_bps": self.rate(w),
            "window_bytes": w,
            "state": {"cwnd": w},
        }]


def make(model, params, bug):
    if model == "rcc-receiver":
        if bug is not None and bug not in RECEIVER_BUGS:
            raise ParamError("bug `%s` is a sender bug; this run is rcc-receiver" % bug)
        return Receiver(params, bug)
    if model == "rcc-sender":
        if bug is not None and bug not in SENDER_BUGS:
            raise ParamError("bug `%s` is a receiver bug; this run is rcc-sender" % bug)
        return Sender(params, bug)
    raise ParamError("this DUT implements `rcc-receiver` and `rcc-sender`, not `%s`" % model)


def send(obj):
    sys.stdout.write(json.dumps(obj, allow_nan=False))
    sys.stdout.write("\n")
    sys.stdout.flush()


def report(line):
    print(line, file=sys.stderr, flush=True)
    path = os.environ.get("DUT_BUG_LOG")
    if path:
        with open(path, "w") as f:
            f.write(line + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bug", choices=sorted(BUGS), help="enable one deliberate bug (BUGS above)")
    args = ap.parse_args()
    bug = args.bug

    model = shadow = None  # shadow: the correct model beside a mutant
    acted = False
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            print("rcc_dut.py: stdin closed", file=sys.stderr)
            return 0
        msg = json.loads(line)
        t = msg.get("type")
        if t == "hello":
            if msg.get("protocol") != PROTOCOL:
                send({"type": "error",
                      "message": "this DUT speaks protocol %d, got %r" % (PROTOCOL, msg.get("protocol"))})
                return 2
            try:
                model = make(msg.get("model"), msg.get("params") or {}, bug)
                if bug is not None:
                    shadow = make(msg.get("model"), msg.get("params") or {}, None)
            except ParamError as e:
                send({"type": "error", "message": str(e)})
                return 2
            name = "rcc-py" + ("+bug-" + bug if bug else "")
            send({"type": "hello", "protocol": PROTOCOL, "name": name})
        elif t == "event" and model is not None:
            out = model.on_event(msg)
            if shadow is not None:
                want = shadow.on_event(msg)
                # Compared as written (json: -0.0 and 0.0 differ, as the harness sees them).
                if not acted and json.dumps(out) != json.dumps(want):
                    acted = True
                    report("bug first acts at event %d of flow %d (%s, t = %d ns)"
                           % (msg["index"], msg["flow"], msg["kind"], msg["t"]))
            send({"type": "decisions", "decisions": out})
        elif t == "finish" and model is not None:
            send({"type": "decisions", "decisions": []})  # RCC has no timers (C-5)
            return 0
        else:
            send({"type": "error", "message": "unexpected message type %r" % t})
            return 2


if __name__ == "__main__":
    sys.exit(main())
