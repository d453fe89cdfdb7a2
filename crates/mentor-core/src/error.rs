//! The crate's error types: infrastructure failures and malformed input files, and a
//! verifier's failure to judge (below both the verdict and the `Verifier` trait that name it).

use std::path::PathBuf;

/// Result alias used across `mentor-core`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors raised by `mentor-core`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A dataset file could not be read or parsed.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// A value violated an invariant of the data model (e.g. a reward outside `[0, 1]`).
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// Which value was invalid.
        what: &'static str,
        /// Why it was rejected.
        reason: String,
    },
}

/// A dataset file could not be loaded. Every variant names the file; parse errors also name
/// the 1-based line (or array element) and the field.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file could not be opened or read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line (or array element) is not valid JSON / not valid UTF-8.
    #[error("{path}:{line}: not a JSON object: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line number (for JSON arrays: 1-based element index).
        line: usize,
        /// What the parser said.
        message: String,
    },
    /// A required field is missing.
    #[error("{path}:{line}: missing field `{field}`")]
    MissingField {
        /// The file.
        path: PathBuf,
        /// 1-based line number (for JSON arrays: 1-based element index).
        line: usize,
        /// The missing field.
        field: &'static str,
    },
    /// A field is present but has the wrong type or an unusable value.
    #[error("{path}:{line}: field `{field}`: {message}")]
    BadField {
        /// The file.
        path: PathBuf,
        /// 1-based line number (for JSON arrays: 1-based element index).
        line: usize,
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The file parsed but holds no records.
    #[error("{path}: no records")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A split the set does not have.
    #[error("{dataset} has no split `{split}` (its splits: {known})")]
    UnknownSplit {
        /// The set's name.
        dataset: &'static str,
        /// The split asked for.
        split: String,
        /// The set's splits, comma-separated.
        known: String,
    },
}

impl DatasetError {
    /// The 1-based line (or array element) the error points at, when it points at one.
    pub fn line(&self) -> Option<usize> {
        match self {
            DatasetError::Syntax { line, .. }
            | DatasetError::MissingField { line, .. }
            | DatasetError::BadField { line, .. } => Some(*line),
            DatasetError::Io { .. } | DatasetError::Empty { .. } | DatasetError::UnknownSplit { .. } => None,
        }
    }
}

/// A verifier could not judge (infrastructure failure or misuse), as opposed to judging a
/// completion wrong, which is a [`Verdict`](crate::Verdict).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifierError {
    /// The task's domain or harness is not one this verifier handles.
    #[error("{verifier} cannot verify task `{task_id}`: {reason}")]
    Unsupported {
        /// The verifier's name.
        verifier: &'static str,
        /// The task.
        task_id: String,
        /// Why.
        reason: String,
    },
    /// The verifier's own machinery failed (sandbox could not start, runtime missing, ...).
    #[error("{verifier} failed: {message}")]
    Internal {
        /// The verifier's name.
        verifier: &'static str,
        /// What failed, and what to do about it.
        message: String,
    },
}
