//! `mentor experiment` on demo-sized runs of the tiny model: the missing runs train, each
//! leaves a result file, the step-0 evaluation is made once per seed for every arm (and is
//! what a run of its own evaluates at step 0), and the pooling reads the result files alone
//! (the run directories gone, a second call runs nothing).

use crate::mentor;

const SETS: [&str; 12] = [
    "run.progress=false",
    "pretrain.steps=8",
    "pretrain.batch=16",
    "curriculum.schedule=[{level = 2, steps = 2}, {level = 3, steps = 2}]",
    "curriculum.full_operand_levels=[]",
    "sampling.prompts_per_step=2",
    "sampling.group_size=3",
    "sampling.max_new_tokens=24",
    "strategy.intervention.hinted_samples=3",
    "eval.problems=6",
    "eval.every=2",
    "eval.levels=[3]",
];

fn experiment(root: &std::path::Path, extra: &[&str]) -> (String, String) {
    let mut cmd = mentor();
    cmd.args([
        "--threads",
        "1",
        "experiment",
        "--config",
        "demo",
        "--arms",
        "vanilla,mentor",
        "--seeds",
        "0",
    ]);
    cmd.arg("--results").arg(root.join("results")).arg("--runs").arg(root.join("runs"));
    cmd.args(["--commit", "abc1234"]);
    for s in SETS {
        cmd.arg("--set").arg(s);
    }
    cmd.args(extra);
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    (String::from_utf8_lossy(&out.stdout).to_string(), err)
}

#[test]
fn the_missing_runs_train_and_the_result_files_pool_alone() {
    let root = tempfile::tempdir().unwrap();
    let (md, err) = experiment(root.path(), &[]);
    assert!(
        err.contains("experiment: vanilla-s0 done") && err.contains("experiment: mentor-s0 done"),
        "{err}"
    );
    let results = root.path().join("results");
    // One step-0 evaluation for both arms, written once and shown to each.
    assert_eq!(err.matches("evaluating seed 0's starting model").count(), 1, "{err}");
    let start: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("start/s0.json")).unwrap()).unwrap();
    let start_rows = start["rows"].as_array().unwrap().clone();
    assert_eq!(start_rows.len(), 1);
    for arm in ["vanilla", "mentor"] {
        let run = root.path().join(format!("runs/{arm}-s0"));
        assert!(run.join("final").is_dir(), "{arm}: the final model stays");
        assert!(!run.join("checkpoints").exists(), "{arm}: a finished run's checkpoints are removed");
        let evals: Vec<serde_json::Value> =
            std::fs::read_to_string(root.path().join(format!("runs/{arm}-s0/eval.jsonl")))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        assert_eq!(evals[0], start_rows[0], "{arm}: the shared step-0 row");
    }
    // A run of its own (`mentor train`, nothing shared) evaluates step 0 to the same row.
    let alone = root.path().join("alone");
    let mut cmd = mentor();
    cmd.args(["--threads", "1", "train", "--config", "demo"]);
    for s in SETS.iter().map(|s| s.to_string()).chain([
        "strategy.arm=\"vanilla\"".into(),
        "run.seed=0".into(),
        format!("run.output_dir=\"{}\"", alone.display()),
    ]) {
        cmd.arg("--set").arg(s);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let own = std::fs::read_to_string(alone.join("eval.jsonl")).unwrap();
    let own: serde_json::Value = serde_json::from_str(own.lines().next().unwrap()).unwrap();
    assert_eq!(own, start_rows[0], "the shared row is the one a run makes itself");
    for svg in ["curve_reward.svg", "curve_zrf.svg", "curve_rows.svg"] {
        assert!(std::fs::read_to_string(results.join(svg)).unwrap().contains("mentor-s0"), "{svg}");
    }
    for arm in ["vanilla", "mentor"] {
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(results.join(format!("{arm}-s0.json"))).unwrap())
                .unwrap();
        assert_eq!((r["arm"].as_str(), r["seed"].as_u64()), (Some(arm), Some(0)));
        assert_eq!(r["commit"], "abc1234");
        assert_eq!(r["steps"].as_array().unwrap().len(), 4);
        let evals = r["evals"].as_array().unwrap();
        assert!(evals.iter().any(|e| e["step"] == 0) && evals.iter().any(|e| e["step"] == 4), "{evals:?}");
        assert!(evals.iter().all(|e| e["set"] == "level 3" && e["correct"].as_array().unwrap().len() == 6));
    }
    let hash = |arm: &str| -> String {
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(results.join(format!("{arm}-s0.json"))).unwrap())
                .unwrap();
        r["config_hash"].as_str().unwrap().to_string()
    };
    assert_eq!(hash("vanilla"), hash("mentor"), "one experiment, one config");
    assert!(md.contains("### level 3") && md.contains("| mentor |") && md.contains("| vanilla | s0"), "{md}");
    // The runs' directories gone: the results alone pool, and nothing runs again.
    std::fs::remove_dir_all(root.path().join("runs")).unwrap();
    let (again, err) = experiment(root.path(), &[]);
    assert!(err.contains("has its result") && !err.contains("done →"), "{err}");
    assert!(!err.contains("starting model"), "nothing to run, nothing evaluated: {err}");
    assert_eq!(again, md);
    let pooled: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("pooled.json")).unwrap()).unwrap();
    assert_eq!(pooled["runs"], 2);
}

/// A sweep of the learning rate over vanilla runs: each value's runs in a directory of their
/// own, and the rule's table over them; a second call runs nothing and writes the same table.
#[test]
fn a_sweep_runs_each_value_and_applies_the_rule() {
    let root = tempfile::tempdir().unwrap();
    let sweep = |extra: &[&str]| {
        let mut cmd = mentor();
        cmd.args(["--threads", "1", "experiment", "--config", "demo", "--arms", "vanilla", "--seeds", "0"]);
        cmd.arg("--results").arg(root.path().join("sweep")).arg("--runs").arg(root.path().join("runs"));
        cmd.args([
            "--sweep",
            "grpo.learning_rate=1e-4,1e-3",
            "--sweep-set",
            "level 3",
            "--sweep-window",
            "2",
        ]);
        for s in SETS {
            cmd.arg("--set").arg(s);
        }
        cmd.args(extra);
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{err}");
        (String::from_utf8_lossy(&out.stdout).to_string(), err)
    };
    let (md, err) = sweep(&[]);
    assert!(!err.contains("cannot install the Ctrl-C handler"), "one handler for every value: {err}");
    for lr in ["1e-4", "1e-3"] {
        let r: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(root.path().join(format!("sweep/{lr}/vanilla-s0.json"))).unwrap(),
        )
        .unwrap();
        assert!(r["config_hash"].is_string() && r["steps"].as_array().unwrap().len() == 4, "{lr}");
        // The run trained at its value.
        let config =
            std::fs::read_to_string(root.path().join(format!("runs/{lr}/vanilla-s0/config.toml"))).unwrap();
        let value = config
            .lines()
            .skip_while(|l| l.trim() != "[grpo]")
            .find_map(|l| l.trim().strip_prefix("learning_rate = "))
            .and_then(|v| v.parse::<f64>().ok());
        assert_eq!(value, lr.parse::<f64>().ok(), "{config}");
    }
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(root.path().join("sweep/sweep.json")).unwrap())
            .unwrap();
    assert_eq!(rows.len(), 2, "{err}");
    assert!(rows.iter().filter(|r| r["chosen"] == true).count() <= 1);
    assert!(md.contains("| grpo.learning_rate | runs |") && md.contains("| 1e-3 | 1 |"), "{md}");
    let (again, err) = sweep(&[]);
    assert!(!err.contains("done →"), "nothing runs again: {err}");
    assert_eq!(again, md);
}
