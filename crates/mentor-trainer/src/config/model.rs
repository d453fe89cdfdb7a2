//! `[model]`: the policy a run trains.

use serde::{Deserialize, Serialize};

use super::{invalid, MAX_TINY_DIM};

/// `[model]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSection {
    /// `tiny` (a from-scratch character-level Llama), a local model directory, a `.gguf`
    /// file, a Hub repo id, or `smollm2` (the SmolLM2 GGUF that `cargo xtask setup` installs).
    pub source: ModelChoice,
    /// Tiny model: decoder layers.
    pub layers: usize,
    /// Tiny model: hidden size.
    pub hidden: usize,
    /// Tiny model: attention heads.
    pub heads: usize,
    /// Tiny model: MLP width.
    pub intermediate: usize,
    /// Every reduction of the model (matmuls forward and backward, softmax, norms) in one
    /// fixed order, on the crate's own kernels: the same bits on every x86-64 CPU, any thread
    /// count and either kernel path (`--kernels`), at some cost in speed. The demo's default;
    /// off by default elsewhere (`mentor_kernels::set_deterministic`).
    pub deterministic: bool,
}

impl Default for ModelSection {
    fn default() -> Self {
        Self {
            source: ModelChoice::Tiny,
            layers: 3,
            hidden: 64,
            heads: 4,
            intermediate: 170,
            deterministic: false,
        }
    }
}

/// `model.source`: which model a run trains (spelled as a string in TOML).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ModelChoice {
    /// `tiny`: a from-scratch character-level Llama in the curriculum's alphabet.
    Tiny,
    /// `smollm2`: the SmolLM2 GGUF that `cargo xtask setup` installs.
    Smollm2,
    /// A local model directory, a `.gguf` file or a Hub repo id.
    Source(String),
}

impl From<String> for ModelChoice {
    fn from(s: String) -> Self {
        match s.as_str() {
            "tiny" => ModelChoice::Tiny,
            "smollm2" => ModelChoice::Smollm2,
            _ => ModelChoice::Source(s),
        }
    }
}

impl From<ModelChoice> for String {
    fn from(m: ModelChoice) -> Self {
        m.to_string()
    }
}

impl std::fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelChoice::Tiny => f.write_str("tiny"),
            ModelChoice::Smollm2 => f.write_str("smollm2"),
            ModelChoice::Source(s) => f.write_str(s),
        }
    }
}

impl ModelSection {
    /// The tiny model's dimensions: in range ([`MAX_TINY_DIM`]) and heads dividing the width.
    pub fn validate(&self) -> Result<(), String> {
        if self.source != ModelChoice::Tiny {
            return Ok(());
        }
        for (field, value) in [
            ("model.layers", self.layers),
            ("model.hidden", self.hidden),
            ("model.heads", self.heads),
            ("model.intermediate", self.intermediate),
        ] {
            if !(1..=MAX_TINY_DIM).contains(&value) {
                return invalid(field, format!("{value} (allowed: 1..={MAX_TINY_DIM} for the tiny model)"));
            }
        }
        if !self.hidden.is_multiple_of(self.heads) {
            return invalid(
                "model.hidden",
                format!("{} is not a multiple of model.heads = {}", self.hidden, self.heads),
            );
        }
        Ok(())
    }
}
