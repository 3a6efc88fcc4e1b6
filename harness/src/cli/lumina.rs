//! `ccreplay lumina`: a Lumina testbed's dumps merged into one capture in the switch's order
//! (harness/src/lumina/, docs/wire.md 2.3).

use std::path::PathBuf;

use clap::Args;

use super::{Failure, write_atomic};

#[derive(Args)]
pub(crate) struct LuminaArgs {
    /// The dump servers' captures (pcap or pcapng), or an aggregate not in the switch's order.
    #[arg(required = true)]
    pub(crate) dumps: Vec<PathBuf>,
    /// The UDP destination port the switch sends its copies to (4791 for the files Lumina's
    /// dumper writes, which put the copies back on the RoCEv2 port).
    #[arg(long)]
    pub(crate) port: u16,
    /// The merged capture (default: beside the first dump, `NAME.merged.pcap`).
    #[arg(short, long)]
    pub(crate) out: Option<PathBuf>,
}

pub(crate) fn run(a: LuminaArgs) -> Result<u8, Failure> {
    let m = ccreplay::lumina::merge(&a.dumps, a.port).map_err(|e| {
        Failure::input(
            e.to_string(),
            "give the dump servers' captures and the port the switch sends its copies to (`ccreplay inspect DUMP` shows the UDP ports)".to_string(),
        )
    })?;
    let out = a
        .out
        .unwrap_or_else(|| ccreplay::lumina::default_output(&a.dumps[0]));
    write_atomic(&out, &m.pcap)?;
    let n = ccreplay::verdict::n;
    note!(
        "ccreplay: wrote {}: {} records from {} dump{}, {} Lumina copies in the switch's order (sequence numbers {} to {}); {} missing, {} duplicate{} dropped, {} sequence number{} held by two different copies",
        out.display(),
        n(m.records),
        a.dumps.len(),
        if a.dumps.len() == 1 { "" } else { "s" },
        n(m.copies),
        m.first_seq,
        m.last_seq,
        n(m.missing),
        n(m.duplicates),
        if m.duplicates == 1 { "" } else { "s" },
        n(m.conflicts),
        if m.conflicts == 1 { "" } else { "s" },
    );
    if m.missing > 0 {
        eprintln!(
            "ccreplay: {}: {} sequence number{} no dump holds: the dump servers lost copies, and a replay of it is an error",
            out.display(),
            n(m.missing),
            if m.missing == 1 { "" } else { "s" },
        );
    }
    Ok(0)
}
