//! Test fixtures: real trainer records (the types `mentor train` writes), built in one place
//! for the report's tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mentor_core::{
    Diagnosis, Evidence, FailureCategory, GuardRejection, Hint, HintLevel, HintSource, MathOutcome,
};
use mentor_grpo::RolloutStats;
use mentor_integration::{FailedAttempt, InterventionRecord};

use super::load::RunData;
use mentor_trainer::config::Arm;
use mentor_trainer::eval::EvalRow;
use mentor_trainer::train::{InterventionEntry, RunInfo, StepRecord};
use mentor_trainer::train::{InterventionLine, StepTiming};

/// A trained step of a curriculum run at level 4 with 8 groups: `reward` mean unhinted
/// reward, `zrf` zero-reward fraction, `intervened` / `rescued` groups.
pub fn step(step: usize, reward: f64, zrf: f64, intervened: usize, rescued: usize) -> StepRecord {
    StepRecord {
        step,
        level: 4,
        strategy: mentor_integration::StepMetrics {
            groups: 8,
            collapsed: intervened,
            zrf,
            zero_std_frac: zrf,
            mean_reward: reward,
            window_zrf: zrf,
            intervened,
            rescued,
            levels_used: BTreeMap::from([("1".to_string(), intervened)]),
            extra_rollouts: 4 * intervened,
            rows: 32,
            ..Default::default()
        },
        update: Some(mentor_grpo::StepMetrics {
            rollout: RolloutStats {
                completions: 32,
                groups: 8,
                reward_mean: reward,
                reward_std: 0.25,
                frac_reward_zero: zrf,
                frac_reward_zero_std: zrf,
                completion_length_mean: 20.0,
                completion_length_min: 3,
                completion_length_max: 24,
                frac_truncated: 0.25,
            },
            loss: 0.5,
            clip_ratio_low: 0.0,
            clip_ratio_high: 0.125,
            clip_ratio_region: 0.125,
            kl: None,
            entropy: Some(1.5),
            grad_norm: 0.75,
            learning_rate: 0.001,
            num_tokens: 640.0,
            optimizer_steps: 1,
            skipped_steps: 0,
        }),
        timing: StepTiming {
            seconds: 1.0,
            sample_seconds: 0.5,
            score_seconds: 0.125,
            strategy_seconds: 0.25,
            update_seconds: 0.125,
            peak_rss_mib: None,
            peak_live_mib: None,
        },
        mentor_fallbacks: 0,
    }
}

/// An evaluation row: 10 problems, pass@4 from 4 samples, no per-problem outcomes (as rows
/// written before they were recorded).
pub fn eval(step: usize, level: u32, pass1: f64, passk: Option<f64>) -> EvalRow {
    EvalRow {
        step,
        level,
        n: 10,
        pass1,
        k: 4,
        passk,
        samples: 4,
        meank: passk,
        passk_n: None,
        right: Vec::new(),
        correct: Vec::new(),
        set: None,
    }
}

/// An evaluation row with per-problem greedy outcomes `correct` (`n` and `pass1` follow from
/// them), no pass@k.
pub fn eval_outcomes(step: usize, level: u32, correct: &[bool]) -> EvalRow {
    let n = correct.len();
    let pass1 = correct.iter().filter(|&&c| c).count() as f64 / n.max(1) as f64;
    EvalRow {
        step,
        level,
        n,
        pass1,
        k: 0,
        passk: None,
        samples: 0,
        meank: None,
        passk_n: None,
        right: Vec::new(),
        correct: correct.to_vec(),
        set: None,
    }
}

/// `n` outcomes of which the first `right` are correct.
pub fn outcomes(n: usize, right: usize) -> Vec<bool> {
    (0..n).map(|i| i < right).collect()
}

/// What `run.json` says of run `{arm}-s{seed}` of the demo preset.
pub fn info(arm: &str, seed: u64, jump_step: Option<usize>) -> RunInfo {
    RunInfo {
        name: format!("{arm}-s{seed}"),
        arm: arm.to_string(),
        seed,
        preset: "demo".to_string(),
        jump_step,
        hard_level: jump_step.map(|_| 4),
        pretrain_seed: None,
    }
}

/// A run in memory.
pub fn run(
    arm: &str,
    seed: u64,
    jump_step: Option<usize>,
    steps: Vec<StepRecord>,
    evals: Vec<EvalRow>,
) -> RunData {
    RunData {
        dir: PathBuf::from(format!("/runs/{arm}-s{seed}")),
        info: info(arm, seed, jump_step),
        steps,
        evals,
        interventions: Vec::new(),
    }
}

/// The mentor arm's name.
pub fn mentor() -> &'static str {
    Arm::Mentor.name()
}

/// The vanilla arm's name.
pub fn vanilla() -> &'static str {
    Arm::Vanilla.name()
}

/// An intervention at `step` on `task_id`: three wrong math attempts (41, 41, no answer),
/// a diagnosis of `category` (none: the arm does not diagnose), one hint per level of
/// `levels` (escalating; level 3 with a worked step), rescued by the last hint when `rescued`.
pub fn intervention(
    step: usize,
    task_id: &str,
    category: Option<FailureCategory>,
    levels: &[u8],
    rescued: bool,
) -> InterventionEntry {
    let record = InterventionRecord {
        task_id: task_id.to_string(),
        failed: vec![
            FailedAttempt::Math { outcome: MathOutcome::WrongValue, extracted: Some("41".into()) },
            FailedAttempt::Math { outcome: MathOutcome::WrongValue, extracted: Some("41".into()) },
            FailedAttempt::Math { outcome: MathOutcome::NoAnswer, extracted: None },
        ],
        diagnosis: category.map(|category| Diagnosis {
            category,
            shared_mode: "6 * 7 is computed as 41".into(),
            evidence: vec![Evidence {
                attempt: Some(0),
                quote: "6 * 7 = 41".into(),
                note: "the product is off by one".into(),
            }],
            first_wrong_step: Some(1),
            confidence: 0.75,
        }),
        hints: levels
            .iter()
            .map(|l| Hint {
                level: HintLevel::try_from(*l).unwrap(),
                text: format!("Level {l}: recompute 6 * 7 | check the *product* before adding."),
                solution_prefix: (*l == 3).then(|| "6 * 7 = 42\n".to_string()),
                source: if category.is_some() { HintSource::Mentor } else { HintSource::Static },
            })
            .collect(),
        hinted_rewards: if rescued { vec![1.0, 0.0, 1.0] } else { vec![0.0; 3] },
        rescued,
        rejections: vec![GuardRejection {
            text: "The answer is 42.".into(),
            reason: "leaks the answer".into(),
        }],
        redactions: Vec::new(),
    };
    InterventionEntry { step, record }
}

/// `interventions.jsonl` as the trainer writes it ([`InterventionLine`] per line).
pub fn interventions_jsonl(entries: &[InterventionEntry]) -> String {
    entries
        .iter()
        .map(|e| serde_json::to_string(&InterventionLine { step: e.step, record: &e.record }).unwrap() + "\n")
        .collect()
}

/// `metrics.jsonl` as the trainer writes it (one serialised [`StepRecord`] per line).
pub fn metrics_jsonl(steps: &[StepRecord]) -> String {
    steps.iter().map(|s| serde_json::to_string(s).unwrap() + "\n").collect()
}

/// `eval.jsonl` as the trainer writes it.
pub fn eval_jsonl(rows: &[EvalRow]) -> String {
    rows.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect()
}

/// Writes a run directory `root/{arm}-s{seed}` from `run`'s records; returns it.
pub fn write_run_dir(root: &Path, run: &RunData) -> PathBuf {
    let dir = root.join(&run.info.name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(mentor_trainer::train::RUN_FILE), serde_json::to_string(&run.info).unwrap())
        .unwrap();
    std::fs::write(dir.join(mentor_trainer::train::METRICS_FILE), metrics_jsonl(&run.steps)).unwrap();
    std::fs::write(dir.join(mentor_trainer::train::EVAL_FILE), eval_jsonl(&run.evals)).unwrap();
    if !run.interventions.is_empty() {
        std::fs::write(
            dir.join(mentor_trainer::train::INTERVENTIONS_FILE),
            interventions_jsonl(&run.interventions),
        )
        .unwrap();
    }
    dir
}
