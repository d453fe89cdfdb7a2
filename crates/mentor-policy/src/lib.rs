//! Trainable causal-LM policy on candle: Llama-family models from HF safetensors or GGUF, tokenizer and chat template, batched sampling with a KV cache, differentiable per-token log-probs, checkpoints.
//!
//! Owns the learner. Must not depend on wasmtime.
//!
//! **Status:** this crate has no public API yet; it is filled by the issue "mentor-policy: a trainable candle causal-LM policy". Nothing in
//! it pretends to work in the meantime.
#![deny(missing_docs)]
