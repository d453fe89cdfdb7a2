//! The agent traits: typed messages in, typed messages out.

use mentor_core::{Attempt, Diagnosis, Hint, HintLevel, Task};

use crate::Result;

/// Reads a failed group and finds the root cause.
pub trait Diagnoser: Send + Sync {
    /// Diagnoses `attempts` (all failed) of `task`. Uses the task's privileged payload
    /// (reference answer, solution, tests) when present.
    fn diagnose(&self, task: &Task, attempts: &[Attempt]) -> Result<Diagnosis>;
}

/// Turns a diagnosis into an instructional prompt for the learner.
pub trait Tutor: Send + Sync {
    /// Writes a hint at `level`. `previous` are the hints already tried on this group, so an
    /// escalation can say something new. Must never state the final answer (the guard checks).
    fn hint(
        &self,
        task: &Task,
        attempts: &[Attempt],
        diagnosis: &Diagnosis,
        level: HintLevel,
        previous: &[Hint],
    ) -> Result<Hint>;
}
