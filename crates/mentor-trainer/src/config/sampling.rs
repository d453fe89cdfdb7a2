//! `[sampling]`: rollouts.

use serde::{Deserialize, Serialize};

use super::invalid;

/// `[sampling]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingSection {
    /// Prompts (groups) per step.
    pub prompts_per_step: usize,
    /// Completions per prompt (G).
    pub group_size: usize,
    /// Sampling temperature.
    pub temperature: f64,
    /// Nucleus sampling: keep the most likely tokens whose probability mass reaches `top_p`
    /// (1: off). The behaviour log-probs are those of the truncated distribution sampled from.
    pub top_p: f64,
    /// Keep only the `top_k` most likely tokens (0: off).
    pub top_k: usize,
    /// Most new tokens per completion.
    pub max_new_tokens: usize,
}

impl Default for SamplingSection {
    fn default() -> Self {
        Self {
            prompts_per_step: 8,
            group_size: 8,
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            max_new_tokens: 48,
        }
    }
}

impl SamplingSection {
    /// Group size, prompts, temperature, length and `top_p` in range.
    pub fn validate(&self) -> Result<(), String> {
        if self.group_size < 2 {
            return invalid("sampling.group_size", format!("{} (GRPO needs at least 2)", self.group_size));
        }
        if self.prompts_per_step == 0 {
            return invalid("sampling.prompts_per_step", "must be > 0");
        }
        if !(self.temperature > 0.0 && self.temperature.is_finite()) {
            return invalid("sampling.temperature", format!("{} (must be > 0)", self.temperature));
        }
        if self.max_new_tokens == 0 {
            return invalid("sampling.max_new_tokens", "must be > 0");
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return invalid("sampling.top_p", format!("{} (allowed: (0, 1]; 1 is off)", self.top_p));
        }
        Ok(())
    }
}
