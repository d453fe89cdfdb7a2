//! `cargo xtask trl`: `MentorGRPOTrainer` (the `mentor-rl` package's TRL integration) on the
//! CPU, against plain GRPO in the same run.
//!
//! Builds the wheel (`cargo xtask python`'s dev-profile build), unpacks it beside the
//! hash-pinned TRL venv that `cargo xtask bench step` uses (torch, transformers, trl,
//! accelerate; created on first use), and runs `crates/mentor-python/bench/trl_mentor.py`:
//! SmolLM2-135M-Instruct from the GGUF setup installs, on GSM8K training problems, a short GRPO
//! run with `mentor=Mentor("rules")` and the same run with `mentor=None`. The script checks
//! that collapsed groups were intervened on, hinted attempts sampled and scored, and the
//! mentor metrics logged; it prints the side-by-side table. In the vanilla run, Math-Verify
//! 0.9.0 (the hash-pinned venv `cargo xtask bench math` uses) scores the same completions as a
//! second reward function of weight 0, so the reward functions' seconds compare on the same
//! TRL steps. The summary is written to `<target>/bench/trl_mentor.json`.
//!
//! Then the multi-process check: the same script with `--processes 2` (two CPU processes under
//! `torch.distributed.run`, gloo, the threads split between them), where only the first
//! process's mentor hints. It fails unless every process made the same hinted generate calls
//! (the lockstep vLLM's gather and ZeRO-3 need) and the logged mentor counts are the sums over
//! the processes; its summary is `<target>/bench/trl_mentor_ddp.json`. `--processes 1` skips it.

use std::process::Command;

use anyhow::{Context, Result};
use mentor_core::assets::AssetDir;

use crate::bench_policy::{set_threads, target_dir};
use crate::process::{repo_root, run, run_quiet};

/// Runs the check; `extra` goes to the script (e.g. `--steps 3 --credit in_context`).
pub fn run_trl(dir: &AssetDir, extra: &[String]) -> Result<()> {
    let venv = crate::bench_step::trl_venv(dir)?;
    let wheel = crate::python::build_wheel(dir)?;
    let site = target_dir().join("mentor-python").join("trl-site");
    if site.exists() {
        std::fs::remove_dir_all(&site).with_context(|| format!("cannot clear {}", site.display()))?;
    }
    let py = venv.join("bin/python");
    run_quiet(
        crate::python::pip_install_local(&py).arg("--target").arg(&site).arg(&wheel),
        "pip install --target of the wheel",
        "the wheel must be for this platform and Python (abi3, CPython >= 3.9)",
    )?;
    let mv_req =
        std::fs::read_to_string(repo_root().join("crates/mentor-verify-math/bench/requirements.txt"))
            .context("reading crates/mentor-verify-math/bench/requirements.txt")?;
    eprintln!("==> trl: Math-Verify 0.9.0 (pinned, hash-checked) in a private venv, timed as a peer reward");
    let mv = crate::venv::ensure(dir, "math-verify-0.9.0", &mv_req)?;
    let mv_site = site_packages(&mv)?;
    let train = dir.datasets().join("gsm8k/train.jsonl");
    let train = if train.is_file() {
        train
    } else {
        mentor_core::assets::locate_datasets(|k| std::env::var(k).ok(), &repo_root())
            .map(|d| d.join("gsm8k/train.jsonl"))
            .filter(|p| p.is_file())
            .context("GSM8K train split not found: run `cargo xtask datasets`")?
    };
    let out = target_dir().join("bench");
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let threads = crate::bench_policy::flag_value(extra, "--threads").unwrap_or("2").to_string();
    let threads_n: usize = threads.parse().context("--threads: expected a number")?;
    eprintln!("==> trl: MentorGRPOTrainer vs mentor=None (SmolLM2-135M, GSM8K train, {threads} threads)");
    let processes: usize = crate::bench_policy::flag_value(extra, "--processes")
        .unwrap_or("2")
        .parse()
        .context("--processes: expected a number")?;
    let script = |out_file: &str| {
        let mut cmd = Command::new(&py);
        cmd.arg(repo_root().join("crates/mentor-python/bench/trl_mentor.py"))
            .arg("--gguf")
            .arg(dir.smollm2_gguf())
            .arg("--data")
            .arg(&train)
            .arg("--out")
            .arg(out.join(out_file))
            .env("PYTHONPATH", &site);
        if crate::bench_policy::flag_value(extra, "--threads").is_none() {
            cmd.args(["--threads", &threads]);
        }
        // `--processes` is this command's: the first run is one process.
        cmd.args(crate::bench_policy::without_flag(extra, "--processes"));
        set_threads(&mut cmd, threads_n);
        cmd
    };
    let mut cmd = script("trl_mentor.json");
    cmd.arg("--math-verify-site").arg(&mv_site);
    run(&mut cmd, "the TRL integration run")?;
    eprintln!("==> trl: summary in {}", out.join("trl_mentor.json").display());
    if processes > 1 {
        eprintln!("==> trl: the multi-process check ({processes} CPU processes, gloo; only the first one's mentor hints)");
        let mut cmd = script("trl_mentor_ddp.json");
        cmd.args(["--processes", &processes.to_string(), "--also-credits", ""]);
        run(&mut cmd, "the multi-process TRL run")?;
        eprintln!("==> trl: summary in {}", out.join("trl_mentor_ddp.json").display());
    }
    Ok(())
}

/// `<venv>/lib/python3.X/site-packages`.
fn site_packages(venv: &std::path::Path) -> Result<std::path::PathBuf> {
    let lib = venv.join("lib");
    let entries = std::fs::read_dir(&lib).with_context(|| format!("cannot read {}", lib.display()))?;
    entries
        .filter_map(|e| e.ok().map(|e| e.path().join("site-packages")))
        .find(|p| p.is_dir())
        .with_context(|| format!("no python*/site-packages under {}", lib.display()))
}
