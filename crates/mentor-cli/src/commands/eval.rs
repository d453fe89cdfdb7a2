//! `mentor eval`: unhinted evaluation of a model on a config's evaluation sets.

use anyhow::{Context, Result};

pub use crate::cli::EvalArgs;
use mentor_trainer::config::{DataKind, TrainConfig};
use mentor_trainer::train::{eval_sets, load_tasks, run_eval};

/// Runs `mentor eval`.
pub fn run(args: &EvalArgs) -> Result<()> {
    let mut cfg = TrainConfig::load(&args.config, &args.sets).context("invalid configuration")?;
    if let Some(m) = &args.model {
        cfg.model.source = mentor_trainer::config::ModelChoice::from(m.clone());
    }
    let policy = mentor_trainer::policy::build(&cfg.model, cfg.run.seed)
        .with_context(|| format!("cannot load the model `{}`", cfg.model.source))?;
    let tasks = load_tasks(&cfg)?;
    let sets = eval_sets(&cfg, &tasks);
    if sets.is_empty() {
        anyhow::bail!(
            "nothing to evaluate\nhint: set data.eval_tasks or [[eval.sets]] (datasets), or eval.levels (curriculum)"
        );
    }
    let code = matches!(cfg.data.kind, DataKind::Mbpp | DataKind::Humaneval);
    let rows = super::sandbox::with_code(code, cfg.data.code_reward, |v| {
        let verifier = mentor_trainer::verify::DomainVerifier::new(v);
        Ok(run_eval(&cfg, &policy, &verifier, &sets, 0)?)
    })?;
    for r in &rows {
        if args.json {
            println!("{}", serde_json::to_string(r)?);
        } else {
            let k = match (r.passk, r.meank) {
                (Some(p), Some(m)) => {
                    format!("  pass@{} {p:.3}  mean@{} {m:.3}  ({} samples)", r.k, r.k, r.samples)
                }
                _ => String::new(),
            };
            let level = match (&r.set, r.level) {
                (Some(name), _) => format!("{name}  "),
                (None, l) if l > 0 => format!("level {l}  "),
                _ => String::new(),
            };
            println!("{level}n {}  pass@1 {:.3}{k}", r.n, r.pass1);
        }
    }
    Ok(())
}
