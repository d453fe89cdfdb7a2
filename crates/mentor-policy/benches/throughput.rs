//! Throughput of the policy on SmolLM2-135M-Instruct (f32, CPU): generation tokens/s at batch
//! 1, 8 and 32, trained tokens/s (differentiable forward + backward), and the memory-bandwidth
//! bound for batch-1 decode (weight bytes / measured memcpy bandwidth). Batch 32 (the 8 chat
//! questions, each 4 times) is also run with `GenerateConfig::share_prefix` off
//! (`generate_full_prefill`), every prompt prefilled in full as transformers does.
//!
//! Run: `cargo bench -p mentor-policy --bench throughput -- [--new-tokens 32 --train-batch 4 --train-len 128 --train-steps 3]`
//! Needs the GGUF installed by `cargo xtask setup`. Prints one JSON object per measurement.

use std::time::Instant;

// Candle allocates every op's output afresh. glibc malloc hands large freed buffers back to the
// OS and page-faults them in again (a batch-32 prefill took 1.2 M page faults, ~25% of its
// time); mimalloc with its purging of freed memory turned off (`main`) keeps them. The `mentor`
// binary links mimalloc too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "common/process.rs"]
mod process;

use candle_core::DType;
use mentor_core::assets::AssetDir;
use mentor_core::Message;
use mentor_policy::{GenerateConfig, LoadOptions, LogProbOptions, ModelSource, Policy, Sampler};

const QUESTIONS: [&str; 8] = [
    "What is 12 + 35?",
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain photosynthesis in one sentence.",
    "List three prime numbers.",
    "Who wrote Hamlet?",
    "Give me a synonym for happy.",
    "How many legs does a spider have?",
];

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Best of three copies of a 512 MiB buffer, in bytes copied per second (the memory traffic
/// is twice that: each byte is read and written).
fn memcpy_bandwidth() -> f64 {
    let n = 512 << 20;
    let src = vec![1u8; n];
    let mut dst = vec![0u8; n];
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        dst.copy_from_slice(&src);
        best = best.min(t.elapsed().as_secs_f64());
        std::hint::black_box(&dst);
    }
    n as f64 / best
}

/// CPU seconds (user + system) of this process so far, from `/proc/self/stat` (Linux; clock
/// ticks of 1/100 s), or NaN where unavailable: on a shared machine it tells how much of a
/// wall-clock interval the process actually ran.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return f64::NAN };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    match (f.get(11).and_then(|v| v.parse::<f64>().ok()), f.get(12).and_then(|v| v.parse::<f64>().ok())) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => f64::NAN,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A timing program: `cargo bench` runs it and passes `--bench`; `cargo test --all-targets`
    // runs it without, and then it only says how to run it, so the test suite times nothing.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!(
            "a timing program: run it with `cargo bench -p mentor-policy --bench throughput [-- ARGS]`"
        );
        return Ok(());
    }
    process::tune();
    let new_tokens = arg("--new-tokens", 32);
    let train_batch = arg("--train-batch", 4);
    let train_len = arg("--train-len", 128);
    let train_steps = arg("--train-steps", 3);
    let dir = AssetDir::resolve(|k| std::env::var(k).ok()).ok_or("no HOME to find assets")?;
    let path = dir.smollm2_gguf();
    if !path.is_file() {
        return Err(format!("{} missing: run `cargo xtask setup`", path.display()).into());
    }
    let t = Instant::now();
    let policy = Policy::load(&ModelSource::Gguf(path), &LoadOptions::default())?;
    let weight_bytes = policy.num_params() * DType::F32.size_in_bytes();
    println!(
        "{{\"what\":\"load\",\"seconds\":{:.2},\"params\":{},\"threads\":{}}}",
        t.elapsed().as_secs_f64(),
        policy.num_params(),
        mentor_kernels::current_threads()
    );
    let bw = memcpy_bandwidth();
    println!(
        "{{\"what\":\"decode_bound\",\"memcpy_gb_s\":{:.2},\"weight_mb\":{:.0},\"batch1_tok_s_bound\":{:.1}}}",
        bw / 1e9,
        weight_bytes as f64 / 1e6,
        bw / weight_bytes as f64
    );
    for (batch, share_prefix) in [(1usize, true), (8, true), (32, true), (32, false)] {
        let prompts: Vec<Vec<u32>> = (0..batch)
            .map(|i| policy.encode_chat(&[Message::user(QUESTIONS[i % QUESTIONS.len()])]))
            .collect::<Result<_, _>>()?;
        let cfg = GenerateConfig {
            sampler: Sampler { temperature: 1.0, top_p: 1.0, top_k: 0 },
            max_new_tokens: new_tokens,
            stop_ids: vec![],
            stop_strings: vec![],
            seed: 0,
            share_prefix,
        };
        let (t, c) = (Instant::now(), cpu_seconds());
        let out = policy.generate(&prompts, &cfg)?;
        let (secs, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
        let generated: usize = out.iter().map(|g| g.token_ids.len()).sum();
        println!(
            "{{\"what\":\"{}\",\"batch\":{batch},\"new_tokens\":{generated},\"seconds\":{secs:.2},\"cpu_seconds\":{cpu:.2},\"tok_s\":{:.2}}}",
            if share_prefix { "generate" } else { "generate_full_prefill" },
            generated as f64 / secs
        );
    }
    let half = train_len / 4;
    let prompts: Vec<Vec<u32>> =
        (0..train_batch).map(|i| (0..half).map(|j| (100 + i * 7 + j) as u32).collect()).collect();
    let completions: Vec<Vec<u32>> =
        (0..train_batch).map(|i| (0..train_len - half).map(|j| (500 + i * 3 + j) as u32).collect()).collect();
    // As the peer: one untimed warm-up step of the same shape, then the mean of
    // `--train-steps` steps (a trainer's steady state; the first step of a process also pays
    // for its first touch of fresh memory). Gradients are dropped between steps.
    let step = || -> Result<(f64, f64, f64, usize), Box<dyn std::error::Error>> {
        let (t, c) = (Instant::now(), cpu_seconds());
        let out = policy.logprobs(&prompts, &completions, &LogProbOptions::default())?;
        let fwd = t.elapsed().as_secs_f64();
        let loss = out.logprobs.sum_all()?.neg()?;
        let grads = mentor_kernels::on_pool(|| loss.backward())?;
        let (total, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
        let with_grad = policy.vars().iter().filter(|(_, v)| grads.get(v.as_tensor()).is_some()).count();
        Ok((fwd, total, cpu, with_grad))
    };
    step()?;
    let runs = (0..train_steps.max(1)).map(|_| step()).collect::<Result<Vec<_>, _>>()?;
    let mean = |f: fn(&(f64, f64, f64, usize)) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
    let (fwd, total, cpu) = (mean(|r| r.0), mean(|r| r.1), mean(|r| r.2));
    let with_grad = runs.iter().map(|r| r.3).min().unwrap_or(0);
    println!(
        "{{\"what\":\"train\",\"batch\":{train_batch},\"seq\":{train_len},\"steps\":{},\"forward_s\":{fwd:.2},\"forward_backward_s\":{total:.2},\"cpu_seconds\":{cpu:.2},\"tok_s\":{:.2},\"weights_with_grad\":{with_grad}}}",
        runs.len(),
        (train_batch * train_len) as f64 / total
    );
    Ok(())
}
