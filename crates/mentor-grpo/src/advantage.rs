//! Group-relative advantages: reward minus the group mean, optionally divided by a std.
//!
//! Mirrors TRL's `GRPOTrainer._generate_and_score_completions`: the mean is always the group
//! mean; the std is the group's (`scale_rewards = group`), the whole batch's (`batch`) or not
//! used (`none`, Dr. GRPO); the divisor is `std + 1e-4`; stds are Bessel-corrected. Groups are
//! given by explicit ids rather than by position, so groups of any size in any order work.
//!
//! One deliberate difference: a group whose rewards are all equal gets advantage **exactly**
//! 0.0 (TRL computes `r - mean`, which can be an ulp away from zero for rewards such as 0.1).
//! A singleton group has std 0 and advantage 0.

use std::collections::BTreeMap;

use crate::config::ScaleRewards;
use crate::error::{Error, Result};

/// TRL's constant added to the std before dividing.
pub const STD_EPSILON: f64 = 1e-4;

/// Advantages and the per-row statistics they came from, all indexed by batch row.
#[derive(Debug, Clone, PartialEq)]
pub struct Advantages {
    /// Advantage per row.
    pub advantages: Vec<f64>,
    /// The row's group mean reward.
    pub mean_per_row: Vec<f64>,
    /// The std used for the row: its group's std (`group`/`none`) or the batch std (`batch`).
    pub std_per_row: Vec<f64>,
    /// Whether that std is zero (TRL's `torch.isclose(std, 0)`, i.e. `|std| <= 1e-8`).
    pub is_std_zero: Vec<bool>,
}

impl Advantages {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.advantages.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.advantages.is_empty()
    }

    /// TRL's `frac_reward_zero_std`: fraction of rows whose std is zero.
    pub fn frac_zero_std(&self) -> f64 {
        if self.is_std_zero.is_empty() {
            return 0.0;
        }
        self.is_std_zero.iter().filter(|z| **z).count() as f64 / self.is_std_zero.len() as f64
    }
}

/// Per-group reward statistics in first-appearance order of the group ids.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Group {
    pub(crate) rows: Vec<usize>,
    pub(crate) mean: f64,
    pub(crate) std: f64,
    pub(crate) all_equal: bool,
}

/// Rows grouped by id, in order of first appearance. Checks lengths and finiteness.
pub(crate) fn groups(rewards: &[f64], group_ids: &[usize]) -> Result<Vec<Group>> {
    if rewards.len() != group_ids.len() {
        return Err(Error::shape("group_ids", rewards.len(), group_ids.len()));
    }
    if let Some((row, &value)) = rewards.iter().enumerate().find(|(_, r)| !r.is_finite()) {
        return Err(Error::NonFiniteReward { row, value });
    }
    let mut index: BTreeMap<usize, usize> = BTreeMap::new();
    let mut rows: Vec<Vec<usize>> = Vec::new();
    for (row, id) in group_ids.iter().enumerate() {
        let g = *index.entry(*id).or_insert_with(|| {
            rows.push(Vec::new());
            rows.len() - 1
        });
        rows[g].push(row);
    }
    Ok(rows
        .into_iter()
        .map(|rows| {
            let vals: Vec<f64> = rows.iter().map(|&r| rewards[r]).collect();
            let all_equal = vals.iter().all(|v| *v == vals[0]);
            let (mean, std) = mean_std(&vals);
            let (mean, std) = if all_equal { (vals[0], 0.0) } else { (mean, std) };
            Group { rows, mean, std, all_equal }
        })
        .collect())
}

/// Mean and Bessel-corrected std (0 for fewer than two values).
pub(crate) fn mean_std(vals: &[f64]) -> (f64, f64) {
    if vals.is_empty() {
        return (0.0, 0.0);
    }
    let n = vals.len() as f64;
    let mean = vals.iter().sum::<f64>() / n;
    if vals.len() < 2 {
        return (mean, 0.0);
    }
    let var = vals.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// Compute advantages for `rewards[i]` in group `group_ids[i]`.
///
/// Errors when the lengths differ or a reward is not finite.
pub fn group_advantages(rewards: &[f64], group_ids: &[usize], scale: ScaleRewards) -> Result<Advantages> {
    let groups = groups(rewards, group_ids)?;
    let n = rewards.len();
    let batch_std = mean_std(rewards).1;
    let mut out = Advantages {
        advantages: vec![0.0; n],
        mean_per_row: vec![0.0; n],
        std_per_row: vec![0.0; n],
        is_std_zero: vec![false; n],
    };
    for g in &groups {
        let std = match scale {
            ScaleRewards::Group | ScaleRewards::None => g.std,
            ScaleRewards::Batch => batch_std,
        };
        for &row in &g.rows {
            let centred = if g.all_equal { 0.0 } else { rewards[row] - g.mean };
            out.advantages[row] = match scale {
                ScaleRewards::None => centred,
                ScaleRewards::Group | ScaleRewards::Batch => centred / (std + STD_EPSILON),
            };
            out.mean_per_row[row] = g.mean;
            out.std_per_row[row] = std;
            out.is_std_zero[row] = std.abs() <= 1e-8;
        }
    }
    Ok(out)
}

/// Advantages of a batch in which some rows carry a fixed baseline: `reward − baseline` for
/// those (MENTOR's `prefix` credit: a hinted completion against the failed unhinted group's
/// mean reward, not re-normalised inside its own group, where the shared hint tokens'
/// gradients would cancel), [`group_advantages`] for the others. The group statistics are
/// taken over every row, so with `scale = batch` the batch std includes the baseline rows.
///
/// Errors when the lengths differ, or a reward or a baseline is not finite.
pub fn advantages_with_baselines(
    rewards: &[f64],
    group_ids: &[usize],
    baselines: &[Option<f64>],
    scale: ScaleRewards,
) -> Result<Vec<f64>> {
    if baselines.len() != rewards.len() {
        return Err(Error::shape("baselines", rewards.len(), baselines.len()));
    }
    if baselines.iter().flatten().any(|b| !b.is_finite()) {
        return Err(Error::MissingInput { what: "baselines", why: "every baseline must be finite" });
    }
    let mut adv = group_advantages(rewards, group_ids, scale)?.advantages;
    for ((a, r), b) in adv.iter_mut().zip(rewards).zip(baselines) {
        if let Some(b) = b {
            *a = r - b;
        }
    }
    Ok(adv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_rows_take_reward_minus_baseline_and_the_rest_stay_group_relative() {
        let rewards = [1.0, 0.0, 1.0, 0.5];
        let ids = [0, 0, 1, 1];
        let plain = group_advantages(&rewards, &ids, ScaleRewards::Batch).unwrap().advantages;
        let a = advantages_with_baselines(
            &rewards,
            &ids,
            &[None, None, Some(0.25), Some(0.0)],
            ScaleRewards::Batch,
        )
        .unwrap();
        assert_eq!(a, vec![plain[0], plain[1], 0.75, 0.5]);
        let none = advantages_with_baselines(&rewards, &ids, &[None; 4], ScaleRewards::Batch).unwrap();
        assert_eq!(none, plain);
        assert!(advantages_with_baselines(&rewards, &ids, &[None; 3], ScaleRewards::Group).is_err());
        assert!(advantages_with_baselines(
            &rewards,
            &ids,
            &[Some(f64::NAN), None, None, None],
            ScaleRewards::Group
        )
        .is_err());
    }

    #[test]
    fn two_member_group_by_hand() {
        // rewards 1, 0: mean 0.5, Bessel std sqrt(0.5); advantage +-0.5 / (sqrt(0.5) + 1e-4).
        let a = group_advantages(&[1.0, 0.0], &[7, 7], ScaleRewards::Group).unwrap();
        let expect = 0.5 / (0.5f64.sqrt() + 1e-4);
        assert!((a.advantages[0] - expect).abs() < 1e-15);
        assert!((a.advantages[1] + expect).abs() < 1e-15);
    }

    #[test]
    fn all_equal_group_is_exactly_zero_even_when_the_mean_rounds() {
        let a = group_advantages(&[0.1, 0.1, 0.1, 1.0, 0.0], &[0, 0, 0, 1, 1], ScaleRewards::None).unwrap();
        assert_eq!(&a.advantages[..3], &[0.0, 0.0, 0.0]);
        assert!(a.is_std_zero[0] && !a.is_std_zero[3]);
        assert!((a.frac_zero_std() - 0.6).abs() < 1e-15);
    }

    #[test]
    fn interleaved_group_ids_and_singletons() {
        let a = group_advantages(&[1.0, 5.0, 0.0, 3.0], &[0, 9, 0, 4], ScaleRewards::None).unwrap();
        assert_eq!(a.advantages, vec![0.5, 0.0, -0.5, 0.0]);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(group_advantages(&[1.0], &[0, 0], ScaleRewards::Group).is_err());
        assert!(matches!(
            group_advantages(&[1.0, f64::NAN], &[0, 0], ScaleRewards::Group),
            Err(Error::NonFiniteReward { row: 1, .. })
        ));
    }
}
