//! Real reference solutions: every MATH-500 and AIME 2024 reference solution, and every GSM8K
//! test rationale followed by its `#### answer` line (the loader keeps the rationale only), is
//! judged correct against its own gold answer through the `Verifier`; every GSM8K rationale
//! followed by `#### n+1` is judged wrong. (AMC 2023 ships no solutions.)
//!
//! The data directory is `$MENTOR_DATASETS` when set, else the `shared/datasets` folder beside
//! the workspace, else the installed assets (`cargo xtask datasets`).
//!
//! One reference solution words its answer as a bound ([`WORDED_AS_A_BOUND`]); a bound is not a
//! value (see `src/qualifiers.rs`), so it is refused by design, and the test checks that it is
//! refused for that reason and for no other.

use std::path::PathBuf;

use mentor_core::datasets::Dataset;
use mentor_core::{Feedback, MathOutcome, Task, Verifier};
use mentor_verify_math::MathVerifier;

fn data_dir() -> PathBuf {
    mentor_core::datasets_dir!()
}

fn load(set: Dataset) -> Vec<Task> {
    set.load_from_dir(&data_dir()).unwrap_or_else(|e| panic!("loading {}: {e}", set.name()))
}

/// Reference solutions that state their answer as a bound, with the qualifier: "Zach can have
/// at most $\boxed{2}$ pencils left over" answers "the greatest number of pencils" but, read
/// without the question, is the hedge "at most 2".
const WORDED_AS_A_BOUND: &[(&str, &str)] = &[("test/number_theory/612.json", "'at most'")];

#[test]
fn reference_solutions_are_judged_correct() {
    let verifier = MathVerifier::default();
    let mut total = 0;
    let mut wrong = Vec::new();
    for set in [Dataset::Gsm8k, Dataset::Math500, Dataset::Aime2024] {
        let tasks: Vec<Task> = load(set).into_iter().filter(|t| t.reference_solution().is_some()).collect();
        let completions: Vec<String> = tasks
            .iter()
            .map(|t| {
                let solution = t.reference_solution().unwrap_or("");
                match set {
                    Dataset::Gsm8k => format!("{solution}\n#### {}", t.reference_answer().unwrap_or("")),
                    _ => solution.to_string(),
                }
            })
            .collect();
        let items: Vec<(&Task, &str)> =
            tasks.iter().zip(&completions).map(|(t, c)| (t, c.as_str())).collect();
        assert!(!items.is_empty(), "{} has no reference solutions", set.name());
        for ((task, _), verdict) in items.iter().zip(verifier.verify_batch(&items)) {
            total += 1;
            let verdict = verdict.expect("math tasks are supported");
            if let Some((_, phrase)) = WORDED_AS_A_BOUND.iter().find(|(id, _)| *id == task.id) {
                let Feedback::Math(f) = verdict.feedback() else { panic!("math feedback") };
                let detail = f.detail.as_deref().unwrap_or("");
                assert!(
                    f.outcome == MathOutcome::NoAnswer && detail.contains(phrase),
                    "{}: expected a refusal for {phrase}, got {f:?}",
                    task.id
                );
                continue;
            }
            if !verdict.passed() {
                wrong.push(format!(
                    "{}: gold {:?}: {:?}",
                    task.id,
                    task.reference_answer(),
                    verdict.feedback()
                ));
            }
        }
    }
    assert!(total > 1800, "expected about 1850 reference solutions, found {total}");
    assert!(
        wrong.is_empty(),
        "{} of {total} reference solutions judged wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn gsm8k_solutions_with_a_changed_final_answer_are_judged_wrong() {
    let verifier = MathVerifier::default();
    let tasks = load(Dataset::Gsm8k);
    let mut checked = 0;
    for task in &tasks {
        let (Some(steps), Some(gold)) = (task.reference_solution(), task.reference_answer()) else {
            continue;
        };
        let Ok(n) = gold.replace(',', "").trim().parse::<i64>() else { continue };
        let altered = format!("{steps}\n#### {}", n + 1);
        let verdict = verifier.verify(task, &altered).expect("math tasks are supported");
        assert!(!verdict.passed(), "{}: n+1 accepted: {:?}", task.id, verdict.feedback());
        checked += 1;
    }
    assert!(checked > 1000, "only {checked} GSM8K solutions had an integer answer");
}
