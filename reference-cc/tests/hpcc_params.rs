//! HPCC / FNCC parameters (C-7, HPCC-8): paper defaults, serde with unknown keys rejected,
//! and validation that names the parameter and the reason.

use ccreplay_reference_cc::fncc;
use ccreplay_reference_cc::hpcc::{self, Hpcc, ReservedLineRate};
use rstest::rstest;

/// Defaults: B_NIC 100 Gbps, T 13 µs (seed 000 5.1), η 0.95, maxStage 5, N 100, MTU 1000.
///   W_init = floor(100e9 × 13000 / 8e9) = 162,500 B
///   W_AI = W_init × (1 − η) / N = 162500 × 0.05 / 100 ≈ 81.25 (seed 000 footnote 4: "80 bytes")
///   python3 -c "w=162500*(1-0.95)/100;import struct;print(w,hex(struct.unpack('<Q',struct.pack('<d',w))[0]))"
///   -> 81.25000000000007 0x4054500000000005
#[test]
fn defaults_are_the_papers() {
    let p = hpcc::Params::default();
    assert_eq!(p.line_rate_bps, 100_000_000_000);
    assert_eq!(p.base_rtt_ns, 13_000);
    assert_eq!(p.eta, 0.95);
    assert_eq!(p.max_stage, 5);
    assert_eq!(p.expected_flows, 100);
    assert_eq!(p.mtu_bytes, 1000);
    assert_eq!(p.w_ai_bytes, None);
    assert_eq!(p.validate(), Ok(()));
    let m = Hpcc::new(&p).unwrap();
    assert_eq!(m.w_init_bytes(), 162_500);
    assert_eq!(m.w_min_bytes(), 1000);
    assert_eq!(m.w_ai_bytes().to_bits(), 0x4054500000000005);

    let f = fncc::Params::default();
    assert_eq!((f.alpha, f.beta, f.t_active_ns), (1.05, 0.9, None));
    assert_eq!(f.t_active_ns(), 13_000, "T_active defaults to the base RTT");
    assert_eq!(f.hpcc(), p);
    assert_eq!(f.validate(), Ok(()));
}

#[test]
fn serde_defaults_and_unknown_keys() {
    let p: hpcc::Params =
        serde_json::from_str(r#"{"base_rtt_ns": 12000, "w_ai_bytes": 80.0}"#).unwrap();
    assert_eq!(p.base_rtt_ns, 12_000);
    assert_eq!(p.w_ai_bytes, Some(80.0));
    assert_eq!(p.eta, 0.95);
    let e = serde_json::from_str::<hpcc::Params>(r#"{"etaa": 0.9}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `etaa`"), "{e}");
    let p: hpcc::Params =
        serde_json::from_str(r#"{"reserved_line_rates": [{"code": 8, "bps": 1600000000000}]}"#)
            .unwrap();
    assert_eq!(
        p.reserved_line_rates,
        vec![ReservedLineRate {
            code: 8,
            bps: 1_600_000_000_000
        }]
    );
    let f: fncc::Params =
        serde_json::from_str(r#"{"alpha": 1.1, "eta": 0.9, "t_active_ns": 5000}"#).unwrap();
    assert_eq!((f.alpha, f.eta, f.t_active_ns()), (1.1, 0.9, 5000));
    assert!(serde_json::from_str::<fncc::Params>(r#"{"gamma": 1}"#).is_err());
}

fn with(f: impl FnOnce(&mut hpcc::Params)) -> hpcc::Params {
    let mut p = hpcc::Params::default();
    f(&mut p);
    p
}

#[rstest]
#[case::eta_zero(with(|p| p.eta = 0.0), "eta")]
#[case::eta_negative(with(|p| p.eta = -0.5), "eta")]
#[case::eta_above_one(with(|p| p.eta = 1.000_001), "eta")]
#[case::eta_nan(with(|p| p.eta = f64::NAN), "eta")]
#[case::eta_inf(with(|p| p.eta = f64::INFINITY), "eta")]
#[case::base_rtt_zero(with(|p| p.base_rtt_ns = 0), "base_rtt_ns")]
#[case::base_rtt_beyond_f64_exact(with(|p| p.base_rtt_ns = (1 << 53) + 1), "base_rtt_ns")]
#[case::line_rate_zero(with(|p| p.line_rate_bps = 0), "line_rate_bps")]
#[case::mtu_zero(with(|p| p.mtu_bytes = 0), "mtu_bytes")]
#[case::expected_flows_zero(with(|p| p.expected_flows = 0), "expected_flows")]
#[case::w_ai_nan(with(|p| p.w_ai_bytes = Some(f64::NAN)), "w_ai_bytes")]
#[case::w_ai_negative(with(|p| p.w_ai_bytes = Some(-1.0)), "w_ai_bytes")]
#[case::w_ai_inf(with(|p| p.w_ai_bytes = Some(f64::INFINITY)), "w_ai_bytes")]
#[case::w_min_zero(with(|p| p.w_min_bytes = Some(0)), "w_min_bytes")]
// T = 50 ns: W_init = 100e9 × 50 / 8e9 = 625 B < w_min = 1 MTU = 1000 B.
#[case::w_min_above_w_init(with(|p| p.base_rtt_ns = 50), "w_min_bytes")]
// W_init = 1e18 × 1e6 / 8e9 = 1.25e14 fits; u64::MAX bps × 2^40 ns does not fit 2^53.
#[case::w_init_too_large(with(|p| { p.line_rate_bps = u64::MAX; p.base_rtt_ns = 1 << 40 }), "base_rtt_ns")]
#[case::reserved_code_not_reserved(with(|p| p.reserved_line_rates = vec![ReservedLineRate { code: 7, bps: 1 }]), "reserved_line_rates.code")]
#[case::reserved_code_out_of_range(with(|p| p.reserved_line_rates = vec![ReservedLineRate { code: 16, bps: 1 }]), "reserved_line_rates.code")]
#[case::reserved_bps_zero(with(|p| p.reserved_line_rates = vec![ReservedLineRate { code: 8, bps: 0 }]), "reserved_line_rates.bps")]
#[case::reserved_code_twice(with(|p| p.reserved_line_rates = vec![ReservedLineRate { code: 9, bps: 1 }, ReservedLineRate { code: 9, bps: 2 }]), "reserved_line_rates.code")]
fn invalid_hpcc_params_are_rejected(#[case] p: hpcc::Params, #[case] name: &str) {
    let e = p.validate().unwrap_err();
    assert_eq!(e.name, name, "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("invalid parameter `{name}`"))
    );
    assert!(Hpcc::new(&p).is_err());
    // The same HPCC part is rejected by FNCC too.
    let f = fncc::Params {
        line_rate_bps: p.line_rate_bps,
        base_rtt_ns: p.base_rtt_ns,
        mtu_bytes: p.mtu_bytes,
        w_min_bytes: p.w_min_bytes,
        eta: p.eta,
        max_stage: p.max_stage,
        w_ai_bytes: p.w_ai_bytes,
        expected_flows: p.expected_flows,
        reserved_line_rates: p.reserved_line_rates.clone(),
        ..fncc::Params::default()
    };
    assert_eq!(f.validate().unwrap_err().name, name);
    assert!(fncc::Fncc::new(&f).is_err());
    assert!(fncc::Receiver::new(&f).is_err());
}

/// Edge values that are valid: η = 1, W_AI = 0, maxStage = 0 (seed 000 footnote 5 tried
/// 0..5), w_min = W_init (T = 80 ns: 100e9 × 80 / 8e9 = 1000 B = 1 MTU), mapped reserved codes.
#[rstest]
#[case::eta_one(with(|p| p.eta = 1.0))]
#[case::w_ai_zero(with(|p| p.w_ai_bytes = Some(0.0)))]
#[case::max_stage_zero(with(|p| p.max_stage = 0))]
#[case::w_min_equals_w_init(with(|p| p.base_rtt_ns = 80))]
#[case::reserved_codes(with(|p| p.reserved_line_rates = vec![ReservedLineRate { code: 8, bps: 1 }, ReservedLineRate { code: 15, bps: u64::MAX }]))]
fn valid_edge_params(#[case] p: hpcc::Params) {
    assert_eq!(p.validate(), Ok(()));
}

fn fwith(f: impl FnOnce(&mut fncc::Params)) -> fncc::Params {
    let mut p = fncc::Params::default();
    f(&mut p);
    p
}

#[rstest]
#[case::alpha_nan(fwith(|p| p.alpha = f64::NAN), "alpha")]
#[case::alpha_negative(fwith(|p| p.alpha = -1.0), "alpha")]
#[case::alpha_inf(fwith(|p| p.alpha = f64::INFINITY), "alpha")]
#[case::beta_zero(fwith(|p| p.beta = 0.0), "beta")]
#[case::beta_above_one(fwith(|p| p.beta = 1.1), "beta")]
#[case::beta_nan(fwith(|p| p.beta = f64::NAN), "beta")]
#[case::t_active_zero(fwith(|p| p.t_active_ns = Some(0)), "t_active_ns")]
#[case::eta_via_fncc(fwith(|p| p.eta = 2.0), "eta")]
fn invalid_fncc_params_are_rejected(#[case] p: fncc::Params, #[case] name: &str) {
    assert_eq!(p.validate().unwrap_err().name, name);
    assert!(fncc::Fncc::new(&p).is_err());
    assert!(fncc::Receiver::new(&p).is_err());
}
