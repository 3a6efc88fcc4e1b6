//! Byte sources for [`CaptureReader`](super::CaptureReader): a buffered stream or a slice.

use std::io::{self, Read};

/// Initial stream buffer: 64 KiB, grown only for a larger block (up to the caller's cap).
const INITIAL_BUFFER_BYTES: usize = 64 * 1024;

mod sealed {
    pub trait Sealed {}
}

/// Where a capture reader gets its bytes. Implemented by [`StreamSource`] (any [`Read`], with a
/// bounded buffer of its own) and [`SliceSource`] (bytes already in memory, never copied).
pub trait Source: sealed::Sealed {
    /// Makes at least `n` bytes available from the current position when the input still has
    /// them, and returns every byte available (fewer than `n` only at the end of the input).
    /// Callers bound `n` (the reader never asks for more than a capped block).
    fn fill(&mut self, n: usize) -> io::Result<&[u8]>;

    /// The bytes available from the current position, without reading.
    fn available(&self) -> &[u8];

    /// Moves the position `n` bytes forward; `n` must not exceed `available().len()` (a larger
    /// `n` stops at the end of the available bytes).
    fn consume(&mut self, n: usize);

    /// Moves the position `n` bytes forward, reading and discarding what is not buffered.
    /// Returns how many bytes were skipped: fewer than `n` only at the end of the input.
    fn skip(&mut self, n: u64) -> io::Result<u64>;
}

/// A [`Source`] over any [`Read`], with its own buffer: 64 KiB at first, grown only when a
/// block needs more, so memory stays bounded by the largest block whatever the file size.
#[derive(Debug)]
pub struct StreamSource<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
}

impl<R: Read> StreamSource<R> {
    /// Wraps `reader`; nothing is read or allocated until the first `fill`.
    pub fn new(reader: R) -> Self {
        StreamSource {
            reader,
            buf: Vec::new(),
            start: 0,
            end: 0,
            eof: false,
        }
    }

    /// The wrapped reader.
    pub fn get_ref(&self) -> &R {
        &self.reader
    }

    /// The wrapped reader (bytes already buffered are lost to it).
    pub fn into_inner(self) -> R {
        self.reader
    }
}

impl<R: Read> sealed::Sealed for StreamSource<R> {}

impl<R: Read> Source for StreamSource<R> {
    fn fill(&mut self, n: usize) -> io::Result<&[u8]> {
        while self.end - self.start < n && !self.eof {
            if self.buf.len() - self.start < n {
                // Move the unread tail to the front, then grow if the block still does not fit.
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
                if self.buf.len() < n {
                    let grown = n.max(INITIAL_BUFFER_BYTES).max(self.buf.len() * 2);
                    self.buf.resize(grown.max(n), 0);
                }
            }
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(&self.buf[self.start..self.end])
    }

    fn available(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n.min(self.end - self.start);
    }

    fn skip(&mut self, n: u64) -> io::Result<u64> {
        let buffered = (self.end - self.start) as u64;
        if n <= buffered {
            self.start += n as usize;
            return Ok(n);
        }
        self.start = 0;
        self.end = 0;
        if self.eof {
            return Ok(buffered);
        }
        let rest = n - buffered;
        let copied = io::copy(&mut (&mut self.reader).take(rest), &mut io::sink())?;
        if copied < rest {
            self.eof = true;
        }
        Ok(buffered + copied)
    }
}

/// A [`Source`] over bytes already in memory: records borrow the slice itself, nothing is
/// copied (used to time bare iteration against full decoding).
#[derive(Clone, Copy, Debug)]
pub struct SliceSource<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> SliceSource<'a> {
    /// Reads `data` from its first byte.
    pub fn new(data: &'a [u8]) -> Self {
        SliceSource { data, pos: 0 }
    }
}

impl sealed::Sealed for SliceSource<'_> {}

impl Source for SliceSource<'_> {
    fn fill(&mut self, _n: usize) -> io::Result<&[u8]> {
        Ok(self.available())
    }

    fn available(&self) -> &[u8] {
        self.data.get(self.pos..).unwrap_or(&[])
    }

    fn consume(&mut self, n: usize) {
        self.pos = self.pos.saturating_add(n).min(self.data.len());
    }

    fn skip(&mut self, n: u64) -> io::Result<u64> {
        let left = (self.data.len() - self.pos) as u64;
        let k = n.min(left);
        self.pos += k as usize;
        Ok(k)
    }
}

/// A [`Source`] over a file read in blocks that other threads may have read in parallel: the
/// blocks come in file order from `next` (`None` at the end of the input), and a record lying
/// inside one block is served from it without a copy. Only a record straddling two blocks is
/// copied, into a small buffer of its own ([`BlockSource::straddled`]).
///
/// With this source a [`CaptureReader`](super::CaptureReader) frames records exactly as over a
/// [`StreamSource`] (same records, same errors at the same offsets), while the expensive part,
/// reading the file, runs on as many threads as read blocks.
pub struct BlockSource<B, P> {
    next: P,
    /// The current block; bytes continue at `cur[pos..]` (after `side[spos..]`, if any).
    cur: Option<B>,
    pos: usize,
    /// The bytes of a record that straddles a block edge, gathered; empty when not in use.
    side: Vec<u8>,
    spos: usize,
    eof: bool,
}

impl<B, P> std::fmt::Debug for BlockSource<B, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockSource")
            .field("pos", &self.pos)
            .field("straddled", &(self.side.len() - self.spos))
            .field("eof", &self.eof)
            .finish_non_exhaustive()
    }
}

impl<B: AsRef<[u8]>, P: FnMut() -> io::Result<Option<B>>> BlockSource<B, P> {
    /// Reads the blocks `next` returns, in order; nothing is asked for until the first `fill`.
    pub fn new(next: P) -> Self {
        BlockSource {
            next,
            cur: None,
            pos: 0,
            side: Vec::new(),
            spos: 0,
            eof: false,
        }
    }

    /// Where `data` — bytes this source handed out and has not yet moved past — lies: in the
    /// current block, at this offset (`Ok`), or in the straddle buffer (`Err`, the bytes).
    /// Decided by address, without reading `data`.
    pub fn locate<'s>(&'s self, data: &[u8]) -> Result<(&'s B, usize), &'s [u8]> {
        let at = data.as_ptr() as usize;
        if let Some(b) = &self.cur
            && !self.straddling()
        {
            let bytes = b.as_ref();
            let base = bytes.as_ptr() as usize;
            if at >= base && at + data.len() <= base + bytes.len() {
                return Ok((b, at - base));
            }
        }
        let base = self.side.as_ptr() as usize;
        let off = at.wrapping_sub(base).min(self.side.len());
        Err(self.side.get(off..off + data.len()).unwrap_or(&[]))
    }

    /// Copied bytes are being served (a record straddles a block edge).
    fn straddling(&self) -> bool {
        self.spos < self.side.len()
    }

    /// Bytes left in the current block.
    fn rest(&self) -> &[u8] {
        self.cur
            .as_ref()
            .map_or(&[][..], |b| b.as_ref().get(self.pos..).unwrap_or(&[]))
    }

    /// Moves to the next non-empty block; false at the end of the input.
    fn advance(&mut self) -> io::Result<bool> {
        loop {
            if self.eof {
                return Ok(false);
            }
            match (self.next)()? {
                None => {
                    self.eof = true;
                    self.cur = None;
                    self.pos = 0;
                    return Ok(false);
                }
                Some(b) => {
                    let empty = b.as_ref().is_empty();
                    self.cur = Some(b);
                    self.pos = 0;
                    if !empty {
                        return Ok(true);
                    }
                }
            }
        }
    }

    /// Makes `n` bytes contiguous: what is available, then bytes of the next blocks, copied
    /// into the straddle buffer.
    fn gather(&mut self, n: usize) -> io::Result<()> {
        if !self.straddling() && self.rest().is_empty() {
            // Nothing left here: serve the next block itself, without a copy.
            if !self.advance()? || self.rest().len() >= n {
                return Ok(());
            }
        }
        if self.straddling() {
            self.side.drain(..self.spos);
        } else {
            self.side.clear();
            let pos = self.pos;
            if let Some(b) = &self.cur {
                self.side.extend_from_slice(&b.as_ref()[pos..]);
            }
            self.pos = self.cur.as_ref().map_or(0, |b| b.as_ref().len());
        }
        self.spos = 0;
        while self.side.len() < n {
            if self.rest().is_empty() && !self.advance()? {
                break;
            }
            let take = (n - self.side.len()).min(self.rest().len());
            let pos = self.pos;
            if let Some(b) = &self.cur {
                self.side.extend_from_slice(&b.as_ref()[pos..pos + take]);
            }
            self.pos += take;
        }
        Ok(())
    }
}

impl<B, P> sealed::Sealed for BlockSource<B, P> {}

impl<B: AsRef<[u8]>, P: FnMut() -> io::Result<Option<B>>> Source for BlockSource<B, P> {
    fn fill(&mut self, n: usize) -> io::Result<&[u8]> {
        if self.available().len() < n {
            self.gather(n)?;
        }
        Ok(self.available())
    }

    fn available(&self) -> &[u8] {
        if self.straddling() {
            &self.side[self.spos..]
        } else {
            self.rest()
        }
    }

    fn consume(&mut self, n: usize) {
        if self.straddling() {
            self.spos += n.min(self.side.len() - self.spos);
            if self.spos == self.side.len() {
                self.side.clear();
                self.spos = 0;
            }
        } else {
            self.pos += n.min(self.rest().len());
        }
    }

    fn skip(&mut self, n: u64) -> io::Result<u64> {
        let mut done = 0u64;
        while done < n {
            let a = self.available().len() as u64;
            if a == 0 {
                if !self.advance()? {
                    break;
                }
                continue;
            }
            let k = a.min(n - done);
            self.consume(k as usize);
            done += k;
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns at most `chunk` bytes per call, to exercise refills.
    struct Trickle<'a> {
        data: &'a [u8],
        chunk: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let k = self.chunk.min(out.len()).min(self.data.len());
            out[..k].copy_from_slice(&self.data[..k]);
            self.data = &self.data[k..];
            Ok(k)
        }
    }

    #[test]
    fn stream_fill_consume_skip() {
        let data: Vec<u8> = (0..=255u8).cycle().take(200_000).collect();
        let mut s = StreamSource::new(Trickle {
            data: &data,
            chunk: 7,
        });
        assert_eq!(s.fill(10).unwrap()[..10], data[..10]);
        s.consume(3);
        assert_eq!(s.available()[0], 3);
        // A fill larger than the initial 64 KiB buffer grows it.
        let big = s.fill(100_000).unwrap();
        assert!(big.len() >= 100_000);
        assert_eq!(big[99_999], data[3 + 99_999]);
        // Skip past the buffered bytes: 3 + 150_000 = 150_003.
        assert_eq!(s.skip(150_000).unwrap(), 150_000);
        assert_eq!(s.fill(1).unwrap()[0], data[150_003]);
        // Skip beyond the end stops at the end: 200_000 - 150_003 = 49_997 bytes were left.
        assert_eq!(s.skip(1_000_000).unwrap(), 49_997);
        assert!(s.fill(1).unwrap().is_empty());
    }

    #[test]
    fn slice_source_never_copies() {
        let data = [1u8, 2, 3, 4, 5];
        let mut s = SliceSource::new(&data);
        assert_eq!(s.fill(100).unwrap().as_ptr(), data.as_ptr());
        s.consume(2);
        assert_eq!(s.available(), &[3, 4, 5]);
        assert_eq!(s.skip(10).unwrap(), 3);
        assert!(s.available().is_empty());
        s.consume(1);
        assert!(s.available().is_empty());
    }

    /// A reader that gives `parts` one after another, each whole if it fits, and then 0 bytes
    /// (an empty part is an end of input that a later part follows, like a file that grows).
    struct Parts(Vec<Vec<u8>>);

    impl Read for Parts {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let Some(p) = self.0.first_mut() else {
                return Ok(0);
            };
            let k = p.len().min(out.len());
            out[..k].copy_from_slice(&p[..k]);
            p.drain(..k);
            if p.is_empty() || k == 0 {
                self.0.remove(0);
            }
            Ok(k)
        }
    }

    /// The stream buffer is 64 KiB (65,536 bytes) at first and, for a larger block, grows to
    /// the larger of the block and twice its size; the unread tail moves to the front first.
    /// A reader that fills whatever it is given shows the size: `fill` returns every byte
    /// buffered.
    #[test]
    fn stream_buffer_is_64_kib_then_doubles() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut s = StreamSource::new(&data[..]);
        assert_eq!(s.fill(10).unwrap().len(), 65_536);
        s.consume(65_000);
        // 536 unread bytes move to the front; the buffer grows to max(100,000, 2 × 65,536)
        // = 131,072 and is filled: data[65,000..196,072].
        let got = s.fill(100_000).unwrap();
        assert_eq!(got.len(), 131_072);
        assert_eq!((got[0], got[131_071]), (data[65_000], data[196_071]));
        // Past twice the size, the block's own: max(300,000, 262,144); data[196,072..496,072].
        s.consume(131_072);
        let got = s.fill(300_000).unwrap();
        assert_eq!(got.len(), 300_000);
        assert_eq!((got[0], got[299_999]), (data[196_072], data[496_071]));
        // The buffered bytes only move when the block does not fit behind them: 10 bytes
        // after consuming 5 of a fresh 64 KiB buffer are served in place.
        let mut s = StreamSource::new(&data[..]);
        let first = s.fill(1).unwrap().as_ptr();
        s.consume(5);
        assert_eq!(s.fill(10).unwrap().as_ptr(), first.wrapping_add(5));
        assert_eq!(
            s.get_ref().len(),
            1_000_000 - 65_536,
            "the reader was read once"
        );
        assert_eq!(s.into_inner().len(), 1_000_000 - 65_536);
    }

    /// Consuming more than is buffered stops at the end of the buffered bytes; skipping exactly
    /// what is buffered reads nothing; once the input has ended it is not read again (a reader
    /// that would give more bytes later is not asked).
    #[test]
    fn stream_consume_skip_and_the_end() {
        let mut s = StreamSource::new(Parts(vec![vec![1, 2, 3, 4, 5], vec![6, 7, 8]]));
        assert_eq!(s.fill(5).unwrap(), [1, 2, 3, 4, 5]);
        s.consume(2);
        assert_eq!(s.available(), [3, 4, 5]);
        s.consume(1000);
        assert!(s.available().is_empty());
        assert_eq!(s.fill(3).unwrap(), [6, 7, 8]);
        assert_eq!(s.skip(3).unwrap(), 3);
        assert_eq!(
            s.get_ref().0.len(),
            0,
            "nothing read past what was buffered"
        );
        assert!(s.fill(1).unwrap().is_empty());

        // The end seen by `fill`: bytes after it are never read.
        let mut s = StreamSource::new(Parts(vec![vec![1, 2], vec![], vec![9, 9]]));
        assert_eq!(s.fill(4).unwrap(), [1, 2]);
        assert_eq!(s.fill(4).unwrap(), [1, 2]);
        s.consume(2);
        assert!(s.fill(1).unwrap().is_empty());
        assert_eq!(s.skip(1).unwrap(), 0);
        // The end seen by `skip` (2 buffered + 1 read of the 5 asked): the same.
        let mut s = StreamSource::new(Parts(vec![vec![1, 2], vec![3], vec![], vec![9, 9]]));
        assert_eq!(s.fill(1).unwrap(), [1, 2]);
        assert_eq!(s.skip(5).unwrap(), 3);
        assert!(s.fill(1).unwrap().is_empty());
        assert_eq!(s.skip(5).unwrap(), 0);
        // Skipping within the buffer, then past it: 2 of [1, 2, 3] buffered, then 4 more.
        let mut s = StreamSource::new(Parts(vec![vec![1, 2, 3], vec![4, 5, 6, 7, 8]]));
        assert_eq!(s.fill(1).unwrap(), [1, 2, 3]);
        assert_eq!(s.skip(2).unwrap(), 2);
        assert_eq!(s.available(), [3]);
        assert_eq!(s.skip(4).unwrap(), 4); // 3, then 4, 5, 6 read and dropped
        assert_eq!(s.fill(2).unwrap(), [7, 8]);
    }

    /// `Debug` of a block source shows its position in the block and how many copied bytes are
    /// left to serve. Blocks of 3 over 0..10: a fill of 5 copies block 1 (3 bytes) and 2
    /// bytes of block 2 (so pos 2); consuming 1 leaves 4 copied bytes.
    #[test]
    fn block_source_debug_and_straddle() {
        let data: Vec<u8> = (0..10).collect();
        let mut chunks = data.chunks(3).map(<[u8]>::to_vec);
        let mut s = BlockSource::new(move || Ok(chunks.next()));
        assert_eq!(
            format!("{s:?}"),
            "BlockSource { pos: 0, straddled: 0, eof: false, .. }"
        );
        assert_eq!(s.fill(5).unwrap(), [0, 1, 2, 3, 4]);
        s.consume(1);
        assert_eq!(
            format!("{s:?}"),
            "BlockSource { pos: 2, straddled: 4, eof: false, .. }"
        );
        // The copied bytes are not in a block: `locate` gives them back.
        assert_eq!(s.locate(&s.available()[..2]), Err(&[1u8, 2][..]));
        s.consume(4);
        // Back in block 2 at 2: [5], then block 3, block 4 ([9]).
        assert_eq!(s.available(), [5]);
        assert_eq!(s.skip(4).unwrap(), 4);
        assert_eq!(s.fill(1).unwrap(), [9]);
        s.consume(1);
        assert!(s.fill(1).unwrap().is_empty());
        assert_eq!(
            format!("{s:?}"),
            "BlockSource { pos: 0, straddled: 0, eof: true, .. }"
        );
    }

    /// The buffer neither moves nor grows when the block fits: with 100 of 65,536 bytes
    /// buffered and 36 consumed, a block of 65,500 ends exactly at the buffer's end (36 +
    /// 65,500 = 65,536) and is read in place; a block of exactly 65,536 after a full buffer
    /// with 10 consumed moves the 65,526 unread bytes to the front and fills the 10 freed, no
    /// more (a generous reader would fill a grown buffer).
    #[test]
    fn stream_buffer_moves_and_grows_only_when_needed() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        let mut s = StreamSource::new(Parts(vec![data[..100].to_vec(), data[100..].to_vec()]));
        let base = s.fill(1).unwrap().as_ptr();
        s.consume(36);
        let got = s.fill(65_500).unwrap();
        assert_eq!(
            (got.as_ptr(), got.len(), got[0]),
            (base.wrapping_add(36), 65_500, data[36])
        );

        let mut s = StreamSource::new(&data[..]);
        assert_eq!(s.fill(1).unwrap().len(), 65_536);
        s.consume(10);
        let got = s.fill(65_536).unwrap();
        assert_eq!(
            (got.len(), got[0], got[65_535]),
            (65_536, data[10], data[65_545])
        );
    }

    /// `locate` claims only bytes inside the current block: bytes just past its end (here the
    /// next block's, in the same array) or across its edge are not in it.
    #[test]
    fn block_source_locates_only_inside_the_block() {
        let big: Vec<u8> = (0..20).collect();
        let mut blocks = [&big[..10], &big[10..]].into_iter();
        let mut s = BlockSource::new(move || Ok(blocks.next()));
        assert_eq!(s.fill(4).unwrap(), &big[..10]);
        assert_eq!(s.locate(&big[2..6]), Ok((&&big[..10], 2)));
        assert_eq!(s.locate(&big[6..10]), Ok((&&big[..10], 6)));
        assert_eq!(s.locate(&big[12..14]), Err(&[][..]));
        assert_eq!(s.locate(&big[9..13]), Err(&[][..]));
    }

    /// A block that holds what is asked for is served in place, also when the previous block
    /// was used up exactly; a straddling fill copies exactly what was asked (blocks of 1 and
    /// 20 bytes, a fill of 10: the 1 byte and 9 of the next), and consuming more than the
    /// copied bytes left stops at their end.
    #[test]
    fn block_source_serves_in_place_and_copies_no_more_than_asked() {
        let data: Vec<u8> = (0..12).collect();
        let mut chunks = data.chunks(4).map(<[u8]>::to_vec);
        let mut s = BlockSource::new(move || Ok(chunks.next()));
        assert_eq!(s.fill(4).unwrap(), [0, 1, 2, 3]);
        assert_eq!(s.locate(&s.available()[..4]), Ok((&vec![0, 1, 2, 3], 0)));
        s.consume(4);
        assert_eq!(s.fill(4).unwrap(), [4, 5, 6, 7]);
        assert_eq!(s.locate(&s.available()[1..3]), Ok((&vec![4, 5, 6, 7], 1)));

        let data: Vec<u8> = (0..21).collect();
        let mut parts = [&data[..1], &data[1..]].into_iter();
        let mut s = BlockSource::new(move || Ok(parts.next()));
        assert_eq!(s.fill(10).unwrap(), &data[..10]);
        assert_eq!(
            format!("{s:?}"),
            "BlockSource { pos: 9, straddled: 10, eof: false, .. }"
        );
        s.consume(1);
        s.consume(100); // 9 copied bytes were left
        assert_eq!(
            format!("{s:?}"),
            "BlockSource { pos: 9, straddled: 0, eof: false, .. }"
        );
        assert_eq!(s.available(), &data[10..]);
    }
}
