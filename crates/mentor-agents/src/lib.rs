//! The mentor: diagnoser, tutor and guard agents with rules, LLM and in-process backends, plus the static-hint and refinement baselines.
//!
//! Owns diagnosis and hint writing. Must not depend on wasmtime.
//!
//! **Status:** this crate has no public API yet; it is filled by the issue "mentor-agents: the mentor". Nothing in
//! it pretends to work in the meantime.
#![deny(missing_docs)]
