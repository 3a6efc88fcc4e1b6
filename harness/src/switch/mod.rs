//! `ccreplay switch`: a switch under test judged from taps on its ports (issue 16,
//! docs/switch.md).
//!
//! Taps see one egress port of the switch: every frame arriving on any port that the switch
//! routes to it (the ingress taps, with the PFC frames the switch sent out of that port) and
//! every frame leaving it (the egress mirror). [`taps::Port`] aligns each data packet seen
//! entering with the same packet leaving and reconstructs the egress queue from arrivals and
//! departures and each ingress port's occupancy; then each capability the algorithms assume of
//! a switch is judged against its configuration: ECN marking against the RED profile
//! ([`marking`], statistical), INT stamping against what the taps show ([`int`]: HPCC's records
//! in data, FNCC's in the ACKs it forwards), PFC against its thresholds ([`pfc`]).
//!
//! Role: the `switch` command. It may use the codecs (to read the captures, and the mirroring
//! switches' clocks), the reference models' RED profile (`dcqcn::cp::marking_probability`),
//! the INT units of wire.md and the manifest's `[mirror]` section; it prints nothing
//! (cli/switch.rs renders [`Verdict`]).

pub mod int;
pub mod marking;
pub mod pfc;
pub mod taps;

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The switch's configuration and its taps: `STEM.switch.toml` (docs/switch.md).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// The switch's name (reports).
    pub switch: String,
    /// The egress port under test, named by its neighbour.
    pub port_peer: String,
    /// The egress port's rate, bps.
    pub port_rate_bps: u64,
    /// Shared buffer, bytes.
    #[serde(default)]
    pub buffer_bytes: Option<u64>,
    /// The egress mirror of the port (default `STEM.out.pcap` beside `STEM.switch.toml`).
    #[serde(default)]
    pub capture: Option<String>,
    /// FNCC: the ACKs the switch forwarded with the port's record (FNCC-3), if tapped.
    #[serde(default)]
    pub acks: Option<String>,
    /// Dialect of the traffic (`roce`, `hpcc`, ...; default: the `dialect` of the egress
    /// mirror's manifest `STEM.toml` beside it, else `roce`).
    #[serde(default)]
    pub dialect: Option<String>,
    /// RED / ECN profile (DCQCN-1).
    #[serde(default)]
    pub red: Option<Red>,
    /// PFC thresholds.
    #[serde(default)]
    pub pfc: Option<Pfc>,
    /// INT stamping (hpcc).
    #[serde(default)]
    pub int: Option<IntSetup>,
    /// Seed of a simulated switch (reports only).
    #[serde(default)]
    pub seed: Option<u64>,
    /// The ingress taps.
    #[serde(default)]
    pub ingress: Vec<Ingress>,
    /// Taps that are a switch's mirror sessions to a collector (docs/wire.md 2.1): the
    /// manifest's `[mirror]` — `session`, and `clock = "switch"` to time the frames by the
    /// ERSPAN III stamps instead of the collector's capture clock.
    #[serde(default)]
    pub mirror: crate::manifest::MirrorSection,
}

/// RED profile: `p = 0` up to Kmin, rising linearly to Pmax at Kmax, 1 above (DCQCN-1).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Red {
    /// Kmin, bytes.
    pub kmin_bytes: u64,
    /// Kmax, bytes.
    pub kmax_bytes: u64,
    /// Pmax.
    pub pmax: f64,
}

/// PFC thresholds of every ingress port.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pfc {
    /// XOFF when the bytes buffered from the port exceed this.
    pub xoff_bytes: u64,
    /// XON when they fall to this or below.
    pub xon_bytes: u64,
    /// Pause time of an XOFF, quanta of 512 bit times.
    pub pause_quanta: u16,
}

/// INT stamping of the switch.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntSetup {
    /// The switch's id, if its records carry one (reports).
    #[serde(default)]
    pub switch_id: Option<u64>,
    /// The switch's position among the simulator's switches (reports).
    #[serde(default)]
    pub switch_index: Option<u64>,
    /// Where the switch's clock started (reports; the judge estimates the offset).
    #[serde(default)]
    pub int_ts_offset_ns: u64,
    /// Clock step of the TS field, ns (reports).
    #[serde(default)]
    pub int_ts_step_ns: u64,
    /// Where the txBytes counter started (reports; the judge follows differences).
    #[serde(default)]
    pub int_tx_bytes_offset: u64,
}

/// One ingress tap: the frames arriving on the port facing `peer` that go to the port under
/// test, and the PFC frames the switch sent out of it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ingress {
    /// The neighbour the port faces.
    pub peer: String,
    /// Its capture, relative to the setup file.
    pub capture: String,
    /// The port's rate, bps (PFC pause time).
    pub rate_bps: u64,
}

/// What stops a verdict.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    /// The setup file.
    #[error("{path}: {message}")]
    Setup {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A capture.
    #[error("{path}: {message}")]
    Capture {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl Setup {
    /// Read `STEM.switch.toml`, filling in the egress capture and the dialect.
    pub fn load(path: &Path) -> Result<Self, SwitchError> {
        let text = std::fs::read_to_string(path).map_err(|e| SwitchError::Setup {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut s: Setup = toml::from_str(&text).map_err(|e| SwitchError::Setup {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let stem = name.strip_suffix(".switch.toml").unwrap_or(name);
        if s.capture.is_none() {
            s.capture = Some(format!("{stem}.out.pcap"));
        }
        if s.dialect.is_none() {
            let manifest = path.with_file_name(format!("{stem}.toml"));
            s.dialect = std::fs::read_to_string(manifest)
                .ok()
                .and_then(|t| t.parse::<toml::Table>().ok())
                .and_then(|t| t.get("dialect").and_then(|d| d.as_str()).map(String::from));
        }
        Ok(s)
    }

    /// The egress mirror's file name.
    pub fn egress_capture(&self) -> &str {
        self.capture.as_deref().unwrap_or("")
    }

    /// The traffic's dialect name.
    pub fn dialect_name(&self) -> &str {
        self.dialect.as_deref().unwrap_or("roce")
    }
}

/// How strict the verdict is.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Significance level of the marking test (the whole test, split over its bins).
    pub alpha: f64,
    /// Queue-length error of the reconstruction the deterministic checks allow, bytes
    /// (timestamps that tie order arrivals and departures arbitrarily: one frame).
    pub guard_bytes: u64,
    /// Timestamp error the INT and PFC checks allow, ns.
    pub timing_ns: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 1e-3,
            guard_bytes: 2_200,
            timing_ns: 1_000,
        }
    }
}

/// One finding of a check.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// Which check (`marking`, `int.txBytes`, `pfc.xoff`, ...).
    pub check: &'static str,
    /// What was seen, one sentence with the numbers.
    pub message: String,
    /// When (capture time, ns), if one moment.
    pub t_ns: Option<u64>,
}

/// The verdict on the switch.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// The setup.
    pub switch: String,
    /// The port under test.
    pub port: String,
    /// What the taps held and how they aligned.
    pub taps: taps::Summary,
    /// Marking, if the setup has a RED profile.
    pub marking: Option<marking::Report>,
    /// INT stamping, if the traffic carries INT.
    pub int: Option<int::Report>,
    /// FNCC: the records written into ACKs, if the ACKs were tapped.
    pub int_ack: Option<int::Report>,
    /// PFC, if the setup has thresholds.
    pub pfc: Option<pfc::Report>,
    /// Everything that failed, in check order.
    pub failures: Vec<Failure>,
    /// Reasons the captures hold too little for a verdict.
    pub insufficient: Vec<String>,
    /// Checks the configuration asks for that the taps cannot support (an egress mirror
    /// alone: marking and PFC need the arrivals).
    pub not_judged: Vec<String>,
}

impl Verdict {
    /// True when every check passed and there was something to check.
    pub fn ok(&self) -> bool {
        self.failures.is_empty() && self.insufficient.is_empty()
    }
}

/// Judge the switch of `setup_path`.
pub fn judge(setup_path: &Path, opts: &Options) -> Result<Verdict, SwitchError> {
    let setup = Setup::load(setup_path)?;
    let dir = setup_path.parent().unwrap_or(Path::new("."));
    let port = taps::Port::read(&setup, dir)?;
    let mut failures = Vec::new();
    let mut insufficient = Vec::new();
    let mut not_judged = Vec::new();
    let egress_only = port.egress_only.is_some();
    if egress_only {
        for (what, asked) in [
            (
                "ECN marking (DCQCN-1) needs the queue each packet found: ingress taps",
                setup.red.is_some(),
            ),
            (
                "PFC needs each ingress port's occupancy: ingress taps",
                setup.pfc.is_some(),
            ),
            ("INT nHop and qLen need the arrivals: ingress taps", true),
        ] {
            if asked {
                not_judged.push(what.to_string());
            }
        }
    } else if port.summary.aligned == 0 {
        insufficient.push(format!(
            "no data packet was seen both entering ({} ingress taps) and leaving the port: \
             nothing to judge",
            setup.ingress.len()
        ));
    }
    let marking = setup.red.filter(|_| !egress_only).map(|red| {
        let r = marking::judge(&port, &red, opts);
        failures.extend(r.failures.iter().cloned());
        r
    });
    let int = int::judge(&port, &setup, opts);
    if let Some(r) = &int {
        failures.extend(r.failures.iter().cloned());
    }
    let int_ack = int::judge_acks(&port, &setup, opts);
    if let Some(r) = &int_ack {
        failures.extend(r.failures.iter().cloned());
    }
    let pfc = setup.pfc.filter(|_| !egress_only).map(|cfg| {
        let r = pfc::judge(&port, &setup, &cfg, opts);
        failures.extend(r.failures.iter().cloned());
        r
    });
    if marking.is_none() && int.is_none() && int_ack.is_none() && pfc.is_none() && egress_only {
        insufficient.push(
            "an egress mirror alone, and its packets carry no INT: marking and PFC need the \
             ingress taps"
                .to_string(),
        );
    } else if marking.is_none() && int.is_none() && int_ack.is_none() && pfc.is_none() {
        insufficient.push(
            "the setup names no RED profile, no PFC thresholds and the traffic carries no INT: \
             nothing to judge"
                .to_string(),
        );
    }
    Ok(Verdict {
        switch: setup.switch.clone(),
        port: format!("{}:{}", setup.switch, setup.port_peer),
        taps: port.summary.clone(),
        marking,
        int,
        int_ack,
        pfc,
        failures,
        insufficient,
        not_judged,
    })
}
