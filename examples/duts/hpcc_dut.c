/*
 * hpcc_dut.c -- an HPCC sender (HPCC paper Algorithm 1; ccreplay algorithms.md HPCC-1..8) as a
 * ccreplay device under test with the C ABI of harness/include/ccreplay_dut.h.
 *
 * Written independently of the Rust reference (reference-cc/src/hpcc.rs) from the same spec and
 * docs/models/hpcc.md, with the same IEEE double operations in the same order, so its decisions
 * are bit-identical to the reference's. Build without floating-point contraction (an FMA would
 * round once where the spec rounds twice):
 *
 *   gcc -std=c11 -O2 -fPIC -shared -ffp-contract=off -I harness/include \
 *       examples/duts/hpcc_dut.c -o libhpcc_dut.so
 *
 * Add -DCCREPLAY_BUG_WAI_TWICE for the deliberately buggy variant (W_AI added twice in
 * COMPUTEWIND), or another -DCCREPLAY_BUG_<NAME> for one of the single-bug variants that
 * harness/tests/mutants.rs runs (the Python DUT's BUGS, docs/conformance.md).
 */
#include "ccreplay_dut.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One deliberate bug per build (docs/conformance.md); all 0 in the correct DUT. */
#ifdef CCREPLAY_BUG_WAI_TWICE
#define BUG_WAI_TWICE 1
#else
#define BUG_WAI_TWICE 0
#endif
#ifdef CCREPLAY_BUG_TS_NOWRAP
#define BUG_TS_NOWRAP 1
#else
#define BUG_TS_NOWRAP 0
#endif
#ifdef CCREPLAY_BUG_TX_NOWRAP
#define BUG_TX_NOWRAP 1
#else
#define BUG_TX_NOWRAP 0
#endif
#ifdef CCREPLAY_BUG_PSN_NOWRAP
#define BUG_PSN_NOWRAP 1
#else
#define BUG_PSN_NOWRAP 0
#endif
#ifdef CCREPLAY_BUG_FIRST_HOP
#define BUG_FIRST_HOP 1
#else
#define BUG_FIRST_HOP 0
#endif
#ifdef CCREPLAY_BUG_QLEN_NOW
#define BUG_QLEN_NOW 1
#else
#define BUG_QLEN_NOW 0
#endif
#ifdef CCREPLAY_BUG_NO_TAU_CLAMP
#define BUG_NO_TAU_CLAMP 1
#else
#define BUG_NO_TAU_CLAMP 0
#endif
#ifdef CCREPLAY_BUG_WC_EVERY_ACK
#define BUG_WC_EVERY_ACK 1
#else
#define BUG_WC_EVERY_ACK 0
#endif
#ifdef CCREPLAY_BUG_STAGE_OFF_BY_ONE
#define BUG_STAGE_OFF_BY_ONE 1
#else
#define BUG_STAGE_OFF_BY_ONE 0
#endif
#ifdef CCREPLAY_BUG_ROUND_WINDOW
#define BUG_ROUND_WINDOW 1
#else
#define BUG_ROUND_WINDOW 0
#endif
#ifdef CCREPLAY_BUG_TXBYTES_UNIT
#define BUG_TXBYTES_UNIT 1
#else
#define BUG_TXBYTES_UNIT 0
#endif

#define PSN_MASK 0xFFFFFFu
#define TS_MASK 0xFFFFFFu
#define TX_MASK 0xFFFFFu
#define TX_UNIT 128u  /* txBytes unit, bytes (wire.md 5.1) */
#define QLEN_UNIT 80u /* qLen unit, bytes (wire.md 5.1) */
#define BITS_NS_PER_BYTE_S 8000000000ull
#define MAX_EXACT (1ull << 53)
#define MAX_FLOWS (1u << 24) /* flow ids are dense; this bounds the table */

/* 128-bit products keep HPCC-1's integer arithmetic exact (GCC and Clang). */
__extension__ typedef unsigned __int128 u128;

typedef struct {
    uint32_t ts, tx_bytes;
    uint16_t qlen;
    uint8_t b;
} hop_t;

/* Per-flow state of Algorithm 1, named as in the paper. */
typedef struct {
    uint64_t w, wc;      /* W, W^c: bytes */
    double u;            /* U */
    uint32_t inc_stage;  /* incStage */
    uint32_t last_update_seq, snd_nxt;
    uint64_t rate_bps;   /* R */
    int has_int;         /* L holds an INT stack */
    uint8_t l_nhop;      /* L: nHop, pathID, records */
    uint16_t l_path_id;
    hop_t l_hops[CCREPLAY_MAX_INT_HOPS];
} flow_t;

struct ccreplay_dut {
    uint64_t t_ns;     /* T */
    double t_f;        /* T as a double */
    double eta;        /* eta */
    uint32_t max_stage;
    uint64_t w_init, w_min;
    double w_ai;       /* W_AI */
    double b[16];      /* B per line-rate code, bytes per ns; 0 = reserved without a rate */
    double b_t[16];    /* B x T per code */
    flow_t *flows;
    size_t n_flows, cap_flows;
};

static void say(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, CCREPLAY_ERR_MAX, fmt, ap);
    va_end(ap);
}

/* ---- a small JSON reader for the parameter object ------------------------------------------- */

typedef struct {
    const char *p;
    char *err;
} json_t;

static void ws(json_t *j) {
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r') j->p++;
}

static int expect(json_t *j, char c) {
    ws(j);
    if (*j->p != c) {
        say(j->err, "params: expected '%c' at \"%.20s\"", c, j->p);
        return -1;
    }
    j->p++;
    return 0;
}

/* A string without \u escapes (parameter names are ASCII). */
static int json_string(json_t *j, char *out, size_t cap) {
    size_t n = 0;
    if (expect(j, '"')) return -1;
    for (;;) {
        char c = *j->p++;
        if (c == '\0') {
            say(j->err, "params: unterminated string");
            return -1;
        }
        if (c == '"') break;
        if (c == '\\') {
            char e = *j->p++;
            switch (e) {
            case '"': case '\\': case '/': c = e; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            default:
                say(j->err, "params: unsupported escape \\%c", e);
                return -1;
            }
        }
        if (n + 1 >= cap) {
            say(j->err, "params: name too long");
            return -1;
        }
        out[n++] = c;
    }
    out[n] = '\0';
    return 0;
}

/* A number: `*is_uint` when it is a non-negative integer literal that fits u64 (`*u`); `*d`
 * always (strtod rounds correctly, as serde_json does). */
static int json_number(json_t *j, double *d, uint64_t *u, int *is_uint) {
    const char *s;
    char buf[64];
    size_t n;
    int integral = 1;
    ws(j);
    s = j->p;
    if (*j->p == '-') { j->p++; integral = 0; }
    if (*j->p < '0' || *j->p > '9') {
        say(j->err, "params: expected a number at \"%.20s\"", s);
        return -1;
    }
    while (*j->p >= '0' && *j->p <= '9') j->p++;
    if (*j->p == '.') {
        integral = 0;
        j->p++;
        while (*j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (*j->p == 'e' || *j->p == 'E') {
        integral = 0;
        j->p++;
        if (*j->p == '+' || *j->p == '-') j->p++;
        while (*j->p >= '0' && *j->p <= '9') j->p++;
    }
    n = (size_t)(j->p - s);
    if (n >= sizeof buf) {
        say(j->err, "params: number too long");
        return -1;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    *d = strtod(buf, NULL);
    *is_uint = 0;
    if (integral) {
        /* u64 overflow check: at most 20 digits and no wrap */
        uint64_t v = 0;
        int ok = 1;
        for (size_t i = 0; i < n; i++) {
            uint64_t digit = (uint64_t)(buf[i] - '0');
            if (v > (UINT64_MAX - digit) / 10) { ok = 0; break; }
            v = v * 10 + digit;
        }
        if (ok) { *u = v; *is_uint = 1; }
    }
    return 0;
}

static int json_null(json_t *j) {
    ws(j);
    if (strncmp(j->p, "null", 4) == 0) {
        j->p += 4;
        return 1;
    }
    return 0;
}

typedef struct {
    uint64_t line_rate_bps, base_rtt_ns, mtu_bytes;
    int has_w_min;
    uint64_t w_min_bytes;
    double eta;
    uint32_t max_stage;
    int has_w_ai;
    double w_ai_bytes;
    uint32_t expected_flows;
    int n_reserved;
    uint8_t reserved_code[8];
    uint64_t reserved_bps[8];
} params_t;

static int get_u64(json_t *j, const char *key, uint64_t max, uint64_t *out) {
    double d;
    int is_uint;
    if (json_number(j, &d, out, &is_uint)) return -1;
    if (!is_uint || *out > max) {
        say(j->err, "invalid parameter `%s`: must be an unsigned integer <= %llu", key,
            (unsigned long long)max);
        return -1;
    }
    return 0;
}

static int get_f64(json_t *j, const char *key, double *out) {
    uint64_t u;
    int is_uint;
    (void)key;
    return json_number(j, out, &u, &is_uint);
}

static int reserved_list(json_t *j, params_t *p) {
    if (expect(j, '[')) return -1;
    ws(j);
    if (*j->p == ']') { j->p++; return 0; }
    for (;;) {
        char key[32];
        uint64_t code = 0, bps = 0;
        int has_code = 0, has_bps = 0;
        if (expect(j, '{')) return -1;
        for (;;) {
            if (json_string(j, key, sizeof key) || expect(j, ':')) return -1;
            if (strcmp(key, "code") == 0) {
                if (get_u64(j, "reserved_line_rates.code", 255, &code)) return -1;
                has_code = 1;
            } else if (strcmp(key, "bps") == 0) {
                if (get_u64(j, "reserved_line_rates.bps", UINT64_MAX, &bps)) return -1;
                has_bps = 1;
            } else {
                say(j->err, "unknown parameter `reserved_line_rates.%s`", key);
                return -1;
            }
            ws(j);
            if (*j->p == ',') { j->p++; continue; }
            if (expect(j, '}')) return -1;
            break;
        }
        if (!has_code || !has_bps) {
            say(j->err, "reserved_line_rates entries need `code` and `bps`");
            return -1;
        }
        if (code < 8 || code > 15) {
            say(j->err, "invalid parameter `reserved_line_rates.code` = %llu: only the reserved "
                "codes 8..=15 can be mapped", (unsigned long long)code);
            return -1;
        }
        if (bps == 0) {
            say(j->err, "invalid parameter `reserved_line_rates.bps` = 0: must be > 0");
            return -1;
        }
        for (int i = 0; i < p->n_reserved; i++) {
            if (p->reserved_code[i] == code) {
                say(j->err, "invalid parameter `reserved_line_rates.code` = %llu: mapped more "
                    "than once", (unsigned long long)code);
                return -1;
            }
        }
        p->reserved_code[p->n_reserved] = (uint8_t)code;
        p->reserved_bps[p->n_reserved] = bps;
        p->n_reserved++;
        ws(j);
        if (*j->p == ',') { j->p++; continue; }
        return expect(j, ']');
    }
}

/* Parse the parameter object; missing keys keep the paper defaults (HPCC-8). */
static int parse_params(const char *text, params_t *p, char *err) {
    json_t j = {text, err};
    char key[64];
    uint64_t v;
    p->line_rate_bps = 100000000000ull;
    p->base_rtt_ns = 13000;
    p->mtu_bytes = 1000;
    p->has_w_min = 0;
    p->eta = 0.95;
    p->max_stage = 5;
    p->has_w_ai = 0;
    p->expected_flows = 100;
    p->n_reserved = 0;
    if (expect(&j, '{')) return -1;
    ws(&j);
    if (*j.p == '}') { j.p++; goto end; }
    for (;;) {
        if (json_string(&j, key, sizeof key) || expect(&j, ':')) return -1;
        if (strcmp(key, "line_rate_bps") == 0) {
            if (get_u64(&j, key, UINT64_MAX, &p->line_rate_bps)) return -1;
        } else if (strcmp(key, "base_rtt_ns") == 0) {
            if (get_u64(&j, key, UINT64_MAX, &p->base_rtt_ns)) return -1;
        } else if (strcmp(key, "mtu_bytes") == 0) {
            if (get_u64(&j, key, UINT64_MAX, &p->mtu_bytes)) return -1;
        } else if (strcmp(key, "w_min_bytes") == 0) {
            if (json_null(&j)) {
                p->has_w_min = 0;
            } else {
                if (get_u64(&j, key, UINT64_MAX, &p->w_min_bytes)) return -1;
                p->has_w_min = 1;
            }
        } else if (strcmp(key, "eta") == 0) {
            if (get_f64(&j, key, &p->eta)) return -1;
        } else if (strcmp(key, "max_stage") == 0) {
            if (get_u64(&j, key, UINT32_MAX, &v)) return -1;
            p->max_stage = (uint32_t)v;
        } else if (strcmp(key, "w_ai_bytes") == 0) {
            if (json_null(&j)) {
                p->has_w_ai = 0;
            } else {
                if (get_f64(&j, key, &p->w_ai_bytes)) return -1;
                p->has_w_ai = 1;
            }
        } else if (strcmp(key, "expected_flows") == 0) {
            if (get_u64(&j, key, UINT32_MAX, &v)) return -1;
            p->expected_flows = (uint32_t)v;
        } else if (strcmp(key, "reserved_line_rates") == 0) {
            if (reserved_list(&j, p)) return -1;
        } else {
            say(err, "unknown parameter `%s`", key);
            return -1;
        }
        ws(&j);
        if (*j.p == ',') { j.p++; continue; }
        if (expect(&j, '}')) return -1;
        break;
    }
end:
    ws(&j);
    if (*j.p != '\0') {
        say(err, "params: trailing text \"%.20s\"", j.p);
        return -1;
    }
    return 0;
}

/* Validate (C-7) and precompute what the per-ACK path needs. */
static int derive(const params_t *p, struct ccreplay_dut *d, char *err) {
    static const uint64_t gbps[8] = {25, 50, 100, 200, 400, 800, 10, 40}; /* wire.md 5.1 */
    u128 w_init;
    if (p->line_rate_bps == 0) { say(err, "invalid parameter `line_rate_bps` = 0: must be > 0"); return -1; }
    if (p->base_rtt_ns == 0 || p->base_rtt_ns > MAX_EXACT) {
        say(err, "invalid parameter `base_rtt_ns` = %llu: must be in 1..=2^53 ns",
            (unsigned long long)p->base_rtt_ns);
        return -1;
    }
    if (p->mtu_bytes == 0) { say(err, "invalid parameter `mtu_bytes` = 0: must be > 0"); return -1; }
    if (!(p->eta > 0.0 && p->eta <= 1.0)) {
        say(err, "invalid parameter `eta` = %g: must be in (0, 1]", p->eta);
        return -1;
    }
    if (p->expected_flows == 0) { say(err, "invalid parameter `expected_flows` = 0: must be >= 1"); return -1; }
    /* HPCC-1: W_init = floor(B_NIC x T / 8e9) bytes, exact. */
    w_init = (u128)p->line_rate_bps * p->base_rtt_ns / BITS_NS_PER_BYTE_S;
    if (w_init > MAX_EXACT) { say(err, "invalid parameter `base_rtt_ns`: W_init exceeds 2^53 bytes"); return -1; }
    d->w_init = (uint64_t)w_init;
    d->w_min = p->has_w_min ? p->w_min_bytes : p->mtu_bytes;
    if (d->w_min == 0) { say(err, "invalid parameter `w_min_bytes` = 0: must be >= 1 byte"); return -1; }
    if (d->w_min > d->w_init) {
        say(err, "invalid parameter `w_min_bytes` = %llu: exceeds W_init = %llu",
            (unsigned long long)d->w_min, (unsigned long long)d->w_init);
        return -1;
    }
    if (p->has_w_ai) {
        /* finite and >= 0 (NaN fails the comparison) */
        if (!(p->w_ai_bytes >= 0.0 && p->w_ai_bytes <= 1.7976931348623157e308)) {
            say(err, "invalid parameter `w_ai_bytes`: must be finite and >= 0");
            return -1;
        }
        d->w_ai = p->w_ai_bytes;
    } else {
        /* HPCC-8: W_AI = W_init x (1 - eta) / N, in that order. */
        d->w_ai = (double)d->w_init * (1.0 - p->eta) / (double)p->expected_flows;
    }
    d->t_ns = p->base_rtt_ns;
    d->t_f = (double)p->base_rtt_ns;
    d->eta = p->eta;
    d->max_stage = p->max_stage;
    for (int code = 0; code < 16; code++) {
        d->b[code] = code < 8 ? (double)(gbps[code] * 1000000000ull) / 8e9 : 0.0;
    }
    for (int i = 0; i < p->n_reserved; i++) {
        d->b[p->reserved_code[i]] = (double)p->reserved_bps[i] / 8e9;
    }
    for (int code = 0; code < 16; code++) {
        d->b_t[code] = d->b[code] * d->t_f; /* B x T, the product of line 5 */
    }
    return 0;
}

/* ---- Algorithm 1 ---------------------------------------------------------------------------- */

/* HPCC-6: floor to whole bytes, clamp into [w_min, W_init]. */
static uint64_t floor_clamp(const struct ccreplay_dut *d, double w) {
    if (w >= (double)d->w_init) return d->w_init;
    if (w <= (double)d->w_min) return d->w_min;
    if (BUG_ROUND_WINDOW) return (uint64_t)(w + 0.5);
    return (uint64_t)w; /* positive, below 2^53: truncation is floor */
}

/* HPCC-1: R = floor(W x 8e9 / T) bps. */
static uint64_t rate_bps(const struct ccreplay_dut *d, uint64_t w) {
    u128 r = (u128)w * BITS_NS_PER_BYTE_S / d->t_ns;
    return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}

/* C-2: a is after b when (a - b) mod 2^24 is in 1..2^23. */
static int psn_after(uint32_t a, uint32_t b) {
    uint32_t diff = (a - b) & PSN_MASK;
    return diff >= 1 && diff < (1u << 23);
}

static flow_t *flow_get(struct ccreplay_dut *d, uint32_t id, char *err) {
    if (id >= d->n_flows) {
        if (id >= MAX_FLOWS) {
            say(err, "flow id %u is above this DUT's limit %u", id, MAX_FLOWS - 1);
            return NULL;
        }
        if (id >= d->cap_flows) {
            size_t cap = d->cap_flows ? d->cap_flows : 16;
            flow_t *f;
            while (cap <= id) cap *= 2;
            f = realloc(d->flows, cap * sizeof *f);
            if (!f) {
                say(err, "out of memory for %zu flows", cap);
                return NULL;
            }
            d->flows = f;
            d->cap_flows = cap;
        }
        for (size_t i = d->n_flows; i <= id; i++) {
            flow_t *st = &d->flows[i];
            memset(st, 0, sizeof *st);
            st->w = st->wc = d->w_init;
            st->u = 1.0; /* the authors' ns-3 initial value (docs/models/hpcc.md choice 1) */
            st->rate_bps = rate_bps(d, d->w_init);
        }
        d->n_flows = (size_t)id + 1;
    }
    return &d->flows[id];
}

/* Algorithm 1 NEWACK; `*u_out`, `*tau_out` from MEASUREINFLIGHT (0 when it did not run). */
static void new_ack(const struct ccreplay_dut *d, flow_t *st, const ccreplay_event *ev, int nak,
                    double *u_out, uint64_t *tau_out) {
    uint32_t seq;
    int update_wc;
    double u = 0.0, f, wc;
    uint64_t tau = 0, w;
    int nhop = ev->int_nhop < CCREPLAY_MAX_INT_HOPS ? ev->int_nhop : CCREPLAY_MAX_INT_HOPS;

    *u_out = 0.0;
    *tau_out = 0;
    if (!(ev->present & CCREPLAY_HAS_INT)) return; /* no INT: no feedback */

    /* HPCC-5: first ACK or path change (pathID or nHop differ): store L only. */
    if (!st->has_int || ev->int_nhop != st->l_nhop || ev->int_path_id != st->l_path_id) {
        if (!st->has_int) st->last_update_seq = st->snd_nxt; /* the first RTT starts here */
        st->l_nhop = ev->int_nhop;
        st->l_path_id = ev->int_path_id;
        for (int i = 0; i < nhop; i++) {
            st->l_hops[i].ts = ev->int_hops[i].ts;
            st->l_hops[i].tx_bytes = ev->int_hops[i].tx_bytes;
            st->l_hops[i].qlen = ev->int_hops[i].qlen;
            st->l_hops[i].b = ev->int_hops[i].b;
        }
        st->has_int = 1;
        return;
    }

    /* HPCC-7: ack.seq = PSN + 1 for an ACK, PSN for a NAK. */
    seq = nak ? ev->psn : ((ev->psn + 1) & PSN_MASK);
    update_wc = psn_after(seq, st->last_update_seq); /* line 22 */
    if (BUG_PSN_NOWRAP) update_wc = seq > st->last_update_seq;
    if (BUG_WC_EVERY_ACK) update_wc = 1;

    /* MEASUREINFLIGHT, lines 1-10 */
    for (int i = 0; i < nhop; i++) {
        const ccreplay_int_hop *now = &ev->int_hops[i];
        hop_t *prev = &st->l_hops[i];
        uint64_t dts = BUG_TS_NOWRAP ? (uint64_t)(uint32_t)(now->ts - prev->ts)
                                     : (uint64_t)((now->ts - prev->ts) & TS_MASK);
        int code;
        if (dts == 0) continue; /* HPCC-3 */
        code = now->b & 0xF;
        if (d->b[code] > 0.0) {
            uint32_t dtx_units = BUG_TX_NOWRAP ? (uint32_t)(now->tx_bytes - prev->tx_bytes)
                                               : ((now->tx_bytes - prev->tx_bytes) & TX_MASK);
            uint64_t dtx = (uint64_t)dtx_units * (BUG_TXBYTES_UNIT ? 1 : TX_UNIT);
            double tx_rate = (double)dtx / (double)dts; /* line 4 */
            uint64_t qlen = (uint64_t)(now->qlen < prev->qlen ? now->qlen : prev->qlen) * QLEN_UNIT;
            if (BUG_QLEN_NOW) qlen = (uint64_t)now->qlen * QLEN_UNIT;
            double u_hop = (double)qlen / d->b_t[code] + tx_rate / d->b[code]; /* line 5 */
            if (u_hop > u && !(BUG_FIRST_HOP && i > 0)) { /* lines 6-7 */
                u = u_hop;
                tau = dts;
            }
        }
        prev->ts = now->ts; /* line 27: L = ack.L */
        prev->tx_bytes = now->tx_bytes;
        prev->qlen = now->qlen;
        prev->b = now->b;
    }
    if (tau > d->t_ns && !BUG_NO_TAU_CLAMP) tau = d->t_ns; /* line 8 */
    f = (double)tau / d->t_f;
    st->u = (1.0 - f) * st->u + f * u; /* line 9, HPCC-4 */

    /* COMPUTEWIND, lines 11-20 */
    wc = (double)st->wc;
    if (st->u >= d->eta ||
        (BUG_STAGE_OFF_BY_ONE ? st->inc_stage > d->max_stage : st->inc_stage >= d->max_stage)) {
        double u_over_eta = st->u / d->eta;
        if (u_over_eta > 0.0) {
            double w_f = wc / u_over_eta + d->w_ai; /* line 13 */
            if (BUG_WAI_TWICE) w_f = w_f + d->w_ai; /* the deliberate bug: W_AI twice */
            w = floor_clamp(d, w_f);
        } else {
            w = d->w_init; /* the limit of Wc / (0/eta), clamped */
        }
        if (update_wc) {
            st->inc_stage = 0; /* line 15 */
            st->wc = w;
        }
    } else {
        double w_f = wc + d->w_ai; /* line 17 */
        if (BUG_WAI_TWICE) w_f = w_f + d->w_ai; /* the deliberate bug: W_AI twice */
        w = floor_clamp(d, w_f);
        if (update_wc) {
            if (st->inc_stage != UINT32_MAX) st->inc_stage++; /* line 19 */
            st->wc = w;
        }
    }
    st->w = w;
    if (update_wc) st->last_update_seq = st->snd_nxt; /* line 24 */
    st->rate_bps = rate_bps(d, w);                     /* line 27 */
    *u_out = u;
    *tau_out = tau;
}

static void decision(const ccreplay_event *ev, const flow_t *st, double u, uint64_t tau,
                     ccreplay_decision *o) {
    o->t_ns = ev->t_ns;
    o->flow = ev->flow;
    o->cause_kind = ev->kind;
    o->cause_index = ev->index;
    o->present = CCREPLAY_OUT_RATE | CCREPLAY_OUT_WINDOW;
    o->rate_bps = st->rate_bps;
    o->window_bytes = st->w;
    o->timer_name[0] = '\0';
    o->n_state = 8;
    ccreplay_set_state(&o->state[0], "W", CCREPLAY_STATE_U64, st->w);
    ccreplay_set_state(&o->state[1], "Wc", CCREPLAY_STATE_U64, st->wc);
    ccreplay_set_state(&o->state[2], "U", CCREPLAY_STATE_F64, ccreplay_f64_bits(st->u));
    ccreplay_set_state(&o->state[3], "incStage", CCREPLAY_STATE_U64, st->inc_stage);
    ccreplay_set_state(&o->state[4], "lastUpdateSeq", CCREPLAY_STATE_U64, st->last_update_seq);
    ccreplay_set_state(&o->state[5], "snd_nxt", CCREPLAY_STATE_U64, st->snd_nxt);
    ccreplay_set_state(&o->state[6], "u", CCREPLAY_STATE_F64, ccreplay_f64_bits(u));
    ccreplay_set_state(&o->state[7], "tau", CCREPLAY_STATE_U64, tau);
}

/* ---- the ABI -------------------------------------------------------------------------------- */

uint32_t ccreplay_dut_abi_version(void) { return CCREPLAY_DUT_ABI_VERSION; }

int32_t ccreplay_dut_create(const ccreplay_setup *setup, ccreplay_dut **out, char *name,
                            char *err) {
    params_t p;
    struct ccreplay_dut *d;
    if (setup->abi_version != CCREPLAY_DUT_ABI_VERSION) {
        say(err, "built for ABI %u, the harness speaks %u", CCREPLAY_DUT_ABI_VERSION,
            setup->abi_version);
        return -1;
    }
    if (strcmp(setup->model, "hpcc") != 0) {
        say(err, "this DUT implements `hpcc`, not `%s`", setup->model);
        return -1;
    }
    if (parse_params(setup->params_json, &p, err)) return -1;
    d = calloc(1, sizeof *d);
    if (!d) {
        say(err, "out of memory");
        return -1;
    }
    if (derive(&p, d, err)) {
        free(d);
        return -1;
    }
#ifdef CCREPLAY_BUG_WAI_TWICE
    snprintf(name, CCREPLAY_NAME_MAX, "hpcc-c+bug-wai-twice");
#else
    snprintf(name, CCREPLAY_NAME_MAX, "hpcc-c");
#endif
    *out = d;
    return CCREPLAY_OK;
}

int32_t ccreplay_dut_event(ccreplay_dut *d, const ccreplay_event *ev, ccreplay_decision *out,
                           size_t cap, size_t *n_out, char *err) {
    flow_t *st;
    double u;
    uint64_t tau;
    *n_out = 0;
    switch (ev->kind) {
    case CCREPLAY_TX_DATA:
        st = flow_get(d, ev->flow, err);
        if (!st) return -1;
        st->snd_nxt = (ev->psn + 1) & PSN_MASK; /* HPCC-7 */
        return CCREPLAY_OK;
    case CCREPLAY_RX_ACK:
    case CCREPLAY_RX_NAK:
        if (cap < 1) {
            say(err, "no room for a decision");
            return -1;
        }
        st = flow_get(d, ev->flow, err);
        if (!st) return -1;
        new_ack(d, st, ev, ev->kind == CCREPLAY_RX_NAK, &u, &tau);
        decision(ev, st, u, tau, &out[0]);
        *n_out = 1;
        return CCREPLAY_OK;
    default:
        return CCREPLAY_OK; /* CNPs and receiver events are not HPCC inputs */
    }
}

int32_t ccreplay_dut_finish(ccreplay_dut *d, uint64_t t_end_ns, ccreplay_decision *out,
                            size_t cap, size_t *n_out, char *err) {
    (void)d, (void)t_end_ns, (void)out, (void)cap, (void)err;
    *n_out = 0; /* HPCC has no timers */
    return CCREPLAY_OK;
}

void ccreplay_dut_destroy(ccreplay_dut *d) {
    if (d) {
        free(d->flows);
        free(d);
    }
}
