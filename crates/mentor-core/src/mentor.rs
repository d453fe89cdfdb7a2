//! The `Mentor` trait: a group of failed attempts in, a diagnosis and a hint out.

use serde::{Deserialize, Serialize};

use crate::{Completion, Diagnosis, Hint, HintLevel, Task, Verdict};

/// One attempt of the learner with its judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// What the learner wrote.
    pub completion: Completion,
    /// How it was judged.
    pub verdict: Verdict,
}

/// What the mentor is asked about: a task, the failed group, the level to write at, and the
/// hints already tried on this group (so an escalation can differ from them).
#[derive(Debug, Clone, Copy)]
pub struct MentorRequest<'a> {
    /// The task (with its privileged payload).
    pub task: &'a Task,
    /// The failed attempts of the group.
    pub attempts: &'a [Attempt],
    /// The escalation level to write the hint at.
    pub level: HintLevel,
    /// Hints already tried on this group in this step.
    pub previous_hints: &'a [Hint],
}

/// A hint the guard refused, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardRejection {
    /// The rejected text.
    pub text: String,
    /// Why it was rejected (leaks the answer, reproduces the reference code, empty, too long).
    pub reason: String,
}

/// The mentor's answer: the diagnosis it reached (if it diagnoses), the hint that passed the
/// guard (if any), and the hints the guard rejected on the way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Intervention {
    /// The diagnosis; `None` for baselines that do not diagnose.
    pub diagnosis: Option<Diagnosis>,
    /// The hint to re-sample with; `None` when every candidate was rejected.
    pub hint: Option<Hint>,
    /// Rejected candidates with reasons.
    pub rejections: Vec<GuardRejection>,
    /// What the guard redacted from `hint` (one reason per redaction); empty when the hint is
    /// shown as written.
    #[serde(default)]
    pub redactions: Vec<String>,
}

/// The mentor could not run (backend unreachable with no fallback, bad prompt files, ...).
/// A mentor that runs but finds nothing to say returns an [`Intervention`] without a hint.
#[derive(Debug, thiserror::Error)]
#[error("mentor `{backend}` failed: {message}")]
pub struct MentorError {
    /// The backend's name.
    pub backend: String,
    /// What failed.
    pub message: String,
}

/// Diagnoses a failed group and writes a hint for the learner's next on-policy attempt.
pub trait Mentor: Send + Sync {
    /// A short name for logs (`rules`, `llm`, `static`, ...).
    fn name(&self) -> &str;

    /// Diagnoses the attempts and writes a guarded hint at the requested level.
    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError>;
}

/// Turns a task's reference solution, as its author wrote it, into the form a learner can
/// continue from (`None`: it cannot). One such function is shared by every arm that shows the
/// learner reference content (the mentor and its matched controls), so that no arm gets a
/// better view of the reference than another.
pub type ReferenceRewrite = std::sync::Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;
