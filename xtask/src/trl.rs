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
//! TRL steps. The summary is written to `<target>/bench/trl_mentor-<1.15 or 1.16>.json`.
//!
//! It runs against both ends of the supported TRL range (`--trl oldest|newest|both`, default
//! both): trl 1.16.0 in the step bench's venv and trl 1.15.0 in a second venv with every other
//! pin the same (on a CPU, 1.15's Triton log-prob kernel, which it launches whatever the device,
//! is replaced in the script's process by torch ops: `bench/cpu_logprob.py`). Each run also
//! takes one step with `Mentor("self")`. `--quick` swaps SmolLM2 for a tiny random model (SmolLM2's tokenizer), one
//! step per arm and credit mode, one process: the check to run before touching the trainer.
//!
//! Then the multi-process check: the same script with `--processes 2` (two CPU processes under
//! `torch.distributed.run`, gloo, the threads split between them), where only the first
//! process's mentor hints, then one `Mentor("self")` step where only the first process has
//! groups to mentor. It fails unless every process made the same mentor and hinted generate calls
//! (the lockstep vLLM's gather and ZeRO-3 need) and the logged mentor counts are the sums over
//! the processes; its summary is `<target>/bench/trl_mentor_ddp-<version>.json`. `--processes 1` skips it.

use std::process::Command;

use anyhow::{Context, Result};
use mentor_core::assets::AssetDir;

use crate::bench_policy::set_threads;
use crate::process::target_dir;
use crate::process::{repo_root, run, run_quiet};

/// Which end of the supported TRL range a run uses.
pub enum Which {
    /// trl 1.16.0 (the step bench's venv).
    Newest,
    /// trl 1.15.0 (`crates/mentor-python/bench/requirements-trl-oldest.txt`).
    Oldest,
    /// Both, oldest first.
    Both,
}

impl Which {
    /// `newest`, `oldest`, or anything else: both.
    pub fn parse(s: &str) -> Which {
        match s {
            "newest" => Which::Newest,
            "oldest" => Which::Oldest,
            _ => Which::Both,
        }
    }
}

/// The venv name of the oldest supported TRL (sharing every other pin with the newest's).
const OLDEST_VENV: &str = "trl-1.15.0-torch-2.15.0";

/// `requirements` (a hash-pinned requirements file) without the block of `name==...` (its line
/// and the `--hash` continuation lines under it).
pub(crate) fn without_requirement(requirements: &str, name: &str) -> String {
    let mut out = Vec::new();
    let mut skipping = false;
    for line in requirements.lines() {
        let continuation = line.starts_with(' ') || line.starts_with('\t');
        if !continuation {
            skipping = line.split("==").next().is_some_and(|n| n.trim().eq_ignore_ascii_case(name));
        }
        if !skipping {
            out.push(line);
        }
    }
    out.join("\n")
}

/// The venv of the oldest supported TRL: the newest's pins with its `trl` replaced.
fn oldest_venv(dir: &AssetDir) -> Result<std::path::PathBuf> {
    let read =
        |rel: &str| std::fs::read_to_string(repo_root().join(rel)).with_context(|| format!("reading {rel}"));
    let policy_req = read("crates/mentor-policy/bench/requirements.txt")?;
    let trl_req = read("crates/mentor-trainer/bench/requirements-trl.txt")?;
    let oldest = read("crates/mentor-python/bench/requirements-trl-oldest.txt")?;
    eprintln!("==> trl 1.15.0 (the oldest supported) into a private venv, the other pins shared with 1.16's");
    crate::venv::ensure(
        dir,
        OLDEST_VENV,
        &format!("{policy_req}\n{}\n{oldest}", without_requirement(&trl_req, "trl")),
    )
}

/// Runs the check on each TRL of `which`; `quick`: the tiny-model check, one process, no peer
/// reward; `extra` goes to the script (e.g. `--steps 3 --credit in_context`).
pub fn run_trl(dir: &AssetDir, which: &Which, quick: bool, extra: &[String]) -> Result<()> {
    let mut venvs = Vec::new();
    if matches!(which, Which::Oldest | Which::Both) {
        venvs.push(("1.15", oldest_venv(dir)?));
    }
    if matches!(which, Which::Newest | Which::Both) {
        venvs.push(("1.16", crate::bench_step::trl_venv(dir)?));
    }
    let wheel = crate::python::build_wheel(dir)?;
    for (label, venv) in venvs {
        run_one(dir, label, &venv, &wheel, quick, extra)?;
    }
    Ok(())
}

/// The check with one TRL venv; its summaries are `<target>/bench/trl_mentor-<label>[-quick].json`.
fn run_one(
    dir: &AssetDir,
    label: &str,
    venv: &std::path::Path,
    wheel: &std::path::Path,
    quick: bool,
    extra: &[String],
) -> Result<()> {
    let site = target_dir().join("mentor-python").join(format!("trl-site-{label}"));
    if site.exists() {
        std::fs::remove_dir_all(&site).with_context(|| format!("cannot clear {}", site.display()))?;
    }
    let py = venv.join("bin/python");
    run_quiet(
        crate::python::pip_install_local(&py).arg("--target").arg(&site).arg(wheel),
        "pip install --target of the wheel",
        "the wheel must be for this platform and Python (abi3, CPython >= 3.9)",
    )?;
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
    let what = if quick { "the quick check (a tiny random model)" } else { "SmolLM2-135M" };
    eprintln!("==> trl {label}: MentorGRPOTrainer vs mentor=None ({what}, GSM8K train, {threads} threads)");
    let processes: usize = if quick {
        1
    } else {
        crate::bench_policy::flag_value(extra, "--processes")
            .unwrap_or("2")
            .parse()
            .context("--processes: expected a number")?
    };
    let suffix = if quick { "-quick" } else { "" };
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
        if quick {
            cmd.arg("--quick");
        }
        // `--processes` is this command's: the first run is one process.
        cmd.args(crate::bench_policy::without_flag(extra, "--processes"));
        set_threads(&mut cmd, threads_n);
        cmd
    };
    let summary = format!("trl_mentor-{label}{suffix}.json");
    let mut cmd = script(&summary);
    if !quick {
        let mv_req =
            std::fs::read_to_string(repo_root().join("crates/mentor-verify-math/bench/requirements.txt"))
                .context("reading crates/mentor-verify-math/bench/requirements.txt")?;
        eprintln!(
            "==> trl: Math-Verify 0.9.0 (pinned, hash-checked) in a private venv, timed as a peer reward"
        );
        let mv = crate::venv::ensure(dir, "math-verify-0.9.0", &mv_req)?;
        cmd.arg("--math-verify-site").arg(crate::venv::site_packages(&mv)?);
    }
    run(&mut cmd, &format!("the TRL {label} integration run"))?;
    eprintln!("==> trl {label}: summary in {}", out.join(&summary).display());
    if processes > 1 {
        eprintln!("==> trl {label}: the multi-process check ({processes} CPU processes, gloo; only the first one's mentor hints)");
        let ddp = format!("trl_mentor_ddp-{label}.json");
        let mut cmd = script(&ddp);
        cmd.args(["--processes", &processes.to_string(), "--also-credits", ""]);
        run(&mut cmd, "the multi-process TRL run")?;
        eprintln!("==> trl {label}: summary in {}", out.join(&ddp).display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requirement_and_its_hashes_are_dropped_and_nothing_else() {
        let req = "# pins\ndatasets==5.2.0 \\\n    --hash=sha256:aa\ntrl==1.16.0 \\\n    --hash=sha256:bb \\\n    --hash=sha256:cc\ntzdata==2026.6 \\\n    --hash=sha256:dd";
        let out = without_requirement(req, "trl");
        assert_eq!(
            out,
            "# pins\ndatasets==5.2.0 \\\n    --hash=sha256:aa\ntzdata==2026.6 \\\n    --hash=sha256:dd"
        );
        assert_eq!(without_requirement(req, "TRL"), out);
        assert_eq!(without_requirement(req, "numpy"), req);
    }
}
