//! `mentor demo`: the embedded default end to end.
//!
//! 1. Pretrain the tiny model on the curriculum once per pretraining seed (`--pretrain-seeds`,
//!    cached in `<out>/pretrained-p<seed>/` by a key of the settings that shape it; a rerun
//!    with the same settings reuses it).
//! 2. Per pretrained model and RL seed, a shared warm-up: vanilla GRPO on every phase but the
//!    last, checkpointed.
//! 3. Per pretrained model, RL seed and arm, a copy of that warm-up resumed with the arm
//!    through the jump: the arms of a run share the warm-up and the evaluation set (paired
//!    comparison).
//! 4. A report over all arm runs in `<out>/report/`.
//!
//! Steps 2–3 run as `mentor train` child processes with `--threads` tensor threads each (1 by
//! default), as many at a time as the cores hold; their logs are in each run's `log.txt`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::cli::DemoArgs;
use mentor_kernels::KernelPath;
use mentor_lab::report::{load_run, write_report, ReportSummary};
use mentor_tasks::curriculum::Phase;
use mentor_trainer::config::{Arm, TrainConfig};
use mentor_trainer::pretrain::{pretrain, probe, Corpus, ProbeCut, ProbeRow};
use mentor_trainer::train::prompts;

/// What `pretrained/meta.json` records.
#[derive(Debug, Serialize, Deserialize)]
struct PretrainMeta {
    key: String,
    loss: f64,
    seconds: f64,
    probe: Vec<ProbeRow>,
}

/// One `mentor train` child to run.
struct Job {
    name: String,
    dir: PathBuf,
    sets: Vec<String>,
    resume: bool,
    steps: usize,
    /// Copy this warm-up run into `dir` before starting.
    from: Option<PathBuf>,
}

/// Bumped whenever the code changes what pretraining produces from the same settings (the
/// curriculum's problems, the examples' layout), so a cached model from older code is not
/// reused. 2: ten columns withheld. 3: the draw of static-hinted examples
/// (`pretrain.static_fraction`), and the level-3 text as the marker.
const PRETRAIN_FORMAT: u32 = 3;

fn key_of(cfg: &TrainConfig) -> Result<String> {
    // What pretraining reads, not the RL schedule.
    let operands =
        (&cfg.curriculum.operands, &cfg.curriculum.full_operand_levels, &cfg.curriculum.ten_levels);
    let format = &cfg.strategy.intervention.hint_format;
    let shaping = (
        &cfg.model,
        &cfg.pretrain,
        operands,
        &cfg.mentor.prompts,
        format,
        env!("CARGO_PKG_VERSION"),
        PRETRAIN_FORMAT,
    );
    let text = serde_json::to_string(&shaping)?;
    Ok(format!("{:x}", Sha256::digest(text.as_bytes())))
}

fn phases_toml(phases: &[Phase]) -> String {
    let items: Vec<String> =
        phases.iter().map(|p| format!("{{ level = {}, steps = {} }}", p.level, p.steps)).collect();
    format!("[{}]", items.join(", "))
}

/// Copies a run directory (not its `final/` model nor its summary).
fn copy_run(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "final" || name == mentor_trainer::train::SUMMARY_FILE || name == "log.txt" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if src.is_dir() {
            copy_run(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).with_context(|| format!("copying {}", src.display()))?;
        }
    }
    Ok(())
}

/// Prints a line above the bars, or plainly when stderr is not a terminal (bars hidden).
fn say(mp: &MultiProgress, line: impl AsRef<str>) {
    if mp.is_hidden() {
        eprintln!("{}", line.as_ref());
    } else {
        let _ = mp.println(line.as_ref());
    }
}

fn count_lines(path: &Path) -> u64 {
    std::fs::read(path).map(|b| b.iter().filter(|&&c| c == b'\n').count() as u64).unwrap_or(0)
}

fn spawn(
    job: &Job,
    config: &str,
    base_sets: &[String],
    threads: usize,
    kernels: Option<KernelPath>,
) -> Result<Child> {
    if let Some(from) = &job.from {
        copy_run(from, &job.dir)?;
    } else {
        std::fs::create_dir_all(&job.dir)?;
    }
    let log = std::fs::File::create(job.dir.join("log.txt"))?;
    let exe = std::env::current_exe().context("cannot find the mentor binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("--threads").arg(threads.to_string());
    if let Some(k) = kernels {
        cmd.arg("--kernels").arg(k.name());
    }
    cmd.args(["train", "--config", config]);
    for s in base_sets.iter().chain(&job.sets) {
        cmd.arg("--set").arg(s);
    }
    if job.resume {
        // Each arm is a branch of the copied warm-up under its own arm, name and schedule.
        cmd.arg("--fork");
    }
    cmd.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
    cmd.spawn().with_context(|| format!("starting `mentor train` for {}", job.name))
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs `jobs` with at most `parallel` at a time, each with `threads` tensor threads, showing
/// one bar per running job.
fn run_jobs(
    jobs: Vec<Job>,
    parallel: usize,
    threads: usize,
    kernels: Option<KernelPath>,
    config: &str,
    base_sets: &[String],
    mp: &MultiProgress,
) -> Result<()> {
    let style = ProgressStyle::with_template("{prefix:>16} [{bar:30}] {pos}/{len} {elapsed_precise} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let mut queue: std::collections::VecDeque<Job> = jobs.into();
    let mut running: Vec<(Job, Child, ProgressBar, Instant)> = Vec::new();
    while !queue.is_empty() || !running.is_empty() {
        while running.len() < parallel.max(1) {
            let Some(job) = queue.pop_front() else { break };
            let child = spawn(&job, config, base_sets, threads, kernels)?;
            let pb = mp.add(ProgressBar::new(job.steps as u64));
            pb.set_style(style.clone());
            pb.set_prefix(job.name.clone());
            running.push((job, child, pb, Instant::now()));
        }
        std::thread::sleep(Duration::from_millis(300));
        let mut i = 0;
        while i < running.len() {
            let (job, child, pb, t0) = &mut running[i];
            pb.set_position(count_lines(&job.dir.join(mentor_trainer::train::METRICS_FILE)));
            match child.try_wait()? {
                None => i += 1,
                Some(status) => {
                    let secs = t0.elapsed().as_secs_f64();
                    pb.finish_and_clear();
                    if !status.success() {
                        let (job, _, _, _) = running.swap_remove(i);
                        for (_, other, _, _) in running.iter_mut() {
                            let _ = other.kill();
                        }
                        bail!(
                            "{} failed ({status}); the end of {}:\n{}",
                            job.name,
                            job.dir.join("log.txt").display(),
                            tail(&job.dir.join("log.txt"), 15)
                        );
                    }
                    say(mp, format!("{:>16} done in {secs:.0} s", job.name));
                    running.swap_remove(i);
                }
            }
        }
    }
    Ok(())
}

/// The directory of pretrained model `seed`.
fn pretrained_dir(out: &Path, seed: u64) -> PathBuf {
    out.join(format!("pretrained-p{seed}"))
}

/// Pretrains (or reuses) the starting model of `cfg.pretrain.seed`; returns its directory.
fn pretrained(cfg: &TrainConfig, out: &Path, mp: &MultiProgress) -> Result<PathBuf> {
    let dir = pretrained_dir(out, cfg.pretrain.seed);
    let key = key_of(cfg)?;
    let meta_path = dir.join("meta.json");
    if let Ok(text) = std::fs::read_to_string(&meta_path) {
        if let Ok(meta) = serde_json::from_str::<PretrainMeta>(&text) {
            if meta.key == key && dir.join("model.safetensors").is_file() {
                say(mp, format!("pretrained model reused from {} (loss {:.3})", dir.display(), meta.loss));
                return Ok(dir);
            }
        }
    }
    let t0 = Instant::now();
    let seed = cfg.pretrain.seed;
    let policy = mentor_trainer::policy::build(&cfg.model, seed)?;
    let p = prompts(cfg)?;
    let pb = mp.add(ProgressBar::new(cfg.pretrain.steps as u64));
    pb.set_style(
        ProgressStyle::with_template("{prefix:>16} [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_prefix(format!("pretrain p{seed}"));
    let mut cb = |s: usize, n: usize, l: f64| {
        pb.set_position(s as u64);
        pb.set_message(format!("loss {l:.3}"));
        if mp.is_hidden() && (s.is_multiple_of(100) || s == n) {
            eprintln!("pretrain step {s}/{n}: loss {l:.3}");
        }
    };
    let format = &cfg.strategy.intervention.hint_format;
    let corpus = Corpus { cfg: &cfg.pretrain, curriculum: &cfg.curriculum, prompts: &p, format };
    let loss = pretrain(&policy, &corpus, seed, &mut cb)?;
    pb.finish_and_clear();
    let hard = cfg.curriculum.schedule.last().map_or(4, |p| p.level);
    let mut levels: Vec<u32> = cfg.pretrain.unhinted_levels.clone();
    levels.push(hard);
    levels.sort_unstable();
    levels.dedup();
    let cuts = [
        ProbeCut::Lines(0),
        ProbeCut::Static,
        ProbeCut::Lines(1),
        ProbeCut::Lines(2),
        ProbeCut::BeforeTen,
        ProbeCut::ThroughTen,
    ];
    let probe = probe(
        &policy,
        &cfg.curriculum,
        &p,
        format,
        &levels,
        &cuts,
        100,
        0,
        cfg.sampling.max_new_tokens,
        cfg.sampling.temperature,
    )?;
    policy.save(&dir)?;
    let meta = PretrainMeta { key, loss, seconds: t0.elapsed().as_secs_f64(), probe };
    mentor_trainer::jsonl::write_json(&meta_path, &meta)?;
    say(
        mp,
        format!(
            "pretrained model {seed} in {:.0} s (loss {loss:.3}); probe (greedy / sampled accuracy):",
            meta.seconds
        ),
    );
    for r in &meta.probe {
        let at = r
            .fail_at_ten
            .map_or(String::new(), |f| format!("; {:.0}% of failures at the ten column", f * 100.0));
        say(mp, format!("  level {}, {}: {:.2} / {:.2}{at}", r.level, r.cut, r.accuracy, r.sampled));
    }
    Ok(dir)
}

/// Runs `mentor demo`.
pub fn run(args: &DemoArgs, threads: Option<usize>, kernels: Option<KernelPath>) -> Result<()> {
    let started = Instant::now();
    let cfg = TrainConfig::load(&args.config, &args.sets).context("invalid demo configuration")?;
    let out = args.out.clone().unwrap_or_else(|| cfg.run.output_dir.clone());
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mp = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let (pretrain_seeds, seeds) = if args.full {
        (vec![0, 1, 2], vec![0, 1, 2])
    } else {
        (args.pretrain_seeds.clone(), args.seeds.clone())
    };
    say(
        &mp,
        format!(
            "MENTOR demo: arms {} × pretrained models {:?} × seeds {:?}, schedule {} → {}",
            args.arms.iter().map(|a| a.name()).collect::<Vec<_>>().join(", "),
            pretrain_seeds,
            seeds,
            phases_toml(&cfg.curriculum.schedule),
            out.display()
        ),
    );
    let mut models = Vec::new();
    for &seed in &pretrain_seeds {
        let mut c = cfg.clone();
        c.pretrain.seed = seed;
        let dir = if cfg.pretrain.steps > 0 { Some(pretrained(&c, &out, &mp)?) } else { None };
        models.push(Model { seed, dir });
    }
    // `--threads` is each run's tensor threads (1 by default: small models gain more from
    // running arms side by side); as many runs at a time as the cores hold.
    let child_threads = threads.unwrap_or(1).max(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let parallel = args.jobs.unwrap_or((cores / child_threads).max(1));
    let mut base: Vec<String> = args.sets.clone();
    base.push("run.progress=false".into());
    base.push("pretrain.steps=0".into());
    let schedule = &cfg.curriculum.schedule;
    let warm: Vec<Phase> = schedule[..schedule.len().saturating_sub(1)].to_vec();
    let warm_steps: usize = warm.iter().map(|p| p.steps).sum();
    let total = cfg.total_steps();
    let warmups =
        if warm_steps > 0 { warmup_jobs(&out, &models, &seeds, &warm, warm_steps) } else { Vec::new() };
    let (arms, dirs) = arm_jobs(&out, &models, &seeds, &args.arms, total, warm_steps);
    remove_earlier_runs(&warmups)?;
    remove_earlier_runs(&arms)?;
    run_jobs(warmups, parallel, child_threads, kernels, &args.config, &base, &mp)?;
    run_jobs(arms, parallel, child_threads, kernels, &args.config, &base, &mp)?;
    let runs = dirs.iter().map(|d| load_run(d)).collect::<std::result::Result<Vec<_>, _>>()?;
    let report_dir = out.join("report");
    let summary =
        write_report(&runs, &report_dir, "MENTOR demo: zero-reward collapse after a difficulty jump")?;
    let summary_json = report_dir.join(mentor_trainer::jsonl::SUMMARY_FILE);
    mentor_trainer::jsonl::write_json(&summary_json, &summary.paired)?;
    let secs = started.elapsed().as_secs_f64();
    print_table(&summary);
    eprintln!(
        "\ndemo finished in {:.1} min; report: {}; summary: {}",
        secs / 60.0,
        summary.markdown.display(),
        summary_json.display()
    );
    if args.json {
        print_json(&summary, &summary_json, secs);
    }
    Ok(())
}

/// One pretrained model the runs start from: its seed and directory (`None`: no pretraining).
struct Model {
    seed: u64,
    dir: Option<PathBuf>,
}

impl Model {
    /// The sets every run on this model gets.
    fn sets(&self) -> Vec<String> {
        let mut sets = vec![format!("pretrain.seed={}", self.seed)];
        if let Some(d) = &self.dir {
            sets.push(format!("model.source={}", d.display()));
        }
        sets
    }
}

/// A run's name: `{what}-p{pretrained model}-s{RL seed}`.
fn run_name(what: &str, model: u64, seed: u64) -> String {
    format!("{what}-p{model}-s{seed}")
}

/// Fresh runs every time: removes what earlier demos left in these jobs' directories.
fn remove_earlier_runs(jobs: &[Job]) -> Result<()> {
    for d in jobs.iter().map(|j| &j.dir).filter(|d| d.exists()) {
        std::fs::remove_dir_all(d).with_context(|| format!("removing {}", d.display()))?;
    }
    Ok(())
}

/// One vanilla warm-up run per model and seed over the schedule's phases before the last.
fn warmup_jobs(out: &Path, models: &[Model], seeds: &[u64], warm: &[Phase], warm_steps: usize) -> Vec<Job> {
    let mut jobs = Vec::new();
    for m in models {
        for seed in seeds {
            let name = run_name("warmup", m.seed, *seed);
            let dir = out.join(&name);
            let mut sets = m.sets();
            sets.extend([
                format!("run.output_dir={}", dir.display()),
                format!("run.seed={seed}"),
                format!("run.name={name}"),
                "strategy.arm=vanilla".into(),
                format!("curriculum.schedule={}", phases_toml(warm)),
                "run.steps=0".into(),
            ]);
            jobs.push(Job { name, sets, dir, resume: false, steps: warm_steps, from: None });
        }
    }
    jobs
}

/// One run per model, seed and arm, resumed from its warm-up when there is one; with their
/// directories in the same order.
fn arm_jobs(
    out: &Path,
    models: &[Model],
    seeds: &[u64],
    arms: &[Arm],
    total: usize,
    warm_steps: usize,
) -> (Vec<Job>, Vec<PathBuf>) {
    let mut jobs = Vec::new();
    let mut dirs = Vec::new();
    for m in models {
        for seed in seeds {
            for arm in arms {
                let name = run_name(arm.name(), m.seed, *seed);
                let dir = out.join(&name);
                dirs.push(dir.clone());
                let mut sets = m.sets();
                sets.extend([
                    format!("run.output_dir={}", dir.display()),
                    format!("run.seed={seed}"),
                    format!("run.name={name}"),
                    format!("strategy.arm={arm}"),
                ]);
                jobs.push(Job {
                    name,
                    sets,
                    dir,
                    resume: warm_steps > 0,
                    steps: total,
                    from: (warm_steps > 0).then(|| out.join(run_name("warmup", m.seed, *seed))),
                });
            }
        }
    }
    (jobs, dirs)
}

/// The demo's table on stderr: per arm the final hard pass@1, its interval, the ZRF after
/// the jump and the interventions; then the paired differences.
fn print_table(summary: &ReportSummary) {
    let fmt = |a: &Option<mentor_lab::report::Agg>| {
        a.as_ref().map_or("–".to_string(), |a| format!("{:.3} ({:.3}–{:.3})", a.mean, a.min, a.max))
    };
    let pct = format!("{:.0}%", summary.paired.bootstrap.level * 100.0);
    eprintln!(
        "\n{:<22} {:>22} {:>22} {:>20} {:>6} {:>9} {:>6} {:>10}",
        "arm",
        "final hard pass@1",
        format!("mean [{pct} CI]"),
        "ZRF after jump",
        "interv",
        "hint tok",
        "own",
        "resc/100t"
    );
    // Per arm, the mean over its runs of a per-run cost figure (runs without it left out).
    let cost = |arm: &str, f: fn(&mentor_lab::report::paired::RunOutcome) -> Option<f64>, digits: usize| {
        let v: Vec<f64> = summary.paired.runs.iter().filter(|r| r.arm == arm).filter_map(f).collect();
        if v.is_empty() {
            "–".to_string()
        } else {
            format!("{:.digits$}", v.iter().sum::<f64>() / v.len() as f64)
        }
    };
    for row in &summary.table {
        let ci = summary.paired.arms.iter().find(|a| a.arm == row.arm).map_or("–".to_string(), |a| {
            mentor_lab::report::paired::mean_ci(a.mean_final_accuracy, a.ci_low, a.ci_high)
        });
        eprintln!(
            "{:<22} {:>22} {:>22} {:>20} {:>6} {:>9} {:>6} {:>10}",
            row.arm,
            fmt(&row.pass1),
            ci,
            fmt(&row.mean_zrf),
            row.interventions.as_ref().map_or("–".into(), |a| format!("{:.0}", a.mean)),
            cost(&row.arm, |r| r.hint_tokens, 1),
            cost(&row.arm, |r| r.self_written_fraction, 2),
            cost(&row.arm, |r| r.rescues_per_100_hint_tokens, 2),
        );
    }
    eprintln!(
        "  (interv: interventions per run; hint tok: tokens per hint shown; own: the share of a rescued \
         group's trained tokens the learner wrote; resc/100t: rescues per 100 hint tokens)"
    );
    for p in &summary.paired.paired {
        eprintln!(
            "  {} − {}: {} over {} paired run(s); ahead on {}, behind on {}",
            p.arm,
            p.versus,
            mentor_lab::report::paired::mean_ci(p.mean_difference, p.ci_low, p.ci_high),
            p.seeds,
            p.ahead,
            p.behind
        );
    }
}

/// `--json`: one line with the report's paths, the wall time and each arm's means.
fn print_json(summary: &ReportSummary, summary_json: &Path, secs: f64) {
    let rows: Vec<serde_json::Value> = summary
        .table
        .iter()
        .map(|r| {
            serde_json::json!({
                "arm": r.arm, "seeds": r.seeds,
                "pass1": r.pass1.as_ref().map(|a| a.mean),
                "mean_zrf": r.mean_zrf.as_ref().map(|a| a.mean),
                "interventions": r.interventions.as_ref().map(|a| a.mean),
                "rescue_rate": r.rescue_rate.as_ref().map(|a| a.mean),
            })
        })
        .collect();
    println!(
        "{}",
        serde_json::json!({
            "report": summary.markdown, "summary": summary_json, "seconds": secs, "arms": rows,
        })
    );
}
