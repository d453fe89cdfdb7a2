//! Golden tests on real code failures: canonical HumanEval and MBPP solutions from the shared
//! datasets, mutated by hand (wrong operator, off-by-one, a raised exception, a syntax error,
//! an endless loop), run in the real sandbox, then diagnosed and hinted by the `rules` mentor.
//! What each mutation must produce is known from the mutation itself, not from our output.

use std::sync::OnceLock;
use std::time::Duration;

use mentor_agents::{AgentMentor, Diagnoser, Tutor};
use mentor_core::assets::AssetDir;
use mentor_core::datasets::{load_humaneval, load_mbpp, MbppSplit};
use mentor_core::{
    Attempt, CodeFeedback, CodeOutcome, Completion, Diagnosis, FailureCategory, Feedback, FinishReason, Hint,
    HintLevel, HintSource, Intervention, Mentor, MentorRequest, Task, Verifier,
};
use mentor_verify_code::{CodeVerifier, Limits, Sandbox, SandboxConfig, VerifierConfig};

use crate::{data_dir, guard};

fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        let assets = AssetDir::resolve(|k| std::env::var(k).ok())
            .expect("no asset directory: set MENTOR_HOME or HOME, then run `cargo xtask setup`");
        let config = SandboxConfig::from_assets(&assets);
        assert!(config.runtime.is_file(), "{} is missing: run `cargo xtask setup`", config.runtime.display());
        Sandbox::new(&config).unwrap_or_else(|e| panic!("sandbox: {e}"))
    })
}

/// The default (generous) limits. A judged task takes ~20 ms, but the first runs of a fresh
/// process fault in the runtime's pages, which on a loaded machine with a cold disk took past
/// a 1.5 s limit in CI (a timeout instead of the exception under test).
fn verifier() -> CodeVerifier<'static> {
    CodeVerifier::new(sandbox(), VerifierConfig::default())
}

/// Short limits, only for the endless loop, so it ends quickly.
fn short_verifier() -> CodeVerifier<'static> {
    let limits = Limits {
        cpu_time: Duration::from_millis(1500),
        wall_time: Duration::from_millis(4000),
        memory_bytes: 128 << 20,
        stdout_bytes: 16 << 10,
        stderr_bytes: 16 << 10,
    };
    CodeVerifier::new(sandbox(), VerifierConfig { limits: Some(limits), ..VerifierConfig::default() })
}

fn humaneval(id: &str) -> Task {
    let path = data_dir().join("humaneval/HumanEval.jsonl");
    load_humaneval(&path).unwrap().into_iter().find(|t| t.id == id).unwrap_or_else(|| panic!("no {id}"))
}

fn mbpp(id: &str) -> Task {
    let path = data_dir().join("mbpp/mbpp.jsonl");
    load_mbpp(&path, MbppSplit::All)
        .unwrap()
        .into_iter()
        .find(|t| t.id == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

fn reference(task: &Task) -> String {
    task.reference_solution().expect("the dataset ships a canonical solution").replace("\r\n", "\n")
}

/// The canonical solution with `from` replaced by `to` (exactly once), verified in the sandbox.
fn mutated(task: &Task, from: &str, to: &str) -> Attempt {
    let attempt = mutated_with(&verifier(), task, from, to);
    let outcome = feedback(&attempt).outcome;
    assert!(
        outcome != CodeOutcome::Timeout,
        "the mutation hit the time limit instead of failing on its own: {}",
        attempt.completion.text
    );
    attempt
}

/// [`mutated`] judged by `verifier`, whatever the failure.
fn mutated_with(verifier: &CodeVerifier<'_>, task: &Task, from: &str, to: &str) -> Attempt {
    let reference = reference(task);
    assert_eq!(reference.matches(from).count(), 1, "`{from}` once in {reference}");
    let text = reference.replacen(from, to, 1);
    let verdict = verifier.verify(task, &text).unwrap();
    assert!(!verdict.passed(), "the mutation must fail: {text}");
    Attempt {
        completion: Completion { task_id: task.id.clone(), text, finish_reason: FinishReason::Stop },
        verdict,
    }
}

fn feedback(a: &Attempt) -> &CodeFeedback {
    match a.verdict.feedback() {
        Feedback::Code(c) => c,
        other => panic!("not code feedback: {other:?}"),
    }
}

fn ask(task: &Task, attempts: &[Attempt], level: HintLevel) -> (Diagnosis, Hint, Intervention) {
    let i = AgentMentor::rules(guard())
        .intervene(&MentorRequest { task, attempts, level, previous_hints: &[] })
        .unwrap();
    assert!(i.rejections.is_empty(), "{:?}", i.rejections);
    let d = i.diagnosis.clone().unwrap();
    let h = i.hint.clone().unwrap();
    assert_eq!(h.source, HintSource::Mentor);
    (d, h, i)
}

/// The reference solution is not in the hint beyond the level-3 prefix.
fn no_reference_in(task: &Task, hint: &Hint) {
    let reference = reference(task);
    let body: Vec<&str> = reference.lines().map(str::trim).filter(|l| l.len() >= 8).collect();
    let shown = body.iter().filter(|l| hint.text.contains(*l)).count();
    assert!(shown * 2 <= body.len(), "{shown} of {} reference lines in {}", body.len(), hint.text);
}

#[test]
fn wrong_operator_names_the_failing_test_with_expected_and_actual() {
    // MBPP 14: volume = l * b * h / 2; `* 2` gives 960 instead of 240 on the first test.
    let task = mbpp("mbpp/test/14");
    let attempt = mutated(&task, "/ 2", "* 2");
    let f = feedback(&attempt).failed_test.clone().unwrap();
    assert_eq!((f.index, f.expected.as_deref(), f.actual.as_deref()), (0, Some("240"), Some("960")));
    let (d, h, _) = ask(&task, std::slice::from_ref(&attempt), HintLevel::PLAN);
    assert_eq!(d.category, FailureCategory::WrongOutput, "{d:?}");
    assert!(d.evidence.iter().any(|e| e.quote == "assert find_Volume(10,8,6) == 240"), "{:?}", d.evidence);
    assert!(h.text.contains("240") && h.text.contains("960"), "{}", h.text);
    assert!(h.text.contains(f.input.as_deref().unwrap()), "names the input: {}", h.text);
    let (_, nudge, _) = ask(&task, std::slice::from_ref(&attempt), HintLevel::NUDGE);
    assert!(
        nudge.text.contains("assert find_Volume(10,8,6) == 240"),
        "level 1 names the test: {}",
        nudge.text
    );
    no_reference_in(&task, &h);
}

#[test]
fn wrong_comparison_fails_the_second_humaneval_test() {
    // HumanEval/0: `distance > threshold` is true for the first test's far pairs too, so the
    // first test (True expected) still passes and the second (threshold 0.05, False) fails.
    let task = humaneval("HumanEval/0");
    let attempt = mutated(&task, "distance < threshold", "distance > threshold");
    let f = feedback(&attempt).failed_test.clone().unwrap();
    assert_eq!(f.index, 1, "{f:?}");
    assert!(f.source.contains("0.05) == False"), "{}", f.source);
    let (d, h, _) = ask(&task, std::slice::from_ref(&attempt), HintLevel::PLAN);
    assert_eq!(d.category, FailureCategory::WrongOutput);
    assert!(h.text.contains("False") && h.text.contains("True"), "expected vs actual: {}", h.text);
}

#[test]
fn off_by_one_on_the_empty_string_is_an_edge_case() {
    // HumanEval/23 strlen: `len(string) - 1` returns -1 on '' (the first test).
    let task = humaneval("HumanEval/23");
    let attempt = mutated(&task, "len(string)", "len(string) - 1");
    let f = feedback(&attempt).failed_test.clone().unwrap();
    assert_eq!((f.index, f.expected.as_deref(), f.actual.as_deref()), (0, Some("0"), Some("-1")));
    let (d, h, _) = ask(&task, std::slice::from_ref(&attempt), HintLevel::PLAN);
    assert_eq!(d.category, FailureCategory::EdgeCase, "{d:?}");
    assert!(h.text.contains("''") && h.text.contains("-1"), "{}", h.text);
}

#[test]
fn exception_names_its_type_and_line() {
    // HumanEval/12 without its empty-list guard: max() of an empty sequence on `candidate([])`.
    let task = humaneval("HumanEval/12");
    let attempt = mutated(&task, "    if not strings:\n        return None\n", "");
    let fb = feedback(&attempt);
    let e = fb.exception.clone().unwrap();
    assert_eq!(e.kind, "ValueError");
    let line = e.line.unwrap();
    assert!(e.traceback.iter().any(|l| l.contains("maxlen = max(len(x) for x in strings)")), "{e:?}");
    let (d, h, _) = ask(&task, std::slice::from_ref(&attempt), HintLevel::NUDGE);
    assert_eq!(d.category, FailureCategory::RuntimeException);
    assert!(h.text.contains("ValueError") && h.text.contains(&format!("line {line}")), "{}", h.text);
    let (_, plan, _) = ask(&task, std::slice::from_ref(&attempt), HintLevel::PLAN);
    assert!(plan.text.contains("candidate([]) == None"), "level 2 names the failing test: {}", plan.text);
}

#[test]
fn mbpp_exception_in_the_function_body() {
    // MBPP 14 dividing by (b - 8): ZeroDivisionError on the first test (b = 8).
    let task = mbpp("mbpp/test/14");
    let attempt = mutated(&task, "/ 2", "/ (b - 8)");
    let e = feedback(&attempt).exception.clone().unwrap();
    assert_eq!(e.kind, "ZeroDivisionError");
    let (d, h, _) = ask(&task, std::slice::from_ref(&attempt), HintLevel::NUDGE);
    assert_eq!(d.category, FailureCategory::RuntimeException);
    assert!(h.text.contains("ZeroDivisionError"), "{}", h.text);
    assert!(h.text.contains(&format!("line {}", e.line.unwrap())), "{}", h.text);
}

#[test]
fn syntax_error_is_located() {
    // HumanEval/4 with an unclosed parenthesis.
    let task = humaneval("HumanEval/4");
    let attempt = mutated(&task, "sum(numbers) / len(numbers)\n", "sum(numbers) / len(numbers\n");
    let fb = feedback(&attempt);
    let line = fb.exception.as_ref().and_then(|e| e.line).expect("syntax errors carry their line");
    let (d, h, _) = ask(&task, std::slice::from_ref(&attempt), HintLevel::NUDGE);
    assert_eq!(d.category, FailureCategory::SyntaxError, "{d:?}");
    assert!(h.text.contains(&format!("line {line}")), "{}", h.text);
}

#[test]
fn endless_loop_is_a_timeout() {
    // HumanEval/13 gcd with `a = a % b` only: b never changes, the loop never ends.
    let task = humaneval("HumanEval/13");
    let attempt = mutated_with(&short_verifier(), &task, "a, b = b, a % b", "a = a % b");
    let (d, h, _) = ask(&task, std::slice::from_ref(&attempt), HintLevel::NUDGE);
    assert_eq!(d.category, FailureCategory::Timeout, "{d:?}");
    assert!(h.text.contains("loop"), "{}", h.text);
}

#[test]
fn the_group_majority_decides() {
    // Two wrong-operator attempts and one syntax error on MBPP 14: the wrong output wins.
    let task = mbpp("mbpp/test/14");
    let attempts =
        [mutated(&task, "/ 2", "* 2"), mutated(&task, "/ 2", "/ 3"), mutated(&task, "/ 2)", "/ 2")];
    // The two-line reference has no partial solution to show: level 3 becomes level 2.
    let (d, h, _) = ask(&task, &attempts, HintLevel::PARTIAL_SOLUTION);
    assert_eq!(d.category, FailureCategory::WrongOutput);
    assert!((d.confidence - 2.0 / 3.0).abs() < 1e-6, "{}", d.confidence);
    assert_eq!(h.level, HintLevel::PLAN);
    no_reference_in(&task, &h);
}

#[test]
fn partial_solutions_stay_partial() {
    // HumanEval/0's reference has 7 non-empty lines: level 3 shows the first third (2 lines).
    let task = humaneval("HumanEval/0");
    let attempt = mutated(&task, "distance < threshold", "distance > threshold");
    let (_, h, _) = ask(&task, std::slice::from_ref(&attempt), HintLevel::PARTIAL_SOLUTION);
    assert_eq!(h.level, HintLevel::PARTIAL_SOLUTION);
    let lines: Vec<String> =
        reference(&task).lines().filter(|l| !l.trim().is_empty()).map(String::from).collect();
    assert_eq!(lines.len(), 7);
    assert_eq!(h.solution_prefix.as_deref(), Some(lines[..2].join("\n").as_str()));
    assert!(!h.text.contains(lines[4].trim()), "the comparison line is not shown: {}", h.text);
    no_reference_in(&task, &h);
}

/// A tutor that pastes the reference solution: the guard must refuse every level.
struct LeakyTutor;

impl Tutor for LeakyTutor {
    fn hint(
        &self,
        task: &Task,
        _: &[Attempt],
        _: &Diagnosis,
        level: HintLevel,
        _: &[Hint],
    ) -> mentor_agents::Result<Hint> {
        let text = format!("Here is a solution:\n```python\n{}\n```", reference(task));
        Ok(Hint { level, text, solution_prefix: None, source: HintSource::Mentor })
    }
}

#[test]
fn guard_refuses_the_reference_code_of_real_tasks() {
    for (task, from, to) in [
        (humaneval("HumanEval/0"), "distance < threshold", "distance > threshold"),
        (humaneval("HumanEval/12"), "    if not strings:\n        return None\n", ""),
        (mbpp("mbpp/test/14"), "/ 2", "* 2"),
    ] {
        let attempt = mutated(&task, from, to);
        let m = AgentMentor::new(
            "leaky",
            Box::new(mentor_agents::rules::RulesDiagnoser),
            Box::new(LeakyTutor),
            guard(),
        );
        let attempts = [attempt];
        let i = m
            .intervene(&MentorRequest {
                task: &task,
                attempts: &attempts,
                level: HintLevel::PARTIAL_SOLUTION,
                previous_hints: &[],
            })
            .unwrap();
        assert!(i.hint.is_none(), "{}: {:?}", task.id, i.hint);
        assert_eq!(i.rejections.len(), 3, "levels 3, 2 and 1 refused");
        assert!(i.rejections.iter().all(|r| r.reason.contains("reference")), "{:?}", i.rejections);
        let d = mentor_agents::rules::RulesDiagnoser.diagnose(&task, &attempts).unwrap();
        assert_ne!(d.category, FailureCategory::Unknown);
    }
}
