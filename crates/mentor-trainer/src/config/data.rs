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
                Ok(_) => {}
            }
        }
        Ok(())
    }
}
