//! Decoding a capture on several threads, in capture order (`inspect`, extraction).
//!
//! [`par_batches`] hands batches of records to worker threads and their outputs back to the
//! calling thread in capture order. On a regular file every worker also *reads*: the file is
//! cut into [`BLOCK_BYTES`] blocks at fixed offsets, which the workers read ahead with
//! positioned reads (`pread`), in parallel. Framing — walking the record headers, which is the
//! only part that must be sequential — runs on one worker at a time over blocks already in
//! memory (a [`BlockSource`]): it copies nothing but the few records that straddle a block
//! edge, and the records of a batch borrow their blocks. The kernel's copy of the file, which
//! is a quarter of a replay on one core, is then spread over the cores like the decoding.
//! Anything else (a pipe, a FIFO) is read as one stream, with records copied into batches.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, mpsc};

use ccreplay_codecs::capture::{
    BlockSource, CaptureReader, LinkType, Record, Source, StreamSource,
};

/// Bytes of a block read at once, and of the records framed into one batch.
pub const BLOCK_BYTES: usize = 1 << 20;
/// Most records in one batch.
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
        let want = self.expected_len(k, file_len);
        let mut data = lock(&self.pool).pop().unwrap_or_default();
        if data.len() < want {
            data.resize(want, 0);
        }
        let mut len = 0;
        while len < want {
            let Some(file) = self.file else { break };
            match read_at(
                file,
                &mut data[len..want],
                k * self.block_bytes as u64 + len as u64,
            ) {
                Ok(0) => break, // the file shrank: the capture ends here
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    lock(&self.pool).push(data);
                    return Err(e);
                }
            }
        }
        Ok(Block(Arc::new(Buf {
            data,
            len,
            pool: self.pool.clone(),
        })))
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

/// Decode a capture on `workers` threads, in order.
///
/// Each worker reads a block ahead (regular files), takes the next batch of records from the
/// framer (one block's worth, under a lock: framing is sequential but copies nothing), runs
/// `work(state, batch, out)` on them with its own `state`, and hands `out` back; `emit` gets
/// the outputs on the calling thread in capture order. Memory is bounded by `2 × workers + 1`
/// batches and `2 × workers + 2` blocks read ahead. An error from `emit` stops the run.
/// Returns the workers' states and the framing error that ended the capture, if any.
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
    // A regular file: the reader above only checked the header; the framer reads the file
    // again from its first byte, block by block, from blocks the workers read.
    let (stream, file) = match file_len {
        Some(_) => (None, Some(reader.into_source().into_inner())),
        None => (Some(reader), None),
    };
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
    let framer = match stream {
        Some(r) => Some(Framer::Stream(r)),
        None => match CaptureReader::with_source(BlockSource::new(|| blocks.next(file_len))) {
            Ok(r) => Some(Framer::Blocks(r)),
            // Only if the file changed since its header was read.
            Err(e) => {
                capture_error = Some(e.to_string());
                None
            }
        },
    };
    let feed = Mutex::new(Feed {
        framer,
        next_seq: 0,
        capture_error,
        free: (0..2 * workers + 1).map(|_| make_out()).collect(),
        stop: false,
    });
    let wake = Condvar::new();
    let (tx, rx) = mpsc::channel::<(u64, T)>();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let tx = tx.clone();
                let (feed, wake, work, make_state, blocks) =
                    (&feed, &wake, &work, &make_state, &blocks);
                scope.spawn(move || {
                    let mut state = make_state();
                    let mut batch = RecordBatch::default();
                    loop {
                        if blocks.file.is_some() {
                            blocks.read_ahead(file_len);
                        }
                        let (seq, mut out) = {
                            let mut f = lock(feed);
                            let out = loop {
                                if f.stop || f.framer.is_none() {
                                    return state;
                                }
                                if let Some(o) = f.free.pop() {
                                    break o;
                                }
                                f = wake.wait(f).unwrap_or_else(|e| e.into_inner());
                            };
                            let more = match f.framer.as_mut() {
                                Some(Framer::Blocks(r)) => {
                                    batch.fill(r, BATCH_RECORDS, block_bytes as u64)
                                }
                                Some(Framer::Stream(r)) => {
                                    batch.fill(r, STREAM_BATCH_RECORDS, u64::MAX)
                                }
                                None => false,
                            };
                            if !more {
                                f.capture_error = batch.capture_error.take();
                                f.framer = None;
                                wake.notify_all();
                            }
                            if batch.is_empty() {
                                f.free.push(out);
                                return state;
                            }
                            let seq = f.next_seq;
                            f.next_seq += 1;
                            (seq, out)
                        };
                        work(&mut state, &batch, &mut out);
                        // Let go of the blocks now rather than at the next fill: their buffers go
                        // back to the pool before this worker's next read.
                        batch.clear();
                        if tx.send((seq, out)).is_err() {
                            return state;
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        let mut pending: BTreeMap<u64, T> = BTreeMap::new();
        let mut next = 0u64;
        let mut result = Ok(());
        for (seq, out) in rx {
            pending.insert(seq, out);
            while let Some(mut out) = pending.remove(&next) {
                if result.is_ok()
                    && let Err(e) = emit(&mut out)
                {
                    result = Err(e);
                    lock(&feed).stop = true;
                }
                next += 1;
                lock(&feed).free.push(out);
                wake.notify_all();
            }
        }
        let states: Vec<W> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        result.map(|()| (states, lock(&feed).capture_error.take()))
    })
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
        let files = [
            hpcc,
            cut.clone(),
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
