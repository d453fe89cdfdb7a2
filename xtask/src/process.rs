//! Running external commands with errors that say what to install or retry.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The repository root (xtask lives one level below it).
pub fn repo_root() -> PathBuf {
    // `cargo xtask` (`cargo run`) sets CARGO_MANIFEST_DIR for the program it runs. Prefer that to
    // the value compiled in: one target dir shared by two checkouts (a CI clone beside a working
    // copy) can run an xtask binary built in the other checkout, which cargo does not rebuild
    // when the sources' paths moved but their contents did not.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}

/// Cargo's target directory (`$CARGO_TARGET_DIR`, relative to the repository, or
/// `<repo>/target`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { repo_root().join(p) })
        .unwrap_or_else(|| repo_root().join("target"))
}

/// `cargo` as invoked us, run in the repository root.
pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(repo_root());
    cmd
}

/// Runs a command inheriting stdio; fails with `what` and the exit status.
pub fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().with_context(|| format!("could not start {what} ({:?})", cmd.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Runs a command capturing its output; on failure the error carries stderr's tail and `hint`.
pub fn run_quiet(cmd: &mut Command, what: &str, hint: &str) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("could not start {what} ({:?})\nhint: {hint}", cmd.get_program()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("{what} failed ({}):\n{}\nhint: {hint}", out.status, tail.join("\n"));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The Python interpreter to use: `$MENTOR_PYTHON` or `python3`.
pub fn python() -> PathBuf {
    std::env::var_os("MENTOR_PYTHON").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("python3"))
}
