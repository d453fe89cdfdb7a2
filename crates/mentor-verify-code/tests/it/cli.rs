//! The JSONL contract of `mentor verify code`.

use mentor_verify_code::cli::run_jsonl;
use mentor_verify_code::Format;
use serde_json::Value;

use crate::{humaneval, verifier};

fn run(input: &str, format: Format) -> (Vec<Value>, mentor_verify_code::cli::Summary) {
    let mut out = Vec::new();
    let summary = run_jsonl(input.as_bytes(), &mut out, format, &verifier()).unwrap();
    let lines = String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (lines, summary)
}

#[test]
fn humaneval_records_in_input_order_with_errors_inline() {
    let tasks = humaneval();
    let raw: Vec<Value> = std::fs::read_to_string(crate::datasets_dir().join("humaneval/HumanEval.jsonl"))
        .unwrap()
        .lines()
        .take(3)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut input = String::new();
    for (i, r) in raw.iter().enumerate() {
        let mut r = r.clone();
        let completion = if i == 2 {
            "    return 0.0\n".to_string()
        } else {
            tasks[i].reference_solution().unwrap().to_string()
        };
        r["completion"] = Value::String(completion);
        input.push_str(&r.to_string());
        input.push('\n');
        if i == 0 {
            input.push_str("{\"task_id\": \"broken\", \"completion\": \"x\"}\n\n");
        }
    }
    let (lines, summary) = run(&input, Format::HumanEval);
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["id"], "HumanEval/0");
    assert_eq!(lines[0]["passed"], true);
    assert_eq!(lines[0]["reward"], 1.0);
    assert_eq!(lines[0]["feedback"]["outcome"], "passed");
    assert_eq!(lines[1]["id"], "broken");
    assert!(lines[1]["error"].as_str().unwrap().contains("missing field `entry_point`"), "{}", lines[1]);
    assert_eq!(lines[2]["id"], "HumanEval/1");
    assert_eq!(lines[2]["passed"], true);
    assert_eq!(lines[3]["id"], "HumanEval/2");
    assert_eq!(lines[3]["passed"], false);
    assert_eq!(lines[3]["feedback"]["outcome"], "wrong_answer");
    assert_eq!(lines[3]["feedback"]["failed_test"]["expected"], "0.5");
    assert_eq!((summary.records, summary.passed, summary.failed, summary.errors), (4, 2, 1, 1));
    assert_eq!(summary.outcomes.get("wrong_answer"), Some(&1));
}

#[test]
fn mbpp_and_stdio_records() {
    let mbpp = r#"{"task_id": 11, "id": "mine-1", "test_list": ["assert sq(3) == 9"], "test_setup_code": "", "completion": "```python\ndef sq(x):\n    return x * x\n```"}
{"task_id": 12, "test_list": ["assert sq(3) == 9"], "completion": "def sq(x): return x + x"}
not json
"#;
    let (lines, summary) = run(mbpp, Format::Mbpp);
    assert_eq!(lines.len(), 3);
    assert_eq!((lines[0]["id"].as_str(), lines[0]["passed"].as_bool()), (Some("mine-1"), Some(true)));
    assert_eq!((lines[1]["id"].as_i64(), lines[1]["passed"].as_bool()), (Some(12), Some(false)));
    assert_eq!(lines[1]["feedback"]["failed_test"]["actual"], "6");
    assert!(lines[2]["id"].is_null() && lines[2]["error"].as_str().unwrap().contains("invalid JSON"));
    assert_eq!(summary.errors, 1);
    let stdio = r#"{"id": "s1", "completion": "print(int(input()) * 2)", "tests": [{"input": "2\n", "output": "4\n"}, {"input": "5", "output": "10"}]}
{"id": "s2", "completion": "print(1)", "tests": [{"input": "", "output": "2"}]}
"#;
    let (lines, summary) = run(stdio, Format::Stdio);
    assert_eq!(lines[0]["passed"], true);
    assert_eq!(lines[0]["feedback"]["tests_passed"], 2);
    assert_eq!(lines[1]["passed"], false);
    assert_eq!(lines[1]["feedback"]["failed_test"]["actual"], "1\n");
    assert_eq!((summary.passed, summary.failed), (1, 1));
}

#[test]
fn the_issue_32_routes_get_no_reward_through_the_cli() {
    // The `mentor verify code` contract on HumanEval records: the DEBUG_SAVEALL frame route on
    // the first five tasks, and redefined prompt helpers on HumanEval/32, /38 and /50.
    let raw: Vec<Value> = std::fs::read_to_string(crate::datasets_dir().join("humaneval/HumanEval.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let saveall = format!("{}{}", crate::attacks::SAVEALL_ROUTE, crate::attacks::ANY);
    let helpers = [
        ("HumanEval/32", "    return 0.0\n\ndef poly(xs, x):\n    return 0.0\n"),
        ("HumanEval/38", "    return s\n\ndef encode_cyclic(s):\n    return s\n"),
        ("HumanEval/50", "    return s\n\ndef encode_shift(s):\n    return s\n"),
    ];
    let mut input = String::new();
    for r in raw.iter().take(5) {
        let mut r = r.clone();
        r["completion"] = Value::String(saveall.clone());
        input.push_str(&format!("{r}\n"));
    }
    for (id, completion) in helpers {
        let mut r = raw.iter().find(|r| r["task_id"] == id).unwrap().clone();
        r["completion"] = Value::String(completion.into());
        input.push_str(&format!("{r}\n"));
    }
    let (lines, summary) = run(&input, Format::HumanEval);
    assert_eq!(lines.len(), 8);
    for l in &lines {
        assert_eq!(l["passed"], false, "{l}");
        assert_eq!(l["reward"], 0.0, "{l}");
    }
    assert_eq!((summary.passed, summary.errors), (0, 0));
}
