//! `mentor verify code`: run code completions in the wasmtime sandbox, one JSON line per
//! record on stdout in input order, a summary on stderr.

use std::io::Write;

use anyhow::{Context, Result};
use mentor_core::assets::AssetDir;
use mentor_verify_code::cli::run_jsonl;
use mentor_verify_code::Format;
use mentor_verify_code::{CodeVerifier, Sandbox, SandboxConfig, VerifierConfig};

pub use crate::cli::VerifyCodeArgs;

/// Runs `mentor verify code`.
pub fn run(args: &VerifyCodeArgs) -> Result<()> {
    let format: Format = args.format.parse().map_err(|e| anyhow::anyhow!("--format: {e}"))?;
    let assets = AssetDir::resolve(|k| std::env::var(k).ok())
        .context("cannot locate the asset directory\nhint: set MENTOR_HOME")?;
    let config = SandboxConfig::from_assets(&assets);
    let sandbox = Sandbox::new(&config).with_context(|| {
        format!(
            "cannot start the code sandbox from {}\nhint: run `cargo xtask setup` to build the Python runtime",
            assets.python_runtime().display()
        )
    })?;
    let verifier = CodeVerifier::new(&sandbox, VerifierConfig::default());
    let input = super::verify::open_input(&args.input)?;
    let stdout = std::io::stdout();
    let out = std::io::BufWriter::new(stdout.lock());
    let summary = run_jsonl(input, out, format, &verifier)
        .with_context(|| format!("verifying {}", args.input.display()))?;
    let mut err = std::io::stderr().lock();
    if args.json {
        let json = serde_json::json!({
            "records": summary.records, "passed": summary.passed, "failed": summary.failed,
            "errors": summary.errors, "outcomes": summary.outcomes,
        });
        writeln!(err, "{json}")?;
    } else {
        writeln!(err, "{summary}")?;
    }
    super::verify::nothing_judged(summary.passed + summary.failed, summary.errors)
}
