//! The training library behind the `mentor` CLI: the TOML config and its presets, the GRPO
//! training loop that wires policy, verifiers, mentor and optimizer together, evaluation,
//! checkpoints and the in-process model mentor.
//!
//! This crate orchestrates; it owns no algorithm, and the reusable parts are the library
//! crates it wires (`mentor-policy`, `mentor-grpo`, the verifiers, `mentor-agents`,
//! `mentor-integration`, `mentor-tasks`). The measurements built on it (rescue, probe,
//! reports, experiments) are `mentor-lab`'s; the `mentor` binary is `mentor-cli`'s.
//!
//! Modules: [`config`] (the TOML schema by section, presets, `--set` overrides, the resume
//! diff), [`train`] (the loop, by stage), [`pretrain`] (the demo's from-scratch model),
//! [`memory`] (the peak-memory estimate a run checks before it starts), [`eval`],
//! [`checkpoint`], [`strata`] (difficulty strata and prompt styles), [`policy`] (building the
//! policy a config names), [`verify`] (the verifier by task domain), [`local_mentor`] (a
//! policy as mentor), [`jsonl`] (atomic result files) and [`live_bytes`] (live heap bytes).
//!
//! The README's example is compiled and run as a doctest.
#![deny(missing_docs)]

pub mod checkpoint;
pub mod config;
mod error;
pub mod eval;
pub mod jsonl;
pub mod live_bytes;
pub mod local_mentor;
pub mod memory;
pub mod policy;
pub mod pretrain;
mod rollout;
pub mod seed;
pub mod strata;
pub mod train;
mod update;
pub mod verify;

pub use error::{Error, Result};

/// The README's example, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
