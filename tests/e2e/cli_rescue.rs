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
        "sampling.group_size=2".into(),
        "sampling.max_new_tokens=12".into(),
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
        ("static_hints", serde_json::Value::Null),
        ("refinement", serde_json::Value::Null),
        ("mentor", 1.into()),
        ("mentor", 2.into()),
        ("mentor", 3.into()),
        ("mentor", serde_json::Value::Null),
        ("random_prefix", 3.into()),
    ];
    assert_eq!(names, want.iter().map(|(a, l)| (a.to_string(), l.clone())).collect::<Vec<_>>());
    for a in arms {
        let rate = a["rescue_rate"].as_f64().unwrap();
        let ci: Vec<f64> = a["rescue_ci"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert!(ci.len() == 2 && ci[0] <= rate && rate <= ci[1], "{a}");
        for key in ["diff_vs_retry", "diff_vs_static"] {
            let d: Vec<f64> = a[key].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            assert!(d.len() == 3 && d[1] <= d[0] && d[0] <= d[2], "{key}: {a}");
        }
        assert!(a["leaks"].is_u64() && a["guard_rejections"].is_u64(), "{a}");
        assert!(a["hinted_pass_rate"].is_f64() || a["hinted_pass_rate"].is_null(), "{a}");
    }
    assert_eq!(arms[0]["diff_vs_retry"], serde_json::json!([0.0, 0.0, 0.0]));
    assert_eq!(arms[1]["diff_vs_static"], serde_json::json!([0.0, 0.0, 0.0]));
    assert_eq!(arms[0]["samples"], 6);

    let base = lines(&dir.join("base.jsonl"));
    assert_eq!(base.len(), 3);
    assert!(base.iter().all(|b| b["collapsed"] == true && b["rewards"].as_array().unwrap().len() == 2));
    let rescue = lines(&dir.join("rescue.jsonl"));
    assert_eq!(rescue.len(), 8 * 3);
    for line in &rescue {
        assert!(line["problem"].as_str().unwrap().starts_with("gsm8k/train/"), "{line}");
        let hints = line["hints"].as_array().unwrap().len();
        let rewards = line["rewards"].as_array().unwrap().len();
        match line["arm"].as_str().unwrap() {
            "retry" => assert_eq!((hints, rewards), (0, 2)),
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
    assert!(std::fs::read_to_string(dir.join("rescue.svg")).unwrap().contains("<svg"));
}

#[test]
fn a_prompts_samples_do_not_depend_on_the_arms_or_batches_around_it() {
    // The retry arm alone, one problem per generate call, against the retry arm among every
    // other arm in batches of up to 64 rows: the same completions, problem by problem.
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    rescue(&a, &["rescue.arms=[\"retry\"]", "rescue.batch_rows=2"]);
    rescue(&b, &["rescue.batch_rows=64"]);
    let retry = |dir: &Path| -> Vec<serde_json::Value> {
        lines(&dir.join("rescue.jsonl")).into_iter().filter(|l| l["arm"] == "retry").collect()
    };
    let (ra, rb) = (retry(&a), retry(&b));
    assert_eq!(ra.len(), 3);
    for (x, y) in ra.iter().zip(&rb) {
        assert_eq!(x["problem"], y["problem"]);
        assert_eq!(x["completions"], y["completions"], "{}", x["problem"]);
    }
    // The unhinted attempts are another stream: not the retry's samples.
    let base = lines(&a.join("base.jsonl"));
    assert_ne!(base[0]["completions"], ra[0]["completions"]);
}
