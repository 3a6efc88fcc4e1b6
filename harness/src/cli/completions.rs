//! `ccreplay completions SHELL` and `ccreplay man`: shell completions (clap_complete) and man
//! pages (clap_mangen), generated from the same command definitions the parser uses.

use std::path::PathBuf;

use clap::{Args, CommandFactory};

use super::{Failure, write_atomic};

#[derive(Args)]
pub(crate) struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Args)]
pub(crate) struct ManArgs {
    /// Write `ccreplay.1` and one page per command (`ccreplay-check.1`, ...) into this folder;
    /// without it, `ccreplay.1` goes to standard output.
    #[arg(short, long)]
    pub(crate) out: Option<PathBuf>,
}

pub(crate) fn completions(a: CompletionsArgs) -> Result<u8, Failure> {
    let mut cmd = crate::Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "ccreplay", &mut buf);
    out!("{}", String::from_utf8_lossy(&buf));
    Ok(0)
}

fn render(cmd: clap::Command) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut buf)
        .map_err(|e| Failure::input(format!("man page: {e}"), None))?;
    Ok(buf)
}

pub(crate) fn man(a: ManArgs) -> Result<u8, Failure> {
    let mut cmd = crate::Cli::command();
    cmd.build();
    let Some(dir) = a.out else {
        out!("{}", String::from_utf8_lossy(&render(cmd)?));
        return Ok(0);
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::input(format!("{}: {e}", dir.display()), None))?;
    let mut pages = vec![("ccreplay".to_string(), cmd.clone())];
    // clap's generated `help` subcommands get no page.
    let subs = |c: &clap::Command, name: &str| -> Vec<(String, clap::Command)> {
        c.get_subcommands()
            .filter(|s| s.get_name() != "help")
            .map(|s| (format!("{name}-{}", s.get_name()), s.clone()))
            .collect()
    };
    let mut stack = subs(&cmd, "ccreplay");
    while let Some((name, sub)) = stack.pop() {
        stack.extend(subs(&sub, &name));
        pages.push((name, sub));
    }
    pages.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        write_atomic(&path, &render(page.name(name.clone()))?)?;
        note!("ccreplay: wrote {}", path.display());
    }
    Ok(0)
}
