//! Measurements on MENTOR RLVR runs, built on `mentor-trainer`'s config, training loop and
//! local mentor: what the `mentor` CLI's `rescue`, `probe`, `experiment` and `report`
//! subcommands compute.
//!
//! - [`rescue`]: the paired measurement of how often each mentor turns an all-fail group into
//!   a success (no training): plan the arms, sample, judge, summarise, pool seeds, and test the
//!   registered contrasts;
//! - [`probe`]: where the learner's unhinted pass@1 puts it at the edge of what it can do, by
//!   difficulty stratum and prompt style;
//! - [`experiment`]: many training runs (arms × seeds, or a sweep of one key) against one
//!   shared step-0 evaluation, pooled with intervals by seed;
//! - [`report`]: the Markdown + SVG report over run directories, with paired bootstrap
//!   intervals;
//! - [`stats`]: the interval statistics they share (bootstrap, exact McNemar, Holm).
//!
//! The README's example is compiled and run as a doctest.
#![deny(missing_docs)]

pub mod experiment;
pub mod probe;
mod progress;
pub mod report;
pub mod rescue;
pub mod stats;

/// The README's example, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
