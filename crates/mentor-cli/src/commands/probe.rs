//! `mentor probe`: the learner's unhinted pass@1 over a grid ([`mentor_lab::probe`]), printed as a
//! table (or JSON) with a one-line summary on stderr.

use anyhow::{bail, Context, Result};

pub use crate::cli::ProbeArgs;
use mentor_lab::probe::ProbeOptions;
use mentor_trainer::config::{DataKind, TrainConfig};
use mentor_trainer::strata::PromptStyle;

/// Runs `mentor probe`.
pub fn run(args: &ProbeArgs) -> Result<()> {
    let cfg = TrainConfig::load(&args.config, &args.sets).context(
        "invalid configuration\nhint: start from the rescue-gsm8k-smollm2 or rescue-mbpp-smollm2 preset",
    )?;
    let mut prompts = Vec::new();
    for p in &args.prompts {
        prompts.push(match p.as_str() {
            "system" => PromptStyle::System,
            "few_shot" => PromptStyle::FewShot,
            other => bail!("--prompts: `{other}` is not a prompt style (allowed: system, few_shot)"),
        });
    }
    if !(args.minutes.is_finite() && args.minutes >= 0.0) {
        bail!("--minutes {}: give a number of minutes >= 0", args.minutes);
    }
    let opts = ProbeOptions {
        temperatures: args.temperatures.clone(),
        lengths: args.lengths.clone(),
        prompts,
        attempts: args.attempts,
        rounds: args.rounds.clone(),
        arith_steps: args.arith_steps,
        arith_seed: args.arith_seed,
        budget_seconds: args.minutes * 60.0,
        batch_rows: cfg.rescue.batch_rows,
        ..ProbeOptions::default()
    };
    opts.validate().map_err(anyhow::Error::msg).context("invalid probe options")?;
    let code = matches!(cfg.data.kind, DataKind::Mbpp | DataKind::Humaneval);
    let report = super::sandbox::with_code(code, cfg.data.code_reward, |v| {
        mentor_lab::probe::run(&cfg, v, &opts).context("the probe failed")
    })?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", mentor_lab::probe::report::table(&report));
    }
    eprintln!(
        "{} → {}",
        mentor_lab::probe::report::summary_line(&report),
        cfg.output_dir().join(mentor_lab::probe::report::MARKDOWN_FILE).display()
    );
    Ok(())
}
