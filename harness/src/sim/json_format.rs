//! The layout of `metrics.json`: indented as `serde_json`'s pretty printer does, except that
//! an array of numbers is written on one line (`[0, 250000, 500000]`).
//!
//! A run's series are most of the file: one number per line made the file of the ns-3 tiny
//! example 22 MB, and writing the indentation was most of the time a medium run spent after
//! simulating (docs/performance.md). Objects, and arrays of objects, stay one entry per line.
//!
//! An array of integers is staged and written in one piece, and remembered under its key: the
//! next array under the same key that starts with the same numbers takes their text as it was
//! written (a flow's three series share their sample times, the ports theirs, and an idle
//! port's queue is the same run of zeros as the last idle port's). Only the numbers are
//! compared, so the bytes are those of writing every number (`json_format::tests`).

use std::io::{self, Write};

use serde_json::ser::Formatter;

/// How an array is being written: decided by its first element.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    Undecided,
    Inline,
    Indented,
}

/// `serde_json`'s `PrettyFormatter` (two spaces) with arrays of numbers on one line.
pub struct NumbersInline {
    depth: usize,
    has_value: bool,
    /// The array being written, innermost last.
    arrays: Vec<Layout>,
    /// An array element is about to be written: whether it is the first.
    pending: Option<bool>,
    /// Inside an object key (`begin_object_key` .. `end_object_key`), and the last key.
    in_key: bool,
    key: String,
    /// The innermost array, while its elements so far are all `u64`: staged, not written.
    run: Option<Run>,
    /// Its numbers, their text (`1, 22, 333`) and where each number's text ends, once it
    /// differs from the remembered array (before that, they are the remembered array's).
    values: Vec<u64>,
    text: Vec<u8>,
    ends: Vec<usize>,
    /// The last array of integers written under each key.
    memo: Vec<Memo>,
}

/// An array of integers being staged: which remembered array it is compared with, and how
/// many of its first numbers are that array's.
#[derive(Clone, Copy)]
struct Run {
    memo: usize,
    matched: usize,
    diverged: bool,
}

/// An array of integers as last written under `key`.
#[derive(Default)]
struct Memo {
    key: String,
    values: Vec<u64>,
    text: Vec<u8>,
    ends: Vec<usize>,
}

impl Memo {
    /// The text of its first `n` numbers.
    fn text_of(&self, n: usize) -> &[u8] {
        &self.text[..n.checked_sub(1).map_or(0, |k| self.ends[k])]
    }
}

impl NumbersInline {
    pub fn new() -> Self {
        NumbersInline {
            depth: 0,
            has_value: false,
            arrays: Vec::new(),
            pending: None,
            in_key: false,
            key: String::new(),
            run: None,
            values: Vec::new(),
            text: Vec::new(),
            ends: Vec::new(),
            memo: Vec::new(),
        }
    }

    /// The first element of an array is a `u64`: stage the array, compared with the last one
    /// written under the same key.
    fn start_run(&mut self) {
        let memo = match self.memo.iter().position(|m| m.key == self.key) {
            Some(i) => i,
            None => {
                self.memo.push(Memo {
                    key: self.key.clone(),
                    ..Memo::default()
                });
                self.memo.len() - 1
            }
        };
        self.values.clear();
        self.text.clear();
        self.ends.clear();
        self.run = Some(Run {
            memo,
            matched: 0,
            diverged: false,
        });
    }

    /// The staged array's next number: the remembered array's at the same place (most
    /// numbers, nothing to do), else it and every later one written into the stage.
    #[inline]
    fn run_push(&mut self, v: u64) {
        let Some(run) = &mut self.run else {
            return;
        };
        let m = &self.memo[run.memo];
        if !run.diverged {
            if m.values.get(run.matched) == Some(&v) {
                run.matched += 1;
                return;
            }
            // From here on it differs: its numbers so far are the remembered array's.
            run.diverged = true;
            self.text.extend_from_slice(m.text_of(run.matched));
            self.values.extend_from_slice(&m.values[..run.matched]);
            self.ends.extend_from_slice(&m.ends[..run.matched]);
        }
        if !self.values.is_empty() {
            self.text.extend_from_slice(b", ");
        }
        self.text
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        self.values.push(v);
        self.ends.push(self.text.len());
    }

    /// Write the staged numbers. `end`: the array is complete, so it is remembered under its
    /// key (one that matched the remembered array to its end, or to part of it, leaves it).
    fn flush_run<W: ?Sized + Write>(&mut self, w: &mut W, end: bool) -> io::Result<()> {
        let Some(run) = self.run.take() else {
            return Ok(());
        };
        let m = &mut self.memo[run.memo];
        if !run.diverged {
            return w.write_all(m.text_of(run.matched));
        }
        w.write_all(&self.text)?;
        if end {
            std::mem::swap(&mut m.values, &mut self.values);
            std::mem::swap(&mut m.text, &mut self.text);
            std::mem::swap(&mut m.ends, &mut self.ends);
        }
        Ok(())
    }

    fn indent<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    /// Before an array element's first byte: its separator, by the array's layout.
    fn element<W: ?Sized + Write>(&mut self, w: &mut W, number: bool) -> io::Result<()> {
        // Anything but a `u64` in a staged array (a float, a nested array): what is staged
        // goes out first, and the rest of the array is written as it comes.
        self.flush_run(w, false)?;
        let Some(first) = self.pending.take() else {
            return Ok(());
        };
        let layout = match self.arrays.last_mut() {
            Some(l) => {
                if *l == Layout::Undecided {
                    *l = if number {
                        Layout::Inline
                    } else {
                        Layout::Indented
                    };
                }
                *l
            }
            None => Layout::Indented,
        };
        if layout == Layout::Inline {
            if !first {
                w.write_all(b", ")?;
            }
            Ok(())
        } else {
            w.write_all(if first { b"\n" } else { b",\n" })?;
            self.indent(w)
        }
    }
}

impl Default for NumbersInline {
    fn default() -> Self {
        Self::new()
    }
}

macro_rules! number {
    ($($name:ident: $t:ty),*) => {$(
        fn $name<W: ?Sized + Write>(&mut self, w: &mut W, v: $t) -> io::Result<()> {
            self.element(w, true)?;
            serde_json::ser::CompactFormatter.$name(w, v)
        }
    )*};
}

impl Formatter for NumbersInline {
    number!(write_i8: i8, write_i16: i16, write_i32: i32, write_i64: i64, write_i128: i128,
        write_u8: u8, write_u16: u16, write_u32: u32, write_u128: u128,
        write_f32: f32, write_f64: f64);

    /// The series' numbers, nearly every number of the file: an integer that starts an array
    /// stages it ([`NumbersInline::start_run`]), the next ones go to the stage — no write,
    /// no layout bookkeeping per number (the file was 43 % of the shipped fat tree's run when
    /// every number took the general path).
    fn write_u64<W: ?Sized + Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        match self.pending {
            Some(false) if self.run.is_some() => {}
            Some(true) if self.arrays.last() == Some(&Layout::Undecided) => {
                if let Some(l) = self.arrays.last_mut() {
                    *l = Layout::Inline;
                }
                self.start_run();
            }
            _ => {
                self.element(w, true)?;
                return serde_json::ser::CompactFormatter.write_u64(w, v);
            }
        }
        self.pending = None;
        self.run_push(v);
        Ok(())
    }

    fn write_number_str<W: ?Sized + Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        self.element(w, true)?;
        w.write_all(v.as_bytes())
    }

    fn write_null<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.element(w, false)?;
        w.write_all(b"null")
    }

    fn write_bool<W: ?Sized + Write>(&mut self, w: &mut W, v: bool) -> io::Result<()> {
        self.element(w, false)?;
        w.write_all(if v { b"true" } else { b"false" })
    }

    fn begin_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.element(w, false)?;
        w.write_all(b"\"")
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.element(w, false)?;
        self.depth += 1;
        self.has_value = false;
        self.arrays.push(Layout::Undecided);
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.flush_run(w, true)?;
        self.depth -= 1;
        let layout = self.arrays.pop().unwrap_or(Layout::Indented);
        if self.has_value && layout != Layout::Inline {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, _w: &mut W, first: bool) -> io::Result<()> {
        self.pending = Some(first);
        Ok(())
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.element(w, false)?;
        self.depth += 1;
        self.has_value = false;
        // An object's members are not array elements.
        self.arrays.push(Layout::Indented);
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        self.arrays.pop();
        if self.has_value {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.in_key = true;
        self.key.clear();
        w.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(w)
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.in_key = false;
        Ok(())
    }

    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        if self.in_key {
            self.key.push_str(s);
        }
        w.write_all(s.as_bytes())
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// `value` as `metrics.json` lays it out, into `w`.
pub fn to_writer<W: Write, T: ?Sized + serde::Serialize>(
    w: W,
    value: &T,
) -> Result<(), serde_json::Error> {
    let mut ser = serde_json::Serializer::with_formatter(w, NumbersInline::new());
    value.serialize(&mut ser)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &serde_json::Value) -> String {
        let mut out = Vec::new();
        to_writer(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Written by hand: objects indented by two spaces as the pretty printer does, arrays of
    /// numbers on one line, arrays of objects or strings one element per line, empty
    /// containers as `[]` / `{}`.
    #[test]
    fn numbers_inline_everything_else_indented() {
        let v = serde_json::json!({
            "events": 3,
            "series": {"t_ns": [0, 250000, 500000], "v": [-1, 2.5, 1e300]},
            "ports": [{"name": "sw:p0", "q": []}, {"name": "sw:p1", "q": [7]}],
            "names": ["a", "b"],
            "none": null,
            "empty": {},
            "nested": [[1, 2], [3]]
        });
        // The workspace keeps keys in insertion order (serde_json `preserve_order`); ryu
        // writes 1e300 as `1e+300`.
        let expected = r#"{
  "events": 3,
  "series": {
    "t_ns": [0, 250000, 500000],
    "v": [-1, 2.5, 1e+300]
  },
  "ports": [
    {
      "name": "sw:p0",
      "q": []
    },
    {
      "name": "sw:p1",
      "q": [7]
    }
  ],
  "names": [
    "a",
    "b"
  ],
  "none": null,
  "empty": {},
  "nested": [
    [1, 2],
    [3]
  ]
}"#;
        assert_eq!(text(&v), expected);
        let back: serde_json::Value = serde_json::from_str(expected).unwrap();
        assert_eq!(back, v);
    }

    /// A staged array's digits are the standard library's, at every length and both ends.
    #[test]
    fn staged_digits_as_display() {
        let mut values = vec![0, 1, 9, u64::MAX, u64::MAX - 1];
        let mut p = 1u64;
        while let Some(next) = p.checked_mul(10) {
            values.extend([p - 1, p, p + 1, next - 1]);
            p = next;
        }
        let shown: Vec<String> = values.iter().map(|v| format!("{v}")).collect();
        let v = serde_json::json!({ "a": values });
        assert_eq!(text(&v), format!("{{\n  \"a\": [{}]\n}}", shown.join(", ")));
        // Arrays of one, the largest u64 in the middle; a long array reads back as it was.
        let v = serde_json::json!({"t": [0u64, 10, 18446744073709551615u64], "x": [5u64]});
        assert_eq!(
            text(&v),
            "{\n  \"t\": [0, 10, 18446744073709551615],\n  \"x\": [5]\n}"
        );
        let long: Vec<u64> = (0..20_000).map(|i| i * 7919).collect();
        let v = serde_json::json!({"a": long, "b": [1.5, 2], "c": "d"});
        let back: serde_json::Value = serde_json::from_str(&text(&v)).unwrap();
        assert_eq!(back, v);
    }

    /// Arrays under one key that repeat the last one, are a prefix of it, run past it, leave
    /// it midway or turn to a float or a negative number midway: written by hand, each as
    /// if every number were written (the remembered text is only ever a prefix of the same
    /// numbers' text).
    #[test]
    fn remembered_arrays_give_the_same_bytes() {
        let v = serde_json::json!({"s": [
            {"t": [1, 2, 3], "v": [0, 0]},
            {"t": [1, 2, 3], "v": [0, 0, 0]},
            {"t": [1, 2], "v": [0]},
            {"t": [1, 5, 3], "v": []},
            {"t": [1, 2.5, 3], "v": [7, -1]},
            {"t": [1, 5, 3, 4], "v": [7]},
            {"t": [[1, 5], [1, 5, 3]], "v": [7, 7]}
        ]});
        let expected = r#"{
  "s": [
    {
      "t": [1, 2, 3],
      "v": [0, 0]
    },
    {
      "t": [1, 2, 3],
      "v": [0, 0, 0]
    },
    {
      "t": [1, 2],
      "v": [0]
    },
    {
      "t": [1, 5, 3],
      "v": []
    },
    {
      "t": [1, 2.5, 3],
      "v": [7, -1]
    },
    {
      "t": [1, 5, 3, 4],
      "v": [7]
    },
    {
      "t": [
        [1, 5],
        [1, 5, 3]
      ],
      "v": [7, 7]
    }
  ]
}"#;
        assert_eq!(text(&v), expected);
    }

    /// Many arrays that share prefixes of each other (lengths 0-40, digits 1-20) read back as
    /// they were.
    #[test]
    fn remembered_arrays_read_back() {
        let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            s >> 1
        };
        let mut last: Vec<u64> = Vec::new();
        let mut rows = Vec::new();
        for _ in 0..500 {
            let keep = (next() % 41) as usize;
            let mut a: Vec<u64> = last.iter().copied().take(keep).collect();
            for _ in 0..next() % 12 {
                a.push(match next() % 3 {
                    0 => 0,
                    1 => next() % 1_000,
                    _ => next() << (next() % 2),
                });
            }
            rows.push(serde_json::json!({"t": a.clone(), "v": a.iter().rev().collect::<Vec<_>>()}));
            last = a;
        }
        let v = serde_json::json!({ "rows": rows });
        let back: serde_json::Value = serde_json::from_str(&text(&v)).unwrap();
        assert_eq!(back, v);
    }

    /// Without arrays of numbers the bytes are the pretty printer's.
    #[test]
    fn same_as_pretty_without_number_arrays() {
        let v = serde_json::json!({"a": {"b": ["x", {"c": true}], "d": []}, "e": "f"});
        assert_eq!(text(&v), serde_json::to_string_pretty(&v).unwrap());
    }
}
