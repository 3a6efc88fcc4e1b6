//! Shared by the codecs' capture tests.

use std::io::{self, Read};

/// A reader handing out at most 5 bytes per call, so every refill path runs.
pub struct Trickle(pub Vec<u8>, pub usize);

impl Read for Trickle {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let k = out.len().min(5).min(self.0.len() - self.1);
        out[..k].copy_from_slice(&self.0[self.1..self.1 + k]);
        self.1 += k;
        Ok(k)
    }
}
