//! What a rescue measurement writes: `base.jsonl` (every unhinted problem), `rescue.jsonl`
//! (every intervention), and the summary (`summary.json`, and `--json` on stdout).

use std::collections::BTreeMap;
use std::path::PathBuf;

use mentor_core::{Diagnosis, FailureCategory, GuardRejection, Hint};
use serde::{Deserialize, Serialize};

/// The files of a measurement, in its output directory.
pub const BASE_FILE: &str = "base.jsonl";
/// One line per intervention.
pub const RESCUE_FILE: &str = "rescue.jsonl";
/// The summary.
pub use mentor_trainer::jsonl::SUMMARY_FILE;
/// The Markdown report.
pub const REPORT_FILE: &str = "report.md";
/// The bar chart of rescue rates.
pub const CHART_FILE: &str = "rescue.svg";

/// One unhinted problem (a line of `base.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseLine {
    /// The task id.
    pub problem: String,
    /// The problem's number in the run's task order (its samples' seeds).
    pub index: u64,
    /// The rewards of its G unhinted attempts.
    pub rewards: Vec<f64>,
    /// Whether every attempt failed.
    pub collapsed: bool,
    /// Collapsed, but left out by `rescue.max_position_share` (its diagnosed step had filled its
    /// share): not measured.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
    /// The attempts' texts.
    pub completions: Vec<String>,
}

/// One intervention: an arm on a collapsed problem (a line of `rescue.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RescueLine {
    /// The task id.
    pub problem: String,
    /// The problem's number in the run's task order.
    pub index: u64,
    /// The arm.
    pub arm: String,
    /// The level (`null`: not leveled, or with escalation).
    pub level: Option<u8>,
    /// The `rules` diagnosis of the problem's failed attempts (the category the breakdown
    /// uses), the same for every arm.
    pub category: Option<FailureCategory>,
    /// The diagnosis the arm's own mentor reached, when it diagnoses.
    pub diagnosis: Option<Diagnosis>,
    /// The hints shown, in order (several with escalation; none for `retry`, or when the
    /// guard rejected every candidate).
    pub hints: Vec<Hint>,
    /// Hints the guard rejected.
    pub rejections: Vec<GuardRejection>,
    /// What the guard redacted from the hints shown.
    pub redactions: Vec<String>,
    /// The hinted attempts' rewards, in order (all rounds with escalation).
    pub rewards: Vec<f64>,
    /// The hinted attempts' texts (after the forced prefix, when one was given).
    pub completions: Vec<String>,
    /// Whether a hinted attempt succeeded.
    pub rescued: bool,
    /// Hints that leak the answer on their own.
    pub leaks: usize,
    /// Size of each hint in tokens: its text plus its forced prefix ([`mentor_agents::shown_size`],
    /// the definition training shares).
    pub hint_tokens: Vec<usize>,
    /// Seconds spent in the mentor.
    pub mentor_seconds: f64,
    /// `random_prefix`: reference pieces the mentor's level-3 prefix showed, and the control's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuts: Option<[usize; 2]>,
    /// Reliance of each rescued hinted attempt (mean token log-prob without the hint minus with
    /// it; `rescue::reliance`).
    #[serde(default)]
    pub reliance: Vec<f64>,
    /// Left out of this arm's rates and comparisons (`random_prefix` without another cut; a
    /// twin without a step of the mentor's size or a calibrated step).
    #[serde(default)]
    pub excluded: bool,
    /// Sequence-level reliance of each rescued hinted attempt: its summed log-prob without the
    /// hint minus with it.
    #[serde(default)]
    pub seq_reliance: Vec<f64>,
    /// The problem's template (`meta.subject`; generated problems), the unit the
    /// template-level interval resamples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Steps of the problem's reference solution.
    #[serde(default)]
    pub steps: usize,
    /// The step the `rules` diagnosis located (0-based), the same for every arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosed_step: Option<usize>,
    /// A step twin's targeting: the mentor's step, the twin's steps and both hints' sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twin: Option<TwinSteps>,
    /// Hints that leak by derivation ([`mentor_agents::leak_by_derivation`]): one operation they
    /// name gives the answer from numbers shown, or they state every intermediate result but one.
    #[serde(default)]
    pub derivation_leaks: usize,
    /// Hints a deterministic solver reading only the question and the hint answers
    /// ([`mentor_agents::no_learner_answer`]).
    #[serde(default)]
    pub no_learner: usize,
}

/// The calibrated table and how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorSteps {
    /// The stratum whose template set was calibrated.
    pub stratum: String,
    /// The family seed of the calibration problems.
    pub calibration_seed: u64,
    /// Problems sampled, and of them collapsed.
    pub problems: usize,
    /// Collapsed problems diagnosed.
    pub collapsed: usize,
    /// `template/steps` → how often the diagnosis located each step (0-based positions).
    pub counts: BTreeMap<String, Vec<usize>>,
    /// `template/steps` → the most often located step.
    pub prior: BTreeMap<String, usize>,
}

#[cfg(test)]
impl RescueLine {
    /// A line with its identity and outcome and nothing else: one 10-token hint, 2 steps.
    pub(crate) fn bare(problem: &str, arm: &str, level: Option<u8>, rescued: bool) -> Self {
        Self {
            problem: problem.into(),
            index: 0,
            arm: arm.into(),
            level,
            category: None,
            diagnosis: None,
            hints: Vec::new(),
            rejections: Vec::new(),
            redactions: Vec::new(),
            rewards: Vec::new(),
            completions: Vec::new(),
            rescued,
            leaks: 0,
            hint_tokens: vec![10],
            mentor_seconds: 0.0,
            cuts: None,
            reliance: Vec::new(),
            excluded: false,
            seq_reliance: Vec::new(),
            template: None,
            steps: 2,
            diagnosed_step: None,
            twin: None,
            derivation_leaks: 0,
            no_learner: 0,
        }
    }
}

/// A step twin's targeting on one problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TwinSteps {
    /// The step the mentor's hint is about (0-based).
    pub mentor_step: usize,
    /// The steps the twin is about.
    pub twin_steps: Vec<usize>,
    /// Sizes (tokens of text plus forced prefix) of the mentor's hint and the twin's.
    pub sizes: [usize; 2],
}

/// One arm row of the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSummary {
    /// `retry`, `static_hints`, `refinement`, `mentor`, `random_prefix`, `llm`, `local`.
    pub arm: String,
    /// The hint level (`null`: not leveled, or the diagnosing arm with escalation).
    pub level: Option<u8>,
    /// Collapsed problems with at least one successful hinted attempt, of all collapsed
    /// problems (a problem the arm gave no hint for counts as not rescued).
    pub rescue_rate: f64,
    /// Wilson 95% interval of the rescue rate.
    pub rescue_ci: [f64; 2],
    /// Successful hinted attempts of all hinted attempts (`null`: none sampled).
    pub hinted_pass_rate: Option<f64>,
    /// Accepted hints that leak the answer on their own.
    pub leaks: usize,
    /// Hints the guard rejected.
    pub guard_rejections: usize,
    /// Paired difference of rescue rates to `retry`: `[d, lo, hi]` with the bootstrap 95%
    /// interval (`null` without a `retry` arm).
    pub diff_vs_retry: Option<[f64; 3]>,
    /// The same to `static_hints`.
    pub diff_vs_static: Option<[f64; 3]>,
    /// The same to `wrong_answers` (the answers-only control).
    #[serde(default)]
    pub diff_vs_wrong_answers: Option<[f64; 3]>,
    /// The same to the size-matched `random_prefix`, over the problems it has a cut for.
    #[serde(default)]
    pub diff_vs_random_prefix: Option<[f64; 3]>,
    /// The same to `where_only` (the location-only control).
    #[serde(default)]
    pub diff_vs_where_only: Option<[f64; 3]>,
    /// Problems rescued.
    pub rescued: usize,
    /// Problems the arm showed a hint for (`retry`: all).
    pub hinted: usize,
    /// Collapsed problems left out of this row's rates and differences (`random_prefix`: no
    /// other cut than the mentor's).
    #[serde(default)]
    pub excluded: usize,
    /// Whether the arm shows the answer by construction (`reference_in_context`): an upper
    /// bound for scale, never a method.
    #[serde(default)]
    pub leaking: bool,
    /// Hint reliance of the rescued hinted attempts: `[mean, sd, n]` of (mean token log-prob
    /// without the hint − with it); near 0, the success does not lean on the hint (`null`:
    /// nothing rescued, or no hint).
    #[serde(default)]
    pub reliance: Option<[f64; 3]>,
    /// Hinted attempts sampled.
    pub samples: usize,
    /// Mean tokens of the hints shown (`null`: none).
    pub mean_hint_tokens: Option<f64>,
    /// The same (the name the matched comparisons use).
    #[serde(default)]
    pub hint_tokens: Option<f64>,
    /// Mean seconds in the mentor per intervention (`null`: no mentor).
    pub mentor_seconds: Option<f64>,
}

/// The rescue rates of one diagnosis category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategorySummary {
    /// The `rules` diagnosis category of the problems' failed attempts.
    pub category: String,
    /// Collapsed problems in it.
    pub n: usize,
    /// Per arm row, in the summary's order.
    pub arms: Vec<CategoryArm>,
}

/// One arm row within a category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryArm {
    /// The arm.
    pub arm: String,
    /// The level.
    pub level: Option<u8>,
    /// Rescue rate within the category.
    pub rescue_rate: f64,
    /// Paired difference to `retry` within the category, with its bootstrap interval.
    pub diff_vs_retry: Option<[f64; 3]>,
    /// The same to `static_hints`.
    pub diff_vs_static: Option<[f64; 3]>,
    /// Hint reliance within the category (`[mean, sd, n]`).
    #[serde(default)]
    pub reliance: Option<[f64; 3]>,
}

/// How often a model mentor's calls fell back to the `rules` agents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MentorFallbacks {
    /// The arm (`llm`, `local`).
    pub arm: String,
    /// Calls (diagnoses and hints) answered by the rules instead of the model.
    pub fallbacks: usize,
    /// Mentor asks of the arm (each is a diagnosis and a hint call).
    pub asks: usize,
}

/// Where the learner was measured: the sampling and the problems.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Regime {
    /// Sampling temperature.
    pub temperature: f64,
    /// Most new tokens per attempt.
    pub max_new_tokens: usize,
    /// `system` or `few_shot`.
    pub prompt: String,
    /// The `mentor probe` stratum the problems come from (`null`: every training problem).
    pub stratum: Option<String>,
    /// Unhinted attempts per problem.
    pub unhinted_samples: usize,
    /// Hinted attempts per intervention round.
    pub hinted_samples: usize,
}

/// Peak memory of a measurement's process, in MiB: the resident set size the kernel reports
/// and the live heap bytes the `mentor` binary's allocator counts ([`crate::Counted`]). Freed
/// pages the allocator handed back with `MADV_FREE` stay in the resident set until the kernel
/// takes them, so the two differ; the live bytes are what the measurement holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryPeaks {
    /// The process's peak resident set size (Linux `VmHWM`).
    pub rss_mib: Option<f64>,
    /// Peak live heap bytes over the whole run (absent where the allocator does not count).
    pub live_mib: Option<f64>,
    /// Peak live heap bytes of the unhinted pass.
    pub unhinted_live_mib: Option<f64>,
    /// Peak live heap bytes after it (interventions, hinted attempts, reliance).
    pub hinted_live_mib: Option<f64>,
}

/// The summary of a measurement (`summary.json`; `mentor rescue --json` prints it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RescueSummary {
    /// Problems whose G unhinted attempts all failed: the problems every arm is measured on.
    pub collapsed: usize,
    /// Passed unhinted attempts of all unhinted attempts.
    pub base_pass_rate: f64,
    /// The arm rows.
    pub arms: Vec<ArmSummary>,
    /// The same by diagnosis category.
    pub by_category: Vec<CategorySummary>,
    /// Problems sampled without hints.
    pub problems: usize,
    /// Attempts per intervention and escalation round (G').
    pub group_size: usize,
    /// Unhinted attempts per problem (G): a problem is collapsed when none passes.
    #[serde(default)]
    pub unhinted_samples: usize,
    /// The regime the measurement ran at.
    #[serde(default)]
    pub regime: Regime,
    /// Sampling temperature.
    pub temperature: f64,
    /// Most new tokens per attempt.
    pub max_new_tokens: usize,
    /// The learner (`model.source`).
    pub model: String,
    /// The training tasks (`data.train`, or the kind's training split).
    pub data: String,
    /// How a level-3 prefix reached the learner (`strategy.intervention.credit`).
    pub credit: String,
    /// `random_prefix`: collapsed problems it had a cut for (always another than the mentor's).
    pub random_prefix_distinct: usize,
    /// `random_prefix`'s size match: mean tokens of the mentor's level-3 hint and of the
    /// control's on the paired problems, and their mean absolute difference.
    #[serde(default)]
    pub random_prefix_size: Option<[f64; 3]>,
    /// Per model mentor arm (`llm`, `local`): its calls answered by the `rules` agents instead
    /// (an unparseable reply or a model error) and its calls in all; absent arms are not listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<MentorFallbacks>,
    /// Rows generated (unhinted and hinted), and their tokens.
    pub rows: usize,
    /// Tokens generated.
    pub tokens: usize,
    /// Wall-clock seconds: loading, unhinted pass, interventions.
    pub seconds: f64,
    /// Seconds of the unhinted pass.
    pub base_seconds: f64,
    /// Peak memory of the process, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryPeaks>,
    /// The output directory.
    pub dir: PathBuf,
    /// How often the `rules` diagnosis located each step among the collapsed problems, per
    /// step count (`steps → counts by position`).
    #[serde(default)]
    pub diagnosed_steps: BTreeMap<usize, Vec<usize>>,
    /// `prior_step`'s calibrated table, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_steps: Option<PriorSteps>,
}
