//! Math answer checker for RLVR rewards: finds the final answer in a completion, parses LaTeX
//! or plain-text math, decides equivalence with the gold answer exactly where it can, and
//! says why an answer is wrong.
//!
//! - [`extract`] finds the answer (`\boxed{}`, `#### x`, "The answer is", math spans, last
//!   number) and reports where it came from.
//! - [`check`] judges one completion and returns a [`Verdict`] whose feedback is a
//!   [`MathFeedback`] (outcome, extracted text, parsed value, relation to the gold). A value
//!   negated, bounded, approximated or retracted by the words in or right around it
//!   (`\boxed{\text{not } 3}`, "at least 3", `3 \text{ or more}`, `#### about 5`) is no answer,
//!   and so are numbers side by side (`2 3`, `1\,000\,1`), which are neither one number nor a
//!   product. The whole answer region is read: a word in it that is not a known unit, a
//!   neutral phrase, a number or multiplier word (`3 thousand` is 3000) or a word of the
//!   question ([`check_with_question`]) makes it no answer, and so do characters touching a
//!   box (`\boxed{3}000`, `-\boxed{3}`); a false equation (`2+2 = 3`) is wrong, and a
//!   different answer stated after the final one is `multiple_answers`.
//! - [`equivalent`] compares two answer strings; it is cheap (microseconds) and is what the
//!   mentor's guard uses to spot a hint that leaks the answer.
//! - [`MathVerifier`] implements [`mentor_core::Verifier`]; [`check_batch`] and
//!   `verify_batch` use all cores.
//! - [`cli::run_jsonl`] is the `mentor verify math` JSONL contract.
//!
//! Numbers are compared as exact big rationals (`0.1 + 0.2 = 3/10`); irrational values within
//! [`Config::rel_tolerance`]; expressions with variables at pseudo-random rational points from
//! a fixed seed, so results are deterministic. Every check is bounded: input size, nesting
//! depth, number size and operation count are capped, and what exceeds a cap is reported as
//! [`MathOutcome::TooComplex`], never a panic or a hang.
//!
//! ```
//! use mentor_verify_math::{check, equivalent, Config};
//! use mentor_core::{Feedback, MathOutcome};
//! let cfg = Config::default();
//! let v = check("\\frac{1}{2}", "so the probability is $\\boxed{0.5}$.", &cfg);
//! assert!(v.passed());
//! let v = check("-3", "The answer is 3.", &cfg);
//! let Feedback::Math(f) = v.feedback() else { unreachable!() };
//! assert_eq!(f.outcome, MathOutcome::WrongValue);
//! assert!(equivalent("2\\sqrt{2}", "\\sqrt{8}", &cfg));
//! ```
#![deny(missing_docs)]

mod ast;
mod check;
pub mod cli;
mod compare;
mod config;
mod digit_groups;
mod equivalence;
mod error;
mod eval;
mod extract;
mod lexer;
mod parser;
mod prose;
mod qualifiers;
mod region;
mod verifier;
mod words;

pub use config::Config;
pub use equivalence::MathEquivalence;
pub use error::{Error, Result};
pub use extract::{extract, Extracted};
pub use verifier::MathVerifier;

#[cfg(doc)]
use mentor_core::MathOutcome;
use mentor_core::{MathFeedback, Verdict};
use rayon::prelude::*;

/// Judges `completion` against the gold answer `gold` (LaTeX or plain; a boxed gold or a GSM8K
/// `#### x` gold is reduced to its answer). Never panics; bounded time and memory.
///
/// Without the question, an answer region may only contain math, known units and neutral
/// phrasing: "42 pencils" is `no_answer` here; [`check_with_question`] reads the nouns of the
/// question too, and is what [`MathVerifier`] uses.
pub fn check(gold: &str, completion: &str, cfg: &Config) -> Verdict {
    check::check(gold, completion, None, cfg)
}

/// [`check`], with the question the completion answers: its words are neutral in the answer
/// region (what is counted: "33 pencils", "18 dollars" for a question about them), and `X\%`
/// equals `X` only when the question or the gold is about a percentage.
///
/// ```
/// use mentor_verify_math::{check, check_with_question, Config};
/// let cfg = Config::default();
/// let q = "Mia has 12 pencils and buys 30 more. How many pencils does she have?";
/// assert!(check_with_question("42", "The answer is 42 pencils.", Some(q), &cfg).passed());
/// assert!(!check("42", "The answer is 42 pencils.", &cfg).passed());
/// assert!(!check_with_question("42", "The answer is probably 42.", Some(q), &cfg).passed());
/// ```
pub fn check_with_question(gold: &str, completion: &str, question: Option<&str>, cfg: &Config) -> Verdict {
    check::check(gold, completion, question, cfg)
}

/// Like [`check`], returning only the feedback.
pub fn check_feedback(gold: &str, completion: &str, cfg: &Config) -> MathFeedback {
    check::check_feedback(gold, completion, None, cfg)
}

/// Like [`check_with_question`], returning only the feedback.
pub fn check_feedback_with_question(
    gold: &str,
    completion: &str,
    question: Option<&str>,
    cfg: &Config,
) -> MathFeedback {
    check::check_feedback(gold, completion, question, cfg)
}

/// Judges many `(gold, completion)` pairs on all cores; results in input order.
pub fn check_batch(items: &[(&str, &str)], cfg: &Config) -> Vec<Verdict> {
    items.par_iter().map(|(g, c)| check::check(g, c, None, cfg)).collect()
}

/// Judges many `(gold, completion, question)` triples on all cores (see
/// [`check_with_question`]); results in input order.
pub fn check_batch_with_questions(items: &[(&str, &str, Option<&str>)], cfg: &Config) -> Vec<Verdict> {
    items.par_iter().map(|(g, c, q)| check::check(g, c, *q, cfg)).collect()
}

/// Whether two answer strings denote the same answer (`\frac{1}{2}` and `0.5`, `\{1,2\}` and
/// `\{2,1\}`, `x^2-1` and `(x-1)(x+1)`).
///
/// `reference` is the gold side: a single-valued `reference` is not equivalent to a list of
/// several candidates. Both strings are answers, not completions: no extraction is done
/// beyond reducing `\boxed{..}` or `#### x`. Costs a few microseconds for typical answers and
/// is bounded like [`check`]; anything refused or unparseable is "not equivalent".
pub fn equivalent(reference: &str, candidate: &str, cfg: &Config) -> bool {
    check::equivalent(reference, candidate, cfg)
}
