//! Judge throughput on honest code: the 164 HumanEval canonical solutions and the 500 MBPP
//! test-split references, judged through [`CodeVerifier::verify_batch`], a few rounds each.
//! Prints the wall time per task for each set and round, and how many passed.
//!
//! ```text
//! cargo bench -p mentor-verify-code --bench judge_throughput -- [--rounds N] [--workers N] [--runtime PATH]
//! ```
//! `--runtime` judges with another build of the runtime component (to compare two builds of
//! the guest on the same machine in the same sitting); by default the asset directory's.

use std::time::Instant;

use mentor_core::assets::AssetDir;
use mentor_core::datasets::{load_humaneval, load_mbpp, MbppSplit};
use mentor_core::{Task, Verifier};
use mentor_verify_code::{CodeVerifier, Limits, Sandbox, SandboxConfig, VerifierConfig};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn main() -> BoxResult<()> {
    // A timing program: `cargo bench` runs it and passes `--bench`; `cargo test --all-targets`
    // runs it without, and then it only says how to run it, so the test suite times nothing.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("a timing program: run it with `cargo bench -p mentor-verify-code --bench judge_throughput [-- ARGS]`");
        return Ok(());
    }
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = arg(&args, "--rounds").and_then(|s| s.parse().ok()).unwrap_or(3);
    let workers: usize = arg(&args, "--workers").and_then(|s| s.parse().ok()).unwrap_or(1);
    let assets = AssetDir::resolve(|k| std::env::var(k).ok()).ok_or("set HOME or MENTOR_HOME")?;
    let mut config = SandboxConfig::from_assets(&assets);
    if let Some(runtime) = arg(&args, "--runtime") {
        config.runtime = runtime.into();
    }
    config.concurrency = workers;
    let sandbox = Sandbox::new(&config)?;
    let limits = Limits {
        cpu_time: std::time::Duration::from_secs(60),
        wall_time: std::time::Duration::from_secs(120),
        ..Limits::default()
    };
    let verifier = CodeVerifier::new(&sandbox, VerifierConfig { limits: Some(limits), ..Default::default() });
    let data = mentor_core::datasets_dir!();
    let sets: [(&str, Vec<Task>); 2] = [
        ("humaneval-164", load_humaneval(&data.join("humaneval/HumanEval.jsonl"))?),
        ("mbpp-500", load_mbpp(&data.join("mbpp/mbpp.jsonl"), MbppSplit::Test)?),
    ];
    println!("| set | round | workers | tasks | passed | ms per task |\n|---|---|---|---|---|---|");
    for (name, tasks) in &sets {
        let items: Vec<(&Task, &str)> =
            tasks.iter().map(|t| (t, t.reference_solution().unwrap_or(""))).collect();
        for round in 0..rounds {
            let t0 = Instant::now();
            let verdicts = verifier.verify_batch(&items);
            let ms = t0.elapsed().as_secs_f64() * 1e3 / items.len() as f64;
            let passed = verdicts.iter().filter(|v| matches!(v, Ok(v) if v.passed())).count();
            println!("| {name} | {round} | {workers} | {} | {passed} | {ms:.1} |", items.len());
        }
    }
    Ok(())
}
