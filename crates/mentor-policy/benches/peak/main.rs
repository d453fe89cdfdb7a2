//! `cargo xtask bench peak`: how close the policy comes to what this CPU can do. Measures the
//! machine's limits (FMA throughput on one thread and on all, AVX2 and AVX-512 where present;
//! read and copy bandwidth; the crate's own small-batch product, decode's kernel, on weights
//! that stay in cache, on one thread and on all), then SmolLM2-135M-Instruct in f32: decode tok/s at batch 1, 8,
//! 32 and 64, prefill of 32 × 128-token prompts, and the update's forward + backward on
//! 32 × 128 tokens, each as GFLOP/s and as a fraction of the measured peak (batch-1 decode also
//! as GB/s against the read bandwidth); then the matrix products alone, with the same FLOPs
//! and on the kernel each path runs them on: decode's at batch 32 (the crate's kernel; a
//! bound decode's fraction cannot pass on this machine) and the update's (gemm), so the table
//! shows how much of each is spent outside them. The FLOP model and bandwidth convention are
//! in `measure.rs`.
//!
//! Run: `cargo bench --profile dev -p mentor-policy --bench peak -- [--threads 2 --json --tiny]`
//! (the dev profile, as `mentor train` runs: the policy and its dependencies are optimised there,
//! as fast as a release build).
//! Prints the table, then the summary line; `--json` prints the whole report as one JSON object
//! instead of the table. `--tiny` measures a small random model (no assets; for tests).

// As the `mentor` binary and the policy bench: mimalloc, keeping freed pages.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../common/process.rs"]
mod process;

mod measure;

use mentor_core::assets::AssetDir;
use mentor_policy::{LoadOptions, ModelSource, Policy};

fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

fn value(name: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A timing program: `cargo bench` runs it and passes `--bench`; `cargo test --all-targets`
    // runs it without, and then it only says how to run it, so the test suite times nothing.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("a timing program: run it with `cargo bench -p mentor-policy --bench peak [-- ARGS]`");
        return Ok(());
    }
    process::tune();
    let threads = value("--threads").unwrap_or(2);
    mentor_kernels::set_threads(threads)?;
    let tiny = flag("--tiny");
    let sizes = if tiny { measure::Sizes::tiny() } else { measure::Sizes::full() };
    let policy = if tiny {
        measure::tiny_policy()?
    } else {
        let dir = AssetDir::resolve(|k| std::env::var(k).ok()).ok_or("no HOME to find assets")?;
        let path = dir.smollm2_gguf();
        if !path.is_file() {
            return Err(format!("{} missing: run `cargo xtask setup`", path.display()).into());
        }
        Policy::load(&ModelSource::Gguf(path), &LoadOptions::default())?
    };
    eprintln!("peak: measuring the machine's limits ({threads} threads)");
    let limits = measure::limits(threads, &sizes)?;
    eprintln!("peak: measuring the model ({} parameters)", policy.num_params());
    let report = measure::measure(&policy, limits, &sizes)?;
    if flag("--json") {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", report.table());
    }
    println!("{}", report.last_line());
    Ok(())
}
