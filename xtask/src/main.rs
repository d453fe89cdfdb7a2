//! `cargo xtask`: the project's automation, one subcommand per job.
//!
//! - `setup`: prepares the assets (Python runtime component for the code sandbox, the SmolLM2
//!   GGUF) into the asset directory; idempotent.
//! - `test`: setup, then every test of the workspace, then the Python binding tests. This is
//!   what CI runs.
//! - `demo`: builds `mentor` and runs `mentor demo` (the embedded default needs no assets).
//! - `datasets`: installs the public benchmark files with sha256 checks.
//! - `lint`: `cargo fmt --check` and `cargo clippy --all-targets -D warnings`.
//! - `bench`: comparison benchmarks against peers (Math-Verify, ...), in release mode.
//! - `rescue`: `mentor rescue` on SmolLM2's real GSM8K failures (MBPP with `--mbpp`): how often
//!   each mentor turns an all-fail group into a success (sized down for 2 cores; see docs/RESULTS.md).
//! - `experiment edge`: the training experiment (`mentor experiment`, preset `edge-smollm2`):
//!   GRPO on SmolLM2 with and without the mentor, missing runs only, pooled into
//!   docs/results/edge/; `--sweep` runs the learning-rate sweep that picks its rate.
//! - `python`: builds the `mentor-rl` wheel (maturin, dev profile) and runs the binding tests
//!   against it in a fresh venv; prints the wheel's path last. `test` runs the same tests.
//!   `--bench` also times `verify_math` from Python against Math-Verify.
//! - `trl`: `MentorGRPOTrainer` and plain GRPO in TRL on the CPU (SmolLM2-135M, GSM8K train),
//!   side by side, with checks that the mentor step ran (TRL venv pinned, ~6 GB).
//!
//! xtask never links the heavy crates; it shells out to `cargo`, `python3` and `curl`.

mod assets;
mod bench;
mod bench_policy;
mod bench_step;
mod datasets;
mod experiment;
mod hashing;
#[cfg(test)]
mod import_graph;
mod process;
mod python;
mod rescue;
#[cfg(test)]
mod tidy;
mod trl;
mod venv;
mod verl;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "MENTOR project automation", arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Prepare the assets (Python runtime component, SmolLM2 GGUF); a no-op when present.
    Setup,
    /// Run setup, then every test in the workspace and the Python binding tests (what CI runs).
    Test {
        /// Extra arguments passed to `cargo test` (after `--`).
        #[arg(last = true)]
        cargo_args: Vec<String>,
    },
    /// Build `mentor` and run the embedded demo (`mentor demo`); extra arguments after `--`.
    Demo {
        /// The 3 pretrained models × 3 seeds behind the README's claims (`mentor demo --full`,
        /// about 13 minutes on 2 cores) instead of one pretrained model × 3 seeds.
        #[arg(long)]
        full: bool,
        /// Extra arguments for `mentor demo` (after `--`), e.g. `-- --seeds 0,1,2`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Install the public benchmark sets into the data directory, checking sha256.
    Datasets {
        /// Copy from this folder (laid out like `shared/datasets`) instead of downloading.
        #[arg(long)]
        from: Option<PathBuf>,
        /// Install here instead of `<asset dir>/datasets`.
        #[arg(long)]
        to: Option<PathBuf>,
    },
    /// Check formatting and clippy lints (`-D warnings`).
    Lint,
    /// Measure how often each mentor rescues SmolLM2's collapsed GSM8K problems (`mentor rescue`
    /// with the `rescue-gsm8k-smollm2` preset: 100 collapsed problems, about 40 minutes on 2 cores).
    Rescue {
        /// The MBPP preset (code, in the sandbox) instead of GSM8K.
        #[arg(long, conflicts_with_all = ["arith", "heldout"])]
        mbpp: bool,
        /// The preset at the learner's edge: generated 2-step arithmetic word problems
        /// (`rescue-arith-smollm2`), the development family.
        #[arg(long, conflicts_with = "heldout")]
        arith: bool,
        /// The pre-registered test on held-out templates (`rescue-heldout-smollm2`, see
        /// docs/2026-12-06-heldout-rescue.md): chunks of 100 new collapsed problems, seeds 1-4
        /// unless `--seeds` says otherwise; finished chunks are kept, then all are analysed.
        #[arg(long)]
        heldout: bool,
        /// Run `mentor probe` on the preset instead: the learner's unhinted pass@1 over
        /// temperatures, lengths, prompts and difficulty strata (30 minutes at most).
        #[arg(long)]
        probe: bool,
        /// Attempt seeds, e.g. `0,1,2`: each is measured into `seed-<s>/` unless already there
        /// (seeds may be run in different sessions), then all finished seeds are pooled.
        #[arg(long, value_delimiter = ',')]
        seeds: Vec<u64>,
        /// Extra arguments for `mentor rescue` (after `--`), e.g. `-- --json`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// The training experiment: GRPO on SmolLM2-135M with and without the mentor (`mentor
    /// experiment` with the `edge-smollm2` preset; arms vanilla, retry, mentor, random_step on
    /// seeds 0-2), only the runs without a result file in docs/results/edge/, then all pooled.
    /// Hours on 2 cores: run it in the background; an interrupted run resumes.
    Experiment {
        /// Which experiment (only `edge`).
        #[arg(value_parser = ["edge"])]
        which: String,
        /// The learning-rate sweep of vanilla alone (seed 0, 40 steps per rate) whose rule
        /// picks the preset's rate; the arms refuse to run at any other.
        #[arg(long)]
        sweep: bool,
        /// Arms (default: vanilla, retry, mentor, random_step).
        #[arg(long, value_delimiter = ',')]
        arms: Vec<String>,
        /// Seeds (default: 0, 1, 2).
        #[arg(long, value_delimiter = ',')]
        seeds: Vec<u64>,
        /// Pool the committed result files only; run nothing.
        #[arg(long)]
        pool_only: bool,
        /// Extra arguments for `mentor experiment` (after `--`).
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Build the `mentor-rl` Python wheel (dev profile, maturin pinned in a private venv),
    /// install it into a fresh venv and run the binding tests; prints the wheel's path last.
    Python {
        /// Also time `verify_math` from Python against Math-Verify 0.9.0 on the same inputs in
        /// one process (fails below a 100x single-thread speed-up).
        #[arg(long)]
        bench: bool,
    },
    /// Run `MentorGRPOTrainer` (the `mentor-rl` TRL integration) and plain GRPO in TRL on the
    /// CPU, SmolLM2-135M on GSM8K training problems; checks the mentor step ran and prints
    /// both side by side (TRL venv pinned and hash-checked, created on first use).
    Trl {
        /// A tiny random model, one step per arm and credit mode, one process: the check to run
        /// before touching the trainer (under 3 minutes once the venvs exist).
        #[arg(long)]
        quick: bool,
        /// Which end of the supported TRL range: `both` (the default), `newest` (1.16) or
        /// `oldest` (1.15). On a CPU, trl 1.15.0's Triton log-prob kernel (launched whatever the
        /// device) is replaced in the check's process by the same function in torch ops
        /// (`bench/cpu_logprob.py`, checked against the model's own logits).
        #[arg(long, default_value = "both", value_parser = ["both", "newest", "oldest"])]
        trl: String,
        /// Extra arguments for `crates/mentor-python/bench/trl_mentor.py` (after `--`), e.g.
        /// `-- --steps 3 --credit in_context`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Test the `mentor-rl` verl plug-in (`mentor_rl.verl.MentorAgentLoopManager`, the MENTOR
    /// step inside verl 0.9's agent-loop workers) on the CPU: a scripted rollout server, a real
    /// TransferQueue, verl's GRPO advantages and rollout correction (verl venv pinned and
    /// hash-checked, created on first use). No GPU.
    Verl {
        /// Only the plug-in's tests (without verl's own CPU tests of what it relies on).
        #[arg(long)]
        quick: bool,
        /// Extra arguments for pytest (after `--`), e.g. `-- -k prefix`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Run a comparison benchmark against its peer (installed into a private venv).
    Bench {
        /// Which bench.
        #[arg(value_enum)]
        target: bench::Target,
        /// Extra arguments for the bench program (after `--`).
        #[arg(last = true)]
        args: Vec<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Setup => assets::setup().map(|_| ()),
        Command::Test { cargo_args } => test(&cargo_args),
        Command::Demo { full, args } => {
            let mut args = args;
            if full {
                args.insert(0, "--full".into());
            }
            demo(&args)
        }
        Command::Datasets { from, to } => datasets::install(from.as_deref(), to.as_deref()),
        Command::Lint => lint(),
        Command::Bench { target, args } => bench::run_bench(target, &args),
        Command::Rescue { mbpp, arith, heldout, probe, seeds, args } => {
            let mut args = args;
            let seeds = if heldout && seeds.is_empty() && !probe { vec![1, 2, 3, 4] } else { seeds };
            if !seeds.is_empty() {
                let list: Vec<String> = seeds.iter().map(u64::to_string).collect();
                args.extend(["--seeds".to_string(), list.join(",")]);
            }
            let preset = if mbpp {
                "rescue-mbpp-smollm2"
            } else if arith {
                "rescue-arith-smollm2"
            } else if heldout {
                "rescue-heldout-smollm2"
            } else {
                "rescue-gsm8k-smollm2"
            };
            rescue::rescue(preset, probe, &args)
        }
        Command::Experiment { which: _, sweep, arms, seeds, pool_only, args } => {
            experiment::experiment(&experiment::Plan {
                sweep,
                arms: &arms,
                seeds: &seeds,
                pool_only,
                extra: &args,
            })
        }
        Command::Trl { quick, trl, args } => {
            assets::setup().and_then(|dir| trl::run_trl(&dir, &trl::Which::parse(&trl), quick, &args))
        }
        Command::Verl { quick, args } => assets::setup().and_then(|dir| verl::run_verl(&dir, quick, &args)),
        Command::Python { bench } => assets::setup().and_then(|dir| python::run_command(&dir, bench)),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn test(extra: &[String]) -> Result<()> {
    let dir = assets::setup()?;
    eprintln!("==> cargo build --workspace --bins (the end-to-end tests run the real binaries)");
    process::run(process::cargo().args(["build", "--workspace", "--bins"]), "cargo build --bins")?;
    eprintln!("==> cargo test --workspace");
    let mut cmd = process::cargo();
    cmd.args(["test", "--workspace", "--all-targets"])
        .args(extra)
        .env(mentor_core::assets::HOME_VAR, dir.root());
    process::run(&mut cmd, "cargo test --workspace --all-targets")?;
    eprintln!("==> cargo test --workspace --doc");
    let mut cmd = process::cargo();
    cmd.args(["test", "--workspace", "--doc"]).env(mentor_core::assets::HOME_VAR, dir.root());
    process::run(&mut cmd, "cargo test --workspace --doc")?;
    eprintln!("==> Python bindings: build the mentor-rl wheel and run its tests (cargo xtask python)");
    let wheel = python::build_and_test(&dir)?;
    eprintln!("==> Python bindings: tests passed with {}", wheel.display());
    Ok(())
}

/// The demo needs no downloaded asset (its model is pretrained from scratch by the demo
/// itself), so there is no setup step: build the binary (dev profile, dependencies optimised,
/// sharing `cargo xtask test`'s build) and run it from the repository root, so the runs land
/// in `runs/demo/`.
fn demo(extra: &[String]) -> Result<()> {
    eprintln!("==> cargo build -p mentor-cli --bin mentor");
    process::run(process::cargo().args(["build", "-p", "mentor-cli", "--bin", "mentor"]), "cargo build")?;
    eprintln!("==> mentor demo {}", extra.join(" "));
    let mut cmd = process::cargo();
    cmd.args(["run", "-q", "-p", "mentor-cli", "--bin", "mentor", "--", "demo"]).args(extra);
    process::run(&mut cmd, "mentor demo")
}

fn lint() -> Result<()> {
    process::run(process::cargo().args(["fmt", "--all", "--", "--check"]), "cargo fmt --check")?;
    process::run(
        process::cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]),
        "cargo clippy",
    )
}
