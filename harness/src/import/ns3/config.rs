//! `config.txt`: `KEY value...` lines as third.cc's `main` reads them; every key it knows, with its
//! kind.

use super::*;

/// How many values a config key takes and of which kind (third.cc's `main`).
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Uint,
    Float,
    Rate,
    Text,
    /// LINK_DOWN: three unsigned integers.
    Uint3,
    /// KMAX_MAP / KMIN_MAP: n, then n × (rate, unsigned).
    MapUint,
    /// PMAX_MAP: n, then n × (rate, float).
    MapFloat,
}

pub(super) const KEYS: &[(&str, Kind)] = &[
    ("ENABLE_QCN", Kind::Uint),
    ("USE_DYNAMIC_PFC_THRESHOLD", Kind::Uint),
    ("CLAMP_TARGET_RATE", Kind::Uint),
    ("PAUSE_TIME", Kind::Float),
    ("DATA_RATE", Kind::Text),
    ("LINK_DELAY", Kind::Text),
    ("PACKET_PAYLOAD_SIZE", Kind::Uint),
    ("L2_CHUNK_SIZE", Kind::Uint),
    ("L2_ACK_INTERVAL", Kind::Uint),
    ("L2_BACK_TO_ZERO", Kind::Uint),
    ("TOPOLOGY_FILE", Kind::Text),
    ("FLOW_FILE", Kind::Text),
    ("TRACE_FILE", Kind::Text),
    ("TRACE_OUTPUT_FILE", Kind::Text),
    ("SIMULATOR_STOP_TIME", Kind::Float),
    ("ALPHA_RESUME_INTERVAL", Kind::Float),
    ("RP_TIMER", Kind::Float),
    ("EWMA_GAIN", Kind::Float),
    ("FAST_RECOVERY_TIMES", Kind::Uint),
    ("RATE_AI", Kind::Rate),
    ("RATE_HAI", Kind::Rate),
    ("ERROR_RATE_PER_LINK", Kind::Float),
    ("CC_MODE", Kind::Uint),
    ("RATE_DECREASE_INTERVAL", Kind::Float),
    ("MIN_RATE", Kind::Rate),
    ("FCT_OUTPUT_FILE", Kind::Text),
    ("HAS_WIN", Kind::Uint),
    ("GLOBAL_T", Kind::Uint),
    ("MI_THRESH", Kind::Uint),
    ("VAR_WIN", Kind::Uint),
    ("FAST_REACT", Kind::Uint),
    ("U_TARGET", Kind::Float),
    ("INT_MULTI", Kind::Uint),
    ("RATE_BOUND", Kind::Uint),
    ("ACK_HIGH_PRIO", Kind::Uint),
    ("DCTCP_RATE_AI", Kind::Rate),
    ("PFC_OUTPUT_FILE", Kind::Text),
    ("LINK_DOWN", Kind::Uint3),
    ("ENABLE_TRACE", Kind::Uint),
    ("KMAX_MAP", Kind::MapUint),
    ("KMIN_MAP", Kind::MapUint),
    ("PMAX_MAP", Kind::MapFloat),
    ("BUFFER_SIZE", Kind::Uint),
    ("QLEN_MON_FILE", Kind::Text),
    ("QLEN_MON_START", Kind::Uint),
    ("QLEN_MON_END", Kind::Uint),
    ("MULTI_RATE", Kind::Uint),
    ("SAMPLE_FEEDBACK", Kind::Uint),
    ("PINT_LOG_BASE", Kind::Float),
    ("PINT_PROB", Kind::Float),
];

/// A parsed `config.txt`: every known key's values (checked against their kind), and the keys
/// the simulator would ignore.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The file.
    pub path: PathBuf,
    values: HashMap<String, Vec<String>>,
    /// Unknown keys with their lines (third.cc skips them; reported as warnings).
    pub unknown: Vec<(u64, String)>,
}

impl Config {
    /// Parse config text; `path` names the file in errors. One `KEY value...` per line; blank
    /// lines and lines starting with `#` are skipped.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ImportError> {
        let mut c = Config {
            path: path.into(),
            ..Config::default()
        };
        for (i, l) in text.lines().enumerate() {
            let line = i as u64 + 1;
            let bad = |message: String| ImportError::Line {
                path: path.into(),
                line,
                message,
            };
            let mut it = l.split_whitespace();
            let Some(key) = it.next() else { continue };
            if key.starts_with('#') {
                continue;
            }
            let vals: Vec<&str> = it.collect();
            let Some(&(_, kind)) = KEYS.iter().find(|(k, _)| *k == key) else {
                c.unknown.push((line, key.to_string()));
                continue;
            };
            let want = match kind {
                Kind::Uint3 => 3,
                Kind::MapUint | Kind::MapFloat => {
                    let n: usize = vals
                        .first()
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| bad(format!("{key}: expected the number of entries")))?;
                    n.checked_mul(2)
                        .and_then(|x| x.checked_add(1))
                        .unwrap_or(usize::MAX)
                }
                _ => 1,
            };
            if vals.len() != want {
                return Err(bad(format!(
                    "{key}: expected {want} value{}, found {}",
                    if want == 1 { "" } else { "s" },
                    vals.len()
                )));
            }
            let check = |v: &str, k: Kind| -> Result<(), ImportError> {
                let ok = match k {
                    Kind::Uint | Kind::Uint3 => v.parse::<u64>().is_ok(),
                    Kind::Float => v.parse::<f64>().is_ok_and(f64::is_finite),
                    Kind::Rate => parse_rate(v).is_some(),
                    _ => true,
                };
                if ok {
                    Ok(())
                } else {
                    Err(bad(format!("{key}: `{v}` is not a valid {}", kind_name(k))))
                }
            };
            match kind {
                Kind::MapUint | Kind::MapFloat => {
                    for pair in vals[1..].chunks(2) {
                        check(pair[0], Kind::Uint)?;
                        check(
                            pair[1],
                            if matches!(kind, Kind::MapUint) {
                                Kind::Uint
                            } else {
                                Kind::Float
                            },
                        )?;
                    }
                }
                k => {
                    for v in &vals {
                        check(v, k)?;
                    }
                }
            }
            c.values.insert(
                key.to_string(),
                vals.iter().map(|s| s.to_string()).collect(),
            );
        }
        Ok(c)
    }

    /// Read and parse a config file.
    pub fn load(path: &Path) -> Result<Config, ImportError> {
        Self::parse(&read_text(path)?, path)
    }

    fn first(&self, key: &str) -> Option<&str> {
        self.values
            .get(key)
            .and_then(|v| v.first())
            .map(String::as_str)
    }

    /// An unsigned key (checked at parse time).
    pub fn uint(&self, key: &str) -> Option<u64> {
        self.first(key).and_then(|v| v.parse().ok())
    }

    /// A float key.
    pub fn float(&self, key: &str) -> Option<f64> {
        self.first(key).and_then(|v| v.parse().ok())
    }

    /// A rate key in bit/s.
    pub fn rate_bps(&self, key: &str) -> Option<u64> {
        self.first(key).and_then(parse_rate)
    }

    /// A text key.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.first(key)
    }

    /// Every value of a key, as written (checked against its kind at parse time).
    pub fn values(&self, key: &str) -> Option<&[String]> {
        self.values.get(key).map(Vec::as_slice)
    }
}

pub(super) fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Uint | Kind::Uint3 | Kind::MapUint => "unsigned integer",
        Kind::Float | Kind::MapFloat => "number",
        Kind::Rate => "ns-3 DataRate (e.g. 50Mb/s, 100Gbps)",
        Kind::Text => "value",
    }
}
