//! Integration tests of mentor-verify-math: the peer-labelled fixture, the labelled case table,
//! hedged and malformed answers, the whole answer region read, resource bounds, and properties.

mod cases;
mod datasets;
mod depth;
mod fixture;
mod hedges;
mod props;
mod reading;
mod safety;

use std::path::PathBuf;

/// A file under `tests/data`.
pub fn data(name: &str) -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()))
        .join("tests/data")
        .join(name)
}
