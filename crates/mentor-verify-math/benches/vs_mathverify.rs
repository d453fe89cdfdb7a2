//! Measures this crate against Hugging Face Math-Verify on the same labelled cases, in one run:
//! agreement with the human labels for both, checks per second for both, and the ratio.
//!
//! Run (release build; Math-Verify installed from `bench/requirements.txt` into a venv):
//!
//! ```text
//! python3 -m venv /tmp/mv-venv
//! /tmp/mv-venv/bin/pip install --require-hashes -r crates/mentor-verify-math/bench/requirements.txt
//! cargo bench -p mentor-verify-math --bench vs_mathverify -- --python /tmp/mv-venv/bin/python
//! ```
//!
//! Options: `--python PATH` (default `$MV_PYTHON`, else `python3`), `--cases FILE` (repeatable;
//! default: the peer fixture and the case table under `tests/data`), `--seconds S` (minimum
//! timing window for this crate, default 2). Cases marked `ambiguous` are skipped on both sides.
//! Throughput is single-threaded on both sides (Math-Verify is single-threaded); the
//! multi-core batch rate of this crate is printed too.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use mentor_verify_math::{check, check_batch, Config};
use serde_json::{json, Value};

struct Case {
    gold: String,
    completion: String,
    expected: bool,
}

fn load(path: &Path) -> Result<Vec<Case>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    for (k, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).with_context(|| format!("{}:{}", path.display(), k + 1))?;
        if v["ambiguous"].as_bool() == Some(true) {
            continue;
        }
        let field = |name: &str| {
            v[name].as_str().map(str::to_string).with_context(|| format!("line {} lacks {name}", k + 1))
        };
        out.push(Case {
            gold: field("gold")?,
            completion: field("completion")?,
            expected: v["expected"].as_bool().context("expected must be a bool")?,
        });
    }
    Ok(out)
}

struct Ours {
    agree: usize,
    checks_per_sec: f64,
    batch_checks_per_sec: f64,
}

fn run_ours(cases: &[Case], min_seconds: f64) -> Ours {
    let cfg = Config::default();
    let agree = cases.iter().filter(|c| check(&c.gold, &c.completion, &cfg).passed() == c.expected).count();
    // Single thread: repeat full passes until the window is filled.
    let start = Instant::now();
    let mut n = 0usize;
    while start.elapsed().as_secs_f64() < min_seconds {
        for c in cases {
            std::hint::black_box(check(&c.gold, &c.completion, &cfg));
        }
        n += cases.len();
    }
    let single = n as f64 / start.elapsed().as_secs_f64();
    let pairs: Vec<(&str, &str)> = cases.iter().map(|c| (c.gold.as_str(), c.completion.as_str())).collect();
    let start = Instant::now();
    let mut n = 0usize;
    while start.elapsed().as_secs_f64() < min_seconds {
        std::hint::black_box(check_batch(&pairs, &cfg));
        n += pairs.len();
    }
    Ours { agree, checks_per_sec: single, batch_checks_per_sec: n as f64 / start.elapsed().as_secs_f64() }
}

fn run_mathverify(python: &str, file: &Path) -> Result<Value> {
    let script = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("bench/mathverify_runner.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(file)
        .output()
        .with_context(|| format!("running {python} {}", script.display()))?;
    if !out.status.success() {
        bail!("Math-Verify runner failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).context("parsing the Math-Verify runner's JSON")
}

fn main() -> Result<()> {
    // A timing program: `cargo bench` runs it and passes `--bench`; `cargo test --all-targets`
    // runs it without, and then it only says how to run it, so the test suite times nothing.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("a timing program: run it with `cargo bench -p mentor-verify-math --bench vs_mathverify [-- ARGS]`");
        return Ok(());
    }
    let mut python = std::env::var("MV_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut files = Vec::new();
    let mut seconds = 2.0f64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--python" => python = args.next().context("--python needs a path")?,
            "--cases" => files.push(PathBuf::from(args.next().context("--cases needs a file")?)),
            "--seconds" => seconds = args.next().context("--seconds needs a number")?.parse()?,
            "--bench" => {}
            other => bail!("unknown argument {other}"),
        }
    }
    if files.is_empty() {
        let data = PathBuf::from(
            std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
        )
        .join("tests/data");
        files = vec![data.join("math_equiv_cases.jsonl"), data.join("cases.jsonl")];
    }
    let mut report = Vec::new();
    for file in &files {
        let cases = load(file)?;
        let ours = run_ours(&cases, seconds);
        let mv = run_mathverify(&python, file)?;
        let mv_rate = mv["checks_per_sec"].as_f64().unwrap_or(0.0);
        let mv_agree = mv["agree"].as_u64().unwrap_or(0);
        let n = cases.len();
        let row = json!({
            "cases_file": file.file_name().map(|s| s.to_string_lossy().into_owned()),
            "cases": n,
            "ours": {
                "agree": ours.agree,
                "agreement": ours.agree as f64 / n as f64,
                "checks_per_sec": ours.checks_per_sec,
                "batch_checks_per_sec": ours.batch_checks_per_sec,
                "threads": rayon::current_num_threads(),
            },
            "math_verify": {
                "version": mv["version"],
                "agree": mv_agree,
                "agreement": mv["agreement"],
                "checks_per_sec": mv_rate,
            },
            "speedup_single_thread": if mv_rate > 0.0 { ours.checks_per_sec / mv_rate } else { 0.0 },
        });
        println!(
            "{:<26} n={n:<4} agreement ours {:.1}% vs Math-Verify {:.1}% | checks/s ours {:.0} (batch {:.0}) vs {:.1} => {:.0}x",
            row["cases_file"].as_str().unwrap_or("?"),
            100.0 * ours.agree as f64 / n as f64,
            100.0 * mv_agree as f64 / n as f64,
            ours.checks_per_sec,
            ours.batch_checks_per_sec,
            mv_rate,
            row["speedup_single_thread"].as_f64().unwrap_or(0.0),
        );
        report.push(row);
    }
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
