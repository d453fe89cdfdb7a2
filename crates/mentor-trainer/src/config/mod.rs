//! The run configuration: one TOML file (see `configs/*.toml`) with `--set key=value`
//! overrides, validated up front so a mistake is reported before any work starts, naming the
//! field and the values it allows.

use std::path::{Path, PathBuf};

use mentor_core::datasets::Dataset;
use mentor_grpo::GrpoConfig;
use mentor_integration::{InterventionConfig, MonitorConfig};
use serde::{Deserialize, Serialize};

mod rescue;

pub use rescue::{PromptStyle, RescueArm, RescueSection};

use crate::curriculum::{Operands, Phase, Problem, Tens, MAX_LEVEL};
use crate::error::{Error, Result};

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Name, seed, length, output.
    pub run: RunSection,
    /// The policy.
    pub model: ModelSection,
    /// Where tasks come from.
    pub data: DataSection,
    /// The synthetic curriculum (when `data.kind = "curriculum"`).
    pub curriculum: CurriculumSection,
    /// Supervised pretraining of a from-scratch model before RL (`model.source = "tiny"`).
    pub pretrain: PretrainSection,
    /// Rollouts.
    pub sampling: SamplingSection,
    /// The GRPO update (TRL's `GRPOConfig` names). TRL's `num_generations`,
    /// `max_completion_length`, `temperature`, `max_steps`, `save_steps` and `eval_steps`
    /// are accepted here as other names of `sampling.group_size`, `sampling.max_new_tokens`,
    /// `sampling.temperature`, `run.steps`, `run.checkpoint_every` and `eval.every`
    /// ([`ALIASES`]); one setting under both names with different values is an error.
    pub grpo: GrpoConfig,
    /// The arm.
    pub strategy: StrategySection,
    /// The mentor of intervening arms.
    pub mentor: MentorSection,
    /// Periodic evaluation without hints.
    pub eval: EvalSection,
    /// What `mentor rescue` measures (ignored by training; left out of a run's `config.toml`
    /// when it has its defaults).
    #[serde(skip_serializing_if = "RescueSection::is_default")]
    pub rescue: RescueSection,
}

/// `[run]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunSection {
    /// Run name (the report's legend).
    pub name: String,
    /// Seed of everything random in the run (tasks, sampling, initialisation).
    pub seed: u64,
    /// Output directory (metrics, checkpoints, report). Relative paths are relative to the
    /// current directory.
    pub output_dir: PathBuf,
    /// Training steps (for the curriculum: the schedule's total unless set).
    pub steps: usize,
    /// Save a checkpoint every this many steps (0: only at the end).
    pub checkpoint_every: usize,
    /// Show progress bars.
    pub progress: bool,
    /// Write every first-rollout completion (prompt, completion, reward) of every this many
    /// steps to `samples.jsonl` (0: never), like TRL's `log_completions`.
    pub log_completions_every: usize,
}

impl Default for RunSection {
    fn default() -> Self {
        Self {
            name: "run".into(),
            seed: 0,
            output_dir: PathBuf::from("runs/run"),
            steps: 0,
            checkpoint_every: 10,
            progress: true,
            log_completions_every: 10,
        }
    }
}

/// `[model]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSection {
    /// `tiny` (a from-scratch character-level Llama), a local model directory, a `.gguf`
    /// file, a Hub repo id, or `smollm2` (the SmolLM2 GGUF that `cargo xtask setup` installs).
    pub source: ModelChoice,
    /// Tiny model: decoder layers.
    pub layers: usize,
    /// Tiny model: hidden size.
    pub hidden: usize,
    /// Tiny model: attention heads.
    pub heads: usize,
    /// Tiny model: MLP width.
    pub intermediate: usize,
    /// Every reduction of the model (matmuls forward and backward, softmax, norms) in one
    /// fixed order, on the crate's own kernels: the same bits on every x86-64 CPU, any thread
    /// count and either kernel path (`--kernels`), at some cost in speed. The demo's default;
    /// off by default elsewhere (`mentor_policy::set_deterministic`).
    pub deterministic: bool,
}

impl Default for ModelSection {
    fn default() -> Self {
        Self {
            source: ModelChoice::Tiny,
            layers: 3,
            hidden: 64,
            heads: 4,
            intermediate: 170,
            deterministic: false,
        }
    }
}

/// `model.source`: which model a run trains (spelled as a string in TOML).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ModelChoice {
    /// `tiny`: a from-scratch character-level Llama in the curriculum's alphabet.
    Tiny,
    /// `smollm2`: the SmolLM2 GGUF that `cargo xtask setup` installs.
    Smollm2,
    /// A local model directory, a `.gguf` file or a Hub repo id.
    Source(String),
}

impl From<String> for ModelChoice {
    fn from(s: String) -> Self {
        match s.as_str() {
            "tiny" => ModelChoice::Tiny,
            "smollm2" => ModelChoice::Smollm2,
            _ => ModelChoice::Source(s),
        }
    }
}

impl From<ModelChoice> for String {
    fn from(m: ModelChoice) -> Self {
        m.to_string()
    }
}

impl std::fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelChoice::Tiny => f.write_str("tiny"),
            ModelChoice::Smollm2 => f.write_str("smollm2"),
            ModelChoice::Source(s) => f.write_str(s),
        }
    }
}

/// Task sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataKind {
    /// The embedded synthetic curriculum.
    Curriculum,
    /// GSM8K (math verifier).
    Gsm8k,
    /// MATH-500 (math verifier).
    Math500,
    /// MBPP (code sandbox).
    Mbpp,
    /// HumanEval (code sandbox).
    Humaneval,
    /// AIME 2024 (math verifier; evaluation only).
    Aime2024,
    /// AMC 2023 (math verifier; evaluation only).
    Amc2023,
}

impl DataKind {
    /// The benchmark set of a dataset kind (`None` for the curriculum).
    pub fn dataset(self) -> Option<Dataset> {
        match self {
            DataKind::Curriculum => None,
            DataKind::Gsm8k => Some(Dataset::Gsm8k),
            DataKind::Math500 => Some(Dataset::Math500),
            DataKind::Mbpp => Some(Dataset::Mbpp),
            DataKind::Humaneval => Some(Dataset::HumanEval),
            DataKind::Aime2024 => Some(Dataset::Aime2024),
            DataKind::Amc2023 => Some(Dataset::Amc2023),
        }
    }
}

/// `[data]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DataSection {
    /// Which tasks (and so which verifier and loader).
    pub kind: DataKind,
    /// Dataset directory laid out as `cargo xtask datasets` installs it (default:
    /// [`mentor_core::assets::locate_datasets`] from the current directory: `$MENTOR_DATASETS`,
    /// the asset directory's `datasets/`, or a `shared/datasets` beside its ancestors).
    pub dir: Option<PathBuf>,
    /// Training tasks: `dataset:split` (e.g. `gsm8k:train`) or a JSONL file in `kind`'s
    /// format. Default: the set's training split (GSM8K and MBPP `train`); MATH-500 and
    /// HumanEval are evaluation-only and have none.
    pub train: Option<String>,
    /// Evaluation tasks, held out from training: `dataset:split` or a file. Default: the
    /// set's `test` split.
    pub eval: Option<String>,
    /// Use at most this many training tasks (0: all).
    pub limit: usize,
    /// Evaluation tasks used, the first this many of `eval` (0: none).
    pub eval_tasks: usize,
    /// Train even when training and evaluation tasks overlap (by id or by question text).
    pub allow_overlap: bool,
    /// System prompt put before each task (real models).
    pub system_prompt: Option<String>,
    /// Code tasks: `binary` (1 only when every test passes) or `fraction_passed` (the share
    /// of tests passed; tampering, syntax errors and limits still give 0).
    pub code_reward: CodeReward,
}

/// `data.code_reward`: how a code verdict becomes a reward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeReward {
    /// 1 when every test passed, else 0: a suite cannot be farmed by passing its easy half.
    #[default]
    Binary,
    /// The fraction of tests passed.
    FractionPassed,
}

impl Default for DataSection {
    fn default() -> Self {
        Self {
            kind: DataKind::Curriculum,
            dir: None,
            train: None,
            eval: None,
            limit: 0,
            eval_tasks: 0,
            allow_overlap: false,
            system_prompt: None,
            code_reward: CodeReward::Binary,
        }
    }
}

/// Where a set of tasks comes from: a split of a benchmark set, or a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskSpec {
    /// `dataset:split` under the data directory.
    Split {
        /// The set.
        dataset: Dataset,
        /// One of [`Dataset::splits`].
        split: String,
    },
    /// A JSONL (or MBPP JSON array) file in the format of the config's `data.kind`.
    File(PathBuf),
}

impl std::fmt::Display for TaskSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskSpec::Split { dataset, split } => write!(f, "{}:{split}", dataset.name()),
            TaskSpec::File(p) => write!(f, "{}", p.display()),
        }
    }
}

impl TaskSpec {
    /// Parses `dataset:split` (a known set and one of its splits), else takes `text` as a file.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        if let Some((name, split)) = text.split_once(':') {
            if let Some(dataset) = Dataset::from_name(name) {
                if !dataset.splits().contains(&split) {
                    return Err(format!(
                        "`{text}`: {name} has no split `{split}` (its splits: {})",
                        dataset.splits().join(", ")
                    ));
                }
                return Ok(TaskSpec::Split { dataset, split: split.to_string() });
            }
        }
        if text.trim().is_empty() {
            return Err("empty (give `dataset:split` or a file)".into());
        }
        Ok(TaskSpec::File(PathBuf::from(text)))
    }
}

impl DataSection {
    /// The training tasks' source: `train`, else the kind's training split (`None`: the kind
    /// is evaluation-only, or the curriculum).
    pub fn train_spec(&self) -> std::result::Result<Option<TaskSpec>, String> {
        match &self.train {
            Some(t) => TaskSpec::parse(t).map(Some),
            None => Ok(self.kind.dataset().and_then(|d| {
                d.training_split().map(|split| TaskSpec::Split { dataset: d, split: split.into() })
            })),
        }
    }

    /// The evaluation tasks' source: `eval`, else the kind's `test` split.
    pub fn eval_spec(&self) -> std::result::Result<Option<TaskSpec>, String> {
        match &self.eval {
            Some(t) => TaskSpec::parse(t).map(Some),
            None => Ok(self.kind.dataset().map(|d| TaskSpec::Split { dataset: d, split: "test".into() })),
        }
    }
}

/// `[curriculum]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CurriculumSection {
    /// Phases in order (level, steps): e.g. two digits for 20 steps, then four.
    pub schedule: Vec<Phase>,
    /// How operands are drawn at each level.
    pub operands: Operands,
    /// Levels at which `Full` operands are used regardless of `operands` (the hard level).
    pub full_operand_levels: Vec<u32>,
    /// Levels whose every problem holds exactly one ten column (a column summing to 10,
    /// `4+5+1=10`; see [`crate::curriculum`]). When set, the other levels and pretraining's
    /// targets hold none: it is the skill the model lacks. Empty: problems are drawn as they
    /// come.
    pub ten_levels: Vec<u32>,
    /// Training problems per level: 0 draws new problems every step; `n > 0` draws each
    /// step's problems from a fixed pool of `n` per level (none in the evaluation set), in
    /// seeded epochs, so tasks come back and the per-task hint memory can fade their hints.
    pub pool: usize,
    /// The layout of the training tasks' reference solutions: `learner` (the learner's own
    /// scratchpad, as pretraining teaches it) or `teacher` (the same arithmetic, most
    /// significant column first: a layout the learner never produces). With `teacher`, every
    /// arm that shows the learner reference lines sees them through one shared rewrite into
    /// the learner's layout ([`crate::curriculum::learner_solution`]), and `full_solution`
    /// trains on the teacher's text as written.
    pub reference: ReferenceStyle,
}

/// `curriculum.reference`: whose layout the reference solutions are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceStyle {
    /// The learner's own scratchpad (least significant column first).
    #[default]
    Learner,
    /// A teacher's: most significant column first.
    Teacher,
}

impl Default for CurriculumSection {
    fn default() -> Self {
        Self {
            schedule: vec![Phase { level: 2, steps: 20 }, Phase { level: 4, steps: 100 }],
            operands: Operands::Mixed,
            full_operand_levels: vec![],
            ten_levels: vec![],
            pool: 0,
            reference: ReferenceStyle::Learner,
        }
    }
}

impl CurriculumSection {
    /// The training task of problem `p`, its reference in [`Self::reference`]'s layout.
    pub fn train_task(&self, p: &crate::curriculum::Problem, id: String, level: u32) -> mentor_core::Task {
        let task = p.task(id, level);
        match self.reference {
            ReferenceStyle::Learner => task,
            ReferenceStyle::Teacher => task.with_reference_solution(p.teacher_solution()),
        }
    }

    /// The operand rule at `level`.
    pub fn operands_at(&self, level: u32) -> Operands {
        if self.full_operand_levels.contains(&level) {
            Operands::Full
        } else {
            self.operands
        }
    }

    /// The ten-column rule at `level` (see [`CurriculumSection::ten_levels`]).
    pub fn tens_at(&self, level: u32) -> Tens {
        if self.ten_levels.is_empty() {
            Tens::Any
        } else if self.ten_levels.contains(&level) {
            Tens::One
        } else {
            Tens::None
        }
    }

    /// Draws a level-`level` problem under the operand and ten-column rules.
    pub fn draw(&self, level: u32, rng: &mut impl rand::Rng) -> Problem {
        Problem::draw_with(level, self.operands_at(level), self.tens_at(level), rng)
    }

    /// A seeded stream of `count` level-`level` tasks (see [`crate::curriculum::tasks`]).
    pub fn tasks(&self, seed: u64, level: u32, count: usize, tag: &str) -> Vec<mentor_core::Task> {
        crate::curriculum::tasks(seed, level, self.operands_at(level), self.tens_at(level), count, tag)
    }
}

/// `[pretrain]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PretrainSection {
    /// Supervised steps (0: none).
    pub steps: usize,
    /// Examples per step.
    pub batch: usize,
    /// Peak learning rate (cosine decay after a linear warm-up).
    pub learning_rate: f64,
    /// Warm-up steps.
    pub warmup: usize,
    /// Levels of the plain (unhinted) examples.
    pub unhinted_levels: Vec<u32>,
    /// Levels of the hinted examples (hint text + the first k reference steps given).
    pub hinted_levels: Vec<u32>,
    /// Share of hinted examples.
    pub hinted_fraction: f64,
    /// Share of *static-hinted* examples: a plain problem from `unhinted_levels` (no ten
    /// column) whose prompt carries one of the static hints through the hint format, and no
    /// given lines. It teaches the model to read those texts in its context, so the
    /// `static_hints` arm is not out of distribution; what they say cannot solve a ten column
    /// (no static text names the problem's digits). Taken from the plain share (0: none).
    pub static_fraction: f64,
    /// Batch pieces computed in parallel threads (0: one per core).
    pub shards: usize,
    /// The pretrained model's seed (its initialisation and its examples) in `mentor demo`,
    /// which pretrains once per seed of `--pretrain-seeds` and records it in every run
    /// (`run.json`); a run that pretrains itself uses `run.seed`.
    pub seed: u64,
}

impl Default for PretrainSection {
    fn default() -> Self {
        Self {
            steps: 0,
            batch: 64,
            learning_rate: 1e-3,
            warmup: 50,
            unhinted_levels: vec![1, 2],
            hinted_levels: vec![1, 2, 3, 4],
            hinted_fraction: 0.5,
            static_fraction: 0.0,
            shards: 0,
            seed: 0,
        }
    }
}

/// `[sampling]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingSection {
    /// Prompts (groups) per step.
    pub prompts_per_step: usize,
    /// Completions per prompt (G).
    pub group_size: usize,
    /// Sampling temperature.
    pub temperature: f64,
    /// Nucleus sampling: keep the most likely tokens whose probability mass reaches `top_p`
    /// (1: off). The behaviour log-probs are those of the truncated distribution sampled from.
    pub top_p: f64,
    /// Keep only the `top_k` most likely tokens (0: off).
    pub top_k: usize,
    /// Most new tokens per completion.
    pub max_new_tokens: usize,
}

impl Default for SamplingSection {
    fn default() -> Self {
        Self {
            prompts_per_step: 8,
            group_size: 8,
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            max_new_tokens: 48,
        }
    }
}

/// The arms: the one spelling of their names in configs (`strategy.arm`), on the command
/// line (`--arms`), in run directories and in reports, which list them in this order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Arm {
    /// Plain GRPO.
    Vanilla,
    /// Generic hints chosen at random, no diagnosis.
    StaticHints,
    /// The learner's wrong final answers and that they are wrong (LTE's control): failure-aware
    /// without diagnosis or worked content.
    WrongAnswers,
    /// Where the diagnosis puts the first mistake, in words, without worked content.
    WhereOnly,
    /// The mentor's level-3 hint with its cut moved to a random other step (the control of
    /// the diagnosis: same kind of hint, undiagnosed place).
    RandomPrefix,
    /// The reference solution trained as an off-policy completion (LUFFY-style imitation), as
    /// its author wrote it (with `curriculum.reference = "teacher"`, in the teacher's layout).
    FullSolution,
    /// The reference solution trained in the learner's own layout (through the rewrite the
    /// mentor's arms share): free imitation, the upper bound, not a method.
    FullSolutionLearner,
    /// MENTOR: diagnose, hint, guard.
    Mentor,
    /// DAPO dynamic sampling.
    Dapo,
    /// The learner revises a failed answer shown with the verifier's feedback.
    Refinement,
}

impl Arm {
    /// Every arm, in report order.
    pub const ALL: [Arm; 10] = [
        Arm::Vanilla,
        Arm::StaticHints,
        Arm::WrongAnswers,
        Arm::WhereOnly,
        Arm::RandomPrefix,
        Arm::FullSolution,
        Arm::FullSolutionLearner,
        Arm::Mentor,
        Arm::Dapo,
        Arm::Refinement,
    ];

    /// The name used in configs, on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Arm::Vanilla => "vanilla",
            Arm::StaticHints => "static_hints",
            Arm::RandomPrefix => "random_prefix",
            Arm::FullSolution => "full_solution",
            Arm::FullSolutionLearner => "full_solution_learner",
            Arm::WrongAnswers => "wrong_answers",
            Arm::WhereOnly => "where_only",
            Arm::Mentor => "mentor",
            Arm::Dapo => "dapo",
            Arm::Refinement => "refinement",
        }
    }

    /// The arm called `name`, if it is one.
    pub fn parse(name: &str) -> Option<Arm> {
        Arm::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl std::fmt::Display for Arm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `[strategy]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StrategySection {
    /// The arm.
    pub arm: Arm,
    /// DAPO: most refill groups per step.
    pub dapo_max_refill: usize,
    /// Refinement: the most characters of the failed answer quoted back to the learner.
    pub refinement_quote_chars: usize,
    /// Collapse monitor.
    pub monitor: MonitorConfig,
    /// Intervening arms (static_hints, refinement, mentor).
    pub intervention: InterventionConfig,
}

impl Default for StrategySection {
    fn default() -> Self {
        Self {
            arm: Arm::Vanilla,
            dapo_max_refill: 8,
            refinement_quote_chars: 200,
            monitor: MonitorConfig::default(),
            intervention: InterventionConfig::default(),
        }
    }
}

/// Mentor backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Offline, deterministic diagnosis and templates.
    Rules,
    /// An OpenAI-compatible chat endpoint (falls back to rules on any failure).
    Llm,
    /// The same role prompts answered by an in-process model: `mentor.model = "self"` (the
    /// learner as its own mentor, weights updating as it trains) or a model source (a
    /// directory, a .gguf, a Hub id, `smollm2`). Falls back to rules like `llm`.
    Local,
}

/// `[mentor]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MentorSection {
    /// Backend.
    pub backend: Backend,
    /// Hint templates: `default` (the embedded ones), `curriculum` (short texts in the tiny
    /// model's alphabet), or a directory holding `hints.toml` / `static_hints.toml` /
    /// `llm.toml`.
    pub prompts: PromptSet,
    /// `llm`: base URL including the version path.
    pub base_url: String,
    /// `llm`: the model name sent to the endpoint (`default`: the string `default`);
    /// `local`: `self` (the learner) or a model source (directory, .gguf, Hub id, `smollm2`).
    pub model: MentorModel,
    /// `llm`: environment variable holding the API key (none when unset).
    pub api_key_env: Option<String>,
    /// `llm`: per-request timeout in seconds.
    pub timeout_secs: f64,
    /// `llm`: retries after the first try (transport errors, 429, 5xx); then rules.
    pub retries: u32,
    /// `llm`: most requests in flight at once.
    pub concurrency: usize,
    /// Mentor sampling temperature (unset: 0.2 for `llm`, 0 (greedy) for `local`).
    pub temperature: Option<f64>,
    /// Longest mentor reply in tokens (unset: 512 for `llm`, 256 for `local`).
    pub max_tokens: Option<usize>,
    /// Guard: longest hint in characters.
    pub max_hint_chars: usize,
    /// Guard: largest share of the reference solution's non-trivial lines a code hint may
    /// contain.
    pub max_code_overlap: f64,
}

impl Default for MentorSection {
    fn default() -> Self {
        Self {
            backend: Backend::Rules,
            prompts: PromptSet::Default,
            base_url: "http://127.0.0.1:8080/v1".into(),
            model: MentorModel::Default,
            api_key_env: None,
            timeout_secs: 60.0,
            retries: 2,
            concurrency: 4,
            temperature: None,
            max_tokens: None,
            max_hint_chars: 2000,
            max_code_overlap: 0.5,
        }
    }
}

/// `mentor.prompts`: which hint templates (spelled as a string in TOML).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum PromptSet {
    /// `default`: the embedded templates.
    Default,
    /// `curriculum`: short texts in the tiny model's alphabet.
    Curriculum,
    /// A directory holding `hints.toml` / `static_hints.toml` / `llm.toml`.
    Dir(PathBuf),
}

impl From<String> for PromptSet {
    fn from(s: String) -> Self {
        match s.as_str() {
            "default" => PromptSet::Default,
            "curriculum" => PromptSet::Curriculum,
            _ => PromptSet::Dir(PathBuf::from(s)),
        }
    }
}

impl From<PromptSet> for String {
    fn from(p: PromptSet) -> Self {
        match p {
            PromptSet::Default => "default".into(),
            PromptSet::Curriculum => "curriculum".into(),
            PromptSet::Dir(d) => d.display().to_string(),
        }
    }
}

/// `mentor.model` (spelled as a string in TOML).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum MentorModel {
    /// `default`: the endpoint's default model (`llm`); not a model for `local`.
    Default,
    /// `self`: the learner, its weights updating as it trains (`local`).
    Learner,
    /// A model name (`llm`) or a model source (`local`).
    Named(String),
}

impl From<String> for MentorModel {
    fn from(s: String) -> Self {
        match s.as_str() {
            "default" => MentorModel::Default,
            "self" => MentorModel::Learner,
            _ => MentorModel::Named(s),
        }
    }
}

impl From<MentorModel> for String {
    fn from(m: MentorModel) -> Self {
        match m {
            MentorModel::Default => "default".into(),
            MentorModel::Learner => "self".into(),
            MentorModel::Named(s) => s,
        }
    }
}

/// `[eval]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvalSection {
    /// Evaluate every this many steps (0: only before the first and after the last step).
    pub every: usize,
    /// Held-out problems per level (curriculum).
    pub problems: usize,
    /// Curriculum levels to evaluate (empty: the schedule's levels).
    pub levels: Vec<u32>,
    /// The k of pass@k (0: greedy pass@1 only).
    pub k: usize,
    /// Completions drawn per problem for pass@k and mean@k (0: `k`). pass@k is the unbiased
    /// estimator of Chen et al. (2021), so `samples > k` lowers its variance.
    pub samples: usize,
    /// Temperature of the pass@k samples.
    pub temperature: f64,
}

impl Default for EvalSection {
    fn default() -> Self {
        Self { every: 10, problems: 200, levels: vec![], k: 0, samples: 0, temperature: 1.0 }
    }
}

/// The presets shipped with the binary: `(name, TOML)`.
pub const PRESETS: &[(&str, &str)] = &[
    ("demo", include_str!("../../configs/demo.toml")),
    ("gsm8k-smollm2", include_str!("../../configs/gsm8k-smollm2.toml")),
    ("mbpp-smollm2", include_str!("../../configs/mbpp-smollm2.toml")),
    ("math500-eval", include_str!("../../configs/math500-eval.toml")),
    ("rescue-gsm8k-smollm2", include_str!("../../configs/rescue-gsm8k-smollm2.toml")),
    ("rescue-mbpp-smollm2", include_str!("../../configs/rescue-mbpp-smollm2.toml")),
    ("rescue-arith-smollm2", include_str!("../../configs/rescue-arith-smollm2.toml")),
];

impl TrainConfig {
    /// Reads `path` (or a preset name such as `demo`), applies `key=value` overrides
    /// (dotted keys, TOML values; a bare word is taken as a string) and validates.
    pub fn load(path: &str, sets: &[String]) -> Result<Self> {
        let (label, text) = match PRESETS.iter().find(|(n, _)| *n == path) {
            Some((name, text)) => (format!("preset `{name}`"), (*text).to_string()),
            None => {
                let text = std::fs::read_to_string(path).map_err(|source| {
                    if source.kind() == std::io::ErrorKind::NotFound {
                        let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
                        Error::Config {
                            file: path.to_string(),
                            message: format!(
                                "no such file, and not a preset (presets: {})",
                                names.join(", ")
                            ),
                        }
                    } else {
                        Error::Io { path: PathBuf::from(path), source }
                    }
                })?;
                (path.to_string(), text)
            }
        };
        Self::parse(&label, &text, sets)
    }

    /// Parses TOML text (named `label` in errors), applies overrides and validates.
    pub fn parse(label: &str, text: &str, sets: &[String]) -> Result<Self> {
        let mut doc: toml::Table = toml::from_str(text).map_err(|e| Error::Config {
            file: label.into(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let mut leaves = Vec::new();
        flatten("", &toml::Value::Table(doc.clone()), &mut leaves);
        if leaves.is_empty() {
            return Err(Error::Config { file: label.into(), message: empty_config_message() });
        }
        if !ALIASES.iter().any(|(alias, _)| get_path(&doc, alias).is_some()) {
            // The file alone first, so that its mistakes are reported with line and column
            // (a file using TRL's names is checked after they are resolved, without).
            toml::from_str::<TrainConfig>(text).map_err(|e| Error::Config {
                file: label.into(),
                message: e.to_string().trim_end().to_string(),
            })?;
        }
        resolve_aliases(&mut doc).map_err(|message| Error::Config { file: label.into(), message })?;
        let mut given: Vec<&str> = Vec::new();
        for set in sets {
            let key = set.split_once('=').map_or(set.as_str(), |(k, _)| k.trim());
            let canonical = alias_of(key).unwrap_or(key);
            if let Some(other) = given.iter().find(|g| alias_of(g).unwrap_or(g) == canonical && **g != key) {
                return Err(Error::Config {
                    file: "--set".into(),
                    message: format!("`{key}` and `{other}` name the same setting; give one"),
                });
            }
            given.push(key);
            match (alias_of(key), set.split_once('=')) {
                (Some(canonical), Some((_, value))) => apply_set(&mut doc, &format!("{canonical}={value}"))?,
                _ => apply_set(&mut doc, set)?,
            }
        }
        let mut cfg: TrainConfig = TrainConfig::deserialize(toml::Value::Table(doc)).map_err(|e| {
            let file =
                if sets.is_empty() { label.to_string() } else { format!("{label} with --set overrides") };
            Error::Config { file, message: e.to_string().trim_end().to_string() }
        })?;
        cfg.validate().map_err(|message| Error::Config { file: label.into(), message })?;
        // One value per setting: the GRPO section's copies follow `[sampling]`.
        cfg.grpo = cfg.grpo_config();
        Ok(cfg)
    }

    /// Training steps: `run.steps`, else the curriculum schedule's total.
    pub fn total_steps(&self) -> usize {
        if self.run.steps > 0 || self.data.kind != DataKind::Curriculum {
            self.run.steps
        } else {
            self.schedule_steps().unwrap_or(usize::MAX)
        }
    }

    /// The curriculum schedule's total steps (`None`: they add up past `usize::MAX`).
    fn schedule_steps(&self) -> Option<usize> {
        self.curriculum.schedule.iter().try_fold(0usize, |a, p| a.checked_add(p.steps))
    }

    /// The curriculum levels to evaluate.
    pub fn eval_levels(&self) -> Vec<u32> {
        if !self.eval.levels.is_empty() {
            return self.eval.levels.clone();
        }
        let mut v: Vec<u32> = self.curriculum.schedule.iter().map(|p| p.level).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The GRPO config with the sampling section's group size and length filled in.
    pub fn grpo_config(&self) -> GrpoConfig {
        GrpoConfig {
            num_generations: self.sampling.group_size,
            max_completion_length: self.sampling.max_new_tokens,
            ..self.grpo.clone()
        }
    }

    /// Checks values serde cannot: ranges and combinations. The message names the field.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let err = |field: &str, msg: String| Err(format!("`{field}`: {msg}"));
        if self.total_steps() == 0 {
            return err("run.steps", "must be > 0 (or give the curriculum a schedule)".into());
        }
        if self.sampling.group_size < 2 {
            return err(
                "sampling.group_size",
                format!("{} (GRPO needs at least 2)", self.sampling.group_size),
            );
        }
        if self.sampling.prompts_per_step == 0 {
            return err("sampling.prompts_per_step", "must be > 0".into());
        }
        if !(self.sampling.temperature > 0.0 && self.sampling.temperature.is_finite()) {
            return err("sampling.temperature", format!("{} (must be > 0)", self.sampling.temperature));
        }
        if self.sampling.max_new_tokens == 0 {
            return err("sampling.max_new_tokens", "must be > 0".into());
        }
        self.check_sizes()?;
        if self.data.kind == DataKind::Curriculum {
            if self.curriculum.schedule.is_empty() {
                return err("curriculum.schedule", "needs at least one phase".into());
            }
            for (i, &l) in self.curriculum.ten_levels.iter().enumerate() {
                if !(1..=MAX_LEVEL).contains(&l) {
                    return err(
                        &format!("curriculum.ten_levels[{i}]"),
                        format!("{l} (allowed: 1..={MAX_LEVEL})"),
                    );
                }
            }
            for (i, p) in self.curriculum.schedule.iter().enumerate() {
                if !(1..=MAX_LEVEL).contains(&p.level) {
                    return err(
                        &format!("curriculum.schedule[{i}].level"),
                        format!("{} (allowed: 1..={MAX_LEVEL})", p.level),
                    );
                }
            }
            for l in self
                .pretrain
                .unhinted_levels
                .iter()
                .chain(&self.pretrain.hinted_levels)
                .chain(&self.eval.levels)
            {
                if !(1..=MAX_LEVEL).contains(l) {
                    return err("pretrain/eval levels", format!("{l} (allowed: 1..={MAX_LEVEL})"));
                }
            }
        } else if self.pretrain.steps > 0 {
            return err(
                "pretrain.steps",
                "pretraining is only defined for `data.kind = \"curriculum\"`".into(),
            );
        }
        for (field, spec) in [("data.train", self.data.train_spec()), ("data.eval", self.data.eval_spec())] {
            match spec {
                Err(msg) => return err(field, msg),
                Ok(Some(TaskSpec::Split { dataset, .. })) if Some(dataset) != self.data.kind.dataset() => {
                    return err(
                        field,
                        format!(
                            "names {} but `data.kind` is {}: a run's tasks are of one kind (one verifier)",
                            dataset.name(),
                            self.data.kind.dataset().map_or("curriculum", Dataset::name)
                        ),
                    )
                }
                Ok(Some(_)) if self.data.kind == DataKind::Curriculum => {
                    return err(field, "the curriculum generates its tasks; leave it unset".into())
                }
                Ok(_) => {}
            }
        }
        if self.model.source == ModelChoice::Tiny && self.data.kind != DataKind::Curriculum {
            return err(
                "model.source",
                "`tiny` only speaks the curriculum's alphabet; use a real model".into(),
            );
        }
        if self.pretrain.steps > 0 {
            if !(self.pretrain.learning_rate > 0.0 && self.pretrain.learning_rate.is_finite()) {
                return err(
                    "pretrain.learning_rate",
                    format!("{} (must be a finite number > 0)", self.pretrain.learning_rate),
                );
            }
            if self.pretrain.batch == 0 {
                return err("pretrain.batch", "must be > 0".into());
            }
            if !(0.0..=1.0).contains(&self.pretrain.hinted_fraction) {
                return err(
                    "pretrain.hinted_fraction",
                    format!("{} (allowed: 0..=1)", self.pretrain.hinted_fraction),
                );
            }
            let (hinted, statics) = (self.pretrain.hinted_fraction, self.pretrain.static_fraction);
            if !(0.0..=1.0).contains(&statics) || hinted + statics > 1.0 {
                return err(
                    "pretrain.static_fraction",
                    format!("{statics} (allowed: 0..=1, and hinted_fraction + static_fraction <= 1)"),
                );
            }
            if self.pretrain.unhinted_levels.is_empty() && self.pretrain.hinted_fraction < 1.0 {
                return err("pretrain.unhinted_levels", "empty while some examples are unhinted".into());
            }
            if self.pretrain.hinted_levels.is_empty() && self.pretrain.hinted_fraction > 0.0 {
                return err("pretrain.hinted_levels", "empty while some examples are hinted".into());
            }
        }
        if self.model.source == ModelChoice::Tiny
            && !self.model.hidden.is_multiple_of(self.model.heads.max(1))
        {
            return err(
                "model.hidden",
                format!("{} is not a multiple of model.heads = {}", self.model.hidden, self.model.heads),
            );
        }
        if self.mentor.backend == Backend::Local && self.mentor.model == MentorModel::Default {
            return err(
                "mentor.model",
                "the `local` backend needs `self` (the learner) or a model source (directory, .gguf, Hub id, `smollm2`)"
                    .into(),
            );
        }
        if self.mentor.backend == Backend::Llm && self.mentor.model == MentorModel::Learner {
            return err("mentor.model", "`self` (the learner) needs `mentor.backend = \"local\"`".into());
        }
        if self.mentor.backend == Backend::Llm
            && !(self.mentor.timeout_secs > 0.0 && self.mentor.timeout_secs.is_finite())
        {
            return err(
                "mentor.timeout_secs",
                format!("{} (must be a finite number > 0)", self.mentor.timeout_secs),
            );
        }
        if self.mentor.concurrency == 0 {
            return err("mentor.concurrency", "must be > 0".into());
        }
        if let Some(t) = self.mentor.temperature {
            if !(t >= 0.0 && t.is_finite()) {
                return err("mentor.temperature", format!("{t} (must be a finite number >= 0)"));
            }
        }
        if self.mentor.max_tokens == Some(0) {
            return err("mentor.max_tokens", "must be > 0".into());
        }
        if !(0.0..=1.0).contains(&self.mentor.max_code_overlap) {
            return err(
                "mentor.max_code_overlap",
                format!("{} (allowed: 0..=1)", self.mentor.max_code_overlap),
            );
        }
        if !(self.sampling.top_p > 0.0 && self.sampling.top_p <= 1.0) {
            return err("sampling.top_p", format!("{} (allowed: (0, 1]; 1 is off)", self.sampling.top_p));
        }
        self.grpo_config().validate().map_err(|e| format!("[grpo] {e}"))?;
        if self.eval.samples > 0 && self.eval.samples < self.eval.k {
            return err(
                "eval.samples",
                format!(
                    "{} is fewer than eval.k = {} (pass@k needs at least k draws)",
                    self.eval.samples, self.eval.k
                ),
            );
        }
        self.rescue.validate()?;
        if self.strategy.intervention.hinted_samples == 0 {
            return err("strategy.intervention.hinted_samples", "must be > 0".into());
        }
        Ok(())
    }

    /// Sizes that must not overflow or allocate without bound before the run's checks: the
    /// schedule's total, steps × prompts, rows per step, optimizer steps, and the counts held
    /// up front ([`MAX_HELD_TASKS`], [`MAX_SAMPLES`], [`MAX_TINY_DIM`]). Lengths are checked
    /// against the model when it is loaded, memory against the machine
    /// (`train::start`).
    fn check_sizes(&self) -> std::result::Result<(), String> {
        let err = |field: &str, msg: String| Err(format!("`{field}`: {msg}"));
        if self.data.kind == DataKind::Curriculum && self.run.steps == 0 && self.schedule_steps().is_none() {
            return err("curriculum.schedule", "its phases' steps add up past the largest integer".into());
        }
        let steps = self.total_steps();
        let (prompts, group) = (self.sampling.prompts_per_step, self.sampling.group_size);
        let steps_field = if self.run.steps > 0 || self.data.kind != DataKind::Curriculum {
            "run.steps"
        } else {
            "curriculum.schedule"
        };
        if steps.checked_mul(prompts).is_none() {
            return Err(format!(
                "`sampling.prompts_per_step` = {prompts} over `{steps_field}` = {steps} steps: \
                 their product overflows the task index"
            ));
        }
        if prompts.checked_mul(group).is_none() {
            return err(
                "sampling.group_size",
                format!("{prompts} prompts x {group} completions per step overflows the row count"),
            );
        }
        if steps.checked_mul(self.grpo.num_iterations.max(1)).is_none() {
            return Err(format!(
                "`grpo.num_iterations` = {} over `{steps_field}` = {steps} steps: their product \
                 overflows the optimizer's step count",
                self.grpo.num_iterations
            ));
        }
        let capped = [
            ("eval.problems", self.eval.problems, MAX_HELD_TASKS),
            ("curriculum.pool", self.curriculum.pool, MAX_HELD_TASKS),
            ("eval.k", self.eval.k, MAX_SAMPLES),
            ("eval.samples", self.eval.samples, MAX_SAMPLES),
            ("pretrain.batch", self.pretrain.batch, MAX_SAMPLES),
        ];
        for (field, value, max) in capped {
            if value > max {
                return err(
                    field,
                    format!("{value} (at most {max}: they are generated and held in memory at once)"),
                );
            }
        }
        if self.model.source == ModelChoice::Tiny {
            let m = &self.model;
            for (field, value) in [
                ("model.layers", m.layers),
                ("model.hidden", m.hidden),
                ("model.heads", m.heads),
                ("model.intermediate", m.intermediate),
            ] {
                if !(1..=MAX_TINY_DIM).contains(&value) {
                    return err(field, format!("{value} (allowed: 1..={MAX_TINY_DIM} for the tiny model)"));
                }
            }
        }
        Ok(())
    }

    /// The run directory.
    pub fn output_dir(&self) -> &Path {
        &self.run.output_dir
    }

    /// The dotted keys in which `self` differs from `saved` (the configuration a run was
    /// started with), leaving out [`RESUMABLE_KEYS`]: what `--resume` must refuse, since a run
    /// continued under another arm, seed, model or schedule would be labelled as one run.
    pub fn resume_conflicts(&self, saved: &TrainConfig) -> Vec<String> {
        let leaves = |cfg: &TrainConfig| {
            let mut out = Vec::new();
            match toml::Value::try_from(cfg) {
                Ok(v) => flatten("", &v, &mut out),
                // Not expected (the run wrote its config.toml the same way); refuse plainly.
                Err(e) => {
                    out.push(("(the whole configuration)".to_string(), toml::Value::String(e.to_string())))
                }
            }
            out.into_iter().collect::<std::collections::BTreeMap<String, toml::Value>>()
        };
        let (now, then) = (leaves(self), leaves(saved));
        let mut keys: Vec<String> = now
            .keys()
            .chain(then.keys())
            .filter(|k| !RESUMABLE_KEYS.contains(&k.as_str()) && now.get(*k) != then.get(*k))
            .cloned()
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

/// Why an empty configuration is refused, naming the presets.
fn empty_config_message() -> String {
    let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
    format!(
        "sets nothing (an empty file, or only comments and empty tables): it would start a run \
         with every default into `runs/run`\nhint: start from a preset ({}), e.g. `--config {}`, \
         or copy one of configs/*.toml and edit it",
        names.join(", "),
        names[0]
    )
}

/// Most tasks a setting may ask to generate and hold up front (`eval.problems`,
/// `curriculum.pool`): a million problems per level is far beyond any evaluation, and larger
/// counts only exhaust memory before the run's memory check can refuse them.
pub const MAX_HELD_TASKS: usize = 1_000_000;
/// Most completions per evaluation problem (`eval.k`, `eval.samples`) and examples per
/// pretraining step (`pretrain.batch`).
pub const MAX_SAMPLES: usize = 1 << 16;
/// Largest tiny-model dimension (`model.layers`, `model.hidden`, `model.heads`,
/// `model.intermediate`).
pub const MAX_TINY_DIM: usize = 1 << 16;

/// Keys that may differ between a run and its `--resume`: how long it runs, how often it
/// checkpoints, whether it shows progress, and where its directory is spelled from.
pub const RESUMABLE_KEYS: &[&str] =
    &["run.steps", "run.checkpoint_every", "run.progress", "run.output_dir", "run.log_completions_every"];

/// `(dotted key, leaf value)` of every leaf of `v` (arrays are leaves).
fn flatten(prefix: &str, v: &toml::Value, out: &mut Vec<(String, toml::Value)>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&key, v, out);
            }
        }
        leaf => out.push((prefix.to_string(), leaf.clone())),
    }
}

/// TRL's `GRPOConfig` names accepted in `[grpo]`, and the setting each one is: a key that is
/// accepted is honoured (before, `grpo.num_generations` was silently replaced by
/// `sampling.group_size`).
pub const ALIASES: &[(&str, &str)] = &[
    ("grpo.num_generations", "sampling.group_size"),
    ("grpo.max_completion_length", "sampling.max_new_tokens"),
    ("grpo.temperature", "sampling.temperature"),
    ("grpo.top_p", "sampling.top_p"),
    ("grpo.top_k", "sampling.top_k"),
    ("grpo.max_steps", "run.steps"),
    ("grpo.save_steps", "run.checkpoint_every"),
    ("grpo.eval_steps", "eval.every"),
];

/// The setting `key` is another name of, when it is one of [`ALIASES`].
fn alias_of(key: &str) -> Option<&'static str> {
    ALIASES.iter().find(|(alias, _)| *alias == key).map(|(_, canonical)| *canonical)
}

fn get_path<'a>(doc: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let mut parts = key.split('.');
    let mut v = doc.get(parts.next()?)?;
    for p in parts {
        v = v.as_table()?.get(p)?;
    }
    Some(v)
}

/// Moves every alias in `doc` to its setting. Both names with different values is an error;
/// the same value twice (as in a `config.toml` a run wrote) is one setting.
fn resolve_aliases(doc: &mut toml::Table) -> std::result::Result<(), String> {
    for (alias, canonical) in ALIASES {
        let (section, field) = alias.split_once('.').unwrap_or(("", alias));
        let Some(value) = doc.get(section).and_then(|s| s.as_table()).and_then(|t| t.get(field)).cloned()
        else {
            continue;
        };
        if let Some(existing) = get_path(doc, canonical) {
            if existing != &value {
                return Err(format!(
                    "`{alias}` = {value} and `{canonical}` = {existing} name the same setting; give one"
                ));
            }
        }
        if let Some(t) = doc.get_mut(section).and_then(|s| s.as_table_mut()) {
            t.remove(field);
        }
        let (c_section, c_field) = canonical.split_once('.').unwrap_or(("", canonical));
        let entry =
            doc.entry(c_section.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let Some(t) = entry.as_table_mut() {
            t.insert(c_field.to_string(), value);
        }
    }
    Ok(())
}

/// Applies one `a.b.c=value` override to the TOML document.
fn apply_set(doc: &mut toml::Table, set: &str) -> Result<()> {
    let bad = |message: String| Error::Config { file: "--set".into(), message };
    let (key, raw) = set.split_once('=').ok_or_else(|| bad(format!("`{set}` is not key=value")))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(bad(format!("`{key}` is not a dotted key")));
    }
    // A TOML value if it parses as one (numbers, booleans, arrays, quoted strings), else the
    // raw text as a string.
    let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.trim().to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    let mut table = doc;
    for part in &parts[..parts.len() - 1] {
        let entry =
            table.entry((*part).to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        table = entry.as_table_mut().ok_or_else(|| bad(format!("`{part}` in `{key}` is not a table")))?;
    }
    table.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_validates() {
        for (name, _) in PRESETS {
            TrainConfig::load(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn overrides_reach_nested_fields_with_typed_values() {
        let cfg = TrainConfig::load(
            "demo",
            &[
                "run.seed=7".into(),
                "strategy.arm=vanilla".into(),
                "grpo.learning_rate=0.001".into(),
                "strategy.intervention.credit=\"in_context\"".into(),
                "run.output_dir=/tmp/x y".into(),
            ],
        )
        .unwrap();
        assert_eq!(cfg.run.seed, 7);
        assert_eq!(cfg.strategy.arm, Arm::Vanilla);
        assert_eq!(cfg.grpo.learning_rate, 0.001);
        assert_eq!(cfg.strategy.intervention.credit, mentor_integration::Credit::InContext);
        assert_eq!(cfg.run.output_dir, PathBuf::from("/tmp/x y"));
    }

    #[test]
    fn errors_name_the_field_and_the_allowed_values() {
        let e = TrainConfig::load("demo", &["strategy.arm=mentr".into()]).unwrap_err().to_string();
        assert!(e.contains("mentr") && e.contains("vanilla") && e.contains("mentor"), "{e}");
        let e = TrainConfig::parse("x.toml", "[run]\nsede = 1\n", &[]).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("sede") && e.contains("line 2"), "{e}");
        let e = TrainConfig::load("demo", &["sampling.group_size=1".into()]).unwrap_err().to_string();
        assert!(e.contains("sampling.group_size"), "{e}");
        let e = TrainConfig::load("demo", &["curriculum.schedule=[{level = 12, steps = 3}]".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("curriculum.schedule[0].level") && e.contains("1..=9"), "{e}");
        let e = TrainConfig::load("demo", &["grpo.learning_rate=-1".into()]).unwrap_err().to_string();
        assert!(e.contains("learning_rate"), "{e}");
        assert!(TrainConfig::load("demo", &["novalue".into()]).is_err());
        let e = TrainConfig::load("demo", &["mentor.backend=local".into()]).unwrap_err().to_string();
        assert!(e.contains("mentor.model") && e.contains("self"), "{e}");
        assert!(
            TrainConfig::load("demo", &["mentor.backend=local".into(), "mentor.model=self".into()]).is_ok()
        );
        let e = TrainConfig::load("demo", &["pretrain.static_fraction=0.6".into()]).unwrap_err().to_string();
        assert!(e.contains("pretrain.static_fraction"), "{e}");
        let e = TrainConfig::load("demo", &["strategy.intervention.hint_format=\"Hint: {hint}\"".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("hint_format") && e.contains("{prompt}"), "{e}");
        let e = TrainConfig::load("/nonexistent/x.toml", &[]).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/x.toml"), "{e}");
    }

    #[test]
    fn trl_names_are_honoured_and_one_setting_given_twice_is_an_error() {
        let cfg = TrainConfig::parse(
            "x.toml",
            "[grpo]\nnum_generations = 4\nmax_completion_length = 32\nmax_steps = 7\nsave_steps = 3\n\
             eval_steps = 2\ntemperature = 0.7\n",
            &[],
        )
        .unwrap();
        assert_eq!((cfg.sampling.group_size, cfg.sampling.max_new_tokens), (4, 32));
        assert_eq!((cfg.run.steps, cfg.run.checkpoint_every, cfg.eval.every), (7, 3, 2));
        assert_eq!(cfg.sampling.temperature, 0.7);
        assert_eq!((cfg.grpo.num_generations, cfg.grpo.max_completion_length), (4, 32));
        let cfg = TrainConfig::load("demo", &["grpo.num_generations=5".into()]).unwrap();
        assert_eq!((cfg.sampling.group_size, cfg.grpo_config().num_generations), (5, 5));

        let e =
            TrainConfig::parse("x.toml", "[grpo]\nnum_generations = 4\n[sampling]\ngroup_size = 8\n", &[])
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("x.toml") && e.contains("grpo.num_generations") && e.contains("sampling.group_size"),
            "{e}"
        );
        let e = TrainConfig::load("demo", &["grpo.max_steps=3".into(), "run.steps=4".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("run.steps") && e.contains("grpo.max_steps"), "{e}");
        // A written config (both names, one value) reads back as itself.
        let cfg = TrainConfig::load("demo", &["sampling.group_size=3".into()]).unwrap();
        let again = TrainConfig::parse("config.toml", &toml::to_string_pretty(&cfg).unwrap(), &[]).unwrap();
        assert_eq!(again, cfg);
        assert!(again.resume_conflicts(&cfg).is_empty());
        // TRL's top_p / top_k are ours; an out-of-range top_p is refused, not ignored.
        let cfg = TrainConfig::parse("x.toml", "[grpo]\ntop_p = 0.9\ntop_k = 20\n", &[]).unwrap();
        assert_eq!((cfg.sampling.top_p, cfg.sampling.top_k), (0.9, 20));
        let e = TrainConfig::load("demo", &["sampling.top_p=1.5".into()]).unwrap_err().to_string();
        assert!(e.contains("sampling.top_p"), "{e}");
    }

    #[test]
    fn sentinel_strings_read_as_enums_and_write_back_the_same() {
        let cfg = TrainConfig::load(
            "demo",
            &[
                "mentor.backend=local".into(),
                "mentor.model=self".into(),
                "mentor.prompts=my/prompts".into(),
                "mentor.retries=5".into(),
                "mentor.max_code_overlap=0.25".into(),
                "strategy.refinement_quote_chars=80".into(),
            ],
        )
        .unwrap();
        assert_eq!(cfg.model.source, ModelChoice::Tiny);
        assert_eq!(cfg.mentor.model, MentorModel::Learner);
        assert_eq!(cfg.mentor.prompts, PromptSet::Dir("my/prompts".into()));
        assert_eq!((cfg.mentor.retries, cfg.mentor.max_code_overlap), (5, 0.25));
        assert_eq!(cfg.strategy.refinement_quote_chars, 80);
        let text = toml::to_string_pretty(&cfg).unwrap();
        assert!(text.contains("model = \"self\"") && text.contains("source = \"tiny\""), "{text}");
        assert_eq!(TrainConfig::parse("config.toml", &text, &[]).unwrap(), cfg);
        let cfg = TrainConfig::load("gsm8k-smollm2", &[]).unwrap();
        assert_eq!(cfg.model.source, ModelChoice::Smollm2);
        assert_eq!(
            ModelChoice::from("HuggingFaceTB/x".to_string()),
            ModelChoice::Source("HuggingFaceTB/x".into())
        );
        // `self` is a local model; an endpoint cannot serve the learner.
        let e = TrainConfig::load("demo", &["mentor.backend=llm".into(), "mentor.model=self".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("mentor.model") && e.contains("local"), "{e}");
        let e = TrainConfig::load("demo", &["mentor.max_code_overlap=2".into()]).unwrap_err().to_string();
        assert!(e.contains("mentor.max_code_overlap"), "{e}");
    }

    #[test]
    fn arm_names_agree_across_serde_clap_and_reports() {
        use clap::ValueEnum;
        assert_eq!(Arm::value_variants(), &Arm::ALL[..]);
        for arm in Arm::ALL {
            let serde_name = toml::Value::try_from(arm).unwrap();
            assert_eq!(serde_name.as_str(), Some(arm.name()));
            assert_eq!(arm.to_possible_value().unwrap().get_name(), arm.name());
            assert_eq!(Arm::parse(arm.name()), Some(arm));
            assert_eq!(Arm::from_str(arm.name(), false), Ok(arm));
        }
        assert_eq!(Arm::parse("mentorr"), None);
    }

    #[test]
    fn unknown_presets_and_pretrain_rates_are_named() {
        let e = TrainConfig::load("dmeo", &[]).unwrap_err().to_string();
        assert!(e.contains("dmeo") && e.contains("not a preset") && e.contains("demo, gsm8k-smollm2"), "{e}");
        let e = TrainConfig::load("demo", &["pretrain.learning_rate=-1".into()]).unwrap_err().to_string();
        assert!(e.contains("`pretrain.learning_rate`") && e.contains("-1"), "{e}");
        let e = TrainConfig::load("demo", &["pretrain.learning_rate=nan".into()]).unwrap_err().to_string();
        assert!(e.contains("`pretrain.learning_rate`"), "{e}");
    }

    /// The error of `demo` with `sets`, as text.
    fn refused(sets: &[&str]) -> String {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        TrainConfig::load("demo", &sets).unwrap_err().to_string()
    }

    #[test]
    fn nan_negative_and_infinite_rates_are_named() {
        for (set, field) in [
            ("grpo.learning_rate=nan", "learning_rate"),
            ("grpo.learning_rate=-1e-4", "learning_rate"),
            ("grpo.learning_rate=inf", "learning_rate"),
            ("pretrain.learning_rate=-inf", "`pretrain.learning_rate`"),
            ("pretrain.hinted_fraction=nan", "`pretrain.hinted_fraction`"),
            ("grpo.beta=-0.1", "beta"),
            ("grpo.weight_decay=nan", "weight_decay"),
            ("sampling.temperature=inf", "`sampling.temperature`"),
            ("sampling.temperature=nan", "`sampling.temperature`"),
            ("sampling.temperature=-1", "`sampling.temperature`"),
            ("sampling.top_p=nan", "`sampling.top_p`"),
            ("mentor.temperature=inf", "`mentor.temperature`"),
            ("mentor.max_code_overlap=nan", "`mentor.max_code_overlap`"),
        ] {
            let e = refused(&[set]);
            assert!(e.contains(field), "{set}: {e}");
        }
    }

    #[test]
    fn zero_sizes_are_named() {
        for field in [
            "sampling.prompts_per_step",
            "sampling.group_size",
            "sampling.max_new_tokens",
            "pretrain.batch",
            "mentor.concurrency",
            "mentor.max_tokens",
            "strategy.intervention.hinted_samples",
            "grpo.gradient_accumulation_steps",
            "grpo.num_iterations",
            "model.layers",
            "model.hidden",
            "rescue.batch_rows",
        ] {
            let e = refused(&[&format!("{field}=0")]);
            let short = field.rsplit('.').next().unwrap();
            assert!(e.contains(short), "{field}: {e}");
        }
        let e = refused(&["run.steps=0", "curriculum.schedule=[]"]);
        assert!(e.contains("run.steps"), "{e}");
    }

    #[test]
    fn wrong_types_and_broken_toml_name_file_line_and_key() {
        let e = TrainConfig::parse("x.toml", "[sampling]\ngroup_size = \"eight\"\n", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.toml") && e.contains("line 2") && e.contains("group_size"), "{e}");
        let e = TrainConfig::parse("x.toml", "[run]\nseed = -1\n", &[]).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("line 2") && e.contains("seed"), "{e}");
        let e = TrainConfig::parse("x.toml", "[run]\nprogress = \"yes\"\n", &[]).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("progress"), "{e}");
        let e = refused(&["sampling.group_size=eight"]);
        assert!(e.contains("--set") && e.contains("eight"), "{e}");
        let e = refused(&["run=3"]);
        assert!(e.contains("--set") && e.contains("run"), "{e}");
        for broken in ["[run", "[run]\nseed = ", "[run]\nname = \"unterminated\n", "= 3\n"] {
            let e = TrainConfig::parse("x.toml", broken, &[]).unwrap_err().to_string();
            assert!(e.contains("x.toml") && e.contains("line"), "{broken:?}: {e}");
        }
    }

    #[test]
    fn a_file_that_is_not_utf8_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.toml");
        std::fs::write(&path, b"[run]\nname = \"caf\xe9\"\n").unwrap();
        let e = TrainConfig::load(path.to_str().unwrap(), &[]).unwrap_err().to_string();
        assert!(e.contains("latin1.toml") && e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn an_empty_config_is_refused_naming_the_presets() {
        for text in ["", "\n\n", "# only a comment\n", "[run]\n[sampling]\n"] {
            let e = TrainConfig::parse("empty.toml", text, &[]).unwrap_err().to_string();
            assert!(e.contains("empty.toml") && e.contains("sets nothing"), "{text:?}: {e}");
            for (name, _) in PRESETS {
                assert!(e.contains(name), "{name} missing from: {e}");
            }
        }
        // Overrides do not make an empty file a configuration.
        assert!(TrainConfig::parse("empty.toml", "", &["run.steps=3".into()]).is_err());
        // One setting is enough.
        assert!(TrainConfig::parse("one.toml", "[run]\nsteps = 3\n", &[]).is_ok());
    }

    #[test]
    fn huge_values_are_refused_or_harmless_never_a_panic() {
        // Every integer leaf of every preset, set to the largest TOML integer: loading either
        // refuses it by name or accepts it (lengths and memory are checked against the model
        // and the machine when the run starts: `train::preflight`).
        for (preset, _) in PRESETS {
            let cfg = TrainConfig::load(preset, &[]).unwrap();
            let mut leaves = Vec::new();
            flatten("", &toml::Value::try_from(&cfg).unwrap(), &mut leaves);
            for (key, value) in leaves {
                if !matches!(value, toml::Value::Integer(_)) || alias_of(&key).is_some() {
                    continue;
                }
                let set = format!("{key}={}", i64::MAX);
                let result =
                    std::panic::catch_unwind(|| TrainConfig::load(preset, std::slice::from_ref(&set)));
                let result = result.unwrap_or_else(|_| panic!("{preset} --set {set} panicked"));
                if let Ok(cfg) = result {
                    let _ = cfg.total_steps();
                    let _ = cfg.grpo_config();
                }
            }
        }
        for (set, field) in [
            ("eval.problems=9223372036854775807", "`eval.problems`"),
            ("curriculum.pool=9223372036854775807", "`curriculum.pool`"),
            ("eval.k=9223372036854775807", "`eval.k`"),
            ("pretrain.batch=9223372036854775807", "`pretrain.batch`"),
            ("model.hidden=9223372036854775807", "`model.hidden`"),
            ("sampling.prompts_per_step=9223372036854775807", "`sampling.prompts_per_step`"),
            ("sampling.group_size=9223372036854775807", "`sampling.group_size`"),
            ("grpo.num_iterations=9223372036854775807", "`grpo.num_iterations`"),
        ] {
            let e = refused(&[set]);
            assert!(e.contains(field) && e.contains("9223372036854775807"), "{set}: {e}");
        }
        let e = refused(&[
            "curriculum.schedule=[{level = 2, steps = 9223372036854775807}, {level = 3, steps = 9223372036854775807}]",
        ]);
        assert!(e.contains("curriculum.schedule"), "{e}");
    }

    #[test]
    fn resume_conflicts_name_every_changed_key_but_the_resumable_ones() {
        let saved = TrainConfig::load("demo", &[]).unwrap();
        let same = TrainConfig::load(
            "demo",
            &["run.steps=500".into(), "run.progress=false".into(), "run.output_dir=/elsewhere".into()],
        )
        .unwrap();
        assert!(same.resume_conflicts(&saved).is_empty());
        let other = TrainConfig::load(
            "demo",
            &[
                "strategy.arm=vanilla".into(),
                "run.seed=5".into(),
                "model.layers=2".into(),
                "run.steps=9".into(),
            ],
        )
        .unwrap();
        assert_eq!(other.resume_conflicts(&saved), vec!["model.layers", "run.seed", "strategy.arm"]);
    }

    #[test]
    fn curriculum_steps_default_to_the_schedule() {
        let cfg = TrainConfig::load(
            "demo",
            &[
                "curriculum.schedule=[{level = 2, steps = 3}, {level = 4, steps = 5}]".into(),
                "run.steps=0".into(),
                "eval.levels=[]".into(),
            ],
        )
        .unwrap();
        assert_eq!(cfg.total_steps(), 8);
        assert_eq!(cfg.eval_levels(), vec![2, 4]);
    }
}
