//! The mentor of MENTOR: three cooperating agents that turn a group of failed attempts into a
//! targeted, guarded hint for the learner's next on-policy attempt.
//!
//! - A [`Diagnoser`] reads the task (with its privileged reference data), the failed attempts
//!   and their verifier feedback, and returns a [`Diagnosis`](mentor_core::Diagnosis): root
//!   cause, quoted evidence, the first wrong step when it can be located.
//! - A [`Tutor`] writes a [`Hint`](mentor_core::Hint) at an escalation level (1 nudge, 2 plan or
//!   key step, 3 partial worked solution up to the first wrong step).
//! - A [`Guard`] rejects or redacts hints that leak the final answer in any equivalent form
//!   (through an injected [`AnswerEquivalence`](mentor_core::AnswerEquivalence), normally the
//!   math verifier), reproduce the reference code, are empty or too long.
//!
//! [`AgentMentor`] composes them behind the [`mentor_core::Mentor`] trait. Backends: [`rules`]
//! (default, offline, deterministic), [`llm`] (any OpenAI-compatible chat endpoint, falling
//! back to `rules` on any failure), and through [`llm::ChatModel`] any other model that answers
//! a conversation (the trainer's `local` backend: an in-process policy, the learner itself
//! included). This crate depends on no model and no sandbox. The baselines the paper compares against implement the same
//! trait: [`StaticHints`] (generic hints, no diagnosis) and [`Refinement`] (the failed answer
//! and its feedback shown back).
//!
//! Hint and role-prompt templates live in files (`prompts/*.toml`), embedded at compile time
//! and overridable at run time with [`Prompts::load_dir`].
//!
//! What this crate does not do: run code, check answers (it asks the injected equivalence), or
//! sample rollouts from the policy.
#![deny(missing_docs)]

mod agents;
mod baselines;
mod derivation;
mod error;
mod guard;
pub mod llm;
mod mentor;
mod prompts;
pub mod random_prefix;
mod rewrite;
pub mod rules;
mod session;
mod twins;

pub use agents::{Diagnoser, Tutor};
pub use baselines::{
    where_only_text, wrong_answers_text, Refinement, Retry, StaticHints, WhereOnly, WrongAnswers,
};
pub use derivation::{leak_by_derivation, named_operations, no_learner_answer, LeakByDerivation};
pub use error::{Error, Result};
pub use guard::{reference_overlap, Guard, GuardConfig, GuardOutcome};
pub use mentor::AgentMentor;
pub use prompts::Prompts;
pub use rewrite::Rewritten;
pub use session::MentorSession;
pub use twins::{in_band, prior_key, shown_size, StepTwin, TokenCount, Twin, TwinKind, SIZE_BAND};
