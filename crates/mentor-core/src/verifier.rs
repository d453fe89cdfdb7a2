//! The `Verifier` trait: a completion in, a reward and evidence out.

use crate::{Task, Verdict, VerifierError};

/// Judges completions of tasks. Implementations must never panic on model output and must
/// bound their time and memory whatever the completion says.
///
/// `verify_batch` is the entry point trainers call; implementations that can use several cores
/// (rayon, a sandbox pool) override it. Results are in input order.
pub trait Verifier: Send + Sync {
    /// A short name for logs (`math`, `code`).
    fn name(&self) -> &'static str;

    /// Judges one completion.
    fn verify(&self, task: &Task, completion: &str) -> Result<Verdict, VerifierError>;

    /// Judges many completions, in input order. The default runs them one by one.
    fn verify_batch(&self, items: &[(&Task, &str)]) -> Vec<Result<Verdict, VerifierError>> {
        items.iter().map(|(t, c)| self.verify(t, c)).collect()
    }

    /// [`Verifier::verify_batch`] for training: a completion the verifier fails on gets
    /// [`Verdict::verifier_error`] (reward 0, the error carried in its feedback) instead of
    /// failing the whole batch, so one bad completion cannot stop a training step.
    fn judge_batch(&self, items: &[(&Task, &str)]) -> Vec<Verdict> {
        self.verify_batch(items)
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| Verdict::verifier_error(&e)))
            .collect()
    }
}

/// Decides whether a piece of text states the same answer as a gold answer.
///
/// The math verifier implements it; the mentor's guard uses it to reject hints that leak the
/// final answer in any equivalent form (`0.5`, `\frac{1}{2}`, `1/2`, `50\%`), without the
/// agents crate depending on the verifier crate.
pub trait AnswerEquivalence: Send + Sync {
    /// Whether `candidate` denotes the same answer as `gold`. Must be cheap, bounded and
    /// panic-free on any text.
    fn equivalent(&self, gold: &str, candidate: &str) -> bool;

    /// Byte ranges of `text` that may state an answer in this checker's notation (for math:
    /// LaTeX spans, `\boxed{}` contents, fractions and roots), each on `char` boundaries. The
    /// guard asks [`Self::equivalent`] about each, besides the numbers and runs of words it
    /// finds itself. Default: none. Must be bounded and panic-free on any text.
    fn answer_spans(&self, text: &str) -> Vec<std::ops::Range<usize>> {
        let _ = text;
        Vec::new()
    }
}
