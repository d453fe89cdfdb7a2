//! Integration tests of mentor-verify-math: the peer-labelled fixture, the labelled case table,
//! resource bounds, and properties.

mod cases;
mod datasets;
mod depth;
mod fixture;
mod props;
mod safety;

use std::path::PathBuf;

/// A file under `tests/data`.
pub fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}
