//! The MENTOR plug-in: collapse monitor, intervention loop, batch assembly and credit modes between rollout and GRPO update.
//!
//! Owns the strategy arms (vanilla, dapo, static_hints, refinement, mentor). Talks to rollouts and verifiers through traits only.
//!
//! **Status:** this crate has no public API yet; it is filled by the issue "mentor-integration: the plug-in". Nothing in
//! it pretends to work in the meantime.
#![deny(missing_docs)]
