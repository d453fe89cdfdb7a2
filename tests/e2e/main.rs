//! End-to-end tests: the real `mentor` binary on real files.

mod cli_generate;
mod cli_serve;
mod cli_tasks;
mod cli_train;
mod cli_train_real;
mod cli_verify;
mod cli_verify_code;
mod mentor_backends;

use std::path::PathBuf;

/// The shared benchmark data beside the repository (present in CI), or `$MENTOR_DATASETS`.
pub fn data_dir() -> PathBuf {
    if let Ok(d) = std::env::var("MENTOR_DATASETS") {
        return PathBuf::from(d);
    }
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets");
    assert!(shared.is_dir(), "benchmark data not found at {}: set MENTOR_DATASETS", shared.display());
    shared
}

/// The built `mentor` binary, found beside this test executable (`target/<profile>/`).
/// `cargo xtask test` builds every binary before the tests run.
pub fn mentor() -> std::process::Command {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
    let bin = profile_dir.join(format!("mentor{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.is_file(), "{} is missing: run `cargo build --bins` (cargo xtask test does)", bin.display());
    std::process::Command::new(bin)
}
