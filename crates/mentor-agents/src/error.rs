//! The crate's error type.

use std::path::PathBuf;

/// Result alias of `mentor-agents`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of `mentor-agents`: bad prompt files and unreachable backends. A mentor that runs
/// but has nothing to say is not an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A prompt file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A prompt file is not valid TOML or lacks a required entry.
    #[error("{file}: {message}")]
    Prompts {
        /// The file (or the embedded default's name).
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A template failed to render.
    #[error("template `{name}`: {message}")]
    Template {
        /// The template's name (`math.arithmetic_slip.2`).
        name: String,
        /// What the engine said.
        message: String,
    },
    /// The LLM endpoint failed (after retries).
    #[error("llm backend: {0}")]
    Llm(String),
    /// An in-process chat model failed (the trainer's `local` backend: no chat template, prompt
    /// too long, a tensor error).
    #[error("local backend: {0}")]
    Local(String),
    /// A [`MentorSession`](crate::MentorSession) was answered after it ended.
    #[error("mentor session: {0}")]
    Session(String),
}
