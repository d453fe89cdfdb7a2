//! Command-line definitions (clap). Only subcommands that work are listed.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "mentor",
    version,
    about = "MENTOR: RLVR training that turns zero-reward collapse into guided on-policy attempts"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Load a benchmark file into MENTOR tasks and print them as JSON Lines.
    Tasks(TasksArgs),
    /// Check completions with a verifier, one JSON line per input.
    #[command(subcommand)]
    Verify(VerifyCommand),
}

/// `mentor verify <domain>`.
#[derive(Subcommand)]
pub enum VerifyCommand {
    /// Math answers: JSONL lines `{"id","gold","completion"}` in, `{"id","correct","extracted","feedback"}` out.
    Math(VerifyMathArgs),
    /// Code in the sandbox: JSONL records of the dataset's schema plus `completion` in,
    /// `{"id","passed","reward","feedback"}` out.
    Code(VerifyCodeArgs),
}

/// Arguments of `mentor verify code`.
#[derive(Args)]
pub struct VerifyCodeArgs {
    /// JSONL input file (`-` for stdin).
    #[arg(long)]
    pub input: PathBuf,
    /// Record schema: humaneval, mbpp or stdio.
    #[arg(long)]
    pub format: String,
    /// Print the closing summary as a JSON object (on stderr) instead of a text line.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mentor verify math`.
#[derive(Args)]
pub struct VerifyMathArgs {
    /// JSONL input file (`-` for stdin).
    #[arg(long)]
    pub input: PathBuf,
    /// Print the closing summary as a JSON object (on stderr) instead of a text line.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mentor tasks`.
#[derive(Args)]
pub struct TasksArgs {
    /// Which benchmark: gsm8k, math500, humaneval, mbpp, aime2024, amc2023.
    #[arg(long)]
    pub dataset: String,
    /// The file to load (default: the set's standard file under --data-dir).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Data directory laid out like `cargo xtask datasets` installs it
    /// (default: `$MENTOR_HOME/datasets`).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Print at most this many tasks.
    #[arg(long)]
    pub limit: Option<usize>,
}
