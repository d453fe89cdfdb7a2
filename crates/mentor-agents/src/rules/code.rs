//! Rules diagnosis of code failures from the sandbox's structured feedback.

use mentor_core::{Attempt, CodeFeedback, CodeOutcome, Diagnosis, Evidence, FailureCategory, Feedback};

/// Diagnoses a failed code group: the most common outcome decides the category; evidence is
/// the failing test with input/expected/actual, or the exception with its line.
pub(crate) fn diagnose(attempts: &[Attempt]) -> Diagnosis {
    let fbs: Vec<(usize, &CodeFeedback)> = attempts
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a.verdict.feedback() {
            Feedback::Code(c) => Some((i, c)),
            Feedback::Math(_) | Feedback::VerifierError { .. } => None,
        })
        .collect();
    let n = attempts.len().max(1);
    let mut tally: Vec<(FailureCategory, usize)> = Vec::new();
    for (_, f) in &fbs {
        let c = category_of(f);
        match tally.iter_mut().find(|(k, _)| *k == c) {
            Some((_, n)) => *n += 1,
            None => tally.push((c, 1)),
        }
    }
    // Most common; ties go to the first seen.
    let (category, agree) = tally
        .iter()
        .copied()
        .fold(None::<(FailureCategory, usize)>, |best, cur| match best {
            Some(b) if b.1 >= cur.1 => Some(b),
            _ => Some(cur),
        })
        .unwrap_or((FailureCategory::Unknown, 0));
    let mut evidence = Vec::new();
    for (i, f) in fbs.iter().filter(|(_, f)| category_of(f) == category).take(3) {
        if let Some(t) = &f.failed_test {
            let mut note = format!("test {} fails", t.index + 1);
            if let Some(e) = &t.expected {
                note.push_str(&format!("; expected {e}"));
            }
            if let Some(a) = &t.actual {
                note.push_str(&format!(", got {a}"));
            }
            evidence.push(Evidence { attempt: Some(*i), quote: t.source.clone(), note });
        } else if let Some(e) = &f.exception {
            let quote = e.traceback.last().cloned().unwrap_or_else(|| format!("{}: {}", e.kind, e.message));
            let note = match e.line {
                Some(l) => format!("{}: {} at line {l}", e.kind, e.message),
                None => format!("{}: {}", e.kind, e.message),
            };
            evidence.push(Evidence { attempt: Some(*i), quote, note });
        } else if let Some(d) = &f.detail {
            evidence.push(Evidence { attempt: Some(*i), quote: d.clone(), note: format!("{:?}", f.outcome) });
        }
    }
    let shared_mode = match category {
        FailureCategory::SyntaxError => "the code does not compile".to_string(),
        FailureCategory::RuntimeException => {
            let kind = fbs.iter().find_map(|(_, f)| f.exception.as_ref().map(|e| e.kind.clone()));
            format!("the code raises {}", kind.unwrap_or_else(|| "an exception".into()))
        }
        FailureCategory::WrongOutput => "the code returns wrong results on a test".to_string(),
        FailureCategory::EdgeCase => {
            "the code mishandles an edge case (empty, zero, negative or boundary input)".to_string()
        }
        FailureCategory::Timeout => "the code does not finish in time".to_string(),
        FailureCategory::ResourceExhaustion => "the code exhausts memory or output".to_string(),
        FailureCategory::NoFinalAnswer => "no usable code, or code that defeats the test harness".to_string(),
        _ => "the failure could not be classified".to_string(),
    };
    Diagnosis {
        category,
        shared_mode,
        evidence,
        first_wrong_step: None,
        confidence: if category == FailureCategory::Unknown { 0.1 } else { agree as f32 / n as f32 },
    }
}

/// The category a single feedback points to.
pub(crate) fn category_of(f: &CodeFeedback) -> FailureCategory {
    match f.outcome {
        CodeOutcome::SyntaxError => FailureCategory::SyntaxError,
        CodeOutcome::RuntimeError => FailureCategory::RuntimeException,
        CodeOutcome::WrongAnswer => {
            let input = f.failed_test.as_ref().map(|t| t.input.clone().unwrap_or_else(|| t.source.clone()));
            if input.as_deref().is_some_and(is_edge_input) {
                FailureCategory::EdgeCase
            } else {
                FailureCategory::WrongOutput
            }
        }
        CodeOutcome::Timeout => FailureCategory::Timeout,
        CodeOutcome::MemoryLimit | CodeOutcome::OutputLimit => FailureCategory::ResourceExhaustion,
        CodeOutcome::NoCode | CodeOutcome::Tampered => FailureCategory::NoFinalAnswer,
        _ => FailureCategory::Unknown,
    }
}

/// Empty collections and strings, zero, negatives: inputs where off-by-one and missing-case
/// bugs show.
fn is_edge_input(input: &str) -> bool {
    let s: String = input.chars().filter(|c| !c.is_whitespace()).collect();
    ["[]", "()", "{}", "\"\"", "''", "(0)", "(0,", ",0)", ",0,", "[0]", "(-", ",-", "[-"]
        .iter()
        .any(|p| s.contains(p))
        || s.is_empty()
        || s == "0"
        || s.starts_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_inputs() {
        assert!(is_edge_input("candidate([])"));
        assert!(is_edge_input("f(0, 5)"));
        assert!(is_edge_input("f(3, -1)"));
        assert!(is_edge_input(""));
        assert!(!is_edge_input("f([1, 2, 3], 4)"));
    }
}
