//! The allowances of the observed-behaviour verdict: what a correct NIC may do that the
//! reference's decisions do not show (docs/observed.md "Allowances"). Each has a unit; the
//! manifest's `[observed]` table and `--allow KEY=VALUE` set them, the command line last.

use std::fmt;

/// What a correct NIC may legitimately do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Allowances {
    /// `reaction`: how long after the reference decides the NIC may still send by the previous
    /// rate or window (firmware latency), ns.
    pub reaction_ns: u64,
    /// `burst`: bytes a scheduler may send back to back ahead of its pacing (batching), and the
    /// credit a sender may bank by being early.
    pub burst_bytes: u64,
    /// `rate_tolerance`: relative error of the rate limiter (its granularity), e.g. 0.02.
    pub rate_tolerance: f64,
    /// `timing`: error of one transmit time besides the timestamp resolution — limiter clock
    /// tick, timestamp jitter of the tap — ns.
    pub timing_ns: u64,
    /// `resolution`: the capture's timestamp resolution, ns (`None`: measured from the
    /// capture's timestamps).
    pub resolution_ns: Option<u64>,
    /// `window_slack`: bytes in flight a sender may have above its window (`None`: one MTU).
    pub window_slack_bytes: Option<u64>,
    /// `ack_coalescing` (`--dut wire`): data packets one ACK or NAK of a receiver may
    /// acknowledge (IBA lets a responder coalesce ACKs); 1 = an ACK for every packet.
    pub ack_coalescing: u64,
}

impl Default for Allowances {
    /// The defaults: what the hardware profiles of docs/observed.md's measurements need, with
    /// a margin (a 6-bit-mantissa rate limiter is 1.6 % coarse; batches of 4 KB; 2 µs of
    /// firmware latency; 100 ns of jitter).
    fn default() -> Self {
        Allowances {
            reaction_ns: 5_000,
            burst_bytes: 8_192,
            rate_tolerance: 0.02,
            timing_ns: 200,
            resolution_ns: None,
            window_slack_bytes: None,
            ack_coalescing: 1,
        }
    }
}

/// The keys, their unit kind and what they mean (the error of an unknown key lists them).
pub const KEYS: [(&str, &str, &str); 7] = [
    (
        "reaction",
        "time",
        "delay before a decision must show on the wire",
    ),
    ("burst", "bytes", "bytes sent back to back ahead of pacing"),
    (
        "rate_tolerance",
        "ratio",
        "relative granularity of the rate limiter",
    ),
    (
        "timing",
        "time",
        "transmit-time error besides the resolution (limiter tick, jitter)",
    ),
    (
        "resolution",
        "time",
        "capture timestamp resolution (default: measured)",
    ),
    (
        "window_slack",
        "bytes",
        "bytes in flight above the window (default: one MTU)",
    ),
    (
        "ack_coalescing",
        "count",
        "--dut wire: data packets one ACK may acknowledge (default 1)",
    ),
];

/// A value the allowances refuse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowError(pub String);

impl fmt::Display for AllowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AllowError {}

fn split_unit(v: &str) -> (&str, &str) {
    let v = v.trim();
    let at = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == 'e' || c == '-'))
        .unwrap_or(v.len());
    (v[..at].trim(), v[at..].trim())
}

fn number(n: &str, whole: &str) -> Result<f64, AllowError> {
    n.replace('_', "")
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| {
            AllowError(format!(
                "`{whole}` is not a non-negative number with a unit"
            ))
        })
}

/// `5us`, `200 ns`, `1.5ms`, `0.001s`; a bare number is ns.
pub fn parse_time_ns(v: &str) -> Result<u64, AllowError> {
    let (n, unit) = split_unit(v);
    let x = number(n, v)?;
    let scale = match unit {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        u => {
            return Err(AllowError(format!(
                "`{v}`: unknown time unit `{u}` (ns, us, ms, s)"
            )));
        }
    };
    Ok((x * scale).round() as u64)
}

/// `8KB` (1000), `8KiB` (1024), `1MB`, `1500B`; a bare number is bytes.
pub fn parse_bytes(v: &str) -> Result<u64, AllowError> {
    let (n, unit) = split_unit(v);
    let x = number(n, v)?;
    let scale = match unit {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "KiB" => 1024.0,
        "MB" => 1e6,
        "MiB" => 1_048_576.0,
        u => {
            return Err(AllowError(format!(
                "`{v}`: unknown byte unit `{u}` (B, KB, KiB, MB, MiB)"
            )));
        }
    };
    Ok((x * scale).round() as u64)
}

/// A whole number of at least 1 (`16`, `1_000`).
pub fn parse_count(v: &str) -> Result<u64, AllowError> {
    v.trim()
        .replace('_', "")
        .parse::<u64>()
        .ok()
        .filter(|&c| c >= 1)
        .ok_or_else(|| AllowError(format!("`{v}`: a whole number of at least 1")))
}

/// `2%` or `0.02`.
pub fn parse_ratio(v: &str) -> Result<f64, AllowError> {
    let (n, unit) = split_unit(v);
    let x = number(n, v)?;
    let r = match unit {
        "" => x,
        "%" => x / 100.0,
        u => return Err(AllowError(format!("`{v}`: unknown unit `{u}` (% or none)"))),
    };
    if r >= 1.0 {
        return Err(AllowError(format!("`{v}`: a ratio below 1 (100 %)")));
    }
    Ok(r)
}

impl Allowances {
    /// Set `key` from its text (`KEY=VALUE` of the command line, or the manifest's value).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), AllowError> {
        match key {
            "reaction" => self.reaction_ns = parse_time_ns(value)?,
            "burst" => self.burst_bytes = parse_bytes(value)?,
            "rate_tolerance" => self.rate_tolerance = parse_ratio(value)?,
            "timing" => self.timing_ns = parse_time_ns(value)?,
            "resolution" => self.resolution_ns = Some(parse_time_ns(value)?.max(1)),
            "window_slack" => self.window_slack_bytes = Some(parse_bytes(value)?),
            "ack_coalescing" => self.ack_coalescing = parse_count(value)?,
            _ => {
                return Err(AllowError(format!(
                    "unknown allowance `{key}`: {}",
                    KEYS.map(|(k, _, _)| k).join(", ")
                )));
            }
        }
        Ok(())
    }

    /// `KEY=VALUE`.
    pub fn set_pair(&mut self, pair: &str) -> Result<(), AllowError> {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| AllowError(format!("`{pair}`: write KEY=VALUE (e.g. reaction=5us)")))?;
        self.set(k.trim(), v.trim())
    }

    /// The manifest's `[observed]` table, then the command line's pairs.
    pub fn resolve(
        section: &crate::manifest::ObservedSection,
        pairs: &[String],
    ) -> Result<Self, AllowError> {
        let mut a = Allowances::default();
        for (k, v) in &section.values {
            let text = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                other => {
                    return Err(AllowError(format!(
                        "[observed] {k}: a number or text with a unit, not {}",
                        other.type_str()
                    )));
                }
            };
            a.set(k, &text)
                .map_err(|e| AllowError(format!("[observed] {k}: {e}")))?;
        }
        for p in pairs {
            a.set_pair(p)
                .map_err(|e| AllowError(format!("--allow {p}: {e}")))?;
        }
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_time_ns("5us").unwrap(), 5_000);
        assert_eq!(parse_time_ns("5 µs").unwrap(), 5_000);
        assert_eq!(parse_time_ns("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_time_ns("200").unwrap(), 200);
        assert_eq!(parse_bytes("8KB").unwrap(), 8_000);
        assert_eq!(parse_bytes("8KiB").unwrap(), 8_192);
        assert_eq!(parse_bytes("1_500B").unwrap(), 1_500);
        assert_eq!(parse_ratio("2%").unwrap(), 0.02);
        assert_eq!(parse_ratio("0.5").unwrap(), 0.5);
        assert!(parse_ratio("100%").is_err());
        assert!(parse_time_ns("5 parsecs").is_err());
        assert!(parse_bytes("-3KB").is_err());
        assert!(parse_time_ns("").is_err());
    }

    #[test]
    fn command_line_after_manifest() {
        let mut section = crate::manifest::ObservedSection::default();
        section
            .values
            .insert("reaction".into(), toml::Value::String("2us".into()));
        section
            .values
            .insert("burst".into(), toml::Value::Integer(4000));
        let a = Allowances::resolve(&section, &["reaction=7us".into()]).unwrap();
        assert_eq!(a.reaction_ns, 7_000);
        assert_eq!(a.burst_bytes, 4_000);
        let e = Allowances::resolve(&section, &["latency=1us".into()]).unwrap_err();
        assert!(e.0.contains("unknown allowance `latency`"), "{e}");
        assert!(e.0.contains("reaction, burst"), "{e}");
    }
}
