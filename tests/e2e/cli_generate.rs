use mentor_core::assets::AssetDir;
use serde_json::Value;

use crate::mentor;

/// `mentor generate --chat --temperature 0` on the SmolLM2 GGUF reproduces Hugging Face
/// transformers' greedy ids from the shared fixture (a peer's numbers, not ours).
#[test]
fn generate_matches_transformers_greedy_on_smollm2() {
    let gguf = AssetDir::resolve(|k| std::env::var(k).ok()).expect("HOME or MENTOR_HOME").smollm2_gguf();
    assert!(gguf.is_file(), "{} is missing: run `cargo xtask setup`", gguf.display());
    let fixture = crate::data_dir().join("../fixtures/smollm2_greedy.json");
    let fixture: Value = serde_json::from_slice(&std::fs::read(&fixture).unwrap()).unwrap();
    let case = fixture["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["prompt"] == "What is the capital of France?")
        .expect("fixture case");
    let want: Vec<u64> = case["greedy_ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let out = mentor()
        .args([
            "--threads",
            "1",
            "generate",
            "--chat",
            "--temperature",
            "0",
            "--json",
            "--max-new-tokens",
            "12",
        ])
        .arg("--prompt")
        .arg(case["prompt"].as_str().unwrap())
        .arg("--model")
        .arg(&gguf)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<u64> = got["token_ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(ids, want, "greedy ids equal transformers'");
    assert_eq!(got["text"], "The capital of France is Paris.");
    assert_eq!(got["finish_reason"], "stop");
}

/// A model argument meant as a local path that does not exist is an error naming it, never a
/// Hub request (which would fail on the network, and carry `HF_TOKEN` if set).
#[test]
fn a_missing_local_model_path_is_named_not_sent_to_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("runs")).unwrap();
    let out = mentor()
        .current_dir(dir.path())
        .env("HF_TOKEN", "hf_secret_never_sent")
        .env_remove("HF_HUB_OFFLINE")
        .args(["generate", "--model", "runs/typo", "--prompt", "hi"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("runs/typo") && err.contains("no model file or directory"), "{err}");
    // A Hub failure reads `hub runs/typo/config.json: <reason>`.
    assert!(!err.contains("hub runs/typo/"), "the Hub was asked: {err}");
}
