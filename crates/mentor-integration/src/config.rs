//! How an arm intervenes: trigger, budgets, batch assembly, credit mode.

use mentor_core::{HintLevel, Mentor};
use serde::{Deserialize, Serialize};

use crate::assembly::Credit;
use crate::hint_format::HintFormat;

/// When collapsed groups get an intervention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// Every collapsed group, every step.
    PerGroup,
    /// Only while the monitor reports a collapse event.
    OnCollapseEvent,
}

/// How hinted attempts enter the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Assembly {
    /// The hinted group replaces the collapsed one.
    Replace,
    /// One group of `keep_unhinted` failed unhinted completions plus hinted ones up to the
    /// original group size (NuRL-style).
    Nurl {
        /// Unhinted completions kept in the group.
        keep_unhinted: usize,
    },
    /// The hinted group is added as an extra group; the collapsed one stays.
    Augment,
}

/// Knobs of an intervening arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InterventionConfig {
    /// When to intervene.
    pub trigger: Trigger,
    /// Most groups intervened on per step.
    pub max_interventions_per_step: usize,
    /// Most extra completions sampled per step (all hint levels together).
    pub max_extra_rollouts_per_step: usize,
    /// Completions per hinted attempt (G').
    pub hinted_samples: usize,
    /// The level a task without memory starts at.
    pub start_level: HintLevel,
    /// Escalate while the hinted group still fails (up to level 3).
    pub escalate: bool,
    /// Batch assembly.
    pub assembly: Assembly,
    /// Credit mode.
    pub credit: Credit,
    /// Unhinted successes after which the remembered level drops by one.
    pub memory_fade_after: u32,
    /// Where the hint goes in the prompt (`"{prompt}\n\nHint: {hint}"` by default).
    pub hint_format: HintFormat,
    /// With `prefix` credit, also train each rescued hinted group in its own (hinted) context
    /// as an extra group with group-relative advantages: failures inside a rescued group are
    /// pushed down, so the skill the hint unlocks does not erode while the prefix rows carry
    /// it over to the plain prompt. Ignored by the other credit modes.
    pub hinted_in_context: bool,
}

impl Default for InterventionConfig {
    fn default() -> Self {
        Self {
            trigger: Trigger::PerGroup,
            max_interventions_per_step: 8,
            max_extra_rollouts_per_step: 64,
            hinted_samples: 8,
            start_level: HintLevel::NUDGE,
            escalate: true,
            assembly: Assembly::Replace,
            credit: Credit::Prefix,
            memory_fade_after: 1,
            hint_format: HintFormat::default(),
            hinted_in_context: false,
        }
    }
}

/// The arm of an experiment.
pub enum Strategy {
    /// Plain GRPO: collapsed groups give zero advantage.
    Vanilla,
    /// DAPO dynamic sampling: drop all-0 / all-1 groups, refill with fresh tasks up to
    /// `max_refill_groups` per step.
    Dapo {
        /// Most replacement groups sampled per step.
        max_refill_groups: usize,
    },
    /// Off-policy guidance (LUFFY-style imitation): in each collapsed group, up to
    /// `max_groups` per step, the last failed completion is replaced by the task's reference
    /// solution (verified first); advantages are normalised inside the group as usual, so the
    /// reference is pushed up and the failures down. No diagnosis, no hint, no extra sampling.
    FullSolution {
        /// Most groups given the reference per step.
        max_groups: usize,
        /// The reference as trained on: `None`, as the task holds it (a teacher's text, the
        /// off-policy imitation of LUFFY); `Some`, through the rewrite the mentor's arms share
        /// (the learner's own layout: free imitation, an upper bound rather than a method).
        rewrite: Option<mentor_core::ReferenceRewrite>,
    },
    /// An intervention by a mentor (MENTOR agents, static hints, or refinement).
    Intervene {
        /// Who writes the hints.
        mentor: Box<dyn Mentor>,
        /// How.
        config: InterventionConfig,
    },
}

impl Strategy {
    /// The arm's name for logs (`vanilla`, `dapo`, or the mentor's name).
    pub fn name(&self) -> String {
        match self {
            Strategy::Vanilla => "vanilla".into(),
            Strategy::Dapo { .. } => "dapo".into(),
            Strategy::FullSolution { .. } => "full_solution".into(),
            Strategy::Intervene { mentor, .. } => mentor.name().to_string(),
        }
    }
}
