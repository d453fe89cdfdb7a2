//! The training loop: sample the step's groups → verify → the arm's strategy (vanilla, DAPO,
//! hints) → GRPO update → metrics; evaluation without hints every `eval.every` steps;
//! checkpoints every `run.checkpoint_every` steps and on Ctrl-C; `resume` continues from the
//! newest checkpoint and reproduces exactly what an uninterrupted run would have done.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mentor_agents::{AgentMentor, Guard, GuardConfig, Prompts, Refinement, StaticHints};
use mentor_core::datasets::Dataset;
use mentor_core::{AnswerEquivalence, Task, Verifier};
use mentor_grpo::Updater;
use mentor_integration::{Plugin, StepMetrics, Strategy, TaskSource};
use mentor_policy::Policy;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::checkpoint;
use crate::config::{Arm, Backend, DataKind, TaskSpec, TrainConfig};
use crate::curriculum;
use crate::error::{Error, Result};
use crate::eval::{evaluate, EvalRow};
use crate::jsonl::{truncate_to_step, write_json, JsonlWriter};
use crate::policy::mix;
use crate::rollout::{score, PolicyRollout};
use crate::update::grpo_step;

/// The curriculum's hint templates and static hints (in the tiny model's alphabet).
pub const CURRICULUM_HINTS: &str = include_str!("../curriculum/hints.toml");
/// The curriculum's static hint library.
pub const CURRICULUM_STATIC_HINTS: &str = include_str!("../curriculum/static_hints.toml");

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
}

/// One line of `metrics.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// 0-based step.
    pub step: usize,
    /// Curriculum level (0 for dataset tasks).
    pub level: u32,
    /// Mean reward of the unhinted samples.
    pub reward: f64,
    /// Zero-reward fraction: share of groups whose unhinted samples all failed.
    pub zrf: f64,
    /// Groups.
    pub groups: usize,
    /// Collapsed groups.
    pub collapsed: usize,
    /// Groups intervened on.
    pub intervened: usize,
    /// Intervened groups with at least one hinted success.
    pub rescued: usize,
    /// Extra completions (hinted attempts, DAPO refills).
    pub extra_rollouts: usize,
    /// Hints the guard rejected.
    pub guard_rejections: usize,
    /// Hint levels used.
    pub levels_used: std::collections::BTreeMap<String, usize>,
    /// DAPO: groups dropped / refilled.
    pub dapo_dropped: usize,
    /// DAPO refills.
    pub dapo_refilled: usize,
    /// Rows in the update.
    pub rows: usize,
    /// GRPO loss (None: no rows to train on).
    pub loss: Option<f64>,
    /// Gradient norm before clipping.
    pub grad_norm: Option<f64>,
    /// Wall-clock seconds of the step.
    pub seconds: f64,
    /// Of which sampling, mentor and verifying inside the strategy.
    pub rollout_seconds: f64,
    /// Mentor seconds.
    pub mentor_seconds: f64,
    /// Completions the verifier failed on (scored 0, the step went on).
    #[serde(default)]
    pub verifier_errors: usize,
}

/// The file of a run that holds every intervention: one [`InterventionLine`] per line.
pub const INTERVENTIONS_FILE: &str = "interventions.jsonl";

/// One line of `interventions.jsonl`: the step and the intervention as the plug-in recorded
/// it (task, the failed attempts as judged, diagnosis, every hint tried with its level and
/// text, the guard's rejections, the hinted attempts' rewards, rescued or not).
#[derive(Debug, Serialize)]
pub struct InterventionLine<'a> {
    /// 0-based step.
    pub step: usize,
    /// The intervention.
    #[serde(flatten)]
    pub record: &'a mentor_integration::InterventionRecord,
}

/// The file of a run that holds the first-rollout samples of every
/// `run.log_completions_every`-th step: one [`SampleLine`] per completion.
pub const SAMPLES_FILE: &str = "samples.jsonl";

/// One line of `samples.jsonl` (TRL's `log_completions`).
#[derive(Debug, Serialize)]
pub struct SampleLine<'a> {
    /// 0-based step.
    pub step: usize,
    /// The task.
    pub task_id: &'a str,
    /// The problem as the learner was asked it (the last user message).
    pub prompt: &'a str,
    /// The completion.
    pub completion: &'a str,
    /// Its reward.
    pub reward: f64,
}

/// What `run.json` says about a run (read by the report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Run name.
    pub name: String,
    /// Arm.
    pub arm: String,
    /// Seed.
    pub seed: u64,
    /// Data kind.
    pub preset: String,
    /// Step at which the curriculum jumps to its last level (None: no jump).
    pub jump_step: Option<usize>,
    /// The last (hardest) curriculum level.
    pub hard_level: Option<u32>,
}

/// The end of a run (`summary.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Run name.
    pub name: String,
    /// Arm.
    pub arm: String,
    /// Seed.
    pub seed: u64,
    /// Steps completed.
    pub steps: usize,
    /// Whether the run stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Final evaluation rows.
    pub final_eval: Vec<EvalRow>,
    /// Interventions over the run.
    pub interventions: usize,
    /// Rescues over the run.
    pub rescued: usize,
    /// Mean ZRF over the run.
    pub mean_zrf: f64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The run directory.
    pub dir: PathBuf,
}

struct MathEq;
impl AnswerEquivalence for MathEq {
    fn equivalent(&self, gold: &str, candidate: &str) -> bool {
        mentor_verify_math::equivalent(gold, candidate, &mentor_verify_math::Config::default())
    }
}

/// The hint templates a config names.
pub fn prompts(cfg: &TrainConfig) -> Result<Prompts> {
    Ok(match cfg.mentor.prompts.as_str() {
        "default" => Prompts::default(),
        "curriculum" => Prompts::with_hints(CURRICULUM_HINTS, CURRICULUM_STATIC_HINTS)?,
        dir => Prompts::load_dir(Path::new(dir))?,
    })
}

fn strategy(cfg: &TrainConfig, learner: &Arc<Policy>) -> Result<Strategy> {
    let guard = || {
        Guard::new(
            GuardConfig { max_chars: cfg.mentor.max_hint_chars, ..GuardConfig::default() },
            Arc::new(MathEq),
        )
    };
    let intervene = |mentor: Box<dyn mentor_core::Mentor>| Strategy::Intervene {
        mentor,
        config: cfg.strategy.intervention.clone(),
    };
    Ok(match cfg.strategy.arm {
        Arm::Vanilla => Strategy::Vanilla,
        Arm::Dapo => Strategy::Dapo { max_refill_groups: cfg.strategy.dapo_max_refill },
        Arm::StaticHints => intervene(Box::new(StaticHints::with_prompts(prompts(cfg)?, cfg.run.seed))),
        Arm::Refinement => intervene(Box::new(Refinement::new(guard(), 200))),
        Arm::Mentor => match cfg.mentor.backend {
            Backend::Rules => intervene(Box::new(AgentMentor::rules_with(prompts(cfg)?, guard()))),
            Backend::Llm => {
                let llm = mentor_agents::llm::LlmConfig {
                    base_url: cfg.mentor.base_url.clone(),
                    model: cfg.mentor.model.clone(),
                    api_key: cfg.mentor.api_key_env.as_ref().and_then(|v| std::env::var(v).ok()),
                    timeout: std::time::Duration::from_secs_f64(cfg.mentor.timeout_secs),
                    ..mentor_agents::llm::LlmConfig::default()
                };
                let (mentor, _fallbacks) = mentor_agents::llm::mentor(llm, prompts(cfg)?, guard());
                intervene(Box::new(mentor))
            }
            Backend::Local => {
                let model = if cfg.mentor.model == "self" {
                    learner.clone()
                } else {
                    let section =
                        crate::config::ModelSection { source: cfg.mentor.model.clone(), ..cfg.model.clone() };
                    Arc::new(crate::policy::build(&section, cfg.run.seed)?)
                };
                let local = mentor_agents::local::LocalConfig {
                    temperature: 0.0,
                    max_tokens: 256,
                    seed: cfg.run.seed,
                };
                let (mentor, _fallbacks) = mentor_agents::local::mentor(model, local, prompts(cfg)?, guard());
                intervene(Box::new(mentor))
            }
        },
    })
}

/// Where training tasks come from.
pub enum Tasks {
    /// The curriculum (generated per step).
    Curriculum,
    /// A dataset: training tasks (in a seeded order) and held-out evaluation tasks.
    Dataset {
        /// Training tasks.
        train: Vec<Task>,
        /// Evaluation tasks.
        eval: Vec<Task>,
    },
}

/// Loads the tasks a config names (nothing for the curriculum): the training tasks from
/// `data.train` in a seeded order, cut to `data.limit`, and the first `data.eval_tasks` of
/// `data.eval`. Training and evaluation tasks that overlap (by id or by normalised question
/// text) are an error naming both sources unless `data.allow_overlap`.
pub fn load_tasks(cfg: &TrainConfig) -> Result<Tasks> {
    let Some(dataset) = cfg.data.kind.dataset() else {
        return Ok(Tasks::Curriculum);
    };
    let bad = |message: String| Error::Config { file: "[data]".into(), message };
    let train_spec = cfg.data.train_spec().map_err(bad)?;
    let eval_spec = cfg.data.eval_spec().map_err(bad)?;
    let dir = data_dir(cfg)?;
    let load = |spec: &TaskSpec| -> Result<Vec<Task>> {
        let mut tasks = match spec {
            TaskSpec::Split { dataset, split } => dataset.load_split(&dir, split)?,
            TaskSpec::File(path) => match dataset {
                // A file of the user's: every record, whatever its MBPP task id.
                Dataset::Mbpp => {
                    mentor_core::datasets::load_mbpp(path, mentor_core::datasets::MbppSplit::All)?
                }
                d => d.load(path)?,
            },
        };
        if let Some(system) = &cfg.data.system_prompt {
            for t in &mut tasks {
                t.prompt.insert(0, mentor_core::Message::system(system.clone()));
            }
        }
        Ok(tasks)
    };
    let mut train = match &train_spec {
        Some(spec) => load(spec)?,
        None => Vec::new(),
    };
    train.shuffle(&mut StdRng::seed_from_u64(mix(&[cfg.run.seed, 0xda7a])));
    if cfg.data.limit > 0 {
        train.truncate(cfg.data.limit);
    }
    let mut eval = match (&eval_spec, cfg.data.eval_tasks) {
        (Some(spec), n) if n > 0 => load(spec)?,
        _ => Vec::new(),
    };
    eval.truncate(cfg.data.eval_tasks);
    if !cfg.data.allow_overlap {
        if let (Some(t), Some(e)) = (&train_spec, &eval_spec) {
            check_overlap(&train, t, &eval, e)?;
        }
    }
    Ok(Tasks::Dataset { train, eval })
}

/// A question as compared for overlap: lower case, letters and digits, single spaces.
fn normalised_question(task: &Task) -> String {
    let text = task.question().to_lowercase();
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// An error when a training task is also an evaluation task, by id or by question text.
fn check_overlap(train: &[Task], train_spec: &TaskSpec, eval: &[Task], eval_spec: &TaskSpec) -> Result<()> {
    use std::collections::HashMap;
    let ids: HashMap<&str, &Task> = eval.iter().map(|t| (t.id.as_str(), t)).collect();
    let questions: HashMap<String, &Task> = eval.iter().map(|t| (normalised_question(t), t)).collect();
    let shared: Vec<(&Task, &Task)> = train
        .iter()
        .filter_map(|t| {
            ids.get(t.id.as_str()).or_else(|| questions.get(&normalised_question(t))).map(|e| (t, *e))
        })
        .collect();
    let Some((t, e)) = shared.first() else {
        return Ok(());
    };
    Err(Error::Config {
        file: "[data]".into(),
        message: format!(
            "training tasks (data.train = {train_spec}) overlap the evaluation tasks (data.eval = {eval_spec}): {} shared, e.g. `{}` (train) and `{}` (eval)\nhint: hold evaluation tasks out of training, or set data.allow_overlap = true to run anyway",
            shared.len(),
            t.id,
            e.id
        ),
    })
}

/// The dataset directory: `data.dir`, `$MENTOR_DATASETS`, `$MENTOR_HOME/datasets`, or a
/// `shared/datasets` beside the current directory's ancestors.
pub fn data_dir(cfg: &TrainConfig) -> Result<PathBuf> {
    if let Some(d) = &cfg.data.dir {
        return Ok(d.clone());
    }
    if let Ok(d) = std::env::var("MENTOR_DATASETS") {
        return Ok(PathBuf::from(d));
    }
    if let Some(a) = mentor_core::assets::AssetDir::resolve(|k| std::env::var(k).ok()) {
        if a.datasets().is_dir() {
            return Ok(a.datasets());
        }
    }
    let mut here = std::env::current_dir().ok();
    while let Some(d) = here {
        for c in [d.join("shared/datasets"), d.join("../shared/datasets")] {
            if c.is_dir() {
                return Ok(c);
            }
        }
        here = d.parent().map(Path::to_path_buf);
    }
    Err(Error::Missing("no dataset directory\nhint: run `cargo xtask datasets` or set data.dir".into()))
}

/// The tasks of step `step`: `prompts_per_step` problems (curriculum: at the scheduled level).
fn step_tasks(cfg: &TrainConfig, tasks: &Tasks, step: usize) -> Vec<Task> {
    let n = cfg.sampling.prompts_per_step;
    match tasks {
        Tasks::Curriculum => {
            let level = curriculum::level_at(&cfg.curriculum.schedule, step);
            let mut rng = StdRng::seed_from_u64(mix(&[cfg.run.seed, 0x7a1, step as u64]));
            (0..n)
                .map(|i| {
                    curriculum::Problem::draw(level, cfg.curriculum.operands_at(level), &mut rng)
                        .task(format!("s{step}-{i}"), level)
                })
                .collect()
        }
        Tasks::Dataset { train, .. } => {
            (0..n).filter_map(|i| train.get((step * n + i) % train.len().max(1)).cloned()).collect()
        }
    }
}

/// More tasks for DAPO refills, deterministic per step.
struct Refill<'a> {
    cfg: &'a TrainConfig,
    tasks: &'a Tasks,
    step: usize,
    drawn: usize,
    rng: StdRng,
}

impl TaskSource for Refill<'_> {
    fn next_task(&mut self) -> Option<Task> {
        self.drawn += 1;
        match self.tasks {
            Tasks::Curriculum => {
                let level = curriculum::level_at(&self.cfg.curriculum.schedule, self.step);
                let p =
                    curriculum::Problem::draw(level, self.cfg.curriculum.operands_at(level), &mut self.rng);
                Some(p.task(format!("s{}-r{}", self.step, self.drawn), level))
            }
            Tasks::Dataset { train, .. } => {
                let n = self.cfg.sampling.prompts_per_step;
                let at = (self.step * n + n + self.drawn) % train.len().max(1);
                train.get(at).cloned()
            }
        }
    }
}

/// The evaluation sets: `(level, tasks)`.
pub fn eval_sets(cfg: &TrainConfig, tasks: &Tasks) -> Vec<(u32, Vec<Task>)> {
    match tasks {
        Tasks::Curriculum => cfg
            .eval_levels()
            .into_iter()
            .map(|l| {
                let seed = mix(&[cfg.run.seed, 0xe7a1]);
                (l, curriculum::tasks(seed, l, cfg.curriculum.operands_at(l), cfg.eval.problems, "eval"))
            })
            .collect(),
        Tasks::Dataset { eval, .. } if !eval.is_empty() => vec![(0, eval.clone())],
        Tasks::Dataset { .. } => vec![],
    }
}

/// Runs every evaluation set once.
pub fn run_eval(
    cfg: &TrainConfig,
    policy: &Policy,
    verifier: &dyn Verifier,
    sets: &[(u32, Vec<Task>)],
    step: usize,
) -> Result<Vec<EvalRow>> {
    sets.iter()
        .map(|(level, tasks)| {
            evaluate(
                policy,
                verifier,
                tasks,
                step,
                *level,
                cfg.sampling.max_new_tokens,
                crate::eval::Sampled {
                    k: cfg.eval.k,
                    samples: cfg.eval.samples,
                    temperature: cfg.eval.temperature,
                },
                mix(&[cfg.run.seed, 0xe7a1, step as u64]),
            )
        })
        .collect()
}

fn record(
    step: usize,
    level: u32,
    m: &StepMetrics,
    g: Option<&mentor_grpo::StepMetrics>,
    secs: f64,
) -> StepRecord {
    StepRecord {
        step,
        level,
        reward: m.mean_reward,
        zrf: m.zrf,
        groups: m.groups,
        collapsed: m.collapsed,
        intervened: m.intervened,
        rescued: m.rescued,
        extra_rollouts: m.extra_rollouts,
        guard_rejections: m.guard_rejections,
        levels_used: m.levels_used.clone(),
        dapo_dropped: m.dapo_dropped,
        dapo_refilled: m.dapo_refilled,
        rows: m.rows,
        loss: g.map(|g| g.loss),
        grad_norm: g.map(|g| g.grad_norm),
        seconds: secs,
        rollout_seconds: m.rollout_seconds,
        mentor_seconds: m.mentor_seconds,
        verifier_errors: m.verifier_errors,
    }
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

/// Progress that says nothing.
pub struct Silent;
impl Progress for Silent {
    fn step(&mut self, _: &StepRecord, _: usize) {}
    fn eval(&mut self, _: &[EvalRow]) {}
    fn note(&mut self, _: &str) {}
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

/// Trains as `cfg` says; `code` verifies code tasks (None: math only).
pub fn train(
    cfg: &TrainConfig,
    opts: &TrainOptions,
    code: Option<&dyn Verifier>,
    progress: &mut dyn Progress,
) -> Result<Summary> {
    let started = Instant::now();
    let out = cfg.output_dir().to_path_buf();
    let total = cfg.total_steps();
    if opts.resume || opts.fork {
        check_resumable(cfg, &out, opts.fork)?;
    }
    // Tasks before anything is written: a data mistake leaves no run directory behind.
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
    std::fs::create_dir_all(&out).map_err(Error::io(&out))?;
    let metrics_path = out.join("metrics.jsonl");
    let eval_path = out.join("eval.jsonl");
    let interventions_path = out.join(INTERVENTIONS_FILE);
    let samples_path = out.join(SAMPLES_FILE);
    let resumed = if opts.resume || opts.fork {
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
        if metrics_path.exists() || out.join("checkpoints").exists() {
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
    let config_text = toml::to_string_pretty(cfg)
        .map_err(|e| Error::Config { file: "config".into(), message: e.to_string() })?;
    crate::jsonl::write_atomic(&out.join("config.toml"), config_text.as_bytes())?;
    let hard =
        (cfg.data.kind == DataKind::Curriculum).then(|| cfg.curriculum.schedule.last().map(|p| p.level));
    let jump = (cfg.data.kind == DataKind::Curriculum && cfg.curriculum.schedule.len() > 1)
        .then(|| cfg.curriculum.schedule[..cfg.curriculum.schedule.len() - 1].iter().map(|p| p.steps).sum());
    let info = RunInfo {
        name: cfg.run.name.clone(),
        arm: cfg.strategy.arm.name().into(),
        seed: cfg.run.seed,
        preset: format!("{:?}", cfg.data.kind).to_lowercase(),
        jump_step: jump,
        hard_level: hard.flatten(),
    };
    write_json(&out.join("run.json"), &info)?;

    let verifier = crate::verify::DomainVerifier::new(code);
    let continued = resumed.is_some();
    let (policy, start, opt_state, plugin_state) = match resumed {
        Some(l) => {
            progress.note(&format!("resuming from {} at step {}", l.dir.display(), l.state.step));
            truncate_to_step(&metrics_path, l.state.step)?;
            truncate_to_step(&eval_path, l.state.step)?;
            truncate_to_step(&interventions_path, l.state.step)?;
            truncate_to_step(&samples_path, l.state.step)?;
            (l.policy, l.state.step, Some(l.optimizer), Some(l.state.plugin))
        }
        None => {
            let policy = crate::policy::build(&cfg.model, cfg.run.seed)?;
            if cfg.pretrain.steps > 0 {
                let p = prompts(cfg)?;
                progress.note(&format!("pretraining {} steps", cfg.pretrain.steps));
                let mut cb = |s: usize, n: usize, l: f64| {
                    if s.is_multiple_of(50) || s == n {
                        progress.note(&format!("pretrain step {s}/{n} loss {l:.3}"));
                    }
                };
                crate::pretrain::pretrain(
                    &policy,
                    &cfg.pretrain,
                    &cfg.curriculum,
                    &p,
                    &cfg.strategy.intervention.hint_format,
                    cfg.run.seed,
                    &mut cb,
                )?;
            }
            (policy, 0, None, None)
        }
    };
    let policy = Arc::new(policy);
    let reference = if cfg.grpo.beta != 0.0 {
        Some(kl_reference(&out, &policy, continued && !opts.fork, progress)?)
    } else {
        None
    };
    let vars = policy.vars().into_iter().map(|(_, v)| v).collect();
    let mut updater = Updater::new(cfg.grpo_config(), vars, total)?;
    if let Some(s) = opt_state {
        updater.optimizer_mut().restore(s)?;
    }
    let mut plugin =
        Plugin::new(strategy(cfg, &policy)?, cfg.strategy.monitor.clone(), cfg.grpo.scale_rewards);
    if let Some(s) = plugin_state {
        plugin.restore(s);
    }
    let sets = eval_sets(cfg, &tasks);
    let mut metrics = JsonlWriter::append(&metrics_path)?;
    let mut evals = JsonlWriter::append(&eval_path)?;
    let mut intervention_log = JsonlWriter::append(&interventions_path)?;
    let mut sample_log = JsonlWriter::append(&samples_path)?;
    let eval_due = |step: usize| cfg.eval.every > 0 && step.is_multiple_of(cfg.eval.every);
    let mut interrupted = false;
    let mut step = start;
    while step < total {
        if step == 0 || eval_due(step) {
            let rows = run_eval(cfg, &policy, &verifier, &sets, step)?;
            for r in &rows {
                evals.write(r)?;
            }
            progress.eval(&rows);
        }
        let t0 = Instant::now();
        let level = match tasks {
            Tasks::Curriculum => curriculum::level_at(&cfg.curriculum.schedule, step),
            Tasks::Dataset { .. } => 0,
        };
        let batch = step_tasks(cfg, &tasks, step);
        let mut rollout = PolicyRollout::new(
            &policy,
            cfg.sampling.temperature,
            cfg.sampling.max_new_tokens,
            cfg.run.seed,
            step as u64,
        );
        let samples = rollout.sample_tasks(&batch, cfg.sampling.group_size)?;
        let groups = score(batch, samples, &verifier)?;
        let mut refill = Refill {
            cfg,
            tasks: &tasks,
            step,
            drawn: 0,
            rng: StdRng::seed_from_u64(mix(&[cfg.run.seed, 0x4ef1, step as u64])),
        };
        if cfg.run.log_completions_every > 0 && step.is_multiple_of(cfg.run.log_completions_every) {
            for grp in &groups {
                for s in &grp.samples {
                    sample_log.write(&SampleLine {
                        step,
                        task_id: &grp.task.id,
                        prompt: grp.task.question(),
                        completion: &s.sample.completion.text,
                        reward: s.verdict.reward(),
                    })?;
                }
            }
        }
        let out_step = plugin.process(groups, &mut rollout, &verifier, Some(&mut refill))?;
        let g =
            grpo_step(&policy, reference.as_ref(), &mut updater, &out_step.rows, cfg.sampling.temperature)?;
        let rec = record(step, level, &out_step.metrics, g.as_ref(), t0.elapsed().as_secs_f64());
        metrics.write(&rec)?;
        for i in &out_step.interventions {
            intervention_log.write(&InterventionLine { step, record: i })?;
        }
        progress.step(&rec, total);
        step += 1;
        let stop = opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst));
        let every = cfg.run.checkpoint_every;
        if stop || step == total || (every > 0 && step.is_multiple_of(every)) {
            checkpoint::save(&out, step, &policy, &updater.optimizer().state()?, plugin.state())?;
        }
        if stop && step < total {
            interrupted = true;
            progress.note(&format!("stopped at step {step}; checkpoint saved"));
            break;
        }
    }
    let mut final_eval = Vec::new();
    if !interrupted {
        final_eval = run_eval(cfg, &policy, &verifier, &sets, total)?;
        for r in &final_eval {
            evals.write(r)?;
        }
        progress.eval(&final_eval);
        policy.save(&out.join("final"))?;
    }
    let (interventions, rescued, zrf_sum, n) = read_totals(&metrics_path)?;
    let summary = Summary {
        name: cfg.run.name.clone(),
        arm: cfg.strategy.arm.name().into(),
        seed: cfg.run.seed,
        steps: step,
        interrupted,
        final_eval,
        interventions,
        rescued,
        mean_zrf: if n > 0 { zrf_sum / n as f64 } else { 0.0 },
        seconds: started.elapsed().as_secs_f64(),
        dir: out.clone(),
    };
    write_json(&out.join("summary.json"), &summary)?;
    Ok(summary)
}

/// Totals over `metrics.jsonl`: interventions, rescues, ZRF sum, steps.
fn read_totals(path: &Path) -> Result<(usize, usize, f64, usize)> {
    let text = std::fs::read_to_string(path).map_err(Error::io(path))?;
    let mut t = (0, 0, 0.0, 0);
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: StepRecord = serde_json::from_str(line).map_err(|e| Error::Jsonl {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        t.0 += r.intervened;
        t.1 += r.rescued;
        t.2 += r.zrf;
        t.3 += 1;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared benchmark data beside the repository (present in CI), or `$MENTOR_DATASETS`.
    fn data_dir() -> String {
        std::env::var("MENTOR_DATASETS")
            .unwrap_or_else(|_| format!("{}/../../../shared/datasets", env!("CARGO_MANIFEST_DIR")))
    }

    fn config(preset: &str, sets: &[&str]) -> Result<TrainConfig> {
        let mut all = vec![format!("data.dir={}", data_dir())];
        all.extend(sets.iter().map(|s| s.to_string()));
        TrainConfig::load(preset, &all)
    }

    fn ids(tasks: &Tasks) -> (Vec<String>, Vec<String>) {
        match tasks {
            Tasks::Dataset { train, eval } => {
                (train.iter().map(|t| t.id.clone()).collect(), eval.iter().map(|t| t.id.clone()).collect())
            }
            Tasks::Curriculum => panic!("a dataset config"),
        }
    }

    #[test]
    fn presets_train_on_training_splits_and_evaluate_on_held_out_tests() {
        let (train, eval) = ids(&load_tasks(&config("gsm8k-smollm2", &[]).unwrap()).unwrap());
        assert_eq!(train.len(), 7473);
        assert!(train.iter().all(|id| id.starts_with("gsm8k/train/")), "{:?}", &train[..3]);
        assert_eq!(eval.len(), 100);
        assert_eq!(eval[0], "gsm8k/test/0");
        assert!(eval.iter().all(|id| id.starts_with("gsm8k/test/")));

        let (train, eval) = ids(&load_tasks(&config("mbpp-smollm2", &[]).unwrap()).unwrap());
        // Task ids 601–974 and the ten prompt tasks 1–10.
        assert_eq!(train.len(), 374 + 10);
        assert!(train.iter().all(|id| id.starts_with("mbpp/train/") || id.starts_with("mbpp/prompt/")));
        assert_eq!(eval.len(), 50);
        assert_eq!(eval[0], "mbpp/test/11");
    }

    #[test]
    fn overlapping_training_and_evaluation_tasks_stop_the_run_before_step_0() {
        // By id: the evaluation split trained on.
        let cfg = config("gsm8k-smollm2", &["data.train=gsm8k:test", "data.eval_tasks=5"]).unwrap();
        let Err(e) = load_tasks(&cfg) else { panic!("overlap accepted") };
        let e = e.to_string();
        assert!(e.contains("data.train = gsm8k:test") && e.contains("data.eval = gsm8k:test"), "{e}");
        assert!(e.contains("5 shared") && e.contains("allow_overlap"), "{e}");
        let cfg = config(
            "gsm8k-smollm2",
            &["data.train=gsm8k:test", "data.eval_tasks=5", "data.allow_overlap=true"],
        )
        .unwrap();
        assert!(load_tasks(&cfg).is_ok());

        // By question text: a training file that copies a test problem under another id,
        // with different case, spacing and punctuation.
        let test = Dataset::Gsm8k.load_split(Path::new(&data_dir()), "test").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.jsonl");
        let copied = format!("  {}!! ", test[3].question().to_uppercase().replace(' ', "  "));
        let lines = [
            serde_json::json!({"question": "What is 2 + 2?", "answer": "2 + 2 = 4\n#### 4"}),
            serde_json::json!({"question": copied, "answer": "#### 1"}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&file, text).unwrap();
        let train = format!("data.train={}", file.display());
        let cfg = config("gsm8k-smollm2", &[&train, "data.eval_tasks=10"]).unwrap();
        let e = load_tasks(&cfg).err().expect("overlap by text accepted").to_string();
        assert!(e.contains("1 shared") && e.contains("gsm8k/test/3") && e.contains("mine.jsonl"), "{e}");
        let cfg = config("gsm8k-smollm2", &[&train, "data.eval_tasks=3"]).unwrap();
        let (train, _) = ids(&load_tasks(&cfg).unwrap());
        assert_eq!(train.len(), 2);
    }

    #[test]
    fn task_sources_are_validated_against_the_kind() {
        let e = config("gsm8k-smollm2", &["data.train=gsm8k:dev"]).unwrap_err().to_string();
        assert!(e.contains("data.train") && e.contains("train, test"), "{e}");
        let e = config("gsm8k-smollm2", &["data.eval=math500:test"]).unwrap_err().to_string();
        assert!(e.contains("data.eval") && e.contains("math500") && e.contains("gsm8k"), "{e}");
        let e = config("demo", &["data.train=gsm8k:train"]).unwrap_err().to_string();
        assert!(e.contains("data.train"), "{e}");
        assert_eq!(
            TaskSpec::parse("mbpp:validation").unwrap(),
            TaskSpec::Split { dataset: Dataset::Mbpp, split: "validation".into() }
        );
        assert_eq!(TaskSpec::parse("runs/x:y.jsonl").unwrap(), TaskSpec::File("runs/x:y.jsonl".into()));
        // AIME 2024 and AMC 2023 are evaluated like MATH-500.
        for (kind, n) in [("aime2024", 30), ("amc2023", 40)] {
            let kind_set = format!("data.kind={kind}");
            let cfg = config("math500-eval", &[&kind_set, "data.eval_tasks=100"]).unwrap();
            let (train, eval) = ids(&load_tasks(&cfg).unwrap());
            assert!(train.is_empty());
            assert_eq!(eval.len(), n, "{kind}");
        }
        // MATH-500 is evaluation-only: no training split by default.
        let cfg = config("math500-eval", &[]).unwrap();
        assert_eq!(cfg.data.train_spec().unwrap(), None);
        let (train, eval) = ids(&load_tasks(&cfg).unwrap());
        assert!(train.is_empty());
        assert_eq!(eval.len(), 500);
    }
}
