//! Throughput of HumanEval test programs: the wasm sandbox (1 and 2 workers) against native
//! `python3 -I -S -c` subprocesses doing the same work in the same run, plus the cost of
//! building a sandbox from the compile cache.
//!
//! ```text
//! cargo run --release -p mentor-verify-code --example bench -- [--rounds N] [--cold] [--breakdown]
//! ```
//! `--cold` also measures compiling the runtime without a cache (10–60 s). `--breakdown` first
//! times single executions one by one (an empty program, a small HumanEval program, and the
//! distribution over the 164 programs, run and judged) to show where the time goes. Prints
//! markdown tables on stdout.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mentor_core::assets::AssetDir;
use mentor_core::{CodeHarness, Payload, Task, Verifier};
use mentor_verify_code::{CodeVerifier, Exit, Sandbox, SandboxConfig, VerifierConfig};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

fn programs(tasks: &[Task]) -> Vec<String> {
    tasks
        .iter()
        .filter_map(|t| match &t.payload {
            Payload::Code(c) => match &c.harness {
                CodeHarness::HumanEval { prompt, test, entry_point } => Some(format!(
                    "{prompt}{}\n\n{test}\n\ncheck({entry_point})\n",
                    c.reference_solution.as_deref().unwrap_or("")
                )),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Runs `n` jobs on `workers` threads; returns the wall time.
fn parallel(n: usize, workers: usize, job: impl Fn(usize) -> BoxResult<()> + Sync) -> BoxResult<Duration> {
    let next = AtomicUsize::new(0);
    let t0 = Instant::now();
    let failures = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                if let Err(e) = job(i) {
                    eprintln!("job {i}: {e}");
                    failures.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    let failed = failures.load(Ordering::Relaxed);
    if failed > 0 {
        return Err(format!("{failed} jobs failed").into());
    }
    Ok(t0.elapsed())
}

fn native(program: &str) -> BoxResult<()> {
    let out = Command::new("python3").args(["-I", "-S", "-c", program]).stdin(Stdio::null()).output()?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
    }
    Ok(())
}

const SMALL: &str = "from typing import List\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n    for i, a in enumerate(numbers):\n        for j, b in enumerate(numbers):\n            if i != j and abs(a - b) < threshold:\n                return True\n    return False\n\ndef check(candidate):\n    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True\n    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False\n    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True\n    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 1.0) == True\ncheck(has_close_elements)\n";

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median, 90th percentile and maximum of `times` (sorted in place), in ms.
/// Prints the spread of per-task times and the five slowest tasks as two table rows.
fn print_timed(kind: &str, what: &str, mut timed: Vec<(Duration, String)>) {
    let mut times: Vec<Duration> = timed.iter().map(|(d, _)| *d).collect();
    println!("| {kind}: {what} | {} |", spread(&mut times));
    timed.sort();
    let top: Vec<String> =
        timed.iter().rev().take(5).map(|(d, id)| format!("{id} {:.1} ms", ms(*d))).collect();
    println!("| {kind}: slowest | {} |", top.join(", "));
}

fn spread(times: &mut [Duration]) -> String {
    times.sort();
    let n = times.len();
    if n == 0 {
        return "-".into();
    }
    let total: Duration = times.iter().sum();
    format!(
        "median {:.2} ms, p90 {:.2}, max {:.2}, mean {:.2}",
        ms(times[n / 2]),
        ms(times[(n * 9) / 10]),
        ms(times[n - 1]),
        ms(total) / n as f64
    )
}

/// Single executions, one at a time, on one worker: where the time goes.
fn breakdown(sb: &Sandbox, tasks: &[Task], progs: &[String]) -> BoxResult<()> {
    println!("| single executions (1 worker, sequential) | time |\n|---|---|");
    for (name, code) in [("empty program (`pass`)", "pass"), ("small HumanEval program (spike's)", SMALL)] {
        let mut times = Vec::new();
        for _ in 0..50 {
            let t0 = Instant::now();
            sb.run_blocking(code, b"")?;
            times.push(t0.elapsed());
        }
        println!("| run: {name} | {} |", spread(&mut times));
    }
    let mut timed = Vec::new();
    for (t, p) in tasks.iter().zip(progs) {
        let t0 = Instant::now();
        sb.run_blocking(p, b"")?;
        timed.push((t0.elapsed(), t.id.clone()));
    }
    print_timed("run", "the 164 HumanEval programs", timed);
    let verifier = CodeVerifier::new(sb, VerifierConfig::default());
    let mut timed = Vec::new();
    for t in tasks {
        let t0 = Instant::now();
        verifier.verify(t, t.reference_solution().unwrap_or(""))?;
        timed.push((t0.elapsed(), t.id.clone()));
    }
    print_timed("verify", "the 164 HumanEval tasks", timed);
    println!();
    Ok(())
}

fn per_min(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64() * 60.0
}

fn main() -> BoxResult<()> {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let cold = args.iter().any(|a| a == "--cold");
    let want_breakdown = args.iter().any(|a| a == "--breakdown");
    let assets = AssetDir::resolve(|k| std::env::var(k).ok()).ok_or("set HOME or MENTOR_HOME")?;
    let data = std::env::var_os("MENTOR_DATASETS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets"));
    let tasks = mentor_core::datasets::load_humaneval(&data.join("humaneval/HumanEval.jsonl"))?;
    let progs = programs(&tasks);
    let n = progs.len() * rounds;
    if want_breakdown {
        let sb = Sandbox::new(&SandboxConfig { concurrency: 1, ..SandboxConfig::from_assets(&assets) })?;
        breakdown(&sb, &tasks, &progs)?;
    }
    println!("| measurement | value |\n|---|---|");

    if cold {
        let t0 = Instant::now();
        let sb = Sandbox::new(&SandboxConfig {
            cache_dir: None,
            concurrency: 1,
            ..SandboxConfig::from_assets(&assets)
        })?;
        println!("| compile runtime, no cache | {:.1} s |", t0.elapsed().as_secs_f64());
        drop(sb);
    }
    let mut ratios = Vec::new();
    for workers in [1usize, 2] {
        let t0 = Instant::now();
        let sb =
            Sandbox::new(&SandboxConfig { concurrency: workers, ..SandboxConfig::from_assets(&assets) })?;
        println!(
            "| new Sandbox ({workers} worker{}), cache {:?} | {:.0} ms (load {:.0} ms) |",
            if workers == 1 { "" } else { "s" },
            sb.load_report().status,
            t0.elapsed().as_secs_f64() * 1e3,
            sb.load_report().elapsed.as_secs_f64() * 1e3
        );
        // Warm-up.
        for p in progs.iter().take(8) {
            sb.run_blocking(p, b"")?;
        }
        let batch: Vec<(String, Vec<u8>)> =
            (0..n).map(|i| (progs[i % progs.len()].clone(), Vec::new())).collect();
        let t0 = Instant::now();
        let out = sb.run_batch(&batch)?;
        let wasm = t0.elapsed();
        let bad = out.iter().filter(|e| !matches!(e, Ok(x) if x.exit == Exit::Code(0))).count();
        if bad > 0 {
            return Err(format!("{bad} sandbox runs failed").into());
        }
        let verifier = CodeVerifier::new(&sb, VerifierConfig::default());
        let items: Vec<(&Task, &str)> = (0..n)
            .map(|i| {
                let t = &tasks[i % tasks.len()];
                (t, t.reference_solution().unwrap_or(""))
            })
            .collect();
        let t0 = Instant::now();
        let verdicts = verifier.verify_batch(&items);
        let judged = t0.elapsed();
        let failed = verdicts.iter().filter(|v| !matches!(v, Ok(v) if v.passed())).count();
        if failed > 0 {
            return Err(format!("{failed} verdicts failed").into());
        }
        let nat = parallel(progs.len(), workers, |i| native(&progs[i]))?;
        let wasm_rate = per_min(n, wasm);
        let nat_rate = per_min(progs.len(), nat);
        ratios.push(wasm_rate / nat_rate);
        println!("| {workers} worker(s): sandbox `run` (whole program) | {wasm_rate:.0} programs/min ({:.2} ms each) |", wasm.as_secs_f64() * 1e3 / n as f64);
        println!("| {workers} worker(s): sandbox verifier (per-test harness) | {:.0} programs/min ({:.2} ms each) |", per_min(n, judged), judged.as_secs_f64() * 1e3 / n as f64);
        println!(
            "| {workers} worker(s): native `python3 -I -S -c` | {nat_rate:.0} programs/min ({:.1} ms each) |",
            nat.as_secs_f64() * 1e3 / progs.len() as f64
        );
        println!(
            "| {workers} worker(s): sandbox / native | {:.1}x (verifier {:.1}x) |",
            wasm_rate / nat_rate,
            per_min(n, judged) / nat_rate
        );
    }
    eprintln!("ratios (run/native): {ratios:?}");
    Ok(())
}
