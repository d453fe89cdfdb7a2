//! End-to-end tests: the real `mentor` binary on real files.

mod cli_experiment;
mod cli_generate;
mod cli_rescue;
mod cli_serve;
mod cli_tasks;
mod cli_train;
mod cli_train_limits;
mod cli_train_real;
mod cli_verify;
mod cli_verify_code;
mod demo_reproducible;
mod mentor_backends;

use std::path::PathBuf;

/// The shared benchmark data beside the repository (present in CI), or `$MENTOR_DATASETS`.
pub fn data_dir() -> PathBuf {
    mentor_core::datasets_dir!()
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

/// Starts `mentor --threads 2 serve --port 0 --model <model> <flags>` and waits for its
/// `listening on http://ADDR` line. Returns the child, the address and the rest of its stderr
/// (which the caller must keep draining, so the server never blocks on a full pipe).
pub fn spawn_serve(
    model: &std::path::Path,
    flags: &[&str],
) -> (std::process::Child, String, std::io::Lines<std::io::BufReader<std::process::ChildStderr>>) {
    use std::io::BufRead;
    let mut child = mentor()
        .args(["--threads", "2", "serve", "--host", "127.0.0.1", "--port", "0", "--model"])
        .arg(model)
        .args(flags)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start mentor serve");
    let mut lines = std::io::BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    let mut seen = String::new();
    loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(a) = line.strip_prefix("listening on http://") {
                    return (child, a.to_string(), lines);
                }
                seen.push_str(&line);
                seen.push('\n');
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("mentor serve exited before listening: {seen}");
            }
        }
    }
}
