//! `cargo xtask verl`: the `mentor-rl` package's verl plug-in (`mentor_rl.verl`'s
//! `MentorAgentLoopManager`, the MENTOR step inside verl's agent-loop workers) tested on the CPU.
//!
//! Creates a private venv from hash-pinned requirements on first use: PyTorch and its
//! neighbours from `crates/mentor-policy/bench/requirements.txt`, datasets/pandas/pyarrow from
//! `crates/mentor-trainer/bench/requirements-trl.txt` (without trl), and verl 0.9.1,
//! TransferQueue 0.1.11, Ray and the rest from `crates/mentor-python/bench/requirements-verl.txt`,
//! whose pins replace the other files' pins of the same names (verl 0.9.1 needs
//! transformers<5.11). Builds the wheel (`cargo xtask python`'s dev-profile build), installs it
//! beside the venv (`pip install --target`, so its `verl.plugins` entry point is seen), and runs
//! `crates/mentor-python/tests/verl_plugin` with pytest: a scripted rollout server, a real
//! TransferQueue (with Ray told of 4 CPUs: its controller and storage units ask for 3), verl's
//! replay buffer, GRPO advantages and rollout-correction weights. Without `--quick` it then runs
//! verl's own CPU tests (shipped in its wheel) of the parts the plug-in relies on: multi-
//! trajectory advantages, rollout correction and the agent-loop output schema.
//!
//! No GPU is used; `crates/mentor-python/bench/verl_gpu_smoke.sh` is the GPU check (not run here).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use mentor_core::assets::AssetDir;

use crate::process::{repo_root, run, run_quiet, target_dir};

/// The venv's name (changes with the pins: `venv::ensure` reinstalls when the merged file changes).
const VENV: &str = "verl-0.9.1-torch-2.15.0";

/// verl's own CPU tests run without `--quick` (paths inside its installed `tests` package).
const VERL_TESTS: [&str; 3] = [
    "tests/trainer/test_multi_trajectories_advantage_on_cpu.py",
    "tests/trainer/ppo/test_rollout_corr.py",
    "tests/experimental/agent_loop/test_agent_loop_extra_fields_schema_on_cpu.py",
];

/// The names pinned in a requirements file (the lines that are not comments or continuations).
fn pinned_names(requirements: &str) -> Vec<String> {
    requirements
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('\t') && !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split("==").next())
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// `base` without every requirement `over` pins too (and without `drop`), then `over`.
fn merged(base: &[&str], over: &str, drop: &[&str]) -> String {
    let mut names = pinned_names(over);
    names.extend(drop.iter().map(|s| s.to_string()));
    let mut out = Vec::new();
    for file in base {
        let mut text = file.to_string();
        for name in &names {
            text = crate::trl::without_requirement(&text, name);
        }
        out.push(text);
    }
    out.push(over.to_string());
    out.join("\n")
}

/// The hash-pinned verl venv (created on first use).
fn verl_venv(dir: &AssetDir) -> Result<PathBuf> {
    let read =
        |rel: &str| std::fs::read_to_string(repo_root().join(rel)).with_context(|| format!("reading {rel}"));
    let policy_req = read("crates/mentor-policy/bench/requirements.txt")?;
    let trl_req = read("crates/mentor-trainer/bench/requirements-trl.txt")?;
    let verl_req = read("crates/mentor-python/bench/requirements-verl.txt")?;
    eprintln!(
        "==> verl 0.9.1 + TransferQueue + Ray + PyTorch into a private venv (hash-checked; first time only)"
    );
    crate::venv::ensure(dir, VENV, &merged(&[&policy_req, &trl_req], &verl_req, &["trl"]))
}

/// Runs the plug-in's tests (and, without `quick`, verl's own tests of what it relies on).
pub fn run_verl(dir: &AssetDir, quick: bool, extra: &[String]) -> Result<()> {
    let venv = verl_venv(dir)?;
    let wheel = crate::python::build_wheel(dir)?;
    let site = target_dir().join("mentor-python").join("verl-site");
    if site.exists() {
        std::fs::remove_dir_all(&site).with_context(|| format!("cannot clear {}", site.display()))?;
    }
    let py = venv.join("bin/python");
    run_quiet(
        crate::python::pip_install_local(&py).arg("--target").arg(&site).arg(&wheel),
        "pip install --target of the wheel",
        "the wheel must be for this platform and Python (abi3, CPython >= 3.9)",
    )?;
    let tests = repo_root().join("crates/mentor-python/tests/verl_plugin");
    eprintln!("==> verl: the plug-in's CPU tests ({})", tests.display());
    run(pytest(&py, &site, &tests).arg(&tests).args(extra), "the verl plug-in tests")?;
    if !quick {
        let verl_site = crate::venv::site_packages(&venv)?;
        eprintln!(
            "==> verl: verl 0.9.1's own CPU tests of advantages, rollout correction, agent-loop outputs"
        );
        let mut cmd = pytest(&py, &site, &verl_site);
        cmd.arg("--asyncio-mode=auto");
        for t in VERL_TESTS {
            cmd.arg(verl_site.join(t));
        }
        run(&mut cmd, "verl's own CPU tests")?;
    }
    Ok(())
}

fn pytest(py: &Path, site: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new(py);
    cmd.args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"])
        .current_dir(cwd)
        .env("PYTHONPATH", site)
        // The plug-in's import-time checks must pass: no escape hatch in the check.
        .env_remove("MENTOR_RL_UNCHECKED_VERL");
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verl_pins_replace_the_shared_ones() {
        let policy =
            "# torch\ntorch==2.15.0 \\\n    --hash=sha256:aa\ntransformers==5.24.0 \\\n    --hash=sha256:bb";
        let trl = "datasets==5.2.0 \\\n    --hash=sha256:cc\ntrl==1.16.0 \\\n    --hash=sha256:dd";
        let verl =
            "# verl\ntransformers==5.9.0 \\\n    --hash=sha256:ee\nverl==0.9.1 \\\n    --hash=sha256:ff";
        assert_eq!(pinned_names(verl), ["transformers", "verl"]);
        let out = merged(&[policy, trl], verl, &["trl"]);
        assert_eq!(out.matches("transformers==").count(), 1);
        assert!(
            out.contains("transformers==5.9.0")
                && out.contains("torch==2.15.0")
                && out.contains("datasets==5.2.0")
        );
        assert!(!out.contains("trl==") && !out.contains("sha256:dd") && !out.contains("sha256:bb"));
    }

    #[test]
    fn the_requirements_file_pins_every_package_with_a_hash() {
        let text =
            std::fs::read_to_string(repo_root().join("crates/mentor-python/bench/requirements-verl.txt"))
                .unwrap();
        let names = pinned_names(&text);
        assert!(names.iter().any(|n| n == "verl") && names.iter().any(|n| n == "TransferQueue"));
        let mut lines = text.lines().filter(|l| !l.trim_start().starts_with('#')).peekable();
        while let Some(line) = lines.next() {
            if line.starts_with(' ') {
                continue;
            }
            assert!(line.contains("==") && line.ends_with('\\'), "{line}: not pinned with a hash");
            let next = lines.peek().copied().unwrap_or("");
            assert!(next.trim_start().starts_with("--hash=sha256:"), "{line}: no sha256");
        }
    }
}
