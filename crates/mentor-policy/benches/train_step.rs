//! Time of one training step of a tiny char-level policy on CPU: differentiable log-probs of a
//! batch (64 rows, 1-token prompts, ~80-token completions), masked mean NLL, backward; and the
//! forward alone. Prints milliseconds per step (mean of 10 after one warm-up step), as wall
//! time and as the process's CPU time (from `/proc/self/stat` on Linux; steadier than wall
//! time on a machine that other jobs share).
//!
//! Run: `RAYON_NUM_THREADS=1 cargo bench -p mentor-policy --bench train_step`
//! (offline, a few seconds; `-- --steps N --batch B --len L` to change the workload).
//!
//! Where the time goes, kernel by kernel (each fused kernel against the composite ops it
//! replaces, forward + backward, on this workload's shapes, times its calls per step; the
//! kernels are crate-private, so the table is an ignored test of the crate):
//! `RAYON_NUM_THREADS=1 cargo test --release -p mentor-policy --lib kernel_timing -- --ignored --nocapture`.

use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use mentor_policy::Config;
use mentor_policy::{LogProbOptions, Policy};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small deterministic generator (SplitMix64), so every run times the same batch.
struct Mix(u64);

impl Mix {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// CPU time (user + system) of this process in seconds, when `/proc/self/stat` is readable.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the `(comm)`, which may hold spaces: state is field 3, utime/stime 14/15.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux.
}

/// Milliseconds per step since `(wall, cpu)`, as text.
fn per_step(start: (Instant, Option<f64>), steps: usize) -> String {
    let wall = start.0.elapsed().as_secs_f64() * 1e3 / steps as f64;
    match (start.1, cpu_seconds()) {
        (Some(a), Some(b)) => format!("{wall:.1} ms wall, {:.1} ms CPU", (b - a) * 1e3 / steps as f64),
        _ => format!("{wall:.1} ms wall"),
    }
}

fn loss(policy: &Policy, prompts: &[Vec<u32>], completions: &[Vec<u32>]) -> candle_core::Result<Tensor> {
    let out = policy
        .logprobs(prompts, completions, &LogProbOptions::default())
        .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
    let n = out.mask.sum_all()?;
    out.logprobs.sum_all()?.neg()?.div(&n)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A timing program: `cargo bench` runs it and passes `--bench`; `cargo test --all-targets`
    // runs it without, and then it only says how to run it, so the test suite times nothing.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!(
            "a timing program: run it with `cargo bench -p mentor-policy --bench train_step [-- ARGS]`"
        );
        return Ok(());
    }
    let steps = arg("--steps", 10);
    let batch = arg("--batch", 64);
    let len = arg("--len", 80);
    let mut cfg = Config::tiny(0, 64, 3, 4, 4);
    cfg.intermediate_size = 170;
    let alphabet = "0123456789+=:A\nHint abcdefghijklmnopqrsuvwxyz.,";
    let policy = Policy::char_level(alphabet, cfg, 0, DType::F32, &Device::Cpu)?;
    let vocab = policy.config().vocab_size;
    let mut rng = Mix(7);
    let prompts: Vec<Vec<u32>> = (0..batch).map(|_| vec![rng.below(vocab) as u32]).collect();
    let completions: Vec<Vec<u32>> = (0..batch)
        .map(|_| {
            let n = len - len / 8 + rng.below(len / 4 + 1);
            (0..n).map(|_| rng.below(vocab) as u32).collect()
        })
        .collect();
    let threads = std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "default".into());
    println!(
        "batch {batch}, completions ~{len} tokens, {} parameters, rayon threads {threads}",
        policy.num_params()
    );

    // Warm-up, then timed steps.
    let l = loss(&policy, &prompts, &completions)?;
    mentor_kernels::on_pool(|| l.backward())?;
    let t = (Instant::now(), cpu_seconds());
    let mut last = 0f32;
    for _ in 0..steps {
        let l = loss(&policy, &prompts, &completions)?;
        let grads = mentor_kernels::on_pool(|| l.backward())?;
        std::hint::black_box(&grads);
        last = l.to_scalar::<f32>()?;
    }
    println!("train step (forward + backward): {}", per_step(t, steps));
    let t = (Instant::now(), cpu_seconds());
    for _ in 0..steps {
        std::hint::black_box(loss(&policy, &prompts, &completions)?);
    }
    println!("forward only:                    {}", per_step(t, steps));
    println!("loss {last:.6}");
    Ok(())
}
