//! The reference models by name, built from a TOML parameter table (C-7: unknown or invalid
//! parameters are rejected before any replay starts, with the parameter's name).

use ccreplay_reference_cc::{Model, ParamError, dcqcn, fncc, hpcc, ns3, rcc};
use serde::de::DeserializeOwned;

/// Every model name `replay`, `diff`, `check` and manifests accept, with what it is.
pub const MODELS: &[(&str, &str)] = &[
    (
        "dcqcn",
        "DCQCN reaction point, paper profile (DCQCN-3): sender rate from CNPs",
    ),
    (
        "dcqcn-nic",
        "DCQCN reaction point, NIC-firmware profile (DCQCN-4)",
    ),
    (
        "dcqcn-ns3",
        "DCQCN reaction point as the HPCC authors' ns-3 simulator computes it (Mellanox version)",
    ),
    (
        "dcqcn-np",
        "DCQCN notification point (DCQCN-2): receiver CNP generation",
    ),
    (
        "dcqcn-cp",
        "DCQCN congestion point (DCQCN-1): RED/ECN marking at a switch port",
    ),
    ("hpcc", "HPCC sender, Algorithm 1 (HPCC-1..8)"),
    (
        "hpcc-ns3",
        "HPCC sender as the HPCC authors' ns-3 simulator computes it (rate-based, fast react)",
    ),
    (
        "fncc",
        "FNCC sender: HPCC on ACK-carried INT + last-hop speedup (FNCC-1)",
    ),
    ("fncc-receiver", "FNCC receiver flow count N (FNCC-2)"),
    (
        "rcc-receiver",
        "RCC receiver, Algorithm 1 (RCC-1..5): the window written into ACKs",
    ),
    (
        "rcc-sender",
        "RCC sender applying the received window (RCC-1)",
    ),
];

/// What a model's decisions carry: the output fields it sets and the state it names (C-6).
/// `diff --tol` and `--state` refuse any other name.
#[derive(Clone, Debug)]
pub struct Fields {
    /// Output fields (`rate_bps`, `window_bytes`, `send_cnp`, `ack_n`, `ack_cwnd`,
    /// `ack_flags`, `mark_ce`).
    pub outputs: &'static [&'static str],
    /// State names, in the model's order (every profile's, for a model with several).
    pub state: Vec<&'static str>,
}

impl Fields {
    /// Every name `--tol` accepts: the outputs and `state.NAME` for each state name.
    pub fn tolerable(&self) -> Vec<String> {
        self.outputs
            .iter()
            .map(|s| s.to_string())
            .chain(self.state.iter().map(|s| format!("state.{s}")))
            .collect()
    }
}

/// The fields of a registered model (None: no model of that name).
pub fn fields(name: &str) -> Option<Fields> {
    const RATE: &[&str] = &["rate_bps"];
    const SENDER: &[&str] = &["rate_bps", "window_bytes"];
    let (outputs, state): (&'static [&'static str], Vec<&'static str>) = match name {
        "dcqcn" => (RATE, dcqcn::rp::Rp::STATE_NAMES.to_vec()),
        "dcqcn-nic" => (RATE, dcqcn::nic::RpNic::STATE_NAMES.to_vec()),
        "dcqcn-ns3" => (RATE, ns3::dcqcn::STATE_NAMES.to_vec()),
        "dcqcn-np" => (&["send_cnp"], dcqcn::np::Np::STATE_NAMES.to_vec()),
        "dcqcn-cp" => (&["mark_ce"], dcqcn::port::CP_STATE_NAMES.to_vec()),
        "hpcc" => (SENDER, hpcc::STATE_NAMES.to_vec()),
        "hpcc-ns3" => {
            let mut s = ns3::hpcc::STATE_NAMES_SINGLE.to_vec();
            for n in ns3::hpcc::STATE_NAMES_MULTI {
                if !s.contains(n) {
                    s.push(n);
                }
            }
            (SENDER, s)
        }
        "fncc" => (SENDER, fncc::STATE_NAMES.to_vec()),
        "fncc-receiver" => (&["ack_n"], fncc::RECEIVER_STATE_NAMES.to_vec()),
        "rcc-receiver" => (
            &["ack_n", "ack_cwnd", "ack_flags"],
            rcc::Receiver::STATE_NAMES.to_vec(),
        ),
        "rcc-sender" => (SENDER, rcc::Sender::STATE_NAMES.to_vec()),
        _ => return None,
    };
    Some(Fields { outputs, state })
}

/// Why a model could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// No model of that name.
    #[error("unknown model `{name}` (known: {known})", known = known_models())]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// The parameter table does not deserialize (unknown key, wrong type).
    #[error("parameters of `{model}`: {message}")]
    Params {
        /// Model.
        model: String,
        /// serde's message, naming the key.
        message: String,
    },
    /// A parameter value is rejected by the model.
    #[error("parameters of `{model}`: {source}")]
    Invalid {
        /// Model.
        model: String,
        /// Which parameter and why.
        source: ParamError,
    },
}

/// The model names, comma-separated, for messages.
pub fn known_models() -> String {
    MODELS.iter().map(|m| m.0).collect::<Vec<_>>().join(", ")
}

fn params<P: DeserializeOwned>(model: &str, table: &toml::Table) -> Result<P, ModelError> {
    P::deserialize(toml::Value::Table(table.clone())).map_err(|e| ModelError::Params {
        model: model.into(),
        message: e.to_string(),
    })
}

/// The parameters `build` gives model `name` from an empty table — the model's defaults —
/// as a TOML table (keys whose default is "none" absent). `None` for an unknown name.
pub fn default_params(name: &str) -> Option<toml::Table> {
    fn of<P: DeserializeOwned + serde::Serialize>(name: &str) -> Option<toml::Table> {
        let p: P = params(name, &toml::Table::new()).ok()?;
        toml::Table::try_from(p).ok()
    }
    match name {
        "dcqcn" => of::<dcqcn::RpParams>(name),
        "dcqcn-nic" => of::<dcqcn::NicParams>(name),
        "dcqcn-ns3" => of::<ns3::DcqcnNs3Params>(name),
        "dcqcn-np" => of::<dcqcn::NpParams>(name),
        "dcqcn-cp" => of::<dcqcn::CpParams>(name),
        "hpcc" => of::<hpcc::Params>(name),
        "hpcc-ns3" => of::<ns3::HpccNs3Params>(name),
        "fncc" | "fncc-receiver" => of::<fncc::Params>(name),
        "rcc-receiver" => of::<rcc::ReceiverParams>(name),
        "rcc-sender" => of::<rcc::SenderParams>(name),
        _ => None,
    }
}

/// A reference model by name, with parameters from a TOML table (missing keys take the paper
/// defaults; `line_rate_bps`, `base_rtt_ns` and `mtu_bytes` come from the manifest unless set).
pub fn build(name: &str, table: &toml::Table) -> Result<Box<dyn Model + Send>, ModelError> {
    let invalid = |source| ModelError::Invalid {
        model: name.into(),
        source,
    };
    Ok(match name {
        "dcqcn" => Box::new(dcqcn::Rp::new(params(name, table)?).map_err(invalid)?),
        "dcqcn-nic" => Box::new(dcqcn::RpNic::new(params(name, table)?).map_err(invalid)?),
        "dcqcn-ns3" => Box::new(
            ns3::DcqcnNs3::new(&params::<ns3::DcqcnNs3Params>(name, table)?).map_err(invalid)?,
        ),
        "dcqcn-np" => Box::new(dcqcn::Np::new(params(name, table)?).map_err(invalid)?),
        "dcqcn-cp" => Box::new(dcqcn::CpPort::new(params(name, table)?).map_err(invalid)?),
        "hpcc" => {
            Box::new(hpcc::Hpcc::new(&params::<hpcc::Params>(name, table)?).map_err(invalid)?)
        }
        "hpcc-ns3" => Box::new(
            ns3::HpccNs3::new(&params::<ns3::HpccNs3Params>(name, table)?).map_err(invalid)?,
        ),
        "fncc" => {
            Box::new(fncc::Fncc::new(&params::<fncc::Params>(name, table)?).map_err(invalid)?)
        }
        "fncc-receiver" => {
            Box::new(fncc::Receiver::new(&params::<fncc::Params>(name, table)?).map_err(invalid)?)
        }
        "rcc-receiver" => Box::new(rcc::Receiver::new(params(name, table)?).map_err(invalid)?),
        "rcc-sender" => Box::new(rcc::Sender::new(params(name, table)?).map_err(invalid)?),
        other => return Err(ModelError::Unknown { name: other.into() }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_model_builds_with_defaults() {
        for (name, _) in MODELS {
            let m = build(name, &toml::Table::new()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(m.name(), *name);
        }
    }

    /// What `init` writes as a model's defaults reads back, as text, to a model; HPCC's are
    /// the ones docs/models/hpcc.md gives (η 0.95, N 100, maxStage 5).
    #[test]
    fn default_params_read_back() {
        for (name, _) in MODELS {
            let t = default_params(name).unwrap_or_else(|| panic!("{name}"));
            let back: toml::Table = toml::from_str(&toml::to_string(&t).unwrap()).unwrap();
            assert_eq!(back, t, "{name}");
            let m = build(name, &back).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(m.name(), *name);
        }
        let t = default_params("hpcc").unwrap();
        assert_eq!(t["eta"].as_float(), Some(0.95));
        assert_eq!(t["expected_flows"].as_integer(), Some(100));
        assert_eq!(t["max_stage"].as_integer(), Some(5));
        assert!(default_params("tcp").is_none());
    }

    /// The ns-3 profiles take the simulator's config keys as `ccreplay import ns3` writes them
    /// (docs/models/ns3.md): upper case, flags as 0/1, µs intervals as integers or floats.
    #[test]
    fn ns3_profiles_take_config_keys() {
        let t: toml::Table = toml::from_str(
            "MULTI_RATE = 0\nMI_THRESH = 5\nRATE_AI = 50000000\nVAR_WIN = true\n\
             line_rate_bps = 25000000000\nbase_rtt_ns = 8000",
        )
        .unwrap();
        assert_eq!(build("hpcc-ns3", &t).unwrap().name(), "hpcc-ns3");
        let t: toml::Table =
            toml::from_str("ALPHA_RESUME_INTERVAL = 1\nRP_TIMER = 0.5\nCLAMP_TARGET_RATE = 1")
                .unwrap();
        assert_eq!(build("dcqcn-ns3", &t).unwrap().name(), "dcqcn-ns3");
        let t: toml::Table = toml::from_str("U_TARGT = 0.9").unwrap();
        let e = build("hpcc-ns3", &t).err().unwrap().to_string();
        assert!(e.contains("U_TARGT"), "{e}");
        let t: toml::Table = toml::from_str("MULTI_RATE = 2").unwrap();
        let e = build("hpcc-ns3", &t).err().unwrap().to_string();
        assert!(e.contains("flag must be 0, 1"), "{e}");
        let t: toml::Table = toml::from_str("RATE_DECREASE_INTERVAL = 0").unwrap();
        let e = build("dcqcn-ns3", &t).err().unwrap().to_string();
        assert!(e.contains("RATE_DECREASE_INTERVAL"), "{e}");
    }

    #[test]
    fn bad_parameters_name_themselves() {
        let t: toml::Table = toml::from_str("etta = 0.9").unwrap();
        let e = build("hpcc", &t).err().unwrap().to_string();
        assert!(e.contains("etta"), "{e}");
        let t: toml::Table = toml::from_str("eta = 1.5").unwrap();
        let e = build("hpcc", &t).err().unwrap().to_string();
        assert!(e.contains("eta"), "{e}");
        assert!(
            build("tcp", &toml::Table::new())
                .err()
                .unwrap()
                .to_string()
                .contains("unknown model `tcp`")
        );
    }
}
