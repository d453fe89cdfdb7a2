//! `cargo xtask bench policy`: the candle policy against PyTorch + transformers on the same
//! SmolLM2 GGUF, the same prompts, batch sizes, token counts and thread count, in one run.
//!
//! Both programs print one JSON object per measurement (`"what"`: `load`, `decode_bound`,
//! `generate` per batch, `train`, and for the peer `weights_check`); this module pairs them up,
//! prints a table with the ratios ours / PyTorch and writes everything to
//! `<target>/bench/policy_vs_torch.json`.

use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use mentor_core::assets::AssetDir;
use serde_json::{json, Value};

use crate::process::{cargo, repo_root, target_dir};

/// Name of the private venv (changes with the pinned versions).
const VENV: &str = "torch-2.15.0-transformers-5.24.0";
/// Goal of issue 5: our generation tokens/s over PyTorch's, at every batch size.
const GENERATE_GOAL: f64 = 1.5;
/// Goal of issue 5: our trained tokens/s over PyTorch's.
const TRAIN_GOAL: f64 = 1.0;
/// Arguments both bench programs understand, passed through to the peer.
const SHARED_ARGS: [&str; 4] = ["--new-tokens", "--train-batch", "--train-len", "--train-steps"];

/// Runs both benches and reports the comparison.
pub fn run(dir: &AssetDir, extra: &[String]) -> Result<()> {
    let threads = match flag_value(extra, "--threads") {
        Some(v) => v.parse::<usize>().with_context(|| format!("--threads {v} is not a count"))?,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let ours_args: Vec<String> = without_flag(extra, "--threads");
    let req = std::fs::read_to_string(repo_root().join("crates/mentor-policy/bench/requirements.txt"))?;
    eprintln!("==> bench policy: PyTorch + transformers into a private venv (first time: ~3 GB)");
    let venv = crate::venv::ensure(dir, VENV, &req)?;

    eprintln!("==> bench policy: candle, release build and run on the SmolLM2 GGUF ({threads} threads)");
    let mut ours = cargo();
    ours.args(["bench", "-p", "mentor-policy", "--bench", "throughput", "--"])
        .args(&ours_args)
        .env(mentor_core::assets::HOME_VAR, dir.root());
    set_threads(&mut ours, threads);
    let ours = capture(&mut ours, "the candle policy bench")?;

    eprintln!("==> bench policy: PyTorch + transformers on the same GGUF ({threads} threads)");
    let mut peer = Command::new(venv.join("bin/python"));
    peer.arg(repo_root().join("crates/mentor-policy/bench/torch_bench.py"))
        .arg("--gguf")
        .arg(dir.smollm2_gguf())
        .arg("--threads")
        .arg(threads.to_string());
    for name in SHARED_ARGS {
        if let Some(v) = flag_value(extra, name) {
            peer.args([name, v]);
        }
    }
    let fixture = repo_root().join("../shared/fixtures/smollm2_greedy.json");
    if fixture.is_file() {
        peer.arg("--fixture").arg(&fixture);
    } else {
        eprintln!("      warning: {} missing; the weights check is skipped", fixture.display());
    }
    set_threads(&mut peer, threads);
    let torch = capture(&mut peer, "the PyTorch bench")?;

    let report = compare(&ours, &torch, threads)?;
    println!("{}", table(&report));
    let out = target_dir().join("bench/policy_vs_torch.json");
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&out, serde_json::to_string_pretty(&report)?)?;
    eprintln!("==> bench policy: results in {}", out.display());
    Ok(())
}

/// Pins every thread pool both programs may use to `n`.
pub(crate) fn set_threads(cmd: &mut Command, n: usize) {
    for var in ["RAYON_NUM_THREADS", "CANDLE_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"] {
        cmd.env(var, n.to_string());
    }
}

/// Runs `cmd` with stderr shown, returning the JSON objects it printed on stdout (each line
/// is also echoed).
pub(crate) fn capture(cmd: &mut Command, what: &str) -> Result<Vec<Value>> {
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not start {what} ({:?})", cmd.get_program()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    if !out.status.success() {
        bail!("{what} failed ({})", out.status);
    }
    parse_lines(&stdout)
}

/// The JSON objects of `text`, one per line starting with `{"` (the peer's own lines; other
/// output, such as the Python dicts the transformers Trainer prints as its logs, is skipped).
fn parse_lines(text: &str) -> Result<Vec<Value>> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("{\""))
        .map(|l| serde_json::from_str(l).with_context(|| format!("bad bench line: {l}")))
        .collect()
}

/// The value after `name` in `args`.
pub(crate) fn flag_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

/// `args` without `name` and its value.
pub(crate) fn without_flag(args: &[String], name: &str) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
        } else if a == name {
            skip = true;
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// The record with `what == kind` (and `batch == batch` when given).
fn find<'a>(records: &'a [Value], kind: &str, batch: Option<u64>) -> Option<&'a Value> {
    records.iter().find(|r| {
        r["what"] == kind && batch.is_none_or(|b| r.get("batch").and_then(Value::as_u64) == Some(b))
    })
}

fn number(record: Option<&Value>, key: &str) -> Option<f64> {
    record.and_then(|r| r.get(key)).and_then(Value::as_f64)
}

/// One comparison row: ours, theirs, ratio, goal.
fn row(name: &str, ours: Option<f64>, torch: Option<f64>, goal: Option<f64>) -> Value {
    let ratio = match (ours, torch) {
        (Some(o), Some(t)) if t > 0.0 => Some(o / t),
        _ => None,
    };
    let met = match (ratio, goal) {
        (Some(r), Some(g)) => Some(r >= g),
        _ => None,
    };
    json!({ "measure": name, "ours": ours, "torch": torch, "ratio": ratio, "goal": goal, "goal_met": met })
}

/// Pairs the two programs' records into the report written to disk.
fn compare(ours: &[Value], torch: &[Value], threads: usize) -> Result<Value> {
    if let Some(check) = find(torch, "weights_check", None) {
        if check["equal"] == Value::Bool(false) {
            bail!("the PyTorch model's greedy output differs from the fixture: not the same weights");
        }
    }
    let mut rows = Vec::new();
    for batch in [1u64, 8, 32] {
        let o = find(ours, "generate", Some(batch));
        let t = find(torch, "generate", Some(batch));
        rows.push(row(
            &format!("generate tok/s, batch {batch}"),
            number(o, "tok_s"),
            number(t, "tok_s"),
            Some(GENERATE_GOAL),
        ));
    }
    // Transparency: the batch-32 prompts repeat (8 questions x 4) and share a system prompt,
    // which our prefill computes once; this row prefills every prompt in full, as the peer.
    rows.push(row(
        "  the same, every prompt prefilled in full",
        number(find(ours, "generate_full_prefill", Some(32)), "tok_s"),
        number(find(torch, "generate", Some(32)), "tok_s"),
        None,
    ));
    let (o, t) = (find(ours, "train", None), find(torch, "train", None));
    rows.push(row(
        "train tok/s (forward + backward)",
        number(o, "tok_s"),
        number(t, "tok_s"),
        Some(TRAIN_GOAL),
    ));
    rows.push(row(
        "batch-1 decode bound tok/s (weights / memcpy)",
        number(find(ours, "decode_bound", None), "batch1_tok_s_bound"),
        number(find(torch, "decode_bound", None), "batch1_tok_s_bound"),
        None,
    ));
    if rows.iter().any(|r| !r["goal"].is_null() && r["ratio"].is_null()) {
        bail!("a measurement is missing from one of the benches (see their output above)");
    }
    Ok(json!({ "threads": threads, "rows": rows, "ours": ours, "torch": torch }))
}

/// The report as a fixed-width table.
fn table(report: &Value) -> String {
    let fmt =
        |v: &Value, digits: usize| v.as_f64().map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"));
    let mut s = format!(
        "\n{:<46} {:>10} {:>10} {:>8} {:>6}\n",
        format!("SmolLM2-135M f32, {} threads", report["threads"]),
        "candle",
        "pytorch",
        "ratio",
        "goal"
    );
    for r in report["rows"].as_array().into_iter().flatten() {
        let goal = match (r["goal"].as_f64(), r["goal_met"].as_bool()) {
            (Some(g), Some(true)) => format!("{g}x ok"),
            (Some(g), _) => format!("{g}x NO"),
            _ => String::new(),
        };
        s.push_str(&format!(
            "{:<46} {:>10} {:>10} {:>8} {:>6}\n",
            r["measure"].as_str().unwrap_or(""),
            fmt(&r["ours"], 1),
            fmt(&r["torch"], 1),
            fmt(&r["ratio"], 2),
            goal
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<Value> {
        parse_lines(text).unwrap()
    }

    const OURS: &str = r#"{"what":"load","seconds":0.5,"params":134515008,"threads":2}
{"what":"decode_bound","memcpy_gb_s":5.0,"weight_mb":538,"batch1_tok_s_bound":9.3}
{"what":"generate","batch":1,"new_tokens":32,"seconds":2.00,"tok_s":16.00}
{"what":"generate","batch":8,"new_tokens":256,"seconds":4.00,"tok_s":64.00}
{"what":"generate","batch":32,"new_tokens":1024,"seconds":8.00,"tok_s":128.00}
{"what":"generate_full_prefill","batch":32,"new_tokens":1024,"seconds":16.00,"tok_s":64.00}
{"what":"train","batch":4,"seq":128,"forward_s":1.0,"forward_backward_s":4.0,"tok_s":128.0,"weights_with_grad":272}"#;

    const TORCH: &str = r#"noise that is not json
{"what": "load", "seconds": 3.0, "params": 134515008, "threads": 2}
{"what": "weights_check", "fixture": "smollm2_greedy.json", "equal": true}
{"what": "decode_bound", "memcpy_gb_s": 5.0, "weight_mb": 538, "batch1_tok_s_bound": 9.3}
{"what": "generate", "batch": 1, "new_tokens": 32, "seconds": 4.0, "tok_s": 8.0}
{"what": "generate", "batch": 8, "new_tokens": 256, "seconds": 2.0, "tok_s": 128.0}
{"what": "generate", "batch": 32, "new_tokens": 1024, "seconds": 8.0, "tok_s": 128.0}
{"what": "train", "batch": 4, "seq": 128, "forward_s": 1.0, "forward_backward_s": 2.0, "tok_s": 256.0}"#;

    #[test]
    fn only_json_objects_are_read_and_a_broken_one_is_an_error() {
        // The transformers Trainer prints its logs as Python dicts on stdout.
        let text = "{'loss': '0', 'grad_norm': '1.5'}\n{\"what\": \"step\", \"seconds\": 1.5}\nnoise\n";
        let got = lines(text);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["seconds"], 1.5);
        assert!(parse_lines("{\"what\": \"step\", \"seconds\": }").is_err());
    }

    #[test]
    fn pairs_measurements_and_judges_goals() {
        let report = compare(&lines(OURS), &lines(TORCH), 2).unwrap();
        let rows = report["rows"].as_array().unwrap();
        let ratios: Vec<f64> = rows.iter().map(|r| r["ratio"].as_f64().unwrap()).collect();
        assert_eq!(ratios, vec![2.0, 0.5, 1.0, 0.5, 0.5, 1.0]);
        let met: Vec<Option<bool>> = rows.iter().map(|r| r["goal_met"].as_bool()).collect();
        assert_eq!(met, vec![Some(true), Some(false), Some(false), None, Some(false), None]);
        let text = table(&report);
        assert!(text.contains("generate tok/s, batch 1"), "{text}");
        assert!(text.contains("1.5x ok") && text.contains("1x NO"), "{text}");
    }

    #[test]
    fn a_missing_measurement_or_other_weights_fail() {
        let ours: Vec<Value> = lines(OURS).into_iter().filter(|r| r["what"] != "train").collect();
        assert!(compare(&ours, &lines(TORCH), 2).is_err());
        let bad = TORCH.replace("\"equal\": true", "\"equal\": false");
        assert!(compare(&lines(OURS), &lines(&bad), 2).is_err());
    }

    #[test]
    fn thread_flag_is_taken_out_for_ours_and_shared_flags_are_read() {
        let args: Vec<String> =
            ["--threads", "1", "--new-tokens", "8"].iter().map(|s| s.to_string()).collect();
        assert_eq!(flag_value(&args, "--threads"), Some("1"));
        assert_eq!(flag_value(&args, "--new-tokens"), Some("8"));
        assert_eq!(flag_value(&args, "--train-len"), None);
        assert_eq!(without_flag(&args, "--threads"), vec!["--new-tokens", "8"]);
    }
}
