//! `cargo xtask bench step`: whole GRPO steps of `mentor train` against TRL's `GRPOTrainer` on
//! the same workload, in one run, interleaved (issue 20).
//!
//! The workload: SmolLM2-135M-Instruct from the GGUF setup installs (f32), `--prompts`
//! prompts x `--group` completions, at most `--new-tokens` new tokens at temperature 1 (top-p 1,
//! top-k off), `loss_type = "grpo"`, beta 0, learning rate 1e-6 (constant), one iteration per
//! batch, `--threads` threads; TRL in float32 (`bf16=False`: its bf16 autocast default is
//! emulated on a CPU without bf16 units, ~7x slower here) and without gradient checkpointing
//! (its default on), otherwise TRL's defaults. Our update runs in `--micro-batches` micro-batches
//! (default 4, one per prompt here: for `loss_type = "grpo"` with equal micro-batches the
//! gradients equal one batch's, a quarter of the activations), TRL's in
//! `--trl-micro-batches` (default 1, its usual recipe: `per_device_train_batch_size` = all
//! rows). The prompts are "What is A + B?" with A and B in 1..9 (300 seeded records, so rewards
//! are not all zero) under the `gsm8k-smollm2` preset's system prompt. Each side runs `--warmup` untimed steps, then `--steps` timed ones; `--rounds`
//! repeats ours-then-TRL. Ours is the `mentor` binary `cargo build` makes (what `mentor train`
//! runs); its step times and peak RSS come from its `metrics.jsonl`, TRL's from
//! `crates/mentor-trainer/bench/trl_step.py` in a hash-pinned private venv.
//!
//! Prints a table of median seconds per step split into generation, verification, the update
//! (ours: log-prob passes, forward, backward and optimizer together; TRL's split is in the
//! JSON) and other, plus peak RSS, writes `<target>/bench/step_vs_trl.json`, and ends with the
//! line `speedup=<TRL s/step / ours> memory_ratio=<our peak RSS / TRL's>`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use mentor_core::assets::AssetDir;
use serde_json::{json, Value};

use crate::bench_policy::{capture, flag_value, set_threads};
use crate::process::target_dir;
use crate::process::{cargo, repo_root, run};

/// Name of the private venv (changes with the pinned versions).
const VENV: &str = "trl-1.16.0-torch-2.15.0";
/// The preset both sides take their system prompt from.
const PRESET: &str = "gsm8k-smollm2";
/// The preset's system prompt (checked against the run's `config.toml`).
const SYSTEM_PROMPT: &str = "Solve the problem step by step. End with the final answer as \\boxed{...}.";

/// The workload's knobs, from the command line.
#[derive(Debug, Clone)]
struct Workload {
    threads: usize,
    prompts: usize,
    group: usize,
    new_tokens: usize,
    steps: usize,
    warmup: usize,
    rounds: usize,
    seed: u64,
    /// Micro-batches of our update (`grpo.gradient_accumulation_steps`): the same gradients as
    /// one batch for `loss_type = "grpo"` with equal micro-batches, a quarter of the
    /// activations at 4.
    micro_batches: usize,
    /// Micro-batches of TRL's update (`per_device_train_batch_size = rows / N`,
    /// `gradient_accumulation_steps = N`; 1 is the usual recipe).
    trl_micro_batches: usize,
}

impl Workload {
    fn from_args(extra: &[String]) -> Result<Self> {
        let num = |name: &str, default: usize| -> Result<usize> {
            match flag_value(extra, name) {
                Some(v) => v.parse().with_context(|| format!("{name} {v} is not a count")),
                None => Ok(default),
            }
        };
        let known = [
            "--threads",
            "--prompts",
            "--group",
            "--new-tokens",
            "--steps",
            "--warmup",
            "--rounds",
            "--seed",
            "--micro-batches",
            "--trl-micro-batches",
        ];
        let mut i = 0;
        while i < extra.len() {
            if !known.contains(&extra[i].as_str()) {
                bail!("unknown argument `{}` (bench step takes {})", extra[i], known.join(", "));
            }
            i += 2;
        }
        let w = Self {
            threads: num("--threads", std::thread::available_parallelism().map_or(1, |n| n.get()))?,
            prompts: num("--prompts", 4)?,
            group: num("--group", 8)?,
            new_tokens: num("--new-tokens", 64)?,
            steps: num("--steps", 5)?,
            warmup: num("--warmup", 1)?,
            rounds: num("--rounds", 1)?,
            seed: num("--seed", 0)? as u64,
            micro_batches: num("--micro-batches", 4)?,
            trl_micro_batches: num("--trl-micro-batches", 1)?,
        };
        if w.threads == 0
            || w.prompts == 0
            || w.group < 2
            || w.new_tokens == 0
            || w.steps == 0
            || w.rounds == 0
        {
            bail!("--threads, --prompts, --new-tokens, --steps and --rounds must be >= 1 and --group >= 2");
        }
        let rows = w.prompts * w.group;
        for (name, n) in [("--micro-batches", w.micro_batches), ("--trl-micro-batches", w.trl_micro_batches)]
        {
            if n == 0 || !rows.is_multiple_of(n) {
                bail!("{name} {n} must divide the {rows} rows of a step (equal micro-batches keep the gradients equal)");
            }
        }
        Ok(w)
    }
}

/// The hash-pinned private venv with torch, transformers, trl and accelerate (the policy
/// bench's pins plus `crates/mentor-trainer/bench/requirements-trl.txt`), created on first use.
pub(crate) fn trl_venv(dir: &AssetDir) -> Result<PathBuf> {
    let read =
        |rel: &str| std::fs::read_to_string(repo_root().join(rel)).with_context(|| format!("reading {rel}"));
    let policy_req = read("crates/mentor-policy/bench/requirements.txt")?;
    let trl_req = read("crates/mentor-trainer/bench/requirements-trl.txt")?;
    eprintln!("==> TRL + PyTorch into a private venv (first time: ~6 GB with the CUDA wheels)");
    crate::venv::ensure(dir, VENV, &format!("{policy_req}\n{trl_req}"))
}

/// Runs both sides and reports the comparison.
pub fn run_step(dir: &AssetDir, extra: &[String]) -> Result<()> {
    let w = Workload::from_args(extra)?;
    let venv = trl_venv(dir)?;

    let work = target_dir().join("bench/step");
    let data = work.join("data");
    write_data(&data, w.seed)?;
    eprintln!("==> bench step: cargo build -p mentor-cli --bin mentor (the binary `mentor train` runs)");
    run(cargo().args(["build", "-p", "mentor-cli", "--bin", "mentor"]), "cargo build")?;
    let mentor = target_dir().join("debug/mentor");

    let (mut ours, mut trl, mut ours_rss, mut trl_rss) = (Vec::new(), Vec::new(), 0f64, 0f64);
    let mut versions = Value::Null;
    for round in 0..w.rounds {
        eprintln!(
            "==> bench step: round {}/{}: mentor train ({} + {} steps, {} threads)",
            round + 1,
            w.rounds,
            w.warmup,
            w.steps,
            w.threads
        );
        let out = work.join(format!("ours-{round}"));
        let (steps, rss) = run_ours(&mentor, dir, &data, &out, &w)?;
        ours.extend(steps);
        ours_rss = ours_rss.max(rss);
        eprintln!("==> bench step: round {}/{}: TRL GRPOTrainer", round + 1, w.rounds);
        let (steps, rss, v) = run_trl(&venv, dir, &data, &w)?;
        trl.extend(steps);
        trl_rss = trl_rss.max(rss);
        versions = v;
    }
    let report = compare(&w, &ours, &trl, ours_rss, trl_rss, versions)?;
    println!("{}", table(&report));
    let path = target_dir().join("bench/step_vs_trl.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    eprintln!("==> bench step: results in {}", path.display());
    println!(
        "speedup={:.3} memory_ratio={:.3}",
        report["speedup"].as_f64().unwrap_or(f64::NAN),
        report["memory_ratio"].as_f64().unwrap_or(f64::NAN)
    );
    Ok(())
}

/// `gsm8k/train.jsonl`: 300 seeded "What is A + B?" records (A, B in 1..9); `test.jsonl`: one
/// record outside that range (the trainer evaluates on it once; it never overlaps training).
fn write_data(data: &Path, seed: u64) -> Result<()> {
    let dir = data.join("gsm8k");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut digit = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        1 + (state >> 33) % 9
    };
    let record = |a: u64, b: u64| {
        json!({"question": format!("What is {a} + {b}?"), "answer": format!("{a} + {b} = {}\n#### {}", a + b, a + b)}).to_string()
    };
    let train: Vec<String> = (0..300).map(|_| record(digit(), digit())).collect();
    crate::hashing::write_atomic(&dir.join("train.jsonl"), (train.join("\n") + "\n").as_bytes())?;
    crate::hashing::write_atomic(&dir.join("test.jsonl"), (record(10, 10) + "\n").as_bytes())?;
    Ok(())
}

/// One `mentor train` run; returns its timed steps and its peak RSS in MiB.
fn run_ours(
    mentor: &Path,
    dir: &AssetDir,
    data: &Path,
    out: &Path,
    w: &Workload,
) -> Result<(Vec<Value>, f64)> {
    if out.exists() {
        std::fs::remove_dir_all(out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
    let q = |p: &Path| format!("{:?}", p.display().to_string());
    let sets = [
        format!("data.dir={}", q(data)),
        format!("sampling.prompts_per_step={}", w.prompts),
        format!("sampling.group_size={}", w.group),
        format!("sampling.max_new_tokens={}", w.new_tokens),
        "sampling.temperature=1.0".into(),
        "sampling.top_p=1.0".into(),
        "sampling.top_k=0".into(),
        "grpo.loss_type=\"grpo\"".into(),
        "grpo.beta=0.0".into(),
        "grpo.learning_rate=0.000001".into(),
        "grpo.num_iterations=1".into(),
        "strategy.arm=\"vanilla\"".into(),
        "data.eval_tasks=1".into(),
        "eval.every=1000000".into(),
        format!("run.steps={}", w.warmup + w.steps),
        format!("run.seed={}", w.seed),
        format!("run.output_dir={}", q(out)),
        "run.checkpoint_every=1000000".into(),
        "run.progress=false".into(),
        format!("grpo.gradient_accumulation_steps={}", w.micro_batches),
    ];
    let mut cmd = Command::new(mentor);
    cmd.args(["--threads", &w.threads.to_string(), "train", "--config", PRESET]);
    for s in &sets {
        cmd.args(["--set", s]);
    }
    cmd.env(mentor_core::assets::HOME_VAR, dir.root());
    set_threads(&mut cmd, w.threads);
    let status = cmd.status().with_context(|| format!("could not start {}", mentor.display()))?;
    if !status.success() {
        bail!("mentor train failed ({status}); its output is above");
    }
    let config = std::fs::read_to_string(out.join("config.toml")).context("the run wrote no config.toml")?;
    if !config.contains(&format!("system_prompt = '{SYSTEM_PROMPT}'")) {
        bail!("the {PRESET} preset's system prompt changed: update SYSTEM_PROMPT in xtask/src/bench_step.rs");
    }
    let metrics =
        std::fs::read_to_string(out.join("metrics.jsonl")).context("the run wrote no metrics.jsonl")?;
    let mut steps = Vec::new();
    let mut rss = 0f64;
    for line in metrics.lines().filter(|l| !l.trim().is_empty()) {
        let m: Value = serde_json::from_str(line).with_context(|| format!("bad metrics line: {line}"))?;
        let get = |k: &str| m.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        rss = rss.max(get("peak_rss_mib"));
        let step = m.get("step").and_then(Value::as_u64).unwrap_or(0) as usize;
        if step < w.warmup {
            continue;
        }
        let seconds = get("seconds");
        let (generation, verification, update) =
            (get("sample_seconds"), get("score_seconds"), get("update_seconds"));
        steps.push(json!({
            "step": step, "seconds": seconds, "generation": generation, "verification": verification,
            "update": update, "other": seconds - generation - verification - update,
        }));
    }
    if steps.len() != w.steps {
        bail!("mentor train logged {} timed steps, expected {}", steps.len(), w.steps);
    }
    Ok((steps, rss))
}

/// One TRL run; returns its timed steps (in our categories, with TRL's finer split kept), its
/// peak RSS in MiB and the versions it reported.
fn run_trl(venv: &Path, dir: &AssetDir, data: &Path, w: &Workload) -> Result<(Vec<Value>, f64, Value)> {
    let mut cmd = Command::new(venv.join("bin/python"));
    cmd.arg(repo_root().join("crates/mentor-trainer/bench/trl_step.py"))
        .arg("--gguf")
        .arg(dir.smollm2_gguf())
        .arg("--data")
        .arg(data.join("gsm8k/train.jsonl"))
        .args(["--system", SYSTEM_PROMPT])
        .args(["--threads", &w.threads.to_string()])
        .args(["--prompts", &w.prompts.to_string()])
        .args(["--group", &w.group.to_string()])
        .args(["--new-tokens", &w.new_tokens.to_string()])
        .args(["--steps", &w.steps.to_string()])
        .args(["--warmup", &w.warmup.to_string()])
        .args(["--seed", &w.seed.to_string()])
        .args(["--micro-batches", &w.trl_micro_batches.to_string()]);
    set_threads(&mut cmd, w.threads);
    let records = capture(&mut cmd, "the TRL step bench")?;
    let summary =
        records.iter().find(|r| r["what"] == "summary").context("the TRL bench printed no summary")?;
    let rss = summary["peak_rss_mib"].as_f64().context("no peak_rss_mib in the TRL summary")?;
    let mut steps = Vec::new();
    for r in records.iter().filter(|r| r["what"] == "step" && r["warmup"] == false) {
        let get = |k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let seconds = get("seconds");
        let (generation, verification) = (get("generation"), get("reward"));
        let update = get("logps") + get("forward") + get("backward") + get("optimizer");
        steps.push(json!({
            "step": r["step"], "seconds": seconds, "generation": generation, "verification": verification,
            "update": update, "other": seconds - generation - verification - update,
            "logps": get("logps"), "forward": get("forward"), "backward": get("backward"), "optimizer": get("optimizer"),
        }));
    }
    if steps.len() != w.steps {
        bail!("the TRL bench printed {} timed steps, expected {}", steps.len(), w.steps);
    }
    Ok((steps, rss, summary.clone()))
}

/// The median of `key` over `steps`.
fn median(steps: &[Value], key: &str) -> f64 {
    let mut v: Vec<f64> = steps.iter().filter_map(|s| s[key].as_f64()).collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

const PARTS: [&str; 5] = ["seconds", "generation", "verification", "update", "other"];

fn compare(
    w: &Workload,
    ours: &[Value],
    trl: &[Value],
    ours_rss: f64,
    trl_rss: f64,
    versions: Value,
) -> Result<Value> {
    let medians = |steps: &[Value]| -> Value {
        PARTS
            .iter()
            .map(|k| (k.to_string(), json!(median(steps, k))))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let (mo, mt) = (medians(ours), medians(trl));
    let speedup = mt["seconds"].as_f64().unwrap_or(f64::NAN) / mo["seconds"].as_f64().unwrap_or(f64::NAN);
    if ours_rss <= 0.0 {
        bail!("mentor train reported no peak RSS (peak_rss_mib needs Linux /proc)");
    }
    Ok(json!({
        "workload": {
            "threads": w.threads, "prompts": w.prompts, "group": w.group, "new_tokens": w.new_tokens,
            "timed_steps_per_round": w.steps, "warmup_steps": w.warmup, "rounds": w.rounds, "seed": w.seed,
            "loss_type": "grpo", "beta": 0.0, "learning_rate": 1e-6, "temperature": 1.0,
            "micro_batches": {"ours": w.micro_batches, "trl": w.trl_micro_batches},
        },
        "ours": {"median": mo, "peak_rss_mib": ours_rss, "steps": ours},
        "trl": {"median": mt, "peak_rss_mib": trl_rss, "steps": trl, "versions": versions,
                "median_split": {"logps": median(trl, "logps"), "forward": median(trl, "forward"),
                                 "backward": median(trl, "backward"), "optimizer": median(trl, "optimizer")}},
        "speedup": speedup,
        "memory_ratio": ours_rss / trl_rss,
        "goals": {"speedup_at_least": 2.0, "memory_ratio_at_most": 0.5},
    }))
}

fn table(r: &Value) -> String {
    let w = &r["workload"];
    let mut s = format!(
        "GRPO step, {} prompts x {} completions, <= {} new tokens, {} threads; median of {} timed steps x {} rounds; update in {} (ours) / {} (TRL) micro-batches\n",
        w["prompts"], w["group"], w["new_tokens"], w["threads"], w["timed_steps_per_round"], w["rounds"],
        w["micro_batches"]["ours"], w["micro_batches"]["trl"]
    );
    s += &format!("{:<22} {:>10} {:>10} {:>10}\n", "seconds per step", "mentor", "TRL", "TRL/ours");
    for k in PARTS {
        let (o, t) = (
            r["ours"]["median"][k].as_f64().unwrap_or(f64::NAN),
            r["trl"]["median"][k].as_f64().unwrap_or(f64::NAN),
        );
        let name = if k == "seconds" { "whole step" } else { k };
        s += &format!("{name:<22} {o:>10.2} {t:>10.2} {:>10.2}\n", t / o);
    }
    let split = &r["trl"]["median_split"];
    s += &format!(
        "  TRL's update: log-prob passes {:.2}, forward {:.2}, backward {:.2}, optimizer {:.2}\n",
        split["logps"].as_f64().unwrap_or(f64::NAN),
        split["forward"].as_f64().unwrap_or(f64::NAN),
        split["backward"].as_f64().unwrap_or(f64::NAN),
        split["optimizer"].as_f64().unwrap_or(f64::NAN)
    );
    let (o, t) = (
        r["ours"]["peak_rss_mib"].as_f64().unwrap_or(f64::NAN),
        r["trl"]["peak_rss_mib"].as_f64().unwrap_or(f64::NAN),
    );
    s += &format!("{:<22} {:>10.0} {:>10.0} {:>10.2}\n", "peak RSS MiB", o, t, o / t);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let steps = |v: &[f64]| v.iter().map(|x| json!({"seconds": x})).collect::<Vec<_>>();
        assert_eq!(median(&steps(&[3.0, 1.0, 2.0]), "seconds"), 2.0);
        assert_eq!(median(&steps(&[4.0, 1.0, 2.0, 3.0]), "seconds"), 2.5);
        assert!(median(&[], "seconds").is_nan());
    }

    #[test]
    fn workload_flags_are_checked() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let w = Workload::from_args(&args(&["--steps", "3", "--threads", "2"])).unwrap();
        assert_eq!((w.steps, w.threads, w.prompts, w.group, w.new_tokens), (3, 2, 4, 8, 64));
        assert!(Workload::from_args(&args(&["--group", "1"])).is_err());
        assert!(Workload::from_args(&args(&["--bogus", "1"])).is_err());
        assert!(Workload::from_args(&args(&["--steps", "x"])).is_err());
        assert_eq!((w.micro_batches, w.trl_micro_batches), (4, 1));
        assert!(Workload::from_args(&args(&["--micro-batches", "3"])).is_err(), "3 does not divide 32 rows");
        assert!(Workload::from_args(&args(&["--trl-micro-batches", "0"])).is_err());
        assert!(Workload::from_args(&args(&["--trl-micro-batches", "8"])).is_ok());
    }

    #[test]
    fn data_has_300_train_records_and_a_disjoint_test_record() {
        let dir = tempfile::tempdir().unwrap();
        write_data(dir.path(), 0).unwrap();
        let train = std::fs::read_to_string(dir.path().join("gsm8k/train.jsonl")).unwrap();
        let test = std::fs::read_to_string(dir.path().join("gsm8k/test.jsonl")).unwrap();
        assert_eq!(train.lines().count(), 300);
        for line in train.lines() {
            let r: Value = serde_json::from_str(line).unwrap();
            let q = r["question"].as_str().unwrap();
            let (a, b) = q.trim_start_matches("What is ").trim_end_matches('?').split_once(" + ").unwrap();
            let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
            assert!((1..=9).contains(&a) && (1..=9).contains(&b), "{q}");
            assert!(r["answer"].as_str().unwrap().ends_with(&format!("#### {}", a + b)));
            assert!(!test.contains(q));
        }
        // Seeded: the same file again, another for another seed.
        let again = tempfile::tempdir().unwrap();
        write_data(again.path(), 0).unwrap();
        assert_eq!(std::fs::read_to_string(again.path().join("gsm8k/train.jsonl")).unwrap(), train);
        write_data(again.path(), 1).unwrap();
        assert_ne!(std::fs::read_to_string(again.path().join("gsm8k/train.jsonl")).unwrap(), train);
    }
}
