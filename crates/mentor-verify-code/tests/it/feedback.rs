//! What the feedback says: input/expected/actual, exceptions, syntax errors, partial credit.

use mentor_core::{CodeHarness, CodeOutcome, CodePayload, Payload, Task, TaskMeta, Verifier};
use mentor_verify_code::{CodeVerifier, RewardMode, VerifierConfig};

use crate::{code, humaneval, sandbox, verifier};

fn mbpp(tests: &[&str]) -> Task {
    Task {
        id: "mbpp/x".into(),
        prompt: Vec::new(),
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::Mbpp {
                tests: tests.iter().map(|s| s.to_string()).collect(),
                setup_code: String::new(),
                imports: vec!["import math".into()],
            },
            reference_solution: None,
        }),
        meta: TaskMeta::default(),
    }
}

#[test]
fn wrong_answer_reports_input_expected_actual() {
    let task = mbpp(&["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, b=5) == 4"]);
    let v = verifier().verify(&task, "```python\ndef add(a, b):\n    return a * b\n```").unwrap();
    let c = code(&v);
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer);
    assert_eq!((c.tests_passed, c.tests_total), (1, 3));
    let f = c.failed_test.as_ref().unwrap();
    assert_eq!(f.index, 0);
    assert_eq!(f.source, "assert add(1, 2) == 3");
    assert_eq!(f.input.as_deref(), Some("1, 2"));
    assert_eq!(f.expected.as_deref(), Some("3"));
    assert_eq!(f.actual.as_deref(), Some("2"));
}

#[test]
fn failing_input_is_the_tests_own_argument_text() {
    // Non-ASCII text before and inside the arguments (AST offsets count UTF-8 bytes), a keyword
    // argument, and a call spread over lines in a multi-statement test.
    let task =
        mbpp(&["assert rep('é', n=2) == 'éé'", "x = 'ü'\nassert rep(x + 'ß',\n           n=1) == 'üß!'"]);
    let v = verifier().verify(&task, "def rep(s, n):\n    return s * n + ('!' if n == 2 else '')").unwrap();
    let f = code(&v).failed_test.clone().unwrap();
    assert_eq!((f.index, f.input.as_deref()), (0, Some("'é', n=2")));
    assert_eq!(f.actual.as_deref(), Some("'éé!'"));
    let task = humaneval_task(
        "def check(candidate):\n    assert candidate(\n        'ßß', n=3\n    ) == 'ß' * 6\n    assert candidate('a', n=1) == 'a'\n",
    );
    let v = verifier().verify(&task, "    return s * 2\n").unwrap();
    let f = code(&v).failed_test.clone().unwrap_or_else(|| panic!("{:?}", code(&v)));
    assert_eq!((f.index, f.input.as_deref()), (0, Some("'ßß', n=3")));
    assert_eq!((f.expected.as_deref(), f.actual.as_deref()), (Some("'ßßßßßß'"), Some("'ßßßß'")));
}

fn humaneval_task(test: &str) -> Task {
    Task {
        id: "he/rep".into(),
        prompt: Vec::new(),
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::HumanEval {
                prompt: "def rep(s, n):\n".into(),
                test: test.into(),
                entry_point: "rep".into(),
            },
            reference_solution: None,
        }),
        meta: TaskMeta::default(),
    }
}

#[test]
fn partial_credit_is_opt_in() {
    let task = mbpp(&[
        "assert add(1, 2) == 3",
        "assert add(2, 2) == 4",
        "assert add(0, 0) == 0",
        "assert add(3, 1) == 4",
    ]);
    let wrong = "def add(a, b):\n    return a * b\n";
    let binary = verifier().verify(&task, wrong).unwrap();
    assert_eq!(binary.reward(), 0.0);
    let partial = CodeVerifier::new(
        sandbox(),
        VerifierConfig { reward: RewardMode::FractionPassed, ..Default::default() },
    );
    let v = partial.verify(&task, wrong).unwrap();
    assert_eq!(v.reward(), 0.5);
    assert!(!v.passed());
}

#[test]
fn exception_in_a_test_names_type_message_line_and_frames() {
    let task = mbpp(&["assert ratio(4, 2) == 2", "assert ratio(1, 0) == 0"]);
    let program = "def ratio(a, b):\n    q = a / b\n    return q\n";
    let v = verifier().verify(&task, program).unwrap();
    let c = code(&v);
    assert_eq!(c.outcome, CodeOutcome::RuntimeError);
    assert_eq!(c.tests_passed, 1);
    assert_eq!(c.failed_test.as_ref().unwrap().index, 1);
    let e = c.exception.as_ref().unwrap();
    assert_eq!(e.kind, "ZeroDivisionError");
    assert_eq!(e.message, "division by zero");
    assert_eq!(e.line, Some(2));
    assert!(e.traceback.iter().any(|l| l.contains("q = a / b")), "{:?}", e.traceback);
}

#[test]
fn syntax_error_has_its_line() {
    let task = mbpp(&["assert f() == 1"]);
    let v = verifier().verify(&task, "def f():\n    return (1\n").unwrap();
    let c = code(&v);
    assert_eq!(c.outcome, CodeOutcome::SyntaxError);
    let e = c.exception.as_ref().unwrap();
    assert_eq!(e.kind, "SyntaxError");
    assert_eq!(e.line, Some(2));
}

#[test]
fn no_code_and_function_body_completions() {
    let tasks = humaneval();
    let task = &tasks[23]; // strlen
    let v = verifier().verify(task, "   \n").unwrap();
    assert_eq!(code(&v).outcome, CodeOutcome::NoCode);
    // A body only, a fenced whole function, and a body that lost its first indentation.
    for completion in [
        "    return len(string)\n",
        "Sure:\n```python\ndef strlen(string: str) -> int:\n    return len(string)\n```\nDone.",
        "return len(string)\n",
    ] {
        let v = verifier().verify(task, completion).unwrap();
        assert!(v.passed(), "{completion:?}: {:?}", code(&v));
    }
}

#[test]
fn nested_asserts_in_loops_count_as_one_test_and_are_checked() {
    let task = &humaneval()[0];
    let Payload::Code(CodePayload { harness: CodeHarness::HumanEval { prompt, entry_point, .. }, .. }) =
        &task.payload
    else {
        panic!("humaneval task")
    };
    let looped = Task {
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::HumanEval {
                prompt: prompt.clone(),
                test: "def check(candidate):\n    for t in [0.5, 0.3]:\n        assert candidate([1.0, 1.2], t) == (t > 0.2)\n    assert candidate([1.0], 1.0) == False\n".into(),
                entry_point: entry_point.clone(),
            },
            reference_solution: None,
        }),
        ..task.clone()
    };
    let ok = verifier().verify(&looped, task.reference_solution().unwrap()).unwrap();
    assert!(ok.passed(), "{:?}", code(&ok));
    assert_eq!(code(&ok).tests_total, 2);
    let bad = verifier().verify(&looped, "    return False\n").unwrap();
    let c = code(&bad);
    assert_eq!(c.outcome, CodeOutcome::WrongAnswer);
    assert_eq!(c.failed_test.as_ref().unwrap().index, 0);
    assert!(c.failed_test.as_ref().unwrap().source.contains("for t in"));
}
