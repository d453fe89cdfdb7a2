//! `mentor verify code` in a build without the `code` feature: a clear error.

use anyhow::{bail, Result};

pub use crate::cli::VerifyCodeArgs;

/// Explains that this build has no code sandbox.
pub fn run(_args: &VerifyCodeArgs) -> Result<()> {
    bail!("this `mentor` was built without the code sandbox\nhint: rebuild with `--features code` (on by default)")
}
