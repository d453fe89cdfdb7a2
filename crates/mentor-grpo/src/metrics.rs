//! Step metrics: one serde record per GRPO update, named after what TRL logs where the
//! concept is the same (`frac_reward_zero_std`, `clip_ratio/low_mean`, `kl`, `entropy`,
//! `grad_norm`, `completions/mean_length`, ...).

use serde::{Deserialize, Serialize};

use crate::advantage::{groups, mean_std};
use crate::error::{Error, Result};

/// JSON has no NaN or infinity: `serde_json` writes them as `null`. A metric that was not
/// finite (a diverged loss, a skipped step's infinite gradient norm) reads back as NaN, so a
/// logged record always reads back instead of failing as a whole. (An optional metric's
/// `null` reads as `None`: JSON cannot tell it from NaN.)
fn f64_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Reward and completion statistics of one generation batch (no training involved).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RolloutStats {
    /// Completions in the batch (serialised as `batch_completions`).
    #[serde(rename = "batch_completions")]
    pub completions: usize,
    /// Groups (prompts) in the batch (serialised as `batch_groups`: a trainer's own record of
    /// a step has its own `groups`).
    #[serde(rename = "batch_groups")]
    pub groups: usize,
    /// Mean reward over completions.
    #[serde(deserialize_with = "f64_or_nan")]
    pub reward_mean: f64,
    /// Std of the rewards over the batch (Bessel-corrected, as TRL's `reward_std`).
    #[serde(deserialize_with = "f64_or_nan")]
    pub reward_std: f64,
    /// Fraction of groups whose rewards are all 0: the zero-reward-group fraction (ZRF) that
    /// signals collapse.
    #[serde(deserialize_with = "f64_or_nan")]
    pub frac_reward_zero: f64,
    /// Fraction of completions whose group has zero reward std (TRL `frac_reward_zero_std`).
    #[serde(deserialize_with = "f64_or_nan")]
    pub frac_reward_zero_std: f64,
    /// Mean completion length in tokens.
    #[serde(deserialize_with = "f64_or_nan")]
    pub completion_length_mean: f64,
    /// Shortest completion.
    pub completion_length_min: usize,
    /// Longest completion.
    pub completion_length_max: usize,
    /// Fraction of completions truncated at the length limit (TRL `completions/clipped_ratio`).
    #[serde(deserialize_with = "f64_or_nan")]
    pub frac_truncated: f64,
}

/// Compute [`RolloutStats`]; all slices are indexed by batch row.
pub fn rollout_stats(
    rewards: &[f64],
    group_ids: &[usize],
    completion_lengths: &[usize],
    truncated: &[bool],
) -> Result<RolloutStats> {
    let gs = groups(rewards, group_ids)?;
    let n = rewards.len();
    for (what, len) in [("completion_lengths", completion_lengths.len()), ("truncated", truncated.len())] {
        if len != n {
            return Err(Error::shape(what, n, len));
        }
    }
    if n == 0 {
        return Ok(RolloutStats::default());
    }
    let (reward_mean, reward_std) = mean_std(rewards);
    let zero_groups = gs.iter().filter(|g| g.all_equal && g.mean == 0.0).count();
    let zero_std_rows: usize = gs.iter().filter(|g| g.std.abs() <= 1e-8).map(|g| g.rows.len()).sum();
    Ok(RolloutStats {
        completions: n,
        groups: gs.len(),
        reward_mean,
        reward_std,
        frac_reward_zero: zero_groups as f64 / gs.len() as f64,
        frac_reward_zero_std: zero_std_rows as f64 / n as f64,
        completion_length_mean: completion_lengths.iter().sum::<usize>() as f64 / n as f64,
        completion_length_min: completion_lengths.iter().copied().min().unwrap_or(0),
        completion_length_max: completion_lengths.iter().copied().max().unwrap_or(0),
        frac_truncated: truncated.iter().filter(|t| **t).count() as f64 / n as f64,
    })
}

/// Everything logged for one GRPO update (one generation batch, `num_iterations` optimizer
/// steps). Training values are means over micro-batches (loss terms, clip ratios, KL,
/// entropy) or over optimizer steps (grad norm, learning rate), as TRL's logger averages them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StepMetrics {
    /// Reward and completion statistics.
    #[serde(flatten)]
    pub rollout: RolloutStats,
    /// Loss per optimizer step (sum over its micro-batches), averaged over iterations.
    #[serde(deserialize_with = "f64_or_nan")]
    pub loss: f64,
    /// Fraction of tokens clipped below `1 - epsilon` with negative advantage.
    #[serde(deserialize_with = "f64_or_nan")]
    pub clip_ratio_low: f64,
    /// Fraction of tokens clipped above `1 + epsilon_high` with positive advantage.
    #[serde(deserialize_with = "f64_or_nan")]
    pub clip_ratio_high: f64,
    /// Fraction of tokens clipped either way.
    #[serde(deserialize_with = "f64_or_nan")]
    pub clip_ratio_region: f64,
    /// Mean k3 KL to the reference policy (`None` when `beta == 0`, as TRL does not log it).
    pub kl: Option<f64>,
    /// Mean token entropy, when the log-prob function returned entropies.
    pub entropy: Option<f64>,
    /// Global gradient norm before clipping, averaged over optimizer steps.
    #[serde(deserialize_with = "f64_or_nan")]
    pub grad_norm: f64,
    /// Learning rate of the last optimizer step.
    #[serde(deserialize_with = "f64_or_nan")]
    pub learning_rate: f64,
    /// Completion tokens that entered the loss (after masking), per iteration.
    #[serde(deserialize_with = "f64_or_nan")]
    pub num_tokens: f64,
    /// Optimizer steps applied (skipped non-finite steps are not counted).
    pub optimizer_steps: usize,
    /// Optimizer steps skipped because the gradient norm was not finite.
    pub skipped_steps: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollout_stats_by_hand() {
        let s = rollout_stats(
            &[0.0, 0.0, 1.0, 0.0, 1.0, 1.0],
            &[0, 0, 1, 1, 2, 2],
            &[2, 4, 6, 8, 10, 12],
            &[false, false, false, false, false, true],
        )
        .unwrap();
        assert_eq!((s.completions, s.groups), (6, 3));
        assert!((s.reward_mean - 0.5).abs() < 1e-15);
        assert!((s.frac_reward_zero - 1.0 / 3.0).abs() < 1e-15);
        assert!((s.frac_reward_zero_std - 4.0 / 6.0).abs() < 1e-15);
        assert_eq!((s.completion_length_min, s.completion_length_max), (2, 12));
        assert!((s.completion_length_mean - 7.0).abs() < 1e-15);
        assert!((s.frac_truncated - 1.0 / 6.0).abs() < 1e-15);
        let json = serde_json::to_value(StepMetrics { rollout: s, ..Default::default() }).unwrap();
        assert_eq!(json["frac_reward_zero_std"], serde_json::json!(4.0 / 6.0));
    }

    #[test]
    fn rejects_mismatched_lengths() {
        assert!(rollout_stats(&[1.0, 0.0], &[0, 0], &[1], &[false, false]).is_err());
    }

    #[test]
    fn non_finite_metrics_read_back_as_nan() {
        let m = StepMetrics { loss: f64::NAN, grad_norm: f64::INFINITY, kl: Some(0.5), ..Default::default() };
        let text = serde_json::to_string(&m).unwrap();
        assert!(text.contains("\"loss\":null") && text.contains("\"grad_norm\":null"), "{text}");
        let back: StepMetrics = serde_json::from_str(&text).unwrap();
        assert!(back.loss.is_nan() && back.grad_norm.is_nan());
        assert_eq!((back.kl, back.learning_rate, back.rollout.reward_mean), (Some(0.5), 0.0, 0.0));
    }
}
