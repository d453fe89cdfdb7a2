//! What every stage of the measurement shares: the collapsed [`Problem`], one arm's result on
//! one problem ([`Cell`]), the stages' context ([`Ctx`]) and small helpers. The stages
//! (`unhinted`, `calibration`, `rounds`, `reliance`, `leaks`, `summary`) import it; it imports
//! no stage, so the measurement's modules flow one way: `mod.rs` drives the stages in order,
//! and each reads only what is below it.

use indicatif::ProgressBar;
use mentor_core::{Attempt, Diagnosis, FailureCategory, GuardRejection, Hint, HintLevel, Task, Verifier};
use mentor_policy::Policy;
use mentor_trainer::config::TrainConfig;

use super::arms::{Asked, Mentors};
use super::quota;
use super::records;
use super::sampling::Scored;

/// A collapsed problem.
pub(super) struct Problem<'a> {
    /// Its number in the run's task order (its rows' seeds).
    pub(super) index: u64,
    pub(super) task: &'a Task,
    /// The G failed unhinted attempts.
    pub(super) attempts: Vec<Attempt>,
    /// The `rules` mentor's level-1 answer: the diagnosis every arm's breakdown uses.
    pub(super) rules_l1: Asked,
}

impl Problem<'_> {
    pub(super) fn category(&self) -> Option<FailureCategory> {
        self.rules_l1.diagnosis.as_ref().map(|d| d.category)
    }

    /// Steps of the reference solution (0 without one).
    pub(super) fn steps(&self) -> usize {
        quota::steps(self.task)
    }
}

/// One arm row's result on one problem.
#[derive(Debug, Clone, Default)]
pub(super) struct Cell {
    pub(super) hints: Vec<Hint>,
    pub(super) diagnosis: Option<Diagnosis>,
    pub(super) rejections: Vec<GuardRejection>,
    pub(super) redactions: Vec<String>,
    pub(super) attempts: Vec<Scored>,
    pub(super) leaks: usize,
    pub(super) hint_tokens: Vec<usize>,
    pub(super) mentor_seconds: f64,
    pub(super) mentor_calls: usize,
    pub(super) cuts: Option<[usize; 2]>,
    /// Left out of the row's comparisons (`random_prefix` without another cut).
    pub(super) excluded: bool,
    /// Reliance of each rescued (passing) hinted attempt, in attempt order.
    pub(super) reliance: Vec<f64>,
    /// Sequence-level reliance of each rescued hinted attempt (summed log-probs).
    pub(super) seq_reliance: Vec<f64>,
    /// A step twin's targeting.
    pub(super) twin: Option<records::TwinSteps>,
    /// Hints that leak by derivation.
    pub(super) derivation_leaks: usize,
    /// Hints the no-learner solver answers.
    pub(super) no_learner: usize,
}

impl Cell {
    /// A rescue: a hinted attempt that passed (binary correctness, as collapse is decided).
    pub(super) fn rescued(&self) -> bool {
        any_passed(self.attempts.iter().map(|s| &s.attempt.verdict))
    }

    pub(super) fn record(&mut self, asked: &Asked) {
        self.diagnosis = asked.diagnosis.clone().or(self.diagnosis.take());
        self.rejections.extend(asked.rejections.iter().cloned());
        self.redactions.extend(asked.redactions.iter().cloned());
        self.mentor_seconds += asked.seconds;
        self.mentor_calls += 1;
    }
}

/// Whether any of `verdicts` passed: a group is collapsed when none did
/// ([`mentor_integration::is_collapsed`], the predicate training uses), rescued when one did.
/// Binary correctness (`Verdict::passed`), never a shaped reward: a group of code attempts that
/// each pass some tests is still collapsed.
pub(super) fn any_passed<'a>(verdicts: impl IntoIterator<Item = &'a mentor_core::Verdict>) -> bool {
    !mentor_integration::is_collapsed(verdicts.into_iter().map(mentor_core::Verdict::passed))
}

/// A line above the bar (or plainly on stderr when the bar is hidden).
pub(super) fn note(bar: &ProgressBar, line: &str) {
    if bar.is_hidden() {
        eprintln!("{line}");
    } else {
        bar.println(line);
    }
}

/// What every stage reads: the configuration, the learner, the mentors, the verifier, the
/// progress bar, and the unhinted and hinted group sizes.
pub(super) struct Ctx<'a> {
    pub(super) cfg: &'a TrainConfig,
    pub(super) policy: &'a Policy,
    pub(super) mentors: &'a Mentors,
    pub(super) verifier: &'a dyn Verifier,
    pub(super) bar: &'a ProgressBar,
    pub(super) g_base: usize,
    pub(super) g_hint: usize,
}

/// Level `l` (validated to be in 1..=3 with the config; level 1 otherwise).
pub(super) fn hint_level(l: u8) -> HintLevel {
    HintLevel::try_from(l).unwrap_or(HintLevel::NUDGE)
}
