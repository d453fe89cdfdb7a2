//! Math answer checker: extraction, LaTeX parsing and normalisation, exact and symbolic equivalence, with structured feedback.
//!
//! Owns math rewards. Must not depend on candle or wasmtime.
//!
//! **Status:** this crate has no public API yet; it is filled by the issue "mentor-verify-math: a math answer checker". Nothing in
//! it pretends to work in the meantime.
#![deny(missing_docs)]
