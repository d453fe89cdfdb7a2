//! The `mentor` binary: the command line over the library crates (`mentor-trainer` trains,
//! `mentor-lab` measures, `mentor-serve` serves, the verifiers verify). Each subcommand is a
//! module under `commands`; the clap definitions are `cli`.
//!
//! Data goes to stdout, logs and progress to stderr, and errors end with a `hint:` line
//! when there is something to do about them.

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

// mimalloc, tuned per subcommand below: commands that free and reallocate the same buffers
// (training) never purge freed memory; `rescue` and `serve`, whose buffers vary in shape,
// purge by resetting pages instead of decommitting them. Why, with the measurements:
// docs/PERFORMANCE.md ("Allocator and threads"). Wrapped
// in `Counted`, which counts live bytes for the reports beside the resident set size.
#[global_allocator]
static GLOBAL: mentor_trainer::live_bytes::Counted<mimalloc::MiMalloc> =
    mentor_trainer::live_bytes::Counted(mimalloc::MiMalloc);

/// `mi_option_purge_delay` in mimalloc.h (v2 and v3: after `eager_commit_delay` = 14, before
/// `use_numa_nodes` = 16); libmimalloc-sys names neither the option nor its value.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// `mi_option_purge_decommits` in mimalloc.h (v2 and v3: after `arena_eager_commit` = 4, before
/// `allow_large_os_pages` = 6).
const MI_OPTION_PURGE_DECOMMITS: libmimalloc_sys::mi_option_t = 5;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    tune_allocator(match cli.command {
        cli::Command::Rescue(_) | cli::Command::Probe(_) | cli::Command::Serve(_) => MemoryUse::Varying,
        _ => MemoryUse::Repeating,
    });
    run(cli)
}

/// Sets mimalloc's purge option for the subcommand's [`MemoryUse`], after the arguments are
/// parsed and before anything else runs. A purge delay or mode the user set
/// (`MIMALLOC_PURGE_DELAY`, `MIMALLOC_PURGE_DECOMMITS`, read by mimalloc itself) wins.
fn tune_allocator(memory: MemoryUse) {
    let (option, value, var) = match memory {
        // -1 = never purge freed memory.
        MemoryUse::Repeating => (MI_OPTION_PURGE_DELAY, -1, "MIMALLOC_PURGE_DELAY"),
        // 0 = purge by resetting (`MADV_FREE`), not by decommitting.
        MemoryUse::Varying => (MI_OPTION_PURGE_DECOMMITS, 0, "MIMALLOC_PURGE_DECOMMITS"),
    };
    if std::env::var_os(var).is_none() {
        // SAFETY: sets a process-wide integer option (no pointers). mimalloc reads both
        // options where it schedules or runs a purge, so setting them after the first
        // allocations (argument parsing) takes effect for all that follows.
        #[allow(unsafe_code)]
        unsafe {
            libmimalloc_sys::mi_option_set(option, value)
        };
    }
}

/// How a subcommand uses memory, which decides how the allocator is tuned ([`tune_allocator`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemoryUse {
    /// The same large buffers freed and allocated again at a high rate (training steps,
    /// evaluation, the demo, one-shot commands): keeping freed memory mapped is faster.
    Repeating,
    /// Long runs of differently shaped work (`rescue`: hundreds of generate calls of varying
    /// batch and length; `serve`: a long-lived process): freed memory should go back to the
    /// OS, or the process keeps growing.
    Varying,
}

/// Runs the parsed command: logging, thread pools and kernel path first, then the subcommand.
fn run(cli: cli::Cli) -> ExitCode {
    if let Err(e) = init_logging(cli.log_level.as_deref()) {
        eprintln!("error: --log-level: {e}");
        return ExitCode::FAILURE;
    }
    // candle sizes its element-wise pool (whose helper threads spin before they sleep) and
    // gemm's split from these variables, not from rayon's pool: without them a `--threads 1`
    // process still keeps a busy helper per core. The demo's runs are child processes with
    // `--threads 1` each (by default); the demo process itself pretrains in data-parallel
    // shards on every core (its fixed-order kernels run on rayon's pool, which the shards
    // share: a pool of one thread would serialise them).
    let per_process = cli.threads;
    // (candle's element-wise pool is not what they share: one thread, as the runs have.)
    if per_process.is_none()
        && matches!(cli.command, cli::Command::Demo(_))
        && std::env::var_os("CANDLE_NUM_THREADS").is_none()
    {
        std::env::set_var("CANDLE_NUM_THREADS", "1");
    }
    // After each element-wise op, candle's pool helpers spin 25,000 times before they sleep,
    // on cores that gemm's rayon workers need next: with 2 threads that was 7% of a SmolLM2
    // training step's CPU time, and a step 6% slower than with 300 (docs/PERFORMANCE.md).
    use mentor_kernels::{POOL_SPIN_LIMIT, POOL_SPIN_VAR};
    if std::env::var_os(POOL_SPIN_VAR).is_none() {
        std::env::set_var(POOL_SPIN_VAR, POOL_SPIN_LIMIT.to_string());
    }
    if let Some(n) = per_process {
        for var in ["RAYON_NUM_THREADS", "CANDLE_NUM_THREADS"] {
            if std::env::var_os(var).is_none() {
                std::env::set_var(var, n.to_string());
            }
        }
    }
    if let Some(path) = cli.kernels {
        if let Err(e) = mentor_kernels::set_kernel_path(path) {
            eprintln!("error: --kernels {}: {e}", path.name());
            return ExitCode::FAILURE;
        }
    }
    if let Some(n) = cli.threads {
        if let Err(e) = mentor_kernels::set_threads(n) {
            eprintln!("error: --threads {n}: {e}");
            return ExitCode::FAILURE;
        }
    }
    let result = match cli.command {
        cli::Command::Generate(args) => commands::generate::run(&args),
        cli::Command::Serve(args) => commands::serve::run(&args),
        cli::Command::Tasks(args) => commands::tasks::run(&args),
        cli::Command::Verify(cli::VerifyCommand::Math(args)) => commands::verify::math(&args),
        cli::Command::Verify(cli::VerifyCommand::Code(args)) => commands::verify_code::run(&args),
        cli::Command::Train(args) => commands::train::run(&args),
        cli::Command::Eval(args) => commands::eval::run(&args),
        cli::Command::Demo(args) => commands::demo::run(&args, cli.threads, cli.kernels),
        cli::Command::Report(args) => commands::report::run(&args),
        cli::Command::Rescue(args) => commands::rescue::run(&args),
        cli::Command::Probe(args) => commands::probe::run(&args),
        cli::Command::Experiment(args) => commands::experiment::run(&args, cli.threads),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Library `tracing` events on stderr: `--log-level`, else `RUST_LOG`, else `warn` (so the
/// LLM mentor's fallbacks and retries are seen).
fn init_logging(level: Option<&str>) -> std::result::Result<(), String> {
    use tracing_subscriber::EnvFilter;
    let filter = match level {
        Some(l) => EnvFilter::try_new(l).map_err(|e| format!("`{l}`: {e}"))?,
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init()
        .map_err(|e| e.to_string())
}
