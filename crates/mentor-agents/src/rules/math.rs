//! Rules diagnosis of math failures: compare the attempts' intermediate numbers with the
//! reference solution's steps to find the first step the group got wrong, check written
//! computations for slips, and read the verifier's feedback (no answer, sign, percentage).

use std::collections::BTreeSet;

use mentor_core::numbers::format_number;
use mentor_core::{Attempt, Diagnosis, Evidence, FailureCategory, Feedback, MathOutcome, MathRelation, Task};

use super::numbers::{arithmetic_slips, computations, numbers, same, Computation};

/// One step of a reference solution.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceStep {
    /// The step's text with GSM8K calculator notes (`<<a*b=c>>`) removed.
    pub text: String,
    /// The value the step establishes (the note's result, else the step's last number).
    pub result: Option<f64>,
    /// The left side of the step's last calculator note (`72-24`), when it has one.
    pub expr: Option<String>,
}

/// Splits a reference solution into steps: lines for GSM8K-style rationales (and any
/// multi-line text), sentences for single-paragraph solutions. Steps without numbers are
/// merged into the following step.
pub fn reference_steps(solution: &str) -> Vec<ReferenceStep> {
    let pieces: Vec<&str> = if solution.lines().filter(|l| !l.trim().is_empty()).count() > 1 {
        solution.lines().collect()
    } else {
        solution.split_inclusive(". ").collect()
    };
    let mut steps = Vec::new();
    let mut pending = String::new();
    for piece in pieces {
        let piece = piece.trim();
        if piece.is_empty() || piece.starts_with("####") {
            continue;
        }
        let (text, note_result, note_expr) = strip_notes(piece);
        if !pending.is_empty() {
            pending.push(' ');
        }
        pending.push_str(&text);
        let result = note_result.or_else(|| numbers(&text).last().map(|f| f.value));
        if result.is_some() {
            steps.push(ReferenceStep { text: std::mem::take(&mut pending), result, expr: note_expr });
        }
    }
    if !pending.is_empty() {
        steps.push(ReferenceStep { text: pending, result: None, expr: None });
    }
    steps
}

/// Removes `<<expr=result>>` notes, returning the clean text and the last note's result and
/// left side.
fn strip_notes(s: &str) -> (String, Option<f64>, Option<String>) {
    let mut out = String::with_capacity(s.len());
    let mut result = None;
    let mut expr = None;
    let mut rest = s;
    while let Some(open) = rest.find("<<") {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find(">>") else {
            rest = &rest[open..];
            break;
        };
        let note = &rest[open + 2..open + close];
        if let Some(eq) = note.rfind('=') {
            if let Some(r) = numbers(&note[eq + 1..]).first() {
                result = Some(r.value);
                expr = Some(note[..eq].trim().to_string());
            }
        }
        rest = &rest[open + close + 2..];
    }
    out.push_str(rest);
    (out.split_whitespace().collect::<Vec<_>>().join(" "), result, expr)
}

/// The 0-based index of the first reference step whose result does not appear in `attempt`
/// in order: each step's result must be found after the previous step's, so a value that
/// only shows up earlier (as an operand, say) does not count. Steps whose result already
/// appears in the question are skipped (they prove nothing).
fn first_missing_step(steps: &[ReferenceStep], question_numbers: &[f64], attempt: &str) -> Option<usize> {
    let found: Vec<f64> = numbers(attempt).into_iter().map(|f| f.value).collect();
    let mut cursor = 0;
    for (i, s) in steps.iter().enumerate() {
        let Some(r) = s.result else { continue };
        if question_numbers.iter().any(|q| same(*q, r)) {
            continue;
        }
        match found[cursor..].iter().position(|v| same(*v, r)) {
            Some(at) => cursor += at + 1,
            None => return Some(i),
        }
    }
    None
}

/// The analysis the tutor also needs: reference steps and the group's first wrong step.
#[derive(Debug, Clone, Default)]
pub(crate) struct MathAnalysis {
    pub steps: Vec<ReferenceStep>,
    pub first_wrong: Option<usize>,
    /// The attempts' calculations at the first wrong step.
    pub check: Option<StepCheck>,
}

pub(crate) fn analyse(task: &Task, attempts: &[Attempt]) -> MathAnalysis {
    let steps = task.reference_solution().map(reference_steps).unwrap_or_default();
    if steps.is_empty() {
        return MathAnalysis::default();
    }
    let qn: Vec<f64> = numbers(task.question()).into_iter().map(|f| f.value).collect();
    // The step most attempts first miss (ties: the earliest).
    let mut counts = vec![0usize; steps.len()];
    for a in attempts {
        if let Some(i) = first_missing_step(&steps, &qn, &a.completion.text) {
            counts[i] += 1;
        }
    }
    let first_wrong = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .max_by(|(i, a), (j, b)| a.cmp(b).then(j.cmp(i)))
        .map(|(i, _)| i);
    let check = first_wrong.map(|k| check_step(task, &steps, k, attempts));
    MathAnalysis { steps, first_wrong, check }
}

/// What the attempts wrote at one reference step: the operation the step needs, and whether
/// they used another one there or slipped in its arithmetic.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StepCheck {
    /// The step (0-based).
    pub step: usize,
    /// Whether it is the reference's last step (its result is the final answer).
    pub last: bool,
    /// The step's operator, when its calculator note has exactly one.
    pub needed: Option<char>,
    /// The other operator most attempts used there instead (ties: the first seen).
    pub used: Option<char>,
    /// Attempts whose calculation at the step has one operator, not the needed one.
    pub wrong_op: usize,
    /// Attempts whose calculation at the step has the needed operator and a wrong result.
    pub slipped: usize,
    /// The first slipped calculation at the step.
    pub slip: Option<Computation>,
    /// The attempt and quote of the first calculation with another operator.
    pub wrong_quote: Option<(usize, String)>,
    /// The question's sentence the step computes from (not the final question sentence).
    pub question_quote: Option<String>,
}

impl StepCheck {
    /// The operator the group used instead of the needed one, when at least half of the
    /// `n` attempts did.
    pub fn wrong_operation(&self, n: usize) -> Option<(char, char)> {
        match (self.needed, self.used) {
            (Some(needed), Some(used)) if self.wrong_op * 2 >= n.max(1) => Some((needed, used)),
            _ => None,
        }
    }
}

/// The calculation's name with its article: `an addition`.
pub(crate) fn operation_noun(op: char) -> &'static str {
    match op {
        '+' => "an addition",
        '-' => "a subtraction",
        '*' => "a multiplication",
        '/' => "a division",
        _ => "another calculation",
    }
}

fn operation_verb(op: char) -> &'static str {
    match op {
        '+' => "add",
        '-' => "subtract",
        '*' => "multiply",
        '/' => "divide",
        _ => "calculate",
    }
}

/// The attempt's calculation for reference step `k`: after the calculations that establish
/// the earlier steps' results, the first that uses one of step `k`'s operands (else the first).
fn calculation_at(steps: &[ReferenceStep], k: usize, attempt: &str) -> Option<Computation> {
    let calcs = computations(attempt);
    let earlier: Vec<f64> = steps[..k].iter().filter_map(|s| s.result).collect();
    let operands: Vec<f64> = steps[k]
        .expr
        .as_deref()
        .map(|e| numbers(e).into_iter().map(|f| f.value).collect())
        .unwrap_or_default();
    let after = calcs.iter().rposition(|c| earlier.iter().any(|r| same(*r, c.written))).map_or(0, |i| i + 1);
    let rest = &calcs[after..];
    rest.iter()
        .find(|c| c.operands.iter().any(|o| operands.iter().any(|r| same(*o, *r))))
        .or(rest.first())
        .cloned()
}

/// Lower-case words of four letters or more: what two sentences about the same event share.
fn content_words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 4)
        .map(str::to_lowercase)
        .collect()
}

/// The question's sentence that reference step `k` computes from: the one holding an operand
/// of the step that no earlier step established, else the one sharing the most words with the
/// step. The question's own question (a sentence ending in `?`) is never chosen. The
/// sentence comes back ending in a full stop.
fn question_sentence(question: &str, steps: &[ReferenceStep], k: usize) -> Option<String> {
    let step = &steps[k];
    let earlier: Vec<f64> = steps[..k].iter().filter_map(|s| s.result).collect();
    let operands: Vec<f64> = step
        .expr
        .as_deref()
        .map(|e| {
            numbers(e)
                .into_iter()
                .map(|f| f.value)
                .filter(|v| !earlier.iter().any(|r| same(*r, *v)))
                .collect()
        })
        .unwrap_or_default();
    let words = content_words(&step.text);
    let mut sentences = Vec::new();
    let mut rest = question;
    while !rest.trim().is_empty() {
        let end = rest.find(['.', '?', '!']).map_or(rest.len(), |i| i + 1);
        let sentence = rest[..end].trim();
        rest = &rest[end..];
        if !sentence.is_empty() {
            sentences.push((sentence, content_words(sentence)));
        }
    }
    let mut best: Option<(usize, &str)> = None;
    for (i, (sentence, own)) in sentences.iter().enumerate() {
        if sentence.ends_with('?') {
            continue;
        }
        let holds_operand = numbers(sentence).iter().any(|f| operands.iter().any(|o| same(*o, f.value)));
        // The step's words that this sentence alone uses ("triples"; not "eggs", which
        // every sentence has).
        let shared = own
            .intersection(&words)
            .filter(|w| sentences.iter().enumerate().all(|(j, (_, other))| j == i || !other.contains(*w)))
            .count();
        let score = usize::from(holds_operand) * 100 + shared;
        if score > 0 && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, sentence));
        }
    }
    // Quoted whole, with its full stop (the hint templates add none after it).
    best.map(|(_, s)| {
        let mut s: String = s.chars().take(200).collect();
        if !s.ends_with(['.', '!']) {
            s.push('.');
        }
        s
    })
}

/// Compares each attempt's calculation for reference step `k` with the step's own.
pub(crate) fn check_step(task: &Task, steps: &[ReferenceStep], k: usize, attempts: &[Attempt]) -> StepCheck {
    let Some(step) = steps.get(k) else { return StepCheck::default() };
    let needed = step.expr.as_deref().and_then(|e| {
        let c = computations(&format!("{e} = 0")).into_iter().next()?;
        (c.ops.len() == 1).then(|| c.ops[0])
    });
    let mut check = StepCheck {
        step: k,
        last: k + 1 == steps.len(),
        needed,
        question_quote: question_sentence(task.question(), steps, k),
        ..StepCheck::default()
    };
    let mut others: Vec<(char, usize)> = Vec::new();
    for (i, a) in attempts.iter().enumerate() {
        let Some(c) = calculation_at(steps, k, &a.completion.text) else { continue };
        match (needed, c.ops.as_slice()) {
            (Some(need), [op]) if *op != need => {
                check.wrong_op += 1;
                match others.iter_mut().find(|(o, _)| o == op) {
                    Some((_, n)) => *n += 1,
                    None => others.push((*op, 1)),
                }
                check.wrong_quote.get_or_insert((i, c.quote.clone()));
            }
            (Some(need), [op]) if *op == need && !c.is_right() => {
                check.slipped += 1;
                check.slip.get_or_insert(c);
            }
            _ => {}
        }
    }
    // The most used other operator; on a tie the first seen.
    let most = others.iter().fold(None, |best: Option<(char, usize)>, &(o, n)| match best {
        Some((_, b)) if b >= n => best,
        _ => Some((o, n)),
    });
    check.used = most.map(|(o, _)| o);
    check
}

/// Diagnoses a failed math group.
pub(crate) fn diagnose(task: &Task, attempts: &[Attempt]) -> Diagnosis {
    let n = attempts.len().max(1);
    let feedback: Vec<_> = attempts
        .iter()
        .filter_map(|a| match a.verdict.feedback() {
            Feedback::Math(m) => Some(m),
            Feedback::Code(_) | Feedback::VerifierError { .. } => None,
        })
        .collect();
    let analysis = analyse(task, attempts);
    let counts = Counts::of(attempts, &feedback);
    let (slips, mut evidence) = slip_evidence(attempts);
    let (category, agree, shared_mode) = classify(&counts, slips, &analysis, n);
    if category == FailureCategory::WrongMethod {
        let quoted =
            analysis.check.as_ref().and_then(|c| Some((c.wrong_quote.clone()?, c.wrong_operation(n)?)));
        if let Some(((i, quote), (needed, used))) = quoted {
            let note = format!(
                "step {} needs {}; this attempt does {}",
                analysis.first_wrong.unwrap_or(0) + 1,
                operation_noun(needed),
                operation_noun(used)
            );
            evidence.insert(0, Evidence { attempt: Some(i), quote, note });
        }
    }
    if let Some(k) = analysis.first_wrong {
        if let Some((i, line)) = divergent_line(attempts, task) {
            let note =
                format!("first reference step not reached: step {} of {}", k + 1, analysis.steps.len());
            evidence.push(Evidence { attempt: Some(i), quote: line, note });
        }
    }
    for (i, m) in feedback.iter().enumerate().take(2) {
        if let Some(x) = &m.extracted {
            evidence.push(Evidence { attempt: Some(i), quote: x.clone(), note: "final answer given".into() });
        }
    }
    Diagnosis {
        category,
        shared_mode,
        evidence,
        first_wrong_step: analysis.first_wrong,
        confidence: if category == FailureCategory::Unknown {
            0.1
        } else {
            (agree.min(n) as f32 / n as f32).max(0.3)
        },
    }
}

/// How many attempts show each failure the verifier's feedback names.
#[derive(Debug, Clone, Copy)]
struct Counts {
    /// No final answer, or one that does not parse.
    no_answer: usize,
    /// Stopped by the length limit.
    truncated: usize,
    /// The right magnitude with the wrong sign.
    sign: usize,
    /// Off by a percentage or a power of ten.
    unit: usize,
    /// Several different final answers.
    multiple: usize,
}

impl Counts {
    fn of(attempts: &[Attempt], feedback: &[&mentor_core::MathFeedback]) -> Self {
        let count = |f: &dyn Fn(&mentor_core::MathFeedback) -> bool| feedback.iter().filter(|m| f(m)).count();
        Self {
            no_answer: count(&|m| matches!(m.outcome, MathOutcome::NoAnswer | MathOutcome::Unparseable)),
            truncated: attempts.iter().filter(|a| a.completion.is_truncated()).count(),
            sign: count(&|m| matches!(m.relation, Some(MathRelation::SignFlipped))),
            unit: count(&|m| {
                matches!(m.relation, Some(MathRelation::Percentage) | Some(MathRelation::PowerOfTen { .. }))
            }),
            multiple: count(&|m| m.outcome == MathOutcome::MultipleAnswers),
        }
    }
}

/// How many attempts contain a written calculation that is wrong, and the first such slip of
/// up to three of them as evidence.
fn slip_evidence(attempts: &[Attempt]) -> (usize, Vec<Evidence>) {
    let mut evidence = Vec::new();
    let mut slips = 0;
    for (i, a) in attempts.iter().enumerate() {
        if let Some(s) = arithmetic_slips(&a.completion.text).into_iter().next() {
            slips += 1;
            if evidence.len() < 3 {
                evidence.push(Evidence {
                    attempt: Some(i),
                    quote: s.quote,
                    note: format!("the left side equals {}", format_number(s.correct)),
                });
            }
        }
    }
    (slips, evidence)
}

/// The failure category shared by most of the `n` attempts, how many agree, and the shared
/// failure mode in words: the first that holds of length, final answer, sign, unit, the
/// operation at the first divergent step, written slips, the first step not reached.
fn classify(
    counts: &Counts,
    slips: usize,
    analysis: &MathAnalysis,
    n: usize,
) -> (FailureCategory, usize, String) {
    let Counts { no_answer, truncated, sign, unit, multiple } = *counts;
    if truncated * 2 > n {
        (
            FailureCategory::IncompleteReasoning,
            truncated,
            "the attempts run out of length before giving a final answer".to_string(),
        )
    } else if no_answer * 2 > n {
        if truncated * 2 >= no_answer {
            (
                FailureCategory::IncompleteReasoning,
                truncated,
                "the attempts run out of length before giving a final answer".to_string(),
            )
        } else {
            (
                FailureCategory::NoFinalAnswer,
                no_answer,
                "the attempts give no clearly marked final answer".to_string(),
            )
        }
    } else if multiple * 2 > n {
        (
            FailureCategory::NoFinalAnswer,
            multiple,
            "the attempts state several different final answers".to_string(),
        )
    } else if sign * 2 > n {
        (
            FailureCategory::SignError,
            sign,
            "the attempts reach the right magnitude with the wrong sign".to_string(),
        )
    } else if unit * 2 > n {
        (
            FailureCategory::UnitOrPercentSlip,
            unit,
            "the attempts are off by a unit or percentage factor".to_string(),
        )
    } else if let Some((needed, used)) = analysis.check.as_ref().and_then(|c| c.wrong_operation(n)) {
        let c = analysis.check.as_ref().map_or(0, |c| c.wrong_op);
        let k = analysis.first_wrong.unwrap_or(0);
        (
            FailureCategory::WrongMethod,
            c,
            format!(
                "the attempts {} at step {} of the solution, where it needs to {}",
                operation_verb(used),
                k + 1,
                operation_verb(needed)
            ),
        )
    } else if slips > 0 && (slips * 2 >= n || analysis.first_wrong.is_some()) {
        (
            FailureCategory::ArithmeticSlip,
            slips,
            "the attempts make calculation errors in otherwise reasonable steps".to_string(),
        )
    } else if let Some(k) = analysis.first_wrong {
        (
            FailureCategory::WrongMethod,
            n,
            format!(
                "the attempts go wrong at step {} of the solution: they never establish {}",
                k + 1,
                format_number(analysis.steps[k].result.unwrap_or(0.0))
            ),
        )
    } else {
        (
            FailureCategory::Unknown,
            0,
            "the attempts reach a wrong answer for no reason the rules can locate".to_string(),
        )
    }
}

/// The first line of any attempt that introduces a number found neither in the question nor
/// in the reference solution: where the attempt starts computing something else.
fn divergent_line(attempts: &[Attempt], task: &Task) -> Option<(usize, String)> {
    let known: Vec<f64> = numbers(task.question())
        .into_iter()
        .chain(task.reference_solution().map(numbers).unwrap_or_default())
        .map(|f| f.value)
        .collect();
    attempts.iter().enumerate().find_map(|(i, a)| {
        a.completion.text.lines().find_map(|line| {
            let novel = numbers(line).into_iter().any(|f| !known.iter().any(|k| same(*k, f.value)));
            novel.then(|| (i, line.trim().chars().take(200).collect()))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gsm8k_rationale_splits_into_steps_with_results() {
        let s = reference_steps("Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18 every day.");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].result, Some(9.0));
        assert_eq!(s[1].text, "She makes 9 * 2 = $18 every day.");
        assert_eq!(s[1].result, Some(18.0));
    }

    #[test]
    fn sentences_without_numbers_merge_forward() {
        let s = reference_steps("We factor the polynomial. The roots are 2 and 3. So the sum is 5.");
        assert_eq!(s.len(), 2);
        assert!(s[0].text.starts_with("We factor"));
        assert_eq!(s[1].result, Some(5.0));
    }

    #[test]
    fn the_question_sentence_holds_the_steps_operand_or_its_words() {
        let steps = reference_steps(
            "Ben has 6 * 2 = <<6*2=12>>12 eggs.\nAfter it triples, he has 12 * 3 = <<12*3=36>>36 eggs.",
        );
        assert_eq!(steps[1].expr.as_deref(), Some("12*3"));
        let q = "Ben has 6 baskets of eggs with 2 eggs in each. Then the number of eggs he has triples. How many eggs does Ben have now?";
        // Step 2's operand 3 is not in the question: the sentence sharing "triples" is chosen.
        assert_eq!(
            question_sentence(q, &steps, 1).as_deref(),
            Some("Then the number of eggs he has triples.")
        );
        assert_eq!(
            question_sentence(q, &steps, 0).as_deref(),
            Some("Ben has 6 baskets of eggs with 2 eggs in each.")
        );
        assert_eq!(question_sentence("How many?", &steps, 1), None, "the asked question is never quoted");
    }

    #[test]
    fn the_calculation_at_a_step_follows_the_earlier_steps_results() {
        let steps = reference_steps("A has 3 * 4 = <<3*4=12>>12.\nThen 12 + 5 = <<12+5=17>>17.");
        let c = calculation_at(&steps, 1, "3 * 4 = 12 and 4 * 5 = 20, so 12 * 5 = 60").unwrap();
        assert_eq!((c.lhs.as_str(), c.ops.as_slice()), ("4 * 5", &['*'][..]), "first after step 1 sharing 5");
        assert_eq!(calculation_at(&steps, 1, "nothing here"), None);
    }
}
