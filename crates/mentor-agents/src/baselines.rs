//! The interventions MENTOR is compared against, behind the same `Mentor` trait.

use mentor_core::{
    CodeOutcome, Feedback, Hint, HintSource, Intervention, MathOutcome, Mentor, MentorError, MentorRequest,
};

use crate::{Guard, GuardOutcome, Prompts};

/// Static hint library: a generic, pre-written hint per domain, chosen at random without any
/// diagnosis (the "off-policy-style" intervention the paper argues against). Deterministic
/// for a given seed, task and retry.
#[derive(Debug, Clone)]
pub struct StaticHints {
    prompts: Prompts,
    seed: u64,
}

impl StaticHints {
    /// A static library with the embedded hints.
    pub fn new(seed: u64) -> Self {
        Self { prompts: Prompts::default(), seed }
    }

    /// A static library with hints loaded by the caller.
    pub fn with_prompts(prompts: Prompts, seed: u64) -> Self {
        Self { prompts, seed }
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Mentor for StaticHints {
    fn name(&self) -> &str {
        "static"
    }

    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        let pool = self.prompts.static_hints(request.task.domain());
        let r = splitmix(
            self.seed
                ^ mentor_core::seed::str_key(&request.task.id)
                ^ (request.previous_hints.len() as u64) << 32,
        );
        let mut i = (r % pool.len() as u64) as usize;
        // Prefer a hint not tried yet on this group.
        for _ in 0..pool.len() {
            if !request.previous_hints.iter().any(|h| h.text == pool[i]) {
                break;
            }
            i = (i + 1) % pool.len();
        }
        Ok(Intervention {
            diagnosis: None,
            hint: Some(Hint {
                level: request.level,
                text: pool[i].clone(),
                solution_prefix: None,
                source: HintSource::Static,
            }),
            rejections: Vec::new(),
            redactions: Vec::new(),
        })
    }
}

/// The compute-matched control of every intervening arm: a collapsed group gets fresh
/// unhinted attempts, as many (and in as many rounds, under the same budgets) as a mentor's
/// hinted ones. Its hint is blank, which a hint format leaves out of the prompt, so the second
/// try sees the problem as the first did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Retry;

impl Mentor for Retry {
    fn name(&self) -> &str {
        "retry"
    }

    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        Ok(Intervention {
            diagnosis: None,
            hint: Some(Hint {
                level: request.level,
                text: String::new(),
                solution_prefix: None,
                source: HintSource::Control,
            }),
            rejections: Vec::new(),
            redactions: Vec::new(),
        })
    }
}

/// Post-hoc refinement (Critique-GRPO style): the learner is shown one of its failed answers
/// with the verifier's feedback and asked to revise. No diagnosis; the guard still redacts an
/// answer that would leak (a failed attempt can contain the right value as an intermediate).
#[derive(Debug, Clone)]
pub struct Refinement {
    guard: Guard,
    max_answer_chars: usize,
}

impl Refinement {
    /// Refinement that quotes at most `max_answer_chars` of the failed answer.
    pub fn new(guard: Guard, max_answer_chars: usize) -> Self {
        Self { guard, max_answer_chars }
    }
}

/// One line saying what the verifier found, without revealing the gold answer.
pub(crate) fn feedback_summary(feedback: &Feedback) -> String {
    match feedback {
        Feedback::VerifierError { .. } => "the answer could not be checked".into(),
        Feedback::Math(m) => match m.outcome {
            MathOutcome::NoAnswer => "no final answer was found".into(),
            MathOutcome::MultipleAnswers => "several different final answers were given".into(),
            MathOutcome::Unparseable => {
                format!(
                    "the final answer `{}` could not be read as math",
                    m.extracted.as_deref().unwrap_or("")
                )
            }
            MathOutcome::WrongType => {
                format!("the final answer `{}` has the wrong form", m.extracted.as_deref().unwrap_or(""))
            }
            _ => format!("the final answer `{}` is incorrect", m.extracted.as_deref().unwrap_or("")),
        },
        Feedback::Code(c) => {
            if let Some(t) = &c.failed_test {
                let mut s = format!("the test `{}` failed", t.source);
                if let (Some(e), Some(a)) = (&t.expected, &t.actual) {
                    s.push_str(&format!(" (expected {e}, got {a})"));
                }
                s
            } else if let Some(e) = &c.exception {
                format!("the code raised {}: {}", e.kind, e.message)
            } else {
                match c.outcome {
                    CodeOutcome::Timeout => "the code ran out of time".into(),
                    CodeOutcome::MemoryLimit => "the code ran out of memory".into(),
                    CodeOutcome::OutputLimit => "the code printed too much".into(),
                    CodeOutcome::NoCode => "no code was found in the answer".into(),
                    CodeOutcome::Tampered => "the code did not let the tests run to the end".into(),
                    _ => format!("{} of {} tests passed", c.tests_passed, c.tests_total),
                }
            }
        }
    }
}

impl Mentor for Refinement {
    fn name(&self) -> &str {
        "refinement"
    }

    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        let Some(attempt) =
            request.attempts.get(request.previous_hints.len() % request.attempts.len().max(1))
        else {
            return Ok(Intervention {
                diagnosis: None,
                hint: None,
                rejections: Vec::new(),
                redactions: Vec::new(),
            });
        };
        let quoted: String = attempt.completion.text.chars().take(self.max_answer_chars).collect();
        let text = format!(
            "Here is a previous answer to this problem:\n---\n{}\n---\nA checker found that {}. Find the mistake and write a corrected, complete answer.",
            quoted.trim(),
            feedback_summary(attempt.verdict.feedback())
        );
        let hint = Hint { level: request.level, text, solution_prefix: None, source: HintSource::Refinement };
        Ok(match self.guard.check(request.task, hint) {
            GuardOutcome::Accepted(h) => Intervention {
                diagnosis: None,
                hint: Some(h),
                rejections: Vec::new(),
                redactions: Vec::new(),
            },
            GuardOutcome::Redacted { hint, reasons } => Intervention {
                diagnosis: None,
                hint: Some(hint),
                rejections: Vec::new(),
                redactions: reasons,
            },
            GuardOutcome::Rejected(r) => {
                Intervention { diagnosis: None, hint: None, rejections: vec![r], redactions: Vec::new() }
            }
        })
    }
}

/// Builds an [`Intervention`] from a guard's verdict on `hint` (a control keeps no diagnosis).
fn guarded(guard: &Guard, task: &mentor_core::Task, hint: Hint) -> Intervention {
    let none = |rejections, redactions| Intervention { diagnosis: None, hint: None, rejections, redactions };
    match guard.check(task, hint) {
        GuardOutcome::Accepted(h) => Intervention { hint: Some(h), ..none(Vec::new(), Vec::new()) },
        GuardOutcome::Redacted { hint, reasons } => {
            Intervention { hint: Some(hint), ..none(Vec::new(), reasons) }
        }
        GuardOutcome::Rejected(r) => none(vec![r], Vec::new()),
    }
}

/// The least a failure-aware hint can carry (LTE's control): the learner's own wrong final
/// answers and that they are wrong — "Your previous answers were 12 and 18; both are wrong." —
/// or, for code, which tests failed (by number, without their expected values) and that the
/// outputs were wrong. No diagnosis, no worked content. Through the guard like every hint (a
/// failed attempt's answer can still be the right value in a refused form).
#[derive(Debug, Clone)]
pub struct WrongAnswers {
    guard: Guard,
    wording: Option<String>,
}

impl WrongAnswers {
    /// The control, with the arms' guard.
    pub fn new(guard: Guard) -> Self {
        Self { guard, wording: None }
    }

    /// The control with its math hints worded by `template`, whose `{answers}` becomes the
    /// distinct wrong answers joined by `, ` (`none` when no attempt gave one): for a learner
    /// that reads a restricted alphabet (the demo's curriculum).
    pub fn with_wording(guard: Guard, template: impl Into<String>) -> Self {
        Self { guard, wording: Some(template.into()) }
    }
}

/// The distinct final answers the attempts extracted, in order.
fn wrong_values(attempts: &[mentor_core::Attempt]) -> Vec<String> {
    let mut values: Vec<String> = Vec::new();
    for a in attempts {
        if let Feedback::Math(m) = a.verdict.feedback() {
            if let Some(v) = m.extracted.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
                if !values.iter().any(|x| x == v) {
                    values.push(v.to_string());
                }
            }
        }
    }
    values
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The text of [`WrongAnswers`] for `attempts`.
pub fn wrong_answers_text(attempts: &[mentor_core::Attempt]) -> String {
    let values = wrong_values(attempts);
    let mut failed_tests: Vec<usize> = Vec::new();
    let mut total = 0;
    let mut code = false;
    for a in attempts {
        if let Feedback::Code(c) = a.verdict.feedback() {
            code = true;
            total = total.max(c.tests_total);
            if let Some(t) = &c.failed_test {
                if !failed_tests.contains(&(t.index + 1)) {
                    failed_tests.push(t.index + 1);
                }
            }
        }
    }
    if code {
        failed_tests.sort_unstable();
        let names: Vec<String> = failed_tests.iter().map(|i| format!("test {i}")).collect();
        return match names.len() {
            0 => "Your previous code did not pass the tests.".to_string(),
            _ => format!(
                "Your previous code failed {} (of {total}); its outputs were wrong.",
                and_list(&names)
            ),
        };
    }
    match values.len() {
        0 => "Your previous attempts gave no final answer.".to_string(),
        1 => format!("Your previous answer was {}; it is wrong.", values[0]),
        2 => format!("Your previous answers were {}; both are wrong.", and_list(&values)),
        _ => format!("Your previous answers were {}; all are wrong.", and_list(&values)),
    }
}

impl Mentor for WrongAnswers {
    fn name(&self) -> &str {
        "wrong_answers"
    }

    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        let text = match (&self.wording, request.task.domain()) {
            (Some(t), mentor_core::Domain::Math) => {
                let values = wrong_values(request.attempts);
                t.replace("{answers}", &if values.is_empty() { "none".into() } else { values.join(", ") })
            }
            _ => wrong_answers_text(request.attempts),
        };
        let hint = Hint { level: request.level, text, solution_prefix: None, source: HintSource::Control };
        Ok(guarded(&self.guard, request.task, hint))
    }
}

/// The location-only control: where the diagnosis puts the first mistake and what kind it is,
/// in words ("Your first mistake is in step 3: a calculation error."), without any worked
/// content. It asks `diagnoser` (the mentor whose diagnosis it strips) at level 1 and keeps
/// only the diagnosis's step and category; no hint when there is no diagnosis.
pub struct WhereOnly {
    diagnoser: Box<dyn Mentor>,
    guard: Guard,
    wording: Option<String>,
}

impl std::fmt::Debug for WhereOnly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhereOnly").field("diagnoser", &self.diagnoser.name()).finish()
    }
}

impl WhereOnly {
    /// The control over `diagnoser`'s diagnoses, with the arms' guard.
    pub fn new(diagnoser: Box<dyn Mentor>, guard: Guard) -> Self {
        Self { diagnoser, guard, wording: None }
    }

    /// The control with its hints worded by `template`: `{step}` becomes the first wrong
    /// step (from 1) and `{kind}` the mistake's kind in words (`a mistake` when unknown); no
    /// hint without a located step. For a learner that reads a restricted alphabet.
    pub fn with_wording(diagnoser: Box<dyn Mentor>, guard: Guard, template: impl Into<String>) -> Self {
        Self { diagnoser, guard, wording: Some(template.into()) }
    }
}

/// The kind of a mistake in words (`None` for an unknown one).
fn kind_words(c: mentor_core::FailureCategory) -> Option<&'static str> {
    use mentor_core::FailureCategory as F;
    Some(match c {
        F::NoFinalAnswer => "no final answer in the required form",
        F::ArithmeticSlip => "a calculation error",
        F::SignError => "a sign error",
        F::UnitOrPercentSlip => "units or percentages mixed up",
        F::WrongMethod => "the wrong method",
        F::IncompleteReasoning => "the reasoning stops before the end",
        F::SyntaxError => "code that does not compile",
        F::RuntimeException => "code that raises an exception",
        F::WrongOutput => "a wrong output",
        F::EdgeCase => "a mishandled edge case",
        F::Timeout => "code that runs out of time",
        F::ResourceExhaustion => "code that runs out of memory or output",
        _ => return None,
    })
}

/// The text of [`WhereOnly`] for a diagnosis (`None` when it says nothing: unknown kind and no
/// located step).
pub fn where_only_text(d: &mentor_core::Diagnosis) -> Option<String> {
    let kind = kind_words(d.category);
    match (d.first_wrong_step, kind) {
        (Some(step), Some(kind)) => Some(format!("Your first mistake is in step {}: {kind}.", step + 1)),
        (Some(step), None) => Some(format!("Your first mistake is in step {}.", step + 1)),
        (None, Some(kind)) => Some(format!("Your mistake: {kind}.")),
        (None, None) => None,
    }
}

impl Mentor for WhereOnly {
    fn name(&self) -> &str {
        "where_only"
    }

    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        let first = MentorRequest { level: mentor_core::HintLevel::NUDGE, previous_hints: &[], ..*request };
        let diagnosed = self.diagnoser.intervene(&first)?;
        let worded = |d: &mentor_core::Diagnosis| -> Option<String> {
            match &self.wording {
                Some(t) => d.first_wrong_step.map(|step| {
                    t.replace("{step}", &(step + 1).to_string())
                        .replace("{kind}", kind_words(d.category).unwrap_or("a mistake"))
                }),
                None => where_only_text(d),
            }
        };
        let Some(text) = diagnosed.diagnosis.as_ref().and_then(worded) else {
            return Ok(Intervention {
                diagnosis: None,
                hint: None,
                rejections: Vec::new(),
                redactions: Vec::new(),
            });
        };
        let hint = Hint { level: request.level, text, solution_prefix: None, source: HintSource::Control };
        Ok(guarded(&self.guard, request.task, hint))
    }
}

#[cfg(test)]
mod control_tests {
    use mentor_core::{Attempt, Completion, Diagnosis, FailureCategory, FinishReason, HintLevel, Task};

    use super::*;

    #[test]
    fn and_lists_read_as_english() {
        let s = |v: &[&str]| and_list(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(s(&[]), "");
        assert_eq!(s(&["12"]), "12");
        assert_eq!(s(&["12", "18"]), "12 and 18");
        assert_eq!(s(&["1", "2", "3"]), "1, 2 and 3");
    }

    #[test]
    fn where_only_says_the_step_and_the_kind_and_nothing_else() {
        let d = |step, category| Diagnosis {
            category,
            shared_mode: "they multiplied 12 by 3 instead of adding".into(),
            evidence: Vec::new(),
            first_wrong_step: step,
            confidence: 0.9,
        };
        assert_eq!(
            where_only_text(&d(Some(2), FailureCategory::ArithmeticSlip)).unwrap(),
            "Your first mistake is in step 3: a calculation error."
        );
        assert_eq!(
            where_only_text(&d(Some(0), FailureCategory::Unknown)).unwrap(),
            "Your first mistake is in step 1."
        );
        assert_eq!(
            where_only_text(&d(None, FailureCategory::WrongOutput)).unwrap(),
            "Your mistake: a wrong output."
        );
        assert!(where_only_text(&d(None, FailureCategory::Unknown)).is_none());
    }

    fn attempt(task: &Task, text: &str) -> Attempt {
        use mentor_core::Verifier;
        let verdict = mentor_verify_math::MathVerifier::default().verify(task, text).unwrap();
        assert!(!verdict.passed());
        Attempt {
            completion: Completion {
                task_id: task.id.clone(),
                text: text.into(),
                finish_reason: FinishReason::Stop,
            },
            verdict,
        }
    }

    #[test]
    fn wrong_answers_lists_distinct_answers_and_is_guarded() {
        let task = Task::math("t", "What is 6 * 5?", "30");
        let guard = Guard::new(
            crate::GuardConfig::default(),
            std::sync::Arc::new(mentor_verify_math::MathEquivalence::default()),
        );
        let m = WrongAnswers::new(guard);
        let attempts = [
            attempt(&task, "So it is \\boxed{12}."),
            attempt(&task, "The answer is 18."),
            attempt(&task, "\\boxed{12}"),
        ];
        let req =
            MentorRequest { task: &task, attempts: &attempts, level: HintLevel::NUDGE, previous_hints: &[] };
        let hint = m.intervene(&req).unwrap().hint.unwrap();
        assert_eq!(hint.text, "Your previous answers were 12 and 18; both are wrong.");
        assert_eq!(hint.source, HintSource::Control);
        let none = [attempt(&task, "I do not know.")];
        let req = MentorRequest { attempts: &none, ..req };
        assert_eq!(
            m.intervene(&req).unwrap().hint.unwrap().text,
            "Your previous attempts gave no final answer."
        );
        // A failed attempt whose answer is the gold value in a refused form (a hedge): the
        // control would hand the value over, and the guard refuses it.
        let hedged = [attempt(&task, "The answer is at least \\boxed{30}.")];
        let out = m.intervene(&MentorRequest { attempts: &hedged, ..req }).unwrap();
        assert!(out.hint.as_ref().is_none_or(|h| !h.text.contains("30")), "{out:?}");
    }
}
