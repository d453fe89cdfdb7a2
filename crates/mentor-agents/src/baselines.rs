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

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

impl Mentor for StaticHints {
    fn name(&self) -> &str {
        "static"
    }

    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        let pool = self.prompts.static_hints(request.task.domain());
        let r = splitmix(self.seed ^ fnv(&request.task.id) ^ (request.previous_hints.len() as u64) << 32);
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
