//! `mentor experiment`: the runs of a training experiment (arms × seeds of one config) that
//! have no result file yet, each resumed from its last checkpoint when one exists, each
//! condensed into `<results>/<arm>-s<seed>.json` when it finishes; then every result file
//! pooled into `pooled.json`, `pooled.md` and the learning curves' SVGs
//! ([`mentor_lab::experiment`]). The step-0 evaluation is made once per seed
//! (`<results>/start/s<seed>.json`, committed with the results) and shared by its arms.

use std::path::Path;

use anyhow::{Context, Result};

pub use crate::cli::ExperimentArgs;
use mentor_lab::experiment::{self, ResultFile, RunMeta, StartFile};
use mentor_trainer::config::{DataKind, TrainConfig};
use mentor_trainer::eval::EvalRow;
use mentor_trainer::train::{start_eval, train, TrainOptions};

/// Runs `mentor experiment`.
pub fn run(args: &ExperimentArgs, threads: Option<usize>) -> Result<()> {
    // One Ctrl-C handler for the whole command (a process gets one): every run of a sweep
    // stops at its step's end with a checkpoint.
    let stop = super::progress::stop_flag();
    let Some(spec) = &args.sweep else {
        let md = one_experiment(args, threads, &stop)?;
        print!("{md}");
        return Ok(());
    };
    let (key, values) = spec
        .split_once('=')
        .map(|(k, v)| (k.trim(), v.split(',').map(str::trim).filter(|v| !v.is_empty()).collect::<Vec<_>>()))
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .with_context(|| {
            format!("--sweep `{spec}`: expected KEY=V1,V2,.. (e.g. grpo.learning_rate=3e-6,1e-5)")
        })?;
    if let Some(bad) =
        values.iter().find(|v| !v.chars().all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c)))
    {
        anyhow::bail!("--sweep value `{bad}`: each value names a directory, so letters, digits, `.`, `_`, `+`, `-` only");
    }
    if ["strategy.arm", "run.seed", "run.name", "run.output_dir"].contains(&key) {
        anyhow::bail!("--sweep {key}: the experiment sets it per run (sweep --arms or --seeds instead)");
    }
    let mut judged = Vec::new();
    for value in &values {
        let mut sub = args.clone();
        sub.results = args.results.join(value);
        sub.runs = args.runs.join(value);
        sub.sets.push(format!("{key}={value}"));
        eprintln!("experiment: sweep {key} = {value} → {}", sub.results.display());
        let has_results = sub.results.is_dir()
            && !experiment::read_results(&sub.results)
                .with_context(|| format!("reading {}", sub.results.display()))?
                .is_empty();
        if !args.pool_only || has_results {
            one_experiment(&sub, threads, &stop)?;
        }
        let results = if sub.results.is_dir() { experiment::read_results(&sub.results)? } else { Vec::new() };
        judged.push((value.to_string(), results));
    }
    let rows = experiment::sweep(&judged, &args.sweep_set, args.sweep_window);
    mentor_trainer::jsonl::write_json(&args.results.join("sweep.json"), &rows)?;
    let md = experiment::sweep_markdown(key, &args.sweep_set, args.sweep_window, &rows);
    mentor_trainer::jsonl::write_atomic(&args.results.join("sweep.md"), md.as_bytes())?;
    print!("{md}");
    eprintln!(
        "experiment: sweep of {key} over {} values → {}",
        values.len(),
        args.results.join("sweep.md").display()
    );
    Ok(())
}

/// The missing runs of one experiment (unless `--pool-only`), then every result file in
/// `args.results` pooled; returns the pooled table.
fn one_experiment(
    args: &ExperimentArgs,
    threads: Option<usize>,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<String> {
    std::fs::create_dir_all(&args.results)
        .with_context(|| format!("creating the results directory {}", args.results.display()))?;
    if !args.pool_only {
        for &seed in &args.seeds {
            let missing: Vec<&String> = args
                .arms
                .iter()
                .filter(|arm| {
                    let file = args.results.join(experiment::file_name(arm, seed));
                    if file.is_file() {
                        eprintln!(
                            "experiment: {arm} seed {seed} has its result ({}); not run again",
                            file.display()
                        );
                    }
                    !file.is_file()
                })
                .collect();
            let Some(first) = missing.first() else { continue };
            let start = start_rows(args, first, seed, threads)?;
            for arm in missing {
                let file = args.results.join(experiment::file_name(arm, seed));
                one(args, arm, seed, &file, threads, stop, &start)?;
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
    let templates = templates(args, &results);
    let pooled = experiment::pool(&results, &templates, 2000, mentor_trainer::seed::mix(&[0xe4e7, 0x5eed]));
    mentor_trainer::jsonl::write_json(&args.results.join("pooled.json"), &pooled)?;
    for (name, svg) in experiment::curves(&results)? {
        mentor_trainer::jsonl::write_atomic(&args.results.join(name), svg.as_bytes())?;
    }
    let md = experiment::markdown(&pooled);
    mentor_trainer::jsonl::write_atomic(&args.results.join("pooled.md"), md.as_bytes())?;
    eprintln!(
        "experiment: {} result files pooled → {}",
        results.len(),
        args.results.join("pooled.md").display()
    );
    Ok(md)
}

/// Each evaluated problem's template, for the sets whose problems name one (a generated
/// family's `meta.subject`), made again from the config for every seed the results have: the
/// sets are a function of the config and the seed. Where they cannot be made (say, no dataset
/// directory for a dataset set), the pooled table goes without template intervals and says why
/// here.
fn templates(args: &ExperimentArgs, results: &[ResultFile]) -> experiment::Templates {
    let mut out = experiment::Templates::new();
    let seeds: std::collections::BTreeMap<u64, &ResultFile> = results.iter().map(|r| (r.seed, r)).collect();
    for (seed, r) in seeds {
        let named = run_config(args, &r.arm, seed).and_then(|cfg| {
            // Only the config the runs were made under names their problems.
            let hash =
                experiment::config_hash(&toml::to_string_pretty(&cfg).context("writing the config as TOML")?);
            if hash != r.config_hash {
                anyhow::bail!("this config (hash {}) is not the runs' ({})", &hash[..12], r.config_hash);
            }
            mentor_trainer::train::load_tasks(&cfg)
                .with_context(|| format!("loading seed {seed}'s evaluation sets"))
        });
        match named {
            Ok(mentor_trainer::train::Tasks::Dataset { named, .. }) => {
                for (set, tasks) in named {
                    let names: Option<Vec<String>> = tasks.iter().map(|t| t.meta.subject.clone()).collect();
                    if let Some(names) = names.filter(|n| !n.is_empty()) {
                        out.entry(set).or_default().insert(seed, names);
                    }
                }
            }
            Ok(mentor_trainer::train::Tasks::Curriculum) => {}
            Err(e) => eprintln!("experiment: no template intervals for seed {seed}: {e:#}"),
        }
    }
    out
}

/// The config of one arm and seed, its run directory under `args.runs`.
fn run_config(args: &ExperimentArgs, arm: &str, seed: u64) -> Result<TrainConfig> {
    let name = format!("{arm}-s{seed}");
    let run_dir = args.runs.join(&name);
    let mut sets = args.sets.clone();
    sets.extend([
        format!("strategy.arm=\"{arm}\""),
        format!("run.seed={seed}"),
        format!("run.name=\"{name}\""),
        format!("run.output_dir=\"{}\"", run_dir.display()),
    ]);
    TrainConfig::load(&args.config, &sets)
        .with_context(|| format!("invalid configuration for {name}\nhint: see configs/*.toml"))
}

/// The step-0 evaluation of `seed`'s runs: read from `<results>/start/s<seed>.json` when it
/// was made under the same config, made (and written) otherwise. `arm`'s config stands for
/// every arm's: they differ only in what the hash leaves out.
fn start_rows(args: &ExperimentArgs, arm: &str, seed: u64, threads: Option<usize>) -> Result<Vec<EvalRow>> {
    let cfg = run_config(args, arm, seed)?;
    let hash = experiment::config_hash(&toml::to_string_pretty(&cfg).context("writing the config as TOML")?);
    let file = args.results.join("start").join(format!("s{seed}.json"));
    if file.is_file() {
        let start = StartFile::read(&file).with_context(|| format!("reading {}", file.display()))?;
        if start.config_hash != hash {
            anyhow::bail!(
                "{} was made under another config (hash {} here, {} there)\nhint: delete it to evaluate step 0 again, or run with the config it was made under",
                file.display(),
                &hash[..12],
                &start.config_hash[..start.config_hash.len().min(12)]
            );
        }
        eprintln!("experiment: seed {seed}'s step-0 evaluation read from {}", file.display());
        return Ok(start.rows);
    }
    eprintln!("experiment: evaluating seed {seed}'s starting model once for every arm");
    let mut bar = super::progress::Bar::new(&format!("start-s{seed}"), 0, cfg.run.progress);
    let t0 = std::time::Instant::now();
    let code = matches!(cfg.data.kind, DataKind::Mbpp | DataKind::Humaneval);
    let rows = super::sandbox::with_code(code, cfg.data.code_reward, |v| {
        start_eval(&cfg, v, &mut bar).with_context(|| format!("evaluating seed {seed}'s starting model"))
    });
    bar.finish();
    let start = StartFile {
        seed,
        config_hash: hash,
        commit: args.commit.clone(),
        cpu: experiment::cpu_model(),
        threads: threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        seconds: t0.elapsed().as_secs_f64(),
        rows: rows?,
    };
    std::fs::create_dir_all(args.results.join("start"))
        .with_context(|| format!("creating {}", args.results.join("start").display()))?;
    mentor_trainer::jsonl::write_json(&file, &start)?;
    Ok(start.rows)
}

/// Trains one arm and seed (resuming its checkpoint if it has one) and writes its result file.
fn one(
    args: &ExperimentArgs,
    arm: &str,
    seed: u64,
    file: &Path,
    threads: Option<usize>,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    start: &[EvalRow],
) -> Result<()> {
    let cfg = run_config(args, arm, seed)?;
    let name = cfg.run.name.clone();
    let run_dir = cfg.output_dir().to_path_buf();
    let resume = mentor_trainer::checkpoint::latest(&run_dir).ok().flatten().is_some();
    eprintln!("experiment: {name} → {}{}", run_dir.display(), if resume { " (resumed)" } else { "" });
    let opts = TrainOptions {
        resume,
        fork: false,
        stop: Some(stop.clone()),
        allow_over_memory: false,
        start_eval: Some(start.to_vec()),
    };
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
    let run =
        mentor_lab::report::load_run(&run_dir).with_context(|| format!("reading {}", run_dir.display()))?;
    let config_toml = std::fs::read_to_string(run_dir.join("config.toml")).unwrap_or_default();
    let meta = RunMeta {
        config_toml,
        commit: args.commit.clone(),
        cpu: experiment::cpu_model(),
        threads: threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
    };
    let result = ResultFile::of_run(&run, meta);
    mentor_trainer::jsonl::write_json(file, &result)?;
    // The result file holds what the experiment needs; the checkpoints (3.1 GB for a
    // SmolLM2 run) only served to resume it. Its final model stays.
    mentor_trainer::checkpoint::remove_finished(&run_dir)
        .with_context(|| format!("removing the finished run's checkpoints in {}", run_dir.display()))?;
    eprintln!("experiment: {name} done → {}", file.display());
    Ok(())
}
