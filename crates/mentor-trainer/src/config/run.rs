//! `[run]`: name, seed, length, checkpoints, output.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

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
