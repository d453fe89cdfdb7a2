//! `[curriculum]`: the synthetic curriculum's schema (its logic is in `crate::curriculum`).

use serde::{Deserialize, Serialize};

use super::invalid;
use crate::curriculum::{Operands, Phase, MAX_LEVEL};

/// `[curriculum]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CurriculumSection {
    /// Phases in order (level, steps): e.g. two digits for 20 steps, then four.
    pub schedule: Vec<Phase>,
    /// How operands are drawn at each level.
    pub operands: Operands,
    /// Levels at which `Full` operands are used regardless of `operands` (the hard level).
    pub full_operand_levels: Vec<u32>,
    /// Levels whose every problem holds exactly one ten column (a column summing to 10,
    /// `4+5+1=10`; see [`crate::curriculum`]). When set, the other levels and pretraining's
    /// targets hold none: it is the skill the model lacks. Empty: problems are drawn as they
    /// come.
    pub ten_levels: Vec<u32>,
    /// Training problems per level: 0 draws new problems every step; `n > 0` draws each
    /// step's problems from a fixed pool of `n` per level (none in the evaluation set), in
    /// seeded epochs, so tasks come back and the per-task hint memory can fade their hints.
    pub pool: usize,
    /// The layout of the training tasks' reference solutions: `learner` (the learner's own
    /// scratchpad, as pretraining teaches it) or `teacher` (the same arithmetic, most
    /// significant column first: a layout the learner never produces). With `teacher`, every
    /// arm that shows the learner reference lines sees them through one shared rewrite into
    /// the learner's layout ([`crate::curriculum::learner_solution`]), and `full_solution`
    /// trains on the teacher's text as written.
    pub reference: ReferenceStyle,
}

/// `curriculum.reference`: whose layout the reference solutions are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceStyle {
    /// The learner's own scratchpad (least significant column first).
    #[default]
    Learner,
    /// A teacher's: most significant column first.
    Teacher,
}

impl Default for CurriculumSection {
    fn default() -> Self {
        Self {
            schedule: vec![Phase { level: 2, steps: 20 }, Phase { level: 4, steps: 100 }],
            operands: Operands::Mixed,
            full_operand_levels: vec![],
            ten_levels: vec![],
            pool: 0,
            reference: ReferenceStyle::Learner,
        }
    }
}

impl CurriculumSection {
    /// A schedule, and every level in range (read when `data.kind = "curriculum"`).
    pub fn validate(&self) -> Result<(), String> {
        if self.schedule.is_empty() {
            return invalid("curriculum.schedule", "needs at least one phase");
        }
        for (i, &l) in self.ten_levels.iter().enumerate() {
            if !(1..=MAX_LEVEL).contains(&l) {
                return invalid(
                    &format!("curriculum.ten_levels[{i}]"),
                    format!("{l} (allowed: 1..={MAX_LEVEL})"),
                );
            }
        }
        for (i, p) in self.schedule.iter().enumerate() {
            if !(1..=MAX_LEVEL).contains(&p.level) {
                return invalid(
                    &format!("curriculum.schedule[{i}].level"),
                    format!("{} (allowed: 1..={MAX_LEVEL})", p.level),
                );
            }
        }
        Ok(())
    }
}
