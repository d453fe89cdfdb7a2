//! DAPO dynamic sampling as a reusable batch filter.
//!
//! DAPO drops prompts whose completions all failed (accuracy 0) or all passed (accuracy 1):
//! their group advantages are zero, so they add no gradient but still dilute token-level
//! normalisers. We drop every group whose rewards are all equal (which includes those two
//! cases and, for graded rewards, e.g. all 0.5) and report the counts separately. Resampling
//! replacement prompts is the caller's job (it needs the policy and the task source).

use crate::advantage::groups;
use crate::error::Result;

/// Outcome of [`dynamic_sampling_filter`].
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct GroupFilter {
    /// Batch rows to keep, in their original order.
    pub keep_rows: Vec<usize>,
    /// Groups kept (rewards not all equal).
    pub kept_groups: usize,
    /// Groups dropped because every reward was 0.
    pub dropped_all_zero: usize,
    /// Groups dropped because every reward was 1.
    pub dropped_all_one: usize,
    /// Groups dropped because every reward was the same other value (graded rewards, or a
    /// group of one completion).
    pub dropped_other_constant: usize,
}

impl GroupFilter {
    /// Total groups dropped.
    pub fn dropped_groups(&self) -> usize {
        self.dropped_all_zero + self.dropped_all_one + self.dropped_other_constant
    }
}

/// Keep only groups whose rewards differ. `rewards[i]` belongs to group `group_ids[i]`.
///
/// Errors when the lengths differ or a reward is not finite.
pub fn dynamic_sampling_filter(rewards: &[f64], group_ids: &[usize]) -> Result<GroupFilter> {
    let mut out = GroupFilter::default();
    for g in groups(rewards, group_ids)? {
        if !g.all_equal {
            out.kept_groups += 1;
            out.keep_rows.extend_from_slice(&g.rows);
        } else if g.mean == 0.0 {
            out.dropped_all_zero += 1;
        } else if g.mean == 1.0 {
            out.dropped_all_one += 1;
        } else {
            out.dropped_other_constant += 1;
        }
    }
    out.keep_rows.sort_unstable();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_constant_groups_and_counts_them_by_kind() {
        let rewards = [0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.5, 0.5, 0.0, 0.0];
        let ids = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4];
        let f = dynamic_sampling_filter(&rewards, &ids).unwrap();
        assert_eq!(f.keep_rows, vec![4, 5]);
        assert_eq!(
            (f.kept_groups, f.dropped_all_zero, f.dropped_all_one, f.dropped_other_constant),
            (1, 2, 1, 1)
        );
        assert_eq!(f.dropped_groups(), 4);
    }

    #[test]
    fn interleaved_groups_keep_original_row_order() {
        let f = dynamic_sampling_filter(&[1.0, 0.0, 0.0, 0.0], &[5, 6, 5, 6]).unwrap();
        assert_eq!(f.keep_rows, vec![0, 2]);
        assert_eq!(f.dropped_all_zero, 1);
    }
}
