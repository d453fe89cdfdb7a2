//! Generated problem families: every problem is a function of its seed and index, the same
//! text on every machine (integer arithmetic and a seeded RNG only), written as
//! [`mentor_core::Task`]s that the math verifier checks and the `rules` mentor diagnoses.
//!
//! - [`curriculum`]: the embedded addition curriculum of the demo (a worked scratchpad per
//!   column, difficulty levels, and the withheld "ten column" skill);
//! - [`arith`]: multi-step arithmetic word problems in GSM8K's form (the development family
//!   the `rules` mentor's wording was written from);
//! - [`heldout`]: word-problem templates written apart from [`arith`] (other names, things and
//!   operations), for measurements that must not be tuned on the family they test.
//!
//! The README's example is compiled and run as a doctest.
#![deny(missing_docs)]

pub mod arith;
pub mod curriculum;
pub mod heldout;

/// The README's example, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
