//! `rescue.max_position_share`: which collapsed problems are measured, so that the diagnosis is
//! not nearly a constant. `rescue.collapsed` is split evenly over the problems' step counts;
//! on problems of 3 or more steps no diagnosed step may take more than its share of its count's
//! quota, and a problem whose step already has it is left out (decided from the unhinted
//! attempts alone, before any hint exists). On 2-step problems the only other step is the random
//! step twin's, so they are not capped.

use std::collections::BTreeMap;

use mentor_core::Task;

/// The admission of collapsed problems by step count and diagnosed step.
#[derive(Debug, Clone)]
pub(super) struct PositionQuota {
    share: f64,
    per_count: usize,
    /// `steps → (admitted, admitted by diagnosed step)`.
    admitted: BTreeMap<usize, (usize, BTreeMap<Option<usize>, usize>)>,
}

/// Steps of a task's reference solution (0 without one).
pub(super) fn steps(task: &Task) -> usize {
    task.reference_solution().map_or(0, |s| mentor_agents::rules::reference_steps(s).len())
}

/// Counts a diagnosis at `step` (0-based) under `key`, whose counts by position are as long as
/// the problem's `steps` (or the step, when it lies beyond them).
pub(super) fn tally<K: Ord>(counts: &mut BTreeMap<K, Vec<usize>>, key: K, steps: usize, step: usize) {
    let c = counts.entry(key).or_insert_with(|| vec![0; steps]);
    if c.len() <= step {
        c.resize(step + 1, 0);
    }
    c[step] += 1;
}

impl PositionQuota {
    /// A quota of `collapsed` problems over the step counts of `tasks`, each diagnosed step of a
    /// 3-or-more-step count at most `share` of its count's quota (`share` 1: everything admitted).
    pub fn new(share: f64, collapsed: usize, tasks: &[Task]) -> Self {
        let mut counts: Vec<usize> = tasks.iter().map(steps).collect();
        counts.sort_unstable();
        counts.dedup();
        let per_count =
            if share >= 1.0 || collapsed == 0 { usize::MAX } else { collapsed.div_ceil(counts.len().max(1)) };
        Self { share, per_count, admitted: BTreeMap::new() }
    }

    /// Whether a collapsed problem of `steps` steps, diagnosed at `position`, is measured
    /// (counted when it is).
    pub fn admit(&mut self, steps: usize, position: Option<usize>) -> bool {
        if self.share >= 1.0 {
            return true;
        }
        let (n, by_position) = self.admitted.entry(steps).or_default();
        if *n >= self.per_count {
            return false;
        }
        let cap = (self.share * self.per_count as f64).floor() as usize;
        if steps >= 3 && position.is_some() && by_position.get(&position).copied().unwrap_or(0) >= cap {
            return false;
        }
        *n += 1;
        *by_position.entry(position).or_default() += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(steps: usize) -> Task {
        mentor_tasks::heldout::problem(0, 0, steps)
    }

    #[test]
    fn one_step_takes_at_most_its_share_of_a_counts_quota() {
        let tasks: Vec<Task> = [2, 3, 4].into_iter().map(task).collect();
        // 30 problems over three counts: 10 each; at most floor(0.6 · 10) = 6 at one step of 3+.
        let mut q = PositionQuota::new(0.6, 30, &tasks);
        let admitted = (0..20).filter(|_| q.admit(3, Some(0))).count();
        assert_eq!(admitted, 6);
        assert!(q.admit(3, Some(1)) && q.admit(3, None));
        // Two-step problems are not capped by step, only by their count's quota.
        assert_eq!((0..20).filter(|_| q.admit(2, Some(0))).count(), 10);
        let mut all = PositionQuota::new(1.0, 30, &tasks);
        assert!((0..100).all(|_| all.admit(3, Some(0))));
    }
}
