//! The JUnit XML of `check --junit` and `diff --junit` validates against the schema CI servers
//! read it with: Jenkins xUnit's `junit-10.xsd` (tests/fixtures/junit/, as pytest ships it),
//! checked by xmllint (libxml2-utils). Passing, failing, missing, unreadable and broken pairs
//! all validate. Without xmllint the test is skipped, unless CCREPLAY_REQUIRE_XMLLINT is set
//! (CI sets it).

mod common;

use common::repo;

use std::path::Path;
use std::process::Command;

fn xmllint() -> bool {
    let found = Command::new("xmllint").arg("--version").output().is_ok();
    if !found && std::env::var_os("CCREPLAY_REQUIRE_XMLLINT").is_some() {
        panic!(
            "xmllint not installed (apt-get install libxml2-utils) and CCREPLAY_REQUIRE_XMLLINT is set"
        );
    }
    found
}

fn validate(xml: &Path) -> Result<(), String> {
    let out = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(repo().join("tests/fixtures/junit/junit-10.xsd"))
        .arg(xml)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn run(dir: &Path, args: &[&str]) -> i32 {
    Command::new(env!("CARGO_BIN_EXE_ccreplay"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
        .status
        .code()
        .unwrap_or(-1)
}

#[test]
fn junit_reports_validate_against_the_jenkins_schema() {
    if !xmllint() {
        eprintln!("skipped: xmllint not installed");
        return;
    }
    // The control: the schema rejects a suite without its required attributes.
    let dir = common::Scratch::new("junit-xsd");
    let bad = dir.join("bad.xml");
    std::fs::write(&bad, "<testsuites><testsuite tests=\"1\"/></testsuites>\n").unwrap();
    assert!(
        validate(&bad).is_err(),
        "xmllint accepted an invalid report"
    );

    // Every pair conforms.
    let r = repo();
    assert_eq!(
        run(
            &r,
            &[
                "check",
                "-q",
                "--junit",
                dir.join("ok.xml").to_str().unwrap()
            ]
        ),
        0
    );
    validate(&dir.join("ok.xml")).unwrap();

    // A sandbox with every kind of bad pair: a missing golden file, an unreadable one (not
    // JSON), one that is a folder, a manifest that does not parse.
    let sb = dir.join("sandbox");
    copy_dir(&r.join("traces"), &sb.join("traces"));
    copy_dir(&r.join("golden"), &sb.join("golden"));
    std::fs::remove_file(sb.join("golden/roce_dcqcn/dcqcn-nic.jsonl")).unwrap();
    std::fs::write(sb.join("golden/hpcc_dumbbell/hpcc.jsonl"), "not json <&>\n").unwrap();
    std::fs::remove_file(sb.join("golden/rcc_sender/rcc-sender.jsonl")).unwrap();
    std::fs::create_dir(sb.join("golden/rcc_sender/rcc-sender.jsonl")).unwrap();
    let m = sb.join("traces/fncc_dumbbell.toml");
    let text = std::fs::read_to_string(&m).unwrap();
    std::fs::write(&m, text.replacen("dialect", "dialekt", 1)).unwrap();
    let bad_check = dir.join("bad-check.xml");
    assert_eq!(
        run(
            &sb,
            &["check", "-q", "--junit", bad_check.to_str().unwrap()]
        ),
        2
    );
    validate(&bad_check).unwrap();
    let xml = std::fs::read_to_string(&bad_check).unwrap();
    // Four pairs that compared nothing, the missing golden file among them: errors, no
    // failure (the DUT below gives those).
    assert!(
        xml.contains("failures=\"0\" errors=\"4\"") && !xml.contains("<failure"),
        "{xml}"
    );

    // A DUT with a bug: failures with their messages.
    let diff = dir.join("diff.xml");
    let code = run(
        &r,
        &[
            "diff",
            "traces/hpcc_dumbbell.toml",
            "--dut",
            "process:python3 examples/duts/hpcc_dut.py --bug wai-twice",
            "--junit",
            diff.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1);
    validate(&diff).unwrap();
}
