//! Tokens of the simulator's text inputs and ns-3's value syntax (`DataRate`, `Time`).

use super::*;

/// One whitespace-separated token and its line.
pub(super) struct Tok {
    pub(super) text: String,
    pub(super) line: u64,
}

pub(super) fn read_text(path: &Path) -> Result<String, ImportError> {
    std::fs::read_to_string(path).map_err(|source| ImportError::Io {
        path: path.into(),
        source,
    })
}

pub(super) fn tokens(text: &str) -> Vec<Tok> {
    let mut v = Vec::new();
    for (i, l) in text.lines().enumerate() {
        for t in l.split_whitespace() {
            v.push(Tok {
                text: t.to_string(),
                line: i as u64 + 1,
            });
        }
    }
    v
}

/// A sequential reader of tokens that reports the file and line of a bad or missing one.
pub(super) struct Toks<'a> {
    pub(super) path: &'a Path,
    pub(super) toks: Vec<Tok>,
    pub(super) at: usize,
}

impl<'a> Toks<'a> {
    pub(super) fn new(path: &'a Path, text: &str) -> Self {
        Toks {
            path,
            toks: tokens(text),
            at: 0,
        }
    }

    pub(super) fn bad(&self, line: u64, message: String) -> ImportError {
        ImportError::Line {
            path: self.path.into(),
            line,
            message,
        }
    }

    pub(super) fn next(&mut self, what: &str) -> Result<&Tok, ImportError> {
        if self.at >= self.toks.len() {
            let line = self.toks.last().map_or(1, |t| t.line);
            return Err(self.bad(line, format!("file ends before {what}")));
        }
        self.at += 1;
        Ok(&self.toks[self.at - 1])
    }

    pub(super) fn parse<T: std::str::FromStr>(&mut self, what: &str) -> Result<T, ImportError> {
        let t = self.next(what)?;
        let (text, line) = (t.text.clone(), t.line);
        text.parse()
            .map_err(|_| self.bad(line, format!("{what}: `{text}` is not a valid number")))
    }

    pub(super) fn line(&self) -> u64 {
        self.toks
            .get(self.at.saturating_sub(1))
            .map_or(1, |t| t.line)
    }
}

/// An ns-3 `DataRate` string (`100Gbps`, `50Mb/s`, `1.5GBps`) in bit/s.
pub fn parse_rate(s: &str) -> Option<u64> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let (unit, per_s) = if let Some(u) = unit.strip_suffix("ps") {
        (u, true)
    } else if let Some(u) = unit.strip_suffix("/s") {
        (u, true)
    } else {
        (unit, false)
    };
    if !per_s {
        return None;
    }
    let (unit, bits) = if let Some(u) = unit.strip_suffix('b') {
        (u, 1.0)
    } else if let Some(u) = unit.strip_suffix('B') {
        (u, 8.0)
    } else {
        return None;
    };
    let scale = match unit {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bps = (v * scale * bits).round();
    (0.0..9.0e18).contains(&bps).then_some(bps as u64)
}

/// An ns-3 `Time` string (`0.001ms`, `1us`, `500ns`, `2s`) in ns.
pub fn parse_time_ns(s: &str) -> Option<u64> {
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let scale = match unit {
        "s" | "" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        _ => return None,
    };
    let ns = (v * scale).round();
    (0.0..9.0e18).contains(&ns).then_some(ns as u64)
}
