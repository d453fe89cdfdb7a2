//! CPython-in-wasmtime sandbox and unit-test harnesses (HumanEval, MBPP, stdin/stdout) with per-test feedback.
//!
//! Owns code rewards. Must not depend on candle. The guest program it runs lives in guest/ and is built by `cargo xtask setup`.
//!
//! **Status:** this crate has no public API yet; it is filled by the issue "mentor-verify-code: CPython in a wasmtime sandbox". Nothing in
//! it pretends to work in the meantime.
#![deny(missing_docs)]
