//! Loaders for the public benchmark sets, each into [`Task`]s.
//!
//! Every loader reads a whole file, never panics on its content, and reports the first bad
//! record with the file, the 1-based line (or array element) and the field. Formats:
//!
//! | set | file | gold answer | privileged data |
//! |---|---|---|---|
//! | GSM8K | `train.jsonl`, `test.jsonl` | text after `#### ` | the worked rationale |
//! | MATH-500 | `test.jsonl` | LaTeX `answer` | `solution`, `level`, `subject` |
//! | HumanEval | `HumanEval.jsonl` | — | `test`, `entry_point`, canonical solution |
//! | MBPP | `mbpp.jsonl` or `sanitized-mbpp.json` | — | asserts, setup code, reference code |
//! | AIME 2024 | `test.jsonl` | integer (leading zeros dropped) | `solution` |
//! | AMC 2023 | `test.jsonl` | number (JSON float, `27.0` → `27`) | — |

mod competition;
mod fields;
mod gsm8k;
mod humaneval;
mod math500;
mod mbpp;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{DatasetError, Task};

pub use competition::{load_aime, load_amc};
pub use gsm8k::load_gsm8k;
pub use humaneval::load_humaneval;
pub use math500::load_math500;
pub use mbpp::{load_mbpp, MbppSplit};

pub(crate) use fields::Loc;

/// The benchmark sets this crate can load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dataset {
    /// Grade-school math word problems.
    Gsm8k,
    /// The 500-problem MATH test subset.
    Math500,
    /// OpenAI HumanEval (164 Python functions).
    HumanEval,
    /// Mostly Basic Python Problems (standard test split 11–510).
    Mbpp,
    /// AIME 2024 (30 problems).
    Aime2024,
    /// AMC 2023 (40 problems).
    Amc2023,
}

impl Dataset {
    /// Every supported set.
    pub const ALL: [Dataset; 6] = [
        Dataset::Gsm8k,
        Dataset::Math500,
        Dataset::HumanEval,
        Dataset::Mbpp,
        Dataset::Aime2024,
        Dataset::Amc2023,
    ];

    /// The set's name, also its folder name under a data directory.
    pub fn name(self) -> &'static str {
        match self {
            Dataset::Gsm8k => "gsm8k",
            Dataset::Math500 => "math500",
            Dataset::HumanEval => "humaneval",
            Dataset::Mbpp => "mbpp",
            Dataset::Aime2024 => "aime2024",
            Dataset::Amc2023 => "amc2023",
        }
    }

    /// Parses a name as written by [`Dataset::name`].
    pub fn from_name(name: &str) -> Option<Dataset> {
        Dataset::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The default evaluation file of the set, relative to a data directory.
    pub fn default_file(self) -> &'static str {
        match self {
            Dataset::Gsm8k => "gsm8k/test.jsonl",
            Dataset::Math500 => "math500/test.jsonl",
            Dataset::HumanEval => "humaneval/HumanEval.jsonl",
            Dataset::Mbpp => "mbpp/mbpp.jsonl",
            Dataset::Aime2024 => "aime2024/test.jsonl",
            Dataset::Amc2023 => "amc2023/test.jsonl",
        }
    }

    /// Loads `file` as this set (MBPP with its standard test split).
    pub fn load(self, file: &Path) -> Result<Vec<Task>, DatasetError> {
        match self {
            Dataset::Gsm8k => load_gsm8k(file),
            Dataset::Math500 => load_math500(file),
            Dataset::HumanEval => load_humaneval(file),
            Dataset::Mbpp => load_mbpp(file, MbppSplit::Test),
            Dataset::Aime2024 => load_aime(file),
            Dataset::Amc2023 => load_amc(file),
        }
    }

    /// Loads the default file of this set from a data directory.
    pub fn load_from_dir(self, data_dir: &Path) -> Result<Vec<Task>, DatasetError> {
        self.load(&data_dir.join(self.default_file()))
    }

    /// The splits of the set, by name. GSM8K: `train`, `test`; MBPP: `train` (task ids
    /// 601–974 and the ten few-shot prompt tasks 1–10), `validation` (511–600), `test`
    /// (11–510); the evaluation-only sets (MATH-500, HumanEval, AIME 2024, AMC 2023): `test`.
    pub fn splits(self) -> &'static [&'static str] {
        match self {
            Dataset::Gsm8k => &["train", "test"],
            Dataset::Mbpp => &["train", "validation", "test"],
            Dataset::Math500 | Dataset::HumanEval | Dataset::Aime2024 | Dataset::Amc2023 => &["test"],
        }
    }

    /// The split meant for training, when the set has one (evaluation-only sets have none).
    pub fn training_split(self) -> Option<&'static str> {
        match self {
            Dataset::Gsm8k | Dataset::Mbpp => Some("train"),
            Dataset::Math500 | Dataset::HumanEval | Dataset::Aime2024 | Dataset::Amc2023 => None,
        }
    }

    /// Loads split `split` (one of [`Dataset::splits`]) from a data directory laid out as
    /// `cargo xtask datasets` installs it.
    pub fn load_split(self, data_dir: &Path, split: &str) -> Result<Vec<Task>, DatasetError> {
        if !self.splits().contains(&split) {
            return Err(DatasetError::UnknownSplit {
                dataset: self.name(),
                split: split.to_string(),
                known: self.splits().join(", "),
            });
        }
        match (self, split) {
            (Dataset::Gsm8k, "train") => load_gsm8k(&data_dir.join("gsm8k/train.jsonl")),
            (Dataset::Mbpp, _) => {
                // One read of the file; a task's split is the middle part of its id
                // (`mbpp/test/11`), and the file's order (by task id) is kept.
                let wanted: &[&str] = if split == "train" { &["train", "prompt"] } else { &[split] };
                let all = load_mbpp(&data_dir.join(self.default_file()), MbppSplit::All)?;
                Ok(all
                    .into_iter()
                    .filter(|t| t.id.split('/').nth(1).is_some_and(|s| wanted.contains(&s)))
                    .collect())
            }
            _ => self.load_from_dir(data_dir),
        }
    }
}

pub(crate) fn read(path: &Path) -> Result<Vec<u8>, DatasetError> {
    std::fs::read(path).map_err(|source| DatasetError::Io { path: path.to_path_buf(), source })
}

/// One parsed record with its 1-based line (or array element) number.
pub(crate) type Record = (usize, serde_json::Map<String, serde_json::Value>);

/// Splits a JSON Lines file into `(1-based line number, parsed object)`, skipping blank lines.
pub(crate) fn jsonl_records(path: &Path) -> Result<Vec<Record>, DatasetError> {
    let bytes = read(path)?;
    let mut out = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        out.push((i + 1, fields::parse_object(path, i + 1, line)?));
    }
    if out.is_empty() {
        return Err(DatasetError::Empty { path: path.to_path_buf() });
    }
    Ok(out)
}

/// Parses a file holding one JSON array of objects into `(1-based element, object)`.
pub(crate) fn json_array_records(path: &Path) -> Result<Vec<Record>, DatasetError> {
    let bytes = read(path)?;
    let items: Vec<serde_json::Value> = serde_json::from_slice(&bytes).map_err(|e| DatasetError::Syntax {
        path: path.to_path_buf(),
        line: e.line(),
        message: e.to_string(),
    })?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        match item {
            serde_json::Value::Object(map) => out.push((i + 1, map)),
            other => {
                return Err(DatasetError::Syntax {
                    path: path.to_path_buf(),
                    line: i + 1,
                    message: format!("array element is {}, not an object", fields::kind(&other)),
                })
            }
        }
    }
    if out.is_empty() {
        return Err(DatasetError::Empty { path: path.to_path_buf() });
    }
    Ok(out)
}

/// The file stem used in task ids (`test` for `gsm8k/test.jsonl`).
pub(crate) fn stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests;
