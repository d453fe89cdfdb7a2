//! `mentor train`: one run from a config, with progress, Ctrl-C checkpointing and `--resume`.

use anyhow::{Context, Result};

pub use crate::cli::TrainArgs;
use mentor_trainer::config::{DataKind, TrainConfig};
use mentor_trainer::train::{train, TrainOptions};

/// Runs `mentor train`.
pub fn run(args: &TrainArgs) -> Result<()> {
    let cfg = TrainConfig::load(&args.config, &args.sets)
        .context("invalid configuration\nhint: see configs/*.toml for every field and its default")?;
    let stop = super::progress::stop_flag();
    let opts = TrainOptions {
        resume: args.resume,
        fork: args.fork,
        stop: Some(stop),
        allow_over_memory: args.allow_over_memory,
        start_eval: None,
    };
    let mut bar = super::progress::Bar::new(&cfg.run.name, cfg.total_steps(), cfg.run.progress);
    let code = matches!(cfg.data.kind, DataKind::Mbpp | DataKind::Humaneval);
    let summary = super::sandbox::with_code(code, cfg.data.code_reward, |v| {
        train(&cfg, &opts, v, &mut bar).with_context(|| format!("training run `{}` failed", cfg.run.name))
    });
    bar.finish();
    let summary = summary?;
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    }
    let evals: Vec<String> = summary
        .final_eval
        .iter()
        .map(|r| match (&r.set, r.level) {
            (Some(name), _) => format!("{name} {:.3}", r.pass1),
            (None, l) if l > 0 => format!("L{l} {:.3}", r.pass1),
            _ => format!("{:.3}", r.pass1),
        })
        .collect();
    eprintln!(
        "{}: {} steps in {:.0} s; unhinted pass@1 [{}]; interventions {}, rescued {}; mean ZRF {:.2} → {}",
        summary.name,
        summary.steps,
        summary.seconds,
        evals.join(", "),
        summary.interventions,
        summary.rescued,
        summary.mean_zrf,
        summary.dir.display()
    );
    if summary.interrupted {
        eprintln!(
            "interrupted: checkpoint saved\nhint: continue with `mentor train --config {} {}--resume{}`",
            args.config,
            args.sets.iter().map(|s| format!("--set '{s}' ")).collect::<String>(),
            if args.allow_over_memory { " --allow-over-memory" } else { "" }
        );
        std::process::exit(130);
    }
    Ok(())
}
