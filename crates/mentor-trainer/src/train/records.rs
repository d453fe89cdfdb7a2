//! What a run writes down: the line types of `metrics.jsonl`, `interventions.jsonl` and
//! `samples.jsonl`, `run.json` and `summary.json`.

use std::path::{Path, PathBuf};

use mentor_integration::StepMetrics;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::eval::EvalRow;

/// The file of a run that holds one [`StepRecord`] per step.
pub const METRICS_FILE: &str = "metrics.jsonl";
/// The file of a run that holds its evaluations (one `EvalRow` per set and evaluation).
pub const EVAL_FILE: &str = "eval.jsonl";
/// The file of a run that says what it is ([`RunInfo`]).
pub const RUN_FILE: &str = "run.json";
/// The file a finished (or interrupted) run ends with ([`Summary`]).
pub use crate::jsonl::SUMMARY_FILE;

/// One line of `metrics.jsonl`: the step, the strategy plug-in's metrics (zrf,
/// zero_std_frac, window_zrf, the collapse event, interventions, rescues, guard rejections,
/// extra rollouts, verifier errors, the plug-in's own timings), the GRPO update's metrics
/// (loss, kl, clip ratios, entropy, learning rate, grad norm, completion lengths, truncated
/// fraction; absent when the step had no rows to train on), the step's timings and the
/// mentor's fallbacks. The library crates' metric structs are embedded as they are
/// (`#[serde(flatten)]`), so a field they gain is logged and read back without a copy here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// 0-based step.
    pub step: usize,
    /// Curriculum level (0 for dataset tasks).
    pub level: u32,
    /// What the strategy plug-in saw and did (on the unhinted groups and its interventions).
    #[serde(flatten)]
    pub strategy: StepMetrics,
    /// The GRPO update (None: no rows to train on).
    #[serde(flatten)]
    pub update: Option<mentor_grpo::StepMetrics>,
    /// Where the step's time went.
    #[serde(flatten)]
    pub timing: StepTiming,
    /// Mentor calls of this step answered by the rules because the mentor's model failed
    /// (`llm`/`local` backends; 0 otherwise).
    #[serde(default)]
    pub mentor_fallbacks: usize,
}

/// Where a step's wall-clock time went (the plug-in's share is broken down further in
/// [`StepMetrics`]: `mentor_seconds`, `rollout_seconds`, `verify_seconds`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTiming {
    /// The whole step (evaluation excluded).
    pub seconds: f64,
    /// Sampling the step's unhinted groups.
    pub sample_seconds: f64,
    /// Verifying them.
    pub score_seconds: f64,
    /// The strategy plug-in (mentor, hinted or refill sampling and verifying, assembly).
    pub strategy_seconds: f64,
    /// The GRPO update (log-probs, loss, backward, optimizer).
    pub update_seconds: f64,
    /// The process's peak resident memory so far, in MiB (Linux `VmHWM`; absent elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_mib: Option<f64>,
    /// The most heap bytes the process has held at once so far, in MiB (counted by the `mentor`
    /// binary's allocator, [`crate::Counted`]; absent elsewhere). Below the peak RSS by what the
    /// allocator keeps mapped after a free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_live_mib: Option<f64>,
}

/// The process's peak resident set size so far in MiB, from `/proc/self/status` (`VmHWM`);
/// `None` where that file does not exist or does not say.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib / 1024.0)
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

/// A line of `interventions.jsonl` as read back (by the report).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct InterventionEntry {
    /// 0-based step.
    pub step: usize,
    /// The intervention.
    #[serde(flatten)]
    pub record: mentor_integration::InterventionRecord,
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
    /// The seed of the pretrained model the run started from (`pretrain.seed`; curriculum
    /// runs only). Runs on one RL seed from two pretrained models are different runs.
    #[serde(default)]
    pub pretrain_seed: Option<u64>,
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

/// Totals over `metrics.jsonl`: interventions, rescues, ZRF sum, steps.
pub(super) fn read_totals(path: &Path) -> Result<(usize, usize, f64, usize)> {
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
        t.0 += r.strategy.intervened;
        t.1 += r.strategy.rescued;
        t.2 += r.strategy.zrf;
        t.3 += 1;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn peak_rss_covers_touched_memory() {
        // With 64 MiB touched and alive, the peak is at least that (in MiB, not kB or pages).
        let mut block = vec![0u8; 64 << 20];
        for i in (0..block.len()).step_by(4096) {
            block[i] = 1;
        }
        std::hint::black_box(&block);
        let peak = peak_rss_mib().expect("Linux reports VmHWM");
        assert!((64.0..1e6).contains(&peak), "{peak} MiB");
    }
}
