//! The collapse monitor: per-step ZRF and zero-std fraction, and collapse events over a
//! moving window.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::rollout::Group;

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
    /// Indices of collapsed groups (all rewards zero).
    pub collapsed: Vec<usize>,
    /// Zero-reward-group fraction.
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

    /// Records a step's unhinted groups.
    pub fn observe(&mut self, groups: &[Group]) -> CollapseReport {
        let n = groups.len().max(1) as f64;
        let collapsed: Vec<usize> =
            groups.iter().enumerate().filter(|(_, g)| g.is_collapsed()).map(|(i, _)| i).collect();
        let zero_std = groups
            .iter()
            .filter(|g| {
                let r = g.rewards();
                r.windows(2).all(|w| w[0] == w[1])
            })
            .count();
        let rewards: Vec<f64> = groups.iter().flat_map(Group::rewards).collect();
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
