//! The collapse monitor: per-step ZRF and zero-std fraction, and collapse events over a
//! moving window, by [`is_collapsed`] (`collapse.rs`), the one rule that says whether a group
//! failed.
//!
//! Collapse is judged on *correctness* (each sample's `passed`, [`Verdict::passed`]), never
//! on the reward's value: with shaped rewards (the share of tests passed, a format bonus
//! added to the correctness reward, several weighted reward functions) a group in which no
//! attempt is correct still has non-zero rewards, and is still collapsed. The reward
//! statistics (`zero_std_frac`, `mean_reward`) and the advantages keep the shaped reward.
//!
//! [`Verdict::passed`]: mentor_core::Verdict::passed

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::collapse::is_collapsed;
use crate::error::{Error, Result};
use crate::rollout::Group;

/// One group's outcomes as the monitor reads them: each attempt's reward (shaped or not: it
/// feeds `zero_std_frac` and `mean_reward`) and whether it passed (which alone decides
/// collapse, through [`is_collapsed`]). For callers that score outside [`Group`]s, such as a
/// Python trainer whose reward is a weighted sum of reward functions.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupOutcome {
    rewards: Vec<f64>,
    passed: Vec<bool>,
}

impl GroupOutcome {
    /// The outcome of a group whose attempt `i` got `rewards[i]` and passed when `passed[i]`.
    ///
    /// Errors ([`Error::Invalid`]) when the lengths differ or a reward is NaN or infinite.
    pub fn new(rewards: Vec<f64>, passed: Vec<bool>) -> Result<Self> {
        if rewards.len() != passed.len() {
            return Err(Error::Invalid(format!(
                "{} rewards for {} pass flags: one of each per attempt",
                rewards.len(),
                passed.len()
            )));
        }
        if let Some(i) = rewards.iter().position(|r| !r.is_finite()) {
            return Err(Error::Invalid(format!("reward {i} is {} (must be finite)", rewards[i])));
        }
        Ok(Self { rewards, passed })
    }

    /// The outcome of a scored group: its verdicts' rewards and `passed` flags.
    pub fn of(group: &Group) -> Self {
        Self { rewards: group.rewards(), passed: group.passed() }
    }

    /// The rewards, in attempt order.
    pub fn rewards(&self) -> &[f64] {
        &self.rewards
    }

    /// The pass flags, in attempt order.
    pub fn passed(&self) -> &[bool] {
        &self.passed
    }

    /// Whether the group collapsed ([`is_collapsed`] of its pass flags).
    pub fn is_collapsed(&self) -> bool {
        is_collapsed(self.passed.iter().copied())
    }
}

/// Window and thresholds of collapse events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MonitorConfig {
    /// Steps in the moving window.
    pub window: usize,
    /// An event starts when the window's mean ZRF rises above this.
    pub raise_above: f64,
    /// An ongoing event clears when the window's mean ZRF falls below this.
    pub clear_below: f64,
}

impl Default for MonitorConfig {
    fn default() -> Self {
        Self { window: 3, raise_above: 0.5, clear_below: 0.25 }
    }
}

/// The event state after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventState {
    /// No event.
    Quiet,
    /// An event started this step.
    Started,
    /// An event is going on.
    Ongoing,
    /// An event ended this step.
    Cleared,
}

impl EventState {
    /// Whether an event is in force after this step.
    pub fn active(self) -> bool {
        matches!(self, EventState::Started | EventState::Ongoing)
    }
}

/// What the monitor saw in one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollapseReport {
    /// Indices of collapsed groups (no attempt passed: [`is_collapsed`]).
    pub collapsed: Vec<usize>,
    /// Zero-reward-group fraction: the share of collapsed groups. The name is the literature's;
    /// a group counts when no attempt passed, so with binary rewards these are the groups whose
    /// rewards are all zero, and with shaped rewards also those whose partial credit hid that
    /// no attempt was correct.
    pub zrf: f64,
    /// Fraction of groups whose rewards are all equal (TRL's `frac_reward_zero_std`).
    pub zero_std_frac: f64,
    /// Mean reward over all completions.
    pub mean_reward: f64,
    /// Mean ZRF over the window.
    pub window_zrf: f64,
    /// Event state.
    pub event: EventState,
}

/// The monitor's resumable state: the window of recent ZRF values and whether an event is on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorState {
    /// ZRF of the most recent steps, oldest first (at most `window` values).
    pub history: Vec<f64>,
    /// Whether a collapse event is active.
    pub in_event: bool,
}

/// Tracks collapse over steps.
#[derive(Debug, Clone)]
pub struct CollapseMonitor {
    config: MonitorConfig,
    history: VecDeque<f64>,
    in_event: bool,
}

impl CollapseMonitor {
    /// A monitor with `config`.
    pub fn new(config: MonitorConfig) -> Self {
        Self { config, history: VecDeque::new(), in_event: false }
    }

    /// The resumable state.
    pub fn state(&self) -> MonitorState {
        MonitorState { history: self.history.iter().copied().collect(), in_event: self.in_event }
    }

    /// Continues from a saved state.
    pub fn restore(&mut self, state: MonitorState) {
        self.history = state.history.into_iter().collect();
        self.in_event = state.in_event;
    }

    /// Records a step's unhinted groups: collapse from their verdicts' `passed`, the reward
    /// statistics from their rewards.
    pub fn observe(&mut self, groups: &[Group]) -> CollapseReport {
        let outcomes: Vec<GroupOutcome> = groups.iter().map(GroupOutcome::of).collect();
        self.observe_outcomes(&outcomes)
    }

    /// Records a step's unhinted groups given as rewards and pass flags (see [`GroupOutcome`]).
    pub fn observe_outcomes(&mut self, groups: &[GroupOutcome]) -> CollapseReport {
        let n = groups.len().max(1) as f64;
        let collapsed: Vec<usize> =
            groups.iter().enumerate().filter(|(_, g)| g.is_collapsed()).map(|(i, _)| i).collect();
        let zero_std = groups.iter().filter(|g| g.rewards.windows(2).all(|w| w[0] == w[1])).count();
        let rewards: Vec<f64> = groups.iter().flat_map(|g| g.rewards.iter().copied()).collect();
        let mean_reward =
            if rewards.is_empty() { 0.0 } else { rewards.iter().sum::<f64>() / rewards.len() as f64 };
        let zrf = collapsed.len() as f64 / n;
        self.history.push_back(zrf);
        while self.history.len() > self.config.window.max(1) {
            self.history.pop_front();
        }
        let window_zrf = self.history.iter().sum::<f64>() / self.history.len() as f64;
        let event = match (self.in_event, window_zrf) {
            (false, w) if w > self.config.raise_above => {
                self.in_event = true;
                EventState::Started
            }
            (true, w) if w < self.config.clear_below => {
                self.in_event = false;
                EventState::Cleared
            }
            (true, _) => EventState::Ongoing,
            (false, _) => EventState::Quiet,
        };
        CollapseReport { collapsed, zrf, zero_std_frac: zero_std as f64 / n, mean_reward, window_zrf, event }
    }
}

#[cfg(test)]
mod tests {
    use mentor_core::{
        CodeFeedback, CodeOutcome, Completion, Feedback, MathFeedback, MathOutcome, Task, Verdict,
    };

    use super::*;
    use crate::rollout::{Sample, Scored};

    fn group(verdicts: Vec<Verdict>) -> Group {
        let task = Task::math("t", "q", "18");
        let samples = verdicts
            .into_iter()
            .map(|verdict| Scored {
                sample: Sample {
                    completion: Completion::new(task.id.clone(), ""),
                    prefix_ids: Vec::new(),
                    ids: Vec::new(),
                    logprobs: Vec::new(),
                },
                verdict,
            })
            .collect();
        Group { task, samples }
    }

    /// A `fraction_passed` code verdict: `passed` of 4 tests.
    fn code(passed: usize) -> Verdict {
        let fb = Feedback::Code(CodeFeedback {
            outcome: if passed == 4 { CodeOutcome::Passed } else { CodeOutcome::WrongAnswer },
            tests_total: 4,
            tests_passed: passed,
            failed_test: None,
            exception: None,
            stdout: String::new(),
            stderr: String::new(),
            output_truncated: false,
            detail: None,
        });
        if passed == 4 {
            Verdict::pass(fb)
        } else {
            Verdict::partial(passed as f64 / 4.0, fb).expect("a share of tests is in [0, 1]")
        }
    }

    /// A wrong math answer, with `bonus` of format credit as its reward.
    fn wrong_with_format(bonus: f64) -> Verdict {
        let fb = Feedback::Math(MathFeedback {
            outcome: MathOutcome::WrongValue,
            extracted: Some("17".into()),
            ..MathFeedback::no_answer("18")
        });
        Verdict::partial(bonus, fb).expect("the bonus is in [0, 1]")
    }

    #[test]
    fn the_predicate_is_no_attempt_passed() {
        assert!(is_collapsed([false, false]));
        assert!(!is_collapsed([false, true]));
        assert!(is_collapsed(std::iter::empty()));
    }

    #[test]
    fn partially_passing_code_is_collapsed() {
        // fraction_passed: every attempt passes some tests (reward > 0), none passes them all.
        let partial = group(vec![code(1), code(3), code(2), code(3)]);
        assert!(partial.rewards().iter().all(|&r| r > 0.0));
        assert!(partial.is_collapsed());
        let solved = group(vec![code(1), code(4), code(0), code(3)]);
        assert!(!solved.is_collapsed());
        let mut monitor = CollapseMonitor::new(MonitorConfig::default());
        let report = monitor.observe(&[partial, solved]);
        assert_eq!(report.collapsed, vec![0]);
        assert_eq!(report.zrf, 0.5);
        // The reward statistics keep the shaped reward: 9/16 and 8/16 of the tests passed.
        assert_eq!(report.mean_reward, (9.0 + 8.0) / 32.0);
        assert_eq!(report.zero_std_frac, 0.0);
    }

    #[test]
    fn a_format_reward_on_a_wrong_answer_does_not_hide_a_collapse() {
        // Wrong answers in the expected format: the shaped reward is 0.1 each, nobody is right.
        let wrong = group(vec![wrong_with_format(0.1); 4]);
        assert!(wrong.is_collapsed());
        let mut monitor =
            CollapseMonitor::new(MonitorConfig { window: 1, raise_above: 0.5, clear_below: 0.25 });
        let report = monitor.observe(std::slice::from_ref(&wrong));
        assert_eq!((report.collapsed.clone(), report.zrf, report.event), (vec![0], 1.0, EventState::Started));
        assert!((report.mean_reward - 0.1).abs() < 1e-12);
        assert_eq!(report.zero_std_frac, 1.0);

        // The same through outcomes, as Python hands them over: a weighted correctness + format
        // sum (above 1 for the one right answer) with the correctness function's pass flags.
        let mut monitor = CollapseMonitor::new(MonitorConfig::default());
        let shaped = GroupOutcome::new(vec![0.2, 0.2, 0.0, 0.2], vec![false; 4]).unwrap();
        let right = GroupOutcome::new(vec![0.2, 1.2, 0.0, 0.2], vec![false, true, false, false]).unwrap();
        let report = monitor.observe_outcomes(&[shaped, right]);
        assert_eq!((report.collapsed, report.zrf), (vec![0], 0.5));
        assert!((report.mean_reward - 2.2 / 8.0).abs() < 1e-12);
    }

    #[test]
    fn outcomes_are_checked() {
        let e = GroupOutcome::new(vec![0.0], vec![false, true]).unwrap_err().to_string();
        assert!(e.contains("1 rewards for 2 pass flags"), "{e}");
        let e = GroupOutcome::new(vec![0.0, f64::NAN], vec![false, true]).unwrap_err().to_string();
        assert!(e.contains("reward 1 is NaN"), "{e}");
        let g = GroupOutcome::of(&group(vec![code(4), code(0)]));
        assert_eq!((g.rewards(), g.passed()), (&[1.0, 0.0][..], &[true, false][..]));
    }
}
