//! The `mentor` command-line tool and, as later issues land, the training loop that wires
//! policy, verifiers, mentor and GRPO together.
//!
//! This crate orchestrates; it owns no algorithm. Every subcommand is a module under
//! [`commands`]; the clap definitions live in `cli`. Data goes to stdout, logs and progress
//! to stderr, and errors end with a `hint:` line when there is something to do about them.
#![deny(missing_docs)]

mod cli;
pub mod commands;

use std::process::ExitCode;

use clap::Parser;

/// Entry point of the `mentor` binary: parses arguments, runs the subcommand, reports errors.
pub fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    if let Some(n) = cli.threads {
        if let Err(e) = mentor_policy::threads::set_threads(n) {
            eprintln!("error: --threads {n}: {e}");
            return ExitCode::FAILURE;
        }
    }
    let result = match cli.command {
        cli::Command::Generate(args) => commands::generate::run(&args),
        cli::Command::Tasks(args) => commands::tasks::run(&args),
        cli::Command::Verify(cli::VerifyCommand::Math(args)) => commands::verify::math(&args),
        cli::Command::Verify(cli::VerifyCommand::Code(args)) => commands::verify_code::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
