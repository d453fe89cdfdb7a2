//! `mentor experiment`: the runs of a training experiment (arms × seeds of one config) that
//! have no result file yet, each resumed from its last checkpoint when one exists, each
//! condensed into `<results>/<arm>-s<seed>.json` when it finishes; then every result file
//! pooled into `pooled.json` and `pooled.md` ([`crate::experiment`]).

use std::path::Path;

use anyhow::{Context, Result};

pub use crate::cli::ExperimentArgs;
use crate::config::{DataKind, TrainConfig};
use crate::experiment::{self, ResultFile, RunMeta};
use crate::train::{train, TrainOptions};

/// Runs `mentor experiment`.
pub fn run(args: &ExperimentArgs, threads: Option<usize>) -> Result<()> {
    std::fs::create_dir_all(&args.results)
        .with_context(|| format!("creating the results directory {}", args.results.display()))?;
    let stop = super::progress::stop_flag();
    if !args.pool_only {
        for arm in &args.arms {
            for &seed in &args.seeds {
                let file = args.results.join(experiment::file_name(arm, seed));
                if file.is_file() {
                    eprintln!(
                        "experiment: {arm} seed {seed} has its result ({}); not run again",
                        file.display()
                    );
                    continue;
                }
                one(args, arm, seed, &file, threads, &stop)?;
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    eprintln!("interrupted: the run's checkpoint is kept; run the same command to go on");
                    std::process::exit(130);
                }
            }
        }
    }
    let results = experiment::read_results(&args.results)
        .with_context(|| format!("reading the result files in {}", args.results.display()))?;
    if results.is_empty() {
        anyhow::bail!("no result file in {}\nhint: run without --pool-only", args.results.display());
    }
    let pooled = experiment::pool(&results, 2000, crate::seed::mix(&[0xe4e7, 0x5eed]));
    crate::jsonl::write_json(&args.results.join("pooled.json"), &pooled)?;
    let md = experiment::markdown(&pooled);
    crate::jsonl::write_atomic(&args.results.join("pooled.md"), md.as_bytes())?;
    print!("{md}");
    eprintln!(
        "experiment: {} result files pooled → {}",
        results.len(),
        args.results.join("pooled.md").display()
    );
    Ok(())
}

/// Trains one arm and seed (resuming its checkpoint if it has one) and writes its result file.
fn one(
    args: &ExperimentArgs,
    arm: &str,
    seed: u64,
    file: &Path,
    threads: Option<usize>,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<()> {
    let name = format!("{arm}-s{seed}");
    let run_dir = args.runs.join(&name);
    let mut sets = args.sets.clone();
    sets.extend([
        format!("strategy.arm=\"{arm}\""),
        format!("run.seed={seed}"),
        format!("run.name=\"{name}\""),
        format!("run.output_dir=\"{}\"", run_dir.display()),
    ]);
    let cfg = TrainConfig::load(&args.config, &sets)
        .with_context(|| format!("invalid configuration for {name}\nhint: see configs/*.toml"))?;
    let resume = crate::checkpoint::latest(&run_dir).ok().flatten().is_some();
    eprintln!("experiment: {name} → {}{}", run_dir.display(), if resume { " (resumed)" } else { "" });
    let opts = TrainOptions { resume, fork: false, stop: Some(stop.clone()), allow_over_memory: false };
    let mut bar = super::progress::Bar::new(&cfg.run.name, cfg.total_steps(), cfg.run.progress);
    let code = matches!(cfg.data.kind, DataKind::Mbpp | DataKind::Humaneval);
    let summary = super::sandbox::with_code(code, cfg.data.code_reward, |v| {
        train(&cfg, &opts, v, &mut bar).with_context(|| format!("training run `{name}` failed"))
    });
    bar.finish();
    let summary = summary?;
    if summary.interrupted {
        return Ok(());
    }
    let run = crate::report::load_run(&run_dir).with_context(|| format!("reading {}", run_dir.display()))?;
    let config_toml = std::fs::read_to_string(run_dir.join("config.toml")).unwrap_or_default();
    let meta = RunMeta {
        config_toml,
        commit: args.commit.clone(),
        cpu: experiment::cpu_model(),
        threads: threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
    };
    let result = ResultFile::of_run(&run, meta);
    crate::jsonl::write_json(file, &result)?;
    eprintln!("experiment: {name} done → {}", file.display());
    Ok(())
}
