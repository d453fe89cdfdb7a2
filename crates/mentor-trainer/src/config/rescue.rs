//! `[rescue]`: what `mentor rescue` measures and how much of it.

use serde::{Deserialize, Serialize};

/// How the learner is prompted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptStyle {
    /// The task's prompt as the run builds it (the config's system prompt and the problem).
    System,
    /// The same with two worked examples in the chat before the problem.
    FewShot,
}

impl PromptStyle {
    /// The name in tables, configs and JSON.
    pub fn name(self) -> &'static str {
        match self {
            PromptStyle::System => "system",
            PromptStyle::FewShot => "few_shot",
        }
    }
}

/// An arm of the rescue measurement: what the learner is shown before its second try.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RescueArm {
    /// No hint: G fresh samples of the plain prompt (the base rate of a second try).
    Retry,
    /// A generic hint from the static library, no diagnosis.
    StaticHints,
    /// One failed answer and the verifier's feedback, with the request to revise.
    Refinement,
    /// The `rules` mentor (diagnose, hint, guard) at each of `rescue.levels`, and with
    /// escalation when `rescue.escalate`.
    Mentor,
    /// The control for level 3: a reference prefix cut at a random step instead of the
    /// diagnosed one, in the mentor's level-3 template.
    RandomPrefix,
    /// The `llm` backend of `[mentor]` (an OpenAI-compatible endpoint), at the same levels.
    Llm,
    /// The `local` backend of `[mentor]` (`mentor.model`, e.g. `self`), at the same levels.
    Local,
    /// The least a failure-aware hint carries: the learner's wrong final answers (code: the
    /// failed tests' numbers) and that they are wrong ([`mentor_agents::WrongAnswers`]).
    WrongAnswers,
    /// The diagnosis's location and kind in words, without worked content
    /// ([`mentor_agents::WhereOnly`] over the `rules` mentor).
    WhereOnly,
    /// The whole reference solution in the prompt: an upper bound for scale, leaking by
    /// construction, never compared as a method.
    ReferenceInContext,
    /// The `rules` mentor without the attempts' wrong operation ("Step 2 needs a subtraction",
    /// not "..., not an addition"), at each of `rescue.levels` below 3: what the twins are
    /// compared with.
    MentorNoWrongOp,
    /// The twin of `mentor_no_wrong_op` about a random other step of the same size
    /// ([`mentor_agents::TwinKind::RandomStep`]), at the same levels.
    RandomStep,
    /// The twin about the step that fails most often for the problem's template on a
    /// calibration set (`rescue.calibration_seed`), at the same levels.
    PriorStep,
    /// The level-1 hint at every step, in order (the operation of every step).
    AllSteps,
}

impl RescueArm {
    /// The name in configs, `rescue.jsonl` and the summary.
    pub fn name(self) -> &'static str {
        match self {
            RescueArm::Retry => "retry",
            RescueArm::StaticHints => "static_hints",
            RescueArm::Refinement => "refinement",
            RescueArm::Mentor => "mentor",
            RescueArm::RandomPrefix => "random_prefix",
            RescueArm::Llm => "llm",
            RescueArm::Local => "local",
            RescueArm::WrongAnswers => "wrong_answers",
            RescueArm::WhereOnly => "where_only",
            RescueArm::ReferenceInContext => "reference_in_context",
            RescueArm::MentorNoWrongOp => "mentor_no_wrong_op",
            RescueArm::RandomStep => "random_step",
            RescueArm::PriorStep => "prior_step",
            RescueArm::AllSteps => "all_steps",
        }
    }

    /// Whether the arm shows the answer by construction (reported, never compared).
    pub fn leaks_by_design(self) -> bool {
        self == RescueArm::ReferenceInContext
    }

    /// Whether the arm is a diagnosing mentor measured per level.
    pub fn per_level(self) -> bool {
        matches!(
            self,
            RescueArm::Mentor
                | RescueArm::Llm
                | RescueArm::Local
                | RescueArm::MentorNoWrongOp
                | RescueArm::RandomStep
                | RescueArm::PriorStep
        )
    }

    /// Whether the arm is measured with escalation too (a mentor, not a twin or a variant).
    pub fn escalates(self) -> bool {
        matches!(self, RescueArm::Mentor | RescueArm::Llm | RescueArm::Local)
    }

    /// The levels the arm is measured at, of `levels`: a twin (and the mentor it is compared
    /// with) at levels 1 and 2 only (level 3's control is `random_prefix`).
    pub fn takes_level(self, level: u8) -> bool {
        level < 3
            || !matches!(self, RescueArm::MentorNoWrongOp | RescueArm::RandomStep | RescueArm::PriorStep)
    }
}

impl std::fmt::Display for RescueArm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `[rescue]`: the paired rescue measurement of `mentor rescue` (ignored by `mentor train`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RescueSection {
    /// Most training problems sampled without hints, in the run's seeded task order (0: every
    /// training task, cut by `data.limit`).
    pub problems: usize,
    /// Stop sampling unhinted problems once this many have collapsed (0: sample all of
    /// `problems`): each batch holds only as many problems as could still collapse.
    pub collapsed: usize,
    /// The arms, each measured on every collapsed problem: `retry`, `static_hints`,
    /// `refinement`, `wrong_answers`, `where_only`, `mentor`, `random_prefix` (size-matched to
    /// the mentor's level-3 hint), `llm`, `local`, `reference_in_context`.
    pub arms: Vec<RescueArm>,
    /// Unhinted attempts per problem; a problem is collapsed when none passes (0: the run's
    /// `sampling.group_size`).
    pub unhinted_samples: usize,
    /// Attempts per intervention, per escalation round (0: `sampling.group_size`).
    pub hinted_samples: usize,
    /// Draw the problems from one difficulty stratum of `mentor probe` (its name, e.g.
    /// `gsm8k steps<=2` or `arith 2-step seed 0`; empty: every training problem). Generated
    /// strata: `arith|heldout <steps>-step seed <seed>`; `heldout` also takes a range of steps
    /// (`2-4-step`: problem `i` has `2 + (i / 8) % 3` steps, so every template gets every
    /// count), and `seed *` is the run's seed (each `--seeds` chunk draws new problems).
    pub stratum: String,
    /// The prompt style of every attempt: `system` (the run's prompt) or `few_shot` (two
    /// worked examples first, as `mentor probe` builds them).
    pub prompt: PromptStyle,
    /// The hint levels the diagnosing arms are measured at, one arm row each.
    pub levels: Vec<u8>,
    /// Also measure the diagnosing arms with escalation (level 1, then 2, then 3 while every
    /// hinted attempt fails; up to three times the samples of one level).
    pub escalate: bool,
    /// Most rows (completions) per generate call.
    pub batch_rows: usize,
    /// Bootstrap resamples of the problems for the paired intervals.
    pub bootstrap: usize,
    /// The held-out family seed of the calibration set `prior_step` reads its steps from (the
    /// stratum's problems with this seed, never a test problem).
    pub calibration_seed: u64,
    /// Collapsed calibration problems the `prior_step` table is read from.
    pub calibration_collapsed: usize,
    /// Most share of one diagnosed step among the measured collapsed problems of 3 or more
    /// steps (1: no limit). Below 1, `rescue.collapsed` is split evenly over the problems' step
    /// counts, and a collapsed problem whose diagnosed step already fills its share of its
    /// count is written to `base.jsonl` as `skipped` and not measured, so the diagnosis cannot
    /// be nearly a constant. Decided from the unhinted attempts alone.
    pub max_position_share: f64,
}

impl Default for RescueSection {
    fn default() -> Self {
        Self {
            problems: 0,
            collapsed: 100,
            arms: vec![
                RescueArm::Retry,
                RescueArm::StaticHints,
                RescueArm::Refinement,
                RescueArm::Mentor,
                RescueArm::RandomPrefix,
            ],
            unhinted_samples: 0,
            hinted_samples: 0,
            stratum: String::new(),
            prompt: PromptStyle::System,
            levels: vec![1, 2, 3],
            escalate: true,
            batch_rows: 128,
            bootstrap: 2000,
            calibration_seed: 1000,
            calibration_collapsed: 200,
            max_position_share: 1.0,
        }
    }
}

impl RescueSection {
    /// Whether every field has its default (then a training run's `config.toml` leaves the
    /// section out).
    pub fn is_default(&self) -> bool {
        self == &Self::default()
    }

    /// Checks ranges; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.arms.is_empty() {
            return Err("`rescue.arms`: empty (give at least one arm)".into());
        }
        if let Some(l) = self.levels.iter().find(|l| !(1..=3).contains(*l)) {
            return Err(format!("`rescue.levels`: {l} (allowed: 1, 2, 3)"));
        }
        if self.batch_rows == 0 {
            return Err("`rescue.batch_rows`: must be > 0".into());
        }
        if self.bootstrap == 0 {
            return Err("`rescue.bootstrap`: must be > 0".into());
        }
        if !(self.max_position_share > 0.0 && self.max_position_share <= 1.0) {
            return Err(format!(
                "`rescue.max_position_share`: {} (allowed: (0, 1])",
                self.max_position_share
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(dup) = self.arms.iter().find(|a| !seen.insert(**a)) {
            return Err(format!("`rescue.arms`: `{dup}` is listed twice"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_mistakes_name_the_field() {
        assert!(RescueSection::default().validate().is_ok());
        assert!(RescueSection::default().is_default());
        let bad = RescueSection { levels: vec![4], ..Default::default() };
        assert!(bad.validate().unwrap_err().contains("rescue.levels"));
        let bad = RescueSection { arms: vec![RescueArm::Retry, RescueArm::Retry], ..Default::default() };
        assert!(bad.validate().unwrap_err().contains("twice"));
        let bad = RescueSection { batch_rows: 0, ..Default::default() };
        assert!(bad.validate().unwrap_err().contains("rescue.batch_rows"));
    }

    #[test]
    fn arm_names_are_the_serde_names() {
        for arm in [
            RescueArm::Retry,
            RescueArm::StaticHints,
            RescueArm::Refinement,
            RescueArm::Mentor,
            RescueArm::RandomPrefix,
            RescueArm::Llm,
            RescueArm::Local,
            RescueArm::WrongAnswers,
            RescueArm::WhereOnly,
            RescueArm::ReferenceInContext,
            RescueArm::MentorNoWrongOp,
            RescueArm::RandomStep,
            RescueArm::PriorStep,
            RescueArm::AllSteps,
        ] {
            assert_eq!(serde_json::to_value(arm).unwrap(), serde_json::json!(arm.name()));
        }
    }
}
