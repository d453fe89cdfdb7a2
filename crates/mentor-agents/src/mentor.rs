//! `AgentMentor`: diagnoser → tutor → guard behind the `mentor_core::Mentor` trait.

use mentor_core::{GuardRejection, Hint, HintLevel, Intervention, Mentor, MentorError, MentorRequest, Task};

use crate::rules::{RulesDiagnoser, RulesTutor};
use crate::{Diagnoser, Guard, GuardConfig, GuardOutcome, Prompts, Tutor};

/// The mentor: runs its diagnoser, then its tutor at the requested level, then the guard. When
/// the guard rejects a hint it asks the tutor again one level lower (less content, less to
/// leak), down to level 1; every rejection is reported in the [`Intervention`].
pub struct AgentMentor {
    name: String,
    diagnoser: Box<dyn Diagnoser>,
    tutor: Box<dyn Tutor>,
    guard: Guard,
}

impl AgentMentor {
    /// A mentor from parts.
    pub fn new(
        name: impl Into<String>,
        diagnoser: Box<dyn Diagnoser>,
        tutor: Box<dyn Tutor>,
        guard: Guard,
    ) -> Self {
        Self { name: name.into(), diagnoser, tutor, guard }
    }

    /// The default `rules` mentor with the embedded templates.
    pub fn rules(guard: Guard) -> Self {
        Self::new("rules", Box::new(RulesDiagnoser), Box::new(RulesTutor::new(Prompts::default())), guard)
    }

    /// The `rules` mentor with templates loaded by the caller.
    pub fn rules_with(prompts: Prompts, guard: Guard) -> Self {
        Self::new("rules", Box::new(RulesDiagnoser), Box::new(RulesTutor::new(prompts)), guard)
    }

    /// The default guard configuration, for callers building their own guard.
    pub fn default_guard_config() -> GuardConfig {
        GuardConfig::default()
    }
}

impl Mentor for AgentMentor {
    fn name(&self) -> &str {
        &self.name
    }

    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        let err = |e: crate::Error| MentorError { backend: self.name.clone(), message: e.to_string() };
        let diagnosis = self.diagnoser.diagnose(request.task, request.attempts).map_err(err)?;
        let mut rejections = Vec::new();
        let mut level = Some(request.level);
        while let Some(l) = level {
            let hint = self
                .tutor
                .hint(request.task, request.attempts, &diagnosis, l, request.previous_hints)
                .map_err(err)?;
            if let Some((hint, redactions)) = guarded(&self.guard, request.task, hint, &mut rejections) {
                return Ok(Intervention {
                    diagnosis: Some(diagnosis),
                    hint: Some(hint),
                    rejections,
                    redactions,
                });
            }
            level = lower(l);
        }
        Ok(Intervention { diagnosis: Some(diagnosis), hint: None, rejections, redactions: Vec::new() })
    }
}

/// The guard's verdict on one hint: the hint to give with its redactions, or None when it was
/// rejected (the rejection is appended to `rejections`).
pub(crate) fn guarded(
    guard: &Guard,
    task: &Task,
    hint: Hint,
    rejections: &mut Vec<GuardRejection>,
) -> Option<(Hint, Vec<String>)> {
    match guard.check(task, hint) {
        GuardOutcome::Accepted(hint) => Some((hint, Vec::new())),
        GuardOutcome::Redacted { hint, reasons } => Some((hint, reasons)),
        GuardOutcome::Rejected(r) => {
            rejections.push(r);
            None
        }
    }
}

/// The level the tutor is asked for after a rejection at `level` (less content, less to leak);
/// None below level 1.
pub(crate) fn lower(level: HintLevel) -> Option<HintLevel> {
    HintLevel::try_from(level.get() - 1).ok()
}
