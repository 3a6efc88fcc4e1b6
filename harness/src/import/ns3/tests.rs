//! Unit tests of the ns-3 inputs' syntax: rates, times, node IPs, config errors.

use std::net::Ipv4Addr;

use super::*;

#[test]
fn rates_and_times_in_ns3_syntax() {
    assert_eq!(parse_rate("100Gbps"), Some(100_000_000_000));
    assert_eq!(parse_rate("50Mb/s"), Some(50_000_000));
    assert_eq!(parse_rate("1KiBps"), Some(8 * 1024));
    assert_eq!(parse_rate("100G"), None);
    assert_eq!(parse_time_ns("0.001ms"), Some(1_000));
    assert_eq!(parse_time_ns("1us"), Some(1_000));
    assert_eq!(parse_time_ns("2x"), None);
}

#[test]
fn node_ips_follow_third_cc() {
    // 0x0b000001 + 2 × 0x100 = 0x0b000201 = 11.0.2.1; node 257: + 0x10000 + 0x100.
    assert_eq!(Ipv4Addr::from(node_ip(2)).to_string(), "11.0.2.1");
    assert_eq!(Ipv4Addr::from(node_ip(257)).to_string(), "11.1.1.1");
}

#[test]
fn config_errors_name_the_line() {
    let e = Config::parse("CC_MODE 3\nRATE_AI fast\n", Path::new("c.txt"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("c.txt:2: RATE_AI: `fast` is not a valid"),
        "{e}"
    );
    let e = Config::parse("KMAX_MAP 2 1 2\n", Path::new("c.txt"))
        .unwrap_err()
        .to_string();
    assert_eq!(e, "c.txt:1: KMAX_MAP: expected 5 values, found 3");
    let c = Config::parse("FOO 1\nCC_MODE 3\n", Path::new("c.txt")).unwrap();
    assert_eq!(c.unknown, vec![(1, "FOO".to_string())]);
    assert_eq!(c.uint("CC_MODE"), Some(3));
}
