#!/usr/bin/env python3
"""An FNCC sender (FNCC paper Algorithms 2 and 3; ccreplay FNCC-1, docs/models/fncc.md) as a
ccreplay device under test speaking the process protocol (docs/dut.md) on stdin / stdout.

FNCC's sender is HPCC's Algorithm 1 fed with the INT that switches write into ACKs (record 0 =
the data path's last hop) plus the last-hop congestion speedup: at the start of every
COMPUTEWIND, if the most loaded record of this ACK (first largest u', strict >) is record 0,
U_max > alpha and the ACK's N > 0, then Wc = floor(B_0 * T * beta / N) clamped to
[w_min, W_init] (docs/models/fncc.md S1-S4, choices 1-6). Written from that page and
docs/models/hpcc.md, not from the Rust reference (reference-cc/src/fncc.rs); the Algorithm 1
part follows the same page as examples/duts/hpcc_dut.py. Same IEEE double operations in the
same order (C-3), so decisions are bit-identical to the reference's.

    python3 examples/duts/fncc_dut.py                   # correct
    python3 examples/duts/fncc_dut.py --bug NAME        # one of BUGS below

Standard library only. Logs go to stderr; stdout carries protocol replies only.
"""

import argparse
import json
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

STATE_NAMES = ["W", "Wc", "U", "incStage", "lastUpdateSeq", "snd_nxt", "Umax", "hop", "tau", "N", "lhcs"]


# Single-bug variants (`--bug NAME`): mistakes an FNCC implementation can make, each a line or
# two away from the correct sender. harness/tests/mutants_fncc.rs runs every one over the bundled
# FNCC trace and a hand-built stream; docs/conformance.md says which the trace catches and why
# the others slip through it.
BUGS = {
    "no-speedup": "last-hop speedup never applied (plain HPCC on ACK INT)",
    "speedup-any-hop": "speedup fires whichever hop is the most loaded (hop = 0 test missing)",
    "last-hop-is-last-record": "last hop taken as record nHop-1, not record 0 (wire order)",
    "n-ignored": "N ignored: Wc = B0 * T * beta (as if N = 1)",
    "speedup-per-rtt": "speedup only on the once-per-RTT Wc update ACKs, not every ACK",
    "speedup-ewma-u": "speedup threshold tested on the EWMA U, not this ACK's U_max",
    "alpha-ge": "U_max >= alpha fires (choice 6 says strict >)",
    "round-speedup": "speedup window rounded to the nearest byte, not floored",
    "no-speedup-clamp": "speedup window not clamped to [w_min, W_init] (choice 5)",
    "ts-nowrap": "INT ts delta without the 24-bit wrap (HPCC-2)",
    "tx-nowrap": "INT txBytes delta without the 20-bit wrap (HPCC-2)",
    "wc-every-ack": "Wc re-synchronised on every ACK, not once per RTT (lines 14/18, 24)",
}


class ParamError(Exception):
    pass


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return (isinstance(v, (int, float))) and not isinstance(v, bool)


class Fncc:
    """Parameters (C-7 names), Algorithm 1 per flow and the last-hop speedup."""

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
            "alpha": 1.05,
            "beta": 0.9,
            "t_active_ns": None,  # receiver only; checked, unused by the sender
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
        self._check(is_num(p["alpha"]), "alpha", "a number")
        self._check(is_num(p["beta"]), "beta", "a number")
        alpha, beta = float(p["alpha"]), float(p["beta"])
        if not (alpha >= 0.0 and alpha != float("inf")):
            raise ParamError("alpha must be finite and >= 0")
        if not (beta > 0.0 and beta <= 1.0):
            raise ParamError("beta must be in (0, 1]")
        if p["t_active_ns"] is not None:
            u64("t_active_ns")
            if p["t_active_ns"] == 0:
                raise ParamError("t_active_ns must be > 0")
        self.alpha = alpha
        self.beta = beta

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
            return []  # CNPs and receiver events are not sender inputs
        st = self.flow(ev["flow"])
        self.lhcs = False
        m = self.new_ack(st, ev, kind == "rx_nak")
        return [self.decision(ev, st, m)]

    def new_ack(self, st, ev, nak):
        """Algorithm 1 NEWACK; returns (U_max, hop, tau) of MEASUREINFLIGHT, (0.0, 0, 0) if it
        did not run."""
        intst = ev.get("int")
        if intst is None:
            return 0.0, 0, 0  # no INT: no feedback
        hops = [(h["b"], h["ts"], h["tx_bytes"], h["qlen"]) for h in intst["hops"]]
        header = (len(hops), intst["path_id"])
        # HPCC-5: first ACK or path change: store L only.
        if st["L"] is None or st["L"] != header:
            if st["L"] is None:
                st["lastUpdateSeq"] = st["snd_nxt"]  # the first RTT starts here
            st["L"] = header
            st["hops"][: len(hops)] = hops
            return 0.0, 0, 0
        # HPCC-7: ack.seq = PSN + 1 for an ACK, PSN for a NAK; C-2 serial comparison.
        seq = ev["psn"] if nak else (ev["psn"] + 1) & PSN_MASK
        d = (seq - st["lastUpdateSeq"]) & PSN_MASK
        update_wc = 1 <= d < (1 << 23)
        if self.bug == "wc-every-ack":
            update_wc = True

        # MEASUREINFLIGHT, lines 1-10.
        u = 0.0
        tau = 0
        hop = 0
        us = []  # (u', index) of the records that contributed
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
                tx_rate = float(dtx * TX_UNIT) / float(dts)  # line 4
                qlen = min(now[3], prev[3]) * QLEN_UNIT
                u_hop = float(qlen) / self.b_t[code] + tx_rate / b  # line 5, S1
                us.append((u_hop, i))
                if u_hop > u:  # lines 6-7, S2: first largest
                    u = u_hop
                    tau = dts
                    hop = i
            st["hops"][i] = now  # line 27
        tau = min(tau, self.t_ns)  # line 8
        f = float(tau) / self.t_f
        st["U"] = (1.0 - f) * st["U"] + f * u  # line 9, HPCC-4

        # COMPUTEWIND, lines 11-20, starting with UpdateWc (FNCC Algorithm 3 line 30).
        if not (self.bug == "speedup-per-rtt" and not update_wc):
            self.update_wc(st, ev, hops, u, hop, us)
        wc = float(st["Wc"])
        stage_full = st["incStage"] >= self.max_stage
        if st["U"] >= self.eta or stage_full:
            u_over_eta = st["U"] / self.eta
            if u_over_eta > 0.0:
                w_f = wc / u_over_eta + self.w_ai  # line 13
                w = self.floor_clamp(w_f)
            else:
                w = self.w_init  # the limit of Wc / (0/eta), clamped
            if update_wc:
                st["incStage"] = 0
                st["Wc"] = w
        else:
            w_f = wc + self.w_ai  # line 17
            w = self.floor_clamp(w_f)
            if update_wc:
                st["incStage"] = min(st["incStage"] + 1, (1 << 32) - 1)
                st["Wc"] = w
        st["W"] = w
        if update_wc:
            st["lastUpdateSeq"] = st["snd_nxt"]  # line 24
        st["R"] = self.rate(w)  # line 27
        return u, hop, tau

    def update_wc(self, st, ev, hops, u_max, hop, us):
        """Algorithm 2 (S2-S3): the last-hop congestion speedup."""
        n = ev.get("n")
        if n is None:
            n = 0  # choice 4: absent = unknown = 0
        if self.bug == "n-ignored":
            n = 1 if n > 0 else 0
        last = 0
        if self.bug == "last-hop-is-last-record":
            last = len(hops) - 1
        at_last = hop == last
        if self.bug == "speedup-any-hop":
            at_last = True
        level = u_max
        if self.bug == "speedup-ewma-u":
            level = st["U"]
        over = level > self.alpha
        if self.bug == "alpha-ge":
            over = level >= self.alpha
        if not (at_last and over and n > 0):
            return
        if u_max == 0.0:
            return  # no record contributed
        b0 = hops[0][0] & 0xF
        if self.bug == "last-hop-is-last-record":
            b0 = hops[last][0] & 0xF
        wc = self.b_t[b0] * self.beta / float(n)  # (B0 x T) x beta / N, C-3 order
        if self.bug == "no-speedup":
            return
        if self.bug == "no-speedup-clamp":
            st["Wc"] = int(wc)
        elif self.bug == "round-speedup" and float(self.w_min) < wc < float(self.w_init):
            st["Wc"] = int(wc + 0.5)
        else:
            st["Wc"] = self.floor_clamp(wc)  # choice 5
        self.lhcs = True

    def decision(self, ev, st, m):
        u, hop, tau = m
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
                "Umax": u,
                "hop": hop,
                "tau": tau,
                "N": ev.get("n") or 0,
                "lhcs": self.lhcs,
            },
        }


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
            print("fncc_dut.py: stdin closed", file=sys.stderr)
            return 0
        msg = json.loads(line)
        t = msg.get("type")
        if t == "hello":
            if msg.get("protocol") != PROTOCOL:
                send({"type": "error",
                      "message": "this DUT speaks protocol %d, got %r" % (PROTOCOL, msg.get("protocol"))})
                return 2
            if msg.get("model") != "fncc":
                send({"type": "error", "message": "this DUT implements `fncc`, not `%s`" % msg.get("model")})
                return 2
            try:
                model = Fncc(msg.get("params") or {}, bug)
            except ParamError as e:
                send({"type": "error", "message": str(e)})
                return 2
            name = "fncc-py" + ("+bug-" + bug if bug else "")
            send({"type": "hello", "protocol": PROTOCOL, "name": name})
        elif t == "event" and model is not None:
            send({"type": "decisions", "decisions": model.on_event(msg)})
        elif t == "finish" and model is not None:
            send({"type": "decisions", "decisions": []})  # FNCC has no timers
            return 0
        else:
            send({"type": "error", "message": "unexpected message type %r" % t})
            return 2


if __name__ == "__main__":
    sys.exit(main())
