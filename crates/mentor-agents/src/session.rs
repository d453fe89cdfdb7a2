//! [`MentorSession`]: the `llm` mentor with its conversation turned inside out, for a caller
//! that generates the replies itself.
//!
//! [`AgentMentor`](crate::AgentMentor) over a [`ChatModel`](crate::llm::ChatModel) asks one
//! question at a time and waits for the answer. A trainer that writes the mentor's replies
//! with the model it is training (the learner as its own mentor, in TRL) cannot be called
//! back that way: it generates for many groups at once, in one batch, and every process of a
//! distributed run must make the same generate calls. A session holds one group's
//! intervention as a state machine instead: [`prompt`](MentorSession::prompt) is the
//! conversation to answer next, [`answer`](MentorSession::answer) takes the reply, and the
//! caller batches the prompts of all open sessions as it likes.
//!
//! The steps are the `llm` mentor's: the diagnoser's prompt, then the tutor's at the requested
//! level, then the guard; a rejected hint asks the tutor again one level lower, down to 1. A
//! reply that cannot be parsed (no JSON object, an unknown category, no `hint`) falls back to
//! the `rules` agent for that step and is counted in [`fallbacks`](MentorSession::fallbacks),
//! so a session always ends, after at most four model turns (one diagnosis, three hints).

use std::sync::Arc;

use mentor_core::{Attempt, Diagnosis, GuardRejection, Hint, HintLevel, Intervention, Message, Task};

use crate::llm::{diagnoser_messages, parse_diagnosis, parse_hint, tutor_messages};
use crate::mentor::{guarded, lower};
use crate::rules::{RulesDiagnoser, RulesTutor};
use crate::{Diagnoser, Error, Guard, Prompts, Result, Tutor};

enum State {
    Diagnosing(Vec<Message>),
    Tutoring { diagnosis: Diagnosis, level: HintLevel, messages: Vec<Message> },
    Done(Intervention),
}

/// One failed group's intervention, driven by a caller that answers the mentor's prompts.
pub struct MentorSession {
    prompts: Arc<Prompts>,
    guard: Guard,
    task: Task,
    attempts: Vec<Attempt>,
    previous: Vec<Hint>,
    first_level: HintLevel,
    state: State,
    rejections: Vec<GuardRejection>,
    fallbacks: usize,
    turns: usize,
}

/// What the state holds while a step is being taken.
fn placeholder() -> State {
    State::Done(Intervention { diagnosis: None, hint: None, rejections: Vec::new(), redactions: Vec::new() })
}

impl MentorSession {
    /// A session about `attempts` (a failed group of `task`) that asks for a hint at `level`,
    /// after the hints already given in `previous`. Its first prompt is the diagnoser's.
    pub fn new(
        prompts: Arc<Prompts>,
        guard: Guard,
        task: Task,
        attempts: Vec<Attempt>,
        level: HintLevel,
        previous: Vec<Hint>,
    ) -> Result<Self> {
        let mut s = Self {
            prompts,
            guard,
            task,
            attempts,
            previous,
            first_level: level,
            state: placeholder(),
            rejections: Vec::new(),
            fallbacks: 0,
            turns: 0,
        };
        match diagnoser_messages(&s.prompts, &s.task, &s.attempts) {
            Ok(messages) => s.state = State::Diagnosing(messages),
            Err(e) => {
                let diagnosis = s.rules_diagnosis(&e)?;
                s.tutor_from(diagnosis, Some(level))?;
            }
        }
        Ok(s)
    }

    /// The conversation to answer next (system, then user), or None when the session is over.
    pub fn prompt(&self) -> Option<&[Message]> {
        match &self.state {
            State::Diagnosing(m) | State::Tutoring { messages: m, .. } => Some(m),
            State::Done(_) => None,
        }
    }

    /// Takes the reply to [`prompt`](Self::prompt) and moves on. An error when the session is
    /// over, or when the `rules` fallback itself fails.
    pub fn answer(&mut self, reply: &str) -> Result<()> {
        self.turns += 1;
        match std::mem::replace(&mut self.state, placeholder()) {
            State::Diagnosing(_) => {
                let diagnosis = match parse_diagnosis(reply) {
                    Ok(d) => d,
                    Err(e) => self.rules_diagnosis(&e)?,
                };
                self.tutor_from(diagnosis, Some(self.first_level))
            }
            State::Tutoring { diagnosis, level, .. } => {
                let hint = match parse_hint(reply, level) {
                    Ok(h) => h,
                    Err(e) => self.rules_hint(&diagnosis, level, &e)?,
                };
                self.judge(diagnosis, level, hint)
            }
            done @ State::Done(_) => {
                self.state = done;
                self.turns -= 1;
                Err(Error::Session("answered after the session ended".into()))
            }
        }
    }

    /// Whether the session is over.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done(_))
    }

    /// The intervention, once the session is over (a hint, or none when the guard rejected
    /// every level; the rejections are listed either way).
    pub fn result(&self) -> Option<&Intervention> {
        match &self.state {
            State::Done(iv) => Some(iv),
            _ => None,
        }
    }

    /// Replies that could not be parsed and were replaced by the `rules` agent's step.
    pub fn fallbacks(&self) -> usize {
        self.fallbacks
    }

    /// Replies taken so far.
    pub fn turns(&self) -> usize {
        self.turns
    }

    /// The task the session is about.
    pub fn task(&self) -> &Task {
        &self.task
    }

    fn rules_diagnosis(&mut self, why: &Error) -> Result<Diagnosis> {
        tracing::warn!(reason = %why, task = %self.task.id, "self-mentor diagnosis unusable; falling back to rules");
        self.fallbacks += 1;
        RulesDiagnoser.diagnose(&self.task, &self.attempts)
    }

    fn rules_hint(&mut self, diagnosis: &Diagnosis, level: HintLevel, why: &Error) -> Result<Hint> {
        tracing::warn!(reason = %why, task = %self.task.id, "self-mentor hint unusable; falling back to rules");
        self.fallbacks += 1;
        RulesTutor::new((*self.prompts).clone()).hint(
            &self.task,
            &self.attempts,
            diagnosis,
            level,
            &self.previous,
        )
    }

    /// The tutor's turn at `level`: its prompt, or (when the prompt cannot be rendered) the
    /// rules tutor's hint judged at once.
    fn tutor_from(&mut self, diagnosis: Diagnosis, level: Option<HintLevel>) -> Result<()> {
        let Some(level) = level else {
            self.finish(diagnosis, None, Vec::new());
            return Ok(());
        };
        match tutor_messages(&self.prompts, &self.task, &diagnosis, level, &self.previous) {
            Ok(messages) => {
                self.state = State::Tutoring { diagnosis, level, messages };
                Ok(())
            }
            Err(e) => {
                let hint = self.rules_hint(&diagnosis, level, &e)?;
                self.judge(diagnosis, level, hint)
            }
        }
    }

    /// The guard's verdict on `hint`: the session ends with it, or asks one level lower.
    fn judge(&mut self, diagnosis: Diagnosis, level: HintLevel, hint: Hint) -> Result<()> {
        match guarded(&self.guard, &self.task, hint, &mut self.rejections) {
            Some((hint, redactions)) => {
                self.finish(diagnosis, Some(hint), redactions);
                Ok(())
            }
            None => self.tutor_from(diagnosis, lower(level)),
        }
    }

    fn finish(&mut self, diagnosis: Diagnosis, hint: Option<Hint>, redactions: Vec<String>) {
        let rejections = std::mem::take(&mut self.rejections);
        self.state = State::Done(Intervention { diagnosis: Some(diagnosis), hint, rejections, redactions });
    }
}

#[cfg(test)]
mod tests {
    use mentor_core::{Completion, FailureCategory, Feedback, HintSource, MathFeedback, Verdict};

    use super::*;
    use crate::GuardConfig;

    fn session(level: u8, max_chars: usize) -> MentorSession {
        let task = Task::math("t", "Tom has 3 bags of 7 apples. How many apples?", "21");
        let attempts = (0..2)
            .map(|i| Attempt {
                completion: Completion::new("t", format!("3 + 7 = 10, so {i}0")),
                verdict: Verdict::fail(Feedback::Math(MathFeedback::no_answer("21"))),
            })
            .collect();
        let guard = Guard::numeric_only(GuardConfig { max_chars, ..GuardConfig::default() });
        let level = HintLevel::try_from(level).unwrap();
        MentorSession::new(Arc::new(Prompts::default()), guard, task, attempts, level, Vec::new()).unwrap()
    }

    const DIAGNOSIS: &str = r#"Sure. {"category": "wrong_method", "shared_mode": "adds instead of multiplying",
        "evidence": ["3 + 7 = 10"], "first_wrong_step": 1, "confidence": 0.9} That is all."#;

    #[test]
    fn the_replies_become_the_diagnosis_and_the_hint() {
        let mut s = session(2, 2000);
        let first = s.prompt().unwrap();
        assert_eq!(first.len(), 2);
        assert!(first[1].content.contains("3 + 7 = 10, so 10"), "the attempts are shown");
        assert!(first[1].content.contains("21"), "the diagnoser sees the private answer");
        s.answer(DIAGNOSIS).unwrap();
        let tutor = s.prompt().unwrap();
        assert!(tutor[1].content.contains("adds instead of multiplying"), "the tutor reads the diagnosis");
        assert!(tutor[1].content.contains("Level: 2"));
        s.answer(r#"{"hint": "Each bag holds the same number: multiply, do not add."}"#).unwrap();
        assert!(s.is_done() && s.prompt().is_none());
        let iv = s.result().unwrap();
        assert_eq!(iv.diagnosis.as_ref().unwrap().category, FailureCategory::WrongMethod);
        assert_eq!(iv.diagnosis.as_ref().unwrap().first_wrong_step, Some(0));
        let hint = iv.hint.as_ref().unwrap();
        assert_eq!(hint.text, "Each bag holds the same number: multiply, do not add.");
        assert_eq!((hint.level.get(), hint.source), (2, HintSource::Mentor));
        assert_eq!((s.fallbacks(), s.turns()), (0, 2));
        assert!(s.answer("more").is_err(), "a finished session takes no reply");
        assert_eq!(s.turns(), 2);
    }

    #[test]
    fn unusable_replies_fall_back_to_the_rules_agents() {
        let mut s = session(1, 2000);
        s.answer("I think the student is wrong.").unwrap();
        assert!(!s.is_done(), "the tutor is still asked after a rules diagnosis");
        s.answer(r#"{"hint": "   "}"#).unwrap();
        let iv = s.result().unwrap();
        assert!(iv.hint.as_ref().is_some_and(|h| !h.text.trim().is_empty()), "the rules tutor's hint");
        assert_eq!((s.fallbacks(), s.turns()), (2, 2));
    }

    #[test]
    fn the_guard_judges_the_reply_and_a_rejection_asks_one_level_lower() {
        // A 60-character cap: the long level-3 reply is rejected, the short level-2 one passes.
        let mut s = session(3, 60);
        s.answer(DIAGNOSIS).unwrap();
        s.answer(&format!(r#"{{"hint": "{}"}}"#, "Work it out step by step. ".repeat(5))).unwrap();
        let again = s.prompt().expect("asked again after the rejection");
        assert!(again[1].content.contains("Level: 2"));
        s.answer(r#"{"hint": "So 3 bags of 7 is 21."}"#).unwrap();
        let iv = s.result().unwrap();
        assert_eq!(iv.rejections.len(), 1);
        assert!(iv.rejections[0].reason.contains("too long"));
        let hint = iv.hint.as_ref().unwrap();
        assert_eq!(hint.level.get(), 2);
        assert!(!hint.text.contains("21"), "the answer is redacted: {}", hint.text);
        assert!(!iv.redactions.is_empty());
    }

    #[test]
    fn every_level_rejected_ends_without_a_hint_after_four_turns() {
        let mut s = session(3, 10);
        s.answer(DIAGNOSIS).unwrap();
        for _ in 0..3 {
            s.answer(r#"{"hint": "This hint is far too long for the cap."}"#).unwrap();
        }
        let iv = s.result().expect("over after level 1 is rejected");
        assert!(iv.hint.is_none());
        assert_eq!((iv.rejections.len(), s.turns()), (3, 4));
    }
}
