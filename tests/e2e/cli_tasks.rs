use mentor_core::Task;

use crate::{data_dir, mentor};

#[test]
fn tasks_prints_jsonl_that_round_trips() {
    let out = mentor()
        .args(["tasks", "--dataset", "math500", "--limit", "3", "--file"])
        .arg(data_dir().join("math500/test.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let tasks: Vec<Task> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(tasks.len(), 3);
    assert_eq!(tasks[0].id, "test/precalculus/807.json");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("500 tasks loaded"), "{stderr}");
}

#[test]
fn bad_input_is_a_located_error_not_a_crash() {
    let dir = std::env::temp_dir().join(format!("mentor-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.jsonl");
    std::fs::write(&file, "{\"question\":\"q\",\"answer\":\"#### 1\"}\n{\"question\":\"q\",\"answer\":7}\n")
        .unwrap();
    let out = mentor().args(["tasks", "--dataset", "gsm8k", "--file"]).arg(&file).output().unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "no partial output on error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.jsonl:2") && stderr.contains("`answer`"), "{stderr}");
    let out = mentor().args(["tasks", "--dataset", "nope", "--file"]).arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("hint: use one of gsm8k"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
