use serde_json::Value;

use crate::mentor;

/// `mentor verify math` on real GSM8K answers: right, reformatted, wrong and malformed lines,
/// one output line each, in input order, summary on stderr.
#[test]
fn verify_math_judges_each_line_in_order() {
    let tasks = mentor_core::datasets::Dataset::Gsm8k.load_from_dir(&crate::data_dir()).unwrap();
    let mut input = String::new();
    let mut expected = Vec::new();
    for (i, t) in tasks.iter().take(30).enumerate() {
        let gold = t.reference_answer().unwrap();
        let n: f64 = gold.replace(',', "").parse().unwrap();
        let (completion, correct) = match i % 3 {
            0 => (format!("The answer is \\boxed{{{gold}}}."), true),
            1 => (format!("So she earns ${n:.2} in total.\n#### {n}"), true),
            _ => (format!("Final Answer: {}", n + 1.0), false),
        };
        input.push_str(&serde_json::json!({"id": t.id, "gold": gold, "completion": completion}).to_string());
        input.push('\n');
        expected.push((t.id.clone(), correct));
        if i == 10 {
            input.push_str("{\"id\": \"broken\", \"gold\": 5}\n");
        }
    }
    let dir = std::env::temp_dir().join(format!("mentor-e2e-vm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("in.jsonl");
    std::fs::write(&file, input).unwrap();
    let out = mentor().args(["verify", "math", "--input"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 31);
    let errors: Vec<&Value> = lines.iter().filter(|l| l.get("error").is_some()).collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["id"], "broken");
    let judged: Vec<(String, bool)> = lines
        .iter()
        .filter(|l| l.get("error").is_none())
        .map(|l| (l["id"].as_str().unwrap().to_string(), l["correct"].as_bool().unwrap()))
        .collect();
    assert_eq!(judged, expected);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("checked 30, correct 20") && stderr.contains("malformed 1"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bad bytes and malformed lines are reported by line number and the run goes on; an input in
/// which nothing could be judged exits non-zero.
#[test]
fn verify_math_reports_bad_lines_and_fails_when_nothing_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.jsonl");
    let mut input = b"{\"id\":1,\"gold\":\"5\",\"completion\":\"\\\\boxed{5}\"}\n".to_vec();
    input.extend_from_slice(b"{\"id\":2,\"gold\":\"5\",\"completion\":\"\xff\xfe\"}\n");
    input.extend_from_slice(b"{\"id\":3,\"gold\":\"7\",\"completion\":\"7\"}\n");
    std::fs::write(&file, &input).unwrap();
    let out = mentor().args(["verify", "math", "--input"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["line"], 2);
    assert!(lines[1]["error"].as_str().unwrap().contains("UTF-8"), "{}", lines[1]);
    assert_eq!((lines[0]["correct"].as_bool(), lines[2]["correct"].as_bool()), (Some(true), Some(true)));

    std::fs::write(&file, "not json\n{\"id\": 1}\n").unwrap();
    let out = mentor().args(["verify", "math", "--input"]).arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "every line malformed must fail: {stderr}");
    assert!(stderr.contains("none of the 2"), "{stderr}");
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2, "each bad line still reported");
}
