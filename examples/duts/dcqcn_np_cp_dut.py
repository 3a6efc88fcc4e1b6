#!/usr/bin/env python3
"""A DCQCN notification point (`dcqcn-np`) or congestion point (`dcqcn-cp`) as a ccreplay DUT.

The receiver's CNP pacing or one switch port's RED marking, speaking the process protocol
(docs/dut.md) on stdin / stdout.

Written from docs/models/dcqcn.md (NP table; CP1-CP3) and the DCQCN paper (section 3.1,
Figures 5-6, eq. 5), not from the Rust reference (reference-cc/src/dcqcn/np.rs, port.rs):

- `--model np`: per flow, a CE-marked `rx_data` (ECN 3) sends a CNP at once when the flow has
  sent none, or `t - last_cnp >= N` (`min_time_between_cnps`, µs); otherwise the mark is
  remembered and timer `cnp_interval`, due at `last_cnp + N`, sends one CNP that opens the next
  interval (DCQCN-2). Like every external DUT it fires its own timers (docs/dut.md rule 2),
  before an event at the same ns (C-5), flows in id order on a tie.
- `--model cp`: every `dequeue` with a queue length q gets `mark_ce`: eq. 5's p in IEEE doubles
  in the order the paper writes it, `(q - Kmin) / (Kmax - Kmin) * Pmax` (C-3), one draw of the
  port's SplitMix64 (Python ints masked to 64 bits; high 32 bits) only when 0 < p < 1, marked
  iff u / 2^32 < p (CP1-CP3). Decisions are bit-identical to the reference's.

    python3 examples/duts/dcqcn_np_cp_dut.py --model np [--bug NAME]   # NP_BUGS
    python3 examples/duts/dcqcn_np_cp_dut.py --model cp [--bug NAME]   # CP_BUGS

With `--bug`, a correct model runs beside the mutated one on the same requests; at the first
request whose replies differ (a decision's time, flow, cause, output or state) the script
writes `bug first acts at event N (flow F, index I)` to stderr, N the 0-based position of
that event among the events it received, F and I the event's flow and index (the differing
decisions are the event's own or those of timers due after the previous event, up to its
time); when the first difference is in the timers fired by the final `finish` request,
`bug first acts at finish (after N events)`. Once, then never again; the same line also goes
into the file the environment variable DUT_BUG_LOG names, when set (the harness keeps a DUT's
stderr to itself). The format is examples/duts/dcqcn_dut.py's.

Standard library only. Logs go to stderr; stdout carries protocol replies only.
"""

import argparse
import json
import math
import os
import sys

PROTOCOL = 1
U64 = (1 << 64) - 1
MAX_LINE_RATE_BPS = 10**13  # 10 Tbps (docs/models/dcqcn.md parameters)
MAX_TIME_US = 10**9
NS_PER_US = 1000
ECN_CE = 3  # RFC 3168
TWO_32 = 4294967296.0

# Single-bug variants of the NP (`--model np --bug NAME`): CNP pacing mistakes, each a line
# away from DCQCN-2. harness/tests/mutants_np_cp.rs runs every one over traces/dcqcn_np.
NP_BUGS = {
    "interval-gt": "a mark exactly N after the last CNP is held: t - last > N, not >= (DCQCN-2)",
    "interval-ms": "min_time_between_cnps read in ms instead of µs (unit slip)",
    "first-mark-waits": "a flow's first mark opens an interval instead of sending a CNP at once",
    "timer-forgets-mark": "the interval's end clears the pending mark without sending its CNP",
    "cnp-per-mark": "a CNP for every CE-marked packet, the interval ignored",
    "ce-any-ect": "any ECN-capable codepoint (ecn != 0) taken for CE",
    "ce-ect1": "CE tested as one bit (ecn & 1), which ECT(1) also sets",
    "timer-from-mark": "the pending CNP timer armed N after the mark, not N after the last CNP",
    "interval-per-host": "one pacing interval for the host (all flows), not one per flow",
    "timer-cnp-no-interval": "a CNP sent by the timer does not open a new interval",
    "unmarked-clears": "an unmarked packet clears a pending mark (the last packet's CE bit kept)",
}

# Single-bug variants of the CP (`--model cp --bug NAME`): RED / generator mistakes, each a
# line away from DCQCN-1 (eq. 5, CP1-CP3). harness/tests/mutants_np_cp.rs runs every one over
# traces/dcqcn_cp.
CP_BUGS = {
    "kmin-lt": "q < Kmin for no marking: q = Kmin falls onto the ramp, which draws (p = 0: no mark, the generator out of step)",
    "kmax-lt": "q < Kmax for the ramp: at q = Kmax p = 1 (marked, no draw), not Pmax",
    "p-scaled-first": "p = (q - Kmin) * Pmax / (Kmax - Kmin): eq. 5 reordered, last-bit differences (C-3)",
    "draw-always": "a draw for every packet, also at p = 0 and p = 1 (generator out of step)",
    "draw-at-p1": "a draw also at p = 1 (above Kmax), marked anyway (generator out of step)",
    "rng-per-flow": "a generator per flow (each seeded with the seed), not one per port",
    "thresholds-kb": "kmin_bytes and kmax_bytes read in KB (x 1000)",
    "no-pmax": "Pmax left out of the ramp: p reaches 1 at Kmax",
    "u-low-bits": "the draw takes the low 32 bits of SplitMix64, not the high",
    "qlen-with-packet": "q counts the leaving packet's own frame bytes too",
}


class ParamError(Exception):
    pass


def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= U64


def take(given, defaults):
    p = dict(defaults)
    for k, v in given.items():
        if k not in p:
            raise ParamError("unknown parameter `%s` (known: %s)" % (k, ", ".join(p)))
        p[k] = v
    return p


# --- NP: CNP generation (DCQCN-2) ------------------------------------------------------------

NP_DEFAULTS = {
    "line_rate_bps": 40_000_000_000,  # validated, unused
    "base_rtt_ns": 0,  # accepted, unused
    "mtu_bytes": 0,  # accepted, unused
    "min_time_between_cnps": 50,  # N, µs
}


class NpFlow:
    def __init__(self):
        self.last_cnp = None  # ns of the last CNP sent
        self.pending = False  # a mark arrived within the interval
        self.deadline = None  # end of the interval with a pending mark


class Np:
    """Every flow of the receiver; a decision per CNP sent."""

    def __init__(self, given, bug):
        p = take(given, NP_DEFAULTS)
        for k, v in p.items():
            if not is_uint(v):
                raise ParamError("parameter `%s` must be an unsigned integer" % k)
        if not 1 <= p["line_rate_bps"] <= MAX_LINE_RATE_BPS:
            raise ParamError("line_rate_bps must be in 1..=10^13 bps (10 Tbps)")
        us = p["min_time_between_cnps"]
        if us > MAX_TIME_US:
            raise ParamError("min_time_between_cnps must be in 0..=10^9 µs")
        self.n = us * (1_000_000 if bug == "interval-ms" else NS_PER_US)
        self.bug = bug
        self.flows = {}
        self.host = NpFlow()  # the bug interval-per-host: the one last_cnp of the host

    def pacing(self, fl):
        """The state holding last_cnp: the flow's, or the host's (interval-per-host)."""
        return self.host if self.bug == "interval-per-host" else fl

    def send(self, t, fid, fl, cause, opens=True):
        if opens:
            self.pacing(fl).last_cnp = t
        fl.pending = False
        fl.deadline = None
        return {"t": t, "flow": fid, "cause": cause, "send_cnp": True,
                "state": {"last_cnp_ns": t, "pending_mark": False}}

    def fire_until(self, t):
        """Fire every cnp_interval timer due at or before t, earliest first, flows in id order
        on a tie (C-5)."""
        out = []
        while True:
            due = [f.deadline for f in self.flows.values() if f.deadline is not None]
            if not due or min(due) > t:
                return out
            d = min(due)
            for fid in sorted(self.flows):
                fl = self.flows[fid]
                if fl.deadline != d:
                    continue
                if fl.pending and self.bug != "timer-forgets-mark":
                    opens = self.bug != "timer-cnp-no-interval"
                    out.append(self.send(d, fid, fl, {"kind": "timer", "name": "cnp_interval"}, opens))
                else:
                    fl.pending = False
                    fl.deadline = None

    def is_ce(self, ecn):
        if self.bug == "ce-any-ect":
            return ecn != 0
        if self.bug == "ce-ect1":
            return ecn & 1 == 1
        return ecn == ECN_CE

    def on_event(self, ev):
        out = self.fire_until(ev["t"])
        if ev["kind"] != "rx_data":
            return out  # not an NP input
        fid, t = ev["flow"], ev["t"]
        fl = self.flows.get(fid)
        if not self.is_ce(ev.get("ecn", 0)):
            if fl is not None and self.bug == "unmarked-clears":
                fl.pending = False  # its deadline stays: the timer finds nothing pending
            return out
        if fl is None:
            fl = self.flows[fid] = NpFlow()
        cause = {"kind": "rx_data", "index": ev["index"]}
        last = self.pacing(fl).last_cnp
        if last is None and self.bug == "first-mark-waits":
            self.pacing(fl).last_cnp = t  # the interval starts at the mark, no CNP
            last = t
        if last is None or self.bug == "cnp-per-mark":
            out.append(self.send(t, fid, fl, cause))
            return out
        if self.bug == "interval-gt":
            within = t < last or t - last <= self.n
        else:
            within = t < last or t - last < self.n  # out-of-order input: inside its interval
        if not within:
            out.append(self.send(t, fid, fl, cause))
            return out
        fl.pending = True
        start = t if self.bug == "timer-from-mark" else last
        d = start + self.n
        fl.deadline = d if d <= U64 else None  # choice 13: beyond u64 time, never ends
        return out


# --- CP: RED marking at one switch port (DCQCN-1) ------------------------------------------------

CP_DEFAULTS = {
    "kmin_bytes": 5_000,  # Kmin (seed 001 section 5.2; KB read as 10^3 bytes)
    "kmax_bytes": 200_000,  # Kmax
    "pmax": 0.01,  # Pmax
    "seed": 0,  # of the port's SplitMix64
    "line_rate_bps": 0,  # accepted, unused
    "base_rtt_ns": 0,  # accepted, unused
    "mtu_bytes": 0,  # accepted, unused
}


class SplitMix64:
    """Steele, Lea, Flood (OOPSLA 2014), CP3: wrapping u64 arithmetic as Python ints & U64."""

    def __init__(self, seed):
        self.s = seed

    def next_u64(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & U64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & U64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64
        return z ^ (z >> 31)


class Cp:
    """One switch port: a decision per dequeue that carries the queue length."""

    def __init__(self, given, bug):
        p = take(given, CP_DEFAULTS)
        for k, v in p.items():
            if k != "pmax" and not is_uint(v):
                raise ParamError("parameter `%s` must be an unsigned integer" % k)
        pmax = p["pmax"]
        if isinstance(pmax, bool) or not isinstance(pmax, (int, float)):
            raise ParamError("parameter `pmax` must be a number")
        pmax = float(pmax)
        if p["kmin_bytes"] > p["kmax_bytes"]:
            raise ParamError("kmin_bytes must be <= kmax_bytes")
        if not (math.isfinite(pmax) and 0.0 <= pmax <= 1.0):
            raise ParamError("pmax must be in [0, 1]")
        scale = 1000 if bug == "thresholds-kb" else 1
        self.kmin = p["kmin_bytes"] * scale
        self.kmax = p["kmax_bytes"] * scale
        self.pmax = pmax
        self.seed = p["seed"]
        self.bug = bug
        self.rng = SplitMix64(self.seed)  # one per port (DCQCN-1: the switch owns it)
        self.per_flow = {}  # the bug rng-per-flow

    def p(self, q):
        """CP1 (eq. 5): f64 in the order the paper writes it."""
        bug = self.bug
        if q < self.kmin if bug == "kmin-lt" else q <= self.kmin:
            return 0.0
        if q < self.kmax if bug == "kmax-lt" else q <= self.kmax:
            if q == self.kmin:
                return 0.0  # only kmin-lt gets here: the ramp's foot (Kmin = Kmax: no 0 / 0)
            # Python's int / int rounds the exact quotient; Rust's `as f64` rounds each
            # operand first: float() both, as the reference does.
            num, den = float(q - self.kmin), float(self.kmax - self.kmin)
            if bug == "p-scaled-first":
                return num * self.pmax / den
            if bug == "no-pmax":
                return num / den
            return num / den * self.pmax
        return 1.0

    def draw(self, flow):
        """CP2: the next u32 of the port's generator (its high half, CP3)."""
        rng = self.rng
        if self.bug == "rng-per-flow":
            rng = self.per_flow.setdefault(flow, SplitMix64(self.seed))
        z = rng.next_u64()
        return z & 0xFFFFFFFF if self.bug == "u-low-bits" else z >> 32

    def on_event(self, ev):
        if ev["kind"] != "dequeue" or ev.get("qlen_bytes") is None:
            return []  # nothing to decide on, no draw
        q = ev["qlen_bytes"]
        if self.bug == "qlen-with-packet":
            q += ev.get("bytes", 0)
        p = self.p(q)
        bug = self.bug
        if bug == "draw-always" or (bug == "draw-at-p1" and p >= 1.0):
            u = self.draw(ev["flow"])
            mark = p >= 1.0 or (p > 0.0 and u / TWO_32 < p)
        elif bug == "kmin-lt" and q == self.kmin:
            # The firmware draws wherever q is on its ramp, and its ramp begins at Kmin.
            self.draw(ev["flow"])
            mark = False
        elif p <= 0.0:
            mark = False
        elif p >= 1.0:
            mark = True
        else:
            mark = self.draw(ev["flow"]) / TWO_32 < p  # exact: a 32-bit int over 2^32
        return [{"t": ev["t"], "flow": ev["flow"], "cause": {"kind": "dequeue", "index": ev["index"]},
                 "mark_ce": mark, "state": {"q": q, "p": p}}]

    def fire_until(self, t):
        return []  # no timers


MODELS = {"np": ("dcqcn-np", Np, NP_BUGS), "cp": ("dcqcn-cp", Cp, CP_BUGS)}


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
    ap.add_argument("--model", choices=("np", "cp"), required=True,
                    help="np: `dcqcn-np` (NP_BUGS); cp: `dcqcn-cp` (CP_BUGS)")
    ap.add_argument("--bug", help="enable one deliberate bug: a name of NP_BUGS (np) or CP_BUGS (cp)")
    args = ap.parse_args()
    model_name, new_model, bugs = MODELS[args.model]
    bug = args.bug
    if bug is not None and bug not in bugs:
        ap.error("--bug %s: not a bug of --model %s (choose from %s)"
                 % (bug, args.model, ", ".join(sorted(bugs))))

    model = None
    first_act = None
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            print("dcqcn_np_cp_dut.py: stdin closed", file=sys.stderr)
            return 0
        try:
            msg = json.loads(line)
        except ValueError as e:
            send({"type": "error", "message": "not JSON: %s" % e})
            return 2
        t = msg.get("type") if isinstance(msg, dict) else None
        if t == "hello":
            if msg.get("protocol") != PROTOCOL:
                send({"type": "error",
                      "message": "this DUT speaks protocol %d, got %r" % (PROTOCOL, msg.get("protocol"))})
                return 2
            if msg.get("model") != model_name:
                send({"type": "error", "message": "this DUT implements `%s` (--model %s), not `%s`"
                      % (model_name, args.model, msg.get("model"))})
                return 2
            params = msg.get("params") or {}
            try:
                model = new_model(params, bug)
                if bug:
                    first_act = FirstAct(new_model(params, None))
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
