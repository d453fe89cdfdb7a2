//! Rules diagnosis of math failures: compare the attempts' intermediate numbers with the
//! reference solution's steps to find the first step the group got wrong, check written
//! computations for slips, and read the verifier's feedback (no answer, sign, percentage).

use mentor_core::numbers::format_number;
use mentor_core::{Attempt, Diagnosis, Evidence, FailureCategory, Feedback, MathOutcome, MathRelation, Task};

use super::numbers::{arithmetic_slips, numbers, same};

/// One step of a reference solution.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceStep {
    /// The step's text with GSM8K calculator notes (`<<a*b=c>>`) removed.
    pub text: String,
    /// The value the step establishes (the note's result, else the step's last number).
    pub result: Option<f64>,
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
        let (text, note_result) = strip_notes(piece);
        if !pending.is_empty() {
            pending.push(' ');
        }
        pending.push_str(&text);
        let result = note_result.or_else(|| numbers(&text).last().map(|f| f.value));
        if result.is_some() {
            steps.push(ReferenceStep { text: std::mem::take(&mut pending), result });
        }
    }
    if !pending.is_empty() {
        steps.push(ReferenceStep { text: pending, result: None });
    }
    steps
}

/// Removes `<<expr=result>>` notes, returning the clean text and the last note's result.
fn strip_notes(s: &str) -> (String, Option<f64>) {
    let mut out = String::with_capacity(s.len());
    let mut result = None;
    let mut rest = s;
    while let Some(open) = rest.find("<<") {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find(">>") else {
            rest = &rest[open..];
            break;
        };
        let note = &rest[open + 2..open + close];
        if let Some(eq) = note.rfind('=') {
            result = numbers(&note[eq + 1..]).first().map(|f| f.value).or(result);
        }
        rest = &rest[open + close + 2..];
    }
    out.push_str(rest);
    (out.split_whitespace().collect::<Vec<_>>().join(" "), result)
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
    MathAnalysis { steps, first_wrong }
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
    let count = |f: &dyn Fn(&mentor_core::MathFeedback) -> bool| feedback.iter().filter(|m| f(m)).count();
    let no_answer = count(&|m| matches!(m.outcome, MathOutcome::NoAnswer | MathOutcome::Unparseable));
    let truncated = attempts.iter().filter(|a| a.completion.is_truncated()).count();
    let sign = count(&|m| matches!(m.relation, Some(MathRelation::SignFlipped)));
    let unit = count(&|m| {
        matches!(m.relation, Some(MathRelation::Percentage) | Some(MathRelation::PowerOfTen { .. }))
    });
    let multiple = count(&|m| m.outcome == MathOutcome::MultipleAnswers);

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
    let step_note =
        |k: usize| format!("first reference step not reached: step {} of {}", k + 1, analysis.steps.len());

    let (category, agree, shared_mode) = if truncated * 2 > n {
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
    };
    if let Some(k) = analysis.first_wrong {
        if let Some((i, line)) = divergent_line(attempts, task) {
            evidence.push(Evidence { attempt: Some(i), quote: line, note: step_note(k) });
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
}
