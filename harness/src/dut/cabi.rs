//! C ABI DUT adapter (harness.md 4): a shared library implementing
//! `harness/include/ccreplay_dut.h`, loaded at run time with `libloading`. docs/dut.md describes
//! the ABI; the structs below mirror the header field for field (the layout is asserted here
//! and in the header with the same numbers).
//!
//! Everything the library hands back is validated before it becomes a [`Decision`]: counts
//! within the capacity given, known codes and presence bits, NUL-terminated UTF-8 names within
//! their arrays (interned through [`crate::intern`]), booleans 0 or 1, finite doubles, and the
//! ordering rules shared with the process protocol. A non-zero return code, or anything
//! invalid, is a [`DutError`] naming the event.
// Calling into a shared library is unsafe by nature; this module is the only place of the
// harness that does it, and every unsafe block states the invariant it relies on.
#![allow(unsafe_code)]
// `DutError` is the `Dut` trait's error: large, but returned at most once per run.
#![allow(clippy::result_large_err)]

use std::ffi::{CString, c_char, c_void};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ccreplay_reference_cc::{
    Cause, Decision, Event, EventKind, Outputs, State, StateValue, event::MAX_STATE,
};
use libloading::Library;

use super::process::{Call, NAME_MAX_BYTES, check_decisions, check_name};
use super::{Dut, DutError, DutSetup};
use crate::intern;
use crate::protocol;

/// `CCREPLAY_DUT_ABI_VERSION`: the ABI version of `ccreplay_dut.h` this harness speaks.
pub const ABI_VERSION: u32 = 1;
/// `CCREPLAY_NAME_MAX`: bytes of a name array, NUL included.
pub const NAME_MAX: usize = 32;
/// `CCREPLAY_ERR_MAX`: bytes of an error message buffer, NUL included.
pub const ERR_MAX: usize = 512;
/// `CCREPLAY_MAX_INT_HOPS`.
pub const MAX_INT_HOPS: usize = 15;
/// Decisions the harness makes room for per call (more go through `ccreplay_dut_drain`).
pub const DECISIONS_PER_CALL: usize = 64;
/// Most decisions accepted in answer to one event or finish (a runaway `CCREPLAY_MORE` loop
/// stops here).
pub const MAX_DECISIONS_PER_CALL: usize = 1 << 20;

const RC_OK: i32 = 0;
const RC_MORE: i32 = 1;

const TX_DATA: u32 = 1;
const RX_ACK: u32 = 2;
const RX_NAK: u32 = 3;
const RX_CNP: u32 = 4;
const RX_DATA: u32 = 5;
const DEQUEUE: u32 = 6;
const CAUSE_TIMER: u32 = 16;

const HAS_INT: u32 = 1 << 0;
const HAS_N: u32 = 1 << 1;
const HAS_CWND: u32 = 1 << 2;
const HAS_RCC_FLAGS: u32 = 1 << 3;
const HAS_TS: u32 = 1 << 4;
const HAS_SEND_TS: u32 = 1 << 5;
const HAS_QLEN: u32 = 1 << 6;

const OUT_RATE: u32 = 1 << 0;
const OUT_WINDOW: u32 = 1 << 1;
const OUT_SEND_CNP: u32 = 1 << 2;
const OUT_ACK_N: u32 = 1 << 3;
const OUT_ACK_CWND: u32 = 1 << 4;
const OUT_ACK_FLAGS: u32 = 1 << 5;
/// mark_ce, carried in the `send_cnp` byte (0 or 1): the v1 layout has no field of its own.
const OUT_MARK_CE: u32 = 1 << 6;
const OUT_ALL: u32 = (1 << 7) - 1;

const STATE_U64: u32 = 1;
const STATE_I64: u32 = 2;
const STATE_F64: u32 = 3;
const STATE_BOOL: u32 = 4;

/// `ccreplay_int_hop`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct CIntHop {
    ts: u32,
    tx_bytes: u32,
    qlen: u16,
    b: u8,
    reserved: u8,
}

/// `ccreplay_event`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct CEvent {
    t_ns: u64,
    index: u64,
    ts_ns: u64,
    send_ts_ns: u64,
    flow: u32,
    kind: u32,
    present: u32,
    psn: u32,
    bytes: u32,
    cwnd: u32,
    n: u16,
    int_path_id: u16,
    opcode: u8,
    syndrome: u8,
    ecn: u8,
    rcc_flags: u8,
    int_nhop: u8,
    reserved: [u8; 3],
    int_hops: [CIntHop; MAX_INT_HOPS],
}

/// `ccreplay_state_value`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct CStateValue {
    name: [u8; NAME_MAX],
    kind: u32,
    reserved: u32,
    bits: u64,
}

/// `ccreplay_decision`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct CDecision {
    t_ns: u64,
    cause_index: u64,
    rate_bps: u64,
    window_bytes: u64,
    flow: u32,
    cause_kind: u32,
    present: u32,
    ack_cwnd: u32,
    ack_n: u16,
    ack_flags: u8,
    send_cnp: u8,
    n_state: u32,
    timer_name: [u8; NAME_MAX],
    state: [CStateValue; MAX_STATE],
}

const ZERO_DECISION: CDecision = CDecision {
    t_ns: 0,
    cause_index: 0,
    rate_bps: 0,
    window_bytes: 0,
    flow: 0,
    cause_kind: 0,
    present: 0,
    ack_cwnd: 0,
    ack_n: 0,
    ack_flags: 0,
    send_cnp: 0,
    n_state: 0,
    timer_name: [0; NAME_MAX],
    state: [CStateValue {
        name: [0; NAME_MAX],
        kind: 0,
        reserved: 0,
        bits: 0,
    }; MAX_STATE],
};

/// `ccreplay_flow`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct CFlow {
    flow: u32,
    local_qp: u32,
    remote_qp: u32,
    ip_version: u8,
    reserved: [u8; 3],
    local_ip: [u8; 16],
    remote_ip: [u8; 16],
}

/// `ccreplay_setup`.
#[repr(C)]
struct CSetup {
    abi_version: u32,
    n_flows: u32,
    model: *const c_char,
    params_json: *const c_char,
    capture_point: *const c_char,
    flows: *const CFlow,
}

// The numbers `ccreplay_dut.h` asserts: both sides agree on every layout.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<CIntHop>() == 12);
    assert!(size_of::<CEvent>() == 248);
    assert!(offset_of!(CEvent, int_nhop) == 64);
    assert!(offset_of!(CEvent, int_hops) == 68);
    assert!(size_of::<CStateValue>() == 48);
    assert!(size_of::<CDecision>() == 664);
    assert!(offset_of!(CDecision, n_state) == 52);
    assert!(offset_of!(CDecision, state) == 88);
    assert!(size_of::<CFlow>() == 48);
    #[cfg(target_pointer_width = "64")]
    assert!(size_of::<CSetup>() == 40);
    assert!(NAME_MAX_BYTES + 1 == NAME_MAX);
};

type AbiVersionFn = unsafe extern "C" fn() -> u32;
type CreateFn =
    unsafe extern "C" fn(*const CSetup, *mut *mut c_void, *mut c_char, *mut c_char) -> i32;
type EventFn = unsafe extern "C" fn(
    *mut c_void,
    *const CEvent,
    *mut CDecision,
    usize,
    *mut usize,
    *mut c_char,
) -> i32;
type FinishFn =
    unsafe extern "C" fn(*mut c_void, u64, *mut CDecision, usize, *mut usize, *mut c_char) -> i32;
type DrainFn =
    unsafe extern "C" fn(*mut c_void, *mut CDecision, usize, *mut usize, *mut c_char) -> i32;
type DestroyFn = unsafe extern "C" fn(*mut c_void);

/// The functions of one library, copied out of their `libloading::Symbol`s.
#[derive(Clone, Copy)]
struct Api {
    event: EventFn,
    finish: FinishFn,
    drain: Option<DrainFn>,
    destroy: DestroyFn,
}

/// A DUT in a shared library with the C ABI of `harness/include/ccreplay_dut.h`.
pub struct CAbiDut {
    /// Handle from `ccreplay_dut_create`; non-null until `Drop` destroys it.
    handle: *mut c_void,
    api: Api,
    name: String,
    /// The library path, for messages.
    path: String,
    /// Room for [`DECISIONS_PER_CALL`] decisions, reused for every call.
    buf: Vec<CDecision>,
    cev: CEvent,
    err: [u8; ERR_MAX],
    /// The last list of state names seen, interned: most DUTs send the same list every time.
    names_cache: &'static [&'static str],
    /// The event being answered, as JSON, built only for a message.
    scratch: Vec<u8>,
    failed: bool,
    /// Keeps the code behind `api` and `handle` mapped; dropped last (after `Drop::drop`
    /// destroyed the handle).
    _lib: Library,
}

// SAFETY: the handle is only used through `&mut self`, so one thread at a time; the header
// requires a DUT to accept a handle moving between threads (docs/dut.md). `Library` is Send.
unsafe impl Send for CAbiDut {}

impl CAbiDut {
    /// Load the library at `path`, check its ABI version, and create a DUT for `setup`.
    ///
    /// A path without a `/` that names an existing file is taken relative to the working
    /// directory (not searched for like a system library).
    pub fn load(path: &Path, setup: &DutSetup) -> Result<CAbiDut, DutError> {
        let shown = path.display().to_string();
        let fail = |what: String, hint: &str| DutError {
            dut: shown.clone(),
            what,
            event: None,
            last_reply: None,
            stderr_tail: String::new(),
            hint: Some(hint.to_owned()),
        };
        let full: PathBuf = if path.exists() {
            path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
        } else if path.components().count() > 1 || path.is_absolute() {
            return Err(fail(
                "could not load: no such file".into(),
                "build the library first (docs/dut.md) and give its path",
            ));
        } else {
            path.to_path_buf()
        };
        // SAFETY: loading runs the library's initialisers; a DUT library is code the user
        // chose to run in this process (docs/dut.md says so), nothing more can be checked.
        let lib = unsafe { Library::new(&full) }.map_err(|e| {
            fail(
                format!("could not load: {e}"),
                "give the path of a shared library built for this machine (gcc -shared -fPIC)",
            )
        })?;

        macro_rules! symbol {
            ($name:literal, $ty:ty) => {
                // SAFETY: the header declares this symbol with exactly this signature
                // (`$ty` mirrors it); the pointer is only used while `lib` is alive, since
                // `lib` moves into the returned `CAbiDut`, which outlives every call.
                match unsafe { lib.get::<$ty>(concat!($name, "\0").as_bytes()) } {
                    Ok(s) => Ok(*s),
                    Err(e) => Err(e),
                }
            };
        }
        let missing = |name: &str, e: libloading::Error| {
            fail(
                format!("the library has no `{name}` ({e})"),
                "implement every function of harness/include/ccreplay_dut.h with C linkage \
                 (extern \"C\" in C++) and export it",
            )
        };
        let abi_version = symbol!("ccreplay_dut_abi_version", AbiVersionFn)
            .map_err(|e| missing("ccreplay_dut_abi_version", e))?;
        // SAFETY: a function without arguments returning u32, as the header declares.
        let version = unsafe { abi_version() };
        if version != ABI_VERSION {
            return Err(fail(
                format!(
                    "the library speaks C ABI version {version}, the harness speaks {ABI_VERSION}"
                ),
                "rebuild the library against harness/include/ccreplay_dut.h of this ccreplay",
            ));
        }
        let create = symbol!("ccreplay_dut_create", CreateFn)
            .map_err(|e| missing("ccreplay_dut_create", e))?;
        let api = Api {
            event: symbol!("ccreplay_dut_event", EventFn)
                .map_err(|e| missing("ccreplay_dut_event", e))?,
            finish: symbol!("ccreplay_dut_finish", FinishFn)
                .map_err(|e| missing("ccreplay_dut_finish", e))?,
            drain: symbol!("ccreplay_dut_drain", DrainFn).ok(),
            destroy: symbol!("ccreplay_dut_destroy", DestroyFn)
                .map_err(|e| missing("ccreplay_dut_destroy", e))?,
        };

        let cstr = |what: &str, s: &str| {
            CString::new(s).map_err(|_| {
                fail(
                    format!("cannot pass the {what}: it holds a NUL byte"),
                    "remove the NUL byte",
                )
            })
        };
        if !setup.params.is_object() {
            return Err(fail(
                "cannot pass the parameters: not a JSON object".into(),
                "give the parameters as a table / JSON object",
            ));
        }
        let model = cstr("model name", &setup.model)?;
        let params = cstr("parameters", &setup.params.to_string())?;
        let capture_point = cstr("capture point", &setup.capture_point)?;
        let flows: Vec<CFlow> = setup
            .flows
            .iter()
            .map(|f| {
                let (v, local_ip) = ip_bytes(f.local_ip);
                let (_, remote_ip) = ip_bytes(f.remote_ip);
                CFlow {
                    flow: f.id,
                    local_qp: f.local_qp,
                    remote_qp: f.remote_qp,
                    ip_version: v,
                    reserved: [0; 3],
                    local_ip,
                    remote_ip,
                }
            })
            .collect();
        let n_flows = u32::try_from(flows.len()).map_err(|_| {
            fail(
                "cannot pass the flows: more than 2^32 - 1".into(),
                "split the trace",
            )
        })?;
        let c_setup = CSetup {
            abi_version: ABI_VERSION,
            n_flows,
            model: model.as_ptr(),
            params_json: params.as_ptr(),
            capture_point: capture_point.as_ptr(),
            flows: if flows.is_empty() {
                std::ptr::null()
            } else {
                flows.as_ptr()
            },
        };
        let mut handle: *mut c_void = std::ptr::null_mut();
        let mut name = [0u8; NAME_MAX];
        let mut err = [0u8; ERR_MAX];
        // SAFETY: `c_setup` and the strings and flows it points to live until after the call;
        // `handle`, `name` (NAME_MAX bytes) and `err` (ERR_MAX bytes) are writable buffers of
        // the sizes the header promises.
        let rc = unsafe {
            create(
                &c_setup,
                &mut handle,
                name.as_mut_ptr().cast(),
                err.as_mut_ptr().cast(),
            )
        };
        if rc != RC_OK {
            return Err(fail(
                format!("ccreplay_dut_create failed ({rc}): {}", message(&err)),
                "the library refused the model, the parameters or the flows",
            ));
        }
        if handle.is_null() {
            return Err(fail(
                "ccreplay_dut_create returned CCREPLAY_OK but no handle".into(),
                "store the new handle in *out",
            ));
        }
        let mut dut = CAbiDut {
            handle,
            api,
            name: shown.clone(),
            path: shown,
            buf: vec![ZERO_DECISION; DECISIONS_PER_CALL],
            cev: CEvent::default(),
            err: [0; ERR_MAX],
            names_cache: &[],
            scratch: Vec::new(),
            failed: false,
            _lib: lib,
        };
        // From here on `Drop` destroys the handle, also when the name is refused.
        match c_name(&name) {
            Ok(n) => dut.name = n.to_owned(),
            Err(e) => {
                return Err(dut.error(
                    None,
                    format!("ccreplay_dut_create wrote an invalid name: {e}"),
                    "write 1 to 31 bytes of UTF-8 and a NUL into `name`",
                ));
            }
        }
        Ok(dut)
    }

    fn error(&mut self, ev: Option<&Event>, what: String, hint: &str) -> DutError {
        self.failed = true;
        let event = ev.map(|ev| {
            self.scratch.clear();
            protocol::write_event(&mut self.scratch, ev);
            String::from_utf8_lossy(self.scratch.trim_ascii_end()).into_owned()
        });
        DutError {
            dut: format!("{} ({})", self.name, self.path),
            what,
            event,
            last_reply: None,
            stderr_tail: String::new(),
            hint: Some(hint.to_owned()),
        }
    }

    /// Run one call (`first`) and every `ccreplay_dut_drain` it asks for; validate and push
    /// the decisions. On error `out` keeps its length.
    fn collect(
        &mut self,
        call: Call<'_>,
        out: &mut Vec<Decision>,
        first: impl FnOnce(&mut Self) -> (i32, usize),
    ) -> Result<(), DutError> {
        let ev = match call {
            Call::Event(ev) => Some(ev),
            Call::Finish(_) => None,
        };
        let fname = if ev.is_some() {
            "ccreplay_dut_event"
        } else {
            "ccreplay_dut_finish"
        };
        if self.failed {
            return Err(self.error(
                ev,
                format!("cannot call {fname}: the DUT failed earlier"),
                "the first error of this DUT says what went wrong",
            ));
        }
        let start = out.len();
        let (mut rc, mut n) = first(self);
        let mut fname = fname;
        loop {
            if rc != RC_OK && rc != RC_MORE {
                out.truncate(start);
                let what = format!("{fname} returned error {rc}: {}", message(&self.err));
                return Err(self.error(ev, what, "the DUT stopped the run itself"));
            }
            if n > self.buf.len() {
                out.truncate(start);
                let what = format!(
                    "{fname} reported {n} decisions, but the capacity was {}",
                    self.buf.len()
                );
                return Err(self.error(ev, what, "write at most `cap` decisions per call"));
            }
            for i in 0..n {
                match self.decision(i) {
                    Ok(d) => out.push(d),
                    Err(e) => {
                        let what = format!("{fname}: decision {}: {e}", out.len() - start);
                        out.truncate(start);
                        return Err(self.error(
                            ev,
                            what,
                            "fill every field the header marks as required for a decision",
                        ));
                    }
                }
            }
            if rc == RC_OK {
                break;
            }
            // CCREPLAY_MORE: out was full, more decisions of this call are pending.
            let drain = match self.api.drain {
                Some(d) if n == self.buf.len() => d,
                Some(_) => {
                    out.truncate(start);
                    let what = format!(
                        "{fname} returned CCREPLAY_MORE with {n} of {} decisions",
                        self.buf.len()
                    );
                    return Err(self.error(ev, what, "return CCREPLAY_MORE only with `out` full"));
                }
                None => {
                    out.truncate(start);
                    let what = format!(
                        "{fname} returned CCREPLAY_MORE, but the library has no ccreplay_dut_drain"
                    );
                    return Err(self.error(ev, what, "implement ccreplay_dut_drain"));
                }
            };
            if out.len() - start >= MAX_DECISIONS_PER_CALL {
                out.truncate(start);
                let what = format!(
                    "more than {MAX_DECISIONS_PER_CALL} decisions for one call (CCREPLAY_MORE \
                     without end?)"
                );
                return Err(self.error(ev, what, "return CCREPLAY_OK once nothing is pending"));
            }
            fname = "ccreplay_dut_drain";
            self.err[0] = 0;
            let mut m = 0usize;
            // SAFETY: `handle` is live (not yet destroyed); `buf` holds `buf.len()` writable
            // decisions; `m` and `err` (ERR_MAX bytes) are writable; `drain` has the header's
            // signature.
            rc = unsafe {
                drain(
                    self.handle,
                    self.buf.as_mut_ptr(),
                    self.buf.len(),
                    &mut m,
                    self.err.as_mut_ptr().cast(),
                )
            };
            n = m;
        }
        if let Err(e) = check_decisions(call, &out[start..]) {
            out.truncate(start);
            return Err(self.error(
                ev,
                format!("broke the protocol: {e}"),
                "timer decisions come first, then the event's own (docs/dut.md)",
            ));
        }
        Ok(())
    }

    /// Validate `buf[i]` and make it a [`Decision`].
    fn decision(&mut self, i: usize) -> Result<Decision, String> {
        // A copy (664 bytes): the names borrowed from it outlive the update of the cache.
        let c = self.buf[i];
        if c.present & !OUT_ALL != 0 {
            return Err(format!("unknown output bits {:#x} in `present`", c.present));
        }
        let cause = match c.cause_kind {
            TX_DATA | RX_ACK | RX_NAK | RX_CNP | RX_DATA | DEQUEUE => Cause::Event {
                kind: kind_name(c.cause_kind),
                index: c.cause_index,
            },
            CAUSE_TIMER => {
                let n = c_name(&c.timer_name).map_err(|e| format!("timer_name: {e}"))?;
                check_name(n).map_err(|e| format!("timer {e}"))?;
                Cause::Timer {
                    name: intern::name(n).ok_or_else(too_many)?,
                }
            }
            k => return Err(format!("unknown cause_kind {k}")),
        };
        let has = |bit: u32| c.present & bit != 0;
        if has(OUT_SEND_CNP) && has(OUT_MARK_CE) {
            return Err("send_cnp and mark_ce share a byte: set at most one of them".into());
        }
        let flag = |bit: u32, what: &str| -> Result<Option<bool>, String> {
            if !has(bit) {
                return Ok(None);
            }
            match c.send_cnp {
                0 => Ok(Some(false)),
                1 => Ok(Some(true)),
                v => Err(format!("{what} = {v}, expected 0 or 1")),
            }
        };
        let send_cnp = flag(OUT_SEND_CNP, "send_cnp")?;
        let mark_ce = flag(OUT_MARK_CE, "mark_ce")?;
        let outputs = Outputs {
            rate_bps: has(OUT_RATE).then_some(c.rate_bps),
            window_bytes: has(OUT_WINDOW).then_some(c.window_bytes),
            send_cnp,
            ack_n: has(OUT_ACK_N).then_some(c.ack_n),
            ack_cwnd: has(OUT_ACK_CWND).then_some(c.ack_cwnd),
            ack_flags: has(OUT_ACK_FLAGS).then_some(c.ack_flags),
            mark_ce,
        };
        let n = c.n_state as usize;
        if n > MAX_STATE {
            return Err(format!("n_state = {n}, at most {MAX_STATE}"));
        }
        let mut values = [StateValue::U64(0); MAX_STATE];
        let mut names: [&str; MAX_STATE] = [""; MAX_STATE];
        for (j, s) in c.state[..n].iter().enumerate() {
            let name = c_name(&s.name).map_err(|e| format!("state[{j}].name: {e}"))?;
            check_name(name).map_err(|e| format!("state[{j}]: {e}"))?;
            names[j] = name;
            values[j] = match s.kind {
                STATE_U64 => StateValue::U64(s.bits),
                STATE_I64 => StateValue::I64(s.bits as i64),
                STATE_F64 => StateValue::F64(f64::from_bits(s.bits)),
                STATE_BOOL => match s.bits {
                    0 => StateValue::Bool(false),
                    1 => StateValue::Bool(true),
                    v => return Err(format!("state `{name}`: bool bits = {v}, expected 0 or 1")),
                },
                t => return Err(format!("state `{name}`: unknown type {t}")),
            };
        }
        let names = &names[..n];
        let list = if self.names_cache.len() == n
            && self.names_cache.iter().zip(names).all(|(a, b)| a == b)
        {
            self.names_cache
        } else {
            let mut interned: [&'static str; MAX_STATE] = [""; MAX_STATE];
            for (k, name) in names.iter().enumerate() {
                interned[k] = intern::name(name).ok_or_else(too_many)?;
            }
            let list = intern::list(&interned[..n]).ok_or_else(too_many)?;
            self.names_cache = list;
            list
        };
        Ok(Decision {
            t_ns: c.t_ns,
            flow: c.flow,
            cause,
            outputs,
            state: State::new(list, &values[..n]),
        })
    }
}

fn too_many() -> String {
    format!("more than {} distinct names", intern::MAX_NAMES)
}

fn kind_name(code: u32) -> &'static str {
    match code {
        TX_DATA => "tx_data",
        RX_ACK => "rx_ack",
        RX_NAK => "rx_nak",
        RX_CNP => "rx_cnp",
        DEQUEUE => "dequeue",
        _ => "rx_data",
    }
}

/// The name in a NUL-terminated array: UTF-8 before the first NUL, which must exist.
fn c_name(a: &[u8; NAME_MAX]) -> Result<&str, String> {
    let end = a
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| format!("no NUL within its {NAME_MAX} bytes"))?;
    std::str::from_utf8(&a[..end]).map_err(|e| format!("not UTF-8 ({e})"))
}

/// An error message buffer as text (up to the first NUL, or all of it).
fn message(err: &[u8; ERR_MAX]) -> String {
    let end = err.iter().position(|&c| c == 0).unwrap_or(ERR_MAX);
    if end == 0 {
        "(no message)".into()
    } else {
        String::from_utf8_lossy(&err[..end]).into_owned()
    }
}

fn ip_bytes(ip: IpAddr) -> (u8, [u8; 16]) {
    match ip {
        IpAddr::V4(a) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&a.octets());
            (4, b)
        }
        IpAddr::V6(a) => (6, a.octets()),
    }
}

/// Fill the C event from an [`Event`] (all of it rewritten: nothing stale survives).
fn fill_event(c: &mut CEvent, ev: &Event) {
    *c = CEvent {
        t_ns: ev.t_ns,
        index: ev.index,
        flow: ev.flow,
        ..CEvent::default()
    };
    match &ev.kind {
        EventKind::TxData { psn, bytes, opcode } => {
            c.kind = TX_DATA;
            c.psn = *psn;
            c.bytes = *bytes;
            c.opcode = *opcode;
        }
        EventKind::RxAck(a) | EventKind::RxNak(a) => {
            c.kind = if matches!(ev.kind, EventKind::RxAck(_)) {
                RX_ACK
            } else {
                RX_NAK
            };
            c.psn = a.psn;
            c.syndrome = a.syndrome;
            if let Some(s) = &a.int {
                c.present |= HAS_INT;
                c.int_nhop = s.n_hop();
                c.int_path_id = s.path_id();
                for (dst, h) in c.int_hops.iter_mut().zip(s.hops()) {
                    *dst = CIntHop {
                        ts: h.ts,
                        tx_bytes: h.tx_bytes,
                        qlen: h.qlen,
                        b: h.b,
                        reserved: 0,
                    };
                }
            }
            if let Some(n) = a.n {
                c.present |= HAS_N;
                c.n = n;
            }
            if let Some(w) = a.cwnd {
                c.present |= HAS_CWND;
                c.cwnd = w;
            }
            if let Some(f) = a.rcc_flags {
                c.present |= HAS_RCC_FLAGS;
                c.rcc_flags = f;
            }
            if let Some(t) = a.ts_ns {
                c.present |= HAS_TS;
                c.ts_ns = t;
            }
        }
        EventKind::RxCnp => c.kind = RX_CNP,
        EventKind::RxData {
            psn,
            bytes,
            opcode,
            ecn,
            send_ts_ns,
        } => {
            c.kind = RX_DATA;
            c.psn = *psn;
            c.bytes = *bytes;
            c.opcode = *opcode;
            c.ecn = *ecn;
            if let Some(t) = send_ts_ns {
                c.present |= HAS_SEND_TS;
                c.send_ts_ns = *t;
            }
        }
        EventKind::Dequeue {
            psn,
            bytes,
            opcode,
            ecn,
            qlen_bytes,
        } => {
            c.kind = DEQUEUE;
            c.psn = *psn;
            c.bytes = *bytes;
            c.opcode = *opcode;
            c.ecn = *ecn;
            if let Some(q) = qlen_bytes {
                // The queue length travels in `cwnd` (bytes, saturating): v1 has no field of its own.
                c.present |= HAS_QLEN;
                c.cwnd = (*q).min(u32::MAX as u64) as u32;
            }
        }
    }
}

impl Dut for CAbiDut {
    fn name(&self) -> &str {
        &self.name
    }

    fn event(&mut self, ev: &Event, out: &mut Vec<Decision>) -> Result<(), DutError> {
        fill_event(&mut self.cev, ev);
        self.collect(Call::Event(ev), out, |s| {
            s.err[0] = 0;
            let mut n = 0usize;
            // SAFETY: `handle` is live (not yet destroyed); `cev` is a fully initialised
            // ccreplay_event; `buf` holds `buf.len()` writable decisions; `n` and `err`
            // (ERR_MAX bytes) are writable; `event` has the header's signature.
            let rc = unsafe {
                (s.api.event)(
                    s.handle,
                    &s.cev,
                    s.buf.as_mut_ptr(),
                    s.buf.len(),
                    &mut n,
                    s.err.as_mut_ptr().cast(),
                )
            };
            (rc, n)
        })
    }

    fn finish(&mut self, t_end_ns: u64, out: &mut Vec<Decision>) -> Result<(), DutError> {
        self.collect(Call::Finish(t_end_ns), out, |s| {
            s.err[0] = 0;
            let mut n = 0usize;
            // SAFETY: as in `event`, with the end time instead of an event.
            let rc = unsafe {
                (s.api.finish)(
                    s.handle,
                    t_end_ns,
                    s.buf.as_mut_ptr(),
                    s.buf.len(),
                    &mut n,
                    s.err.as_mut_ptr().cast(),
                )
            };
            (rc, n)
        })
    }
}

impl Drop for CAbiDut {
    fn drop(&mut self) {
        // SAFETY: `handle` came from a successful create and is destroyed exactly once, here,
        // before `_lib` (a later field) unmaps the code.
        unsafe { (self.api.destroy)(self.handle) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_need_a_nul_and_utf8() {
        let mut a = [0u8; NAME_MAX];
        a[..2].copy_from_slice(b"Wc");
        assert_eq!(c_name(&a), Ok("Wc"));
        assert!(c_name(&[b'x'; NAME_MAX]).unwrap_err().contains("no NUL"));
        a[0] = 0xFF;
        assert!(c_name(&a).unwrap_err().contains("not UTF-8"));
    }

    #[test]
    fn events_fill_every_field() {
        use ccreplay_codecs::shim::int::{IntHop, IntStack};
        use ccreplay_reference_cc::event::AckInfo;
        let hop = IntHop {
            b: 7,
            ts: 0xFF_FFFE,
            tx_bytes: 0xF_FFFF,
            qlen: 9,
        };
        let ev = Event {
            t_ns: 5,
            flow: 2,
            index: 3,
            kind: EventKind::RxNak(AckInfo {
                psn: 0xAB_CDEF,
                syndrome: 0x60,
                int: IntStack::from_hops(0x123, &[hop, hop]),
                n: Some(4),
                cwnd: None,
                rcc_flags: Some(1),
                ts_ns: None,
            }),
        };
        let mut c = CEvent {
            cwnd: 77,
            ..CEvent::default()
        };
        fill_event(&mut c, &ev);
        assert_eq!((c.t_ns, c.flow, c.index, c.kind), (5, 2, 3, RX_NAK));
        assert_eq!(
            (c.psn, c.syndrome, c.n, c.rcc_flags),
            (0xAB_CDEF, 0x60, 4, 1)
        );
        assert_eq!(c.present, HAS_INT | HAS_N | HAS_RCC_FLAGS);
        assert_eq!((c.int_nhop, c.int_path_id), (2, 0x123));
        assert_eq!(
            (
                c.int_hops[1].b,
                c.int_hops[1].ts,
                c.int_hops[1].tx_bytes,
                c.int_hops[1].qlen
            ),
            (7, 0xFF_FFFE, 0xF_FFFF, 9)
        );
        assert_eq!(c.int_hops[2].ts, 0);
        // The stale cwnd of a previous event is gone.
        assert_eq!(c.cwnd, 0);
    }
}
