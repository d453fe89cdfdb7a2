//! Private Python virtual environments under the asset directory, installed from hash-pinned
//! requirements (`pip install --require-hashes`). Reused while the requirements are unchanged.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};
use mentor_core::assets::AssetDir;

use crate::hashing::sha256_parts;
use crate::process::{python, run_quiet};

/// Returns `<assets>/venvs/<name>` with `requirements` installed, creating or refreshing it
/// when the requirements changed (a stamp file records their hash).
/// What to do when Python or its venv module is missing.
pub(crate) const PY_HINT: &str = "install Python 3.9+ with the venv and pip modules (Debian: apt-get install python3-venv python3-pip), or point MENTOR_PYTHON at one; then rerun `cargo xtask setup`";
/// What to do when the package registry cannot be reached.
pub(crate) const NET_HINT: &str = "the Python package registry must be reachable (check the network or pip's proxy settings), then rerun `cargo xtask setup`";

pub fn ensure(dir: &AssetDir, name: &str, requirements: &str) -> Result<PathBuf> {
    let venv = dir.venvs().join(name);
    let marker = venv.join(".mentor-installed");
    let want = sha256_parts(&[requirements.as_bytes()]);
    if std::fs::read_to_string(&marker).is_ok_and(|m| m.trim() == want) {
        return Ok(venv);
    }
    eprintln!("      creating a private venv at {}", venv.display());
    if venv.exists() {
        std::fs::remove_dir_all(&venv).with_context(|| format!("cannot clear {}", venv.display()))?;
    }
    std::fs::create_dir_all(dir.venvs())?;
    run_quiet(Command::new(python()).arg("-m").arg("venv").arg(&venv), "python3 -m venv", PY_HINT)?;
    let req = venv.join("requirements.txt");
    std::fs::write(&req, requirements)?;
    eprintln!("      installing hash-pinned requirements into {name}");
    run_quiet(
        Command::new(venv.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--require-hashes",
                "-r",
            ])
            .arg(&req),
        &format!("pip install into {name}"),
        NET_HINT,
    )?;
    std::fs::write(&marker, &want)?;
    Ok(venv)
}

/// `<venv>/lib/python3.X/site-packages`.
pub fn site_packages(venv: &std::path::Path) -> Result<PathBuf> {
    let lib = venv.join("lib");
    let entries = std::fs::read_dir(&lib).with_context(|| format!("cannot read {}", lib.display()))?;
    entries
        .filter_map(|e| e.ok().map(|e| e.path().join("site-packages")))
        .find(|p| p.is_dir())
        .with_context(|| format!("no python*/site-packages under {}", lib.display()))
}
