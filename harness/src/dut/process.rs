//! External-process DUT adapter (harness.md 4): the harness starts a command and speaks JSON
//! Lines over its stdin and stdout. The protocol, message by message, is in docs/dut.md:
//!
//! 1. harness → DUT `{"type": "hello", "protocol": 1, "model", "params", "capture_point",
//!    "flows"}`; DUT → harness `{"type": "hello", "protocol": 1, "name": "..."}`.
//! 2. per event, harness → DUT `{"type": "event", <the event of protocol::write_event>}`;
//!    DUT → harness `{"type": "decisions", "decisions": [<protocol::write_decision form>...]}`
//!    (timer decisions due before the event first, then the event's own).
//! 3. harness → DUT `{"type": "finish", "t": <trace end, ns>}`; DUT → harness the decisions of
//!    timers due up to then; then the DUT exits with status 0.
//!
//! At any point the DUT may answer `{"type": "error", "message": "..."}` to stop the run.
//!
//! Nothing blocks without a bound: the child's stdout and stderr are read by two threads (the
//! reply waits on a channel with the per-request timeout), requests are written by a third
//! thread (a DUT that stops reading its stdin cannot block the harness), and the child is
//! killed and reaped on any error and on drop.

// `DutError` is the `Dut` trait's error: large, but returned at most once per run.
#![allow(clippy::result_large_err)]

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{
    self, Receiver, RecvTimeoutError, Sender, SyncSender, TryRecvError, TrySendError,
};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ccreplay_reference_cc::{Cause, Decision, Event, StateValue};
use serde_json::Value;

use super::{Dut, DutError, DutSetup};
use crate::protocol::{self, PROTOCOL_VERSION};

/// Per-request timeout when the caller has no opinion.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Lines of the DUT's stderr kept for error messages.
pub const STDERR_TAIL_LINES: usize = 20;
/// Longest stderr line kept (longer lines are cut and marked).
const STDERR_LINE_MAX: usize = 512;
/// Longest reply line accepted (a reply of 10,000 decisions is about 4 MB).
pub const MAX_REPLY_BYTES: usize = 16 << 20;
/// How much of a request or reply an error message shows.
const SHOW_MAX: usize = 2000;
/// How long to wait for an exiting DUT's status and its last stderr lines after its stdout
/// closed (a crash) before killing it.
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// Longest name accepted for a state value or timer (docs/dut.md).
pub const NAME_MAX_BYTES: usize = 31;

/// What the stdout thread hands over.
enum FromChild {
    Line(Vec<u8>),
    TooLong,
    Eof,
    ReadError(String),
}

/// The last lines the DUT wrote to stderr, bounded.
#[derive(Default)]
struct Tail {
    lines: VecDeque<String>,
}

impl Tail {
    fn push(&mut self, line: String) {
        if self.lines.len() == STDERR_TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    fn text(&self) -> String {
        let mut s = String::new();
        for (i, l) in self.lines.iter().enumerate() {
            if i > 0 {
                s.push('\n');
            }
            s.push_str(l);
        }
        s
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Running,
    Finished,
    Failed,
}

/// Why a round trip failed, before it is put into words with its context.
enum Trouble {
    Timeout,
    Closed,
    TooLong,
    Read(String),
    Unsolicited,
    NotReading,
}

/// A DUT running as a child process, speaking the JSON Lines protocol of docs/dut.md.
pub struct ProcessDut {
    /// The command line, for messages.
    command: String,
    /// The name the DUT gave in its hello.
    name: String,
    timeout: Duration,
    child: Option<Child>,
    /// Requests to the writer thread (dropped to close the DUT's stdin).
    to_child: Option<SyncSender<Vec<u8>>>,
    /// Request buffers handed back by the writer thread for reuse.
    written: Receiver<Vec<u8>>,
    from_child: Receiver<FromChild>,
    /// Reply buffers handed back to the stdout thread for reuse.
    recycle: Sender<Vec<u8>>,
    stderr: Arc<Mutex<Tail>>,
    /// Disconnected once the stderr thread has read to the end.
    stderr_done: Receiver<()>,
    /// The last line the DUT wrote to stdout.
    last_reply: Vec<u8>,
    has_reply: bool,
    /// The request being answered (for messages and reuse).
    request: Vec<u8>,
    scratch: Vec<u8>,
    phase: Phase,
}

impl ProcessDut {
    /// Start `command` (program then arguments, not through a shell) and run the hello
    /// exchange with `setup`. `timeout` bounds the wait for each reply (the hello's too).
    pub fn spawn(
        command: &[String],
        setup: &DutSetup,
        timeout: Duration,
    ) -> Result<ProcessDut, DutError> {
        let shown = display_command(command);
        let start_error = |what: String, hint: String| DutError {
            dut: shown.clone(),
            what,
            event: None,
            last_reply: None,
            stderr_tail: String::new(),
            hint: Some(hint),
        };
        let Some((program, args)) = command.split_first() else {
            return Err(start_error(
                "could not start: the command is empty".into(),
                "give the program and its arguments, e.g. --dut process:\"python3 dut.py\"".into(),
            ));
        };
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                let hint = match e.kind() {
                    io::ErrorKind::NotFound => format!(
                        "no program `{program}`: check the path, or that it is on PATH (the \
                         command is split into words like a shell would, without expansion)"
                    ),
                    io::ErrorKind::PermissionDenied => format!(
                        "`{program}` is not executable: chmod +x it, or run it through its \
                         interpreter (e.g. python3 {program})"
                    ),
                    _ => "check the command and that the machine can start processes".into(),
                };
                start_error(format!("could not start: {e}"), hint)
            })?;

        // The three pipes exist: they were all requested as piped.
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(start_error(
                        "could not start: no pipes to the child".into(),
                        "this is a harness bug; please report it".into(),
                    ));
                }
            };

        let (to_child, written) = match spawn_writer(stdin) {
            Ok(c) => c,
            Err(e) => return Err(kill_with(child, start_error(e, thread_hint()))),
        };
        let (recycle, recycled) = mpsc::channel::<Vec<u8>>();
        let from_child = match spawn_stdout_reader(stdout, recycled) {
            Ok(c) => c,
            Err(e) => return Err(kill_with(child, start_error(e, thread_hint()))),
        };
        let tail = Arc::new(Mutex::new(Tail::default()));
        let stderr_done = match spawn_stderr_reader(stderr, Arc::clone(&tail)) {
            Ok(c) => c,
            Err(e) => return Err(kill_with(child, start_error(e, thread_hint()))),
        };
        let mut dut = ProcessDut {
            command: shown.clone(),
            name: shown,
            timeout,
            child: Some(child),
            to_child: Some(to_child),
            written,
            from_child,
            recycle,
            stderr: tail,
            stderr_done,
            last_reply: Vec::new(),
            has_reply: false,
            request: Vec::new(),
            scratch: Vec::new(),
            phase: Phase::Running,
        };
        dut.hello(setup)?;
        Ok(dut)
    }

    /// [`ProcessDut::spawn`] with the command given as one line (`python3 dut.py --bug x`),
    /// split by [`split_command_line`].
    pub fn spawn_command_line(
        command_line: &str,
        setup: &DutSetup,
        timeout: Duration,
    ) -> Result<ProcessDut, DutError> {
        let words = split_command_line(command_line).map_err(|e| DutError {
            dut: command_line.to_owned(),
            what: format!("could not start: {e}"),
            event: None,
            last_reply: None,
            stderr_tail: String::new(),
            hint: Some(
                "quote words with spaces in '...' or \"...\"; no variables or globs are expanded"
                    .into(),
            ),
        })?;
        ProcessDut::spawn(&words, setup, timeout)
    }

    /// The child's process id while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The per-request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn hello(&mut self, setup: &DutSetup) -> Result<(), DutError> {
        let flows: Vec<Value> = setup
            .flows
            .iter()
            .map(|f| {
                serde_json::json!({
                    "flow": f.id,
                    "local_ip": f.local_ip.to_string(),
                    "local_qp": f.local_qp,
                    "remote_ip": f.remote_ip.to_string(),
                    "remote_qp": f.remote_qp,
                })
            })
            .collect();
        let hello = serde_json::json!({
            "type": "hello",
            "protocol": PROTOCOL_VERSION,
            "model": setup.model,
            "capture_point": setup.capture_point,
            "params": setup.params,
            "flows": flows,
        });
        self.request.clear();
        self.request.extend_from_slice(hello.to_string().as_bytes());
        self.request.push(b'\n');
        if !setup.params.is_object() {
            return Err(self.fail(
                "cannot send the hello: `params` is not a JSON object".into(),
                Some("give the parameters as a table / JSON object".into()),
                false,
            ));
        }
        self.round_trip("hello")?;
        let reply = &self.last_reply;
        let bad = |why: String| {
            (
                format!("broke the protocol: the hello reply {why}"),
                Some(format!(
                    "answer the hello with one line {{\"type\": \"hello\", \"protocol\": \
                     {PROTOCOL_VERSION}, \"name\": \"...\"}} (docs/dut.md); write logs to stderr"
                )),
            )
        };
        let result = match serde_json::from_slice::<Value>(reply) {
            Err(e) => Err(bad(format!("is not JSON ({e})"))),
            Ok(v) => match v.get("type").and_then(Value::as_str) {
                Some("error") => Err((
                    format!("refused the hello: {}", error_message(&v)),
                    Some("check the model name and parameters the DUT accepts".into()),
                )),
                Some("hello") => match v.get("protocol").and_then(Value::as_u64) {
                    Some(PROTOCOL_VERSION) => match v.get("name") {
                        None => Ok(None),
                        Some(Value::String(n)) if !n.is_empty() && n.len() <= 64 => {
                            Ok(Some(n.clone()))
                        }
                        Some(other) => Err(bad(format!(
                            "has `name` = {other}: expected a string of 1 to 64 bytes"
                        ))),
                    },
                    Some(other) => Err((
                        format!(
                            "speaks protocol version {other}, the harness speaks \
                             {PROTOCOL_VERSION}"
                        ),
                        Some(format!(
                            "use a DUT (or a ccreplay) built for protocol \
                             {PROTOCOL_VERSION}; docs/dut.md describes it"
                        )),
                    )),
                    None => Err(bad("has no unsigned integer `protocol`".into())),
                },
                _ => Err(bad("has no `type` of `hello` or `error`".into())),
            },
        };
        match result {
            Ok(name) => {
                if let Some(n) = name {
                    self.name = n;
                }
                Ok(())
            }
            Err((what, hint)) => Err(self.fail(what, hint, false)),
        }
    }

    /// Send `self.request`, wait for the one reply line (then in `self.last_reply`). `what`
    /// names the request for messages. On trouble the child is stopped and the error returned.
    fn round_trip(&mut self, what: &str) -> Result<(), DutError> {
        match self.exchange() {
            Ok(()) => Ok(()),
            Err(t) => {
                let (msg, hint, crashed) = match t {
                    Trouble::Timeout => (
                        format!("no reply to the {what} within {:?}", self.timeout),
                        "the DUT must answer every request with exactly one line on stdout and \
                         flush it (Python: print(..., flush=True)); raise the timeout if it is \
                         only slow"
                            .to_string(),
                        false,
                    ),
                    Trouble::Closed => (
                        format!("closed its stdout (exited?) before replying to the {what}"),
                        "the DUT stopped; its stderr (shown when it wrote any) says why; run the \
                         command by hand and paste the request above to reproduce"
                            .into(),
                        true,
                    ),
                    Trouble::TooLong => (
                        format!(
                            "broke the protocol: a reply line longer than {MAX_REPLY_BYTES} bytes"
                        ),
                        "each reply is one line of JSON ending in a newline".into(),
                        false,
                    ),
                    Trouble::Read(e) => (
                        format!("could not read its stdout: {e}"),
                        "the pipe to the DUT failed".into(),
                        true,
                    ),
                    Trouble::Unsolicited => (
                        format!("broke the protocol: wrote a line before the {what} was sent"),
                        "write exactly one line per request on stdout; logs go to stderr".into(),
                        false,
                    ),
                    Trouble::NotReading => (
                        format!(
                            "broke the protocol: replied without reading its requests ({what})"
                        ),
                        "read one request line, then write one reply line".into(),
                        false,
                    ),
                };
                Err(self.fail(msg, Some(hint), crashed))
            }
        }
    }

    fn exchange(&mut self) -> Result<(), Trouble> {
        // A line waiting before the request is sent answers nothing: out of protocol.
        match self.from_child.try_recv() {
            Ok(m) => {
                self.take(m)?;
                return Err(Trouble::Unsolicited);
            }
            Err(TryRecvError::Disconnected) => return Err(Trouble::Closed),
            Err(TryRecvError::Empty) => {}
        }
        let Some(tx) = &self.to_child else {
            return Err(Trouble::Closed);
        };
        // The writer owns what it writes; `self.request` stays for messages. Its buffers come
        // back through `written`, so this copy does not allocate once warm.
        let mut buf = self.written.try_recv().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(&self.request);
        match tx.try_send(buf) {
            Ok(()) => {}
            // The writer still holds an older request: the DUT is not reading.
            Err(TrySendError::Full(_)) => return Err(Trouble::NotReading),
            // The writer ended: the DUT's stdin is closed (it exited).
            Err(TrySendError::Disconnected(_)) => return Err(Trouble::Closed),
        }
        match self.from_child.recv_timeout(self.timeout) {
            Ok(m) => self.take(m),
            Err(RecvTimeoutError::Timeout) => Err(Trouble::Timeout),
            Err(RecvTimeoutError::Disconnected) => Err(Trouble::Closed),
        }
    }

    /// Record a message from the stdout thread; a line becomes the last reply (the buffer it
    /// replaces goes back to the stdout thread).
    fn take(&mut self, m: FromChild) -> Result<(), Trouble> {
        match m {
            FromChild::Line(line) => {
                let old = std::mem::replace(&mut self.last_reply, line);
                let _ = self.recycle.send(old);
                self.has_reply = true;
                Ok(())
            }
            FromChild::TooLong => Err(Trouble::TooLong),
            FromChild::Eof => Err(Trouble::Closed),
            FromChild::ReadError(e) => Err(Trouble::Read(e)),
        }
    }

    /// Stop the child and describe what happened. `crashed`: the DUT went away on its own, so
    /// wait briefly for its exit status instead of killing it at once.
    fn fail(&mut self, what: String, hint: Option<String>, crashed: bool) -> DutError {
        self.phase = Phase::Failed;
        self.to_child = None;
        let status = self.reap(if crashed { EXIT_GRACE } else { Duration::ZERO });
        let what = match (crashed, status) {
            (true, Some(s)) => format!("{what}; it ended with {s}"),
            _ => what,
        };
        self.error(what, hint)
    }

    /// The error with the request and reply context, after the stderr thread has had a moment
    /// to read what a dying DUT wrote last.
    fn error(&self, what: String, hint: Option<String>) -> DutError {
        let _ = self.stderr_done.recv_timeout(EXIT_GRACE);
        let tail = self.stderr.lock().map(|t| t.text()).unwrap_or_default();
        DutError {
            dut: self.command.clone(),
            what,
            event: (!self.request.is_empty()).then(|| show(&self.request)),
            last_reply: self.has_reply.then(|| show(&self.last_reply)),
            stderr_tail: tail,
            hint,
        }
    }

    /// Wait up to `grace` for the child to exit, then kill it; reap it either way.
    fn reap(&mut self, grace: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let start = Instant::now();
        let mut nap = Duration::from_millis(1);
        while start.elapsed() < grace {
            match child.try_wait() {
                Ok(Some(s)) => return Some(s),
                Ok(None) => {}
                Err(_) => break,
            }
            thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(50));
        }
        let _ = child.kill();
        child.wait().ok()
    }

    fn check_running(&mut self, what: &str) -> Result<(), DutError> {
        match self.phase {
            Phase::Running => Ok(()),
            Phase::Finished => Err(self.error(
                format!("cannot take the {what}: the run is finished"),
                Some("this is a harness bug; please report it".into()),
            )),
            Phase::Failed => Err(self.error(
                format!("cannot take the {what}: the DUT failed earlier"),
                Some("the first error of this DUT says what went wrong".into()),
            )),
        }
    }

    /// Parse the last reply, a `decisions` reply, onto `out`; on error `out` keeps its length.
    fn decisions(&mut self, call: Call<'_>, out: &mut Vec<Decision>) -> Result<(), DutError> {
        let start = out.len();
        match parse_decisions(&self.last_reply, call, out) {
            Ok(()) => Ok(()),
            Err(e) => {
                out.truncate(start);
                let (what, hint) = match e {
                    ReplyError::Dut(msg) => (
                        format!("reported an error: {msg}"),
                        "the DUT stopped the run itself".to_string(),
                    ),
                    ReplyError::Protocol(msg) => (
                        format!("broke the protocol: {msg}"),
                        "each reply is one line {\"type\": \"decisions\", \"decisions\": [...]} \
                         (docs/dut.md); write logs to stderr"
                            .to_string(),
                    ),
                };
                Err(self.fail(what, Some(hint), false))
            }
        }
    }
}

impl Dut for ProcessDut {
    fn name(&self) -> &str {
        &self.name
    }

    fn event(&mut self, ev: &Event, out: &mut Vec<Decision>) -> Result<(), DutError> {
        self.request.clear();
        self.request.extend_from_slice(b"{\"type\": \"event\", ");
        self.scratch.clear();
        protocol::write_event(&mut self.scratch, ev);
        // write_event wrote `{...}\n`: splice its members after the `type`.
        self.request.extend_from_slice(&self.scratch[1..]);
        self.check_running("event")?;
        self.round_trip("event")?;
        self.decisions(Call::Event(ev), out)
    }

    fn finish(&mut self, t_end_ns: u64, out: &mut Vec<Decision>) -> Result<(), DutError> {
        self.request.clear();
        self.request
            .extend_from_slice(b"{\"type\": \"finish\", \"t\": ");
        self.request
            .extend_from_slice(itoa::Buffer::new().format(t_end_ns).as_bytes());
        self.request.extend_from_slice(b"}\n");
        self.check_running("finish")?;
        let start = out.len();
        self.round_trip("finish")?;
        self.decisions(Call::Finish(t_end_ns), out)?;

        // Close its stdin; the DUT must write nothing more and exit with status 0.
        self.to_child = None;
        let trouble = match self.from_child.recv_timeout(self.timeout) {
            Ok(FromChild::Eof) | Err(RecvTimeoutError::Disconnected) => None,
            Ok(m @ FromChild::Line(_)) => {
                let _ = self.take(m);
                Some((
                    "broke the protocol: wrote after its finish reply".to_string(),
                    "after the finish reply the DUT exits without writing to stdout",
                ))
            }
            Ok(FromChild::TooLong) | Ok(FromChild::ReadError(_)) => Some((
                "broke the protocol: wrote after its finish reply".to_string(),
                "after the finish reply the DUT exits without writing to stdout",
            )),
            Err(RecvTimeoutError::Timeout) => Some((
                format!("did not exit within {:?} after the finish", self.timeout),
                "exit once stdin is closed after answering the finish",
            )),
        };
        if let Some((what, hint)) = trouble {
            out.truncate(start);
            return Err(self.fail(what, Some(hint.into()), false));
        }
        match self.reap(self.timeout) {
            Some(s) if s.success() => {
                self.phase = Phase::Finished;
                Ok(())
            }
            status => {
                out.truncate(start);
                self.phase = Phase::Failed;
                let what = match status {
                    Some(s) => format!("ended with {s} after the finish"),
                    None => "could not be reaped after the finish".into(),
                };
                Err(self.error(
                    what,
                    Some("a DUT exits with status 0 after the finish".into()),
                ))
            }
        }
    }
}

impl Drop for ProcessDut {
    fn drop(&mut self) {
        self.to_child = None;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn thread_hint() -> String {
    "the machine could not start a thread; free resources and retry".into()
}

fn kill_with(mut child: Child, e: DutError) -> DutError {
    let _ = child.kill();
    let _ = child.wait();
    e
}

/// The writer thread: writes each request and flushes it, hands the buffer back. It ends when
/// the sender is dropped (closing the DUT's stdin) or a write fails (the DUT exited).
/// Requests to the writer thread, and its used buffers coming back.
type WriterChannels = (SyncSender<Vec<u8>>, Receiver<Vec<u8>>);

fn spawn_writer(mut stdin: ChildStdin) -> Result<WriterChannels, String> {
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(1);
    let (back_tx, back_rx) = mpsc::channel::<Vec<u8>>();
    thread::Builder::new()
        .name("dut-stdin".into())
        .spawn(move || {
            for buf in rx {
                if stdin.write_all(&buf).and_then(|()| stdin.flush()).is_err() {
                    return;
                }
                let _ = back_tx.send(buf);
            }
        })
        .map_err(|e| format!("could not start the stdin writer thread: {e}"))?;
    Ok((tx, back_rx))
}

/// The stdout thread: one message per line (bounded length), then `Eof`. The channel is
/// bounded, so a DUT flooding stdout is held back by its pipe, not buffered here.
fn spawn_stdout_reader(
    stdout: impl Read + Send + 'static,
    recycled: Receiver<Vec<u8>>,
) -> Result<Receiver<FromChild>, String> {
    let (tx, rx) = mpsc::sync_channel::<FromChild>(4);
    thread::Builder::new()
        .name("dut-stdout".into())
        .spawn(move || {
            let mut r = BufReader::with_capacity(64 * 1024, stdout);
            loop {
                let mut buf = recycled.try_recv().unwrap_or_default();
                let msg = match read_line_bounded(&mut r, &mut buf, MAX_REPLY_BYTES) {
                    Ok(None) => FromChild::Eof,
                    Ok(Some(false)) => {
                        if buf.last() == Some(&b'\r') {
                            buf.pop();
                        }
                        FromChild::Line(buf)
                    }
                    Ok(Some(true)) => FromChild::TooLong,
                    Err(e) => FromChild::ReadError(e.to_string()),
                };
                let last = !matches!(msg, FromChild::Line(_));
                if tx.send(msg).is_err() || last {
                    return;
                }
            }
        })
        .map_err(|e| format!("could not start the stdout reader thread: {e}"))?;
    Ok(rx)
}

/// The stderr thread: keeps the last [`STDERR_TAIL_LINES`] lines; the returned receiver is
/// disconnected once stderr is closed.
fn spawn_stderr_reader(
    stderr: impl Read + Send + 'static,
    tail: Arc<Mutex<Tail>>,
) -> Result<Receiver<()>, String> {
    let (done_tx, done_rx) = mpsc::channel::<()>();
    thread::Builder::new()
        .name("dut-stderr".into())
        .spawn(move || {
            let _done = done_tx;
            let mut r = BufReader::new(stderr);
            let mut buf = Vec::new();
            while let Ok(Some(cut)) = read_line_bounded(&mut r, &mut buf, STDERR_LINE_MAX) {
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                let mut line = String::from_utf8_lossy(&buf).into_owned();
                if cut {
                    line.push_str(" [...]");
                }
                if let Ok(mut t) = tail.lock() {
                    t.push(line);
                }
            }
        })
        .map_err(|e| format!("could not start the stderr reader thread: {e}"))?;
    Ok(done_rx)
}

/// Read one line into `buf` without its `\n`, keeping at most `max` bytes (the rest of a longer
/// line is read and dropped). `None` at the end of input, else `Some(cut)`.
fn read_line_bounded<R: BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<bool>> {
    buf.clear();
    let mut cut = false;
    let mut any = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(any.then_some(cut));
        }
        any = true;
        let nl = avail.iter().position(|&c| c == b'\n');
        let chunk = &avail[..nl.unwrap_or(avail.len())];
        let room = max.saturating_sub(buf.len());
        if chunk.len() > room {
            cut = true;
            buf.extend_from_slice(&chunk[..room]);
        } else {
            buf.extend_from_slice(chunk);
        }
        let used = nl.map_or(avail.len(), |i| i + 1);
        r.consume(used);
        if nl.is_some() {
            return Ok(Some(cut));
        }
    }
}

/// Bytes for a message: lossy UTF-8, no trailing newline, cut at [`SHOW_MAX`] bytes.
fn show(b: &[u8]) -> String {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    let mut s = String::from_utf8_lossy(&b[..b.len().min(SHOW_MAX)]).into_owned();
    if b.len() > SHOW_MAX {
        s.push_str(&format!(" [... {} bytes in all]", b.len()));
    }
    s
}

fn error_message(v: &Value) -> String {
    match v.get("message") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "(no message)".into(),
    }
}

/// The command as a user would type it.
fn display_command(command: &[String]) -> String {
    command
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b"-_./:=+,@%".contains(&c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Split a command line into words like a POSIX shell, without any expansion: blanks separate
/// words, `'...'` is literal, `"..."` allows `\"`, `\\`, `\$` and `` \` ``, and a backslash
/// outside quotes takes the next character literally.
pub fn split_command_line(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated '".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("unterminated \"".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("unterminated \"".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("a trailing backslash".into()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err("the command is empty".into());
    }
    Ok(words)
}

// ---------------------------------------------------------------------------------------------
// Checks shared with the C ABI adapter.

/// The request a reply answers.
#[derive(Clone, Copy)]
pub(super) enum Call<'a> {
    /// An event.
    Event(&'a Event),
    /// The finish with the trace end time.
    Finish(u64),
}

enum ReplyError {
    Dut(String),
    Protocol(String),
}

fn parse_decisions(line: &[u8], call: Call<'_>, out: &mut Vec<Decision>) -> Result<(), ReplyError> {
    let p = |s: String| ReplyError::Protocol(s);
    let v: Value =
        serde_json::from_slice(line).map_err(|e| p(format!("the reply is not JSON ({e})")))?;
    match v.get("type").and_then(Value::as_str) {
        Some("decisions") => {}
        Some("error") => return Err(ReplyError::Dut(error_message(&v))),
        Some(other) => {
            return Err(p(format!(
                "the reply has `type` = `{other}`, expected `decisions` (or `error`)"
            )));
        }
        None => return Err(p("the reply has no string `type`".into())),
    }
    let list = v
        .get("decisions")
        .and_then(Value::as_array)
        .ok_or_else(|| p("the reply has no `decisions` array".into()))?;
    let start = out.len();
    for (i, d) in list.iter().enumerate() {
        let d = protocol::parse_decision(d).map_err(|e| p(format!("decision {i}: {e}")))?;
        out.push(d);
    }
    check_decisions(call, &out[start..]).map_err(p)
}

/// Is `name` acceptable as a state or timer name: 1 to [`NAME_MAX_BYTES`] bytes of UTF-8
/// without control characters, `"` or `\` (names are written unescaped as JSON keys).
pub(super) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > NAME_MAX_BYTES {
        return Err(format!(
            "name `{}` must have 1 to {NAME_MAX_BYTES} bytes",
            name.escape_debug()
        ));
    }
    if name
        .chars()
        .any(|c| c.is_control() || c == '"' || c == '\\')
    {
        return Err(format!(
            "name `{}` holds a control character, `\"` or `\\`",
            name.escape_debug()
        ));
    }
    Ok(())
}

/// The protocol rules every reply obeys (docs/dut.md): timer decisions first, at or before the
/// event's time (the trace end for a finish), in time order; then only decisions of the event
/// itself (same flow, kind and index); valid, distinct state names; finite f64 state (C-3).
pub(super) fn check_decisions(call: Call<'_>, ds: &[Decision]) -> Result<(), String> {
    let (bound_ns, ev) = match call {
        Call::Event(ev) => (ev.t_ns, Some(ev)),
        Call::Finish(t) => (t, None),
    };
    let mut seen_event = false;
    let mut last_timer_ns = 0u64;
    for (i, d) in ds.iter().enumerate() {
        match d.cause {
            Cause::Timer { name } => {
                check_name(name).map_err(|e| format!("decision {i}: timer {e}"))?;
                if seen_event {
                    return Err(format!(
                        "decision {i}: timer `{name}` comes after the event's own decisions \
                         (timers due before an event come first)"
                    ));
                }
                if d.t_ns > bound_ns {
                    return Err(format!(
                        "decision {i}: timer `{name}` at t = {} ns is after {} = {bound_ns} ns",
                        d.t_ns,
                        if ev.is_some() {
                            "the event's time"
                        } else {
                            "the trace end"
                        }
                    ));
                }
                if d.t_ns < last_timer_ns {
                    return Err(format!(
                        "decision {i}: timer `{name}` at t = {} ns is earlier than the timer \
                         before it ({last_timer_ns} ns)",
                        d.t_ns
                    ));
                }
                last_timer_ns = d.t_ns;
            }
            Cause::Event { kind, index } => {
                let Some(ev) = ev else {
                    return Err(format!(
                        "decision {i} is caused by event {kind} #{index}, but a finish reply \
                         holds timer decisions only"
                    ));
                };
                if kind != ev.kind.name() || index != ev.index || d.flow != ev.flow {
                    return Err(format!(
                        "decision {i} is caused by {kind} #{index} of flow {}, but the request \
                         was {} #{} of flow {}",
                        d.flow,
                        ev.kind.name(),
                        ev.index,
                        ev.flow
                    ));
                }
                seen_event = true;
            }
        }
        for (j, (n, v)) in d.state.fields().enumerate() {
            check_name(n).map_err(|e| format!("decision {i}: state {e}"))?;
            if d.state.fields().take(j).any(|(m, _)| m == n) {
                return Err(format!("decision {i}: state `{n}` appears twice"));
            }
            if let StateValue::F64(x) = v
                && !x.is_finite()
            {
                return Err(format!(
                    "decision {i}: state `{n}` is {x} (C-3: no NaN or infinity in model state)"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
