//! The crate's error type.
//!
//! Everything that can fail in this crate returns [`Error`]: tensor errors from candle, tokenizer
//! errors, unreadable or inconsistent model files, unsupported configurations. Model *output* is
//! never an error: an odd completion is data.

use std::path::PathBuf;

/// Errors of the policy crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tensor operation failed in candle.
    #[error("tensor op: {0}")]
    Candle(#[from] candle_core::Error),
    /// The tokenizers crate failed (building, encoding, decoding or saving).
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// Reading or writing a file failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done ("read", "write", "rename", ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A JSON file (config, tokenizer config, index) could not be parsed.
    #[error("parse {path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: serde_json::Error,
    },
    /// The model configuration is invalid or uses something this crate does not implement.
    #[error("model config: {0}")]
    Config(String),
    /// A weight the configuration needs is not in the checkpoint.
    #[error("missing weight `{0}` in the checkpoint")]
    MissingWeight(String),
    /// A weight has a different shape than the configuration implies.
    #[error("weight `{name}` has shape {actual:?}, the config implies {expected:?}")]
    WeightShape {
        /// HF name of the weight.
        name: String,
        /// Shape implied by the config.
        expected: Vec<usize>,
        /// Shape found in the checkpoint.
        actual: Vec<usize>,
    },
    /// A GGUF file lacks metadata or uses a variant this crate does not read.
    #[error("gguf: {0}")]
    Gguf(String),
    /// The Hugging Face Hub could not provide a file (not cached while offline, network error).
    #[error("hub {repo}/{file}: {reason}")]
    Hub {
        /// Repository id.
        repo: String,
        /// File in the repository.
        file: String,
        /// Why it failed.
        reason: String,
    },
    /// A model argument meant as a local path names no file or directory.
    #[error("no model file or directory at `{}` (a local path; Hub repository ids are `owner/name`)", .0.display())]
    ModelNotFound(PathBuf),
    /// The chat template failed to compile or render, or the model has none.
    #[error("chat template: {0}")]
    ChatTemplate(String),
    /// A request was malformed (empty batch, token id outside the vocabulary, bad sampling knob).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { op, path, source }
    }

    pub(crate) fn tokenizer(e: impl std::fmt::Display) -> Error {
        Error::Tokenizer(e.to_string())
    }
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
