//! `ccreplay sim --set KEY=VALUE` (docs/sim.md "Overriding parameters"), and the overrides
//! recorded where a run's outputs are: the manifests' generator line and `metrics.json`.

use crate::sim::{SimError, json_format};

/// One `ccreplay sim --set KEY=VALUE`: a value that replaces (or adds) the key of the scenario
/// file at a dotted path before the file is read (docs/sim.md "Overriding parameters").
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// The path: table keys, and array indices for arrays of tables (`flows.0.start_ns`).
    pub path: Vec<String>,
    /// The value: a TOML value, or a string when `VALUE` is not one (`model=dcqcn`).
    pub value: toml::Value,
    /// `KEY=VALUE` as given (recorded in the outputs, so a run can be repeated).
    pub text: String,
}

impl std::str::FromStr for Override {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}`: use KEY=VALUE, e.g. params.w_ai_bytes=40"))?;
        let key = key.trim();
        let path: Vec<String> = key.split('.').map(str::to_string).collect();
        if path.iter().any(String::is_empty) {
            return Err(format!("`{text}`: the key `{key}` has an empty part"));
        }
        let value = value.trim();
        // A document of exactly one key: a value such as `1\nx = 2` is a string, not two keys.
        let parsed = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .filter(|t| t.len() == 1)
            .and_then(|mut t| t.remove("v"));
        Ok(Override {
            path,
            value: parsed.unwrap_or_else(|| toml::Value::String(value.to_string())),
            text: text.to_string(),
        })
    }
}

impl Override {
    /// Put the value into `table` (the scenario file as a table), creating missing tables on
    /// the way.
    pub fn apply(&self, table: &mut toml::Table) -> Result<(), SimError> {
        let mut root = toml::Value::Table(std::mem::take(table));
        let r = set_path(&mut root, &self.path, &self.value, "");
        if let toml::Value::Table(t) = root {
            *table = t;
        }
        r.map_err(|m| SimError::Scenario(format!("--set {}: {m}", self.text)))
    }
}

/// Set `path` under `here` (at the dotted path `at`) to `value`.
fn set_path(
    here: &mut toml::Value,
    path: &[String],
    value: &toml::Value,
    at: &str,
) -> Result<(), String> {
    let Some((key, rest)) = path.split_first() else {
        *here = value.clone();
        return Ok(());
    };
    let child_at = if at.is_empty() {
        key.clone()
    } else {
        format!("{at}.{key}")
    };
    let child = match here {
        toml::Value::Table(t) => t
            .entry(key.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new())),
        toml::Value::Array(a) => match key.parse::<usize>() {
            Ok(i) if i < a.len() => &mut a[i],
            _ => {
                return Err(format!(
                    "`{at}` has {} entries: `{key}` is not an index in 0..{}",
                    a.len(),
                    a.len()
                ));
            }
        },
        v => return Err(format!("`{at}` is a {}, not a table", v.type_str())),
    };
    set_path(child, rest, value, &child_at)
}

/// `ccreplay sim NAME --set KEY=VALUE ...`: what made a run, as a manifest's
/// `source.generator` records it (values quoted for a POSIX shell where needed).
pub fn generator(name: &str, sets: &[Override]) -> String {
    let mut g = format!("ccreplay sim {name}");
    for o in sets {
        let plain = o
            .text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.=,:/+@%".contains(&b));
        if plain {
            g.push_str(&format!(" --set {}", o.text));
        } else {
            g.push_str(&format!(" --set '{}'", o.text.replace('\'', r"'\''")));
        }
    }
    g
}

/// `manifest` (a manifest `ccreplay sim` wrote for scenario `name`) with `source.generator`
/// naming the overrides too; unchanged without overrides.
pub fn record_in_manifest(manifest: &str, name: &str, sets: &[Override]) -> String {
    if sets.is_empty() {
        return manifest.to_string();
    }
    let plain = toml::Value::String(format!("ccreplay sim {name}"));
    let new = format!("generator = {}", toml::Value::String(generator(name, sets)));
    let mut in_source = false;
    let mut out = String::with_capacity(manifest.len() + new.len());
    for line in manifest.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        if body.starts_with('[') {
            in_source = body == "[source]";
        }
        // Only the line that holds exactly the plain generator is replaced.
        let is_generator = in_source
            && body.starts_with("generator")
            && toml::from_str::<toml::Table>(body)
                .ok()
                .and_then(|t| t.get("generator").cloned())
                == Some(plain.clone());
        if is_generator {
            out.push_str(&new);
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// `metrics.json`'s text: the metrics, then, when there were overrides, `"overrides"`: the
/// `KEY=VALUE`s as given, in order.
pub fn metrics_json(
    m: &ccreplay_reference_cc::net::Metrics,
    sets: &[Override],
) -> Result<String, serde_json::Error> {
    let mut text = Vec::new();
    write_metrics_json(&mut text, m, sets)?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// [`metrics_json`] written to `w` as it is made (the text of a long run's series is several
/// times their size in memory).
pub fn write_metrics_json(
    w: &mut impl std::io::Write,
    m: &ccreplay_reference_cc::net::Metrics,
    sets: &[Override],
) -> Result<(), serde_json::Error> {
    #[derive(serde::Serialize)]
    struct WithOverrides<'a> {
        #[serde(flatten)]
        metrics: &'a ccreplay_reference_cc::net::Metrics,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        overrides: Vec<&'a str>,
    }
    json_format::to_writer(
        &mut *w,
        &WithOverrides {
            metrics: m,
            overrides: sets.iter().map(|o| o.text.as_str()).collect(),
        },
    )?;
    w.write_all(b"\n").map_err(serde_json::Error::io)
}
