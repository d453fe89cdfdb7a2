//! `[eval]`: periodic evaluation without hints.

use serde::{Deserialize, Serialize};

use super::invalid;

/// `[eval]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvalSection {
    /// Evaluate every this many steps (0: only before the first and after the last step).
    pub every: usize,
    /// Held-out problems per level (curriculum).
    pub problems: usize,
    /// Curriculum levels to evaluate (empty: the schedule's levels).
    pub levels: Vec<u32>,
    /// The k of pass@k (0: greedy pass@1 only).
    pub k: usize,
    /// Completions drawn per problem for pass@k and mean@k (0: `k`). pass@k is the unbiased
    /// estimator of Chen et al. (2021), so `samples > k` lowers its variance.
    pub samples: usize,
    /// Temperature of the pass@k samples.
    pub temperature: f64,
}

impl Default for EvalSection {
    fn default() -> Self {
        Self { every: 10, problems: 200, levels: vec![], k: 0, samples: 0, temperature: 1.0 }
    }
}

impl EvalSection {
    /// Enough draws for pass@k.
    pub fn validate(&self) -> Result<(), String> {
        if self.samples > 0 && self.samples < self.k {
            return invalid(
                "eval.samples",
                format!("{} is fewer than eval.k = {} (pass@k needs at least k draws)", self.samples, self.k),
            );
        }
        Ok(())
    }
}
