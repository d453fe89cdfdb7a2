//! Throughput of HumanEval test programs: the wasm sandbox (1 and 2 workers) against native
//! `python3 -I -S -c` subprocesses doing the same work in the same run, plus the cost of
//! building a sandbox from the compile cache.
//!
//! ```text
//! cargo bench -p mentor-verify-code --bench sandbox_vs_native -- [--rounds N] [--cold] [--breakdown] [--python PATH]
//! ```
//! The native side runs `--python PATH`, by default the real executable behind `python3` (not a
//! version manager's shim).
//! `--cold` also measures compiling the runtime without a cache (10–60 s). `--breakdown` first
//! times single executions one by one (an empty program, a small HumanEval program, and the
//! distribution over the 164 programs, run and judged) to show where the time goes. Prints
//! markdown tables on stdout.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mentor_core::assets::AssetDir;
use mentor_core::{CodeHarness, Payload, Task, Verifier};
use mentor_verify_code::{CodeVerifier, Exit, Sandbox, SandboxConfig, SlotReset, VerifierConfig};

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

/// The interpreter the native side runs: `--python PATH`, else the real executable behind
/// `python3` on `PATH`. Version managers (pyenv, asdf) put a shell-script shim there that costs
/// far more than the interpreter's own start-up (measured: ~270 ms against ~35 ms per run), so
/// timing the shim would flatter the sandbox.
fn native_python(args: &[String]) -> BoxResult<String> {
    if let Some(p) = args.iter().position(|a| a == "--python").and_then(|i| args.get(i + 1)) {
        return Ok(p.clone());
    }
    let out = Command::new("python3")
        .args(["-I", "-S", "-c", "import sys; print(sys.executable)"])
        .stdin(Stdio::null())
        .output()?;
    let exe = String::from_utf8(out.stdout)?.trim().to_owned();
    if !out.status.success() || exe.is_empty() {
        return Err("`python3` on PATH did not report its executable: pass --python PATH".into());
    }
    Ok(exe)
}

fn native(python: &str, program: &str) -> BoxResult<()> {
    let out = Command::new(python).args(["-I", "-S", "-c", program]).stdin(Stdio::null()).output()?;
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

/// The ways of resetting a used pool slot (`SandboxConfig::slot_reset`), interleaved round by
/// round on one worker each so drift in the machine's load falls on all alike: an empty
/// program, the spike's small program, and the 164 HumanEval tasks run whole and judged.
/// Prints the time and the page faults per execution (Linux).
fn slot_reset_ab(assets: &AssetDir, tasks: &[Task], progs: &[String]) -> BoxResult<()> {
    let ways = [
        ("release", SlotReset::Release),
        ("dirty pages, 1 MiB", SlotReset::DirtyPages { bytes: 1 << 20 }),
        ("copy first 32 MiB (default)", SlotReset::CopyFirst { bytes: 32 << 20 }),
    ];
    let boxes = ways
        .iter()
        .map(|&(_, slot_reset)| {
            Sandbox::new(&SandboxConfig { concurrency: 1, slot_reset, ..SandboxConfig::from_assets(assets) })
        })
        .collect::<Result<Vec<_>, _>>()?;
    println!(
        "| slot reset, interleaved (1 worker; PAGEMAP_SCAN available: {}) | time; page faults per execution |\n|---|---|",
        wasmtime::PoolingAllocationConfig::is_pagemap_scan_available()
    );
    const KINDS: [&str; 4] = ["empty program", "small program", "164 programs, run", "164 tasks, judged"];
    let mut times = vec![[(); 4].map(|_| Vec::new()); ways.len()];
    let mut faults = vec![[0u64; 4]; ways.len()];
    for _ in 0..2 {
        for ((sb, t), f) in boxes.iter().zip(&mut times).zip(&mut faults) {
            let verifier = CodeVerifier::new(sb, VerifierConfig::default());
            for (kind, (slot, fault)) in t.iter_mut().zip(f.iter_mut()).enumerate() {
                let before = minor_faults();
                let n = if kind < 2 { 20 } else { tasks.len() };
                for i in 0..n {
                    let t0 = Instant::now();
                    match kind {
                        0 => drop(sb.run_blocking("pass", b"")?),
                        1 => drop(sb.run_blocking(SMALL, b"")?),
                        2 => drop(sb.run_blocking(&progs[i], b"")?),
                        _ => drop(verifier.verify(&tasks[i], tasks[i].reference_solution().unwrap_or(""))?),
                    }
                    slot.push(t0.elapsed());
                }
                *fault += minor_faults().saturating_sub(before);
            }
        }
    }
    for (((name, _), t), f) in ways.iter().zip(&mut times).zip(&faults) {
        for ((kind, slot), fault) in KINDS.iter().zip(t.iter_mut()).zip(f) {
            let per = fault / slot.len() as u64;
            println!("| {name}: {kind} | {}; {per} faults |", spread(slot));
        }
    }
    Ok(())
}

/// This process's minor page faults so far (Linux `/proc/self/stat`; 0 elsewhere).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name: state is field 3, minflt field 10.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    rest.split_whitespace().nth(7).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Times `job(i)` for each task in turn: `(time, task id)`.
fn time_each(
    tasks: &[Task],
    mut job: impl FnMut(usize) -> BoxResult<()>,
) -> BoxResult<Vec<(Duration, String)>> {
    let mut timed = Vec::with_capacity(tasks.len());
    for (i, t) in tasks.iter().enumerate() {
        let t0 = Instant::now();
        job(i)?;
        timed.push((t0.elapsed(), t.id.clone()));
    }
    Ok(timed)
}

/// Single executions, one at a time, on one worker: where the time goes.
fn breakdown(sb: &Sandbox, tasks: &[Task], progs: &[String], python: &str) -> BoxResult<()> {
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
    let verifier = CodeVerifier::new(sb, VerifierConfig::default());
    print_timed(
        "run",
        "the 164 HumanEval programs",
        time_each(tasks, |i| {
            sb.run_blocking(&progs[i], b"")?;
            Ok(())
        })?,
    );
    print_timed("native", "the 164 HumanEval programs", time_each(tasks, |i| native(python, &progs[i]))?);
    let timed = time_each(tasks, |i| {
        let t = &tasks[i];
        verifier.verify(t, t.reference_solution().unwrap_or(""))?;
        Ok(())
    })?;
    print_timed("verify", "the 164 HumanEval tasks", timed);
    println!();
    Ok(())
}

fn per_min(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64() * 60.0
}

fn main() -> BoxResult<()> {
    // A timing program: `cargo bench` runs it and passes `--bench`; `cargo test --all-targets`
    // runs it without, and then it only says how to run it, so the test suite times nothing.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("a timing program: run it with `cargo bench -p mentor-verify-code --bench sandbox_vs_native [-- ARGS]`");
        return Ok(());
    }
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let cold = args.iter().any(|a| a == "--cold");
    let want_breakdown = args.iter().any(|a| a == "--breakdown");
    let python = native_python(&args)?;
    let version = Command::new(&python)
        .args(["-I", "-S", "-c", "import sys; print(sys.version.split()[0])"])
        .output()?;
    eprintln!("native side: {python} (Python {})", String::from_utf8_lossy(&version.stdout).trim());
    let assets = AssetDir::resolve(|k| std::env::var(k).ok()).ok_or("set HOME or MENTOR_HOME")?;
    let data = mentor_core::datasets_dir!();
    let tasks = mentor_core::datasets::load_humaneval(&data.join("humaneval/HumanEval.jsonl"))?;
    let progs = programs(&tasks);
    let n = progs.len() * rounds;
    if want_breakdown {
        let sb = Sandbox::new(&SandboxConfig { concurrency: 1, ..SandboxConfig::from_assets(&assets) })?;
        breakdown(&sb, &tasks, &progs, &python)?;
        drop(sb);
        slot_reset_ab(&assets, &tasks, &progs)?;
        println!();
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
        let nat = parallel(progs.len(), workers, |i| native(&python, &progs[i]))?;
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
