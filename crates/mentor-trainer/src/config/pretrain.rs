//! `[pretrain]`: supervised pretraining of a from-scratch model before RL.

use serde::{Deserialize, Serialize};

use super::invalid;

/// `[pretrain]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PretrainSection {
    /// Supervised steps (0: none).
    pub steps: usize,
    /// Examples per step.
    pub batch: usize,
    /// Peak learning rate (cosine decay after a linear warm-up).
    pub learning_rate: f64,
    /// Warm-up steps.
    pub warmup: usize,
    /// Levels of the plain (unhinted) examples.
    pub unhinted_levels: Vec<u32>,
    /// Levels of the hinted examples (hint text + the first k reference steps given).
    pub hinted_levels: Vec<u32>,
    /// Share of hinted examples.
    pub hinted_fraction: f64,
    /// Share of *static-hinted* examples: a plain problem from `unhinted_levels` (no ten
    /// column) whose prompt carries one of the static hints through the hint format, and no
    /// given lines. It teaches the model to read those texts in its context, so the
    /// `static_hints` arm is not out of distribution; what they say cannot solve a ten column
    /// (no static text names the problem's digits). Taken from the plain share (0: none).
    pub static_fraction: f64,
    /// Batch pieces computed in parallel threads (0: one per core).
    pub shards: usize,
    /// The pretrained model's seed (its initialisation and its examples) in `mentor demo`,
    /// which pretrains once per seed of `--pretrain-seeds` and records it in every run
    /// (`run.json`); a run that pretrains itself uses `run.seed`.
    pub seed: u64,
}

impl Default for PretrainSection {
    fn default() -> Self {
        Self {
            steps: 0,
            batch: 64,
            learning_rate: 1e-3,
            warmup: 50,
            unhinted_levels: vec![1, 2],
            hinted_levels: vec![1, 2, 3, 4],
            hinted_fraction: 0.5,
            static_fraction: 0.0,
            shards: 0,
            seed: 0,
        }
    }
}

impl PretrainSection {
    /// Rate, batch and the hinted/static mix, when it pretrains at all (`steps > 0`). Its
    /// levels are checked with the curriculum's (`TrainConfig::validate`).
    pub fn validate(&self) -> Result<(), String> {
        if self.steps == 0 {
            return Ok(());
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return invalid(
                "pretrain.learning_rate",
                format!("{} (must be a finite number > 0)", self.learning_rate),
            );
        }
        if self.batch == 0 {
            return invalid("pretrain.batch", "must be > 0");
        }
        if !(0.0..=1.0).contains(&self.hinted_fraction) {
            return invalid("pretrain.hinted_fraction", format!("{} (allowed: 0..=1)", self.hinted_fraction));
        }
        let (hinted, statics) = (self.hinted_fraction, self.static_fraction);
        if !(0.0..=1.0).contains(&statics) || hinted + statics > 1.0 {
            return invalid(
                "pretrain.static_fraction",
                format!("{statics} (allowed: 0..=1, and hinted_fraction + static_fraction <= 1)"),
            );
        }
        if self.unhinted_levels.is_empty() && self.hinted_fraction < 1.0 {
            return invalid("pretrain.unhinted_levels", "empty while some examples are unhinted");
        }
        if self.hinted_levels.is_empty() && self.hinted_fraction > 0.0 {
            return invalid("pretrain.hinted_levels", "empty while some examples are hinted");
        }
        Ok(())
    }
}
