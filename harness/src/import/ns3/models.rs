//! The models a sender manifest names and their parameters, from the config (CC_MODE).

use super::*;

/// The models of a sender manifest and their parameters: the ns-3 profile (when built into
/// this binary) with the values the simulator used — the config's, else third.cc's default —
/// and the paper profile with the parameters that map one to one.
pub(super) fn sender_models(
    cfg: &Config,
    cc_mode: u64,
    win_bytes: u64,
    warnings: &mut Vec<String>,
) -> Vec<ModelSpec> {
    let mut models = Vec::new();
    let mut t = toml::Table::new();
    let put_u = |t: &mut toml::Table, key: &str, default: Option<u64>| {
        if let Some(v) = cfg.uint(key).or(default) {
            t.insert(key.into(), int_value(v));
        }
    };
    if cc_mode == 3 {
        put_u(&mut t, "MI_THRESH", Some(5));
        put_u(&mut t, "MULTI_RATE", Some(1));
        put_u(&mut t, "FAST_REACT", Some(1));
        put_u(&mut t, "INT_MULTI", Some(1));
        put_u(&mut t, "VAR_WIN", Some(0));
        put_u(&mut t, "HAS_WIN", Some(1));
        put_u(&mut t, "SAMPLE_FEEDBACK", Some(0));
        t.insert(
            "U_TARGET".into(),
            toml::Value::Float(cfg.float("U_TARGET").unwrap_or(0.95)),
        );
        t.insert(
            "MIN_RATE".into(),
            int_value(cfg.rate_bps("MIN_RATE").unwrap_or(100_000_000)),
        );
        match cfg.rate_bps("RATE_AI") {
            Some(r) => {
                t.insert("RATE_AI".into(), int_value(r));
            }
            None => warnings.push(
                "RATE_AI is not in the config (third.cc has no default): the model's default is used"
                    .into(),
            ),
        }
        t.insert("win_bytes".into(), int_value(win_bytes));
        if cfg.uint("HAS_WIN") == Some(0) {
            warnings.push(
                "HAS_WIN 0: hpcc-ns3 rejects a window of 0 (the simulator divides by it); only \
                 the paper profile `hpcc` is named"
                    .into(),
            );
        } else if model_available("hpcc-ns3") {
            models.push(ModelSpec {
                name: "hpcc-ns3".into(),
                params: t,
            });
        } else {
            warnings.push(
                "model hpcc-ns3 is not built into this ccreplay: only `hpcc` is named".into(),
            );
        }
        let mut p = toml::Table::new();
        p.insert(
            "eta".into(),
            toml::Value::Float(cfg.float("U_TARGET").unwrap_or(0.95)),
        );
        p.insert(
            "max_stage".into(),
            int_value(cfg.uint("MI_THRESH").unwrap_or(5)),
        );
        models.push(ModelSpec {
            name: "hpcc".into(),
            params: p,
        });
    } else {
        let mut put_f = |t: &mut toml::Table, key: &str, default: Option<f64>| {
            if let Some(v) = cfg.float(key).or(default) {
                t.insert(key.into(), toml::Value::Float(v));
            } else {
                warnings.push(format!(
                    "{key} is not in the config and third.cc leaves it unset: the model's default is used"
                ));
            }
        };
        put_f(&mut t, "ALPHA_RESUME_INTERVAL", Some(55.0));
        put_f(&mut t, "RATE_DECREASE_INTERVAL", Some(4.0));
        put_f(&mut t, "RP_TIMER", None);
        // third.cc's `ewma_gain = 1 / 16` is integer division: 0.
        put_f(&mut t, "EWMA_GAIN", Some(0.0));
        put_u(&mut t, "FAST_RECOVERY_TIMES", Some(5));
        put_u(&mut t, "CLAMP_TARGET_RATE", Some(0));
        for (key, default) in [
            ("RATE_AI", None),
            ("RATE_HAI", None),
            ("MIN_RATE", Some(100_000_000)),
        ] {
            match cfg.rate_bps(key).or(default) {
                Some(v) => {
                    t.insert(key.into(), int_value(v));
                }
                None => warnings.push(format!(
                    "{key} is not in the config (third.cc has no default): the model's default is used"
                )),
            }
        }
        if model_available("dcqcn-ns3") {
            models.push(ModelSpec {
                name: "dcqcn-ns3".into(),
                params: t,
            });
        } else {
            warnings.push(
                "model dcqcn-ns3 is not built into this ccreplay: only `dcqcn` is named".into(),
            );
        }
        // The paper profile: rates in whole Mbps, F in stages.
        let mut p = toml::Table::new();
        if let Some(f) = cfg.uint("FAST_RECOVERY_TIMES") {
            p.insert("rpg_threshold".into(), int_value(f));
        }
        for (key, name) in [
            ("RATE_AI", "rpg_ai_rate"),
            ("RATE_HAI", "rpg_hai_rate"),
            ("MIN_RATE", "rpg_min_rate"),
        ] {
            if let Some(r) = cfg.rate_bps(key)
                && r % 1_000_000 == 0
            {
                p.insert(name.into(), int_value(r / 1_000_000));
            }
        }
        models.push(ModelSpec {
            name: "dcqcn".into(),
            params: p,
        });
    }
    models
}
