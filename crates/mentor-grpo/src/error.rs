//! The crate's error type.
//!
//! `Err` means the caller handed us something we cannot compute with (mismatched shapes, an
//! invalid configuration, non-finite rewards) or candle failed underneath. Model behaviour (all
//! rewards zero, every ratio clipped) is data, never an error.

/// Everything that can go wrong in `mentor-grpo`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tensor operation failed inside candle.
    #[error("candle: {0}")]
    Candle(#[from] candle_core::Error),

    /// A configuration value is out of its valid range.
    #[error("invalid config field `{field}`: {reason}")]
    InvalidConfig {
        /// The field name as it appears in [`crate::GrpoConfig`].
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// Two inputs that must agree in shape or length do not.
    #[error("shape mismatch for `{what}`: expected {expected}, got {got}")]
    ShapeMismatch {
        /// Which input.
        what: &'static str,
        /// The expected shape or length.
        expected: String,
        /// The shape or length that was passed.
        got: String,
    },

    /// A reward is NaN or infinite.
    #[error("reward at row {row} is not finite ({value})")]
    NonFiniteReward {
        /// Row index in the batch.
        row: usize,
        /// The offending value.
        value: f64,
    },

    /// A required input is missing for the configuration in use.
    #[error("missing input `{what}`: {why}")]
    MissingInput {
        /// Which input.
        what: &'static str,
        /// Why the configuration needs it.
        why: &'static str,
    },

    /// The caller's log-prob function (usually the policy forward) failed.
    #[error("log-prob function failed: {0}")]
    LogProbs(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn config(field: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidConfig { field, reason: reason.into() }
    }

    pub(crate) fn shape(
        what: &'static str,
        expected: impl std::fmt::Debug,
        got: impl std::fmt::Debug,
    ) -> Self {
        Error::ShapeMismatch { what, expected: format!("{expected:?}"), got: format!("{got:?}") }
    }
}
