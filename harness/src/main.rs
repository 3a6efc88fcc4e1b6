//! `ccreplay`: the command line (harness.md 6).
//!
//! Exit status: 0 conformant / done, 1 differences found (or `--strict` malformed packets),
//! 2 bad input or usage, 3 the DUT failed.

use std::process::ExitCode;

// mimalloc without transparent huge pages (harness/Cargo.toml `no_thp`, docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

mod cli;

use cli::bless::BlessArgs;
use cli::check::CheckArgs;
use cli::completions::{CompletionsArgs, ManArgs};
use cli::diff::DiffArgs;
use cli::import::ImportCommand;
use cli::init::InitArgs;
use cli::inspect::InspectArgs;
use cli::lumina::LuminaArgs;
use cli::replay::ReplayArgs;
use cli::report::ReportArgs;
use cli::sim::{SimArgs, SynthArgs};

/// Trace-replay conformance harness for RoCEv2 congestion control.
#[derive(Parser)]
#[command(name = "ccreplay", version, about, long_about = None)]
struct Cli {
    /// No progress and no informational lines on standard error (what was written, the
    /// accounting); warnings and errors are still printed.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check every bundled trace against its golden decisions (the main job).
    #[command(after_help = "Examples:
  ccreplay check                      # traces/ against golden/
  ccreplay check my-traces --golden my-golden --junit report.xml
  ccreplay check traces/hpcc_dumbbell.toml traces/roce_dcqcn.pcap --trace roce_dcqcn
  ccreplay check --shard 2/3 --junit shard-2.xml   # job 2 of a 3-job CI matrix
  ccreplay check --unreferenced reject             # fail on golden files no trace uses
  ccreplay check --coverage                        # which rules of each model the traces exercise

Exit status: 0 every trace conforms; 1 a difference, or (with --unreferenced reject) a golden
file no trace uses; 2 a trace or manifest could not be read, or a pair compared nothing (no
golden file yet: MISSING, with the `ccreplay bless` that writes it; no events or decisions;
with --dut observed, no reference decision to judge the sender by).")]
    Check(CheckArgs),
    /// Replay a trace through a reference model or a DUT; write decisions as JSON Lines.
    #[command(after_help = "Examples:
  ccreplay replay traces/hpcc_dumbbell.toml                    # the manifest's first model
  ccreplay replay traces/roce_dcqcn.pcap --model dcqcn-nic --out dcqcn.jsonl
  ccreplay replay traces/hpcc_dumbbell.toml --dut 'process:python3 examples/duts/hpcc_dut.py'

Exit status: 0 done; 2 bad trace, manifest or model; 3 the DUT failed.")]
    Replay(ReplayArgs),
    /// Compare a DUT (or a golden file) with the reference model on a trace.
    #[command(after_help = "Examples:
  ccreplay diff traces/hpcc_dumbbell.toml --dut 'process:python3 examples/duts/hpcc_dut.py'
  ccreplay diff traces/hpcc_dumbbell.toml --dut cabi:./libhpcc_dut.so --state all   # needs: the C example DUT built (docs/dut.md)
  ccreplay diff traces/roce_dcqcn.toml --dut model:dcqcn-nic --tol rate_bps=rel:0.01   # exits 1: the NIC profile departs
  ccreplay diff traces/hpcc_dumbbell.toml --golden golden/hpcc_dumbbell/hpcc.jsonl --junit out.xml

Exit status: 0 conformant; 1 differences found; 2 bad input; 3 the DUT failed.")]
    Diff(DiffArgs),
    /// Rewrite golden files from the reference models (atomically; refuses if a replay fails).
    #[command(after_help = "Examples:
  ccreplay bless                       # every trace in traces/
  ccreplay bless --trace hpcc_dumbbell # one trace
  ccreplay bless my-traces/roce_dcqcn.toml --golden my-golden   # a manifest by its path (or a capture, a folder)

Review the change with `git diff golden/` before committing it. Exit status: 0 written (or
unchanged); 2 a trace could not be read or replayed, or compared nothing — then no file or
folder is written.")]
    Bless(BlessArgs),
    /// Write the manifest beside a capture from what it shows: dialect, capture point, flows,
    /// link rate, base RTT, MTU (each guess commented).
    #[command(after_help = "Examples:
  ccreplay init capture.pcap                    # writes capture.toml; then: ccreplay replay capture.pcap
  ccreplay init capture.pcap --force --model hpcc --param eta=0.9 --param base_rtt_ns=8000
  ccreplay init traces/hpcc_dumbbell.pcap -o -  # print it

Exit status: 0 written; 2 unreadable capture, nothing to replay, a bad --model/--param,
or a manifest already there (--force replaces it).")]
    Init(InitArgs),
    /// Decode a capture packet by packet (Wireshark field names in JSON).
    #[command(after_help = "Examples:
  ccreplay inspect traces/hpcc_dumbbell.pcap --dialect hpcc
  ccreplay inspect capture.pcapng --format json | jq 'select(.\"infiniband.bth.opcode\" == 17)'
  ccreplay inspect capture.pcap --strict   # exit 1 if any packet is malformed
  ccreplay inspect capture.pcap -e frame.number -e ip.src -e infiniband.bth.psn   # as tshark -T fields

Exit status: 0 read to the end; 1 with --strict when a packet was malformed (or of a link
type ccreplay does not read, such as native InfiniBand: ERF 197); 2 when the file cannot be read.")]
    Inspect(InspectArgs),
    /// Merge a Lumina testbed's dumps into one capture in the switch's order (docs/wire.md 2.3).
    #[command(after_help = "Examples:
  ccreplay lumina tests/fixtures/lumina.pcap --port 5000 -o dump.pcap
  ccreplay lumina dumper1.pcap dumper2.pcap --port 5000 -o dump.pcap   # needs: a Lumina testbed's dumps

Then `ccreplay init dump.pcap --lumina-port 5000`. Every record is kept with its capture time;
copies the dump servers lost are reported (a replay of the merged capture is an error).
Exit status: 0 written; 2 unreadable dumps, mixed link types, or no copy to the port.")]
    Lumina(LuminaArgs),
    /// Run a scenario through the network simulator: a pcap + manifest per tap, metrics.json.
    #[command(after_help = "Examples:
  ccreplay sim scenarios/papers/hpcc_incast_16.toml --out out/hpcc_incast_16
  ccreplay sim scenarios/papers/dcqcn_incast_pfc.toml --out out/pfc --seed 7
  ccreplay sim scenarios/papers/hpcc_incast_16.toml --out out/wai40 --set params.w_ai_bytes=40

The captures replay with `ccreplay replay/check`; docs/sim.md, docs/metrics.md.
Exit status: 0 written, 2 bad scenario or output folder.")]
    Sim(SimArgs),
    /// Regenerate the bundled traces from the bundled scenarios (scenarios/bundled; docs/sim.md).
    #[command(after_help = "Examples:
  ccreplay synth                       # every bundled scenario into traces/
  ccreplay synth hpcc_dumbbell --out out/t

The files are byte-identical on every run; `git diff traces/` shows any change.")]
    Synth(SynthArgs),
    /// Judge a switch from taps on one of its ports: ECN marking, INT stamping, PFC.
    #[command(after_help = "Examples:
  ccreplay sim scenarios/switch/dcqcn_marking.toml --out out/sw
  ccreplay switch out/sw/sw0_h2.switch.toml --junit switch.xml

Exit status: 0 every check passed; 1 a check failed; 2 a setup or capture could not be read,
or the taps hold too little to judge.")]
    Switch(cli::switch::SwitchArgs),
    /// Write a self-contained HTML report with charts: of a diff, a check or a simulation.
    #[command(after_help = "Examples:
  ccreplay report check -o check.html
  ccreplay report diff traces/hpcc_dumbbell.toml --dut 'process:python3 examples/duts/hpcc_dut.py --bug wai-twice' -o diff.html   # exits 1
  ccreplay sim scenarios/papers/hpcc_incast_16.toml --out out/hpcc_incast_16
  ccreplay report sim out/hpcc_incast_16 -o sim.html
  ccreplay report sim out/hpcc_incast_16 --from 0 --to 300us -o start.html

The page needs no network (no script, no external CSS or fonts); docs/report.md.
Exit status: as `diff` / `check` (0 conformant, 1 differences, 2 bad input, 3 DUT failed);
`report sim`: 0 written, 2 bad input.")]
    Report(ReportArgs),
    /// Import another tool's output as events files with manifests (docs/import.md).
    #[command(subcommand)]
    Import(ImportCommand),
    /// Print a shell completion script.
    #[command(after_help = "Examples:
  ccreplay completions bash > ccreplay.bash   # then: source ccreplay.bash
  ccreplay completions zsh > _ccreplay        # a folder of $fpath

Exit status: 0.")]
    Completions(CompletionsArgs),
    /// Write the man pages (ccreplay.1 and one per command).
    #[command(after_help = "Examples:
  ccreplay man --out man/man1                 # then: MANPATH=$PWD/man man ccreplay-diff
  ccreplay man | man -l -

Exit status: 0 written; 2 the folder cannot be written.")]
    Man(ManArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli::set_quiet(cli.quiet);
    let result = match cli.command {
        Command::Check(a) => cli::check::run(a),
        Command::Replay(a) => cli::replay::run(a),
        Command::Diff(a) => cli::diff::run(a),
        Command::Bless(a) => cli::bless::run(a),
        Command::Init(a) => cli::init::run(a),
        Command::Inspect(a) => cli::inspect::run(a),
        Command::Lumina(a) => cli::lumina::run(a),
        Command::Sim(a) => cli::sim::run(a),
        Command::Synth(a) => cli::sim::run_synth(a),
        Command::Report(a) => cli::report::run(a),
        Command::Switch(a) => cli::switch::run(a),
        Command::Import(ImportCommand::Ns3(a)) => cli::import::run_ns3(a),
        Command::Completions(a) => cli::completions::completions(a),
        Command::Man(a) => cli::completions::man(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) if f.is_closed_pipe() => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("ccreplay: {}", f.message);
            if let Some(h) = f.hint {
                eprintln!("hint: {h}");
            }
            ExitCode::from(f.code)
        }
    }
}
