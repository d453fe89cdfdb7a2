//! Verdicts: a reward in `[0, 1]` plus the structured evidence a mentor diagnoses from.
//!
//! A verdict is data about the model's output, never an error: "no answer found", "timeout"
//! and "memory bomb" are all verdicts with reward 0 and a feedback that says so.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Where in a completion the final answer was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AnswerSource {
    /// The last `\boxed{..}` / `\fbox{..}`.
    Boxed,
    /// A GSM8K-style `#### x` line.
    Hashes,
    /// "The answer is ..." / "Final Answer: ...".
    AnswerPhrase,
    /// The last LaTeX math span (`$..$`, `\(..\)`, `\[..\]`).
    LatexDelimiters,
    /// The last number in the text (a configurable fallback).
    LastNumber,
    /// The whole completion was taken as the answer.
    WholeText,
}

/// The outcome of a math check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MathOutcome {
    /// The extracted answer equals the gold answer (possibly unsimplified).
    Correct,
    /// No final answer could be found in the completion.
    NoAnswer,
    /// Several distinct final answers were given where the gold is one (anti-hacking).
    MultipleAnswers,
    /// An answer was found but could not be parsed as math.
    Unparseable,
    /// A value of the right type that is not equal to the gold.
    WrongValue,
    /// A value of another type (a set where a number was expected, ...).
    WrongType,
    /// The expression was refused because evaluating it would exceed the resource bounds.
    TooComplex,
}

/// How a wrong value relates to the gold, when a simple relation holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "relation", rename_all = "snake_case")]
#[non_exhaustive]
pub enum MathRelation {
    /// The prediction is the gold with the opposite sign.
    SignFlipped,
    /// The prediction is the gold times `10^exponent`.
    PowerOfTen {
        /// The power of ten separating them (non-zero).
        exponent: i32,
    },
    /// The prediction is the gold rounded (to `decimals` places), but not within tolerance.
    Rounded {
        /// Decimal places of the prediction.
        decimals: u32,
    },
    /// The prediction is the gold read as a percentage or vice versa (factor 100).
    Percentage,
    /// The prediction is the reciprocal of the gold.
    Reciprocal,
}

/// Evidence from a math check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MathFeedback {
    /// What happened.
    pub outcome: MathOutcome,
    /// The extracted answer text, if any.
    pub extracted: Option<String>,
    /// Where it was found.
    pub source: Option<AnswerSource>,
    /// The parsed, normalised value as canonical text (e.g. `1/2`, `{1, 2}`), if parsing worked.
    pub parsed: Option<String>,
    /// The gold answer as given by the dataset.
    pub gold: String,
    /// How a wrong value relates to the gold, when a simple relation holds.
    pub relation: Option<MathRelation>,
    /// A human-readable note (why parsing failed, what was refused, ...).
    pub detail: Option<String>,
}

impl MathFeedback {
    /// Feedback for a correct answer.
    pub fn correct(extracted: impl Into<String>, gold: impl Into<String>) -> Self {
        Self {
            outcome: MathOutcome::Correct,
            extracted: Some(extracted.into()),
            source: None,
            parsed: None,
            gold: gold.into(),
            relation: None,
            detail: None,
        }
    }

    /// Feedback when no final answer was found.
    pub fn no_answer(gold: impl Into<String>) -> Self {
        Self {
            outcome: MathOutcome::NoAnswer,
            extracted: None,
            source: None,
            parsed: None,
            gold: gold.into(),
            relation: None,
            detail: None,
        }
    }
}

/// The outcome of running a code completion against its tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CodeOutcome {
    /// Every test ran and passed.
    Passed,
    /// No code could be extracted from the completion.
    NoCode,
    /// The program does not compile.
    SyntaxError,
    /// An exception escaped (outside a test assertion).
    RuntimeError,
    /// A test ran and produced a wrong result.
    WrongAnswer,
    /// The CPU or wall-clock limit was hit.
    Timeout,
    /// The memory limit was hit.
    MemoryLimit,
    /// The output cap was hit and the program was stopped.
    OutputLimit,
    /// The program tried to defeat the harness (early exit, patched asserts, fake markers):
    /// the tests were not proven to have run.
    Tampered,
}

/// A test that failed, with what could be derived about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedTest {
    /// 0-based index of the test in the task's test list.
    pub index: usize,
    /// The test's source (an `assert` line) or a description of the case.
    pub source: String,
    /// The input (arguments or stdin), when derivable.
    pub input: Option<String>,
    /// The expected value or output, when derivable.
    pub expected: Option<String>,
    /// What the program produced, when derivable.
    pub actual: Option<String>,
}

/// An exception raised by the program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExceptionInfo {
    /// The exception type (`ZeroDivisionError`).
    pub kind: String,
    /// Its message.
    pub message: String,
    /// The 1-based line in the candidate's code, when known.
    pub line: Option<u32>,
    /// The relevant traceback lines (candidate frames only).
    pub traceback: Vec<String>,
}

/// Evidence from running code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeFeedback {
    /// What happened.
    pub outcome: CodeOutcome,
    /// Number of tests in the task.
    pub tests_total: usize,
    /// Number of tests that passed.
    pub tests_passed: usize,
    /// The first failing test, when one failed.
    pub failed_test: Option<FailedTest>,
    /// The exception, for syntax and runtime errors.
    pub exception: Option<ExceptionInfo>,
    /// Captured stdout (possibly truncated).
    pub stdout: String,
    /// Captured stderr (possibly truncated).
    pub stderr: String,
    /// Whether stdout or stderr was truncated at the cap.
    pub output_truncated: bool,
    /// A human-readable note (which limit, what was tampered with, ...).
    pub detail: Option<String>,
}

/// Structured, domain-specific evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "domain", rename_all = "snake_case")]
pub enum Feedback {
    /// From a math answer check.
    Math(MathFeedback),
    /// From running code against tests.
    Code(CodeFeedback),
    /// The verifier itself failed on this completion (its machinery, not the answer): the
    /// completion gets reward 0 and the training step goes on.
    VerifierError {
        /// What failed ([`crate::VerifierError`]'s message).
        message: String,
    },
}

/// The judgement of one completion: a reward in `[0, 1]`, whether it passed, and feedback.
///
/// Invariant: `reward` is finite and in `[0, 1]`; `passed` implies `reward == 1`. Fields are
/// private so the invariant cannot be broken after construction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "VerdictRepr", into = "VerdictRepr")]
pub struct Verdict {
    reward: f64,
    passed: bool,
    feedback: Feedback,
}

#[derive(Serialize, Deserialize)]
struct VerdictRepr {
    reward: f64,
    passed: bool,
    feedback: Feedback,
}

impl TryFrom<VerdictRepr> for Verdict {
    type Error = Error;
    fn try_from(r: VerdictRepr) -> Result<Self> {
        if r.passed && r.reward != 1.0 {
            return Err(Error::Invalid {
                what: "verdict",
                reason: format!("passed with reward {} (must be 1)", r.reward),
            });
        }
        Verdict::partial(r.reward, r.feedback).map(|v| Verdict { passed: r.passed, ..v })
    }
}

impl From<Verdict> for VerdictRepr {
    fn from(v: Verdict) -> Self {
        VerdictRepr { reward: v.reward, passed: v.passed, feedback: v.feedback }
    }
}

impl Verdict {
    /// A full pass: reward 1.
    pub fn pass(feedback: Feedback) -> Self {
        Self { reward: 1.0, passed: true, feedback }
    }

    /// A failure: reward 0.
    pub fn fail(feedback: Feedback) -> Self {
        Self { reward: 0.0, passed: false, feedback }
    }

    /// The verdict of a completion the verifier failed on: reward 0, carrying the error.
    pub fn verifier_error(error: &crate::VerifierError) -> Self {
        Self::fail(Feedback::VerifierError { message: error.to_string() })
    }

    /// Whether this verdict records a failure of the verifier rather than a judgement.
    pub fn is_verifier_error(&self) -> bool {
        matches!(self.feedback, Feedback::VerifierError { .. })
    }

    /// Partial credit (e.g. the fraction of tests passed). Not a pass, even at 1.0.
    ///
    /// Errors when `reward` is NaN, infinite or outside `[0, 1]`.
    pub fn partial(reward: f64, feedback: Feedback) -> Result<Self> {
        if !(0.0..=1.0).contains(&reward) {
            return Err(Error::Invalid { what: "reward", reason: format!("{reward} is not in [0, 1]") });
        }
        Ok(Self { reward, passed: false, feedback })
    }

    /// The reward, finite and in `[0, 1]`.
    pub fn reward(&self) -> f64 {
        self.reward
    }

    /// Whether the completion fully solved the task.
    pub fn passed(&self) -> bool {
        self.passed
    }

    /// The evidence.
    pub fn feedback(&self) -> &Feedback {
        &self.feedback
    }

    /// Consumes the verdict, returning its feedback.
    pub fn into_feedback(self) -> Feedback {
        self.feedback
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fb() -> Feedback {
        Feedback::Math(MathFeedback::no_answer("1"))
    }

    #[test]
    fn partial_rejects_out_of_range() {
        assert!(Verdict::partial(f64::NAN, fb()).is_err());
        assert!(Verdict::partial(-0.1, fb()).is_err());
        assert!(Verdict::partial(1.5, fb()).is_err());
        assert!(Verdict::partial(f64::INFINITY, fb()).is_err());
        assert_eq!(Verdict::partial(0.25, fb()).unwrap().reward(), 0.25);
    }

    #[test]
    fn deserialising_checks_invariants() {
        let ok = serde_json::to_string(&Verdict::pass(fb())).unwrap();
        assert!(serde_json::from_str::<Verdict>(&ok).unwrap().passed());
        let bad = ok.replace(r#""reward":1.0"#, r#""reward":0.5"#);
        assert_ne!(bad, ok);
        let err = serde_json::from_str::<Verdict>(&bad).unwrap_err().to_string();
        assert!(err.contains("passed with reward 0.5"), "{err}");
        let bad = ok.replace(r#""reward":1.0,"passed":true"#, r#""reward":7.0,"passed":false"#);
        assert!(serde_json::from_str::<Verdict>(&bad).is_err());
    }

    proptest! {
        #[test]
        fn any_in_range_reward_round_trips(r in 0.0f64..=1.0) {
            let v = Verdict::partial(r, fb()).unwrap();
            let back: Verdict = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
            prop_assert_eq!(back, v);
        }
    }
}
