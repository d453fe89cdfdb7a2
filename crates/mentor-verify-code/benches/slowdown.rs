//! The sandbox's slowdown against native CPython on CPU-bound Python: the figure behind
//! [`mentor_verify_code::SANDBOX_SLOWDOWN`], from which the default CPU limit is set.
//!
//! Each workload times itself (`time.perf_counter` around the work, so start-up is left out)
//! in the sandbox and in a native interpreter, alternating, `--rounds` times; the table gives
//! the fastest time of each and their ratio, and the last line the largest ratio.
//!
//! ```text
//! cargo bench --profile dev -p mentor-verify-code --bench slowdown -- [--rounds N] [--python python3]
//! ```

use std::process::Command;
use std::time::Duration;

use mentor_core::assets::AssetDir;
use mentor_verify_code::{Limits, Sandbox, SandboxConfig};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

/// (name, setup, work): `work` is timed.
const WORKLOADS: &[(&str, &str, &str)] = &[
    (
        "mbpp/123 reference (divisor sums)",
        "def f(limit):\n    am = set()\n    for num in range(2, limit + 1):\n        if num in am:\n            continue\n        s = sum([d for d in range(1, num) if num % d == 0])\n        s2 = sum([d for d in range(1, s) if s % d == 0])\n        if num == s2 and num != s:\n            am.add(num)\n            am.add(s2)\n    return sum(am)\n",
        "f(4000)",
    ),
    ("integer loop", "def f(n):\n    t = 0\n    for i in range(n):\n        t += i * i % 7\n    return t\n", "f(2_000_000)"),
    ("recursion", "def f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\n", "f(24)"),
    (
        "strings and dicts",
        "def f(n):\n    d = {}\n    for i in range(n):\n        k = str(i % 1000) + 'x'\n        d[k] = d.get(k, 0) + len(k)\n    return sorted(d.items())[:3]\n",
        "f(400_000)",
    ),
    ("sorting", "import random\nrandom.seed(1)\nxs = [random.random() for _ in range(300_000)]\n", "sorted(xs)"),
];

fn program(setup: &str, work: &str) -> String {
    format!("import time\n{setup}\nt0 = time.perf_counter()\n{work}\nprint(time.perf_counter() - t0)\n")
}

fn seconds(stdout: &[u8]) -> BoxResult<f64> {
    let text = String::from_utf8_lossy(stdout);
    Ok(text.trim().lines().last().ok_or("no output")?.trim().parse()?)
}

fn main() -> BoxResult<()> {
    // A timing program: `cargo bench` runs it and passes `--bench`; `cargo test --all-targets`
    // runs it without, and then it only says how to run it, so the test suite times nothing.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("a timing program: run it with `cargo bench --profile dev -p mentor-verify-code --bench slowdown [-- ARGS]`");
        return Ok(());
    }
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let rounds: usize = arg("--rounds").and_then(|s| s.parse().ok()).unwrap_or(3);
    let python = arg("--python").unwrap_or_else(|| "python3".into());
    let assets = AssetDir::resolve(|k| std::env::var(k).ok()).ok_or("set HOME or MENTOR_HOME")?;
    let mut config = SandboxConfig::from_assets(&assets);
    config.concurrency = 1;
    let sandbox = Sandbox::new(&config)?;
    let limits = Limits {
        cpu_time: Duration::from_secs(120),
        wall_time: Duration::from_secs(240),
        ..Limits::default()
    };
    let version = Command::new(&python).arg("--version").output()?;
    println!("native: {}", String::from_utf8_lossy(&version.stdout).trim());
    println!("| workload | native s | sandbox s | ratio |\n|---|---|---|---|");
    let mut worst: f64 = 0.0;
    for (name, setup, work) in WORKLOADS {
        let code = program(setup, work);
        let (mut native, mut boxed) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..rounds {
            let out = Command::new(&python).arg("-c").arg(&code).output()?;
            native = native.min(seconds(&out.stdout)?);
            let exec = sandbox.run_blocking_with(&code, b"", &limits)?;
            boxed = boxed.min(seconds(&exec.stdout)?);
        }
        let ratio = boxed / native;
        worst = worst.max(ratio);
        println!("| {name} | {native:.3} | {boxed:.3} | {ratio:.2} |");
    }
    println!("largest slowdown: {worst:.2}");
    Ok(())
}
