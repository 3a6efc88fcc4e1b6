//! Decoding a capture on several threads, in capture order (`inspect`, extraction).
//!
//! [`par_batches`] decodes batches of records on `workers` threads — the calling thread is
//! one of them — and hands their outputs to the calling thread in capture order. On a regular
//! file every thread also *reads*: the file is cut into [`BLOCK_BYTES`] blocks at fixed
//! offsets, read with positioned reads (`pread`), in parallel, so that the kernel's copy of the
//! file (a third of a replay on one core) is spread over the cores like the decoding.
//!
//! - A classic pcap file ([`Spans`]): each thread reads a block, frames it and decodes it,
//!   all while its bytes are in that core's cache. Framing — walking the record headers, the
//!   only part that must be sequential — goes block by block in turn: block `k`'s first record
//!   starts where block `k - 1`'s last one ended. A batch holds the records that start in its
//!   block, borrowed from it; its thread reads the rest of the last one into the same buffer.
//! - A pcapng file, whose records depend on the blocks before them: threads read blocks
//!   ahead, and one thread at a time frames the next batch over blocks already in memory (a
//!   [`BlockSource`]), copying only the records that straddle a block edge.
//! - Anything else (a pipe, a FIFO) is read as one stream, with records copied into batches.
//!
//! The calling thread emits each batch as soon as it is next in order and decodes one itself
//! when none is: it sleeps only when every output buffer is in flight. Each hand-over that
//! needs no wake-up saves an inter-processor interrupt, which is dear on a virtual machine;
//! with a dedicated emitting thread, `--jobs 2` was 1.45× rather than 1.9× (docs/performance.md).

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, mpsc};

use ccreplay_codecs::capture::{
    BlockSource, CaptureError, CaptureFormat, CaptureReader, LinkType, MAX_PACKET_BYTES,
    PCAP_RECORD_HEADER_BYTES, Record, SliceSource, Source, StreamSource,
};

/// Bytes of a block read at once, and of the records framed into one batch.
pub const BLOCK_BYTES: usize = 1 << 20;
/// Most records in one batch framed under the lock (pcapng, streams); a classic pcap batch
/// is one block, however many records start in it.
pub const BATCH_RECORDS: usize = 16_384;
/// Records a batch takes from a stream (not a regular file), which are copied.
const STREAM_BATCH_RECORDS: usize = 1024;

/// Threads to decode with: the machine's cores (at most 8).
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Block buffers no longer used, kept for the next reads (a fresh buffer costs page faults).
type Pool = Arc<Mutex<Vec<Vec<u8>>>>;

/// One block of the file, shared by the framer and the batches whose records it holds.
#[derive(Clone)]
pub struct Block(Arc<Buf>);

struct Buf {
    data: Vec<u8>,
    len: usize,
    pool: Pool,
}

impl Drop for Buf {
    fn drop(&mut self) {
        lock(&self.pool).push(std::mem::take(&mut self.data));
    }
}

impl AsRef<[u8]> for Block {
    fn as_ref(&self) -> &[u8] {
        &self.0.data[..self.0.len]
    }
}

/// Reads blocks of a regular file ahead of the framer, on any thread.
struct Blocks<'f> {
    /// None when reading a stream.
    file: Option<&'f File>,
    pool: Pool,
    state: Mutex<Reads>,
    ready: Condvar,
    block_bytes: usize,
    /// Most blocks read ahead of the framer.
    window: u64,
}

struct Reads {
    /// Blocks read and not yet framed, by index.
    done: BTreeMap<u64, io::Result<Block>>,
    /// The next block to claim for reading.
    next_read: u64,
    /// The next block the framer takes.
    next_frame: u64,
    /// Blocks in the file (its length when opened; fewer if it shrinks).
    end: u64,
}

impl Blocks<'_> {
    fn expected_len(&self, k: u64, file_len: u64) -> usize {
        let b = self.block_bytes as u64;
        file_len.saturating_sub(k * b).min(b) as usize
    }

    /// Reads block `k` (positioned: any number of threads at once).
    fn read(&self, k: u64, file_len: u64) -> io::Result<Block> {
        let mut span = Span {
            data: lock(&self.pool).pop().unwrap_or_default(),
            len: 0,
            base: k * self.block_bytes as u64,
        };
        if let Some(file) = self.file
            && let Err(e) = span.read_to(file, file_len, self.expected_len(k, file_len))
        {
            lock(&self.pool).push(span.data);
            return Err(e);
        }
        Ok(span.into_block(&self.pool))
    }

    /// Reads the next unclaimed block if the read-ahead window allows; false if it did not.
    fn read_ahead(&self, file_len: u64) -> bool {
        let k = {
            let mut r = lock(&self.state);
            if r.next_read >= r.end || r.next_read >= r.next_frame + self.window {
                return false;
            }
            r.next_read += 1;
            r.next_read - 1
        };
        let b = self.read(k, file_len);
        lock(&self.state).done.insert(k, b);
        self.ready.notify_all();
        true
    }

    /// The framer's next block, in file order: read ahead by a worker, or read here if no
    /// worker has claimed it. `None` at the end of the file.
    fn next(&self, file_len: u64) -> io::Result<Option<Block>> {
        let mut r = lock(&self.state);
        let k = r.next_frame;
        if k >= r.end {
            return Ok(None);
        }
        let b = loop {
            if let Some(b) = r.done.remove(&k) {
                break b;
            }
            if r.next_read <= k {
                r.next_read = k + 1;
                drop(r);
                let b = self.read(k, file_len);
                r = lock(&self.state);
                break b;
            }
            r = self.ready.wait(r).unwrap_or_else(|e| e.into_inner());
        };
        r.next_frame = k + 1;
        if let Ok(b) = &b
            && b.as_ref().len() < self.expected_len(k, file_len)
        {
            r.end = k + 1; // a short read: the file ended early
        }
        b.map(Some)
    }
}

/// Framing of a classic pcap file by the threads that read it: block `k` (a fixed range of
/// the file) is read, framed and decoded by one thread, so its bytes are still in that
/// core's cache when they are framed and decoded. Framing is sequential — block `k`'s first
/// record starts where block `k - 1`'s last one ended — so blocks take turns for it, a short
/// step over bytes in cache; the reading (the kernel's copy) and the decoding run in parallel.
/// A batch holds the records that *start* in its block; its thread reads the rest of the last
/// one (the one straddling the next block) into the same buffer, so no record is copied.
struct Spans<'f> {
    /// Resumed at each block's first record ([`CaptureReader::resume_pcap`]); its file is the
    /// one read.
    template: &'f CaptureReader<StreamSource<File>>,
    file_len: u64,
    block_bytes: usize,
    pool: Pool,
    chain: Mutex<Chain>,
    /// Signalled when a block's framing is done.
    turn: Condvar,
    /// The block framed next (every block before it is framed): changed under `chain`'s lock,
    /// read without it to spin on.
    framing: AtomicU64,
}

/// Where the framing stands.
struct Chain {
    /// The next block to claim.
    next_claim: u64,
    /// File offset of its first record, and that record's frame number.
    start: u64,
    next_frame: u64,
    /// The capture ended before block `framing` (at its end or at a framing error).
    ended: bool,
    capture_error: Option<String>,
}

/// Turns spun before sleeping: another thread's framing step takes some microseconds, and a
/// sleeping thread costs a wake-up (an inter-processor interrupt, dear on a virtual machine).
const TURN_SPINS: u32 = 2_000;

impl Spans<'_> {
    /// Reads `span` up to `upto` bytes past its base.
    fn read(&self, span: &mut Span, upto: usize) -> Result<(), String> {
        let at = span.base + span.len as u64;
        span.read_to(self.template.source().get_ref(), self.file_len, upto)
            .map_err(|source| CaptureError::Io { offset: at, source }.to_string())
    }

    /// Claims the next block, reads it, frames it in its turn into `batch`: `Some(k)` for
    /// block `k` (its batch may be empty), `None` when every block is claimed or the capture
    /// ended.
    fn take(&self, batch: &mut RecordBatch) -> Option<u64> {
        let k = {
            let mut c = lock(&self.chain);
            if c.ended || c.next_claim * self.block_bytes as u64 >= self.file_len {
                return None;
            }
            c.next_claim += 1;
            c.next_claim - 1
        };
        let mut span = Span {
            data: lock(&self.pool).pop().unwrap_or_default(),
            len: 0,
            base: k * self.block_bytes as u64,
        };
        let read = self.read(&mut span, self.block_bytes);
        let block_end = span.base + span.len as u64;
        // Wait for block k - 1's framing.
        for _ in 0..TURN_SPINS {
            if self.framing.load(Ordering::Acquire) == k {
                break;
            }
            std::hint::spin_loop();
        }
        let (start, next_frame, ended) = {
            let mut c = lock(&self.chain);
            // `framing` changes under the lock: no wake-up is lost.
            while self.framing.load(Ordering::Acquire) != k {
                c = self.turn.wait(c).unwrap_or_else(|e| e.into_inner());
            }
            (c.start, c.next_frame, c.ended)
        };
        batch.clear();
        let (next, error) = match read {
            _ if ended => (None, None),
            Err(e) => (None, Some(e)),
            Ok(()) if start >= block_end => (Some((start, next_frame)), None),
            // Only if the file changed under the reads (the block before ended short).
            Ok(()) if start < span.base => (
                None,
                Some(format!(
                    "the capture changed at offset {start} while it was read"
                )),
            ),
            Ok(()) => self.frame(batch, &mut span, block_end, start, next_frame),
        };
        {
            let mut c = lock(&self.chain);
            match next {
                Some((start, frame)) => (c.start, c.next_frame) = (start, frame),
                None => c.ended = true,
            }
            if error.is_some() && !ended {
                c.capture_error = error;
            }
            self.framing.store(k + 1, Ordering::Release);
        }
        self.turn.notify_all();
        if batch.meta.is_empty() {
            lock(&self.pool).push(span.data);
        } else {
            batch.blocks.push(span.into_block(&self.pool));
        }
        Some(k)
    }

    /// Frames the records starting in `[at, block_end)` out of `span`, reading the rest of
    /// the last one into it. Returns where the next block's framing starts (offset, frame
    /// number), or `None` with the error, if any, when the capture ended.
    fn frame(
        &self,
        batch: &mut RecordBatch,
        span: &mut Span,
        block_end: u64,
        mut at: u64,
        mut frame: u64,
    ) -> (Option<(u64, u64)>, Option<String>) {
        let mut extended = false;
        loop {
            let rel = (at - span.base) as usize;
            let held = SliceSource::new(&span.data[rel..span.len]);
            let Some(mut r) = self.template.resume_pcap(held, at, frame) else {
                return (None, Some("not a classic pcap capture".into()));
            };
            let cut = loop {
                if r.offset() >= block_end {
                    return (Some((r.offset(), r.next_frame())), None);
                }
                let from = r.offset();
                match r.next_record() {
                    None => return (None, None),
                    Some(Ok(rec)) => {
                        let start = rec.data.as_ptr() as usize - span.data.as_ptr() as usize;
                        batch.push(&rec, 0, start);
                    }
                    // Cut by the end of the block, not of the file: read the rest of it.
                    Some(Err(
                        CaptureError::TruncatedRecordHeader { .. }
                        | CaptureError::TruncatedRecord { .. },
                    )) if !extended && span.base + (span.len as u64) < self.file_len => {
                        break (from, r.next_frame());
                    }
                    Some(Err(e)) => return (None, Some(e.to_string())),
                }
            };
            (at, frame) = cut;
            extended = true;
            // The record's header, then as many bytes as it says (if it may say so).
            let rel = (at - span.base) as usize;
            let mut read = self.read(span, rel + PCAP_RECORD_HEADER_BYTES);
            if read.is_ok()
                && let Some(total) = self.template.pcap_record_bytes(&span.data[rel..span.len])
                && total <= (PCAP_RECORD_HEADER_BYTES + MAX_PACKET_BYTES) as u64
            {
                read = self.read(span, rel + total as usize);
            }
            if let Err(e) = read {
                return (None, Some(e));
            }
        }
    }
}

/// A buffer holding the file's bytes from `base` on: `data[..len]`. `data` keeps its length
/// (and so its initialized bytes) from use to use: it is only ever grown.
struct Span {
    data: Vec<u8>,
    len: usize,
    base: u64,
}

impl Span {
    /// Reads the file's bytes up to `base + upto` (fewer past `file_len` or where the file
    /// ends) after those held, with positioned reads (any number of threads at once).
    fn read_to(&mut self, file: &File, file_len: u64, upto: usize) -> io::Result<()> {
        let upto = upto.min(file_len.saturating_sub(self.base) as usize);
        if self.data.len() < upto {
            self.data.resize(upto, 0);
        }
        while self.len < upto {
            let at = self.base + self.len as u64;
            match read_at(file, &mut self.data[self.len..upto], at) {
                Ok(0) => break, // the file shrank: the capture ends here
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The bytes held, as a block whose buffer goes back to `pool` when its last holder lets
    /// go.
    fn into_block(self, pool: &Pool) -> Block {
        Block(Arc::new(Buf {
            data: self.data,
            len: self.len,
            pool: pool.clone(),
        }))
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

/// Records framed out of a capture, for another thread to decode: in blocks of the file they
/// lie in (shared, not copied), or copied into the batch (a record straddling a block edge, or
/// any record of a stream).
#[derive(Default)]
pub struct RecordBatch {
    blocks: Vec<Block>,
    own: Vec<u8>,
    meta: Vec<RecordMeta>,
    /// The framing error that ended the capture after this batch's records.
    pub capture_error: Option<String>,
}

/// The batch's own bytes rather than a block.
const OWN: u32 = u32::MAX;

/// A record's fields; its bytes are `[start, start + len)` of block `block` or of `own`.
#[derive(Clone, Copy)]
struct RecordMeta {
    frame_number: u64,
    ts_ns: u64,
    orig_len: u32,
    link: LinkType,
    interface_id: u32,
    block: u32,
    start: usize,
    len: usize,
}

impl RecordBatch {
    fn clear(&mut self) {
        self.blocks.clear(); // a block's last holder returns its buffer to the pool
        self.own.clear();
        self.meta.clear();
        self.capture_error = None;
    }

    fn push(&mut self, rec: &Record<'_>, block: u32, start: usize) {
        self.meta.push(RecordMeta {
            frame_number: rec.frame_number,
            ts_ns: rec.ts_ns,
            orig_len: rec.orig_len,
            link: rec.link,
            interface_id: rec.interface_id,
            block,
            start,
            len: rec.data.len(),
        });
    }

    fn push_copy(&mut self, rec: &Record<'_>, bytes: &[u8]) {
        let start = self.own.len();
        self.own.extend_from_slice(bytes);
        self.push(rec, OWN, start);
    }

    /// Replace the batch's records with the next ones of `reader`: up to `max_records`, and
    /// none that starts `max_bytes` or more past the first. Returns false when the capture
    /// ended (end of file or a framing error, kept in [`RecordBatch::capture_error`]) during
    /// this fill.
    fn fill<S: Place>(
        &mut self,
        reader: &mut CaptureReader<S>,
        max_records: usize,
        max_bytes: u64,
    ) -> bool {
        self.clear();
        let stop = reader.offset().saturating_add(max_bytes);
        while self.meta.len() < max_records && reader.offset() < stop {
            match reader.next_record_in() {
                None => return false,
                Some(Err(e)) => {
                    self.capture_error = Some(e.to_string());
                    return false;
                }
                Some(Ok((rec, src))) => src.place(self, &rec),
            }
        }
        true
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.meta.len()
    }

    /// True when the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.meta.is_empty()
    }

    /// The records, in capture order.
    pub fn records(&self) -> impl Iterator<Item = Record<'_>> + '_ {
        self.meta.iter().map(|m| {
            let bytes = match m.block {
                OWN => &self.own[..],
                i => self.blocks[i as usize].as_ref(),
            };
            Record {
                frame_number: m.frame_number,
                ts_ns: m.ts_ns,
                orig_len: m.orig_len,
                data: &bytes[m.start..m.start + m.len],
                link: m.link,
                interface_id: m.interface_id,
            }
        })
    }
}

/// How a batch holds a record of a source: in place, or copied.
trait Place: Source {
    fn place(&self, batch: &mut RecordBatch, rec: &Record<'_>);
}

/// A stream's buffer moves on: its records are copied.
impl Place for StreamSource<File> {
    fn place(&self, batch: &mut RecordBatch, rec: &Record<'_>) {
        batch.push_copy(rec, rec.data);
    }
}

/// A record inside a block is held there; one straddling a block edge is copied.
impl<P: FnMut() -> io::Result<Option<Block>>> Place for BlockSource<Block, P> {
    fn place(&self, batch: &mut RecordBatch, rec: &Record<'_>) {
        match self.locate(rec.data) {
            Ok((b, start)) => {
                if !batch.blocks.last().is_some_and(|l| Arc::ptr_eq(&l.0, &b.0)) {
                    batch.blocks.push(b.clone());
                }
                batch.push(rec, batch.blocks.len() as u32 - 1, start);
            }
            Err(bytes) => batch.push_copy(rec, bytes),
        }
    }
}

/// The framer: the capture reader over blocks (a regular file) or over one stream.
enum Framer<P> {
    Blocks(CaptureReader<BlockSource<Block, P>>),
    Stream(CaptureReader<StreamSource<File>>),
}

/// What the workers share under one lock: the framer and the order of batches.
struct Feed<P, T> {
    framer: Option<Framer<P>>,
    next_seq: u64,
    capture_error: Option<String>,
    /// Output buffers free for a batch: their number bounds the batches in flight.
    free: Vec<T>,
    stop: bool,
}

/// Decode a capture on `workers` threads (the calling thread and `workers - 1` others), in
/// order.
///
/// Each thread takes the next batch of records (one block's worth: see the module's
/// documentation for how it is read and framed), runs `work(state, batch, out)` on it with
/// its own `state`, and hands `out` back; `emit` gets the outputs on the calling thread in
/// capture order. Memory is bounded by `2 × workers + 1` batches (and, for pcapng, `2 ×
/// workers + 2` blocks read ahead). An error from `emit` stops the run. Returns the threads'
/// states and the framing error that ended the capture, if any.
pub fn par_batches<W, T, E>(
    reader: CaptureReader<StreamSource<File>>,
    workers: usize,
    make_state: impl Fn() -> W + Sync,
    work: impl Fn(&mut W, &RecordBatch, &mut T) + Sync,
    make_out: impl Fn() -> T,
    emit: impl FnMut(&mut T) -> Result<(), E>,
) -> Result<(Vec<W>, Option<String>), E>
where
    W: Send,
    T: Send,
{
    par_batches_sized(
        reader,
        workers,
        BLOCK_BYTES,
        make_state,
        work,
        make_out,
        emit,
    )
}

/// [`par_batches`] with blocks of `block_bytes` (tests use small ones, for many block edges).
fn par_batches_sized<W, T, E>(
    reader: CaptureReader<StreamSource<File>>,
    workers: usize,
    block_bytes: usize,
    make_state: impl Fn() -> W + Sync,
    work: impl Fn(&mut W, &RecordBatch, &mut T) + Sync,
    make_out: impl Fn() -> T,
    mut emit: impl FnMut(&mut T) -> Result<(), E>,
) -> Result<(Vec<W>, Option<String>), E>
where
    W: Send,
    T: Send,
{
    let workers = workers.max(1);
    let block_bytes = block_bytes.max(1);
    let file_len = reader
        .source()
        .get_ref()
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    // A classic pcap file: each thread reads, frames and decodes blocks of its own (`Spans`).
    // Any other regular file (pcapng): the reader above only checked the header; the framer
    // reads the file again from its first byte, block by block, from blocks the workers read.
    let (spans_reader, stream, file) = match (file_len, reader.format()) {
        (Some(_), CaptureFormat::Pcap { .. }) => (Some(reader), None, None),
        (Some(_), _) => (None, None, Some(reader.into_source().into_inner())),
        (None, _) => (None, Some(reader), None),
    };
    let spans = spans_reader.as_ref().map(|template| Spans {
        template,
        file_len: file_len.unwrap_or(0),
        block_bytes,
        pool: Pool::default(),
        chain: Mutex::new(Chain {
            next_claim: 0,
            start: template.offset(),
            next_frame: template.next_frame(),
            ended: false,
            capture_error: None,
        }),
        turn: Condvar::new(),
        framing: AtomicU64::new(0),
    });
    let file_len = file_len.unwrap_or(0);
    let blocks = Blocks {
        file: file.as_ref(),
        pool: Pool::default(),
        state: Mutex::new(Reads {
            done: BTreeMap::new(),
            next_read: 0,
            next_frame: 0,
            end: file_len.div_ceil(block_bytes as u64),
        }),
        block_bytes,
        ready: Condvar::new(),
        window: 2 * workers as u64 + 2,
    };
    let mut capture_error = None;
    let framer = match (stream, &spans) {
        (_, Some(_)) => None,
        (Some(r), None) => Some(Framer::Stream(r)),
        (None, None) => {
            match CaptureReader::with_source(BlockSource::new(|| blocks.next(file_len))) {
                Ok(r) => Some(Framer::Blocks(r)),
                // Only if the file changed since its header was read.
                Err(e) => {
                    capture_error = Some(e.to_string());
                    None
                }
            }
        }
    };
    let feed = Mutex::new(Feed {
        framer,
        next_seq: 0,
        capture_error,
        free: (0..2 * workers + 1).map(|_| make_out()).collect(),
        stop: false,
    });
    let wake = Condvar::new();
    // Take the next batch from the framer into an output buffer: `Wait` when every buffer is
    // in flight (unless `wait` says to sleep until one comes back), `End` at the capture's end.
    let take = |batch: &mut RecordBatch, wait: bool| -> Take<T> {
        if blocks.file.is_some() {
            blocks.read_ahead(file_len);
        }
        let mut f = lock(&feed);
        let out = loop {
            if f.stop || (spans.is_none() && f.framer.is_none()) {
                return Take::End;
            }
            if let Some(o) = f.free.pop() {
                break o;
            }
            if !wait {
                return Take::Wait;
            }
            f = wake.wait(f).unwrap_or_else(|e| e.into_inner());
        };
        if let Some(spans) = &spans {
            drop(f);
            return match spans.take(batch) {
                Some(k) => Take::Batch(k, out),
                None => {
                    lock(&feed).free.push(out);
                    wake.notify_all();
                    Take::End
                }
            };
        }
        let more = match f.framer.as_mut() {
            Some(Framer::Blocks(r)) => batch.fill(r, BATCH_RECORDS, block_bytes as u64),
            Some(Framer::Stream(r)) => batch.fill(r, STREAM_BATCH_RECORDS, u64::MAX),
            None => false,
        };
        if !more {
            f.capture_error = batch.capture_error.take();
            f.framer = None;
            wake.notify_all();
        }
        if batch.is_empty() {
            f.free.push(out);
            return Take::End;
        }
        let seq = f.next_seq;
        f.next_seq += 1;
        Take::Batch(seq, out)
    };
    let (tx, rx) = mpsc::channel::<(u64, T)>();
    std::thread::scope(|scope| {
        // The calling thread is one of the `workers`: it decodes too, and emits.
        let handles: Vec<_> = (1..workers)
            .map(|_| {
                let tx = tx.clone();
                let (take, work, make_state) = (&take, &work, &make_state);
                scope.spawn(move || {
                    let mut state = make_state();
                    let mut batch = RecordBatch::default();
                    while let Take::Batch(seq, mut out) = take(&mut batch, true) {
                        work(&mut state, &batch, &mut out);
                        // Let go of the blocks now rather than at the next fill: their buffers go
                        // back to the pool before this worker's next read.
                        batch.clear();
                        if tx.send((seq, out)).is_err() {
                            break;
                        }
                    }
                    state
                })
            })
            .collect();
        drop(tx);
        // The calling thread emits every batch that is next in order as soon as it is there,
        // and decodes one itself when none is: it sleeps only when every buffer is in flight
        // with the other workers (each hand-over that needs no wake-up saves a cross-CPU
        // interrupt, which is dear on a virtual machine).
        let mut state = make_state();
        let mut batch = RecordBatch::default();
        let mut pending: BTreeMap<u64, T> = BTreeMap::new();
        let mut next = 0u64;
        let mut result = Ok(());
        let mut decoding = true;
        loop {
            while let Ok((seq, out)) = rx.try_recv() {
                pending.insert(seq, out);
            }
            if let Some(mut out) = pending.remove(&next) {
                if result.is_ok()
                    && let Err(e) = emit(&mut out)
                {
                    result = Err(e);
                    lock(&feed).stop = true;
                }
                next += 1;
                lock(&feed).free.push(out);
                wake.notify_all();
                continue;
            }
            if decoding {
                match take(&mut batch, false) {
                    Take::Batch(seq, mut out) => {
                        work(&mut state, &batch, &mut out);
                        batch.clear();
                        pending.insert(seq, out);
                        continue;
                    }
                    Take::Wait => {}
                    Take::End => decoding = false,
                }
            }
            // Nothing to emit and nothing to decode: wait for a worker's batch.
            match rx.recv() {
                Ok((seq, out)) => {
                    pending.insert(seq, out);
                }
                Err(_) => break,
            }
        }
        let mut states = vec![state];
        states.extend(
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
        );
        let capture_error = match &spans {
            Some(s) => lock(&s.chain).capture_error.take(),
            None => lock(&feed).capture_error.take(),
        };
        result.map(|()| (states, capture_error))
    })
}

/// What a thread got from the framer.
enum Take<T> {
    /// Batch number `.0`, to decode into `.1`.
    Batch(u64, T),
    /// Every output buffer is in flight.
    Wait,
    /// The capture ended (or the run stopped).
    End,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn root() -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
    }

    /// (frame, time, original length, bytes) of every record, and the error that ended it.
    type Seen = (Vec<(u64, u64, u32, Vec<u8>)>, Option<String>);

    fn sequential(path: &Path) -> Seen {
        let mut r = CaptureReader::open(path).expect("capture");
        let mut v = Vec::new();
        while let Some(rec) = r.next_record() {
            match rec {
                Ok(x) => v.push((x.frame_number, x.ts_ns, x.orig_len, x.data.to_vec())),
                Err(e) => return (v, Some(e.to_string())),
            }
        }
        (v, None)
    }

    fn batched(path: &Path, workers: usize, block_bytes: usize) -> Seen {
        let reader = CaptureReader::open(path).expect("capture");
        let mut v = Vec::new();
        let (_, err) = par_batches_sized(
            reader,
            workers,
            block_bytes,
            || (),
            |(), batch, out: &mut Vec<(u64, u64, u32, Vec<u8>)>| {
                out.clear();
                out.extend(
                    batch
                        .records()
                        .map(|x| (x.frame_number, x.ts_ns, x.orig_len, x.data.to_vec())),
                );
            },
            Vec::new,
            |out| {
                v.append(out);
                Ok::<(), ()>(())
            },
        )
        .expect("no emit error");
        (v, err)
    }

    // Batches read in blocks, by several threads, hold exactly the records a sequential read
    // gives — block edges inside record headers and data, a record longer than a block, a
    // pcapng file, a capture cut short (the same error) — and so does a stream (a FIFO).
    #[test]
    fn batches_hold_the_records_of_a_sequential_read() {
        let dir = std::env::temp_dir().join(format!("ccreplay-batches-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let hpcc = root().join("traces/hpcc_dumbbell.pcap");
        let bytes = std::fs::read(&hpcc).unwrap();
        let cut = dir.join("cut.pcap");
        std::fs::write(&cut, &bytes[..bytes.len() - 300]).unwrap();
        // Record starts, walked by hand (a little-endian pcap: 24-byte file header, 16-byte
        // record headers with the captured length at +8).
        assert_eq!(bytes[1..4], [0x3c, 0xb2, 0xa1], "a little-endian pcap");
        let incl = |b: &[u8], at: usize| u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap());
        let mut starts = vec![24];
        while let Some(&at) = starts.last().filter(|&&at| at < bytes.len()) {
            starts.push(at + 16 + incl(&bytes, at) as usize);
        }
        assert_eq!(starts.pop(), Some(bytes.len()));
        let (mid, last) = (starts[starts.len() / 2], starts[starts.len() - 1]);
        // Cut inside the last record's header.
        let cut_header = dir.join("cut_header.pcap");
        std::fs::write(&cut_header, &bytes[..last + 7]).unwrap();
        // A record in the middle claims more than any packet may hold.
        let too_large = dir.join("too_large.pcap");
        let mut b = bytes.clone();
        b[mid + 8..mid + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
        std::fs::write(&too_large, &b).unwrap();
        // A record in the middle claims 1,000 bytes more than it has: what follows is framed
        // out of step, from inside packets, whatever that gives.
        let lying = dir.join("lying.pcap");
        let mut b = bytes.clone();
        b[mid + 8..mid + 12].copy_from_slice(&(incl(&bytes, mid) + 1000).to_le_bytes());
        std::fs::write(&lying, &b).unwrap();
        for (f, error) in [(&cut_header, "record header"), (&too_large, "2147483647")] {
            let e = sequential(f).1.unwrap_or_default();
            assert!(e.contains(error), "{}: {e}", f.display());
        }
        let files = [
            hpcc,
            cut.clone(),
            cut_header,
            too_large,
            lying,
            root().join("tests/fixtures/malformed.pcap"),
            root().join("tests/fixtures/roce_linktypes_multi.pcapng"),
        ];
        for f in &files {
            let want = sequential(f);
            assert!(!want.0.is_empty(), "{}", f.display());
            for workers in [1, 2, 3] {
                for block in [7, 100, 1500, 65_536, BLOCK_BYTES] {
                    let got = batched(f, workers, block);
                    assert!(
                        got == want,
                        "{}: {workers} workers, blocks of {block}: {} records / {:?}, want {} / {:?}",
                        f.display(),
                        got.0.len(),
                        got.1,
                        want.0.len(),
                        want.1
                    );
                }
            }
        }
        // The cut capture ends with a truncated record, reported as such.
        assert!(
            sequential(&cut)
                .1
                .is_some_and(|e| e.contains("cut in the middle of a record")),
            "{:?}",
            sequential(&cut).1
        );
        // A FIFO is not a regular file: read as one stream.
        #[cfg(unix)]
        {
            let fifo = dir.join("fifo.pcap");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            if made.is_ok_and(|s| s.success()) {
                let (src, dst) = (files[0].clone(), fifo.clone());
                let feeder = std::thread::spawn(move || std::fs::copy(src, dst));
                let got = batched(&fifo, 2, 1000);
                feeder.join().unwrap().unwrap();
                assert!(got == sequential(&files[0]), "FIFO");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    // An error from `emit` stops the run and is returned; the workers stop too.
    #[test]
    fn emit_error_stops_the_run() {
        let reader = CaptureReader::open(root().join("traces/hpcc_dumbbell.pcap")).unwrap();
        let mut emitted = 0;
        let r = par_batches_sized(
            reader,
            2,
            4096,
            || (),
            |(), batch, n: &mut usize| *n = batch.len(),
            || 0usize,
            |_| {
                emitted += 1;
                if emitted == 3 {
                    Err("full disk")
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(r.err(), Some("full disk"));
        assert_eq!(emitted, 3);
    }
}
