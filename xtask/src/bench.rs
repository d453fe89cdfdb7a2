//! `cargo xtask bench <target>`: each crate's comparison bench, with its peer installed into a
//! private venv from hash-pinned requirements, run in release mode. The convention: Rust timing
//! programs are `[[bench]]` targets in their crate's `benches/` (criterion's or a plain `main`,
//! run by `cargo bench`), a Python peer lives in its crate's `bench/` with its hash-pinned
//! requirements, and this module orchestrates the two. Numbers go to stdout (the policy and step benches also write
//! `<target>/bench/policy_vs_torch.json` and `step_vs_trl.json`); copy them into `docs/PERFORMANCE.md`.

use anyhow::Result;
use clap::ValueEnum;

use crate::process::{cargo, repo_root, run};

/// What to benchmark.
#[derive(Clone, Copy, ValueEnum)]
pub enum Target {
    /// mentor-verify-math vs Math-Verify 0.9.0: agreement with labels and checks/s.
    Math,
    /// mentor-verify-code: HumanEval programs/min in the sandbox vs native `python3 -I -S`
    /// subprocesses, 1 and 2 workers, plus the compile-cache hit time.
    Code,
    /// mentor-policy vs PyTorch 2.15 + transformers 5.24 on the same SmolLM2 GGUF: generation
    /// tok/s at batch 1, 8, 32, trained tok/s, and the batch-1 memory-bandwidth bound, with the
    /// ratios (`--threads N` sets both sides' thread count; default: all cores).
    Policy,
    /// Whole GRPO steps of `mentor train` vs TRL 1.16's GRPOTrainer on the same workload
    /// (issue 20): median seconds per step split into generation, verification, update and
    /// other, peak RSS, `speedup=` and `memory_ratio=` on the last line. Flags: `--threads`,
    /// `--prompts`, `--group`, `--new-tokens`, `--steps`, `--warmup`, `--rounds`, `--seed`.
    Step,
    /// The machine's limits against the policy: FMA GFLOP/s (1 and all threads, AVX2 and
    /// AVX-512), read/copy bandwidth, the crate's small-batch product on weights in cache (1
    /// thread, all threads splitting each product, all threads each on its own), then SmolLM2
    /// decode at batch 1, 8, 32, 64, prefill of 32 x 128 and the update's forward + backward
    /// on 32 x 128, as fractions of those limits, and the matrix products alone of decode at
    /// batch 32 and of the update (same FLOPs, same kernels); the last line is `peak_gflops= decode32_frac= prefill_frac= update_frac=
    /// decode1_bw_frac=`. Flags: `--threads` (default 2), `--json`. Dev profile (as fast as
    /// release for the policy; shares the test build).
    Peak,
}

/// Runs the bench for `target`.
pub fn run_bench(target: Target, extra: &[String]) -> Result<()> {
    let dir = crate::assets::setup()?;
    match target {
        Target::Math => {
            let req = std::fs::read_to_string(
                repo_root().join("crates/mentor-verify-math/bench/requirements.txt"),
            )?;
            eprintln!("==> bench math: Math-Verify into a private venv");
            let venv = crate::venv::ensure(&dir, "math-verify-0.9.0", &req)?;
            let py = venv.join("bin/python");
            eprintln!("==> bench math: release build and run (both checkers, same cases, same run)");
            run(
                cargo()
                    .args(["bench", "-p", "mentor-verify-math", "--bench", "vs_mathverify", "--", "--python"])
                    .arg(py)
                    .args(extra),
                "the math bench",
            )
        }
        Target::Code => {
            eprintln!("==> bench code: release build and run (sandbox and native python in the same run)");
            run(
                cargo()
                    .args(["bench", "-p", "mentor-verify-code", "--bench", "sandbox_vs_native", "--"])
                    .env(mentor_core::assets::HOME_VAR, dir.root())
                    .args(extra),
                "the code bench",
            )
        }
        Target::Policy => crate::bench_policy::run(&dir, extra),
        Target::Step => crate::bench_step::run_step(&dir, extra),
        Target::Peak => {
            let threads = crate::bench_policy::flag_value(extra, "--threads").unwrap_or("2").to_string();
            let n: usize =
                threads.parse().map_err(|_| anyhow::anyhow!("--threads {threads} is not a count"))?;
            eprintln!("==> bench peak: the machine's limits and the policy against them ({n} threads)");
            let mut cmd = cargo();
            cmd.args(["bench", "--profile", "dev", "-p", "mentor-policy", "--bench", "peak", "--"])
                .args(crate::bench_policy::without_flag(extra, "--threads"))
                .args(["--threads", &threads])
                .env(mentor_core::assets::HOME_VAR, dir.root());
            crate::bench_policy::set_threads(&mut cmd, n);
            run(&mut cmd, "the peak bench")
        }
    }
}
