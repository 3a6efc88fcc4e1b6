#!/usr/bin/env python3
"""A DCQCN reaction point (sender) as a ccreplay device under test speaking the process protocol
(docs/dut.md) on stdin / stdout: the paper profile (DCQCN paper section 3.1 eqs. 1-4 and
Figure 7; ccreplay rule DCQCN-3) for the model `dcqcn`, or with `--profile nic` the NIC
firmware profile (DCQCN-4, C-4) for the model `dcqcn-nic`.

Written from the model page docs/models/dcqcn.md (rows R1-R8, N1-N6 and its "Choices"), not
from the Rust reference (reference-cc/src/dcqcn/): rates are Python ints (exact), the paper
profile's alpha an IEEE double with the operations of R1 and R2 in the order they are written,
the NIC profile's alpha a 10-bit fixed-point int, so its decisions are bit-identical to the
reference's. Like every external DUT it fires its own timers (docs/dut.md rule 2): before an
event it answers with the decisions of the timers due at or before the event's time.

    python3 examples/duts/dcqcn_dut.py                             # correct, paper profile
    python3 examples/duts/dcqcn_dut.py --bug NAME                  # one of BUGS below
    python3 examples/duts/dcqcn_dut.py --profile nic [--bug NAME]  # dcqcn-nic, NIC_BUGS

With `--bug`, a correct model runs beside the mutated one on the same requests; at the first
request whose replies differ (a decision's time, flow, cause, rate or state) the script writes
`bug first acts at event N (flow F, index I)` to stderr, N the 0-based position of that event
among the events it received, F and I the event's flow and index (the differing decisions are
the event's own or those of timers due after the previous event, up to its time); when the
first difference is in the timers fired by the final `finish` request,
`bug first acts at finish (after N events)`. Once, then never again; the same line also goes
into the file the environment variable DUT_BUG_LOG names, when set (the harness keeps a DUT's
stderr to itself).

Standard library only. Logs go to stderr; stdout carries protocol replies only.
"""

import argparse
import json
import math
import os
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
    "alpha-per-packet": "alpha decays (eq. 2) on every packet sent instead of on the alpha timer (R2)",
    "stage-not-reset": "a cut resets the byte counter but not the two stage counters (R1, R3)",
    "hyper-on-max": "hyper increase once either stage passes F, i = max(stages) - F, not min (R5)",
    "bc-multi-expiry": "one packet expires the byte counter as often as it holds B, not once (R3, choice 7)",
}

# The NIC profile's (`--profile nic`, model `dcqcn-nic`) single-bug variants: DCQCN-4's
# periodic alpha update and rate-reduction check, its fixed point and its first CNP.
NIC_BUGS = {
    "cut-on-cnp": "every later CNP cuts at once (the paper's way), not once per monitor period (N5)",
    "alpha-ceil": "alpha's G alpha / 1024 rounded up, not floored (N1, C-4)",
    "no-alpha-cap": "alpha not capped at 1023 after a rise (N1)",
    "min-dec-fac-ignored": "the cut is Rc alpha >> rpg_gd alone, without the rpg_min_dec_fac bound (N2)",
    "cut-round-up": "the reduction rounded up, not floored (N2, C-3)",
    "no-min-clamp": "the cut not clamped at rpg_min_rate (N4)",
    "clamp-ignores-bytes": "Rt = Rc before a cut ignores byte-counter increases (N3)",
    "timer-not-reset": "a cut does not restart the rate-increase timer (N4)",
    "first-cnp-cuts": "with rate_to_set_on_first_cnp > 0 the first CNP is also flagged for a cut (choice 10)",
    "first-cnp-raises-alpha": "the first CNP counts as a CNP of the first alpha period (choice 10)",
    "timers-not-phased": "an idle periodic timer is re-armed a period after the CNP, off its phase (choice 11)",
    "increase-before-cut": "an increase due at the ns of a cut runs before it instead of being superseded (choice 9)",
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
        if bug != "stage-not-reset":
            self.timer_stage = 0
            self.byte_stage = 0
        if bug != "bc-not-reset":
            self.byte_counter = 0
        if first or bug != "timer-not-reset":
            self.increase_due = add_deadline(t, p.t_ns)
        keep_alpha_phase = bug in ("alpha-timer-not-reset", "alpha-per-period")
        if bug == "alpha-per-packet":
            pass  # no alpha timer: on_tx decays alpha
        elif first or not keep_alpha_phase or self.alpha_due is None:
            self.alpha_due = add_deadline(t, p.k_ns)

    # --- R3: the byte counter ---------------------------------------------------------------
    def on_tx(self, nbytes):
        """True when these bytes made the byte counter expire (one increase, R3-R7)."""
        if not self.limited and self.bug != "count-before-cnp":
            return False  # choice 1: nothing is counted before the first CNP
        if self.bug == "alpha-per-packet" and self.limited:
            self.alpha = self.alpha * (1.0 - self.gain())
        self.byte_counter = min(self.byte_counter + nbytes, U64_MAX)
        if self.byte_counter < self.p.b:
            return False
        # At most one expiry per packet; the remainder stays (choice 7).
        expiries = self.byte_counter // self.p.b if self.bug == "bc-multi-expiry" else 1
        for _ in range(expiries):
            self.byte_counter = 0 if self.bug == "bc-no-remainder" else self.byte_counter - self.p.b
            self.byte_stage = min(self.byte_stage + 1, U32_MAX)
            self.increase()
        return True

    # --- R4-R7: one increase, on the already advanced stages ----------------------------------
    def increase(self):
        increase(self, self.p, self.bug)

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


def increase(fl, p, bug):
    """R4-R7: one increase of flow `fl` (its rc, rt and two stages), classified on the already
    advanced stages; `bug` one of BUGS, or None. Both profiles run it (DCQCN-4 reuses it)."""
    f = p.f
    most = max(fl.timer_stage, fl.byte_stage)
    least = min(fl.timer_stage, fl.byte_stage)
    fast = most <= f if bug == "fr-off-by-one" else most < f
    rc_step = 0
    if fast:
        pass  # R4 fast recovery: R_T stays
    elif bug == "hyper-on-max" and most > f:
        fl.rt += (most - f) * p.hai  # hyper as soon as one counter passes F
    elif least > f:
        i = least - f  # R5 hyper increase
        if bug == "hai-step":
            fl.rt += i
        elif bug == "hai-constant":
            fl.rt += p.hai
        else:
            fl.rt += i * p.hai
    elif bug == "ai-on-rc":
        rc_step = p.ai  # R6, misapplied
    else:
        fl.rt += p.ai  # R6 additive increase
    if bug != "no-line-clamp":
        fl.rt = min(fl.rt, p.line)  # R7
    rc = max((fl.rt + fl.rc) // 2 + rc_step, p.min_rate)  # floored (choice 8), R7
    fl.rc = rc if bug == "no-line-clamp" else min(rc, p.line)


ALPHA_ONE = 1024  # alpha = 1.0 in the NIC's 10-bit fixed point (C-4)
ALPHA_MAX = 1023  # the largest alpha the 10-bit field holds
BYTE_RESET_UNIT = 64  # rpg_byte_reset counts 64-byte units (choice 12)
NIC_STATE_NAMES = STATE_NAMES + ["alpha_cnp_arrived", "decrease_cnp_arrived"]


class NicParams:
    """The `dcqcn-nic` parameters of docs/models/dcqcn.md (NicParams: NVIDIA's knobs and
    defaults), validated, in ns / bps / bytes."""

    DEFAULTS = {
        "line_rate_bps": 100_000_000_000,
        "base_rtt_ns": 0,  # accepted, unused
        "mtu_bytes": 0,  # accepted, unused
        "dce_tcp_g": 1019,  # G: 1 - g = G / 1024
        "dce_tcp_rtt": 1,  # alpha update period, µs
        "initial_alpha_value": 1023,
        "rate_to_set_on_first_cnp": 0,  # Mbps, 0 = keep the line rate
        "rpg_min_dec_fac": 50,  # %
        "rpg_min_rate": 1,  # Mbps
        "rpg_gd": 11,  # log2(Gd)
        "rate_reduce_monitor_period": 4,  # µs
        "clamp_tgt_rate": False,
        "clamp_tgt_rate_after_time_inc": True,
        "rpg_time_reset": 300,  # T, µs
        "rpg_byte_reset": 32767,  # B, 64-byte units
        "rpg_threshold": 1,  # F
        "rpg_ai_rate": 5,  # Mbps
        "rpg_hai_rate": 50,  # Mbps
    }

    def __init__(self, given):
        p = dict(self.DEFAULTS)
        for k, v in given.items():
            if k not in p:
                raise ParamError("unknown parameter `%s` (known: %s)" % (k, ", ".join(p)))
            p[k] = v
        for k, v in p.items():
            if k.startswith("clamp_"):
                if not isinstance(v, bool):
                    raise ParamError("parameter `%s` must be a boolean" % k)
            elif not (is_int(v) and 0 <= v <= U64_MAX):
                raise ParamError("parameter `%s` must be an unsigned integer" % k)
        line = p["line_rate_bps"]
        if not 1 <= line <= MAX_LINE_RATE_BPS:
            raise ParamError("line_rate_bps must be in 1..=10^13 bps")
        self.line = line
        if p["dce_tcp_g"] > ALPHA_MAX:
            raise ParamError("dce_tcp_g must be in 0..=1023")
        self.g = p["dce_tcp_g"]
        self.alpha_period = Params._time("dce_tcp_rtt", p)
        if p["initial_alpha_value"] > ALPHA_MAX:
            raise ParamError("initial_alpha_value must be in 0..=1023")
        self.alpha0 = p["initial_alpha_value"]
        self.first_rate = Params._rate(self, "rate_to_set_on_first_cnp", p, 0)
        if p["rpg_min_dec_fac"] > 100:
            raise ParamError("rpg_min_dec_fac must be in 0..=100")
        self.min_dec_fac = p["rpg_min_dec_fac"]
        self.min_rate = Params._rate(self, "rpg_min_rate", p, 1)
        if p["rpg_gd"] > 31:
            raise ParamError("rpg_gd must be in 0..=31")
        self.gd = p["rpg_gd"]
        self.decrease_period = Params._time("rate_reduce_monitor_period", p)
        self.clamp_tgt = p["clamp_tgt_rate"]
        self.clamp_after_time = p["clamp_tgt_rate_after_time_inc"]
        self.t_ns = Params._time("rpg_time_reset", p)
        if not 1 <= p["rpg_byte_reset"] <= U32_MAX:
            raise ParamError("rpg_byte_reset must be in 1..=2^32-1 (64-byte units)")
        self.b = p["rpg_byte_reset"] * BYTE_RESET_UNIT
        if p["rpg_threshold"] == 0 or p["rpg_threshold"] > U32_MAX:
            raise ParamError("rpg_threshold must be in 1..=2^32-1")
        self.f = p["rpg_threshold"]
        self.ai = Params._rate(self, "rpg_ai_rate", p, 0)
        self.hai = Params._rate(self, "rpg_hai_rate", p, 0)


def next_phase_after(origin, period, t):
    """The first phase point origin + k * period (k >= 1) strictly after t (choice 11), or
    None beyond u64 time."""
    k = 1 if t < origin else (t - origin) // period + 1
    d = origin + k * period
    return d if d <= U64_MAX else None


class NicFlow:
    """One flow of the NIC profile (DCQCN-4): N1-N6 and choices 1, 9-12."""

    def __init__(self, fid, p, bug):
        self.fid = fid
        self.p = p
        self.bug = bug
        self.limited = False  # the first CNP allocated the rate limiter (choice 1)
        self.rc = p.line
        self.rt = p.line
        self.alpha = p.alpha0
        self.timer_stage = 0
        self.byte_stage = 0
        self.byte_counter = 0
        self.alpha_cnp = False  # a CNP arrived in this alpha period
        self.decrease_cnp = False  # a CNP waits for the next rate-decrease check
        self.origin = 0  # phase origin of both periodic timers: the first CNP
        self.alpha_due = None
        self.decrease_due = None
        self.increase_due = None

    def next_due(self):
        due = [d for d in (self.alpha_due, self.decrease_due, self.increase_due) if d is not None]
        return min(due) if due else None

    def snapshot(self):
        return (self.rc, self.rt, self.alpha, self.timer_stage, self.byte_stage,
                self.byte_counter, self.alpha_cnp, self.decrease_cnp)

    def decision(self, t, cause):
        return {
            "t": t,
            "flow": self.fid,
            "cause": cause,
            "rate_bps": self.rc,
            "state": dict(zip(NIC_STATE_NAMES, self.snapshot())),
        }

    def reset_increase(self, t):
        """After a cut (N4) or the first CNP: both stages and the byte counter to 0, the
        rate-increase timer restarted."""
        self.timer_stage = 0
        self.byte_stage = 0
        self.byte_counter = 0
        self.increase_due = add_deadline(t, self.p.t_ns)

    def rearm(self, period, t):
        """An idle periodic timer, needed again by a CNP at t: its next phase point (choice 11)."""
        if self.bug == "timers-not-phased":
            return add_deadline(t, period)
        return next_phase_after(self.origin, period, t)

    def on_cnp(self, t):
        p, bug = self.p, self.bug
        if not self.limited:
            # Choice 10: the first CNP allocates the rate limiter; both periodic timers take
            # their phase from it.
            self.limited = True
            self.origin = t
            self.alpha = p.alpha0
            self.alpha_cnp = bug == "first-cnp-raises-alpha"
            if p.first_rate > 0:
                self.rc = self.rt = max(p.first_rate, p.min_rate)  # R7
                self.decrease_cnp = bug == "first-cnp-cuts"
            else:
                self.decrease_cnp = True  # cut from the line rate at the first check
            self.reset_increase(t)
            self.alpha_due = add_deadline(t, p.alpha_period) if self.alpha > 0 or self.alpha_cnp else None
            self.decrease_due = add_deadline(t, p.decrease_period) if self.decrease_cnp else None
            return
        self.alpha_cnp = True
        if self.alpha_due is None:
            self.alpha_due = self.rearm(p.alpha_period, t)
        if bug == "cut-on-cnp":
            self.cut(t)
            return
        self.decrease_cnp = True
        if self.decrease_due is None:
            self.decrease_due = self.rearm(p.decrease_period, t)

    def on_tx(self, nbytes):
        """R3 as in the paper profile: after the first CNP, one expiry at most, remainder kept."""
        if not self.limited:
            return False
        self.byte_counter = min(self.byte_counter + nbytes, U64_MAX)
        if self.byte_counter < self.p.b:
            return False
        self.byte_counter -= self.p.b
        self.byte_stage = min(self.byte_stage + 1, U32_MAX)
        increase(self, self.p, None)
        return True

    def cut(self, t):
        """N2-N4: Rt = Rc when clamped, Rc reduced, floor, stages and timer restarted."""
        p, bug = self.p, self.bug
        by_bytes = self.byte_stage > 0 and bug != "clamp-ignores-bytes"
        if p.clamp_tgt or by_bytes or (p.clamp_after_time and self.timer_stage > 0):
            self.rt = self.rc  # N3
        if bug == "cut-round-up":
            by_alpha = -((-self.rc * self.alpha) >> p.gd)  # ceil
            by_fac = -((-self.rc * (100 - p.min_dec_fac)) // 100)
        else:
            by_alpha = (self.rc * self.alpha) >> p.gd  # N2, floored
            by_fac = self.rc * (100 - p.min_dec_fac) // 100
        reduction = by_alpha if bug == "min-dec-fac-ignored" else min(by_alpha, by_fac)
        rc = max(self.rc - reduction, 0)
        lowest = 0 if bug == "no-min-clamp" else p.min_rate
        self.rc = min(max(rc, lowest), p.line)  # N4
        self.decrease_cnp = False
        if bug == "timer-not-reset":
            due = self.increase_due
            self.reset_increase(t)
            self.increase_due = due
        else:
            self.reset_increase(t)

    def fire(self, d):
        """This flow's timers due at d: alpha, rate_decrease, rate_increase (choice 9)."""
        p, bug = self.p, self.bug
        out = []
        increase_first = bug == "increase-before-cut" and self.increase_due == d \
            and self.decrease_due == d and self.decrease_cnp
        if self.alpha_due == d:
            before = (self.alpha, self.alpha_cnp)
            if bug == "alpha-ceil":
                decayed = (p.g * self.alpha + ALPHA_ONE - 1) >> 10
            else:
                decayed = (p.g * self.alpha) >> 10  # N1: floor(G alpha / 1024)
            if self.alpha_cnp:
                raised = decayed + (ALPHA_ONE - p.g)
                self.alpha = raised if bug == "no-alpha-cap" else min(raised, ALPHA_MAX)
            else:
                self.alpha = decayed
            self.alpha_cnp = False
            # At 0 with no CNP the update changes nothing: idle until a CNP (choice 11).
            self.alpha_due = add_deadline(d, p.alpha_period) if self.alpha > 0 else None
            if (self.alpha, self.alpha_cnp) != before:
                out.append(self.decision(d, {"kind": "timer", "name": "alpha"}))
        if increase_first:
            out.extend(self.fire_increase(d))
        if self.decrease_due == d:
            self.decrease_due = None  # idle until a CNP needs it (choice 11)
            if self.decrease_cnp:
                self.cut(d)
                out.append(self.decision(d, {"kind": "timer", "name": "rate_decrease"}))
        if self.increase_due == d:
            out.extend(self.fire_increase(d))
        return out

    def fire_increase(self, d):
        before = self.snapshot()
        self.timer_stage = min(self.timer_stage + 1, U32_MAX)
        self.increase_due = add_deadline(d, self.p.t_ns)
        increase(self, self.p, None)
        if self.snapshot() != before:
            return [self.decision(d, {"kind": "timer", "name": "rate_increase"})]
        return []


class Dcqcn:
    """Every flow of the capture point, and the timers across them."""

    def __init__(self, params, bug, profile="paper"):
        if profile == "nic":
            self.p, self.new_flow = NicParams(params), NicFlow
        else:
            self.p, self.new_flow = Params(params), Flow
        self.bug = bug
        self.flows = {}

    def flow(self, fid):
        f = self.flows.get(fid)
        if f is None:
            f = self.flows[fid] = self.new_flow(fid, self.p, self.bug)
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


class FirstAct:
    """Where the bug first acts: a correct model beside the mutated one, fed the same requests;
    the first request whose replies differ is reported once, on stderr and into DUT_BUG_LOG."""

    def __init__(self, shadow):
        self.shadow = shadow
        self.events = 0  # event requests received so far
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
            self.report("bug first acts at event %d (flow %d, index %d)" % (n, msg["flow"], msg["index"]))

    def finish(self, t, decisions):
        if not self.reported and decisions != self.shadow.fire_until(t):
            self.report("bug first acts at finish (after %d events)" % self.events)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", choices=("paper", "nic"), default="paper",
                    help="paper: model `dcqcn` (BUGS); nic: model `dcqcn-nic` (NIC_BUGS)")
    ap.add_argument("--bug", help="enable one deliberate bug: a name of BUGS (paper) or NIC_BUGS (nic)")
    args = ap.parse_args()
    bug, profile = args.bug, args.profile
    bugs = NIC_BUGS if profile == "nic" else BUGS
    if bug is not None and bug not in bugs:
        ap.error("--bug %s: not a bug of the %s profile (choose from %s)"
                 % (bug, profile, ", ".join(sorted(bugs))))
    model_name = "dcqcn-nic" if profile == "nic" else "dcqcn"

    model = None
    first_act = None
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
            if msg.get("model") != model_name:
                send({"type": "error", "message": "this DUT implements `%s` (--profile %s), not `%s`"
                      % (model_name, profile, msg.get("model"))})
                return 2
            try:
                model = Dcqcn(msg.get("params") or {}, bug, profile)
                if bug:
                    first_act = FirstAct(Dcqcn(msg.get("params") or {}, None, profile))
            except ParamError as e:
                send({"type": "error", "message": str(e)})
                return 2
            name = model_name + "-py" + ("+bug-" + bug if bug else "")
            send({"type": "hello", "protocol": PROTOCOL, "name": name})
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
