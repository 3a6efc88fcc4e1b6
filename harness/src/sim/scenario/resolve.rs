//! A scenario file read, checked and resolved: the network's configuration (`to_config`) and
//! the models' parameters (`model_params`).

use std::collections::HashMap;
use std::path::Path;

use ccreplay_reference_cc::dcqcn::cp::RedParams;
use ccreplay_reference_cc::dcqcn::{NicParams, NpParams, RpParams};
use ccreplay_reference_cc::net::{
    Cc, DataEcn, FlowSpec, LinkEvent, NetConfig, NodeId, NodeKind, PfcConfig, SwitchClock,
    SwitchConfig, SwitchDeviceConfig, SwitchTap,
};
use ccreplay_reference_cc::ns3::{DcqcnNs3Params, HpccNs3Params};
use ccreplay_reference_cc::rcc::{ReceiverParams, SenderParams};
use ccreplay_reference_cc::{fncc, hpcc};

use super::{FlowEntry, FlowRow, Override, Scenario, TapSpec};
use crate::sim::SimError;

/// The text of a scenario error.
fn message(e: SimError) -> String {
    match e {
        SimError::Scenario(m) => m,
        e => e.to_string(),
    }
}

/// The model parameters a scenario resolves to (before the network values are filled in).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelParams {
    /// What runs in the loop.
    pub cc: Cc,
    /// DCQCN: the `dcqcn-nic` parameters its manifests name.
    pub nic: Option<NicParams>,
}

fn table<T: serde::de::DeserializeOwned + Default>(
    params: &toml::Table,
    key: Option<&str>,
) -> Result<T, SimError> {
    let t = match key {
        Some(k) => match params.get(k) {
            Some(toml::Value::Table(t)) => t.clone(),
            Some(_) => return Err(SimError::Scenario(format!("params.{k} must be a table"))),
            None => return Ok(T::default()),
        },
        None => params.clone(),
    };
    t.try_into()
        .map_err(|e: toml::de::Error| SimError::Scenario(format!("params: {}", e.message())))
}

impl Scenario {
    /// Parse a scenario file's text.
    pub fn parse(text: &str) -> Result<Self, SimError> {
        let s: Scenario = toml::from_str(text).map_err(|e| SimError::Scenario(e.to_string()))?;
        s.check_stems()?;
        Ok(s)
    }

    fn check_stems(&self) -> Result<(), SimError> {
        let ok = |stem: &str| {
            !stem.is_empty()
                && stem
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        if let Some(t) = self.taps.iter().find(|t| !ok(&t.stem)) {
            return Err(SimError::Scenario(format!(
                "tap stem `{}`: use letters, digits, `_` and `-` only",
                t.stem
            )));
        }
        self.taps.iter().try_for_each(TapSpec::check)?;
        for (i, t) in self.switch_taps.iter().enumerate() {
            let e = |m: String| Err(SimError::Scenario(format!("switch tap {}: {m}", t.stem)));
            if !ok(&t.stem) {
                return e("use letters, digits, `_` and `-` only in a stem".into());
            }
            if t.drop_ppm > 1_000_000 {
                return e(format!(
                    "drop_ppm = {}: must be at most 1_000_000",
                    t.drop_ppm
                ));
            }
            let clash = self.taps.iter().any(|h| h.stem == t.stem)
                || self.switch_taps[..i].iter().any(|o| o.stem == t.stem);
            if clash {
                return e("another tap has this stem (its files would be overwritten)".into());
            }
        }
        Ok(())
    }

    /// The engine's switch device, checked against the model and `[switch]`.
    pub fn switch_device_config(&self, cc: &Cc) -> Result<SwitchDeviceConfig, SimError> {
        // dcqcn scenarios always have RED (the paper's ramp when `[switch.red]` is absent).
        let red = self.switch.red.is_some() || cc.is_dcqcn();
        self.switch_device
            .to_config(cc, red, self.switch.pfc.is_some())
    }

    /// Read and parse a scenario file.
    pub fn load(path: &Path) -> Result<Self, SimError> {
        Self::load_with(path, &[])
    }

    /// Append the rows of `flows_file` (relative to `dir`, the scenario file's folder) to
    /// `flows`; [`Scenario::load`] does it. A scenario parsed from text has none read, and
    /// [`Scenario::to_config`] refuses it while `flows_file` is unread.
    pub fn read_flows_file(&mut self, dir: &Path) -> Result<(), SimError> {
        let Some(name) = self.flows_file.take() else {
            return Ok(());
        };
        let path = dir.join(&name);
        let file = std::fs::File::open(&path).map_err(|source| SimError::Io {
            path: path.clone(),
            source,
        })?;
        let bad = |m: String| SimError::Scenario(format!("flows_file {}: {m}", path.display()));
        let mut rows = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(std::io::BufReader::new(file));
        let headers = rows.headers().map_err(|e| bad(e.to_string()))?.clone();
        for want in ["src", "dst", "size_bytes", "start_ns"] {
            if !headers.iter().any(|h| h == want) {
                return Err(bad(format!(
                    "the header has no `{want}` (src,dst,size_bytes,start_ns[,first_psn])"
                )));
            }
        }
        for row in rows.deserialize::<FlowRow>() {
            let r = row.map_err(|e| {
                let line = e.position().map_or(0, csv::Position::line);
                let why = match e.kind() {
                    csv::ErrorKind::Deserialize { err, .. } => err.to_string(),
                    _ => e.to_string(),
                };
                bad(format!("line {line}: {why}"))
            })?;
            self.flows.push(FlowEntry {
                src: r.src,
                dst: r.dst,
                size_bytes: r.size_bytes,
                start_ns: r.start_ns,
                first_psn: r.first_psn,
            });
        }
        Ok(())
    }

    /// Parse a scenario file's text with `sets` applied to it first. An override that makes
    /// the scenario wrong (an unknown key, a value of the wrong type) is named in the error.
    pub fn parse_with(text: &str, sets: &[Override]) -> Result<Self, SimError> {
        if sets.is_empty() {
            return Self::parse(text);
        }
        let base: toml::Table =
            toml::from_str(text).map_err(|e| SimError::Scenario(e.to_string()))?;
        let with = |only: Option<&Override>| -> Result<Scenario, SimError> {
            let mut t = base.clone();
            for o in only.map_or(sets, std::slice::from_ref) {
                o.apply(&mut t)?;
            }
            Self::checked(t)
        };
        let all = match with(None) {
            Ok(s) => return Ok(s),
            Err(e) => message(e),
        };
        // Blame the first override that is wrong by itself (not just the file's own error).
        let file_err = Self::checked(base.clone()).err().map(message);
        for o in sets {
            if let Err(e) = with(Some(o)) {
                let m = message(e);
                if m.starts_with("--set ") {
                    return Err(SimError::Scenario(m));
                }
                if file_err.as_ref() != Some(&m) {
                    return Err(SimError::Scenario(format!("--set {}: {m}", o.text)));
                }
            }
        }
        if file_err.is_some() {
            // The file is wrong without the overrides: the error as without them.
            let s = Self::parse(text)?;
            let cc = s.model_params()?.cc;
            s.device.to_config(&cc)?;
            s.switch_device_config(&cc)?;
        }
        let given: Vec<&str> = sets.iter().map(|o| o.text.as_str()).collect();
        Err(SimError::Scenario(format!(
            "with --set {}: {all}",
            given.join(" ")
        )))
    }

    /// A scenario from its table: deserialised, tap stems and `[params]` checked.
    fn checked(t: toml::Table) -> Result<Self, SimError> {
        let s: Scenario = t
            .try_into()
            .map_err(|e: toml::de::Error| SimError::Scenario(e.message().trim().to_string()))?;
        s.check_stems()?;
        let mp = s.model_params()?;
        s.device.to_config(&mp.cc)?;
        s.switch_device_config(&mp.cc)?;
        Ok(s)
    }

    /// Read a scenario file and apply `sets` to it ([`Scenario::parse_with`]).
    pub fn load_with(path: &Path, sets: &[Override]) -> Result<Self, SimError> {
        let text = std::fs::read_to_string(path).map_err(|source| SimError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut s = Self::parse_with(&text, sets).map_err(|e| match e {
            SimError::Scenario(m) => SimError::Scenario(format!("{}: {m}", path.display())),
            e => e,
        })?;
        s.read_flows_file(path.parent().unwrap_or(Path::new(".")))?;
        Ok(s)
    }

    /// The model parameters of `[params]`.
    pub fn model_params(&self) -> Result<ModelParams, SimError> {
        let p = &self.params;
        let check_keys = |allowed: &[&str]| {
            if let Some(k) = p.keys().find(|k| !allowed.contains(&k.as_str())) {
                return Err(SimError::Scenario(format!(
                    "params.{k}: a {} scenario has tables {}",
                    self.model,
                    allowed.join(", ")
                )));
            }
            Ok(())
        };
        Ok(match self.model.as_str() {
            "dcqcn" => {
                check_keys(&["rp", "np", "nic"])?;
                ModelParams {
                    cc: Cc::Dcqcn {
                        rp: table::<RpParams>(p, Some("rp"))?,
                        np: table::<NpParams>(p, Some("np"))?,
                    },
                    nic: Some(table::<NicParams>(p, Some("nic"))?),
                }
            }
            "hpcc" => ModelParams {
                cc: Cc::Hpcc(table::<hpcc::Params>(p, None)?),
                nic: None,
            },
            "fncc" => ModelParams {
                cc: Cc::Fncc(table::<fncc::Params>(p, None)?),
                nic: None,
            },
            "rcc" => {
                check_keys(&["sender", "receiver"])?;
                ModelParams {
                    cc: Cc::Rcc {
                        sender: table::<SenderParams>(p, Some("sender"))?,
                        receiver: table::<ReceiverParams>(p, Some("receiver"))?,
                    },
                    nic: None,
                }
            }
            // The ns-3 simulator's variants (docs/models/ns3.md), keys as its config names them.
            "hpcc-ns3" => ModelParams {
                cc: Cc::HpccNs3(table::<HpccNs3Params>(p, None)?),
                nic: None,
            },
            "dcqcn-ns3" => {
                check_keys(&["rp", "np"])?;
                ModelParams {
                    cc: Cc::DcqcnNs3 {
                        rp: table::<DcqcnNs3Params>(p, Some("rp"))?,
                        np: table::<NpParams>(p, Some("np"))?,
                    },
                    nic: None,
                }
            }
            m => {
                return Err(SimError::Scenario(format!(
                    "model `{m}`: use dcqcn, hpcc, fncc, rcc, hpcc-ns3 or dcqcn-ns3"
                )));
            }
        })
    }

    /// The engine's configuration, with `seed` instead of the file's when given.
    pub fn to_config(&self, seed: Option<u64>) -> Result<(NetConfig, ModelParams), SimError> {
        if let Some(f) = &self.flows_file {
            return Err(SimError::Scenario(format!(
                "flows_file `{f}` is read when the scenario is loaded from its file (the path is relative to it)"
            )));
        }
        let topology = self.topology.build()?;
        let mp = self.model_params()?;
        // Names to ids once (the first node of a name, as `Topology::node_id`): a search of
        // the nodes per flow end was 1 % of the shipped fat tree's run (1,701 flows, 376
        // nodes) and grows with flows × nodes.
        let mut ids: HashMap<&str, NodeId> = HashMap::with_capacity(topology.nodes.len());
        for (i, n) in topology.nodes.iter().enumerate() {
            ids.entry(n.name.as_str()).or_insert(i as NodeId);
        }
        let node = |name: &str| {
            ids.get(name).copied().ok_or_else(|| {
                SimError::Scenario(format!("no node named `{name}` in the topology"))
            })
        };
        let mut flows = Vec::new();
        for f in &self.flows {
            let srcs: Vec<NodeId> = match f.src.split_once("..") {
                Some((a, b)) => {
                    let (a, b) = (node(a)?, node(b)?);
                    if a > b {
                        return Err(SimError::Scenario(format!(
                            "src range `{}` is empty",
                            f.src
                        )));
                    }
                    (a..=b).collect()
                }
                None => vec![node(&f.src)?],
            };
            let dst = node(&f.dst)?;
            for src in srcs {
                flows.push(FlowSpec {
                    src,
                    dst,
                    size_bytes: f.size_bytes,
                    start_ns: f.start_ns,
                    first_psn: f.first_psn,
                });
            }
        }
        let mut taps = Vec::new();
        for t in &self.taps {
            let n = node(&t.host)?;
            if !taps.contains(&n) {
                taps.push(n);
            }
        }
        let mut switch_taps = Vec::new();
        for t in &self.switch_taps {
            let tap = SwitchTap {
                switch: node(&t.switch)?,
                peer: node(&t.peer)?,
            };
            if !switch_taps.contains(&tap) {
                switch_taps.push(tap);
            }
        }
        let mut link_events = Vec::new();
        for e in &self.link_events {
            let (a, b) = (node(&e.a)?, node(&e.b)?);
            let mut found = topology
                .links
                .iter()
                .enumerate()
                .filter(|(_, l)| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a));
            let (Some((i, _)), None) = (found.next(), found.next()) else {
                return Err(SimError::Scenario(format!(
                    "link_events: {} and {} must be joined by exactly one link",
                    e.a, e.b
                )));
            };
            link_events.push(LinkEvent {
                at_ns: e.at_ns,
                link: i as u32,
                up: e.up,
            });
        }
        let kind_of = |name: &str, want: NodeKind, table: &str| {
            let n = node(name)?;
            if topology.nodes[n as usize].kind != want {
                return Err(SimError::Scenario(format!(
                    "[{table}.{name}]: `{name}` is not a {}",
                    if want == NodeKind::Host {
                        "host"
                    } else {
                        "switch"
                    }
                )));
            }
            Ok(n)
        };
        let mut switch_clocks = Vec::new();
        for (name, o) in &self.switches {
            let switch = kind_of(name, NodeKind::Switch, "switches")?;
            if let Some(tick) = o.int_ts_resolution_ns {
                switch_clocks.push(SwitchClock {
                    switch,
                    int_ts_resolution_ns: tick,
                });
            }
        }
        let mut hosts_without_n = Vec::new();
        let mut host_data_ecn = Vec::new();
        for (name, o) in &self.hosts {
            let host = kind_of(name, NodeKind::Host, "hosts")?;
            if !o.writes_n {
                hosts_without_n.push(host);
            }
            if let Some(e) = &o.ecn {
                let ecn = DataEcn::from_name(e).ok_or_else(|| {
                    SimError::Scenario(format!(
                        "[hosts.{name}] ecn = \"{e}\": unknown codepoint; use one of {}",
                        DataEcn::NAMES.join(", ")
                    ))
                })?;
                host_data_ecn.push((host, ecn));
            }
        }
        let red = match (&self.switch.red, &mp.cc) {
            (Some(r), _) => Some(r.clone()),
            (None, cc) if cc.is_dcqcn() => Some(RedParams::default()),
            (None, _) => None,
        };
        let cfg = NetConfig {
            name: self.name.clone(),
            seed: seed.unwrap_or(self.seed),
            topology,
            cc: mp.cc.clone(),
            switch: SwitchConfig {
                buffer_bytes: self.switch.buffer_bytes,
                red,
                red_by_rate: self.switch.red_by_rate.clone(),
                pfc: self.switch.pfc.map(|p| PfcConfig {
                    xoff_bytes: p.xoff_bytes,
                    xon_bytes: p.xon_bytes,
                    pause_quanta: p.pause_quanta,
                }),
                switch_id_base: self.switch.switch_id_base,
                int_ts_offset_ns: self.switch.int_ts_offset_ns,
                int_ts_step_ns: self.switch.int_ts_step_ns,
                int_tx_bytes_offset: self.switch.int_tx_bytes_offset,
                int_ts_resolution_ns: self.switch.int_ts_resolution_ns,
            },
            flows,
            duration_ns: self.duration_ns,
            mtu_bytes: self.mtu_bytes,
            rto_ns: self.rto_ns,
            base_rtt_ns: self.base_rtt_ns,
            sample_interval_ns: self.sample_interval_ns,
            taps,
            device: self.device.to_config(&mp.cc)?,
            switch_device: self.switch_device_config(&mp.cc)?,
            switch_taps,
            link_events,
            switch_clocks,
            hosts_without_n,
            host_data_ecn,
        };
        Ok((cfg, mp))
    }
}
