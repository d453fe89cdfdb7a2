use serde_json::Value;

use crate::mentor;

/// `mentor verify code` on real HumanEval records: canonical solutions pass, a mutated one
/// fails naming its test, a malformed record gets an error line, order is kept.
#[test]
fn verify_code_runs_humaneval_records_in_the_sandbox() {
    let path = crate::data_dir().join("humaneval/HumanEval.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut input = String::new();
    let mut expected = Vec::new();
    for (i, line) in text.lines().take(6).enumerate() {
        let mut rec: Value = serde_json::from_str(line).unwrap();
        let mut completion = rec["canonical_solution"].as_str().unwrap().to_string();
        let passes = i != 2;
        if !passes {
            // A mutant: every `return` returns None instead.
            completion = completion.replace("return ", "return None and ");
        }
        rec["completion"] = Value::String(completion);
        expected.push((rec["task_id"].as_str().unwrap().to_string(), passes));
        input.push_str(&rec.to_string());
        input.push('\n');
    }
    input.push_str("{\"task_id\": \"broken\"}\n");
    let dir = std::env::temp_dir().join(format!("mentor-e2e-vc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("in.jsonl");
    std::fs::write(&file, input).unwrap();
    let out =
        mentor().args(["verify", "code", "--format", "humaneval", "--input"]).arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 7);
    for (l, (id, passes)) in lines.iter().zip(&expected) {
        assert_eq!(l["id"].as_str(), Some(id.as_str()));
        assert_eq!(l["passed"].as_bool(), Some(*passes), "{l}");
    }
    assert!(
        lines[2]["feedback"]["failed_test"].is_object(),
        "the mutant's failing test is named: {}",
        lines[2]
    );
    assert_eq!(lines[6]["id"], "broken");
    assert!(lines[6].get("error").is_some(), "{}", lines[6]);
    assert!(stderr.contains('5'), "summary on stderr: {stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A record that is not UTF-8 is reported with its line number and the records around it are
/// still judged; an input of only malformed records exits non-zero.
#[test]
fn verify_code_reports_bad_bytes_and_fails_when_nothing_is_judged() {
    let rec = |id: &str, completion: &str| {
        serde_json::json!({"id": id, "completion": completion, "tests": [{"input": "", "output": "5"}]})
            .to_string()
    };
    let mut input = format!("{}\n", rec("a", "print(5)")).into_bytes();
    input.extend_from_slice(b"{\"id\": \"b\", \"completion\": \"print(\xff)\", \"tests\": []}\n");
    input.extend_from_slice(format!("{}\n", rec("c", "print(6)")).as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.jsonl");
    std::fs::write(&file, &input).unwrap();
    let out = mentor().args(["verify", "code", "--format", "stdio", "--input"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["passed"], true);
    let why = lines[1]["error"].as_str().unwrap();
    assert!(why.contains("line 2") && why.contains("UTF-8"), "{why}");
    assert_eq!(lines[2]["passed"], false);

    std::fs::write(&file, "{\"id\": \"x\"}\nnot json\n").unwrap();
    let out = mentor().args(["verify", "code", "--format", "stdio", "--input"]).arg(&file).output().unwrap();
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
