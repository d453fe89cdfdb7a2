//! The shared data model of MENTOR: what every other crate talks about.
//!
//! `mentor-core` owns the types that cross crate boundaries — [`Task`], [`Completion`],
//! [`Verdict`] with its structured [`Feedback`], [`Diagnosis`], [`Hint`] — and the two traits
//! that the plug-in is written against: [`Verifier`] (turns a completion into a reward plus
//! evidence) and [`Mentor`] (turns a group of failed attempts into a diagnosis and a hint).
//! It also loads the public benchmark sets (GSM8K, MATH-500, HumanEval, MBPP, AIME 2024,
//! AMC 2023) into [`Task`]s, see [`datasets`].
//!
//! What it deliberately does not do: it links no tensor library and no WebAssembly runtime,
//! never reads environment variables, and never prints. Model-caused outcomes (a wrong answer,
//! a guest timeout) are data ([`Verdict`]); [`Error`] is only for infrastructure failures and
//! bad input files.
//!
//! ```
//! use mentor_core::{Task, Verdict, Feedback, MathFeedback, MathOutcome};
//! let task = Task::math("demo/1", "What is 2 + 3?", "5");
//! assert_eq!(task.reference_answer(), Some("5"));
//! let verdict = Verdict::pass(Feedback::Math(MathFeedback::correct("5", "5")));
//! assert_eq!(verdict.reward(), 1.0);
//! assert!(matches!(verdict.feedback(), Feedback::Math(m) if m.outcome == MathOutcome::Correct));
//! ```
#![deny(missing_docs)]

pub mod assets;
mod completion;
pub mod datasets;
mod diagnosis;
mod error;
pub mod fs;
mod input_lines;
mod mentor;
pub mod number_words;
pub mod numbers;
pub mod seed;
mod task;
mod verdict;
mod verifier;

pub use completion::{Completion, FinishReason};
pub use diagnosis::{Diagnosis, Evidence, FailureCategory, Hint, HintLevel, HintSource};
pub use error::{DatasetError, Error, Result, VerifierError};
pub use input_lines::{input_lines, InputLine, InputLines};
pub use mentor::{
    Attempt, GuardRejection, Intervention, Mentor, MentorError, MentorRequest, ReferenceRewrite,
};
pub use task::{
    CodeHarness, CodePayload, Domain, IoCase, MathPayload, Message, Payload, Role, Task, TaskMeta,
};
pub use verdict::{
    AnswerSource, CodeFeedback, CodeOutcome, ExceptionInfo, FailedTest, Feedback, MathFeedback, MathOutcome,
    MathRelation, Verdict,
};
pub use verifier::{AnswerEquivalence, Verifier};
