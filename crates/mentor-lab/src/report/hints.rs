//! What the hints of a run were and what they did: counts per hint level and diagnosis
//! category, and a few examples of each, from `interventions.jsonl`.
//!
//! Each hint tried counts once, at its level: an intervention that escalated from level 1 to
//! 2 counts at both, and is rescued at the level of its last hint when a hinted attempt
//! there succeeded (escalation only follows a round whose hinted attempts all failed). The
//! category is the intervention's diagnosis (the last mentor call's); arms that do not
//! diagnose (static hints, refinement) have none. An intervention for which the guard
//! rejected every candidate hint counts on a level-less row.

use std::collections::BTreeMap;

use mentor_integration::FailedAttempt;
use serde::Serialize;

use super::aggregate::arm_order;
use super::load::RunData;
use mentor_trainer::train::InterventionEntry;

/// Examples shown per (level, category) cell.
pub const EXAMPLES_PER_CELL: usize = 2;

/// The category of interventions without a diagnosis.
pub const NO_DIAGNOSIS: &str = "none";

/// One (hint level, diagnosis category) cell of an arm's hint table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HintCell {
    /// Hint level (`None`: the guard rejected every candidate, no hint was tried).
    pub level: Option<u8>,
    /// Diagnosis category, as the diagnosis spells it (`arithmetic_slip`), or [`NO_DIAGNOSIS`].
    pub category: String,
    /// Interventions that tried a hint at this level (with this diagnosis).
    pub interventions: usize,
    /// Of those, rescued by this level's hint.
    pub rescued: usize,
}

impl HintCell {
    /// `rescued / interventions`.
    pub fn rescue_rate(&self) -> Option<f64> {
        (self.interventions > 0).then(|| self.rescued as f64 / self.interventions as f64)
    }
}

/// A hint as it was tried, with its intervention's context (texts unabridged; the Markdown
/// shortens them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HintExample {
    /// The run.
    pub run: String,
    /// 0-based step.
    pub step: usize,
    /// The task.
    pub task_id: String,
    /// The failed attempts the mentor was shown, one short string each (the extracted math
    /// answer, or why it failed).
    pub failed: Vec<String>,
    /// The diagnosis category, or [`NO_DIAGNOSIS`].
    pub category: String,
    /// The diagnosis's first piece of evidence (`quote — note`), else its shared failure mode.
    pub evidence: Option<String>,
    /// Hint level.
    pub level: u8,
    /// The hint shown to the learner.
    pub hint: String,
    /// A partial-solution hint's worked steps (the `prefix` credit mode puts them at the start
    /// of the learner's answer instead of in the prompt).
    pub solution_prefix: Option<String>,
    /// Whether this hint rescued the group.
    pub rescued: bool,
    /// Hinted attempts that succeeded, of those sampled (the last hint's only: an earlier
    /// hint's attempts all failed, their count is not recorded).
    pub hinted_successes: Option<(usize, usize)>,
}

/// The hint table of one arm (over its runs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmHints {
    /// Arm name.
    pub arm: String,
    /// Interventions on record.
    pub interventions: usize,
    /// Of those, rescued.
    pub rescued: usize,
    /// Hints the guard rejected on the way.
    pub guard_rejections: usize,
    /// Cells by level (level-less last), then category.
    pub cells: Vec<HintCell>,
    /// Up to [`EXAMPLES_PER_CELL`] examples per cell (a rescued and an unrescued one when
    /// there are both), in the order of `cells`.
    pub examples: Vec<HintExample>,
}

impl ArmHints {
    /// `rescued / interventions`.
    pub fn rescue_rate(&self) -> Option<f64> {
        (self.interventions > 0).then(|| self.rescued as f64 / self.interventions as f64)
    }
}

/// The hint tables of the arms whose runs recorded interventions, in arm order; `runs` in
/// report order.
pub fn hint_tables(runs: &[&RunData]) -> Vec<ArmHints> {
    let mut arms: Vec<&str> =
        runs.iter().filter(|r| !r.interventions.is_empty()).map(|r| r.info.arm.as_str()).collect();
    arms.sort_by_key(|a| arm_order(a));
    arms.dedup();
    arms.into_iter().map(|arm| arm_hints(arm, runs.iter().filter(|r| r.info.arm == arm))).collect()
}

type Key = (bool, Option<u8>, String);

fn arm_hints<'a>(arm: &str, runs: impl Iterator<Item = &'a &'a RunData>) -> ArmHints {
    let mut out = ArmHints {
        arm: arm.to_string(),
        interventions: 0,
        rescued: 0,
        guard_rejections: 0,
        cells: Vec::new(),
        examples: Vec::new(),
    };
    // Keyed so that level-less cells sort last.
    let mut cells: BTreeMap<Key, HintCell> = BTreeMap::new();
    let mut candidates: BTreeMap<Key, Vec<HintExample>> = BTreeMap::new();
    for run in runs {
        for entry in &run.interventions {
            let r = &entry.record;
            out.interventions += 1;
            out.rescued += usize::from(r.rescued);
            out.guard_rejections += r.rejections.len();
            let category = category(entry);
            let levels: Vec<Option<u8>> = if r.hints.is_empty() {
                vec![None]
            } else {
                r.hints.iter().map(|h| Some(h.level.get())).collect()
            };
            for (i, level) in levels.into_iter().enumerate() {
                let last = i + 1 == r.hints.len().max(1);
                let key = (level.is_none(), level, category.clone());
                let cell = cells.entry(key.clone()).or_insert_with(|| HintCell {
                    level,
                    category: category.clone(),
                    interventions: 0,
                    rescued: 0,
                });
                cell.interventions += 1;
                cell.rescued += usize::from(last && r.rescued);
                if level.is_some() {
                    let kept = candidates.entry(key).or_default();
                    keep_candidate(kept, last && r.rescued, || example(run, entry, i, last));
                }
            }
        }
    }
    out.cells = cells.into_values().collect();
    out.examples = candidates.into_values().flat_map(choose).collect();
    out
}

/// Keeps, in order of appearance, the first rescued and the first unrescued examples and
/// enough others to fill a cell: what [`choose`] picks from.
fn keep_candidate(kept: &mut Vec<HintExample>, rescued: bool, make: impl FnOnce() -> HintExample) {
    if kept.iter().filter(|k| k.rescued == rescued).count() < EXAMPLES_PER_CELL {
        kept.push(make());
    }
}

/// A cell's examples: a rescued and an unrescued one when there are both, else the first.
fn choose(kept: Vec<HintExample>) -> Vec<HintExample> {
    let first_rescued = kept.iter().position(|e| e.rescued);
    let first_failed = kept.iter().position(|e| !e.rescued);
    let mut picked: Vec<usize> = first_rescued.into_iter().chain(first_failed).collect();
    let rest: Vec<usize> = (0..kept.len()).filter(|i| !picked.contains(i)).collect();
    picked.extend(rest);
    picked.truncate(EXAMPLES_PER_CELL);
    picked.sort_unstable();
    let mut kept: Vec<Option<HintExample>> = kept.into_iter().map(Some).collect();
    picked.into_iter().filter_map(|i| kept[i].take()).collect()
}

fn example(run: &RunData, entry: &InterventionEntry, hint: usize, last: bool) -> HintExample {
    let r = &entry.record;
    let h = &r.hints[hint];
    HintExample {
        run: run.info.name.clone(),
        step: entry.step,
        task_id: r.task_id.clone(),
        failed: r.failed.iter().map(failed_short).collect(),
        category: category(entry),
        evidence: r.diagnosis.as_ref().and_then(|d| match d.evidence.first() {
            Some(e) if e.note.trim().is_empty() => Some(e.quote.clone()),
            Some(e) => Some(format!("{} — {}", e.quote, e.note)),
            None => (!d.shared_mode.trim().is_empty()).then(|| d.shared_mode.clone()),
        }),
        level: h.level.get(),
        hint: h.text.clone(),
        solution_prefix: h.solution_prefix.clone(),
        rescued: last && r.rescued,
        hinted_successes: last
            .then(|| (r.hinted_rewards.iter().filter(|x| **x > 0.0).count(), r.hinted_rewards.len())),
    }
}

fn category(entry: &InterventionEntry) -> String {
    entry.record.diagnosis.as_ref().map_or_else(|| NO_DIAGNOSIS.to_string(), |d| serde_name(&d.category))
}

/// A failed attempt in short: the extracted answer, else why it failed.
fn failed_short(f: &FailedAttempt) -> String {
    match f {
        FailedAttempt::Math { extracted: Some(answer), .. } => answer.clone(),
        FailedAttempt::Math { outcome, extracted: None } => format!("({})", words(&serde_name(outcome))),
        FailedAttempt::Code { outcome, tests_passed, tests_total, .. } => {
            format!("{} {tests_passed}/{tests_total}", words(&serde_name(outcome)))
        }
        FailedAttempt::VerifierError { .. } => "(verifier error)".to_string(),
    }
}

fn words(snake: &str) -> String {
    snake.replace('_', " ")
}

/// The name serde gives a unit variant (`arithmetic_slip`): the spelling of the logs.
fn serde_name<T: Serialize + std::fmt::Debug>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => format!("{value:?}"),
    }
}
