//! Unit tests of the external-process DUT: command lines, line framing.

use super::*;

#[test]
fn command_lines_split_like_a_shell() {
    assert_eq!(
        split_command_line("python3  examples/duts/hpcc_dut.py --bug wai-twice").unwrap(),
        ["python3", "examples/duts/hpcc_dut.py", "--bug", "wai-twice"]
    );
    assert_eq!(
        split_command_line(r#"sh -c 'echo "$x"' "a b" c\ d "q\"q" ''"#).unwrap(),
        ["sh", "-c", "echo \"$x\"", "a b", "c d", "q\"q", ""]
    );
    assert!(split_command_line("  ").is_err());
    assert!(split_command_line("a 'b").is_err());
    assert!(split_command_line("a \"b").is_err());
    assert!(split_command_line("a\\").is_err());
    assert_eq!(
        display_command(&["python3".into(), "my dut.py".into(), "it's".into()]),
        "python3 'my dut.py' 'it'\\''s'"
    );
}

#[test]
fn bounded_lines_cut_and_resume() {
    let mut r = io::Cursor::new(b"abcdef\nxy\r\n\nlast".to_vec());
    let mut b = Vec::new();
    assert_eq!(read_line_bounded(&mut r, &mut b, 4).unwrap(), Some(true));
    assert_eq!(b, b"abcd");
    assert_eq!(read_line_bounded(&mut r, &mut b, 4).unwrap(), Some(false));
    assert_eq!(b, b"xy\r");
    assert_eq!(read_line_bounded(&mut r, &mut b, 4).unwrap(), Some(false));
    assert_eq!(b, b"");
    assert_eq!(read_line_bounded(&mut r, &mut b, 4).unwrap(), Some(false));
    assert_eq!(b, b"last");
    assert_eq!(read_line_bounded(&mut r, &mut b, 4).unwrap(), None);
}

#[test]
fn tail_keeps_the_last_lines() {
    let mut t = Tail::default();
    for i in 0..25 {
        t.push(format!("line {i}"));
    }
    let text = t.text();
    assert_eq!(text.lines().count(), STDERR_TAIL_LINES);
    assert!(text.starts_with("line 5\n") && text.ends_with("line 24"));
}

#[test]
fn reply_rules_are_checked() {
    use ccreplay_reference_cc::{EventKind, Outputs, State};
    let ev = Event {
        t_ns: 100,
        flow: 2,
        index: 5,
        kind: EventKind::RxCnp,
    };
    let timer = |t_ns| Decision {
        t_ns,
        flow: 0,
        cause: Cause::Timer { name: "alpha" },
        outputs: Outputs::default(),
        state: State::default(),
    };
    let own = Decision {
        t_ns: 100,
        flow: 2,
        cause: Cause::Event {
            kind: "rx_cnp",
            index: 5,
        },
        ..timer(0)
    };
    let ok = [timer(40), timer(40), timer(100), own];
    assert_eq!(check_decisions(Call::Event(&ev), &ok), Ok(()));
    let e = check_decisions(Call::Event(&ev), &[timer(50), timer(40)]).unwrap_err();
    assert!(
        e.contains("earlier than the timer before it (50 ns)"),
        "{e}"
    );
    let e = check_decisions(Call::Finish(1000), &[own]).unwrap_err();
    assert!(
        e.contains("a finish reply holds timer decisions only"),
        "{e}"
    );
    assert_eq!(check_decisions(Call::Finish(40), &[timer(40)]), Ok(()));
    let e = check_decisions(Call::Finish(39), &[timer(40)]).unwrap_err();
    assert!(e.contains("after the trace end = 39 ns"), "{e}");
}

#[test]
fn names_are_checked() {
    assert!(check_name("W").is_ok());
    assert!(check_name("incStage").is_ok());
    assert!(check_name("α").is_ok());
    assert!(check_name("").is_err());
    assert!(check_name("a\"b").is_err());
    assert!(check_name("a\\b").is_err());
    assert!(check_name("a\nb").is_err());
    assert!(check_name(&"x".repeat(NAME_MAX_BYTES + 1)).is_err());
    assert!(check_name(&"x".repeat(NAME_MAX_BYTES)).is_ok());
}
