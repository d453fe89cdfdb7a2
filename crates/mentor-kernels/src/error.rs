//! The crate's error type: the process-wide settings ([`crate::set_kernel_path`],
//! [`crate::set_threads`]) can fail; the tensor ops return candle's errors.

/// Errors of the kernels crate's settings.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A kernel path was named that does not exist or that this CPU cannot run.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The rayon thread pool could not be configured.
    #[error("thread pool: {0}")]
    ThreadPool(String),
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
