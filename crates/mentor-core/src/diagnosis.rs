//! Diagnoses and hints: what the mentor concludes from a failed group, and what it tells the
//! learner.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The root cause a diagnoser attributes to a group of failed attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureCategory {
    /// No final answer, or not in the required format.
    NoFinalAnswer,
    /// A calculation error in an otherwise sound approach.
    ArithmeticSlip,
    /// A sign error.
    SignError,
    /// Units or percentages mixed up.
    UnitOrPercentSlip,
    /// The wrong method, or a missing concept.
    WrongMethod,
    /// The reasoning stopped before the end (including truncation).
    IncompleteReasoning,
    /// Code that does not compile.
    SyntaxError,
    /// Code that raises an exception.
    RuntimeException,
    /// Code that produces a wrong output on a named test.
    WrongOutput,
    /// Edge cases (empty input, negatives, bounds) mishandled.
    EdgeCase,
    /// CPU or wall-clock time exhausted.
    Timeout,
    /// Memory or output exhausted.
    ResourceExhaustion,
    /// None of the above could be established.
    Unknown,
}

/// A piece of evidence behind a diagnosis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Which attempt of the group it is quoted from (index into the attempts), if any.
    pub attempt: Option<usize>,
    /// The quoted span (from a completion, a failing test, a traceback).
    pub quote: String,
    /// Why it matters.
    pub note: String,
}

/// The diagnoser's conclusion about a group of failed attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The root cause.
    pub category: FailureCategory,
    /// The failure mode the group shares, in one sentence.
    pub shared_mode: String,
    /// Quoted evidence.
    pub evidence: Vec<Evidence>,
    /// For step-wise reference solutions: the 0-based index of the first step the attempts got
    /// wrong, when it could be located.
    pub first_wrong_step: Option<usize>,
    /// Confidence in `[0, 1]`.
    pub confidence: f32,
}

/// How much a hint gives away. Escalates while the hinted group still fails.
///
/// Invariant: 1 ≤ level ≤ 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct HintLevel(u8);

impl HintLevel {
    /// Level 1: a strategic nudge (the concept, what to check).
    pub const NUDGE: HintLevel = HintLevel(1);
    /// Level 2: a plan or a key intermediate step.
    pub const PLAN: HintLevel = HintLevel(2);
    /// Level 3: a partial worked solution up to the first wrong step (never the final answer).
    pub const PARTIAL_SOLUTION: HintLevel = HintLevel(3);
    /// The highest level.
    pub const MAX: HintLevel = HintLevel::PARTIAL_SOLUTION;

    /// The level as a number in `1..=3`.
    pub fn get(self) -> u8 {
        self.0
    }

    /// The next level up, or `None` at the top.
    pub fn escalate(self) -> Option<HintLevel> {
        (self.0 < 3).then_some(HintLevel(self.0 + 1))
    }
}

impl TryFrom<u8> for HintLevel {
    type Error = Error;
    fn try_from(v: u8) -> Result<Self> {
        if (1..=3).contains(&v) {
            Ok(HintLevel(v))
        } else {
            Err(Error::Invalid { what: "hint level", reason: format!("{v} is not in 1..=3") })
        }
    }
}

impl From<HintLevel> for u8 {
    fn from(l: HintLevel) -> u8 {
        l.0
    }
}

/// Who wrote a hint: the arms of an experiment differ here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HintSource {
    /// The mentor, from a diagnosis.
    Mentor,
    /// A static library of generic hints, chosen without diagnosis (baseline).
    Static,
    /// Post-hoc refinement: the failed answer and its feedback shown back (baseline).
    Refinement,
    /// The task's whole reference solution, trained as an off-policy completion (baseline).
    Reference,
    /// A matched control of a diagnosed hint: written from less than the diagnosis (the
    /// failed answers only, the mistake's location only), so a comparison isolates what the
    /// diagnosis adds.
    Control,
}

/// An instructional prompt for the learner's next attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hint {
    /// The escalation level it was written at.
    pub level: HintLevel,
    /// The instruction shown to the learner (appended to the prompt).
    pub text: String,
    /// For partial-solution hints: the worked steps the learner's answer should start with.
    /// The `prefix` credit mode moves these into the completion under the original prompt.
    pub solution_prefix: Option<String>,
    /// Who wrote it.
    pub source: HintSource,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_level_bounds_and_escalation() {
        assert!(HintLevel::try_from(0).is_err());
        assert!(HintLevel::try_from(4).is_err());
        assert_eq!(HintLevel::NUDGE.escalate(), Some(HintLevel::PLAN));
        assert_eq!(HintLevel::PLAN.escalate(), Some(HintLevel::PARTIAL_SOLUTION));
        assert_eq!(HintLevel::MAX.escalate(), None);
        assert!(serde_json::from_str::<HintLevel>("9").is_err());
        assert_eq!(serde_json::from_str::<HintLevel>("2").unwrap(), HintLevel::PLAN);
    }
}
