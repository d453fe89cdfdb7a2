//! `[strategy]`: the arm, and the spelling of every arm's name.

use serde::{Deserialize, Serialize};

use mentor_integration::{InterventionConfig, MonitorConfig};

use super::invalid;

/// The arms: the one spelling of their names in configs (`strategy.arm`), on the command
/// line (`--arms`), in run directories and in reports, which list them in this order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Arm {
    /// Plain GRPO.
    Vanilla,
    /// Generic hints chosen at random, no diagnosis.
    StaticHints,
    /// The learner's wrong final answers and that they are wrong (LTE's control): failure-aware
    /// without diagnosis or worked content.
    WrongAnswers,
    /// Where the diagnosis puts the first mistake, in words, without worked content.
    WhereOnly,
    /// The mentor's level-3 hint with its cut moved to a random other step (the control of
    /// the diagnosis: same kind of hint, undiagnosed place).
    RandomPrefix,
    /// The reference solution trained as an off-policy completion (LUFFY-style imitation), as
    /// its author wrote it (with `curriculum.reference = "teacher"`, in the teacher's layout).
    FullSolution,
    /// The reference solution trained in the learner's own layout (through the rewrite the
    /// mentor's arms share): free imitation, the upper bound, not a method.
    FullSolutionLearner,
    /// MENTOR: diagnose, hint, guard.
    Mentor,
    /// DAPO dynamic sampling.
    Dapo,
    /// The learner revises a failed answer shown with the verifier's feedback.
    Refinement,
    /// The mentor's hint (without the attempts' wrong operation) about a random other step of the
    /// same size: the diagnosis removed, everything else equal ([`mentor_agents::StepTwin`]).
    RandomStep,
    /// Fresh unhinted attempts for every collapsed group, as many and in as many rounds as a
    /// mentor's hinted ones under the same budgets: the compute-matched control.
    Retry,
}

impl Arm {
    /// Every arm, in report order.
    pub const ALL: [Arm; 12] = [
        Arm::Vanilla,
        Arm::StaticHints,
        Arm::WrongAnswers,
        Arm::WhereOnly,
        Arm::RandomPrefix,
        Arm::FullSolution,
        Arm::FullSolutionLearner,
        Arm::Mentor,
        Arm::Dapo,
        Arm::Refinement,
        Arm::RandomStep,
        Arm::Retry,
    ];

    /// The name used in configs, on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Arm::Vanilla => "vanilla",
            Arm::StaticHints => "static_hints",
            Arm::RandomPrefix => "random_prefix",
            Arm::FullSolution => "full_solution",
            Arm::FullSolutionLearner => "full_solution_learner",
            Arm::WrongAnswers => "wrong_answers",
            Arm::WhereOnly => "where_only",
            Arm::Mentor => "mentor",
            Arm::Dapo => "dapo",
            Arm::Refinement => "refinement",
            Arm::RandomStep => "random_step",
            Arm::Retry => "retry",
        }
    }

    /// The arm called `name`, if it is one.
    pub fn parse(name: &str) -> Option<Arm> {
        Arm::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl std::fmt::Display for Arm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `[strategy]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StrategySection {
    /// The arm.
    pub arm: Arm,
    /// DAPO: most refill groups per step.
    pub dapo_max_refill: usize,
    /// Refinement: the most characters of the failed answer quoted back to the learner.
    pub refinement_quote_chars: usize,
    /// Collapse monitor.
    pub monitor: MonitorConfig,
    /// Intervening arms (static_hints, refinement, mentor).
    pub intervention: InterventionConfig,
}

impl Default for StrategySection {
    fn default() -> Self {
        Self {
            arm: Arm::Vanilla,
            dapo_max_refill: 8,
            refinement_quote_chars: 200,
            monitor: MonitorConfig::default(),
            intervention: InterventionConfig::default(),
        }
    }
}

impl StrategySection {
    /// At least one hinted sample per intervention.
    pub fn validate(&self) -> Result<(), String> {
        if self.intervention.hinted_samples == 0 {
            return invalid("strategy.intervention.hinted_samples", "must be > 0");
        }
        Ok(())
    }
}
