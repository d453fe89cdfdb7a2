//! Completions: what the policy wrote for a task.

use serde::{Deserialize, Serialize};

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// An end-of-sequence token or a stop string was produced.
    Stop,
    /// The max-new-tokens budget ran out (a truncated completion).
    Length,
}

/// One sampled answer to a task, as text. Token ids and log-probs live with the policy and
/// the optimizer; this is what verifiers and the mentor read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Completion {
    /// The id of the task it answers.
    pub task_id: String,
    /// The generated text (without the prompt).
    pub text: String,
    /// Why generation stopped.
    pub finish_reason: FinishReason,
}

impl Completion {
    /// A completion that stopped normally.
    pub fn new(task_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self { task_id: task_id.into(), text: text.into(), finish_reason: FinishReason::Stop }
    }

    /// Whether generation was cut by the length budget.
    pub fn is_truncated(&self) -> bool {
        self.finish_reason == FinishReason::Length
    }
}
