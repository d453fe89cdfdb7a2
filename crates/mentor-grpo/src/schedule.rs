//! Learning-rate schedules with Hugging Face `transformers` semantics.
//!
//! `lr(step)` is the rate used by optimizer step `step` (0-based: the first update uses
//! `lr(0)`), exactly like HF's `LambdaLR` stepped after each optimizer step. With warm-up the
//! first update therefore uses learning rate 0, as in HF.

use crate::config::{LrSchedulerType, OptimizerConfig};
use crate::error::{Error, Result};

/// A learning-rate schedule over a known number of optimizer steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LrSchedule {
    kind: LrSchedulerType,
    peak: f64,
    warmup_steps: usize,
    total_steps: usize,
}

impl LrSchedule {
    /// A schedule peaking at `peak` after `warmup_steps`, ending at `total_steps`.
    pub fn new(kind: LrSchedulerType, peak: f64, warmup_steps: usize, total_steps: usize) -> Result<Self> {
        if !(peak.is_finite() && peak > 0.0) {
            return Err(Error::config("learning_rate", format!("must be > 0, got {peak}")));
        }
        Ok(Self { kind, peak, warmup_steps, total_steps })
    }

    /// From a config: `warmup_steps` if non-zero, else `ceil(total_steps * warmup_ratio)` (HF).
    pub fn from_config(config: &OptimizerConfig, total_steps: usize) -> Result<Self> {
        let warmup = if config.warmup_steps > 0 {
            config.warmup_steps
        } else {
            (total_steps as f64 * config.warmup_ratio).ceil() as usize
        };
        Self::new(config.lr_scheduler_type, config.learning_rate, warmup, total_steps)
    }

    /// Warm-up steps.
    pub fn warmup_steps(&self) -> usize {
        self.warmup_steps
    }

    /// Total optimizer steps the schedule spans.
    pub fn total_steps(&self) -> usize {
        self.total_steps
    }

    /// Multiplier of the peak rate at optimizer step `step` (HF's lambda).
    pub fn factor(&self, step: usize) -> f64 {
        let s = step as f64;
        let w = self.warmup_steps as f64;
        let warming = step < self.warmup_steps;
        let warm = s / w.max(1.0);
        let decay_span = (self.total_steps as f64 - w).max(1.0);
        match self.kind {
            LrSchedulerType::Constant => 1.0,
            LrSchedulerType::ConstantWithWarmup => {
                if warming {
                    warm
                } else {
                    1.0
                }
            }
            LrSchedulerType::Linear => {
                if warming {
                    warm
                } else {
                    ((self.total_steps as f64 - s) / decay_span).max(0.0)
                }
            }
            LrSchedulerType::Cosine => {
                if warming {
                    warm
                } else {
                    let progress = (s - w) / decay_span;
                    (0.5 * (1.0 + (std::f64::consts::PI * progress).cos())).max(0.0)
                }
            }
        }
    }

    /// Learning rate at optimizer step `step`.
    pub fn lr(&self, step: usize) -> f64 {
        self.peak * self.factor(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    #[test]
    fn linear_warmup_then_decay_matches_hf_formula() {
        let s = LrSchedule::new(LrSchedulerType::Linear, 1.0, 2, 10).unwrap();
        close(s.lr(0), 0.0);
        close(s.lr(1), 0.5);
        close(s.lr(2), 1.0);
        close(s.lr(6), 0.5); // (10 - 6) / (10 - 2)
        close(s.lr(10), 0.0);
        close(s.lr(12), 0.0);
    }

    #[test]
    fn cosine_hits_half_at_midpoint_and_zero_at_end() {
        let s = LrSchedule::new(LrSchedulerType::Cosine, 2.0, 0, 10).unwrap();
        close(s.lr(0), 2.0);
        close(s.lr(5), 1.0);
        close(s.lr(10), 0.0);
    }

    #[test]
    fn constant_ignores_warmup_and_constant_with_warmup_does_not() {
        let c = LrSchedule::new(LrSchedulerType::Constant, 3.0, 4, 10).unwrap();
        close(c.lr(0), 3.0);
        let w = LrSchedule::new(LrSchedulerType::ConstantWithWarmup, 3.0, 4, 10).unwrap();
        close(w.lr(1), 0.75);
        close(w.lr(9), 3.0);
    }

    #[test]
    fn warmup_ratio_rounds_up_like_hf() {
        let cfg = OptimizerConfig { warmup_ratio: 0.15, ..Default::default() };
        assert_eq!(LrSchedule::from_config(&cfg, 10).unwrap().warmup_steps(), 2);
        let cfg = OptimizerConfig { warmup_ratio: 0.15, warmup_steps: 5, ..Default::default() };
        assert_eq!(LrSchedule::from_config(&cfg, 10).unwrap().warmup_steps(), 5);
    }
}
