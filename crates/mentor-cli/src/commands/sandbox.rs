//! The code verifier for runs with code tasks: the wasmtime sandbox when the binary has the
//! `code` feature, a clear error otherwise.

use anyhow::Result;
use mentor_core::Verifier;

use mentor_trainer::config::CodeReward;

/// Calls `f` with the code verifier when `needed` (starting the sandbox), else with `None`;
/// `reward` is the config's `data.code_reward`.
#[cfg(feature = "code")]
pub fn with_code<R>(
    needed: bool,
    reward: CodeReward,
    f: impl FnOnce(Option<&dyn Verifier>) -> Result<R>,
) -> Result<R> {
    use anyhow::Context;
    use mentor_core::assets::AssetDir;
    use mentor_verify_code::{CodeVerifier, RewardMode, Sandbox, SandboxConfig, VerifierConfig};
    if !needed {
        return f(None);
    }
    let assets = AssetDir::resolve(|k| std::env::var(k).ok())
        .context("cannot locate the asset directory\nhint: set MENTOR_HOME")?;
    let sandbox = Sandbox::new(&SandboxConfig::from_assets(&assets)).with_context(|| {
        format!(
            "cannot start the code sandbox from {}\nhint: run `cargo xtask setup` to build the Python runtime",
            assets.python_runtime().display()
        )
    })?;
    let reward = match reward {
        CodeReward::Binary => RewardMode::Binary,
        CodeReward::FractionPassed => RewardMode::FractionPassed,
    };
    let verifier = CodeVerifier::new(&sandbox, VerifierConfig { reward, ..VerifierConfig::default() });
    f(Some(&verifier))
}

/// Calls `f` without a code verifier; code tasks need the `code` feature.
#[cfg(not(feature = "code"))]
pub fn with_code<R>(
    needed: bool,
    _reward: CodeReward,
    f: impl FnOnce(Option<&dyn Verifier>) -> Result<R>,
) -> Result<R> {
    if needed {
        anyhow::bail!(
            "code tasks need the sandbox\nhint: build `mentor` with the `code` feature (the default)"
        );
    }
    f(None)
}
