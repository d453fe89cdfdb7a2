//! The crate's error type.

/// Result alias of `mentor-integration`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Infrastructure failures of a step. A group that stays all-fail is not an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The rollout function failed.
    #[error("rollout failed: {0}")]
    Rollout(#[source] crate::rollout::RolloutError),
    /// The verifier failed (not: judged wrong).
    #[error(transparent)]
    Verifier(#[from] mentor_core::VerifierError),
    /// The mentor could not run.
    #[error(transparent)]
    Mentor(#[from] mentor_core::MentorError),
    /// Advantage computation failed.
    #[error(transparent)]
    Grpo(#[from] mentor_grpo::Error),
    /// Inconsistent input (sizes, empty groups).
    #[error("invalid input: {0}")]
    Invalid(String),
}
