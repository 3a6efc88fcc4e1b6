#!/usr/bin/env python3
"""An HPCC sender (HPCC paper Algorithm 1; ccreplay algorithms.md HPCC-1..8) as a ccreplay
device under test speaking the process protocol (docs/dut.md) on stdin / stdout.

Written independently of the Rust reference (reference-cc/src/hpcc.rs) from the same spec and
the model page docs/models/hpcc.md, with the same IEEE double operations in the same order, so
its decisions are bit-identical to the reference's. Python floats are IEEE doubles and
+ - * / are correctly rounded, as in Rust; ints are exact.

    python3 examples/duts/hpcc_dut.py                  # correct
    python3 examples/duts/hpcc_dut.py --bug wai-twice  # adds W_AI twice in COMPUTEWIND
    python3 examples/duts/hpcc_dut.py --bug NAME       # one of BUGS below

Standard library only. Logs go to stderr; stdout carries protocol replies only.
"""

import argparse
import json
import os
import sys

PROTOCOL = 1
PSN_MASK = 0xFFFFFF
TS_MASK = 0xFFFFFF
TX_MASK = 0xFFFFF
TX_UNIT = 128  # txBytes unit, bytes (wire.md 5.1)
QLEN_UNIT = 80  # qLen unit, bytes (wire.md 5.1)
BITS_NS_PER_BYTE_S = 8_000_000_000
MAX_EXACT = 1 << 53
U64_MAX = (1 << 64) - 1
# Line-rate codes 0..7 (wire.md 5.1), Gbps; 8..15 are reserved.
LINE_RATES_GBPS = [25, 50, 100, 200, 400, 800, 10, 40]

STATE_NAMES = ["W", "Wc", "U", "incStage", "lastUpdateSeq", "snd_nxt", "u", "tau"]


# Single-bug variants (`--bug NAME`): the mistakes real firmware makes, each one line away from
# Algorithm 1. harness/tests/mutants.rs runs every one over the bundled traces; docs/conformance.md
# says which the suite catches and why the others slip through.
BUGS = {
    "wai-twice": "W_AI added twice in COMPUTEWIND (lines 13 and 17)",
    "ts-nowrap": "INT ts delta without the 24-bit wrap (HPCC-2)",
    "tx-nowrap": "INT txBytes delta without the 20-bit wrap (HPCC-2)",
    "psn-nowrap": "ack.seq > lastUpdateSeq compared as integers, not 24-bit serial numbers (C-2)",
    "first-hop": "utilization of the first hop only, not the most loaded (lines 6-7)",
    "qlen-now": "qLen of the current record, not min(current, previous) (line 5)",
    "no-tau-clamp": "tau not clamped to T (line 8)",
    "wc-every-ack": "Wc updated on every ACK, not once per RTT (lines 14/18, 24)",
    "stage-off-by-one": "multiplicative decrease only once incStage > maxStage (line 12)",
    "round-window": "window rounded to the nearest byte, not floored (HPCC-6)",
    "txbytes-unit": "txBytes counted in bytes, not 128-byte units",
}


class ParamError(Exception):
    pass


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return (isinstance(v, (int, float))) and not isinstance(v, bool)


class Hpcc:
    """Parameters (C-7 names) and the per-flow state of Algorithm 1."""

    def __init__(self, params, bug):
        p = {
            "line_rate_bps": 100_000_000_000,
            "base_rtt_ns": 13_000,
            "mtu_bytes": 1000,
            "w_min_bytes": None,
            "eta": 0.95,
            "max_stage": 5,
            "w_ai_bytes": None,
            "expected_flows": 100,
            "reserved_line_rates": [],
        }
        for k, v in params.items():
            if k not in p:
                raise ParamError("unknown parameter `%s` (known: %s)" % (k, ", ".join(p)))
            p[k] = v
        u64 = lambda k: self._check(is_int(p[k]) and 0 <= p[k] <= U64_MAX, k, "an unsigned integer")
        for k in ("line_rate_bps", "base_rtt_ns", "mtu_bytes"):
            u64(k)
        for k in ("max_stage", "expected_flows"):
            self._check(is_int(p[k]) and 0 <= p[k] < (1 << 32), k, "a 32-bit unsigned integer")
        if p["w_min_bytes"] is not None:
            u64("w_min_bytes")
        self._check(is_num(p["eta"]), "eta", "a number")
        if p["w_ai_bytes"] is not None:
            self._check(is_num(p["w_ai_bytes"]), "w_ai_bytes", "a number")
        self._check(isinstance(p["reserved_line_rates"], list), "reserved_line_rates", "a list")

        if p["line_rate_bps"] == 0:
            raise ParamError("line_rate_bps must be > 0")
        if p["base_rtt_ns"] == 0 or p["base_rtt_ns"] > MAX_EXACT:
            raise ParamError("base_rtt_ns must be in 1..=2^53")
        if p["mtu_bytes"] == 0:
            raise ParamError("mtu_bytes must be > 0")
        eta = float(p["eta"])
        if not (eta > 0.0 and eta <= 1.0):
            raise ParamError("eta must be in (0, 1]")
        if p["expected_flows"] == 0:
            raise ParamError("expected_flows must be >= 1")
        # HPCC-1: W_init = floor(B_NIC * T / 8e9) bytes, exact integer arithmetic.
        w_init = p["line_rate_bps"] * p["base_rtt_ns"] // BITS_NS_PER_BYTE_S
        if w_init > MAX_EXACT:
            raise ParamError("W_init exceeds 2^53 bytes")
        w_min = p["mtu_bytes"] if p["w_min_bytes"] is None else p["w_min_bytes"]
        if w_min == 0:
            raise ParamError("w_min_bytes must be >= 1")
        if w_min > w_init:
            raise ParamError("w_min_bytes exceeds W_init")
        if p["w_ai_bytes"] is None:
            # HPCC-8: W_AI = W_init * (1 - eta) / N, in that order.
            w_ai = float(w_init) * (1.0 - eta) / float(p["expected_flows"])
        else:
            w_ai = float(p["w_ai_bytes"])
            if not (w_ai >= 0.0 and w_ai != float("inf")):
                raise ParamError("w_ai_bytes must be finite and >= 0")
        t_f = float(p["base_rtt_ns"])
        # B in bytes per ns per line-rate code; 0.0 = reserved code without a rate.
        b = [0.0] * 16
        for code, g in enumerate(LINE_RATES_GBPS):
            b[code] = float(g * 1_000_000_000) / 8e9
        seen = set()
        for r in p["reserved_line_rates"]:
            if not isinstance(r, dict) or set(r) != {"code", "bps"}:
                raise ParamError("reserved_line_rates entries are {code, bps}")
            code, bps = r["code"], r["bps"]
            if not (is_int(code) and 8 <= code <= 15):
                raise ParamError("reserved_line_rates.code must be in 8..=15")
            if not (is_int(bps) and 0 < bps <= U64_MAX):
                raise ParamError("reserved_line_rates.bps must be > 0")
            if code in seen:
                raise ParamError("reserved_line_rates.code mapped more than once")
            seen.add(code)
            b[code] = float(bps) / 8e9
        self.t_ns = p["base_rtt_ns"]
        self.t_f = t_f
        self.eta = eta
        self.max_stage = p["max_stage"]
        self.w_init = w_init
        self.w_min = w_min
        self.w_ai = w_ai
        self.b = b
        self.b_t = [x * t_f for x in b]  # B x T, the product of Algorithm 1 line 5
        self.bug = bug
        self.flows = {}

    @staticmethod
    def _check(ok, name, what):
        if not ok:
            raise ParamError("parameter `%s` must be %s" % (name, what))

    # HPCC-6: floor to whole bytes, clamp into [w_min, W_init].
    def floor_clamp(self, w):
        if w >= float(self.w_init):
            return self.w_init
        if w <= float(self.w_min):
            return self.w_min
        if self.bug == "round-window":
            return int(w + 0.5)
        return int(w)

    # HPCC-1: R = floor(W * 8e9 / T) bps.
    def rate(self, w):
        return min(w * BITS_NS_PER_BYTE_S // self.t_ns, U64_MAX)

    def flow(self, f):
        st = self.flows.get(f)
        if st is None:
            st = {
                "W": self.w_init,
                "Wc": self.w_init,
                "U": 1.0,  # the authors' ns-3 initial value (docs/models/hpcc.md choice 1)
                "incStage": 0,
                "lastUpdateSeq": 0,
                "snd_nxt": 0,
                "R": self.rate(self.w_init),
                "L": None,  # (nhop, path_id)
                "hops": [None] * 15,  # stored records: (b, ts, tx_bytes, qlen)
            }
            self.flows[f] = st
        return st

    def on_event(self, ev):
        kind = ev["kind"]
        if kind == "tx_data":
            # HPCC-7: snd_nxt = PSN + 1 in trace order.
            self.flow(ev["flow"])["snd_nxt"] = (ev["psn"] + 1) & PSN_MASK
            return []
        if kind not in ("rx_ack", "rx_nak"):
            return []  # CNPs and receiver events are not HPCC inputs
        st = self.flow(ev["flow"])
        u, tau = self.new_ack(st, ev, kind == "rx_nak")
        return [self.decision(ev, st, u, tau)]

    def new_ack(self, st, ev, nak):
        """Algorithm 1 NEWACK; returns (u, tau) of MEASUREINFLIGHT, (0.0, 0) if it did not run."""
        intst = ev.get("int")
        if intst is None:
            return 0.0, 0  # no INT: no feedback
        hops = [(h["b"], h["ts"], h["tx_bytes"], h["qlen"]) for h in intst["hops"]]
        header = (len(hops), intst["path_id"])
        # HPCC-5: first ACK or path change: store L only.
        if st["L"] is None or st["L"] != header:
            if st["L"] is None:
                st["lastUpdateSeq"] = st["snd_nxt"]  # the first RTT starts here
            st["L"] = header
            st["hops"][: len(hops)] = hops
            return 0.0, 0
        # HPCC-7: ack.seq = PSN + 1 for an ACK, PSN for a NAK; C-2 serial comparison.
        seq = ev["psn"] if nak else (ev["psn"] + 1) & PSN_MASK
        d = (seq - st["lastUpdateSeq"]) & PSN_MASK
        update_wc = 1 <= d < (1 << 23)
        if self.bug == "psn-nowrap":
            update_wc = seq > st["lastUpdateSeq"]
        if self.bug == "wc-every-ack":
            update_wc = True

        # MEASUREINFLIGHT, lines 1-10.
        u = 0.0
        tau = 0
        for i, now in enumerate(hops):
            prev = st["hops"][i]
            dts = (now[1] - prev[1]) & TS_MASK
            if self.bug == "ts-nowrap":
                dts = now[1] - prev[1]
            if dts == 0:
                continue  # HPCC-3
            code = now[0] & 0xF
            b = self.b[code]
            if b > 0.0:
                dtx = (now[2] - prev[2]) & TX_MASK
                if self.bug == "tx-nowrap":
                    dtx = now[2] - prev[2]
                unit = 1 if self.bug == "txbytes-unit" else TX_UNIT
                tx_rate = float(dtx * unit) / float(dts)  # line 4
                qlen = min(now[3], prev[3]) * QLEN_UNIT
                if self.bug == "qlen-now":
                    qlen = now[3] * QLEN_UNIT
                u_hop = float(qlen) / self.b_t[code] + tx_rate / b  # line 5
                if u_hop > u and not (self.bug == "first-hop" and i > 0):  # lines 6-7
                    u = u_hop
                    tau = dts
            st["hops"][i] = now  # line 27
        if self.bug != "no-tau-clamp":
            tau = min(tau, self.t_ns)  # line 8
        f = float(tau) / self.t_f
        st["U"] = (1.0 - f) * st["U"] + f * u  # line 9, HPCC-4

        # COMPUTEWIND, lines 11-20.
        wc = float(st["Wc"])
        stage_full = st["incStage"] >= self.max_stage
        if self.bug == "stage-off-by-one":
            stage_full = st["incStage"] > self.max_stage
        if st["U"] >= self.eta or stage_full:
            u_over_eta = st["U"] / self.eta
            if u_over_eta > 0.0:
                w_f = wc / u_over_eta + self.w_ai  # line 13
                if self.bug == "wai-twice":
                    w_f = w_f + self.w_ai  # the deliberate bug: W_AI twice
                w = self.floor_clamp(w_f)
            else:
                w = self.w_init  # the limit of Wc / (0/eta), clamped
            if update_wc:
                st["incStage"] = 0
                st["Wc"] = w
        else:
            w_f = wc + self.w_ai  # line 17
            if self.bug == "wai-twice":
                w_f = w_f + self.w_ai  # the deliberate bug: W_AI twice
            w = self.floor_clamp(w_f)
            if update_wc:
                st["incStage"] = min(st["incStage"] + 1, (1 << 32) - 1)
                st["Wc"] = w
        st["W"] = w
        if update_wc:
            st["lastUpdateSeq"] = st["snd_nxt"]  # line 24
        st["R"] = self.rate(w)  # line 27
        return u, tau

    def decision(self, ev, st, u, tau):
        return {
            "t": ev["t"],
            "flow": ev["flow"],
            "cause": {"kind": ev["kind"], "index": ev["index"]},
            "rate_bps": st["R"],
            "window_bytes": st["W"],
            "state": {
                "W": st["W"],
                "Wc": st["Wc"],
                "U": st["U"],
                "incStage": st["incStage"],
                "lastUpdateSeq": st["lastUpdateSeq"],
                "snd_nxt": st["snd_nxt"],
                "u": u,
                "tau": tau,
            },
        }


def outputs(decisions):
    """What a device shows of its decisions (the state is internal; `diff` compares it only
    with --state)."""
    return [{k: v for k, v in d.items() if k != "state"} for d in decisions]


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
    # Where the bug first acts (harness/tests/mutants.rs): with --bug and DUT_BUG_LOG naming a
    # file, a correct model runs beside the buggy one on the same events, and the first event of
    # each flow where their decisions' outputs differ is written there as "FLOW INDEX". The diff's first
    # divergence of that flow must be that event: caught where the bug acts, not later.
    shadow, bug_log, acted = None, None, set()
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            print("hpcc_dut.py: stdin closed", file=sys.stderr)
            return 0
        msg = json.loads(line)
        t = msg.get("type")
        if t == "hello":
            if msg.get("protocol") != PROTOCOL:
                send({"type": "error",
                      "message": "this DUT speaks protocol %d, got %r" % (PROTOCOL, msg.get("protocol"))})
                return 2
            if msg.get("model") != "hpcc":
                send({"type": "error", "message": "this DUT implements `hpcc`, not `%s`" % msg.get("model")})
                return 2
            try:
                model = Hpcc(msg.get("params") or {}, bug)
                if bug and os.environ.get("DUT_BUG_LOG"):
                    shadow = Hpcc(msg.get("params") or {}, None)
                    bug_log = open(os.environ["DUT_BUG_LOG"], "w")
            except ParamError as e:
                send({"type": "error", "message": str(e)})
                return 2
            name = "hpcc-py" + ("+bug-" + bug if bug else "")
            send({"type": "hello", "protocol": PROTOCOL, "name": name})
        elif t == "event" and model is not None:
            decisions = model.on_event(msg)
            if shadow is not None and outputs(decisions) != outputs(shadow.on_event(msg)) \
                    and msg["flow"] not in acted:
                acted.add(msg["flow"])
                bug_log.write("%d %d\n" % (msg["flow"], msg["index"]))
                bug_log.flush()
            send({"type": "decisions", "decisions": decisions})
        elif t == "finish" and model is not None:
            send({"type": "decisions", "decisions": []})  # HPCC has no timers
            return 0
        else:
            send({"type": "error", "message": "unexpected message type %r" % t})
            return 2


if __name__ == "__main__":
    sys.exit(main())
