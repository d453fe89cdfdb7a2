//! `mentor train` refusing what cannot run, before it writes anything: lengths past the model's
//! context (the tiny model's 2048 positions, SmolLM2's 8192), an empty config file, a run whose
//! memory estimate exceeds the machine; and the estimate line every run prints.

use std::path::Path;
use std::process::Output;

use crate::{data_dir, mentor};

fn train(cwd: &Path, config: &str, sets: &[String], extra: &[&str]) -> Output {
    let mut cmd = mentor();
    cmd.current_dir(cwd).args(["--threads", "1", "train", "--config", config]);
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    cmd.args(extra).output().expect("run mentor train")
}

/// Asserts `out` failed with an error containing every one of `needles` and that `cwd` holds
/// nothing (no run directory, no `runs/`).
fn refused(out: &Output, cwd: &Path, needles: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "expected a refusal: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` missing from: {err}");
    }
    let left: Vec<_> = std::fs::read_dir(cwd).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.iter().all(|n| n == "empty.toml"), "something was written: {left:?}\n{err}");
    err
}

#[test]
fn lengths_past_the_tiny_models_context_are_refused_before_anything_is_written() {
    let cwd = tempfile::tempdir().unwrap();
    for value in ["2048", "100000", "9223372036854775807"] {
        let sets = [format!("sampling.max_new_tokens={value}"), "run.output_dir=run".into()];
        let out = train(cwd.path(), "demo", &sets, &[]);
        refused(&out, cwd.path(), &["`sampling.max_new_tokens`", value, "2048 tokens", "hint: "]);
    }
    let sets = [
        "mentor.backend=local".to_string(),
        "mentor.model=self".into(),
        "mentor.max_tokens=4096".into(),
        "run.output_dir=run".into(),
    ];
    let out = train(cwd.path(), "demo", &sets, &[]);
    refused(&out, cwd.path(), &["`mentor.max_tokens`", "4096", "2048"]);
}

#[test]
fn lengths_past_smollm2s_context_are_refused_naming_8192() {
    let cwd = tempfile::tempdir().unwrap();
    for value in ["9000", "100000", "9223372036854775807"] {
        let sets = [
            format!("sampling.max_new_tokens={value}"),
            format!("data.dir={}", data_dir().display()),
            "run.output_dir=run".into(),
        ];
        let out = train(cwd.path(), "gsm8k-smollm2", &sets, &[]);
        refused(&out, cwd.path(), &["`sampling.max_new_tokens`", value, "8192", "max_position_embeddings"]);
    }
}

#[test]
fn an_empty_config_file_is_refused_naming_the_presets() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("empty.toml"), "# nothing yet\n").unwrap();
    let out = train(cwd.path(), "empty.toml", &[], &[]);
    let names: Vec<&str> = mentor_trainer::config::PRESETS.iter().map(|(n, _)| *n).collect();
    let mut needles = vec!["empty.toml", "sets nothing"];
    needles.extend(&names);
    refused(&out, cwd.path(), &needles);
}

#[test]
fn a_run_over_the_machines_memory_is_refused_unless_allowed() {
    let cwd = tempfile::tempdir().unwrap();
    // 2^30 prompts of 8 completions per step: an estimate in the petabytes.
    let sets = ["sampling.prompts_per_step=1073741824".to_string(), "run.output_dir=run".into()];
    let out = train(cwd.path(), "demo", &sets, &[]);
    refused(&out, cwd.path(), &["memory estimate ", "GB peak", "available", "--allow-over-memory"]);
}

#[test]
fn every_run_prints_its_memory_estimate_once() {
    let cwd = tempfile::tempdir().unwrap();
    let sets: Vec<String> = [
        "run.output_dir=run",
        "run.progress=false",
        "pretrain.steps=2",
        "pretrain.batch=4",
        "curriculum.schedule=[{level = 2, steps = 1}]",
        "sampling.prompts_per_step=2",
        "sampling.group_size=2",
        "sampling.max_new_tokens=8",
        "strategy.intervention.hinted_samples=2",
        "eval.problems=2",
        "eval.levels=[2]",
    ]
    .map(String::from)
    .to_vec();
    let out = train(cwd.path(), "demo", &sets, &["--allow-over-memory"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("memory estimate: ")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("demo: memory estimate: ")
            && lines[0].contains("MB peak (weights ")
            && (lines[0].contains("GB available") || lines[0].contains("unknown")),
        "{err}"
    );
}
