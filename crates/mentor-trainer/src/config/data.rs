//! `[data]`: where tasks come from, and how a code verdict becomes a reward.

use serde::{Deserialize, Serialize};

use std::path::PathBuf;

use mentor_core::datasets::Dataset;

use super::invalid;

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
    /// Training tasks: `dataset:split` (e.g. `gsm8k:train`), a JSONL file in `kind`'s format,
    /// or generated problems (`arith 2-step seed 0`, `heldout 2-4-step seed *`; `kind` must be
    /// `gsm8k`; `data.limit` of them, 4,096 when 0). Default: the set's training split (GSM8K and
    /// MBPP `train`); MATH-500 and HumanEval are evaluation-only and have none.
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
    /// How every training and evaluation prompt is built: `system` (the system prompt and the
    /// problem) or `few_shot` (two worked examples before the problem: a generated family's
    /// own example problems, or the easiest stratum's of a dataset, as `mentor probe` builds
    /// them).
    pub prompt: crate::config::PromptStyle,
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
            prompt: crate::config::PromptStyle::System,
            code_reward: CodeReward::Binary,
        }
    }
}

/// A family of generated word problems (math tasks in GSM8K's form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// The development family ([`mentor_tasks::arith`]).
    Arith,
    /// The held-out templates ([`mentor_tasks::heldout`]).
    Heldout,
}

impl Family {
    /// `arith`, `heldout`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Arith => "arith",
            Family::Heldout => "heldout",
        }
    }
}

/// Generated problems: `arith <steps>-step seed <seed>` or `heldout <steps>[-<steps>]-step seed
/// <seed>`; seed `*` is the run's seed (each run seed draws new problems).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    /// The family.
    pub family: Family,
    /// Steps per problem, lowest and highest (`heldout` mixes them: problem `i` has
    /// `lo + (i / 8) % (hi - lo + 1)`).
    pub steps: (usize, usize),
    /// The family seed (`None`: the run's).
    pub seed: Option<u64>,
}

impl std::fmt::Display for Generated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (lo, hi) = self.steps;
        let steps = if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") };
        let seed = self.seed.map_or_else(|| "*".to_string(), |s| s.to_string());
        write!(f, "{} {steps}-step seed {seed}", self.family.name())
    }
}

impl Generated {
    /// Parses a generated family's name; `None` when `text` names none (another kind of spec),
    /// an error naming the expected form when it names one badly.
    pub fn parse(text: &str) -> Option<std::result::Result<Self, String>> {
        let (family, rest) = [Family::Arith, Family::Heldout]
            .into_iter()
            .find_map(|f| Some((f, text.strip_prefix(f.name())?.strip_prefix(' ')?)))?;
        let steps_of = |t: &str| -> Option<(usize, usize)> {
            match t.split_once('-') {
                Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                None => t.parse().ok().map(|n| (n, n)),
            }
        };
        let parsed = rest.split_once("-step seed ").and_then(|(steps, seed)| {
            let seed = if seed == "*" { None } else { Some(seed.parse::<u64>().ok()?) };
            Some(Generated { family, steps: steps_of(steps)?, seed })
        });
        let ok = parsed.filter(|g| {
            let (lo, hi) = g.steps;
            (1..=4).contains(&lo) && lo <= hi && hi <= 4 && (family == Family::Heldout || lo == hi)
        });
        Some(ok.ok_or_else(|| {
            format!(
                "`{text}`: expected `{} <steps>-step seed <seed>` (steps 1-4{}; seed a number or `*`)",
                family.name(),
                if family == Family::Heldout { ", or a range such as 2-4" } else { "" }
            )
        }))
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
    /// Generated word problems (math, in GSM8K's form).
    Generated(Generated),
}

impl std::fmt::Display for TaskSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskSpec::Split { dataset, split } => write!(f, "{}:{split}", dataset.name()),
            TaskSpec::File(p) => write!(f, "{}", p.display()),
            TaskSpec::Generated(g) => write!(f, "{g}"),
        }
    }
}

impl TaskSpec {
    /// Parses a generated family ([`Generated::parse`]), `dataset:split` (a known set and one
    /// of its splits), else takes `text` as a file.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        if let Some(g) = Generated::parse(text) {
            return g.map(TaskSpec::Generated);
        }
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

impl DataSection {
    /// `train` and `eval` parse, name a split of this run's dataset, and are unset for the
    /// curriculum (which generates its tasks).
    pub fn validate(&self) -> Result<(), String> {
        for (field, spec) in [("data.train", self.train_spec()), ("data.eval", self.eval_spec())] {
            match spec {
                Err(msg) => return invalid(field, msg),
                Ok(Some(TaskSpec::Split { dataset, .. })) if Some(dataset) != self.kind.dataset() => {
                    return invalid(
                        field,
                        format!(
                            "names {} but `data.kind` is {}: a run's tasks are of one kind (one verifier)",
                            dataset.name(),
                            self.kind.dataset().map_or("curriculum", Dataset::name)
                        ),
                    )
                }
                Ok(Some(_)) if self.kind == DataKind::Curriculum => {
                    return invalid(field, "the curriculum generates its tasks; leave it unset")
                }
                Ok(Some(TaskSpec::Generated(g))) if self.kind != DataKind::Gsm8k => {
                    return invalid(
                        field,
                        format!("`{g}` is math in GSM8K's form: set `data.kind = \"gsm8k\"` (its verifier)"),
                    )
                }
                Ok(_) => {}
            }
        }
        Ok(())
    }
}
