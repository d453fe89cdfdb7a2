//! `mentor rescue` on the real model (SmolLM2-135M GGUF) and real GSM8K training problems, cut
//! to a few problems and short completions: the summary's fields, the files, and the pairing
//! (a prompt's samples do not depend on which arms or batches surround it).

use std::path::Path;

use crate::{data_dir, mentor};

fn rescue(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut sets: Vec<String> = vec![
        format!("run.output_dir={}", dir.display()),
        format!("data.dir={}", data_dir().display()),
        "run.progress=false".into(),
        "rescue.problems=3".into(),
        "rescue.collapsed=0".into(),
        "rescue.bootstrap=200".into(),
        "rescue.unhinted_samples=2".into(),
        "rescue.hinted_samples=2".into(),
        "sampling.max_new_tokens=12".into(),
        // The preset's regime, on every training problem: the probe's strata are tested apart.
        "rescue.stratum=\"\"".into(),
        "rescue.prompt=\"few_shot\"".into(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let mut cmd = mentor();
    cmd.args(["--threads", "2", "rescue", "--json", "--config", "rescue-gsm8k-smollm2"]);
    for s in &sets {
        cmd.arg("--set").arg(s);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("rescue: 3 collapsed of 3 problems"), "{err}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn rescue_measures_every_arm_on_the_collapsed_problems_and_writes_its_files() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("rescue");
    let s = rescue(&dir, &[]);
    // 12 tokens cannot reach a boxed GSM8K answer: every problem collapses.
    assert_eq!(s["collapsed"], 3);
    assert_eq!(s["base_pass_rate"], 0.0);
    let arms = s["arms"].as_array().unwrap();
    let names: Vec<(String, serde_json::Value)> =
        arms.iter().map(|a| (a["arm"].as_str().unwrap().to_string(), a["level"].clone())).collect();
    let want = [
        ("retry", serde_json::Value::Null),
        ("retry_fixed", serde_json::Value::Null),
        ("static_hints", serde_json::Value::Null),
        ("refinement", serde_json::Value::Null),
        ("wrong_answers", serde_json::Value::Null),
        ("where_only", serde_json::Value::Null),
        ("mentor", 1.into()),
        ("mentor", 2.into()),
        ("mentor", 3.into()),
        ("mentor", serde_json::Value::Null),
        ("random_prefix", 3.into()),
        ("reference_in_context", serde_json::Value::Null),
    ];
    assert_eq!(names, want.iter().map(|(a, l)| (a.to_string(), l.clone())).collect::<Vec<_>>());
    for a in arms {
        let rate = a["rescue_rate"].as_f64().unwrap();
        let ci: Vec<f64> = a["rescue_ci"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert!(ci.len() == 2 && ci[0] <= rate && rate <= ci[1], "{a}");
        for key in ["diff_vs_retry", "diff_vs_static", "diff_vs_wrong_answers", "diff_vs_where_only"] {
            let d: Vec<f64> = a[key].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            assert!(d.len() == 3 && d[1] <= d[0] && d[0] <= d[2], "{key}: {a}");
        }
        // Against the size-matched control only where it had a cut: none, or an interval.
        assert!(
            a["diff_vs_random_prefix"].is_null() || a["diff_vs_random_prefix"].as_array().unwrap().len() == 3
        );
        assert_eq!(a["leaking"], a["arm"] == "reference_in_context", "{a}");
        assert!(a["leaks"].is_u64() && a["guard_rejections"].is_u64(), "{a}");
        assert!(a["hinted_pass_rate"].is_f64() || a["hinted_pass_rate"].is_null(), "{a}");
    }
    assert_eq!(arms[0]["diff_vs_retry"], serde_json::json!([0.0, 0.0, 0.0]));
    assert_eq!(arms[1]["diff_vs_static"], serde_json::json!([0.0, 0.0, 0.0]));
    assert_eq!(arms[0]["samples"], 6);
    // The fixed retry draws the most attempts the best-of-3-levels row may: 3 rounds of 2.
    let esc = arms.iter().find(|a| a["arm"] == "mentor" && a["level"].is_null()).unwrap();
    assert_eq!(arms[1]["samples"], 18);
    assert!(esc["samples"].as_u64().unwrap() <= 18);
    assert_eq!(s["unhinted_samples"], 2);
    assert_eq!(s["regime"]["prompt"], "few_shot");

    let base = lines(&dir.join("base.jsonl"));
    assert_eq!(base.len(), 3);
    assert!(base.iter().all(|b| b["collapsed"] == true && b["rewards"].as_array().unwrap().len() == 2));
    let rescue = lines(&dir.join("rescue.jsonl"));
    assert_eq!(rescue.len(), 12 * 3);
    for line in &rescue {
        assert!(line["problem"].as_str().unwrap().starts_with("gsm8k/train/"), "{line}");
        let hints = line["hints"].as_array().unwrap().len();
        let rewards = line["rewards"].as_array().unwrap().len();
        match line["arm"].as_str().unwrap() {
            "retry" => assert_eq!((hints, rewards), (0, 2)),
            "retry_fixed" => assert_eq!((hints, rewards), (0, 6), "{line}"),
            // Escalation asks again while every attempt fails: up to three hints.
            "mentor" if line["level"].is_null() => assert!(hints <= 3 && rewards == 2 * hints, "{line}"),
            _ => assert!(hints <= 1 && rewards == 2 * hints, "{line}"),
        }
        assert!(line["category"].is_string(), "{line}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["arms"], s["arms"]);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("mentor L3") && report.contains("rescue.svg"), "{report}");
    assert!(report.contains("mentor best of 3 levels") && report.contains("retry (3 rounds)"), "{report}");
    assert!(std::fs::read_to_string(dir.join("rescue.svg")).unwrap().contains("<svg"));
}

/// The twins run on any GSM8K-format problems (`rescue.stratum = ""`): each is the mentor's
/// hint about another step, sized within the band or excluded and counted; `prior_step` asks for
/// a generated family to calibrate on, by name.
#[test]
fn the_step_twins_run_on_dataset_problems() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("twins");
    let s = rescue(
        &dir,
        &["rescue.arms=[\"mentor_no_wrong_op\", \"random_step\", \"all_steps\"]", "rescue.levels=[1, 2, 3]"],
    );
    let names: Vec<(String, serde_json::Value)> = s["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["arm"].as_str().unwrap().to_string(), a["level"].clone()))
        .collect();
    let want: Vec<(String, serde_json::Value)> = [
        ("mentor_no_wrong_op", 1),
        ("mentor_no_wrong_op", 2),
        ("random_step", 1),
        ("random_step", 2),
        ("all_steps", 1),
    ]
    .iter()
    .map(|(a, l)| (a.to_string(), (*l).into()))
    .collect();
    assert_eq!(names, want, "twins and their mentor at levels 1 and 2 only");
    for line in lines(&dir.join("rescue.jsonl")) {
        assert!(line["steps"].as_u64().unwrap() >= 1, "{line}");
        if line["arm"] == "random_step" {
            let twin = &line["twin"];
            let sizes: Vec<u64> =
                twin["sizes"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            if line["excluded"] == true {
                assert!(line["hints"].as_array().unwrap().is_empty(), "{line}");
            } else {
                let (m, t) = (sizes[0] as f64, sizes[1] as f64);
                assert!((t - m).abs() <= 0.1 * m, "outside the size band: {line}");
                assert_ne!(twin["twin_steps"][0], twin["mentor_step"], "{line}");
            }
        }
    }
    let out = mentor()
        .args(["rescue", "--config", "rescue-gsm8k-smollm2", "--set", "rescue.arms=[\"prior_step\"]"])
        .arg("--set")
        .arg(format!("data.dir={}", data_dir().display()))
        .arg("--set")
        .arg(format!("run.output_dir={}", root.path().join("prior").display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("prior_step") && err.contains("generated"), "{err}");
}

/// Chunks of a `seed *` held-out stratum draw distinct problems, run with the calibrated
/// `prior_step`, and are analysed together: clustered contrasts with exact and Holm p-values.
#[test]
fn heldout_chunks_draw_new_problems_and_are_analysed_together() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("chunks");
    let mut cmd = mentor();
    cmd.args(["--threads", "2", "rescue", "--config", "rescue-heldout-smollm2", "--seeds", "1,2"]);
    for s in [
        format!("run.output_dir={}", dir.display()),
        format!("data.dir={}", data_dir().display()),
        "run.progress=false".into(),
        "rescue.collapsed=3".into(),
        "rescue.calibration_collapsed=3".into(),
        "rescue.max_position_share=1.0".into(),
        "rescue.bootstrap=100".into(),
        "rescue.unhinted_samples=1".into(),
        "rescue.hinted_samples=1".into(),
        "rescue.arms=[\"retry\", \"mentor\", \"mentor_no_wrong_op\", \"random_step\", \"prior_step\"]".into(),
        "rescue.levels=[1]".into(),
        "rescue.escalate=false".into(),
        "sampling.max_new_tokens=8".into(),
    ] {
        cmd.arg("--set").arg(s);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let ids = |seed: u64| -> Vec<String> {
        lines(&dir.join(format!("seed-{seed}/base.jsonl")))
            .iter()
            .map(|l| l["problem"].as_str().unwrap().to_string())
            .collect()
    };
    let (a, b) = (ids(1), ids(2));
    assert!(
        a.iter().all(|id| id.starts_with("heldout/1/")) && b.iter().all(|id| id.starts_with("heldout/2/"))
    );
    assert!(dir.join("prior_steps.json").is_file(), "calibrated once, beside the chunks");
    let analysis: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("analysis.json")).unwrap()).unwrap();
    assert_eq!(analysis["problems"], 6);
    let primary = &analysis["contrasts"][0];
    assert_eq!(primary["name"], "operator hint vs random step (L1)");
    assert!(primary["n"].as_u64().unwrap() <= 6 && primary["p_holm"].is_f64(), "{primary}");
    assert!(primary["p"].is_f64() || primary["n"] == 0, "{primary}");
    let md = std::fs::read_to_string(dir.join("analysis.md")).unwrap();
    assert!(md.contains("**primary**") && md.contains("random_step L1"), "{md}");
}

#[test]
fn a_prompts_samples_do_not_depend_on_the_arms_or_batches_around_it() {
    // The retry arm alone, one problem per generate call, against the retry arm among every
    // other arm in batches of up to 64 rows: the same completions, problem by problem.
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    rescue(&a, &["rescue.arms=[\"retry\", \"wrong_answers\"]", "rescue.batch_rows=2"]);
    rescue(&b, &["rescue.batch_rows=64"]);
    let arm = |dir: &Path, name: &str| -> Vec<serde_json::Value> {
        lines(&dir.join("rescue.jsonl")).into_iter().filter(|l| l["arm"] == name).collect()
    };
    for name in ["retry", "wrong_answers"] {
        let (ra, rb) = (arm(&a, name), arm(&b, name));
        assert_eq!(ra.len(), 3);
        for (x, y) in ra.iter().zip(&rb) {
            assert_eq!(x["problem"], y["problem"]);
            assert_eq!(x["hints"], y["hints"]);
            assert_eq!(x["completions"], y["completions"], "{name} {}", x["problem"]);
        }
    }
    let ra = arm(&a, "retry");
    // The unhinted attempts are another stream: not the retry's samples.
    let base = lines(&a.join("base.jsonl"));
    assert_ne!(base[0]["completions"], ra[0]["completions"]);
}

#[test]
fn seeds_run_into_their_own_directories_and_pool() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("seeds");
    let run = |seeds: &str| {
        let mut cmd = mentor();
        cmd.args([
            "--threads",
            "2",
            "rescue",
            "--json",
            "--config",
            "rescue-gsm8k-smollm2",
            "--seeds",
            seeds,
        ]);
        for s in [
            format!("run.output_dir={}", dir.display()),
            format!("data.dir={}", data_dir().display()),
            "run.progress=false".into(),
            "rescue.problems=2".into(),
            "rescue.collapsed=0".into(),
            "rescue.bootstrap=100".into(),
            "rescue.unhinted_samples=2".into(),
            "rescue.hinted_samples=1".into(),
            "rescue.stratum=\"\"".into(),
            "rescue.arms=[\"retry\", \"wrong_answers\", \"mentor\"]".into(),
            "rescue.levels=[1]".into(),
            "rescue.escalate=false".into(),
            "sampling.max_new_tokens=8".into(),
        ] {
            cmd.arg("--set").arg(s);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{err}");
        (serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(), err)
    };
    let (pooled, _) = run("0,1");
    assert_eq!(pooled["seeds"], serde_json::json!([0, 1]));
    assert_eq!(pooled["collapsed"], serde_json::json!([2, 2]));
    for seed in [0, 1] {
        assert!(dir.join(format!("seed-{seed}/summary.json")).is_file());
    }
    // Another seed is measured; the finished ones are not run again, and all three pool.
    let (pooled, err) = run("1,2");
    assert!(err.contains("seed 1 already measured"), "{err}");
    assert_eq!(pooled["seeds"], serde_json::json!([0, 1, 2]));
    let arms = pooled["arms"].as_array().unwrap();
    let mentor = arms.iter().find(|a| a["arm"] == "mentor").unwrap();
    assert_eq!(mentor["units"], 6);
    assert!(mentor["diff_vs_wrong_answers"].as_array().unwrap().len() == 3, "{mentor}");
    assert!(dir.join("pooled.md").is_file() && dir.join("pooled.json").is_file());
}

#[test]
fn the_self_mentor_asks_for_all_problems_in_batches_and_counts_its_fallbacks() {
    // The learner as its own mentor (SAGE's self-hint), its diagnosis and hint calls batched
    // across the three problems, against the same arm asked one problem per model call
    // (`batch_rows = 1`): the same hints, problem by problem.
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("batched"), root.path().join("alone"));
    let arms = "rescue.arms=[\"retry\", \"local\"]";
    let sets =
        ["mentor.model=\"self\"", "mentor.max_tokens=24", "rescue.levels=[1]", "rescue.escalate=false"];
    let mut batched: Vec<&str> = vec![arms, "rescue.batch_rows=64"];
    batched.extend(sets);
    let mut alone: Vec<&str> = vec![arms, "rescue.batch_rows=1"];
    alone.extend(sets);
    let s = rescue(&a, &batched);
    rescue(&b, &alone);
    let names: Vec<&str> = s["arms"].as_array().unwrap().iter().map(|x| x["arm"].as_str().unwrap()).collect();
    assert_eq!(names, ["retry", "local"]);
    // Three asks (one level, no escalation), each a diagnosis and a hint call; a 135M model
    // rarely writes the JSON the agents ask for, so most fall back to the rules: counted.
    let f = &s["fallbacks"][0];
    assert_eq!((f["arm"].as_str(), f["asks"].as_u64()), (Some("local"), Some(3)), "{s}");
    assert!(f["fallbacks"].as_u64().unwrap() <= 6, "{f}");
    let local = |dir: &Path| -> Vec<serde_json::Value> {
        lines(&dir.join("rescue.jsonl")).into_iter().filter(|l| l["arm"] == "local").collect()
    };
    let (la, lb) = (local(&a), local(&b));
    assert_eq!(la.len(), 3);
    for (x, y) in la.iter().zip(&lb) {
        assert_eq!(x["hints"], y["hints"], "{}", x["problem"]);
        assert_eq!(x["completions"], y["completions"], "{}", x["problem"]);
    }
    let report = std::fs::read_to_string(a.join("report.md")).unwrap();
    assert!(report.contains("`local`: ") && report.contains("asks' model calls"), "{report}");
}
