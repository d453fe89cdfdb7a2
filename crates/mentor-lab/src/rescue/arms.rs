//! The arms' interventions: each arm's mentor, built as training builds it
//! ([`mentor_trainer::train::strategy`]), asked for one problem's hint at a level.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use mentor_agents::{Guard, GuardConfig, TwinKind};
use mentor_core::{Attempt, Diagnosis, GuardRejection, Hint, HintLevel, Mentor, MentorRequest, Task};
use mentor_integration::Strategy;
use mentor_policy::Policy;

use mentor_trainer::config::RescueArm;
use mentor_trainer::config::{Arm, Backend, TrainConfig};
use mentor_trainer::{Error, Result};
use mentor_verify_math::MathEquivalence;

/// One row of the results: an arm, at a level for the leveled arms (`None`: with escalation),
/// level 3 for `random_prefix`, level 1 for `all_steps`, none for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArmRow {
    /// The arm.
    pub arm: RescueArm,
    /// The level.
    pub level: Option<u8>,
    /// `retry` only: a fixed `3 × rescue.hinted_samples` attempts per problem, what the
    /// escalating rows may draw at most (escalation compared at a budget fixed in advance,
    /// never one that depends on its outcome).
    pub fixed_attempts: bool,
}

impl ArmRow {
    /// A row of one round's attempts.
    pub fn new(arm: RescueArm, level: Option<u8>) -> Self {
        Self { arm, level, fixed_attempts: false }
    }

    /// The row's arm name in `rescue.jsonl` and the summary (`retry_fixed` for the retry at
    /// escalation's most attempts).
    pub fn name(&self) -> &'static str {
        if self.fixed_attempts {
            "retry_fixed"
        } else {
            self.arm.name()
        }
    }

    /// Whether the row escalates through the levels.
    pub fn escalates(&self) -> bool {
        self.arm.escalates() && self.level.is_none()
    }
}

/// The rows a `[rescue]` section measures, in report order.
pub fn rows(arms: &[RescueArm], levels: &[u8], escalate: bool) -> Vec<ArmRow> {
    let mut out = Vec::new();
    for &arm in arms {
        if arm.per_level() {
            let mut ls: Vec<u8> = levels.iter().copied().filter(|&l| arm.takes_level(l)).collect();
            ls.sort_unstable();
            ls.dedup();
            out.extend(ls.into_iter().map(|l| ArmRow::new(arm, Some(l))));
            if escalate && arm.escalates() {
                out.push(ArmRow::new(arm, None));
            }
        } else {
            let level = match arm {
                RescueArm::RandomPrefix => Some(3),
                RescueArm::AllSteps => Some(1),
                _ => None,
            };
            out.push(ArmRow::new(arm, level));
        }
    }
    if escalate && arms.contains(&RescueArm::Retry) && arms.contains(&RescueArm::Mentor) {
        let at = out.iter().position(|r| r.arm == RescueArm::Retry).map_or(0, |i| i + 1);
        out.insert(at, ArmRow { arm: RescueArm::Retry, level: None, fixed_attempts: true });
    }
    out
}

/// What a mentor said about one problem at one level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asked {
    /// The hint that passed the guard, if any.
    pub hint: Option<Hint>,
    /// The diagnosis, for diagnosing mentors.
    pub diagnosis: Option<Diagnosis>,
    /// Hints the guard rejected.
    pub rejections: Vec<GuardRejection>,
    /// What the guard redacted from the hint shown.
    pub redactions: Vec<String>,
    /// Seconds the call took.
    pub seconds: f64,
}

/// Asks `mentor` for a hint on `task` at `level`, after `previous` hints.
pub fn ask(
    mentor: &dyn Mentor,
    task: &Task,
    attempts: &[Attempt],
    level: HintLevel,
    previous: &[Hint],
) -> Result<Asked> {
    let t0 = Instant::now();
    let answer = mentor
        .intervene(&MentorRequest { task, attempts, level, previous_hints: previous })
        .map_err(|e| Error::Integration(mentor_integration::Error::Mentor(e)))?;
    Ok(Asked {
        hint: answer.hint,
        diagnosis: answer.diagnosis,
        rejections: answer.rejections,
        redactions: answer.redactions,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// One question to a mentor: a problem, its failed attempts, the level, the hints so far.
pub type Job<'a> = (&'a Task, &'a [Attempt], HintLevel, &'a [Hint]);

/// Asks `mentor` every job, `wave` at a time, each job on its own thread: a `local` mentor
/// (`chat` given) then answers a wave's calls in batched model calls (see
/// [`mentor_trainer::local_mentor`]), an `llm` one concurrently. Answers come back in the jobs' order,
/// each with its share of the wave's wall time as `seconds`.
pub fn ask_all(
    mentor: &dyn Mentor,
    chat: Option<&Arc<mentor_trainer::local_mentor::PolicyChat>>,
    jobs: &[Job<'_>],
    wave: usize,
) -> Result<Vec<Asked>> {
    let mut out = Vec::with_capacity(jobs.len());
    for chunk in jobs.chunks(wave.max(1)) {
        let t0 = Instant::now();
        // Every client of the wave is registered before any of them asks.
        let clients: Vec<_> = chunk.iter().map(|_| chat.map(|c| c.client())).collect();
        let answers: Vec<Result<Asked>> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .zip(clients)
                .map(|(&(task, attempts, level, previous), client)| {
                    s.spawn(move || {
                        let answer = ask(mentor, task, attempts, level, previous);
                        drop(client);
                        answer
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(Error::Missing("a mentor thread panicked".into()))))
                .collect()
        });
        let share = t0.elapsed().as_secs_f64() / chunk.len() as f64;
        for a in answers {
            out.push(Asked { seconds: share, ..a? });
        }
    }
    Ok(out)
}

/// The mentors of the arms a measurement needs.
pub struct Mentors {
    /// The `rules` mentor: the `mentor` arm, the diagnosis of every problem, and the level-3
    /// hint `random_prefix` is the control of.
    pub rules: Box<dyn Mentor>,
    /// The static hint library.
    pub static_hints: Box<dyn Mentor>,
    /// The refinement baseline.
    pub refinement: Box<dyn Mentor>,
    /// `[mentor]` on the `llm` backend, when measured.
    pub llm: Option<Box<dyn Mentor>>,
    /// `[mentor]` on the `local` backend, when measured.
    pub local: Option<Box<dyn Mentor>>,
    /// The local mentor's chat, to batch its calls across problems (register clients).
    pub local_chat: Option<Arc<mentor_trainer::local_mentor::PolicyChat>>,
    /// Calls of the `llm` / `local` mentor answered by the rules instead (an unparseable
    /// reply or a model error), counted over the whole measurement.
    pub fallbacks: Vec<(RescueArm, Arc<mentor_agents::llm::FallbackCounter>)>,
    /// The wrong-answers control.
    pub wrong_answers: Box<dyn Mentor>,
    /// The location-only control (over the `rules` mentor's diagnosis).
    pub where_only: Box<dyn Mentor>,
    /// The guard of the random-prefix control (the mentor's guard settings).
    pub guard: Guard,
    /// The `rules` mentor without the attempts' wrong operation (the twins' mentor).
    pub no_wrong_op: Box<dyn Mentor>,
    /// The step twins measured (`random_step`, `all_steps`; `prior_step` once calibrated).
    pub twins: Vec<(RescueArm, mentor_agents::StepTwin)>,
}

impl Mentors {
    /// Builds each arm's mentor from `cfg` as `mentor train` would for that arm; `learner`
    /// is the local mentor's `self`.
    pub fn build(cfg: &TrainConfig, learner: &Arc<Policy>, arms: &[RescueArm]) -> Result<Self> {
        let build = |arm: Arm, backend: Backend| -> Result<Box<dyn Mentor>> {
            let mut c = cfg.clone();
            c.strategy.arm = arm;
            c.mentor.backend = backend;
            match mentor_trainer::train::strategy(&c, learner)?.strategy {
                Strategy::Intervene { mentor, .. } => Ok(mentor),
                _ => Err(Error::Missing(format!("the `{arm}` arm built no mentor"))),
            }
        };
        let mut fallbacks = Vec::new();
        let llm = if arms.contains(&RescueArm::Llm) {
            let mut c = cfg.clone();
            c.strategy.arm = Arm::Mentor;
            c.mentor.backend = Backend::Llm;
            let built = mentor_trainer::train::strategy(&c, learner)?;
            fallbacks.extend(built.fallbacks.map(|f| (RescueArm::Llm, f)));
            match built.strategy {
                Strategy::Intervene { mentor, .. } => Some(mentor),
                _ => return Err(Error::Missing("the `llm` arm built no mentor".into())),
            }
        } else {
            None
        };
        let (local, local_chat) = if arms.contains(&RescueArm::Local) {
            if cfg.mentor.model == mentor_trainer::config::MentorModel::Default {
                return Err(Error::Config {
                    file: "[rescue]".into(),
                    message:
                        "the `local` arm needs `mentor.model` (`self` for the learner, or a model source)"
                            .into(),
                });
            }
            // Built as training builds it, keeping the chat to batch the calls with.
            let (model, local) = mentor_trainer::train::local_model(cfg, learner)?;
            let (mentor, counter, chat) = mentor_trainer::local_mentor::batching_mentor(
                model,
                local,
                mentor_trainer::train::prompts(cfg)?,
                guard(cfg),
                cfg.rescue.batch_rows,
            );
            fallbacks.push((RescueArm::Local, counter));
            (Some(Box::new(mentor) as Box<dyn Mentor>), Some(chat))
        } else {
            (None, None)
        };
        Ok(Self {
            rules: build(Arm::Mentor, Backend::Rules)?,
            static_hints: build(Arm::StaticHints, Backend::Rules)?,
            refinement: build(Arm::Refinement, Backend::Rules)?,
            llm,
            local,
            local_chat,
            fallbacks,
            wrong_answers: Box::new(mentor_agents::WrongAnswers::new(guard(cfg))),
            where_only: Box::new(mentor_agents::WhereOnly::new(
                build(Arm::Mentor, Backend::Rules)?,
                guard(cfg),
            )),
            guard: guard(cfg),
            no_wrong_op: Box::new(mentor_agents::AgentMentor::new(
                "rules",
                Box::new(mentor_agents::rules::RulesDiagnoser),
                Box::new(mentor_agents::rules::RulesTutor::without_wrong_op(mentor_trainer::train::prompts(
                    cfg,
                )?)),
                guard(cfg),
            )),
            twins: [(RescueArm::RandomStep, TwinKind::RandomStep), (RescueArm::AllSteps, TwinKind::AllSteps)]
                .into_iter()
                .filter(|(arm, _)| arms.contains(arm))
                .map(|(arm, kind)| Ok((arm, twin(cfg, learner, kind)?)))
                .collect::<Result<_>>()?,
        })
    }

    /// Adds the `prior_step` twin with its calibrated table.
    pub fn add_prior(
        &mut self,
        cfg: &TrainConfig,
        learner: &Arc<Policy>,
        table: BTreeMap<String, usize>,
    ) -> Result<()> {
        self.twins.push((RescueArm::PriorStep, twin(cfg, learner, TwinKind::PriorStep(table))?));
        Ok(())
    }

    /// The twin of a twin arm.
    pub fn twin_of(&self, arm: RescueArm) -> Option<&mentor_agents::StepTwin> {
        self.twins.iter().find(|(a, _)| *a == arm).map(|(_, t)| t)
    }

    /// The chat to batch `arm`'s calls with (the `local` arm's; `None` for the others).
    pub fn chat_of(&self, arm: RescueArm) -> Option<&Arc<mentor_trainer::local_mentor::PolicyChat>> {
        if arm == RescueArm::Local {
            self.local_chat.as_ref()
        } else {
            None
        }
    }

    /// The mentor of a diagnosing arm.
    pub fn of(&self, arm: RescueArm) -> Option<&dyn Mentor> {
        match arm {
            RescueArm::Mentor => Some(self.rules.as_ref()),
            RescueArm::Llm => self.llm.as_deref(),
            RescueArm::Local => self.local.as_deref(),
            RescueArm::StaticHints => Some(self.static_hints.as_ref()),
            RescueArm::Refinement => Some(self.refinement.as_ref()),
            RescueArm::WrongAnswers => Some(self.wrong_answers.as_ref()),
            RescueArm::WhereOnly => Some(self.where_only.as_ref()),
            RescueArm::MentorNoWrongOp => Some(self.no_wrong_op.as_ref()),
            RescueArm::Retry
            | RescueArm::RandomPrefix
            | RescueArm::ReferenceInContext
            | RescueArm::RandomStep
            | RescueArm::PriorStep
            | RescueArm::AllSteps => None,
        }
    }
}

/// A step twin of the `rules` mentor of `cfg` (its templates and guard), sized in the learner's
/// tokens, drawn from the run's seed.
fn twin(cfg: &TrainConfig, learner: &Arc<Policy>, kind: TwinKind) -> Result<mentor_agents::StepTwin> {
    Ok(mentor_agents::StepTwin::new(
        kind,
        mentor_trainer::train::prompts(cfg)?,
        guard(cfg),
        cfg.run.seed,
        mentor_trainer::train::token_count(learner),
    ))
}

/// The guard with the config's limits and the math checker (as the arms' guard).
pub fn guard(cfg: &TrainConfig) -> Guard {
    Guard::new(
        GuardConfig {
            max_chars: cfg.mentor.max_hint_chars,
            max_reference_overlap: cfg.mentor.max_code_overlap,
            ..GuardConfig::default()
        },
        Arc::new(MathEquivalence::default()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_expand_levels_and_escalation_for_diagnosing_arms_only() {
        let r = rows(&[RescueArm::Retry, RescueArm::Mentor, RescueArm::RandomPrefix], &[2, 1, 2], true);
        let labels: Vec<String> = r.iter().map(|a| super::super::report::label(a.name(), a.level)).collect();
        assert_eq!(
            labels,
            [
                "retry",
                "retry (3 rounds)",
                "mentor L1",
                "mentor L2",
                "mentor best of 3 levels",
                "random_prefix"
            ]
        );
        assert_eq!(r[5].level, Some(3));
        assert!(r[4].escalates() && !r[2].escalates() && !r[0].escalates() && !r[1].escalates());
        let r = rows(&[RescueArm::Mentor], &[3], false);
        assert_eq!(r, vec![ArmRow::new(RescueArm::Mentor, Some(3))]);
    }

    #[test]
    fn the_arms_mentors_are_the_training_arms() {
        let cfg = TrainConfig::load("gsm8k-smollm2", &[]).unwrap();
        let learner = Arc::new(
            Policy::char_level(
                mentor_tasks::curriculum::ALPHABET,
                mentor_policy::Config::tiny(0, 32, 2, 4, 2),
                1,
                candle_core::DType::F32,
                &candle_core::Device::Cpu,
            )
            .unwrap(),
        );
        let m = Mentors::build(&cfg, &learner, &[RescueArm::Mentor]).unwrap();
        assert_eq!(m.rules.name(), "rules");
        assert_eq!(m.static_hints.name(), "static");
        assert_eq!(m.refinement.name(), "refinement");
        assert!(m.llm.is_none() && m.local.is_none());
        let e = Mentors::build(&cfg, &learner, &[RescueArm::Local]).err().unwrap().to_string();
        assert!(e.contains("mentor.model"), "{e}");
    }
}
