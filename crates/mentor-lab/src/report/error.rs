//! The report's error: loading runs, writing files, rendering plots. Below every part of the
//! report that raises it.

use std::path::PathBuf;

/// Errors raised while loading runs or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading or writing a file failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON / JSONL file contained a malformed or invalid line.
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The offending file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// [`write_report`](super::write_report) was called with no runs.
    #[error("no runs to report on")]
    NoRuns,
    /// Rendering a plot failed.
    #[error("plotting failed: {0}")]
    Plot(String),
}
