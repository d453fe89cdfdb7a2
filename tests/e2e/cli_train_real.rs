//! `mentor train` with the shipped presets on the real model (SmolLM2-135M GGUF) and real
//! benchmark data: GSM8K with the math verifier, MBPP with the code sandbox. Budgets are cut
//! to one step of a few short completions so CI stays fast; the code path is the full one.

use crate::{data_dir, mentor};

fn smoke(preset: &str) -> (serde_json::Value, Vec<serde_json::Value>) {
    smoke_with(preset, &[])
}

fn smoke_with(preset: &str, extra: &[&str]) -> (serde_json::Value, Vec<serde_json::Value>) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run");
    let mut sets = vec![
        format!("run.output_dir={}", dir.display()),
        format!("data.dir={}", data_dir().display()),
        "run.steps=1".into(),
        "run.progress=false".into(),
        "data.limit=2".into(),
        "data.eval_tasks=1".into(),
        "sampling.prompts_per_step=1".into(),
        "sampling.group_size=2".into(),
        "sampling.max_new_tokens=12".into(),
        "strategy.intervention.hinted_samples=2".into(),
        "eval.every=0".into(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let mut cmd = mentor();
    cmd.args(["--threads", "2", "train", "--json", "--config", preset]);
    for s in &sets {
        cmd.arg("--set").arg(s);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{preset}: {err}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let metrics: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(dir.join("final/model.safetensors").is_file(), "{preset}");
    let evals: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("eval.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut summary = summary;
    summary["eval_rows"] = serde_json::Value::Array(evals);
    (summary, metrics)
}

#[test]
fn gsm8k_preset_trains_a_step_of_smollm2_with_the_math_verifier() {
    let (summary, metrics) = smoke("gsm8k-smollm2");
    assert_eq!(summary["steps"], 1);
    assert_eq!(metrics.len(), 1);
    let m = &metrics[0];
    assert_eq!(m["groups"], 1);
    // 12 tokens cannot reach a boxed GSM8K answer: the group collapses and the mentor
    // intervenes; the update still ran on the hinted rows.
    assert_eq!(m["collapsed"], 1);
    assert_eq!(m["intervened"], 1);
    assert!(m["rows"].as_u64().unwrap() >= 2);
    assert!(m["loss"].is_f64());
    assert_eq!(summary["final_eval"][0]["n"], 1);
}

/// Generated problems in the few-shot style, evaluated on named sets each reported apart (one
/// with pass@k on its first problem only), with the `random_step` twin as the arm.
#[test]
fn generated_problems_train_with_named_evaluation_sets() {
    let (summary, metrics) = smoke_with(
        "gsm8k-smollm2",
        &[
            "data.train=\"arith 2-step seed 0\"",
            "data.prompt=\"few_shot\"",
            "data.eval_tasks=0",
            "strategy.arm=\"random_step\"",
            "eval.sets=[{ name = \"same_templates\", tasks = \"arith 2-step seed 9\", n = 2, passk_n = 1 }, { name = \"new_templates\", tasks = \"heldout 2-step seed 9\", n = 1 }]",
            "eval.k=2",
        ],
    );
    assert_eq!(summary["steps"], 1);
    assert_eq!(metrics[0]["groups"], 1);
    let rows = summary["eval_rows"].as_array().unwrap();
    let at = |step: u64, set: &str| rows.iter().find(|r| r["step"] == step && r["set"] == set).cloned();
    for step in [0, 1] {
        let same = at(step, "same_templates").unwrap();
        assert_eq!(same["n"], 2, "{rows:?}");
        // pass@2 on the first problem: its draws counted for it alone.
        assert_eq!((same["passk_n"].as_u64(), same["right"].as_array().map(Vec::len)), (Some(1), Some(1)));
        let new = at(step, "new_templates").unwrap();
        assert_eq!(new["n"], 1, "{rows:?}");
        assert!(new["passk_n"].is_null() && new["right"].as_array().map(Vec::len) == Some(1), "{new}");
    }
    assert!(rows.iter().all(|r| r["set"].is_string()), "no unnamed set: data.eval_tasks = 0");
}

#[test]
fn mbpp_preset_trains_a_step_of_smollm2_with_the_code_sandbox() {
    let (summary, metrics) = smoke("mbpp-smollm2");
    assert_eq!(summary["steps"], 1);
    let m = &metrics[0];
    assert_eq!(m["groups"], 1);
    assert_eq!(m["collapsed"], 1, "12 tokens cannot write a passing MBPP function");
    assert_eq!(m["intervened"], 1);
    assert!(m["loss"].is_f64());
}
