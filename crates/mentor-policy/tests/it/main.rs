//! Integration tests of mentor-policy: gradients, generation, log-probs, checkpoints and the
//! real SmolLM2-135M GGUF checked against transformers' fixture.

mod checkpoint;
mod generation;
mod gradients;
mod smollm2;

use candle_core::{DType, Device};
use mentor_policy::Config;
use mentor_policy::Policy;

/// Alphabet of the tiny test models.
pub const ALPHABET: &str = "0123456789+-*/=() \nabcdefghijklmnopqrstuvwxyz";

/// A tiny random char-level policy: GQA (4 query heads over 2 kv heads), tied embeddings.
pub fn tiny(dtype: DType, seed: u64) -> Policy {
    Policy::char_level(ALPHABET, Config::tiny(0, 32, 2, 4, 2), seed, dtype, &Device::Cpu).unwrap()
}

/// Tiny policy with a modified config (untied head, Qwen2 biases, RoPE scaling, ...).
pub fn tiny_with(dtype: DType, seed: u64, edit: impl FnOnce(&mut Config)) -> Policy {
    let mut cfg = Config::tiny(0, 32, 2, 4, 2);
    edit(&mut cfg);
    Policy::char_level(ALPHABET, cfg, seed, dtype, &Device::Cpu).unwrap()
}
