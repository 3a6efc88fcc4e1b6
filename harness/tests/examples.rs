//! Examples that cannot rot (issue 14.9): every `ccreplay ...` command line of README.md,
//! docs/**/*.md (code blocks) and the `--help` texts runs, and exits as it says.
//!
//! Each source (a document, a `--help` text) runs its commands in order in a sandbox of its
//! own: a copy of traces/, golden/, scenarios/, examples/, harness/include/, tests/fixtures/,
//! and the files a user would bring, made from bundled ones — `capture.pcap` and
//! `my_capture.pcap` (the hpcc dumbbell capture), `capture.pcapng` (a pcapng fixture),
//! `my-traces/` and `my-golden/` (copies of traces/ and golden/), `mix/` (the ns-3 fixture,
//! `mix/config.txt` its HPCC config). `cargo run --release --` runs the binary under test;
//! `gcc` lines (building the C example DUT) run as written.
//!
//! A command's expected exit status is 0 unless its comment says `# exits N`; a comment
//! `# needs: REASON` skips it with the reason (something outside the repository).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ccreplay"))
}

/// One example: where it is written and the command line.
#[derive(Debug)]
struct Example {
    source: String,
    line: usize,
    command: String,
}

/// `ccreplay`, `cargo run --release --` and `gcc` lines of the fenced code blocks of a
/// markdown file, continuation lines joined.
fn from_markdown(path: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(path).unwrap();
    let source = path
        .strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string();
    let mut out = Vec::new();
    let mut in_block = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        let l = line.trim();
        if let Some((at, mut cmd)) = pending.take() {
            cmd.push(' ');
            cmd.push_str(l.trim_end_matches('\\').trim());
            if l.ends_with('\\') {
                pending = Some((at, cmd));
            } else {
                out.push(Example {
                    source: source.clone(),
                    line: at,
                    command: cmd,
                });
            }
            continue;
        }
        let l = l.strip_prefix("$ ").unwrap_or(l);
        if !(l.starts_with("ccreplay ")
            || l.starts_with("cargo run --release -- ")
            || l.starts_with("gcc "))
        {
            continue;
        }
        if l.ends_with('\\') {
            pending = Some((i + 1, l.trim_end_matches('\\').trim().to_string()));
        } else {
            out.push(Example {
                source: source.clone(),
                line: i + 1,
                command: l.to_string(),
            });
        }
    }
    out
}

/// The example lines of `ccreplay ARGS --help`.
fn from_help(args: &[&str]) -> Vec<Example> {
    let out = Command::new(bin())
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?} --help");
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("ccreplay "))
        .map(|(i, l)| Example {
            source: format!("ccreplay {} --help", args.join(" ")),
            line: i + 1,
            command: l.trim().to_string(),
        })
        .collect()
}

/// The subcommands `ccreplay --help` lists (and `import`'s).
fn subcommands() -> Vec<Vec<String>> {
    let list = |args: &[&str]| -> Vec<String> {
        let out = Command::new(bin())
            .args(args)
            .arg("--help")
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next().map(String::from))
            .filter(|c| c != "help")
            .collect()
    };
    let mut v = Vec::new();
    for c in list(&[]) {
        if c == "import" {
            for s in list(&["import"]) {
                v.push(vec![c.clone(), s]);
            }
        } else {
            v.push(vec![c]);
        }
    }
    v
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// A fresh sandbox: the repository's data and the files a user would bring.
fn sandbox(tag: usize) -> common::Scratch {
    let dir = common::Scratch::new(&format!("examples-{tag}"));
    let r = repo();
    for d in [
        "traces",
        "golden",
        "scenarios",
        "examples",
        "harness/include",
        "tests/fixtures",
    ] {
        copy_dir(&r.join(d), &dir.join(d));
    }
    copy_dir(&r.join("traces"), &dir.join("my-traces"));
    copy_dir(&r.join("golden"), &dir.join("my-golden"));
    for name in ["capture.pcap", "my_capture.pcap"] {
        std::fs::copy(r.join("traces/hpcc_dumbbell.pcap"), dir.join(name)).unwrap();
    }
    std::fs::copy(
        r.join("tests/fixtures/roce_linktypes_multi.pcapng"),
        dir.join("capture.pcapng"),
    )
    .unwrap();
    copy_dir(&r.join("tests/fixtures/ns3"), &dir.join("mix"));
    std::fs::copy(
        r.join("tests/fixtures/ns3/config_hpcc.txt"),
        dir.join("mix/config.txt"),
    )
    .unwrap();
    // `ccreplay` on PATH is the binary under test.
    let bin_dir = dir.join(".bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(bin(), bin_dir.join("ccreplay")).unwrap();
    dir
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// `# exits N` in the comment: N; else 0.
fn expected_status(cmd: &str) -> i32 {
    cmd.split_once("# exits ")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn needs(cmd: &str) -> Option<&str> {
    cmd.split_once("# needs: ").map(|(_, why)| why.trim())
}

#[test]
fn every_documented_command_runs_as_documented() {
    let mut sources: Vec<Vec<Example>> = Vec::new();
    let mut docs = vec![repo().join("README.md")];
    let mut stack = vec![repo().join("docs")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                docs.push(p);
            }
        }
    }
    docs.sort();
    for d in &docs {
        sources.push(from_markdown(d));
    }
    let subs = subcommands();
    assert!(subs.len() >= 10, "{subs:?}");
    for s in &subs {
        let args: Vec<&str> = s.iter().map(String::as_str).collect();
        sources.push(from_help(&args));
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let (mut ran, mut skipped, mut failures) = (0, Vec::new(), Vec::new());
    for (i, examples) in sources.iter().enumerate() {
        if examples.is_empty() {
            continue;
        }
        let dir = sandbox(i);
        let path = format!("{}:{path}", dir.join(".bin").display());
        for ex in examples {
            if let Some(why) = needs(&ex.command) {
                skipped.push(format!("{}:{}: {} ({why})", ex.source, ex.line, ex.command));
                continue;
            }
            // A pipe into a tool this machine lacks (CI installs them: .ci/run).
            if let Some(tool) = ["jq", "man"]
                .into_iter()
                .find(|t| ex.command.contains(&format!("| {t} ")) && !on_path(t))
            {
                if std::env::var_os("CI").is_some() {
                    failures.push(format!(
                        "{}:{}: `{tool}` is not installed",
                        ex.source, ex.line
                    ));
                } else {
                    skipped.push(format!(
                        "{}:{}: {} ({tool} not installed)",
                        ex.source, ex.line, ex.command
                    ));
                }
                continue;
            }
            let cmd = ex
                .command
                .replacen("cargo run --release -- ", "ccreplay ", 1);
            let out = Command::new("bash")
                .args(["-c", &format!("set -o pipefail; {cmd}")])
                .current_dir(&dir)
                .env("PATH", &path)
                .env("HOME", &dir)
                .output()
                .unwrap();
            let code = out.status.code().unwrap_or(-1);
            let want = expected_status(&ex.command);
            if code != want {
                failures.push(format!(
                    "{}:{}: `{}` exited {code}, expected {want}:\n{}",
                    ex.source,
                    ex.line,
                    ex.command,
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .take(6)
                        .collect::<Vec<_>>()
                        .join("\n")
                ));
            }
            ran += 1;
        }
    }
    for s in &skipped {
        eprintln!("skipped: {s}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran >= 30, "only {ran} examples ran");
}
