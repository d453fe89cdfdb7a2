//! Errors of the training library. Each names what to fix: the config field, the file, the
//! checkpoint.

use std::path::PathBuf;

/// Training errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is invalid.
    #[error("{file}: {message}")]
    Config {
        /// The config file (or preset / `--set`).
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A length in the configuration does not fit the model (checked before anything is
    /// written).
    #[error("`{field}` = {value} exceeds the limit of {limit}: {detail}")]
    Limit {
        /// The dotted config key.
        field: String,
        /// Its value.
        value: String,
        /// The limit it exceeds.
        limit: String,
        /// Why, and what fits.
        detail: String,
    },
    /// The run's estimated peak memory exceeds the machine's available memory (checked before
    /// anything is written).
    #[error(
        "memory estimate {estimate} exceeds the {available} available\nhint: lower \
         sampling.prompts_per_step, sampling.group_size or sampling.max_new_tokens, or raise \
         grpo.gradient_accumulation_steps; pass --allow-over-memory to start anyway"
    )]
    Memory {
        /// The estimate, with its parts.
        estimate: String,
        /// What the machine has available.
        available: String,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A checkpoint is missing, partial or corrupt.
    #[error("checkpoint {}: {message}", path.display())]
    Checkpoint {
        /// The checkpoint directory or file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A line of a JSONL file could not be read.
    #[error("{}:{line}: {message}", path.display())]
    Jsonl {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The policy failed.
    #[error(transparent)]
    Policy(#[from] mentor_policy::Error),
    /// The GRPO update failed.
    #[error(transparent)]
    Grpo(#[from] mentor_grpo::Error),
    /// The strategy plug-in failed.
    #[error(transparent)]
    Integration(#[from] mentor_integration::Error),
    /// The mentor's prompts are invalid.
    #[error(transparent)]
    Agents(#[from] mentor_agents::Error),
    /// Loading a dataset failed.
    #[error(transparent)]
    Dataset(#[from] mentor_core::DatasetError),
    /// A verifier failed.
    #[error(transparent)]
    Verifier(#[from] mentor_core::VerifierError),
    /// A tensor operation failed.
    #[error(transparent)]
    Tensor(#[from] candle_core::Error),
    /// Something needed is missing (an asset, a feature).
    #[error("{0}")]
    Missing(String),
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An `Io` error maker for `map_err`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}
