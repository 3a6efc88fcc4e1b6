#!/usr/bin/env python3
"""A DCQCN reaction point (sender, paper profile: DCQCN paper section 3.1 eqs. 1-4 and
Figure 7; ccreplay rule DCQCN-3) as a ccreplay device under test speaking the process protocol
(docs/dut.md) on stdin / stdout, for the model `dcqcn`.

Written from the model page docs/models/dcqcn.md (rows R1-R8 and its "Choices"), not from the
Rust reference (reference-cc/src/dcqcn/): rates are Python ints (exact), alpha an IEEE double
with the operations of R1 and R2 in the order they are written, so its decisions are
bit-identical to the reference's. Like every external DUT it fires its own timers (docs/dut.md
rule 2): before an event it answers with the decisions of the timers due at or before the
event's time.

    python3 examples/duts/dcqcn_dut.py                  # correct
    python3 examples/duts/dcqcn_dut.py --bug NAME       # one of BUGS below

Standard library only. Logs go to stderr; stdout carries protocol replies only.
"""

import argparse
import json
import math
import sys

PROTOCOL = 1
U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1
MAX_LINE_RATE_BPS = 10**13  # 10 Tbps (docs/models/dcqcn.md parameters)
MAX_TIME_US = 10**9
NS_PER_US = 1000
BPS_PER_MBPS = 10**6

STATE_NAMES = ["Rc", "Rt", "alpha", "timer_stage", "byte_stage", "byte_counter"]

# Single-bug variants (`--bug NAME`): mistakes a NIC firmware team makes, each one line away
# from DCQCN-3. harness/tests/mutants.rs runs every one over the bundled DCQCN trace;
# docs/conformance.md says which the suite catches and what it would take to catch the others.
BUGS = {
    "alpha-per-period": "alpha raised once per alpha period with a CNP in it (NIC style), not on every CNP (R1, R2)",
    "alpha-timer-not-reset": "the alpha timer is not restarted by a CNP: it decays alpha every K from the first CNP (R1, R2)",
    "cut-new-alpha": "the cut uses the alpha after this CNP's update, not the one before (R1 order)",
    "timer-not-reset": "the rate-increase timer is not restarted by a cut (R1, R3)",
    "bc-not-reset": "the byte counter is not reset by a cut (R1, R3)",
    "rt-not-reset": "a cut leaves Rt alone instead of Rt = Rc (R1)",
    "fr-off-by-one": "fast recovery while max(stages) <= F: F steps, not F - 1 (R4, choice 6)",
    "ai-on-rc": "the additive step added to Rc instead of Rt (R6)",
    "hai-step": "hyper increase adds i, not i * R_HAI (R5)",
    "hai-constant": "hyper increase adds R_HAI, not i * R_HAI (R5)",
    "no-line-clamp": "Rt not clamped at the line rate (R7)",
    "no-min-clamp": "the cut not clamped at the minimum rate (R1, R7)",
    "g-unit": "the alpha gain in the wrong fixed-point unit: g / 4, 1/1024 steps for a knob in 1/256 (R1, R2)",
    "cut-round": "the cut rounded to the nearest bps, not floored (R1, C-3)",
    "bc-no-remainder": "a byte-counter expiry zeroes the counter instead of keeping the remainder (R3, choice 7)",
    "count-before-cnp": "the byte counter runs before the flow's first CNP (choice 1)",
}


class ParamError(Exception):
    pass


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def add_deadline(t, period):
    """A deadline `period` ns after `t`, or None beyond u64 time (choice 13: never fires)."""
    d = t + period
    return d if d <= U64_MAX else None


class Params:
    """The `dcqcn` parameters of docs/models/dcqcn.md (RpParams), validated, in ns / bps."""

    DEFAULTS = {
        "line_rate_bps": 40_000_000_000,
        "base_rtt_ns": 0,  # accepted, unused
        "mtu_bytes": 0,  # accepted, unused
        "rpg_time_reset": 55,  # T, µs
        "rpg_byte_reset": 10_000_000,  # B, bytes
        "rpg_threshold": 5,  # F, stages
        "rpg_ai_rate": 40,  # R_AI, Mbps
        "rpg_hai_rate": 400,  # R_HAI, Mbps
        "rpg_min_rate": 1,  # Mbps
        "dce_tcp_g": 1.0 / 256.0,  # g
        "dce_tcp_rtt": 55,  # K, µs
        "initial_alpha_value": 1.0,
    }

    def __init__(self, given):
        p = dict(self.DEFAULTS)
        for k, v in given.items():
            if k not in p:
                raise ParamError("unknown parameter `%s` (known: %s)" % (k, ", ".join(p)))
            p[k] = v
        for k in ("line_rate_bps", "base_rtt_ns", "mtu_bytes", "rpg_time_reset", "rpg_byte_reset",
                  "rpg_ai_rate", "rpg_hai_rate", "rpg_min_rate", "dce_tcp_rtt"):
            if not (is_int(p[k]) and 0 <= p[k] <= U64_MAX):
                raise ParamError("parameter `%s` must be an unsigned integer" % k)
        if not (is_int(p["rpg_threshold"]) and 0 <= p["rpg_threshold"] <= U32_MAX):
            raise ParamError("parameter `rpg_threshold` must be a 32-bit unsigned integer")
        for k in ("dce_tcp_g", "initial_alpha_value"):
            if not is_num(p[k]):
                raise ParamError("parameter `%s` must be a number" % k)

        line = p["line_rate_bps"]
        if not 1 <= line <= MAX_LINE_RATE_BPS:
            raise ParamError("line_rate_bps must be in 1..=10^13 bps")
        self.line = line
        self.t_ns = self._time("rpg_time_reset", p)
        if p["rpg_byte_reset"] == 0:
            raise ParamError("rpg_byte_reset must be >= 1 byte")
        self.b = p["rpg_byte_reset"]
        if p["rpg_threshold"] == 0:
            raise ParamError("rpg_threshold must be >= 1")
        self.f = p["rpg_threshold"]
        self.ai = self._rate("rpg_ai_rate", p, 0)
        self.hai = self._rate("rpg_hai_rate", p, 0)
        self.min_rate = self._rate("rpg_min_rate", p, 1)
        g = float(p["dce_tcp_g"])
        if not (math.isfinite(g) and 0.0 < g <= 1.0):
            raise ParamError("dce_tcp_g must be in (0, 1]")
        self.g = g
        self.k_ns = self._time("dce_tcp_rtt", p)
        a0 = float(p["initial_alpha_value"])
        if not (math.isfinite(a0) and 0.0 <= a0 <= 1.0):
            raise ParamError("initial_alpha_value must be in [0, 1]")
        self.alpha0 = a0

    @staticmethod
    def _time(name, p):
        us = p[name]
        if not 1 <= us <= MAX_TIME_US:
            raise ParamError("%s must be in 1..=10^9 µs" % name)
        return us * NS_PER_US

    def _rate(self, name, p, lowest):
        mbps = p[name]
        if mbps < lowest or mbps * BPS_PER_MBPS > self.line:
            raise ParamError("%s must be in %d..=line_rate_bps / 10^6 Mbps" % (name, lowest))
        return mbps * BPS_PER_MBPS


class Flow:
    """One flow's reaction point: R8 at creation (line rate, no rate limiter yet)."""

    def __init__(self, fid, p, bug):
        self.fid = fid
        self.p = p
        self.bug = bug
        self.limited = False  # a CNP arrived: the rate limiter exists (choice 1)
        self.rc = p.line  # R_C
        self.rt = p.line  # R_T
        self.alpha = p.alpha0
        self.timer_stage = 0  # rate-increase timer expiries since the last cut
        self.byte_stage = 0  # byte-counter expiries since the last cut
        self.byte_counter = 0  # bytes towards the next expiry
        self.alpha_due = None  # alpha timer deadline, ns
        self.increase_due = None  # rate-increase timer deadline, ns
        self.cnp_in_period = False  # only for the bug alpha-per-period

    def next_due(self):
        due = [d for d in (self.alpha_due, self.increase_due) if d is not None]
        return min(due) if due else None

    def snapshot(self):
        return (self.rc, self.rt, self.alpha, self.timer_stage, self.byte_stage, self.byte_counter)

    def decision(self, t, cause):
        return {
            "t": t,
            "flow": self.fid,
            "cause": cause,
            "rate_bps": self.rc,
            "state": {
                "Rc": self.rc,
                "Rt": self.rt,
                "alpha": self.alpha,
                "timer_stage": self.timer_stage,
                "byte_stage": self.byte_stage,
                "byte_counter": self.byte_counter,
            },
        }

    # --- the gain g, as the firmware sees it -------------------------------------------
    def gain(self):
        return self.p.g / 4.0 if self.bug == "g-unit" else self.p.g

    # --- R1: a CNP ------------------------------------------------------------------------
    def on_cnp(self, t):
        p, bug = self.p, self.bug
        first = not self.limited
        self.limited = True
        g = self.gain()
        a_before = self.alpha
        a_after = (1.0 - g) * a_before + g  # eq. 1, in this order
        if bug == "alpha-per-period":
            a_after = a_before  # raised at the end of the period instead
            self.cnp_in_period = True
        a_cut = a_after if bug == "cut-new-alpha" else a_before
        product = float(self.rc) * (1.0 - a_cut / 2.0)  # R_C (1 - alpha/2), exact R_C in f64
        cut = math.floor(product + 0.5) if bug == "cut-round" else math.floor(product)
        if bug != "rt-not-reset":
            self.rt = self.rc  # R_T = R_C before the cut
        lowest = 0 if bug == "no-min-clamp" else p.min_rate
        self.rc = min(max(cut, lowest), p.line)
        self.alpha = a_after
        # Reset both stages and the byte counter; restart the rate-increase timer (t + T) and
        # the alpha timer (t + K).
        self.timer_stage = 0
        self.byte_stage = 0
        if bug != "bc-not-reset":
            self.byte_counter = 0
        if first or bug != "timer-not-reset":
            self.increase_due = add_deadline(t, p.t_ns)
        keep_alpha_phase = bug in ("alpha-timer-not-reset", "alpha-per-period")
        if first or not keep_alpha_phase or self.alpha_due is None:
            self.alpha_due = add_deadline(t, p.k_ns)

    # --- R3: the byte counter ---------------------------------------------------------------
    def on_tx(self, nbytes):
        """True when these bytes made the byte counter expire (one increase, R3-R7)."""
        if not self.limited and self.bug != "count-before-cnp":
            return False  # choice 1: nothing is counted before the first CNP
        self.byte_counter = min(self.byte_counter + nbytes, U64_MAX)
        if self.byte_counter < self.p.b:
            return False
        # At most one expiry per packet; the remainder stays (choice 7).
        self.byte_counter = 0 if self.bug == "bc-no-remainder" else self.byte_counter - self.p.b
        self.byte_stage = min(self.byte_stage + 1, U32_MAX)
        self.increase()
        return True

    # --- R4-R7: one increase, on the already advanced stages ----------------------------------
    def increase(self):
        p, bug = self.p, self.bug
        f = p.f
        most = max(self.timer_stage, self.byte_stage)
        least = min(self.timer_stage, self.byte_stage)
        fast = most <= f if bug == "fr-off-by-one" else most < f
        rc_step = 0
        if fast:
            pass  # R4 fast recovery: R_T stays
        elif least > f:
            i = least - f  # R5 hyper increase
            if bug == "hai-step":
                self.rt += i
            elif bug == "hai-constant":
                self.rt += p.hai
            else:
                self.rt += i * p.hai
        elif bug == "ai-on-rc":
            rc_step = p.ai  # R6, misapplied
        else:
            self.rt += p.ai  # R6 additive increase
        if bug != "no-line-clamp":
            self.rt = min(self.rt, p.line)  # R7
        rc = max((self.rt + self.rc) // 2 + rc_step, p.min_rate)  # floored (choice 8), R7
        self.rc = rc if bug == "no-line-clamp" else min(rc, p.line)

    # --- timers (R2, R3), alpha first (choice 9) ------------------------------------------------
    def fire(self, d):
        out = []
        if self.alpha_due == d:
            before = self.alpha
            g = self.gain()
            if self.bug == "alpha-per-period" and self.cnp_in_period:
                self.alpha = (1.0 - g) * self.alpha + g
            else:
                self.alpha = self.alpha * (1.0 - g)  # eq. 2
            self.cnp_in_period = False
            # At exactly 0 nothing more can change: the timer stops until the next CNP.
            self.alpha_due = None if self.alpha == 0.0 else add_deadline(d, self.p.k_ns)
            if self.alpha != before:  # alpha >= 0: equal values are equal bits
                out.append(self.decision(d, {"kind": "timer", "name": "alpha"}))
        if self.increase_due == d:
            before = self.snapshot()
            self.timer_stage = min(self.timer_stage + 1, U32_MAX)
            self.increase_due = add_deadline(d, self.p.t_ns)
            self.increase()
            if self.snapshot() != before:
                out.append(self.decision(d, {"kind": "timer", "name": "rate_increase"}))
        return out


class Dcqcn:
    """Every flow of the capture point, and the timers across them."""

    def __init__(self, params, bug):
        self.p = Params(params)
        self.bug = bug
        self.flows = {}

    def flow(self, fid):
        f = self.flows.get(fid)
        if f is None:
            f = self.flows[fid] = Flow(fid, self.p, self.bug)
        return f

    def fire_until(self, t):
        """Fire every timer due at or before `t`, earliest first; flows in id order on a tie."""
        out = []
        while True:
            due = [f.next_due() for f in self.flows.values()]
            due = [d for d in due if d is not None]
            if not due or min(due) > t:
                return out
            d = min(due)
            for fid in sorted(self.flows):
                fl = self.flows[fid]
                if fl.next_due() == d:
                    out.extend(fl.fire(d))

    def on_event(self, ev):
        out = self.fire_until(ev["t"])
        kind = ev["kind"]
        cause = {"kind": kind, "index": ev["index"]}
        if kind == "rx_cnp":
            fl = self.flow(ev["flow"])
            fl.on_cnp(ev["t"])
            out.append(fl.decision(ev["t"], cause))
        elif kind == "tx_data":
            fl = self.flow(ev["flow"])
            if fl.on_tx(ev["bytes"]):
                out.append(fl.decision(ev["t"], cause))
        # rx_ack, rx_nak, rx_data, dequeue: not inputs of a DCQCN sender
        return out


def send(obj):
    sys.stdout.write(json.dumps(obj, allow_nan=False))
    sys.stdout.write("\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bug", choices=sorted(BUGS), help="enable one deliberate bug (BUGS above)")
    args = ap.parse_args()
    bug = args.bug

    model = None
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            print("dcqcn_dut.py: stdin closed", file=sys.stderr)
            return 0
        msg = json.loads(line)
        t = msg.get("type")
        if t == "hello":
            if msg.get("protocol") != PROTOCOL:
                send({"type": "error",
                      "message": "this DUT speaks protocol %d, got %r" % (PROTOCOL, msg.get("protocol"))})
                return 2
            if msg.get("model") != "dcqcn":
                send({"type": "error", "message": "this DUT implements `dcqcn`, not `%s`" % msg.get("model")})
                return 2
            try:
                model = Dcqcn(msg.get("params") or {}, bug)
            except ParamError as e:
                send({"type": "error", "message": str(e)})
                return 2
            name = "dcqcn-py" + ("+bug-" + bug if bug else "")
            send({"type": "hello", "protocol": PROTOCOL, "name": name})
        elif t == "event" and model is not None:
            send({"type": "decisions", "decisions": model.on_event(msg)})
        elif t == "finish" and model is not None:
            send({"type": "decisions", "decisions": model.fire_until(msg["t"])})
            return 0
        else:
            send({"type": "error", "message": "unexpected message type %r" % t})
            return 2


if __name__ == "__main__":
    sys.exit(main())
