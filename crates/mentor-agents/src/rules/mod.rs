//! The `rules` backend: deterministic, offline diagnosis and hint writing from verifier
//! feedback and the task's privileged data. The default backend, and the one CI exercises.

mod code;
pub(crate) mod math;
pub(crate) mod numbers;

use mentor_core::numbers::format_number;
use mentor_core::{Attempt, Diagnosis, Feedback, Hint, HintLevel, HintSource, Payload, Task};
use serde::Serialize;

pub use math::{reference_steps, ReferenceStep};

use crate::{Diagnoser, Prompts, Result, Tutor};

/// Rules diagnoser: math by comparing intermediate numbers with the reference steps and
/// checking written computations; code from the sandbox's per-test feedback.
#[derive(Debug, Clone, Default)]
pub struct RulesDiagnoser;

impl Diagnoser for RulesDiagnoser {
    fn diagnose(&self, task: &Task, attempts: &[Attempt]) -> Result<Diagnosis> {
        Ok(match &task.payload {
            Payload::Math(_) => math::diagnose(task, attempts),
            Payload::Code(_) => code::diagnose(attempts),
        })
    }
}

/// Rules tutor: fills the hint templates of [`Prompts`] with the diagnosis' evidence and the
/// reference steps. Level 3 shows the reference steps up to and including the first wrong one
/// (never the last step); without a reference solution it writes the level-2 hint instead.
#[derive(Debug, Clone, Default)]
pub struct RulesTutor {
    prompts: Prompts,
    /// Whether a wrong-operation hint leaves out the operation the attempts used ("not an
    /// addition"): what the diagnosis read from the attempts, beyond locating the step.
    omit_wrong_op: bool,
}

/// Which step a math hint is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The step the diagnosis located.
    Diagnosed,
    /// Another step (0-based): the hint the tutor writes about the diagnosed step, with that
    /// step in its place (a twin, [`crate::twins`]).
    Step(usize),
    /// A step (0-based) and its operation, named whatever the diagnosis found.
    Operation(usize),
}

impl RulesTutor {
    /// A tutor with the given templates.
    pub fn new(prompts: Prompts) -> Self {
        Self { prompts, omit_wrong_op: false }
    }

    /// A tutor whose wrong-operation hints name the operation the step needs but not the one the
    /// attempts used ("Step 2 needs a subtraction" without ", not an addition").
    pub fn without_wrong_op(prompts: Prompts) -> Self {
        Self { prompts, omit_wrong_op: true }
    }

    /// The hint this tutor writes at `level` with the diagnosed step replaced by `step`
    /// (0-based): the step's operation (where the diagnosed hint names one), its question
    /// sentence, the steps before it and its partial solution, through the same template; never
    /// the attempts' wrong operation, which exists only at the diagnosed step. `None` for code
    /// tasks and steps the reference does not have.
    pub fn hint_at_step(
        &self,
        task: &Task,
        attempts: &[Attempt],
        diagnosis: &Diagnosis,
        level: HintLevel,
        step: usize,
    ) -> Result<Option<Hint>> {
        self.at_step(task, attempts, diagnosis, level, Target::Step(step))
    }

    /// The wrong-operation hint at `level` about `step` (0-based), naming the operation the step
    /// needs whatever the diagnosis found ("Step 2 needs a subtraction: the question says ...");
    /// `None` for code tasks, steps the reference does not have, and steps without one operation.
    pub fn operation_hint_at_step(
        &self,
        task: &Task,
        attempts: &[Attempt],
        diagnosis: &Diagnosis,
        level: HintLevel,
        step: usize,
    ) -> Result<Option<Hint>> {
        self.at_step(task, attempts, diagnosis, level, Target::Operation(step))
    }

    fn at_step(
        &self,
        task: &Task,
        attempts: &[Attempt],
        diagnosis: &Diagnosis,
        level: HintLevel,
        target: Target,
    ) -> Result<Option<Hint>> {
        let (Target::Step(step) | Target::Operation(step)) = target else { return Ok(None) };
        let steps = task.reference_solution().map(reference_steps).unwrap_or_default();
        if !matches!(task.payload, Payload::Math(_)) || step >= steps.len() {
            return Ok(None);
        }
        let ctx = math_context(task, attempts, diagnosis, target, true);
        if !matches!(target, Target::Operation(_)) {
            return self.render(task, diagnosis, level, ctx).map(Some);
        }
        if ctx.op_needed.is_none() {
            return Ok(None);
        }
        let as_wrong_method =
            Diagnosis { category: mentor_core::FailureCategory::WrongMethod, ..diagnosis.clone() };
        self.render(task, &as_wrong_method, level, ctx).map(Some)
    }

    /// Renders the level's template of the diagnosis' category with `ctx`.
    fn render(&self, task: &Task, diagnosis: &Diagnosis, level: HintLevel, ctx: HintContext) -> Result<Hint> {
        let mut level_no = level.get();
        if level_no == 3 && ctx.prefix.is_none() {
            level_no = 2;
        }
        let domain = task.domain();
        let (name, template, used) = self
            .prompts
            .hint_template(domain, diagnosis.category, level_no)
            .ok_or_else(|| crate::Error::Prompts {
                file: "hints.toml".into(),
                message: format!("no `{domain}` templates"),
            })?;
        let text = self.prompts.render(&name, template, &ctx)?;
        let used = HintLevel::try_from(used).unwrap_or(HintLevel::NUDGE);
        Ok(Hint {
            level: used,
            text,
            solution_prefix: if used == HintLevel::PARTIAL_SOLUTION { ctx.prefix } else { None },
            source: HintSource::Mentor,
        })
    }
}

#[derive(Serialize, Default)]
struct HintContext {
    step_text: Option<String>,
    step_index: Option<usize>,
    step_total: Option<usize>,
    prefix: Option<String>,
    quote: Option<String>,
    test: Option<String>,
    input: Option<String>,
    expected: Option<String>,
    actual: Option<String>,
    exception: Option<String>,
    line: Option<u32>,
    earlier: Option<String>,
    op_step: Option<usize>,
    op_needed: Option<&'static str>,
    op_used: Option<&'static str>,
    question_quote: Option<String>,
    slip_lhs: Option<String>,
    slip_written: Option<String>,
    slip_last: bool,
}

impl Tutor for RulesTutor {
    fn hint(
        &self,
        task: &Task,
        attempts: &[Attempt],
        diagnosis: &Diagnosis,
        level: HintLevel,
        _previous: &[Hint],
    ) -> Result<Hint> {
        let ctx = match &task.payload {
            Payload::Math(_) => {
                math_context(task, attempts, diagnosis, Target::Diagnosed, self.omit_wrong_op)
            }
            Payload::Code(c) => code_context(c, attempts, diagnosis),
        };
        self.render(task, diagnosis, level, ctx)
    }
}

/// The fields a math hint fills: the step the hint is about (`target`) and what the attempts
/// did there.
fn math_context(
    task: &Task,
    attempts: &[Attempt],
    diagnosis: &Diagnosis,
    target: Target,
    omit_wrong_op: bool,
) -> HintContext {
    let mut ctx =
        HintContext { quote: diagnosis.evidence.first().map(|e| e.quote.clone()), ..Default::default() };
    let steps = &task.reference_solution().map(reference_steps).unwrap_or_default();
    // The diagnosis usually located the wrong step already; redo the comparison with the
    // attempts only when it did not (an LLM diagnosis, say). Without a located wrong step,
    // point at the first step.
    let analysis = diagnosis.first_wrong_step.is_none().then(|| math::analyse(task, attempts));
    let diagnosed =
        diagnosis.first_wrong_step.or_else(|| analysis.as_ref().and_then(|a| a.first_wrong)).unwrap_or(0);
    // The analysis checked its located step already; check it only once.
    let check =
        analysis.and_then(|a| a.check).unwrap_or_else(|| math::check_step(task, steps, diagnosed, attempts));
    let wrong = check.wrong_operation(attempts.len());
    // A twin's step, checked in turn: its operation, question sentence and slip.
    let (k, check) = match target {
        Target::Step(j) | Target::Operation(j) if j != diagnosed => {
            (j, math::check_step(task, steps, j, attempts))
        }
        _ => (diagnosed, check),
    };
    // Named whatever the diagnosis found: the step's own operation.
    let wrong = match target {
        Target::Operation(_) => check.needed.map(|needed| (needed, needed)),
        _ => wrong,
    };
    if k > 0 && k <= steps.len() {
        let earlier: Vec<&str> = steps[..k].iter().map(|s| s.text.as_str()).collect();
        ctx.earlier = Some(earlier.join(" "));
    }
    ctx.question_quote = check.question_quote.clone();
    if let Some((needed, used)) = wrong {
        // The diagnosed step's operation, or the twin's step's own.
        let needed = if k == diagnosed || matches!(target, Target::Operation(_)) {
            Some(needed)
        } else {
            check.needed
        };
        if let Some(needed) = needed {
            ctx.op_step = Some(k + 1);
            ctx.op_needed = Some(math::operation_noun(needed));
            if !omit_wrong_op && k == diagnosed {
                ctx.op_used = Some(math::operation_noun(used));
            }
        }
    }
    // The slip to point at: one in the located step, else the first written.
    let slip = check.slip.clone().map(|c| (c.lhs, c.written, c.value)).or_else(|| {
        attempts.iter().find_map(|a| {
            numbers::arithmetic_slips(&a.completion.text)
                .into_iter()
                .next()
                .map(|s| (s.lhs, s.written, s.correct))
        })
    });
    if let Some((lhs, written, value)) = slip {
        // A slip whose right value is the final answer may not be quoted with its left side
        // (that shows the answer as a sum): the hint names the wrong result only.
        let last = steps.last().and_then(|s| s.result).is_some_and(|r| numbers::same(r, value));
        ctx.slip_last = last;
        ctx.slip_written = Some(format_number(written));
        if !last {
            ctx.slip_lhs = Some(lhs);
        }
    }
    if let Some(step) = steps.get(k) {
        // The last step states the final answer: never show it.
        if k + 1 < steps.len() {
            ctx.step_text = Some(step.text.clone());
            ctx.step_index = Some(k + 1);
            ctx.step_total = Some(steps.len());
        }
        let shown = (k + 1).min(steps.len().saturating_sub(1));
        if shown > 0 {
            let prefix: Vec<&str> = steps[..shown].iter().map(|s| s.text.as_str()).collect();
            ctx.prefix = Some(prefix.join("\n"));
        }
    }
    ctx
}

/// The fields a code hint fills: the first failing test or exception, and the first third of
/// the reference's lines.
fn code_context(c: &mentor_core::CodePayload, attempts: &[Attempt], diagnosis: &Diagnosis) -> HintContext {
    let mut ctx =
        HintContext { quote: diagnosis.evidence.first().map(|e| e.quote.clone()), ..Default::default() };
    let failing = attempts.iter().find_map(|a| match a.verdict.feedback() {
        Feedback::Code(f) => Some(f),
        Feedback::Math(_) | Feedback::VerifierError { .. } => None,
    });
    if let Some(f) = failing {
        if let Some(t) = &f.failed_test {
            ctx.test = Some(t.source.clone());
            ctx.input = t.input.clone();
            ctx.expected = t.expected.clone();
            ctx.actual = t.actual.clone();
        }
        if let Some(e) = &f.exception {
            ctx.exception = Some(format!("{}: {}", e.kind, e.message));
            ctx.line = e.line;
        }
    }
    if let Some(reference) = &c.reference_solution {
        let lines: Vec<&str> = reference.lines().filter(|l| !l.trim().is_empty()).collect();
        let shown = lines.len() / 3;
        if shown > 0 {
            ctx.prefix = Some(lines[..shown].join("\n"));
        }
    }
    ctx
}
