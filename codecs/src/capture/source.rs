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
}
