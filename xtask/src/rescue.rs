//! `cargo xtask rescue`: the rescue measurement on real failures (`mentor rescue` with the
//! GSM8K preset, the MBPP one with `--mbpp`, the arithmetic one at the learner's edge with
//! `--arith`; with `--probe`, `mentor probe` on the preset:
//! the search for the regime where the learner sometimes succeeds): 100 collapsed GSM8K problems,
//! about 40 min on 2 CPU cores with the current preset (one run of 2026-12-04, builds beside it;
//! the 12.5 min of docs/history.md was the preset before the 2026-12-03 probe). Builds the binaries as
//! `cargo xtask test` does (so the build is shared), then runs `mentor --threads 2 rescue`
//! from the repository root, so the results land in `runs/rescue-<set>-smollm2/`.

use std::time::Instant;

use anyhow::Result;

use crate::process::{cargo, repo_root, run, target_dir};

/// Runs the measurement (`mentor probe` with `probe`); `extra` goes to `mentor rescue` or
/// `mentor probe` (e.g. `--set rescue.collapsed=20`).
pub fn rescue(preset: &str, probe: bool, extra: &[String]) -> Result<()> {
    let assets = crate::assets::setup()?;
    eprintln!("==> cargo build --workspace --bins");
    run(cargo().args(["build", "--workspace", "--bins"]), "cargo build --bins")?;
    let bin = target_dir().join("debug").join(format!("mentor{}", std::env::consts::EXE_SUFFIX));
    let sub = if probe { "probe" } else { "rescue" };
    eprintln!("==> mentor --threads 2 {sub} --config {preset} {}", extra.join(" "));
    let t0 = Instant::now();
    let mut cmd = std::process::Command::new(bin);
    cmd.current_dir(repo_root())
        .args(["--threads", "2", sub, "--config", preset])
        .args(extra)
        .env(mentor_core::assets::HOME_VAR, assets.root());
    run(&mut cmd, &format!("mentor {sub}"))?;
    eprintln!("==> {sub} done in {:.1} min", t0.elapsed().as_secs_f64() / 60.0);
    Ok(())
}
