//! Integration tests of mentor-verify-code: the real runtime component, the real datasets.
//!
//! The runtime comes from the asset directory (`MENTOR_HOME`, else the XDG/HOME cache) and must
//! have been built by `cargo xtask setup`; datasets from `MENTOR_DATASETS`, else the shared
//! copy beside the repository.

mod attacks;
mod cli;
mod datasets;
mod feedback;
mod honest;
mod sandbox;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use mentor_core::assets::AssetDir;
use mentor_core::{CodeFeedback, Feedback, Task, Verdict};
use mentor_verify_code::{CodeVerifier, Limits, Sandbox, SandboxConfig, VerifierConfig};

/// The shared sandbox (compiling the runtime once for the whole test binary).
pub fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        let assets = AssetDir::resolve(|k| std::env::var(k).ok())
            .expect("no asset directory: set MENTOR_HOME or HOME, then run `cargo xtask setup`");
        let config = SandboxConfig::from_assets(&assets);
        assert!(
            config.runtime.is_file(),
            "the Python runtime is missing at {}: run `cargo xtask setup`",
            config.runtime.display()
        );
        Sandbox::new(&config).unwrap_or_else(|e| panic!("sandbox: {e}"))
    })
}

/// Short limits for tests that are expected to hit them.
pub fn short_limits() -> Limits {
    Limits {
        cpu_time: Duration::from_millis(1500),
        wall_time: Duration::from_millis(3000),
        memory_bytes: 128 << 20,
        stdout_bytes: 16 << 10,
        stderr_bytes: 16 << 10,
    }
}

/// A verifier with the default (generous) limits.
pub fn verifier() -> CodeVerifier<'static> {
    CodeVerifier::new(sandbox(), VerifierConfig::default())
}

/// A verifier with [`short_limits`].
pub fn short_verifier() -> CodeVerifier<'static> {
    CodeVerifier::new(sandbox(), VerifierConfig { limits: Some(short_limits()), ..VerifierConfig::default() })
}

/// Where the benchmark datasets are.
pub fn datasets_dir() -> PathBuf {
    mentor_core::datasets_dir!()
}

/// The code feedback of a verdict.
pub fn code(v: &Verdict) -> &CodeFeedback {
    match v.feedback() {
        Feedback::Code(c) => c,
        other => panic!("not code feedback: {other:?}"),
    }
}

/// HumanEval tasks.
pub fn humaneval() -> Vec<Task> {
    let path = datasets_dir().join("humaneval/HumanEval.jsonl");
    mentor_core::datasets::load_humaneval(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
