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
    let d = i.diagnosis.unwrap();
    assert_eq!(d.category, FailureCategory::ArithmeticSlip, "{d:?}");
    assert_eq!(d.first_wrong_step, Some(1));
    assert!(d.evidence.iter().any(|e| e.quote == "9 * 2 = 16"), "{:?}", d.evidence);
    let hint = i.hint.unwrap().text;
    // It points at the wrong result of the last calculation. The product itself (`9 * 2`,
    // which the checker equates with the gold 18) would be redacted by the guard, so the
    // tutor does not write it: nothing is blanked, and the hint still says where and what.
    assert!(i.redactions.is_empty(), "{:?}", i.redactions);
    assert!(hint.contains("last calculation") && hint.contains("not 16"), "{hint}");
    assert!(!hint.contains("9 * 2") && !hint.contains("9*2"), "the product is the answer: {hint}");
}

/// A two-step problem of the generated arithmetic family, with its GSM8K-style reference.
fn oranges() -> Task {
    let mut task = Task::math(
        "arith/0/2/12",
        "Tom has 9 crates of oranges with 8 oranges in each. Then he gives away 24 oranges. How many oranges does Tom have now?",
        "48",
    );
    if let mentor_core::Payload::Math(m) = &mut task.payload {
        m.solution = Some(
            "Tom has 9 * 8 = <<9*8=72>>72 oranges.\nAfter giving away 24, he has 72 - 24 = <<72-24=48>>48 oranges.\n#### 48"
                .into(),
        );
    }
    task
}

#[test]
fn another_operation_at_the_wrong_step_is_named_with_the_question_sentence() {
    let task = oranges();
    let attempts = judged(
        &task,
        &[
            "Tom has 9 * 8 = 72 oranges.\nHe gives away 24 oranges, so he has 72 + 24 = 96 oranges.\nThe final answer is \\boxed{96}.",
            "Tom has 9 * 8 = 72 oranges.\nThe number of oranges he has doubles, so he has 72 + 24 = 106 oranges.\nThe final answer is \\boxed{106}.",
            "Tom has 9 * 8 = 72 oranges.\nAfter it doubles, he has 72 * 2 = 144 oranges.\nThe final answer is \\boxed{144}.",
            "Tom has 9 * 8 = 72 oranges.\nHe has 72 + 24 = 96 oranges.\nThe final answer is \\boxed{96}.",
        ],
        FinishReason::Stop,
    );
    let i = ask(&task, &attempts, HintLevel::NUDGE);
    let d = i.diagnosis.unwrap();
    assert_eq!(d.category, FailureCategory::WrongMethod, "{d:?}");
    assert_eq!(d.first_wrong_step, Some(1));
    assert_eq!(d.evidence[0].quote, "72 + 24 = 96", "{:?}", d.evidence);
    assert!(
        d.shared_mode.contains("add at step 2") && d.shared_mode.contains("subtract"),
        "{}",
        d.shared_mode
    );
    let hint = i.hint.unwrap().text;
    assert_eq!(
        hint,
        "Step 2 needs a subtraction, not an addition: the question says \"Then he gives away 24 oranges.\" Redo that step."
    );
    assert!(i.redactions.is_empty() && i.rejections.is_empty());
    // Level 2: the steps that are right, then the operation; never the last step's result.
    let h2 = ask(&task, &attempts, HintLevel::PLAN).hint.unwrap().text;
    assert!(
        h2.starts_with("These steps are right: Tom has 9 * 8 = 72 oranges. Step 2 needs a subtraction"),
        "{h2}"
    );
    assert!(!h2.contains("48") && !h2.contains("72 - 24"), "{h2}");
}

#[test]
fn a_slip_before_the_last_step_is_quoted_and_one_in_it_is_not() {
    let task = oranges();
    let early = judged(
        &task,
        &[
            "Tom has 9 * 8 = 63 oranges.\nHe has 63 - 24 = 39 oranges.\n\\boxed{39}",
            "Tom has 9 * 8 = 63 oranges.\nHe has 63 - 24 = 39 oranges.\n\\boxed{39}",
        ],
        FinishReason::Stop,
    );
    let i = ask(&task, &early, HintLevel::NUDGE);
    assert_eq!(i.diagnosis.as_ref().unwrap().category, FailureCategory::ArithmeticSlip);
    assert_eq!(
        i.hint.unwrap().text,
        "Your approach looks right, but 9 * 8 is not 63. Recompute it and use the corrected value in the next steps."
    );
    let late = judged(
        &task,
        &[
            "Tom has 9 * 8 = 72 oranges.\nHe has 72 - 24 = 58 oranges.\n\\boxed{58}",
            "Tom has 9 * 8 = 72 oranges.\nHe has 72 - 24 = 38 oranges.\n\\boxed{38}",
        ],
        FinishReason::Stop,
    );
    let i = ask(&task, &late, HintLevel::NUDGE);
    let d = i.diagnosis.unwrap();
    assert_eq!((d.category, d.first_wrong_step), (FailureCategory::ArithmeticSlip, Some(1)));
    let h1 = i.hint.unwrap().text;
    assert_eq!(
        h1,
        "Your steps are set up right, but the result of your last calculation is wrong: it is not 58. Do that calculation again, carefully."
    );
    let h2 = ask(&task, &late, HintLevel::PLAN).hint.unwrap().text;
    assert_eq!(
        h2,
        "Recompute carefully. These steps are right: Tom has 9 * 8 = 72 oranges. Only the last calculation is wrong: its result is not 58. Do it again, carefully."
    );
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
