//! The math checker as the mentor guard's answer equivalence.

use std::ops::Range;

use mentor_core::AnswerEquivalence;

use crate::config::Config;

/// [`AnswerEquivalence`] by the math checker: [`crate::equivalent`] decides, and the answer
/// spans are the LaTeX forms [`crate::extract`] reads (math spans, boxes) plus fractions and
/// roots. What the mentor's guard uses to keep hints from leaking an answer in any form.
///
/// ```
/// use mentor_core::AnswerEquivalence;
/// use mentor_verify_math::MathEquivalence;
///
/// let eq = MathEquivalence::default();
/// assert!(eq.equivalent("0.5", r"\frac{1}{2}"));
/// let text = r"so $x = \frac{1}{2}$";
/// let spans: Vec<&str> = eq.answer_spans(text).into_iter().map(|r| &text[r]).collect();
/// assert!(spans.contains(&r"\frac{1}{2}"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct MathEquivalence {
    config: Config,
}

impl MathEquivalence {
    /// The checker with `config`.
    pub fn new(config: Config) -> Self {
        Self { config }
    }
}

impl AnswerEquivalence for MathEquivalence {
    fn equivalent(&self, gold: &str, candidate: &str) -> bool {
        crate::equivalent(gold, candidate, &self.config)
    }

    fn answer_spans(&self, text: &str) -> Vec<Range<usize>> {
        crate::extract::answer_spans(text)
    }
}
