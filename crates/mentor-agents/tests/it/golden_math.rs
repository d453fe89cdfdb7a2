use mentor_agents::{Refinement, StaticHints};
use mentor_core::datasets::Dataset;
use mentor_core::{FailureCategory, FinishReason, HintLevel, HintSource, Mentor, MentorRequest, Task};

use crate::{data_dir, guard, judged, mentor};

fn janet() -> Task {
    let tasks = Dataset::Gsm8k.load_from_dir(&data_dir()).unwrap();
    let t = tasks.into_iter().next().unwrap();
    assert_eq!(t.reference_answer(), Some("18"));
    t
}

fn ask(task: &Task, attempts: &[mentor_core::Attempt], level: HintLevel) -> mentor_core::Intervention {
    mentor().intervene(&MentorRequest { task, attempts, level, previous_hints: &[] }).unwrap()
}

#[test]
fn forgotten_step_is_located_and_hinted_without_the_answer() {
    let task = janet();
    let attempts = judged(
        &task,
        &[
            "Janet has 16 eggs. She eats 3, so 16 - 3 = 13 eggs remain. She sells them for $2 each: 13 * 2 = 26. The answer is \\boxed{26}.",
            "16 - 3 = 13 eggs.\n13 x 2 = 26 dollars.\n#### 26",
        ],
        FinishReason::Stop,
    );
    assert!(attempts.iter().all(|a| !a.verdict.passed()));
    let i = ask(&task, &attempts, HintLevel::PLAN);
    let d = i.diagnosis.unwrap();
    assert_eq!(d.category, FailureCategory::WrongMethod, "{d:?}");
    assert_eq!(d.first_wrong_step, Some(0), "the 9 eggs of step 1 are never reached");
    assert!(d.evidence.iter().any(|e| e.quote.contains("13")), "{:?}", d.evidence);
    let hint = i.hint.unwrap();
    assert_eq!(hint.source, HintSource::Mentor);
    assert!(hint.text.contains("16 - 3 - 4 = 9"), "level 2 names the missed step: {}", hint.text);
    assert!(!hint.text.contains("18"), "{}", hint.text);

    let i3 = ask(&task, &attempts, HintLevel::PARTIAL_SOLUTION);
    let h3 = i3.hint.unwrap();
    assert_eq!(h3.level, HintLevel::PARTIAL_SOLUTION);
    let prefix = h3.solution_prefix.unwrap();
    assert_eq!(
        prefix, "Janet sells 16 - 3 - 4 = 9 duck eggs a day.",
        "steps up to the first wrong one, never the last"
    );
    assert!(!h3.text.contains("18"));
}

#[test]
fn wrong_multiplication_is_an_arithmetic_slip_with_the_quote() {
    let task = janet();
    let attempts = judged(
        &task,
        &[
            "16 - 3 - 4 = 9 eggs are left. 9 * 2 = 16 dollars.\nThe answer is \\boxed{16}",
            "She sells 16 - 3 - 4 = 9 eggs. 9 * 2 = 20, so \\boxed{20}.",
        ],
        FinishReason::Stop,
    );
    let i = ask(&task, &attempts, HintLevel::NUDGE);
    assert!(!i.redactions.is_empty(), "the redaction of `9 * 2` is on record: {i:?}");
    let d = i.diagnosis.unwrap();
    assert_eq!(d.category, FailureCategory::ArithmeticSlip, "{d:?}");
    assert_eq!(d.first_wrong_step, Some(1));
    assert!(d.evidence.iter().any(|e| e.quote == "9 * 2 = 16"), "{:?}", d.evidence);
    let hint = i.hint.unwrap().text;
    // It points at the wrong result; the product itself (`9 * 2`, which the checker equates
    // with the gold 18) is redacted, as `9*2` always was: the guard shows no span that
    // evaluates to the answer.
    assert!(hint.contains("= 16"), "level 1 points at the wrong computation: {hint}");
    assert!(!hint.contains("9 * 2") && !hint.contains("9*2"), "the product is the answer: {hint}");
}

#[test]
fn truncated_attempts_are_incomplete_reasoning() {
    let task = janet();
    let attempts = judged(
        &task,
        &["Janet's ducks lay 16 eggs per day. First, we", "Let us think. 16 eggs, she eats"],
        FinishReason::Length,
    );
    let d = ask(&task, &attempts, HintLevel::NUDGE).diagnosis.unwrap();
    assert_eq!(d.category, FailureCategory::IncompleteReasoning);
}

#[test]
fn sign_flip_on_a_math500_problem() {
    let tasks = Dataset::Math500.load_from_dir(&data_dir()).unwrap();
    let task = tasks
        .iter()
        .find(|t| t.reference_answer().and_then(|a| a.parse::<i64>().ok()).is_some_and(|v| v > 1))
        .unwrap();
    let gold: i64 = task.reference_answer().unwrap().parse().unwrap();
    let wrong = format!("After simplifying, the result is \\boxed{{{}}}.", -gold);
    let attempts = judged(task, &[&wrong, &wrong], FinishReason::Stop);
    let i = ask(task, &attempts, HintLevel::NUDGE);
    assert_eq!(i.diagnosis.unwrap().category, FailureCategory::SignError);
    assert!(i.hint.unwrap().text.to_lowercase().contains("sign"));
}

#[test]
fn every_gsm8k_level_hint_passes_the_guard_without_leaking() {
    // Real problems, a generic wrong attempt, every level: hints exist and never state the answer.
    let tasks = Dataset::Gsm8k.load_from_dir(&data_dir()).unwrap();
    let cfg = mentor_verify_math::Config::default();
    for task in tasks.iter().take(40) {
        let attempts = judged(task, &["I think the answer is \\boxed{123456789}."], FinishReason::Stop);
        for level in [HintLevel::NUDGE, HintLevel::PLAN, HintLevel::PARTIAL_SOLUTION] {
            let i = ask(task, &attempts, level);
            let Some(h) = i.hint else { continue };
            let gold = task.reference_answer().unwrap();
            for text in [Some(h.text.as_str()), h.solution_prefix.as_deref()].into_iter().flatten() {
                assert!(!mentor_verify_math::check(gold, text, &cfg).passed(), "{}: {text}", task.id);
                for token in text.split_whitespace() {
                    let token = token.trim_end_matches(['.', ',', ';', ':']);
                    assert!(
                        !mentor_verify_math::equivalent(gold, token, &cfg),
                        "{}: `{token}` leaks {gold} in {text}",
                        task.id
                    );
                }
            }
        }
    }
}

#[test]
fn static_hints_are_generic_deterministic_and_vary() {
    let task = janet();
    let attempts = judged(&task, &["\\boxed{1}"], FinishReason::Stop);
    let s = StaticHints::new(7);
    let a = s
        .intervene(&MentorRequest {
            task: &task,
            attempts: &attempts,
            level: HintLevel::NUDGE,
            previous_hints: &[],
        })
        .unwrap();
    let b = s
        .intervene(&MentorRequest {
            task: &task,
            attempts: &attempts,
            level: HintLevel::NUDGE,
            previous_hints: &[],
        })
        .unwrap();
    assert_eq!(a, b, "same seed and request, same hint");
    assert!(a.diagnosis.is_none(), "no diagnosis in the static baseline");
    let first = a.hint.unwrap();
    assert_eq!(first.source, HintSource::Static);
    let c = s
        .intervene(&MentorRequest {
            task: &task,
            attempts: &attempts,
            level: HintLevel::PLAN,
            previous_hints: std::slice::from_ref(&first),
        })
        .unwrap();
    assert_ne!(c.hint.unwrap().text, first.text, "a retry gets another hint");
}

#[test]
fn refinement_shows_the_answer_and_feedback_but_not_the_gold() {
    let task = janet();
    let attempts =
        judged(&task, &["16 - 3 - 4 = 9. 9 * 2 = 18? No: 9 * 3 = 27. \\boxed{27}"], FinishReason::Stop);
    let r = Refinement::new(guard(), 400);
    let i = r
        .intervene(&MentorRequest {
            task: &task,
            attempts: &attempts,
            level: HintLevel::NUDGE,
            previous_hints: &[],
        })
        .unwrap();
    let h = i.hint.clone().unwrap();
    assert_eq!(h.source, HintSource::Refinement);
    assert!(h.text.contains("`27` is incorrect"), "{}", h.text);
    assert!(h.text.contains("9 * 3 = 27"));
    assert!(!h.text.contains("18"), "the right value inside the attempt is redacted: {}", h.text);
    // The guard's outcome is on record: shown with a redaction, nothing rejected.
    assert!(!i.redactions.is_empty() && i.rejections.is_empty(), "{:?} {:?}", i.redactions, i.rejections);
}
