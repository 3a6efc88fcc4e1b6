//! Test oracle for `inspect -e`: the line picked out of the JSON record `inspect --format
//! json` writes for the packet (docs/inspect.md: "everything else as in the JSON"), parsed
//! with serde_json and formatted with `std::fmt`, none of it shared with the accessors and
//! the buffer that write `-e` lines from the decoded packet.

use super::{Display, FieldOptions, Occurrence, display_of};
use serde_json::Value;

/// One value as tshark shows it: a number per the field's display, a string as it is.
fn scalar(v: &Value, d: Display) -> String {
    match (v, d) {
        (Value::String(s), _) => s.clone(),
        (Value::Number(n), Display::Hex(w)) => format!("0x{:0w$x}", n.as_u64().unwrap()),
        (Value::Number(n), Display::Bytes(len)) => {
            format!("{:0w$x}", n.as_u64().unwrap(), w = 2 * len)
        }
        (Value::Number(n), Display::Plain) => n.to_string(),
        (other, _) => panic!("unexpected value {other}"),
    }
}

/// `vlan.*` and `ieee8021ad.*`: the TPID of their tags (802.1Q, 802.1ad) and the array of
/// every tag's values they take theirs from.
fn tags_of(name: &str) -> Option<(u64, &'static str)> {
    Some(match name {
        "vlan.priority" => (0x8100, "ccreplay.vlan.pcp"),
        "vlan.id" => (0x8100, "ccreplay.vlan.vid"),
        "ieee8021ad.priority" => (0x88a8, "ccreplay.vlan.pcp"),
        "ieee8021ad.id" => (0x88a8, "ccreplay.vlan.vid"),
        _ => return None,
    })
}

/// The `-e` line of one JSON record: each name's value (the last one, should a key repeat),
/// its occurrences chosen (an array holds several, anything else one) and joined, quoted.
pub(super) fn line(names: &[String], o: &FieldOptions, record: &[u8]) -> String {
    let rec: serde_json::Map<String, Value> = serde_json::from_slice(record).unwrap();
    let mut out = String::new();
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            out.push_str(&o.separator);
        }
        let all: Vec<&Value> = match (tags_of(name), rec.get(name)) {
            (Some((tpid, part)), Some(first)) => {
                // One occurrence per tag of that kind (as tshark), from the record's arrays
                // of every tag; the record's own value is the first.
                let items = |k: &str| rec[k].as_array().unwrap().iter();
                let all: Vec<&Value> = items("ccreplay.vlan.tpid")
                    .zip(items(part))
                    .filter(|(t, _)| t.as_u64() == Some(tpid))
                    .map(|(_, v)| v)
                    .collect();
                assert_eq!(all[0], first, "{name}");
                all
            }
            (_, None) => continue,
            (None, Some(Value::Array(items))) => items.iter().collect(),
            (None, Some(one)) => vec![one],
        };
        let chosen: Vec<&Value> = match o.occurrence {
            Occurrence::All => all,
            Occurrence::First => all.first().copied().into_iter().collect(),
            Occurrence::Last => all.last().copied().into_iter().collect(),
            Occurrence::Nth(n) => all.get(n - 1).copied().into_iter().collect(),
        };
        if chosen.is_empty() {
            continue; // no such occurrence: empty, as an absent field
        }
        let d = display_of(name);
        let text: Vec<String> = chosen.iter().map(|v| scalar(v, d)).collect();
        let q = o.quote.map(String::from).unwrap_or_default();
        out.push_str(&q);
        out.push_str(&text.join(&o.aggregator));
        out.push_str(&q);
    }
    out.push('\n');
    out
}
