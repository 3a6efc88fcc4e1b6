//! Trace manifests (harness.md 1): a TOML file beside each capture, same stem, saying how to
//! read the capture and what to replay. Unknown keys are an error. Documented in
//! docs/manifest.md.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ccreplay_codecs::shim::{IntConfig, IntLayout};
use ccreplay_codecs::{DecodeConfig, Dialect};
use serde::{Deserialize, Serialize};

/// A parsed manifest.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Capture file name, relative to the manifest (default: the manifest's stem with
    /// `.pcap`, else `.pcapng`).
    #[serde(default)]
    pub capture: Option<String>,
    /// Events file (JSON Lines, docs/protocol.md) replayed instead of a capture, relative to
    /// the manifest; excludes `capture`.
    #[serde(default)]
    pub events: Option<String>,
    /// `roce`, `hpcc`, `fncc` or `rcc` (wire.md 5).
    #[serde(with = "dialect_name")]
    pub dialect: Dialect,
    /// Where the packets were seen.
    pub capture_point: CapturePoint,
    /// Link rate, base RTT, MTU.
    pub network: Network,
    /// INT stack layout (hpcc, fncc).
    #[serde(default)]
    pub int: IntSection,
    /// The models to replay, each with its parameters.
    pub models: Vec<ModelSpec>,
    /// Explicit flow pairing; when absent, flows are paired by IP pair, then PSN continuity.
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    /// Where the trace came from (optional: a captured trace by default).
    #[serde(default)]
    pub source: Source,
    /// What a correct NIC may do that the reference's decisions do not show, when the
    /// capture's sender is judged by its behaviour (`--dut observed`, docs/observed.md).
    #[serde(default, skip_serializing_if = "ObservedSection::is_empty")]
    pub observed: ObservedSection,
    /// `[mirror]`: which copies of a capture a switch mirrored to a collector are the capture
    /// point's (docs/wire.md 2.1).
    #[serde(default, skip_serializing_if = "MirrorSection::is_empty")]
    pub mirror: MirrorSection,
}

/// `[mirror]`: the ERSPAN session whose copies are replayed, when the capture holds the same
/// traffic mirrored by several (each packet seen twice is no event twice).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MirrorSection {
    /// ERSPAN session ID (0..1023): packets of other sessions, and mirrored packets that carry
    /// none (ERSPAN I, gretap), are skipped as `other_mirror_session`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u16>,
    /// Whose clock times the events: the capture's (the collector's, the default) or the
    /// mirroring switch's ERSPAN III timestamps (`"switch"`).
    #[serde(default, skip_serializing_if = "MirrorClock::is_capture")]
    pub clock: MirrorClock,
    /// A Lumina testbed's dump (docs/wire.md 2.3): the UDP destination port its switch gives
    /// the copies. Each copy is read as the packet it copies, with the switch's timestamp
    /// (`clock = "switch"`), sequence number and injected event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lumina_port: Option<u16>,
}

impl MirrorSection {
    /// True when the manifest has no `[mirror]` keys.
    pub fn is_empty(&self) -> bool {
        self.session.is_none() && self.clock.is_capture() && self.lumina_port.is_none()
    }
}

/// `[mirror] clock`: the events' times from the capture (`"capture"`) or from the switch that
/// mirrored each packet (`"switch"`: its ERSPAN III timestamp, docs/wire.md 2.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MirrorClock {
    /// The capture's record times.
    #[default]
    Capture,
    /// The mirroring switch's timestamps.
    Switch,
}

impl MirrorClock {
    /// The default.
    pub fn is_capture(&self) -> bool {
        *self == MirrorClock::Capture
    }
}

/// `[observed]`: the allowances of the observed-behaviour verdict, each a number with its unit
/// as text (`"5us"`, `"8KB"`, `"2%"`); absent keys take the defaults of docs/observed.md.
// Unknown keys are refused by `observe::Allowances::set`, which knows the names.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct ObservedSection {
    /// `KEY = VALUE` pairs (text with a unit, or a bare number in the key's base unit).
    #[serde(flatten)]
    pub values: std::collections::BTreeMap<String, toml::Value>,
}

impl ObservedSection {
    /// True when the manifest has no `[observed]` keys.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// Where the packets were captured (harness.md 1: direction follows from it).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum CapturePoint {
    /// At a sending host's NIC: its data packets out, ACKs / NAKs / CNPs in.
    Sender {
        /// The host's IP address.
        host: IpAddr,
    },
    /// At a receiving host's NIC: data packets in.
    Receiver {
        /// The host's IP address.
        host: IpAddr,
    },
    /// At a switch port's egress mirror: data packets leaving the port (events `dequeue`).
    SwitchPort {
        /// The switch and port, for reports (e.g. `tor1:17`).
        port: String,
    },
}

impl CapturePoint {
    /// The host whose NIC saw the packets (`None` at a switch port).
    pub fn host(&self) -> Option<IpAddr> {
        match self {
            CapturePoint::Sender { host } | CapturePoint::Receiver { host } => Some(*host),
            CapturePoint::SwitchPort { .. } => None,
        }
    }

    /// `sender`, `receiver` or `switch_port`.
    pub fn kind(&self) -> &'static str {
        match self {
            CapturePoint::Sender { .. } => "sender",
            CapturePoint::Receiver { .. } => "receiver",
            CapturePoint::SwitchPort { .. } => "switch_port",
        }
    }
}

/// The network the trace ran on.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Host link rate, bps.
    pub link_rate_bps: u64,
    /// Base RTT, ns.
    pub base_rtt_ns: u64,
    /// MTU (IB payload per packet), bytes.
    pub mtu_bytes: u64,
    /// RoCEv2 UDP port (default 4791).
    #[serde(default = "default_udp_port")]
    pub udp_port: u16,
    /// VXLAN's UDP port (default 4789; 0: VXLAN not decoded): RoCEv2 inside is read
    /// (docs/wire.md 2.2).
    #[serde(
        default = "default_vxlan_port",
        skip_serializing_if = "is_default_vxlan_port"
    )]
    pub vxlan_port: u16,
    /// Geneve's UDP port (default 6081; 0: Geneve not decoded).
    #[serde(
        default = "default_geneve_port",
        skip_serializing_if = "is_default_geneve_port"
    )]
    pub geneve_port: u16,
}

impl Default for Network {
    /// No rates or delays (0) and the standard ports: for literals that fill in the rest.
    fn default() -> Self {
        Network {
            link_rate_bps: 0,
            base_rtt_ns: 0,
            mtu_bytes: 0,
            udp_port: default_udp_port(),
            vxlan_port: default_vxlan_port(),
            geneve_port: default_geneve_port(),
        }
    }
}

fn default_udp_port() -> u16 {
    4791
}

fn default_vxlan_port() -> u16 {
    ccreplay_codecs::tunnel::VXLAN_UDP_PORT
}

fn is_default_vxlan_port(p: &u16) -> bool {
    *p == default_vxlan_port()
}

fn default_geneve_port() -> u16 {
    ccreplay_codecs::tunnel::GENEVE_UDP_PORT
}

fn is_default_geneve_port(p: &u16) -> bool {
    *p == default_geneve_port()
}

/// INT configuration.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IntSection {
    /// Records in a padded stack; nHop above it is an error (default 5).
    #[serde(default = "default_max_hops")]
    pub max_hops: u8,
    /// `padded` (default) or `grown`.
    #[serde(default = "default_layout")]
    pub layout: String,
}

fn default_max_hops() -> u8 {
    5
}
fn default_layout() -> String {
    "padded".into()
}

impl Default for IntSection {
    fn default() -> Self {
        IntSection {
            max_hops: 5,
            layout: "padded".into(),
        }
    }
}

/// A model to replay and its parameters (C-7 names; missing ones take the paper defaults,
/// `line_rate_bps`, `base_rtt_ns` and `mtu_bytes` come from `[network]` unless given).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Model name (`hpcc`, `dcqcn`, ...; `ccreplay replay --help` lists them).
    pub name: String,
    /// Parameters.
    #[serde(default)]
    pub params: toml::Table,
}

/// One explicitly paired flow, seen from the capture point's host.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// The capture point's side: its IP.
    pub local_ip: IpAddr,
    /// Its QP (ACKs, NAKs and CNPs to it carry this DestQP).
    pub local_qp: u32,
    /// The peer's IP.
    pub remote_ip: IpAddr,
    /// The peer's QP (data packets to it carry this DestQP).
    pub remote_qp: u32,
}

/// Where a trace came from.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// `captured` (default) or `synthesized`.
    #[serde(default = "default_source_kind")]
    pub kind: String,
    /// Device / capture tool, or generator and scenario (default: empty).
    #[serde(default)]
    pub generator: String,
    /// Seed of a synthesized trace.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Free text.
    #[serde(default)]
    pub notes: Option<String>,
}

fn default_source_kind() -> String {
    "captured".into()
}

impl Default for Source {
    fn default() -> Self {
        Source {
            kind: default_source_kind(),
            generator: String::new(),
            seed: None,
            notes: None,
        }
    }
}

mod dialect_name {
    use ccreplay_codecs::Dialect;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Dialect, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(d.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Dialect, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Why a manifest could not be used (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Not readable.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// OS error.
        source: std::io::Error,
    },
    /// Not valid TOML, an unknown key, a missing key or a wrong value.
    #[error("{path}: {message}")]
    Invalid {
        /// File.
        path: PathBuf,
        /// What is wrong, with the line.
        message: String,
    },
}

impl Manifest {
    /// Parse TOML text; `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ManifestError> {
        let m: Manifest = toml::from_str(text).map_err(|e| ManifestError::Invalid {
            path: path.into(),
            message: e.to_string(),
        })?;
        let invalid = |message: String| ManifestError::Invalid {
            path: path.into(),
            message,
        };
        if m.capture.is_some() && m.events.is_some() {
            return Err(invalid(
                "`capture` and `events` both given: a trace is a capture or an events file".into(),
            ));
        }
        if m.models.is_empty() {
            return Err(invalid(
                "`models` is empty: name at least one model to replay".into(),
            ));
        }
        if !matches!(m.int.layout.as_str(), "padded" | "grown") {
            return Err(invalid(format!(
                "int.layout = `{}`: expected `padded` or `grown`",
                m.int.layout
            )));
        }
        if !(1..=15).contains(&m.int.max_hops) {
            return Err(invalid(format!(
                "int.max_hops = {}: expected 1..15",
                m.int.max_hops
            )));
        }
        if !matches!(m.source.kind.as_str(), "captured" | "synthesized") {
            return Err(invalid(format!(
                "source.kind = `{}`: expected `captured` or `synthesized`",
                m.source.kind
            )));
        }
        if m.mirror.lumina_port == Some(0) {
            return Err(invalid(
                "mirror.lumina_port = 0: the port the Lumina switch sends its copies to (network.udp_port for the files Lumina's dumper writes)".into(),
            ));
        }
        if m.network.link_rate_bps == 0 || m.network.base_rtt_ns == 0 || m.network.mtu_bytes == 0 {
            return Err(invalid(
                "network: link_rate_bps, base_rtt_ns and mtu_bytes must be > 0".into(),
            ));
        }
        Ok(m)
    }

    /// Read and parse a manifest file.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Io {
            path: path.into(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// The capture file this manifest describes (its events file when `events` is set).
    pub fn capture_path(&self, manifest_path: &Path) -> PathBuf {
        let dir = manifest_path.parent().unwrap_or(Path::new("."));
        if let Some(e) = &self.events {
            return dir.join(e);
        }
        match &self.capture {
            Some(c) => dir.join(c),
            None => {
                let pcap = manifest_path.with_extension("pcap");
                if pcap.exists() {
                    pcap
                } else {
                    manifest_path.with_extension("pcapng")
                }
            }
        }
    }

    /// How to decode the capture's packets.
    pub fn decode_config(&self) -> DecodeConfig {
        DecodeConfig {
            dialect: self.dialect,
            int: IntConfig {
                layout: if self.int.layout == "grown" {
                    IntLayout::Grown
                } else {
                    IntLayout::Padded
                },
                max_hops: self.int.max_hops,
            },
            udp_port: self.network.udp_port,
            mirror_session: self.mirror.session,
            vxlan_port: self.network.vxlan_port,
            geneve_port: self.network.geneve_port,
            lumina_port: self.mirror.lumina_port.unwrap_or(0),
        }
    }

    /// A model's parameter table with the network's `line_rate_bps`, `base_rtt_ns` and
    /// `mtu_bytes` filled in where the table does not set them.
    pub fn model_params(&self, spec: &ModelSpec) -> toml::Table {
        let mut t = spec.params.clone();
        let n = &self.network;
        for (k, v) in [
            ("line_rate_bps", n.link_rate_bps),
            ("base_rtt_ns", n.base_rtt_ns),
            ("mtu_bytes", n.mtu_bytes),
        ] {
            t.entry(k)
                .or_insert(toml::Value::Integer(v.min(i64::MAX as u64) as i64));
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
dialect = "hpcc"
[capture_point]
kind = "sender"
host = "10.0.0.1"
[network]
link_rate_bps = 100_000_000_000
base_rtt_ns = 8_000
mtu_bytes = 1000
[[models]]
name = "hpcc"
params = { eta = 0.95 }
[source]
kind = "synthesized"
generator = "test"
seed = 7
"#;

    /// The smallest manifest: docs/manifest.md's required keys, nothing else.
    const SMALLEST: &str = r#"
dialect = "roce"
capture_point = { kind = "sender", host = "10.0.0.1" }
network = { link_rate_bps = 25_000_000_000, base_rtt_ns = 5_000, mtu_bytes = 1024 }
models = [{ name = "dcqcn" }]
"#;

    /// What [`SMALLEST`] leaves out is optional.
    #[test]
    fn source_is_optional_and_means_captured() {
        let text = SMALLEST;
        let m = Manifest::parse(text, Path::new("t.toml")).unwrap();
        assert_eq!(m.source.kind, "captured");
        assert_eq!(m.network.udp_port, 4791);
        assert_eq!((m.int.layout.as_str(), m.int.max_hops), ("padded", 5));
        assert!(m.flows.is_empty());
        // Each required key, removed, is named.
        for (key, gone) in [
            ("dialect", "dialect = \"roce\"\n"),
            (
                "capture_point",
                "capture_point = { kind = \"sender\", host = \"10.0.0.1\" }\n",
            ),
            (
                "network",
                "network = { link_rate_bps = 25_000_000_000, base_rtt_ns = 5_000, mtu_bytes = 1024 }\n",
            ),
            ("models", "models = [{ name = \"dcqcn\" }]\n"),
        ] {
            let e = Manifest::parse(&text.replace(gone, ""), Path::new("t.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(key), "{key}: {e}");
        }
    }

    /// `[mirror]` as docs/manifest.md writes it; a clock it does not know is refused, named.
    #[test]
    fn mirror_takes_a_session_and_a_clock() {
        let base = SMALLEST;
        let m = Manifest::parse(base, Path::new("t.toml")).unwrap();
        assert!(m.mirror.is_empty());
        assert_eq!(m.mirror.clock, MirrorClock::Capture);
        let text = format!("{base}[mirror]\nsession = 5\nclock = \"switch\"\n");
        let m = Manifest::parse(&text, Path::new("t.toml")).unwrap();
        assert_eq!(
            (m.mirror.session, m.mirror.clock),
            (Some(5), MirrorClock::Switch)
        );
        assert!(!m.mirror.is_empty());
        let only_clock = format!("{base}[mirror]\nclock = \"switch\"\n");
        assert!(
            !Manifest::parse(&only_clock, Path::new("t.toml"))
                .unwrap()
                .mirror
                .is_empty()
        );
        let e = Manifest::parse(
            &format!("{base}[mirror]\nclock = \"collector\"\n"),
            Path::new("t.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("collector") && e.contains("switch"), "{e}");
    }

    #[test]
    fn parses_and_fills_network_params() {
        let m = Manifest::parse(GOOD, Path::new("t.toml")).unwrap();
        assert_eq!(m.dialect, Dialect::Hpcc);
        assert_eq!(
            m.capture_point,
            CapturePoint::Sender {
                host: "10.0.0.1".parse().unwrap()
            }
        );
        assert_eq!(m.int, IntSection::default());
        let p = m.model_params(&m.models[0]);
        assert_eq!(p["base_rtt_ns"].as_integer(), Some(8000));
        assert_eq!(p["eta"].as_float(), Some(0.95));
    }

    #[test]
    fn unknown_keys_are_errors_with_their_name() {
        let bad = GOOD.replace("mtu_bytes = 1000", "mtu_bytes = 1000\nmtu = 9000");
        let e = Manifest::parse(&bad, Path::new("t.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `mtu`"), "{e}");
        let bad = GOOD.replace("\"hpcc\"\n[capture_point]", "\"tcp\"\n[capture_point]");
        let e = Manifest::parse(&bad, Path::new("t.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown dialect `tcp`"), "{e}");
        let bad = GOOD.replace("kind = \"sender\"", "kind = \"switch\"");
        assert!(Manifest::parse(&bad, Path::new("t.toml")).is_err());
    }
}
