//! JUnit XML for CI servers (harness.md 5): one `<testsuite>` per trace and model, one
//! `<testcase>` per flow; a pair that could not be compared (no golden file, a broken manifest,
//! nothing replayed) is a suite with one testcase carrying `<failure>` or `<error>`, so a CI
//! server never shows it green. Each suite carries the trace's accounting as `<properties>`
//! (docs/verdicts.md). Deterministic: the same inputs give the same bytes (`time` is given by
//! the caller).

use std::fmt::Write as _;

use crate::diff::DiffReport;

/// How a testcase ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Conformant.
    Pass,
    /// A difference (or a missing golden file): `<failure>`.
    Failure {
        /// One line.
        message: String,
        /// Details (the diff text).
        text: String,
    },
    /// Nothing could be compared: `<error>`.
    Error {
        /// One line.
        message: String,
        /// Details.
        text: String,
    },
}

/// One testcase.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// `classname`: the trace / model.
    pub classname: String,
    /// `name`: the flow, or what went wrong.
    pub name: String,
    /// Seconds.
    pub time_s: f64,
    /// How it ended.
    pub outcome: Outcome,
}

/// One testsuite: a trace and model.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    /// `trace / model`.
    pub name: String,
    /// Seconds.
    pub time_s: f64,
    /// `<property name value>` pairs.
    pub properties: Vec<(String, String)>,
    /// Its cases.
    pub cases: Vec<Case>,
}

impl Suite {
    /// A compared pair: one case per flow, a failing flow's case carrying `text` (the diff).
    pub fn compared(name: &str, report: &DiffReport, text: &str, time_s: f64) -> Suite {
        let cases = report
            .flows
            .iter()
            .map(|f| Case {
                classname: name.to_string(),
                name: format!("flow {}", f.flow),
                time_s: 0.0,
                outcome: if f.ok() {
                    Outcome::Pass
                } else {
                    Outcome::Failure {
                        message: format!(
                            "{} mismatched, {} missing, {} extra",
                            f.mismatches, f.missing, f.extra
                        ),
                        text: text.to_string(),
                    }
                },
            })
            .collect();
        Suite {
            name: name.to_string(),
            time_s,
            properties: Vec::new(),
            cases,
        }
    }

    /// A pair that could not be compared: one case, an `<error>` (or a `<failure>` when
    /// `failure` is true: golden files no trace uses, under `--unreferenced reject`). A
    /// missing golden file is an `<error>`: nothing was compared.
    pub fn not_compared(name: &str, case: &str, message: &str, failure: bool) -> Suite {
        let (message, text) = (message.to_string(), String::new());
        Suite {
            name: name.to_string(),
            time_s: 0.0,
            properties: Vec::new(),
            cases: vec![Case {
                classname: name.to_string(),
                name: case.to_string(),
                time_s: 0.0,
                outcome: if failure {
                    Outcome::Failure { message, text }
                } else {
                    Outcome::Error { message, text }
                },
            }],
        }
    }
}

/// Escape text for an XML 1.0 attribute or element; characters XML 1.0 cannot carry at all
/// (C0 controls but tab, newline and carriage return) become U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// [`escape`] for an attribute value: tab, newline and carriage return as character
/// references, which attribute-value normalization would otherwise turn into spaces.
pub fn escape_attr(s: &str) -> String {
    escape(s)
        .replace('\t', "&#9;")
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
}

/// The XML document.
pub fn render(suites: &[Suite]) -> String {
    let count =
        |s: &Suite, f: fn(&Outcome) -> bool| s.cases.iter().filter(|c| f(&c.outcome)).count();
    let is_failure = |o: &Outcome| matches!(o, Outcome::Failure { .. });
    let is_error = |o: &Outcome| matches!(o, Outcome::Error { .. });
    let tests: usize = suites.iter().map(|s| s.cases.len()).sum();
    let failures: usize = suites.iter().map(|s| count(s, is_failure)).sum();
    let errors: usize = suites.iter().map(|s| count(s, is_error)).sum();
    let time: f64 = suites.iter().map(|s| s.time_s).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"ccreplay\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time:.3}\">"
    );
    for (id, s) in suites.iter().enumerate() {
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" id=\"{id}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{:.3}\">",
            escape_attr(&s.name),
            s.cases.len(),
            count(s, is_failure),
            count(s, is_error),
            s.time_s
        );
        if !s.properties.is_empty() {
            x.push_str("    <properties>\n");
            for (k, v) in &s.properties {
                let _ = writeln!(
                    x,
                    "      <property name=\"{}\" value=\"{}\"/>",
                    escape_attr(k),
                    escape_attr(v)
                );
            }
            x.push_str("    </properties>\n");
        }
        for c in &s.cases {
            let _ = write!(
                x,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                escape_attr(&c.classname),
                escape_attr(&c.name),
                c.time_s
            );
            match &c.outcome {
                Outcome::Pass => x.push_str("/>\n"),
                Outcome::Failure { message, text } | Outcome::Error { message, text } => {
                    let tag = if is_failure(&c.outcome) {
                        "failure"
                    } else {
                        "error"
                    };
                    let _ = writeln!(
                        x,
                        ">\n      <{tag} message=\"{}\">{}</{tag}>\n    </testcase>",
                        escape_attr(message),
                        escape(text)
                    );
                }
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    // Counts and escapes worked out by hand for a document of three suites: a pass, a
    // missing golden file (failure) and a broken trace (error).
    #[test]
    fn missing_and_error_pairs_are_testcases_and_counted() {
        let mut pass = Suite::not_compared("a / hpcc", "x", "", false);
        pass.cases[0].outcome = Outcome::Pass;
        pass.time_s = 0.25;
        pass.properties = vec![("accounting.frames".into(), "19".into())];
        let suites = [
            pass,
            Suite::not_compared(
                "b / hpcc",
                "golden file",
                "no golden file golden/b/hpcc.jsonl",
                true,
            ),
            Suite::not_compared("c <&> / -", "replay", "bad \"manifest\"\u{1}", false),
        ];
        let x = render(&suites);
        assert!(x.contains(
            "<testsuites name=\"ccreplay\" tests=\"3\" failures=\"1\" errors=\"1\" time=\"0.250\">"
        ));
        assert!(x.contains("<property name=\"accounting.frames\" value=\"19\"/>"));
        assert!(x.contains(
            "<testsuite name=\"b / hpcc\" id=\"1\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" time=\"0.000\">"
        ));
        assert!(x.contains("<failure message=\"no golden file golden/b/hpcc.jsonl\"></failure>"));
        assert!(x.contains("<testsuite name=\"c &lt;&amp;&gt; / -\" id=\"2\" tests=\"1\" failures=\"0\" errors=\"1\""));
        assert!(x.contains("<error message=\"bad &quot;manifest&quot;\u{FFFD}\"></error>"));
        assert_eq!(x, render(&suites), "deterministic");
    }

    #[test]
    fn a_multi_line_message_keeps_its_lines_in_the_attribute() {
        let x = render(&[Suite::not_compared("t", "replay", "line 1\nline 2", false)]);
        assert!(x.contains("<error message=\"line 1&#10;line 2\">"), "{x}");
    }
}
