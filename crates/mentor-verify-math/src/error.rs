//! Errors of the crate's I/O entry points (the JSONL runner).
//!
//! A wrong, missing or unparseable answer is never an error: it is a [`mentor_core::Verdict`].
//! Errors are only for failing readers and writers.

/// An infrastructure failure while running a batch of checks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the input or writing the output failed.
    #[error("i/o error while {during}: {source}")]
    Io {
        /// What was being done (`reading input line 3`, `writing output`).
        during: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A result could not be serialised as JSON.
    #[error("could not serialise {what} as JSON: {source}")]
    Json {
        /// What was serialised.
        what: &'static str,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
