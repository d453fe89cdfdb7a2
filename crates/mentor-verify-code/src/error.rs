//! The crate's error type: infrastructure failures only.
//!
//! Whatever a candidate program does (loop forever, exhaust memory, exit early, tamper with
//! the harness) is a [`mentor_core::Verdict`], never an [`Error`]. An `Error` means the sandbox
//! itself could not run: the runtime component is missing or corrupt, the engine could not be
//! built, a task's own tests do not parse, or an input file is malformed.

use std::path::PathBuf;

/// Why the sandbox or a harness could not do its job.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Python runtime component is not where it should be.
    #[error("the Python runtime component is missing at {path}\nhint: run `cargo xtask setup`")]
    RuntimeMissing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Reading or writing a file failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done (`reading`, `writing`).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// wasmtime refused the configuration, the component or an instantiation.
    #[error("wasmtime {stage} failed: {message}")]
    Wasmtime {
        /// What was being done (`engine`, `compile`, `deserialize`, `link`, `instantiate`).
        stage: &'static str,
        /// wasmtime's message (with its cause chain).
        message: String,
    },
    /// The guest harness answered something the host cannot read: a bug in the harness, not
    /// the candidate's doing (candidate tampering is reported as a verdict).
    #[error("the sandbox harness answered an unreadable report: {0}")]
    Protocol(String),
    /// A task's own tests could not be prepared (they do not parse, define no `check`, ...).
    #[error("task `{task_id}` cannot be judged: {reason}")]
    BadTask {
        /// The task.
        task_id: String,
        /// Why.
        reason: String,
    },
    /// The operating system refused a thread or runtime, or a worker died.
    #[error("{what}{}", source.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    Os {
        /// What failed.
        what: String,
        /// The OS error, when there is one.
        source: Option<std::io::Error>,
    },
    /// Reading or writing a JSONL stream failed.
    #[error("reading or writing the JSONL stream: {0}")]
    Stream(std::io::Error),
    /// The configuration is invalid.
    #[error("invalid sandbox configuration: {0}")]
    Config(String),
}

impl Error {
    pub(crate) fn wasmtime(stage: &'static str, e: &wasmtime::Error) -> Self {
        Error::Wasmtime { stage, message: format!("{e:?}") }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
