//! Reference solutions of HumanEval and MBPP pass at the default limits, through the
//! `mentor verify code` JSONL path; mutated ones fail, naming the test.

use mentor_core::{CodeOutcome, Verifier};
use mentor_verify_code::cli::run_jsonl;
use mentor_verify_code::Format;
use serde_json::Value;

use crate::{code, datasets_dir, humaneval, verifier};

/// Runs dataset records (each with its reference as `completion`) through the CLI's JSONL path
/// at the default limits; returns the lines that did not pass.
fn cli_failures(records: Vec<Value>, format: Format) -> (usize, Vec<String>) {
    let n = records.len();
    let input: String = records.iter().map(|r| format!("{r}\n")).collect();
    let mut out = Vec::new();
    let summary = run_jsonl(input.as_bytes(), &mut out, format, &verifier()).expect("run_jsonl");
    assert_eq!(summary.records, n);
    let failures = String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .filter(|l| !l.contains("\"passed\":true"))
        .map(|l| l.chars().take(600).collect())
        .collect();
    (n, failures)
}

/// The records of a dataset file (JSON Lines, or one JSON array), each with `completion` set to
/// `reference(record)`.
fn records_with_reference(file: &str, reference: impl Fn(&Value) -> String) -> Vec<Value> {
    let path = datasets_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rows: Vec<Value> = match serde_json::from_str(&text) {
        Ok(Value::Array(rows)) => rows,
        _ => text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect(),
    };
    rows.into_iter()
        .map(|mut r| {
            r["completion"] = Value::String(reference(&r));
            r
        })
        .collect()
}

fn field(r: &Value, key: &str) -> String {
    r[key].as_str().unwrap_or_else(|| panic!("no `{key}` in {r}")).to_string()
}

#[test]
fn all_164_humaneval_canonical_solutions_pass_through_the_cli() {
    let records = records_with_reference("humaneval/HumanEval.jsonl", |r| {
        field(r, "prompt") + &field(r, "canonical_solution")
    });
    let (n, failures) = cli_failures(records, Format::HumanEval);
    assert_eq!(n, 164);
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn all_974_full_and_427_sanitized_mbpp_references_pass_through_the_cli() {
    for (file, count) in [("mbpp/mbpp.jsonl", 974), ("mbpp/sanitized-mbpp.json", 427)] {
        let records = records_with_reference(file, |r| field(r, "code"));
        let (n, failures) = cli_failures(records, Format::Mbpp);
        assert_eq!(n, count, "{file}");
        assert!(failures.is_empty(), "{file}: {} failed:\n{}", failures.len(), failures.join("\n"));
    }
}

/// (task, from, to, expected failing test index): an operator flipped or a return changed.
const MUTATIONS: &[(&str, &str, &str, usize)] = &[
    ("HumanEval/0", "distance < threshold", "distance > threshold", 1),
    ("HumanEval/2", "return number % 1.0", "return number % 2.0", 0),
    ("HumanEval/4", "/ len(numbers)\n", "/ (len(numbers) + 1)\n", 0),
    ("HumanEval/13", "return a\n", "return b\n", 0),
    ("HumanEval/23", "return len(string)", "return len(string) - 1", 0),
    ("HumanEval/55", "fib(n - 1) + fib(n - 2)", "fib(n - 1) - fib(n - 2)", 0),
];

#[test]
fn mutated_solutions_fail_naming_the_failing_test() {
    let tasks = humaneval();
    let v = verifier();
    for (id, from, to, index) in MUTATIONS {
        let task = tasks.iter().find(|t| t.id == *id).expect("task");
        let reference = task.reference_solution().expect("reference");
        assert!(reference.contains(from), "{id}: mutation site `{from}` not found");
        let mutated = reference.replacen(from, to, 1);
        let verdict = v.verify(task, &mutated).expect("verdict");
        let c = code(&verdict);
        assert!(!verdict.passed(), "{id}: the mutant passed");
        assert_eq!(verdict.reward(), 0.0);
        assert_eq!(c.outcome, CodeOutcome::WrongAnswer, "{id}: {c:?}");
        let failed = c.failed_test.as_ref().unwrap_or_else(|| panic!("{id}: no failed test: {c:?}"));
        assert_eq!(failed.index, *index, "{id}: {failed:?}");
        assert!(failed.source.contains("assert"), "{id}: {failed:?}");
        assert!(c.tests_passed < c.tests_total, "{id}: {c:?}");
    }
}
