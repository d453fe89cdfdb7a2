//! `cargo xtask python`: builds the `mentor-rl` wheel (crates/mentor-python) with maturin and
//! runs the binding tests against it, installed into a fresh venv.
//!
//! maturin comes pinned and hash-checked (`crates/mentor-python/requirements-build.txt`) in a
//! private venv under the asset directory. The wheel is a dev-profile build in the workspace's
//! own target dir, so it reuses the artefacts `cargo build` / `cargo test` made (no release
//! build of wasmtime). The tests are `crates/mentor-python/tests/test_*.py`, run with the
//! standard library's `unittest` (no pytest, no torch) from outside the repository, so they
//! import the installed wheel and not the sources. The wheel's path is the last line printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use mentor_core::assets::AssetDir;

use crate::process::{python as python3, repo_root, run, run_quiet, target_dir};
use crate::venv::PY_HINT;

/// The private venv holding the pinned maturin (its name changes with the pin).
const VENV: &str = "maturin-1.16.0";
/// The crate, relative to the repository root.
const CRATE: &str = "crates/mentor-python";

/// Builds the wheel, runs the binding tests (and with `bench`, the comparison with
/// Math-Verify) and prints the wheel's path last.
pub fn run_command(dir: &AssetDir, bench: bool) -> Result<()> {
    let wheel = build_and_test(dir)?;
    if bench {
        bench_math(dir, &wheel)?;
    }
    println!("{}", wheel.display());
    Ok(())
}

/// `verify_math` from Python against Math-Verify in one process: Math-Verify from the
/// hash-pinned venv `cargo xtask bench math` uses, the wheel unpacked beside it with
/// `pip install --target` (the shared venv is left as its requirements say).
fn bench_math(dir: &AssetDir, wheel: &Path) -> Result<()> {
    let req = std::fs::read_to_string(repo_root().join("crates/mentor-verify-math/bench/requirements.txt"))
        .context("reading crates/mentor-verify-math/bench/requirements.txt")?;
    eprintln!("==> python bench: Math-Verify (pinned, hash-checked) in a private venv");
    let venv = crate::venv::ensure(dir, "math-verify-0.9.0", &req)?;
    let site = target_dir().join("mentor-python").join("bench-site");
    if site.exists() {
        std::fs::remove_dir_all(&site).with_context(|| format!("cannot clear {}", site.display()))?;
    }
    let py = venv.join("bin/python");
    run_quiet(
        pip_install_local(&py).arg("--target").arg(&site).arg(wheel),
        "pip install --target of the wheel",
        "the wheel must be for this platform and Python (abi3, CPython >= 3.9)",
    )?;
    eprintln!(
        "==> python bench: verify_math vs Math-Verify on the labelled cases (same inputs, same process)"
    );
    let mut cmd = Command::new(&py);
    cmd.current_dir(&site)
        .arg(repo_root().join(CRATE).join("bench/bench_vs_mathverify.py"))
        .arg(repo_root().join("crates/mentor-verify-math/tests/data/math_equiv_cases.jsonl"))
        .env("PYTHONPATH", &site);
    run(&mut cmd, "the verify_math bench")
}

/// Builds the wheel, installs it into a fresh venv and runs the binding tests there; returns
/// the wheel's path.
pub fn build_and_test(dir: &AssetDir) -> Result<PathBuf> {
    let wheel = build_wheel(dir)?;
    test_wheel(dir, &wheel)?;
    Ok(wheel)
}

pub(crate) fn build_wheel(dir: &AssetDir) -> Result<PathBuf> {
    let req = std::fs::read_to_string(repo_root().join(CRATE).join("requirements-build.txt"))
        .context("reading crates/mentor-python/requirements-build.txt")?;
    eprintln!("==> python: maturin (pinned, hash-checked) in a private venv");
    let venv = crate::venv::ensure(dir, VENV, &req)?;
    let out = target_dir().join("mentor-python").join("wheels");
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
    eprintln!("==> python: maturin build --profile dev (sharing {})", target_dir().display());
    let started = Instant::now();
    let mut cmd = Command::new(venv.join("bin/maturin"));
    cmd.current_dir(repo_root())
        .args(["build", "--profile", "dev", "--manifest-path"])
        .arg(repo_root().join(CRATE).join("Cargo.toml"))
        .arg("--out")
        .arg(&out)
        .arg("--interpreter")
        .arg(python3())
        .env("CARGO_TARGET_DIR", target_dir());
    run(&mut cmd, "maturin build")?;
    let wheel = single_wheel(&out)?;
    eprintln!("      built {} in {:.1} s", file_name(&wheel), started.elapsed().as_secs_f64());
    Ok(wheel)
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The one `.whl` maturin left in `out`.
fn single_wheel(out: &Path) -> Result<PathBuf> {
    let wheels: Vec<PathBuf> = std::fs::read_dir(out)
        .with_context(|| format!("maturin wrote no folder {}", out.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!("maturin wrote no wheel into {}", out.display()),
        more => bail!("maturin wrote {} wheels into {}; expected one", more.len(), out.display()),
    }
}

/// Installs `wheel` (without dependencies: it has none) into a fresh venv and runs the
/// binding tests with it.
/// `python -m pip install` of local files only: no index, no dependencies.
pub(crate) fn pip_install_local(py: &Path) -> Command {
    let mut cmd = Command::new(py);
    cmd.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-index"]);
    cmd
}

fn test_wheel(dir: &AssetDir, wheel: &Path) -> Result<()> {
    let venv = target_dir().join("mentor-python").join("test-venv");
    if venv.exists() {
        std::fs::remove_dir_all(&venv).with_context(|| format!("cannot clear {}", venv.display()))?;
    }
    eprintln!("==> python: fresh venv {}, pip install --no-deps {}", venv.display(), file_name(wheel));
    run_quiet(Command::new(python3()).arg("-m").arg("venv").arg(&venv), "python3 -m venv", PY_HINT)?;
    let py = venv.join("bin/python");
    run_quiet(
        pip_install_local(&py).arg(wheel),
        "pip install of the wheel",
        "the wheel must be for this platform and Python (abi3, CPython >= 3.9)",
    )?;
    let tests = repo_root().join(CRATE).join("tests");
    eprintln!("==> python: binding tests (python -m unittest, {})", tests.display());
    let started = Instant::now();
    let mut cmd = Command::new(&py);
    // Run from the venv, not the repository, so `import mentor_rl` finds the installed wheel.
    cmd.current_dir(&venv)
        .args(["-m", "unittest", "discover", "-v", "-p", "test_*.py", "-s"])
        .arg(&tests)
        .env(mentor_core::assets::HOME_VAR, dir.root())
        .env("MENTOR_REPO", repo_root());
    let mentor = target_dir().join("debug").join("mentor");
    if mentor.is_file() {
        // The CLI the verdicts are compared with (built by `cargo xtask test` before this).
        cmd.env("MENTOR_BIN", &mentor);
    } else {
        eprintln!("      note: {} not built; the CLI comparisons are skipped", mentor.display());
    }
    run(&mut cmd, "the binding tests")?;
    eprintln!("      binding tests passed in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
