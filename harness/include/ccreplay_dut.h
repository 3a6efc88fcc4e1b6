/*
 * ccreplay_dut.h -- the C ABI of a ccreplay device under test (DUT), version 1.
 *
 * A DUT is a shared library (.so / .dylib) that turns the harness's events into congestion
 * control decisions (ccreplay docs/dut.md, spec harness.md 4). The harness loads it at run time
 * (`ccreplay diff TRACE --dut cabi:path/to/libdut.so`), checks ccreplay_dut_abi_version(),
 * creates one handle, feeds every event of the trace in order, then calls finish and destroy.
 *
 * Rules every DUT follows:
 *  - All structs are plain data with fixed layouts (asserted below); all integers are in host
 *    byte order; names are NUL-terminated UTF-8 inside fixed arrays.
 *  - Pointers the harness passes are valid only during the call; the DUT keeps no pointer to
 *    them. The DUT owns its handle; the harness owns every buffer it passes.
 *  - A call returns CCREPLAY_OK (0), CCREPLAY_MORE (1, only from event / finish / drain), or
 *    any other value for an error, after writing a NUL-terminated message into `err`
 *    (CCREPLAY_ERR_MAX bytes). An error stops the run (exit status 3); the harness then only
 *    calls ccreplay_dut_destroy.
 *  - Decisions from timers due at or before an event's time come first in the answer to that
 *    event (timers first on ties), in time order, each with cause CCREPLAY_CAUSE_TIMER and its
 *    name; then the decisions the event itself causes (cause = the event's kind and index, the
 *    event's flow). ccreplay_dut_finish answers with the decisions of the timers due up to the
 *    trace end.
 *  - The harness validates everything: counts within the capacity it gave, known codes and
 *    presence bits, names (1..31 bytes of UTF-8, NUL-terminated within the array, no control
 *    character, '"' or '\\', distinct within a decision), booleans 0 or 1, finite doubles.
 *    Anything else stops the run with an error naming the event and the field.
 *  - Handles are independent. The harness may call different handles from different threads
 *    at the same time, and may move a handle between threads, but never calls one handle from
 *    two threads at once. A DUT with global mutable state protects it.
 *  - The DUT runs inside the harness process: a crash or a hang in the library is a crash or
 *    a hang of the harness. Untrusted or experimental code is safer behind the process
 *    adapter (--dut process:...).
 *
 * Versioning: CCREPLAY_DUT_ABI_VERSION changes whenever a struct, a code or a function
 * changes; the harness refuses a library whose ccreplay_dut_abi_version() differs.
 */
#ifndef CCREPLAY_DUT_H
#define CCREPLAY_DUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions and sizes ------------------------------------------------------------------ */

/** The ABI version this header describes. */
#define CCREPLAY_DUT_ABI_VERSION 1u

/** Bytes of a name array (31 bytes of UTF-8 + NUL). */
#define CCREPLAY_NAME_MAX 32
/** Bytes of an error message buffer (including the NUL). */
#define CCREPLAY_ERR_MAX 512
/** Most INT hop records in a stack (the 4-bit nHop field). */
#define CCREPLAY_MAX_INT_HOPS 15
/** Most named state values in one decision (algorithms.md C-6). */
#define CCREPLAY_MAX_STATE 12

/* ---- return codes ------------------------------------------------------------------------- */

/** Success: `*n_out` decisions were written. */
#define CCREPLAY_OK 0
/** `out` is full (`*n_out` == `cap`, at least 1) and more decisions of the same call are
 *  pending: the harness takes them and calls ccreplay_dut_drain. */
#define CCREPLAY_MORE 1

/* ---- events (harness.md 2) ------------------------------------------------------------------ */

/** Event kinds (ccreplay_event.kind) and event causes (ccreplay_decision.cause_kind). */
#define CCREPLAY_TX_DATA 1u /* the sender transmitted a data packet: psn, bytes, opcode */
#define CCREPLAY_RX_ACK 2u  /* the sender received an ACK: psn, syndrome, dialect fields */
#define CCREPLAY_RX_NAK 3u  /* the sender received a NAK: as an ACK */
#define CCREPLAY_RX_CNP 4u  /* the sender (reaction point) received a CNP */
#define CCREPLAY_RX_DATA 5u /* the receiver got a data packet: psn, bytes, opcode, ecn, send_ts */
#define CCREPLAY_DEQUEUE 6u /* a data packet left a switch port: psn, bytes (frame), opcode, ecn,
                               and the egress queue length in `cwnd` (CCREPLAY_HAS_QLEN) */
/** Decision cause: a timer of the DUT (ccreplay_decision.timer_name). */
#define CCREPLAY_CAUSE_TIMER 16u

/** Presence bits of the optional event fields (ccreplay_event.present). */
#define CCREPLAY_HAS_INT (1u << 0)       /* int_nhop, int_path_id, int_hops: HPCC / FNCC */
#define CCREPLAY_HAS_N (1u << 1)         /* n: FNCC / RCC flow count */
#define CCREPLAY_HAS_CWND (1u << 2)      /* cwnd: RCC window, bytes */
#define CCREPLAY_HAS_RCC_FLAGS (1u << 3) /* rcc_flags */
#define CCREPLAY_HAS_TS (1u << 4)        /* ts_ns: RCC timestamp in an ACK */
#define CCREPLAY_HAS_SEND_TS (1u << 5)   /* send_ts_ns: RCC sender timestamp in data */
#define CCREPLAY_HAS_QLEN (1u << 6)      /* dequeue: queue length, bytes, in `cwnd` (saturating) */

/** One INT hop record, decoded into its raw fields (wire.md 5.1). */
typedef struct ccreplay_int_hop {
    uint32_t ts;       /* TS: egress timestamp, ns modulo 2^24 */
    uint32_t tx_bytes; /* txBytes: 128-byte units modulo 2^20 */
    uint16_t qlen;     /* qLen: 80-byte units */
    uint8_t b;         /* B: line-rate code, 0..15 */
    uint8_t reserved;  /* 0 */
} ccreplay_int_hop;

/** One event. Fields a kind does not use, and optional fields whose bit is clear in
 *  `present`, are 0. */
typedef struct ccreplay_event {
    uint64_t t_ns;       /* time, ns */
    uint64_t index;      /* per-flow event ordinal, from 0 */
    uint64_t ts_ns;      /* rx_ack / rx_nak: RCC timestamp (CCREPLAY_HAS_TS) */
    uint64_t send_ts_ns; /* rx_data: RCC sender timestamp (CCREPLAY_HAS_SEND_TS) */
    uint32_t flow;       /* dense flow id (ccreplay_flow.flow) */
    uint32_t kind;       /* CCREPLAY_TX_DATA .. CCREPLAY_RX_DATA */
    uint32_t present;    /* CCREPLAY_HAS_* bits */
    uint32_t psn;        /* 24-bit PSN: tx_data, rx_ack, rx_nak, rx_data */
    uint32_t bytes;      /* IB payload bytes: tx_data, rx_data */
    uint32_t cwnd;       /* rx_ack / rx_nak: RCC window, bytes (CCREPLAY_HAS_CWND) */
    uint16_t n;          /* rx_ack / rx_nak: flow count N (CCREPLAY_HAS_N) */
    uint16_t int_path_id; /* INT pathID, 12 bits (CCREPLAY_HAS_INT) */
    uint8_t opcode;      /* BTH opcode: tx_data, rx_data */
    uint8_t syndrome;    /* AETH syndrome: rx_ack, rx_nak */
    uint8_t ecn;         /* IP ECN codepoint: rx_data */
    uint8_t rcc_flags;   /* rx_ack / rx_nak: RCC flags (CCREPLAY_HAS_RCC_FLAGS) */
    uint8_t int_nhop;    /* INT nHop, 0..15; int_hops[0 .. int_nhop) are filled */
    uint8_t reserved[3];
    ccreplay_int_hop int_hops[CCREPLAY_MAX_INT_HOPS];
} ccreplay_event;

/* ---- decisions (harness.md 3, algorithms.md C-6) ---------------------------------------------- */

/** Presence bits of the outputs (ccreplay_decision.present). */
#define CCREPLAY_OUT_RATE (1u << 0)      /* rate_bps */
#define CCREPLAY_OUT_WINDOW (1u << 1)    /* window_bytes */
#define CCREPLAY_OUT_SEND_CNP (1u << 2)  /* send_cnp (0 or 1) */
#define CCREPLAY_OUT_ACK_N (1u << 3)     /* ack_n */
#define CCREPLAY_OUT_ACK_CWND (1u << 4)  /* ack_cwnd */
#define CCREPLAY_OUT_ACK_FLAGS (1u << 5) /* ack_flags */
#define CCREPLAY_OUT_MARK_CE (1u << 6)   /* switch: the packet is marked CE; the value (0 or 1)
                                            is carried in `send_cnp`, so a decision sets at most
                                            one of CCREPLAY_OUT_SEND_CNP and CCREPLAY_OUT_MARK_CE */

/** State value types (ccreplay_state_value.type). */
#define CCREPLAY_STATE_U64 1u
#define CCREPLAY_STATE_I64 2u
#define CCREPLAY_STATE_F64 3u
#define CCREPLAY_STATE_BOOL 4u

/** One named state value. `bits` holds a u64 as is, an i64 in two's complement, the IEEE-754
 *  bits of a double (compared bit for bit), or 0 / 1 for a bool. */
typedef struct ccreplay_state_value {
    char name[CCREPLAY_NAME_MAX]; /* e.g. "W", "Wc", "U", "incStage" */
    uint32_t type;                /* CCREPLAY_STATE_* */
    uint32_t reserved;            /* 0 */
    uint64_t bits;
} ccreplay_state_value;

/** One decision. */
typedef struct ccreplay_decision {
    uint64_t t_ns;         /* time, ns: the event's time, or the timer's deadline */
    uint64_t cause_index;  /* the causing event's index (event causes) */
    uint64_t rate_bps;     /* CCREPLAY_OUT_RATE */
    uint64_t window_bytes; /* CCREPLAY_OUT_WINDOW */
    uint32_t flow;         /* flow the decision is for */
    uint32_t cause_kind;   /* the causing event's kind, or CCREPLAY_CAUSE_TIMER */
    uint32_t present;      /* CCREPLAY_OUT_* bits */
    uint32_t ack_cwnd;     /* CCREPLAY_OUT_ACK_CWND */
    uint16_t ack_n;        /* CCREPLAY_OUT_ACK_N */
    uint8_t ack_flags;     /* CCREPLAY_OUT_ACK_FLAGS */
    uint8_t send_cnp;      /* CCREPLAY_OUT_SEND_CNP: 0 or 1 */
    uint32_t n_state;      /* state[0 .. n_state) are filled, at most CCREPLAY_MAX_STATE */
    char timer_name[CCREPLAY_NAME_MAX]; /* CCREPLAY_CAUSE_TIMER: e.g. "alpha" */
    ccreplay_state_value state[CCREPLAY_MAX_STATE]; /* in the model's order */
} ccreplay_decision;

/* ---- setup ---------------------------------------------------------------------------------- */

/** A flow known before the replay (harness.md 1). IPv4 addresses fill bytes 0..3 of the
 *  16-byte arrays (network order), the rest is 0. */
typedef struct ccreplay_flow {
    uint32_t flow;      /* the dense id events and decisions use */
    uint32_t local_qp;  /* the capture point's QP */
    uint32_t remote_qp; /* the peer's QP */
    uint8_t ip_version; /* 4 or 6 */
    uint8_t reserved[3];
    uint8_t local_ip[16];
    uint8_t remote_ip[16];
} ccreplay_flow;

/** What ccreplay_dut_create is told. Every pointer is valid during the call only. */
typedef struct ccreplay_setup {
    uint32_t abi_version;      /* the harness's CCREPLAY_DUT_ABI_VERSION */
    uint32_t n_flows;          /* entries of `flows` (may be 0) */
    const char *model;         /* the model to behave as: "hpcc", "dcqcn", ... */
    const char *params_json;   /* the parameters, a JSON object with the reference model's
                                  names (C-7); missing keys take the model's defaults */
    const char *capture_point; /* "sender" or "receiver" */
    const ccreplay_flow *flows;
} ccreplay_setup;

/** The DUT's own handle type, opaque to the harness. */
typedef struct ccreplay_dut ccreplay_dut;

/* ---- functions (all required except ccreplay_dut_drain) ------------------------------------ */

/** Returns CCREPLAY_DUT_ABI_VERSION of the header the library was built with. */
uint32_t ccreplay_dut_abi_version(void);

/** Create a DUT. On success store the handle in `*out`, write the DUT's name (for reports, 1..31
 *  bytes, NUL-terminated) into `name` (CCREPLAY_NAME_MAX bytes) and return CCREPLAY_OK. On
 *  failure (unknown model, rejected parameter...) write a message into `err` and return
 *  another value; `*out` is then ignored. */
int32_t ccreplay_dut_create(const ccreplay_setup *setup, ccreplay_dut **out, char *name,
                            char *err);

/** Feed one event (in trace order). Write up to `cap` decisions into `out` (timer decisions
 *  due at or before ev->t_ns first, then the event's own), store their number in `*n_out`.
 *  Return CCREPLAY_OK, CCREPLAY_MORE (out full, more to come through ccreplay_dut_drain), or
 *  an error with a message in `err`. */
int32_t ccreplay_dut_event(ccreplay_dut *dut, const ccreplay_event *ev, ccreplay_decision *out,
                           size_t cap, size_t *n_out, char *err);

/** The trace ended at `t_end_ns`: write the decisions of timers due up to then, as for
 *  ccreplay_dut_event. */
int32_t ccreplay_dut_finish(ccreplay_dut *dut, uint64_t t_end_ns, ccreplay_decision *out,
                            size_t cap, size_t *n_out, char *err);

/** Optional: after CCREPLAY_MORE, write the next pending decisions of the same call, as for
 *  ccreplay_dut_event. Needed only by a DUT that ever returns CCREPLAY_MORE. */
int32_t ccreplay_dut_drain(ccreplay_dut *dut, ccreplay_decision *out, size_t cap, size_t *n_out,
                           char *err);

/** Free the handle. Called exactly once per successful create, also after an error. */
void ccreplay_dut_destroy(ccreplay_dut *dut);

/* ---- helpers ------------------------------------------------------------------------------- */

/** The bits of a double for ccreplay_state_value.bits. */
static inline uint64_t ccreplay_f64_bits(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/** Fill one state value; `name` is cut to 31 bytes. */
static inline void ccreplay_set_state(ccreplay_state_value *s, const char *name, uint32_t type,
                                      uint64_t bits) {
    size_t i = 0;
    for (; name[i] != '\0' && i < CCREPLAY_NAME_MAX - 1; i++) {
        s->name[i] = name[i];
    }
    memset(s->name + i, 0, CCREPLAY_NAME_MAX - i);
    s->type = type;
    s->reserved = 0;
    s->bits = bits;
}

/* ---- layout (the harness asserts the same numbers) ------------------------------------------ */

#if defined(__cplusplus)
#define CCREPLAY_STATIC_ASSERT(c, m) static_assert(c, m)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define CCREPLAY_STATIC_ASSERT(c, m) _Static_assert(c, m)
#else
#define CCREPLAY_STATIC_ASSERT(c, m)
#endif
CCREPLAY_STATIC_ASSERT(sizeof(ccreplay_int_hop) == 12, "ccreplay_int_hop layout");
CCREPLAY_STATIC_ASSERT(sizeof(ccreplay_event) == 248, "ccreplay_event layout");
CCREPLAY_STATIC_ASSERT(offsetof(ccreplay_event, int_nhop) == 64, "ccreplay_event layout");
CCREPLAY_STATIC_ASSERT(offsetof(ccreplay_event, int_hops) == 68, "ccreplay_event layout");
CCREPLAY_STATIC_ASSERT(sizeof(ccreplay_state_value) == 48, "ccreplay_state_value layout");
CCREPLAY_STATIC_ASSERT(sizeof(ccreplay_decision) == 664, "ccreplay_decision layout");
CCREPLAY_STATIC_ASSERT(offsetof(ccreplay_decision, n_state) == 52, "ccreplay_decision layout");
CCREPLAY_STATIC_ASSERT(offsetof(ccreplay_decision, state) == 88, "ccreplay_decision layout");
CCREPLAY_STATIC_ASSERT(sizeof(ccreplay_flow) == 48, "ccreplay_flow layout");
#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
CCREPLAY_STATIC_ASSERT(sizeof(ccreplay_setup) == 40, "ccreplay_setup layout");
#endif

#ifdef __cplusplus
}
#endif

#endif /* CCREPLAY_DUT_H */
