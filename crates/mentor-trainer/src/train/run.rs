//! The run loop in its stages: [`start`] (a fresh run, a resume or a fork), [`Run::step`]
//! (sample → verify → the arm's strategy → GRPO update → records), checkpoints, and
//! [`Run::finish`] (final evaluation, the final model, `summary.json`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mentor_core::datasets::Dataset;
use mentor_core::Verifier;
use mentor_grpo::Updater;
use mentor_integration::Plugin;
use mentor_policy::Policy;

use super::arms::{prompts, strategy};
use super::evaluation::{eval_sets, run_eval};
use super::preflight;
use super::records::{
    read_totals, InterventionLine, RunInfo, SampleLine, StepRecord, StepTiming, Summary, EVAL_FILE,
    INTERVENTIONS_FILE, METRICS_FILE, RUN_FILE, SAMPLES_FILE, SUMMARY_FILE,
};
use super::tasks::{load_tasks, step_tasks, Refill, Tasks};
use crate::checkpoint;
use crate::config::{DataKind, TrainConfig};
use crate::error::{Error, Result};
use crate::eval::EvalRow;
use crate::jsonl::{truncate_to_step, write_json, JsonlWriter};
use crate::rollout::{score, PolicyRollout};
use crate::update::grpo_step;
use crate::verify::DomainVerifier;
use mentor_tasks::curriculum;

/// How to run.
#[derive(Debug, Clone, Default)]
pub struct TrainOptions {
    /// Continue from the newest checkpoint in the output directory, with the run's own
    /// configuration (anything but [`crate::config::RESUMABLE_KEYS`] differing is an error).
    pub resume: bool,
    /// Continue from the newest checkpoint in the output directory under this (possibly
    /// different) configuration: a branch of the run, relabelled as `cfg` says.
    pub fork: bool,
    /// Set (by a Ctrl-C handler) to stop after the current step with a checkpoint.
    pub stop: Option<Arc<AtomicBool>>,
    /// Start even when the memory estimate exceeds the machine's available memory.
    pub allow_over_memory: bool,
    /// The step-0 evaluation made once for every arm of a seed ([`start_eval`]): written to
    /// `eval.jsonl` in place of evaluating at step 0. Each row must be of one of the run's
    /// sets, in order (its name, level and size), or the step is an error.
    pub start_eval: Option<Vec<EvalRow>>,
}

/// Progress reporting of [`train`]: called after each step and each evaluation.
pub trait Progress {
    /// A step finished.
    fn step(&mut self, record: &StepRecord, total: usize);
    /// An evaluation finished.
    fn eval(&mut self, rows: &[EvalRow]);
    /// Something to say (pretraining, checkpoints).
    fn note(&mut self, message: &str);
}

/// Trains as `cfg` says; `code` verifies code tasks (None: math only).
pub fn train(
    cfg: &TrainConfig,
    opts: &TrainOptions,
    code: Option<&dyn Verifier>,
    progress: &mut dyn Progress,
) -> Result<Summary> {
    let mut run = start(cfg, opts, code, progress)?;
    while run.step < run.total {
        run.step(progress)?;
        let stop = opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst));
        let every = cfg.run.checkpoint_every;
        if stop || run.step == run.total || (every > 0 && run.step.is_multiple_of(every)) {
            run.checkpoint()?;
        }
        if stop && run.step < run.total {
            progress.note(&format!("stopped at step {}; checkpoint saved", run.step));
            return run.finish(true, progress);
        }
    }
    run.finish(false, progress)
}

/// The run's append-only records.
struct Logs {
    metrics_path: PathBuf,
    metrics: JsonlWriter,
    evals: JsonlWriter,
    interventions: JsonlWriter,
    samples: JsonlWriter,
}

impl Logs {
    /// The files of the run in `out`, cut back to `step` (a resume: lines of steps after the
    /// checkpoint were not covered by it and are done again).
    fn open(out: &Path, resumed_at: Option<usize>) -> Result<Self> {
        let metrics_path = out.join(METRICS_FILE);
        let paths =
            [metrics_path.clone(), out.join(EVAL_FILE), out.join(INTERVENTIONS_FILE), out.join(SAMPLES_FILE)];
        if let Some(step) = resumed_at {
            for p in &paths {
                truncate_to_step(p, step)?;
            }
        }
        let [m, e, i, s] = paths;
        Ok(Self {
            metrics_path,
            metrics: JsonlWriter::append(&m)?,
            evals: JsonlWriter::append(&e)?,
            interventions: JsonlWriter::append(&i)?,
            samples: JsonlWriter::append(&s)?,
        })
    }
}

/// A run in progress: everything a step needs, and the step it is at.
pub struct Run<'a> {
    cfg: &'a TrainConfig,
    out: PathBuf,
    started: Instant,
    tasks: Tasks,
    sets: Vec<super::EvalSet>,
    verifier: DomainVerifier<'a>,
    policy: Arc<Policy>,
    reference: Option<Policy>,
    updater: Updater,
    plugin: Plugin,
    fallbacks: Option<Arc<mentor_agents::llm::FallbackCounter>>,
    logs: Logs,
    start_eval: Option<Vec<EvalRow>>,
    /// The next step to run (0-based).
    pub step: usize,
    /// Steps the run is to take.
    pub total: usize,
}

/// Starts a run as `cfg` and `opts` say: checks a resume or fork against the run directory,
/// loads the tasks, builds the policy (or restores it with the optimizer and plug-in state
/// from the newest checkpoint), checks every length against the model's context and the
/// memory estimate against the machine (printing it through `progress`) — all before anything
/// is written, so a mistake leaves no directory — then writes `config.toml` and `run.json` and
/// pretrains a fresh policy when the config asks.
pub fn start<'a>(
    cfg: &'a TrainConfig,
    opts: &TrainOptions,
    code: Option<&'a dyn Verifier>,
    progress: &mut dyn Progress,
) -> Result<Run<'a>> {
    let started = Instant::now();
    // Before any tensor op, a resumed model's included (`crate::policy::build` sets it too).
    mentor_kernels::set_deterministic(cfg.model.deterministic);
    let out = cfg.output_dir().to_path_buf();
    let total = cfg.total_steps();
    let continuing = opts.resume || opts.fork;
    if continuing {
        check_resumable(cfg, &out, opts.fork)?;
    }
    let tasks = load_tasks(cfg)?;
    if matches!(&tasks, Tasks::Dataset { train, .. } if train.is_empty()) {
        return Err(Error::Config {
            file: "data.train".into(),
            message: match cfg.data.train_spec() {
                Ok(Some(spec)) => format!("{spec} holds no training tasks"),
                _ => format!(
                    "{} is evaluation-only: it has no training split\nhint: set data.train to a training file, or use `mentor eval`",
                    cfg.data.kind.dataset().map_or("the curriculum", Dataset::name)
                ),
            },
        });
    }
    let resumed = if continuing {
        match checkpoint::latest(&out)? {
            Some(dir) => Some(checkpoint::load(&dir)?),
            None => {
                return Err(Error::Checkpoint {
                    path: out.join("checkpoints"),
                    message: "no checkpoint to resume from".into(),
                })
            }
        }
    } else {
        if out.join(METRICS_FILE).exists() || out.join("checkpoints").exists() {
            return Err(Error::Config {
                file: "run.output_dir".into(),
                message: format!(
                    "{} already holds a run\nhint: pass --resume to continue it, or choose another run.output_dir",
                    out.display()
                ),
            });
        }
        None
    };
    // The model, then the checks that need it, all before anything is written: a length that
    // does not fit its context, or a run that does not fit the machine, leaves no directory.
    let (policy, step, opt_state, plugin_state) = match resumed {
        Some(l) => {
            progress.note(&format!("resuming from {} at step {}", l.dir.display(), l.state.step));
            (l.policy, l.state.step, Some(l.optimizer), Some(l.state.plugin))
        }
        None => (crate::policy::build(&cfg.model, cfg.run.seed)?, 0, None, None),
    };
    let sets = eval_sets(cfg, &tasks);
    let budget = preflight::prompt_budget(cfg, &policy, &tasks, &sets)?;
    preflight::check_lengths(cfg, &policy, &budget)?;
    let memory = preflight::memory_check(cfg, &policy, &budget, &sets, !continuing)?;
    progress.note(&memory.line());
    memory.enforce(opts.allow_over_memory)?;

    std::fs::create_dir_all(&out).map_err(Error::io(&out))?;
    write_run_files(cfg, &out)?;
    if !continuing {
        pretrain_policy(cfg, &policy, progress)?;
    }
    let logs = Logs::open(&out, continuing.then_some(step))?;
    let policy = Arc::new(policy);
    let reference = if cfg.grpo.beta != 0.0 {
        Some(kl_reference(&out, &policy, continuing && !opts.fork, progress)?)
    } else {
        None
    };
    let vars = policy.vars().into_iter().map(|(_, v)| v).collect();
    let mut updater = Updater::new(cfg.grpo_config(), vars, total)?;
    if let Some(s) = opt_state {
        updater.optimizer_mut().restore(s)?;
    }
    let built = strategy(cfg, &policy)?;
    let mut plugin = Plugin::new(built.strategy, cfg.strategy.monitor.clone());
    if let Some(s) = plugin_state {
        plugin.restore(s);
    }
    Ok(Run {
        cfg,
        out,
        started,
        tasks,
        sets,
        verifier: DomainVerifier::new(code),
        policy,
        reference,
        updater,
        plugin,
        fallbacks: built.fallbacks,
        logs,
        start_eval: opts.start_eval.clone(),
        step,
        total,
    })
}

/// The step-0 evaluation of `cfg`'s run, made apart from any run: the model the run starts
/// from (built from `run.seed`, pretrained when `pretrain.steps > 0`, exactly as [`start`]
/// makes it) evaluated on the run's sets. The arms of one seed start from the same model and
/// are evaluated on the same sets with the same seeds, so one such evaluation stands for
/// each of them ([`TrainOptions::start_eval`]).
pub fn start_eval(
    cfg: &TrainConfig,
    code: Option<&dyn Verifier>,
    progress: &mut dyn Progress,
) -> Result<Vec<EvalRow>> {
    mentor_kernels::set_deterministic(cfg.model.deterministic);
    let tasks = load_tasks(cfg)?;
    let policy = crate::policy::build(&cfg.model, cfg.run.seed)?;
    let sets = eval_sets(cfg, &tasks);
    let budget = preflight::prompt_budget(cfg, &policy, &tasks, &sets)?;
    preflight::check_lengths(cfg, &policy, &budget)?;
    pretrain_policy(cfg, &policy, progress)?;
    let rows = run_eval(cfg, &policy, &DomainVerifier::new(code), &sets, 0)?;
    progress.eval(&rows);
    Ok(rows)
}

/// Shared step-0 rows, checked against the run's own sets: one per set, in order, each of
/// the set's name, level and size.
fn check_start_rows(rows: Vec<EvalRow>, sets: &[super::EvalSet]) -> Result<Vec<EvalRow>> {
    let fits = rows.len() == sets.len()
        && rows
            .iter()
            .zip(sets)
            .all(|(r, s)| r.step == 0 && r.set == s.name && r.level == s.level && r.n == s.tasks.len());
    if fits {
        Ok(rows)
    } else {
        let names = |it: Vec<String>| it.join(", ");
        Err(Error::Config {
            file: "start evaluation".into(),
            message: format!(
                "its rows ({}) are not this run's step-0 sets ({})\nhint: delete the start evaluation file so it is made again under this config",
                names(rows.iter().map(|r| format!("{:?}/{}/{}", r.set, r.level, r.n)).collect()),
                names(sets.iter().map(|s| format!("{:?}/{}/{}", s.name, s.level, s.tasks.len())).collect()),
            ),
        })
    }
}

/// `config.toml` (the resolved configuration, for resume checks) and `run.json` (for the
/// report).
fn write_run_files(cfg: &TrainConfig, out: &Path) -> Result<()> {
    let config_text = toml::to_string_pretty(cfg)
        .map_err(|e| Error::Config { file: "config".into(), message: e.to_string() })?;
    crate::jsonl::write_atomic(&out.join("config.toml"), config_text.as_bytes())?;
    let curriculum = cfg.data.kind == DataKind::Curriculum;
    let schedule = &cfg.curriculum.schedule;
    let info = RunInfo {
        name: cfg.run.name.clone(),
        arm: cfg.strategy.arm.name().into(),
        seed: cfg.run.seed,
        preset: format!("{:?}", cfg.data.kind).to_lowercase(),
        jump_step: (curriculum && schedule.len() > 1)
            .then(|| schedule[..schedule.len() - 1].iter().map(|p| p.steps).sum()),
        hard_level: if curriculum { schedule.last().map(|p| p.level) } else { None },
        pretrain_seed: curriculum.then_some(cfg.pretrain.seed),
    };
    write_json(&out.join(RUN_FILE), &info)
}

/// Pretrains a fresh run's model when `pretrain.steps > 0`.
fn pretrain_policy(cfg: &TrainConfig, policy: &Policy, progress: &mut dyn Progress) -> Result<()> {
    if cfg.pretrain.steps == 0 {
        return Ok(());
    }
    let p = prompts(cfg)?;
    progress.note(&format!("pretraining {} steps", cfg.pretrain.steps));
    let mut cb = |s: usize, n: usize, l: f64| {
        if s.is_multiple_of(50) || s == n {
            progress.note(&format!("pretrain step {s}/{n} loss {l:.3}"));
        }
    };
    let corpus = crate::pretrain::Corpus {
        cfg: &cfg.pretrain,
        curriculum: &cfg.curriculum,
        prompts: &p,
        format: &cfg.strategy.intervention.hint_format,
    };
    crate::pretrain::pretrain(policy, &corpus, cfg.run.seed, &mut cb)?;
    Ok(())
}

impl Run<'_> {
    /// Runs step `self.step` (preceded by an evaluation when one is due) and writes its
    /// records; returns the step's `metrics.jsonl` line.
    pub fn step(&mut self, progress: &mut dyn Progress) -> Result<StepRecord> {
        let cfg = self.cfg;
        let step = self.step;
        if step == 0 || (cfg.eval.every > 0 && step.is_multiple_of(cfg.eval.every)) {
            let rows = match self.start_eval.take().filter(|_| step == 0) {
                Some(rows) => check_start_rows(rows, &self.sets)?,
                None => run_eval(cfg, &self.policy, &self.verifier, &self.sets, step)?,
            };
            for r in &rows {
                self.logs.evals.write(r)?;
            }
            progress.eval(&rows);
        }
        let t0 = Instant::now();
        let level = match self.tasks {
            Tasks::Curriculum => curriculum::level_at(&cfg.curriculum.schedule, step),
            Tasks::Dataset { .. } => 0,
        };
        let fallbacks_before = self.fallbacks.as_ref().map_or(0, |f| f.get());
        let batch = step_tasks(cfg, &self.tasks, step);
        let mut rollout = PolicyRollout::new(
            &self.policy,
            cfg.sampling.temperature,
            cfg.sampling.max_new_tokens,
            cfg.run.seed,
            step as u64,
        )
        .with_top(cfg.sampling.top_p, cfg.sampling.top_k);
        let samples = rollout.sample_tasks(&batch, cfg.sampling.group_size)?;
        let sampled = Instant::now();
        let groups = score(batch, samples, &self.verifier)?;
        let scored = Instant::now();
        if cfg.run.log_completions_every > 0 && step.is_multiple_of(cfg.run.log_completions_every) {
            for grp in &groups {
                for s in &grp.samples {
                    self.logs.samples.write(&SampleLine {
                        step,
                        task_id: &grp.task.id,
                        prompt: grp.task.question(),
                        completion: &s.sample.completion.text,
                        reward: s.verdict.reward(),
                    })?;
                }
            }
        }
        let logged = Instant::now();
        let mut refill = Refill::new(cfg, &self.tasks, step);
        let out = self.plugin.process(groups, &mut rollout, &self.verifier, Some(&mut refill))?;
        let processed = Instant::now();
        let update = grpo_step(
            &self.policy,
            self.reference.as_ref(),
            &mut self.updater,
            &out.rows,
            cfg.sampling.temperature,
        )?;
        let rec = StepRecord {
            step,
            level,
            strategy: out.metrics,
            update,
            timing: StepTiming {
                seconds: t0.elapsed().as_secs_f64(),
                sample_seconds: (sampled - t0).as_secs_f64(),
                score_seconds: (scored - sampled).as_secs_f64(),
                strategy_seconds: (processed - logged).as_secs_f64(),
                update_seconds: processed.elapsed().as_secs_f64(),
                peak_rss_mib: super::records::peak_rss_mib(),
                peak_live_mib: crate::live_bytes::live().map(|l| crate::live_bytes::mib(l.peak)),
            },
            mentor_fallbacks: self.fallbacks.as_ref().map_or(0, |f| f.get()).saturating_sub(fallbacks_before),
        };
        self.logs.metrics.write(&rec)?;
        for i in &out.interventions {
            self.logs.interventions.write(&InterventionLine { step, record: i })?;
        }
        progress.step(&rec, self.total);
        self.step += 1;
        Ok(rec)
    }

    /// Saves a checkpoint at the current step (model, optimizer, plug-in state); returns its
    /// directory.
    pub fn checkpoint(&self) -> Result<PathBuf> {
        checkpoint::save(
            &self.out,
            self.step,
            &self.policy,
            &self.updater.optimizer().state()?,
            self.plugin.state(),
        )
    }

    /// Ends the run: unless `interrupted`, the final evaluation and the final model; then
    /// `summary.json` from the run's whole `metrics.jsonl` (resumed parts included).
    pub fn finish(mut self, interrupted: bool, progress: &mut dyn Progress) -> Result<Summary> {
        let cfg = self.cfg;
        let mut final_eval = Vec::new();
        if !interrupted {
            final_eval = run_eval(cfg, &self.policy, &self.verifier, &self.sets, self.total)?;
            for r in &final_eval {
                self.logs.evals.write(r)?;
            }
            progress.eval(&final_eval);
            self.policy.save(&self.out.join("final"))?;
        }
        let (interventions, rescued, zrf_sum, n) = read_totals(&self.logs.metrics_path)?;
        let summary = Summary {
            name: cfg.run.name.clone(),
            arm: cfg.strategy.arm.name().into(),
            seed: cfg.run.seed,
            steps: self.step,
            interrupted,
            final_eval,
            interventions,
            rescued,
            mean_zrf: if n > 0 { zrf_sum / n as f64 } else { 0.0 },
            seconds: self.started.elapsed().as_secs_f64(),
            dir: self.out.clone(),
        };
        write_json(&self.out.join(SUMMARY_FILE), &summary)?;
        Ok(summary)
    }
}

/// Refuses to continue a run directory that does not exist, or (unless `fork`) one that was
/// started with a configuration differing from `cfg` in anything but
/// [`crate::config::RESUMABLE_KEYS`].
fn check_resumable(cfg: &TrainConfig, out: &Path, fork: bool) -> Result<()> {
    if !out.is_dir() {
        return Err(Error::Config {
            file: "run.output_dir".into(),
            message: format!(
                "{} does not exist: there is no run to resume\nhint: drop --resume to start a new run, or point run.output_dir at an existing one",
                out.display()
            ),
        });
    }
    if fork {
        return Ok(());
    }
    let saved_path = out.join("config.toml");
    let text = std::fs::read_to_string(&saved_path).map_err(Error::io(&saved_path))?;
    let saved = TrainConfig::parse(&saved_path.display().to_string(), &text, &[])?;
    let conflicts = cfg.resume_conflicts(&saved);
    if conflicts.is_empty() {
        return Ok(());
    }
    Err(Error::Config {
        file: saved_path.display().to_string(),
        message: format!(
            "--resume with a different configuration: {} differ from the run's (only {} may change when resuming)\nhint: resume with the run's own settings; to branch the run under new settings, copy its directory and pass --fork",
            conflicts.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
            crate::config::RESUMABLE_KEYS.join(", ")
        ),
    })
}

/// The run's KL reference: the model the run started from, kept in `<run>/reference/` so
/// that a resumed run penalises divergence from the same model as an uninterrupted one (not
/// from its latest checkpoint). Written at a fresh start (and at a fork that has none: a
/// branch starts from its fork point); a plain resume must find it.
fn kl_reference(out: &Path, policy: &Policy, resuming: bool, progress: &mut dyn Progress) -> Result<Policy> {
    let dir = out.join("reference");
    if dir.join("model.safetensors").is_file() {
        return Ok(crate::policy::load_dir(dir)?.frozen_copy()?);
    }
    if resuming {
        return Err(Error::Checkpoint {
            path: dir,
            message: "is missing: the run's KL reference (its initial model) cannot be restored".into(),
        });
    }
    progress.note(&format!("saving the KL reference model to {}", dir.display()));
    policy.save(&dir)?;
    Ok(policy.frozen_copy()?)
}
