//! Per-task memory of the hint level that last rescued a task, faded as the task is mastered
//! (scaffolding that withdraws): a task solved without hints starts its next intervention one
//! level lower, down to level 1, even below the arm's starting level.

use std::collections::{BTreeMap, HashMap};

use mentor_core::HintLevel;
use serde::{Deserialize, Serialize};

/// What the memory holds for one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The level that last rescued the task.
    pub level: HintLevel,
    /// Unhinted successes since then.
    pub unhinted_successes: u32,
}

/// Remembers, per task id, the level that last rescued it.
#[derive(Debug, Clone, Default)]
pub struct HintMemory {
    entries: HashMap<String, Entry>,
    fade_after: u32,
}

impl HintMemory {
    /// A memory whose levels drop by one after `fade_after` unhinted successes.
    pub fn new(fade_after: u32) -> Self {
        Self { entries: HashMap::new(), fade_after: fade_after.max(1) }
    }

    /// The level to start at for `task_id`: the remembered one, else `default`. A remembered
    /// level below `default` (faded after unhinted successes) wins: the help is withdrawn as
    /// the task is mastered, even below the arm's usual starting level.
    pub fn start_level(&self, task_id: &str, default: HintLevel) -> HintLevel {
        self.entries.get(task_id).map_or(default, |e| e.level)
    }

    /// The level remembered for `task_id`, if any.
    pub fn level(&self, task_id: &str) -> Option<HintLevel> {
        self.entries.get(task_id).map(|e| e.level)
    }

    /// Records that a hint at `level` rescued `task_id`.
    pub fn rescued(&mut self, task_id: &str, level: HintLevel) {
        self.entries.insert(task_id.to_string(), Entry { level, unhinted_successes: 0 });
    }

    /// Records that `task_id` was solved without a hint (at least one success in its group):
    /// after `fade_after` such steps the level drops by one, down to level 1, where it stays
    /// (a mastered task that collapses again starts with the lightest hint, not the arm's
    /// default).
    pub fn solved_unhinted(&mut self, task_id: &str) {
        let Some(e) = self.entries.get_mut(task_id) else { return };
        e.unhinted_successes += 1;
        if e.unhinted_successes >= self.fade_after {
            let lower = HintLevel::try_from(e.level.get().saturating_sub(1)).unwrap_or(e.level);
            *e = Entry { level: lower, unhinted_successes: 0 };
        }
    }

    /// The resumable state: every entry, by task id.
    pub fn state(&self) -> BTreeMap<String, Entry> {
        self.entries.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    /// Continues from a saved state (the fade setting is kept).
    pub fn restore(&mut self, entries: BTreeMap<String, Entry>) {
        self.entries = entries.into_iter().collect();
    }

    /// Number of tasks remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_then_fades() {
        let mut m = HintMemory::new(2);
        assert_eq!(m.start_level("t", HintLevel::NUDGE), HintLevel::NUDGE);
        m.rescued("t", HintLevel::PARTIAL_SOLUTION);
        assert_eq!(m.start_level("t", HintLevel::NUDGE), HintLevel::PARTIAL_SOLUTION);
        m.solved_unhinted("t");
        assert_eq!(m.level("t"), Some(HintLevel::PARTIAL_SOLUTION), "one success is not enough");
        m.solved_unhinted("t");
        assert_eq!(m.level("t"), Some(HintLevel::PLAN));
        m.solved_unhinted("t");
        m.solved_unhinted("t");
        assert_eq!(m.level("t"), Some(HintLevel::NUDGE));
        m.solved_unhinted("t");
        m.solved_unhinted("t");
        assert_eq!(m.level("t"), Some(HintLevel::NUDGE), "level 1 is the floor");
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn a_faded_level_wins_over_a_higher_default() {
        let mut m = HintMemory::new(1);
        let full = HintLevel::PARTIAL_SOLUTION;
        m.rescued("t", full);
        assert_eq!(m.start_level("t", full), full);
        m.solved_unhinted("t");
        assert_eq!(m.start_level("t", full), HintLevel::PLAN, "withdrawn below the arm's start");
        assert_eq!(m.start_level("other", full), full, "tasks without memory start at the default");
    }
}
