//! GRPO: group advantages, TRL's loss variants (grpo, bnpo, dr_grpo, dapo), KL, clipping, optimizer step and step metrics.
//!
//! Owns the optimizer every arm shares. Must not depend on policy internals or wasmtime.
//!
//! **Status:** this crate has no public API yet; it is filled by the issue "mentor-grpo: GRPO with every loss variant TRL users know". Nothing in
//! it pretends to work in the meantime.
#![deny(missing_docs)]
