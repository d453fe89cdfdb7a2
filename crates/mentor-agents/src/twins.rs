//! Step twins: the rules mentor's own hint with the diagnosed step replaced, so that only the
//! targeting differs. If the diagnosis is what makes a hint work, the mentor beats its twins;
//! if a hint about any step does as well, it does not.
//!
//! - [`TwinKind::RandomStep`]: a uniformly random other step among those whose hint is the
//!   mentor's size within [`SIZE_BAND`];
//! - [`TwinKind::PriorStep`]: the step that fails most often for the problem's template, read
//!   from a calibration set (no per-problem diagnosis at all);
//! - [`TwinKind::AllSteps`]: the level-1 wrong-operation hint at every step, in order (the
//!   operation of every step, whatever the diagnosis found; larger than the mentor's hint by
//!   design, so never size-matched).
//!
//! Every twin leaves out the operation the attempts used ("not an addition"): it exists only at
//! the diagnosed step, so the mentor a twin is compared with is [`RulesTutor::without_wrong_op`].
//! A hint's size is [`shown_size`]: tokens of its text plus its forced prefix, the one
//! definition `mentor rescue` and training share.

use std::collections::BTreeMap;
use std::sync::Arc;

use mentor_core::{
    Attempt, GuardRejection, Hint, HintLevel, Intervention, Mentor, MentorError, MentorRequest, Task,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::rules::{reference_steps, RulesDiagnoser, RulesTutor};
use crate::{Diagnoser, Guard, Prompts, Tutor};

/// A hint's size is matched when it is within this fraction of the mentor's (±10%).
pub const SIZE_BAND: f64 = 0.10;

/// How text is counted: tokens of the learner's tokenizer (characters where none is at hand).
pub type TokenCount = Arc<dyn Fn(&str) -> usize + Send + Sync>;

/// The size of a hint as the learner receives it: tokens of its text plus tokens of its forced
/// prefix (shown in the text and forced again as the answer's start, under `prefix` credit).
pub fn shown_size(hint: &Hint, tokens: &dyn Fn(&str) -> usize) -> usize {
    tokens(&hint.text) + hint.solution_prefix.as_deref().map_or(0, tokens)
}

/// Whether `size` is within [`SIZE_BAND`] of `target`.
pub fn in_band(size: usize, target: usize) -> bool {
    (size as f64 - target as f64).abs() <= SIZE_BAND * target as f64
}

/// Which step a twin is about.
#[derive(Debug, Clone, PartialEq)]
pub enum TwinKind {
    /// A uniformly random other step, its hint within [`SIZE_BAND`] of the mentor's.
    RandomStep,
    /// The step that fails most often for the problem's key ([`prior_key`]), from a calibration
    /// set: `key → 0-based step`.
    PriorStep(BTreeMap<String, usize>),
    /// The level-1 wrong-operation hint at every step, in order (each step's operation).
    AllSteps,
}

impl TwinKind {
    /// The name in configs and reports: `random_step`, `prior_step`, `all_steps`.
    pub fn name(&self) -> &'static str {
        match self {
            TwinKind::RandomStep => "random_step",
            TwinKind::PriorStep(_) => "prior_step",
            TwinKind::AllSteps => "all_steps",
        }
    }
}

/// The key a [`TwinKind::PriorStep`] table is read by: the task's template (`meta.subject`)
/// and its number of reference steps, `"<subject>/<steps>"`.
pub fn prior_key(task: &Task) -> String {
    let steps = task.reference_solution().map(reference_steps).map_or(0, |s| s.len());
    format!("{}/{steps}", task.meta.subject.as_deref().unwrap_or(""))
}

/// A twin of one hint.
#[derive(Debug, Clone, PartialEq)]
pub struct Twin {
    /// The twin after the guard (`None`: rejected, or no step to put in the diagnosed one's
    /// place; see `excluded`).
    pub hint: Option<Hint>,
    /// The guard's rejection, if any.
    pub rejections: Vec<GuardRejection>,
    /// The step the mentor's hint is about (0-based).
    pub mentor_step: usize,
    /// The steps the twin is about (0-based; every step for `all_steps`).
    pub twin_steps: Vec<usize>,
    /// The sizes ([`shown_size`]) of the mentor's hint and of the twin.
    pub sizes: [usize; 2],
    /// No twin for this problem: no other step (`random_step`: none of the mentor's size;
    /// `prior_step`: no calibrated step for its key). Left out of the paired comparison.
    pub excluded: bool,
}

/// The twins of the rules mentor's hints.
pub struct StepTwin {
    kind: TwinKind,
    tutor: RulesTutor,
    guard: Guard,
    seed: u64,
    tokens: TokenCount,
    /// `random_step` without a step in the size band: the nearest in size (training), instead
    /// of no twin (the rescue's paired test, which leaves the problem out).
    nearest_out_of_band: bool,
}

impl StepTwin {
    /// Twins of `kind` of the hints a rules tutor with `prompts` writes (without the attempts'
    /// wrong operation), judged by `guard`, sized with `tokens`; random choices drawn from
    /// `seed`, the task id and the level.
    pub fn new(kind: TwinKind, prompts: Prompts, guard: Guard, seed: u64, tokens: TokenCount) -> Self {
        Self {
            kind,
            tutor: RulesTutor::without_wrong_op(prompts),
            guard,
            seed,
            tokens,
            nearest_out_of_band: false,
        }
    }

    /// As a training arm: a `random_step` twin with no other step in the size band takes the
    /// step whose hint is nearest the mentor's in size (ties drawn), so the arm hints wherever
    /// the mentor does and only the targeting differs.
    pub fn for_training(mut self) -> Self {
        self.nearest_out_of_band = true;
        self
    }

    /// The twin's kind.
    pub fn kind(&self) -> &TwinKind {
        &self.kind
    }

    /// The twin of the hint the mentor writes for `task` at `level` after diagnosing
    /// `attempts`; `None` for a task without reference steps (code, or no solution).
    pub fn twin(&self, task: &Task, attempts: &[Attempt], level: HintLevel) -> crate::Result<Option<Twin>> {
        let steps = task.reference_solution().map(reference_steps).unwrap_or_default();
        if steps.is_empty() || !matches!(task.payload, mentor_core::Payload::Math(_)) {
            return Ok(None);
        }
        let diagnosis = RulesDiagnoser.diagnose(task, attempts)?;
        let mentor_step = diagnosis.first_wrong_step.unwrap_or(0).min(steps.len() - 1);
        let mentor = self.tutor.hint(task, attempts, &diagnosis, level, &[])?;
        let tokens = self.tokens.as_ref();
        let target = shown_size(&mentor, tokens);
        let at = |j: usize| self.tutor.hint_at_step(task, attempts, &diagnosis, level, j);
        let excluded = |sizes| Twin {
            hint: None,
            rejections: Vec::new(),
            mentor_step,
            twin_steps: Vec::new(),
            sizes,
            excluded: true,
        };
        let (twin_steps, hint) = match &self.kind {
            TwinKind::RandomStep => {
                let mut others = Vec::new();
                for j in (0..steps.len()).filter(|&j| j != mentor_step) {
                    if let Some(h) = at(j)? {
                        others.push((j, h));
                    }
                }
                let distance = |h: &Hint| shown_size(h, tokens).abs_diff(target);
                let nearest = others.iter().map(|(_, h)| distance(h)).min();
                let mut candidates: Vec<(usize, Hint)> = match nearest {
                    Some(d)
                        if self.nearest_out_of_band
                            && !others.iter().any(|(_, h)| in_band(shown_size(h, tokens), target)) =>
                    {
                        others.into_iter().filter(|(_, h)| distance(h) == d).collect()
                    }
                    _ => others.into_iter().filter(|(_, h)| in_band(shown_size(h, tokens), target)).collect(),
                };
                if candidates.is_empty() {
                    return Ok(Some(excluded([target, 0])));
                }
                let mut rng = StdRng::seed_from_u64(self.draw_seed(task, level));
                let (j, h) = candidates.swap_remove(rng.random_range(0..candidates.len()));
                (vec![j], h)
            }
            TwinKind::PriorStep(table) => {
                let Some(&j) = table.get(&prior_key(task)) else {
                    return Ok(Some(excluded([target, 0])));
                };
                let Some(h) = at(j.min(steps.len() - 1))? else {
                    return Ok(Some(excluded([target, 0])));
                };
                (vec![j], h)
            }
            TwinKind::AllSteps => {
                let mut texts = Vec::with_capacity(steps.len());
                for j in 0..steps.len() {
                    if let Some(h) =
                        self.tutor.operation_hint_at_step(task, attempts, &diagnosis, HintLevel::NUDGE, j)?
                    {
                        if !texts.contains(&h.text) {
                            texts.push(h.text);
                        }
                    }
                }
                let hint = Hint { level: HintLevel::NUDGE, text: texts.join(" "), ..mentor.clone() };
                ((0..steps.len()).collect(), hint)
            }
        };
        let size = shown_size(&hint, tokens);
        let mut rejections = Vec::new();
        let hint = crate::mentor::guarded(&self.guard, task, hint, &mut rejections).map(|(h, _)| h);
        Ok(Some(Twin { hint, rejections, mentor_step, twin_steps, sizes: [target, size], excluded: false }))
    }

    fn draw_seed(&self, task: &Task, level: HintLevel) -> u64 {
        mentor_core::seed::mix(&[
            self.seed,
            0x7e1_5eed,
            mentor_core::seed::str_key(&task.id),
            u64::from(level.get()),
        ])
    }
}

impl Mentor for StepTwin {
    fn name(&self) -> &str {
        self.kind.name()
    }

    /// The twin as a training arm (see [`StepTwin::for_training`]). A problem without another
    /// step gets no hint: the arm never falls back to the diagnosed step.
    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        let err = |e: crate::Error| MentorError { backend: self.kind.name().into(), message: e.to_string() };
        let twin = self.twin(request.task, request.attempts, request.level).map_err(err)?;
        let diagnosis = None;
        Ok(match twin {
            Some(t) => {
                Intervention { diagnosis, hint: t.hint, rejections: t.rejections, redactions: Vec::new() }
            }
            None => Intervention { diagnosis, hint: None, rejections: Vec::new(), redactions: Vec::new() },
        })
    }
}

#[cfg(test)]
mod tests {
    use mentor_core::{Completion, FinishReason, MathPayload, Payload, Verifier};

    use super::*;
    use crate::GuardConfig;

    /// A 3-step problem whose attempts add at step 2 where it needs a subtraction.
    fn case() -> (Task, Vec<Attempt>) {
        let q = "Mia has 7 boxes of pencils with 6 pencils in each. Then she gives away 9 pencils. \
                 Later she buys 5 more pencils. How many pencils does Mia have now?";
        let mut t = Task::math("heldout/0/3/0", q, "38");
        t.payload = Payload::Math(MathPayload {
            answer: "38".into(),
            solution: Some(
                "Mia has 7*6 = <<7*6=42>>42 pencils.\nShe gives away 9: 42-9 = <<42-9=33>>33.\n\
                 She buys 5: 33+5 = <<33+5=38>>38.\n#### 38"
                    .into(),
            ),
        });
        t.meta.subject = Some("pencils".into());
        let attempts = (0..4)
            .map(|_| {
                let text = "She has 7 * 6 = 42 pencils.\nShe has 42 + 9 = 51 pencils.\nThen 51 + 5 = 56.\nThe answer is \\boxed{56}";
                let verdict = mentor_verify_math::MathVerifier::default().verify(&t, text).unwrap();
                assert!(!verdict.passed());
                Attempt {
                    completion: Completion { task_id: t.id.clone(), text: text.into(), finish_reason: FinishReason::Stop },
                    verdict,
                }
            })
            .collect();
        (t, attempts)
    }

    fn twin(kind: TwinKind) -> StepTwin {
        let chars: TokenCount = Arc::new(|s: &str| s.split_whitespace().count());
        StepTwin::new(kind, Prompts::default(), Guard::numeric_only(GuardConfig::default()), 1, chars)
    }

    #[test]
    fn a_twin_differs_from_the_mentors_hint_only_in_the_step() {
        let (t, a) = case();
        let d = RulesDiagnoser.diagnose(&t, &a).unwrap();
        assert_eq!(d.first_wrong_step, Some(1), "{d:?}");
        let tutor = RulesTutor::without_wrong_op(Prompts::default());
        let mentor = tutor.hint(&t, &a, &d, HintLevel::NUDGE, &[]).unwrap();
        assert_eq!(
            mentor.text,
            "Step 2 needs a subtraction: the question says \"Then she gives away 9 pencils.\" Redo that step."
        );
        // The same template about step 3: its operation and its sentence, nothing of the attempts.
        let other = tutor.hint_at_step(&t, &a, &d, HintLevel::NUDGE, 2).unwrap().unwrap();
        assert_eq!(
            other.text,
            "Step 3 needs an addition: the question says \"Later she buys 5 more pencils.\" Redo that step."
        );
        // The mentor with the attempts' wrong operation is a third hint.
        let full = RulesTutor::new(Prompts::default()).hint(&t, &a, &d, HintLevel::NUDGE, &[]).unwrap();
        assert!(full.text.contains("needs a subtraction, not an addition"), "{}", full.text);
        // The random-step twin of level 1: another step, in the size band, seeded.
        let tw = twin(TwinKind::RandomStep).twin(&t, &a, HintLevel::NUDGE).unwrap().unwrap();
        assert!(!tw.excluded && tw.mentor_step == 1 && tw.twin_steps != [1], "{tw:?}");
        assert!(in_band(tw.sizes[1], tw.sizes[0]), "{tw:?}");
        let h = tw.hint.clone().unwrap();
        assert_ne!(h.text, mentor.text);
        assert_eq!(tw, twin(TwinKind::RandomStep).twin(&t, &a, HintLevel::NUDGE).unwrap().unwrap());
        // Level 2 keeps its template: the steps before, the operation, the sentence.
        let tw2 = twin(TwinKind::RandomStep).twin(&t, &a, HintLevel::PLAN).unwrap().unwrap();
        if let Some(h) = &tw2.hint {
            assert!(h.text.contains("needs"), "{}", h.text);
            assert!(in_band(tw2.sizes[1], tw2.sizes[0]), "{tw2:?}");
        } else {
            assert!(tw2.excluded, "{tw2:?}");
        }
    }

    #[test]
    fn prior_and_all_steps_twins() {
        let (t, a) = case();
        let prior = BTreeMap::from([(prior_key(&t), 0usize)]);
        assert_eq!(prior_key(&t), "pencils/3");
        let tw = twin(TwinKind::PriorStep(prior)).twin(&t, &a, HintLevel::NUDGE).unwrap().unwrap();
        assert_eq!(tw.twin_steps, [0]);
        assert!(tw.hint.unwrap().text.starts_with("Step 1 needs a multiplication"));
        let none =
            twin(TwinKind::PriorStep(BTreeMap::new())).twin(&t, &a, HintLevel::NUDGE).unwrap().unwrap();
        assert!(none.excluded && none.hint.is_none());
        let all = twin(TwinKind::AllSteps).twin(&t, &a, HintLevel::NUDGE).unwrap().unwrap();
        let text = all.hint.unwrap().text;
        for s in ["Step 1 needs a multiplication", "Step 2 needs a subtraction", "Step 3 needs an addition"] {
            assert!(text.contains(s), "{text}");
        }
        assert!(!text.contains("not an"), "{text}");
        // Whatever the diagnosis: attempts that give no final answer still get every operation.
        let silent: Vec<Attempt> = a
            .iter()
            .map(|x| {
                let text = "I am not sure how to go on from here.";
                let verdict = mentor_verify_math::MathVerifier::default().verify(&t, text).unwrap();
                Attempt { completion: Completion { text: text.into(), ..x.completion.clone() }, verdict }
            })
            .collect();
        let d = RulesDiagnoser.diagnose(&t, &silent).unwrap();
        assert_ne!(d.category, mentor_core::FailureCategory::WrongMethod);
        let all = twin(TwinKind::AllSteps).twin(&t, &silent, HintLevel::NUDGE).unwrap().unwrap();
        let text = all.hint.unwrap().text;
        assert!(
            text.starts_with("Step 1 needs a multiplication") && text.contains("Step 3 needs an addition"),
            "{text}"
        );
    }

    /// Out of the size band: the rescue's twin leaves the problem out, the training arm's takes
    /// the nearest other step.
    #[test]
    fn out_of_band_the_training_twin_takes_the_nearest_step() {
        let (t, a) = case();
        // The mentor's hint (about the subtraction) weighs 10, every other 100.
        let sizes: TokenCount = Arc::new(|s: &str| if s.contains("subtraction") { 10 } else { 100 });
        let make = || {
            StepTwin::new(
                TwinKind::RandomStep,
                Prompts::default(),
                Guard::numeric_only(GuardConfig::default()),
                1,
                sizes.clone(),
            )
        };
        let strict = make().twin(&t, &a, HintLevel::NUDGE).unwrap().unwrap();
        assert!(strict.excluded && strict.hint.is_none(), "{strict:?}");
        let trained = make().for_training().twin(&t, &a, HintLevel::NUDGE).unwrap().unwrap();
        assert!(!trained.excluded && [vec![0], vec![2]].contains(&trained.twin_steps), "{trained:?}");
        assert!(trained.hint.is_some());
    }

    #[test]
    fn size_counts_text_and_prefix() {
        let words = |s: &str| s.split_whitespace().count();
        let h = Hint {
            level: HintLevel::PARTIAL_SOLUTION,
            text: "a b c".into(),
            solution_prefix: Some("d e".into()),
            source: mentor_core::HintSource::Mentor,
        };
        assert_eq!(shown_size(&h, &words), 5);
        assert!(in_band(110, 100) && in_band(90, 100) && !in_band(111, 100) && !in_band(89, 100));
    }
}
