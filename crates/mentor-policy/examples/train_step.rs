//! Time of one training step of a tiny char-level policy on CPU: differentiable log-probs of a
//! batch (64 rows, 1-token prompts, ~80-token completions), masked mean NLL, backward; and the
//! forward alone. Prints milliseconds per step (mean of 10 after one warm-up step), as wall
//! time and as the process's CPU time (from `/proc/self/stat` on Linux; steadier than wall
//! time on a machine that other jobs share). Then times each fused kernel of
//! `mentor_policy::kernels` against the composite ops it replaces (forward + backward, on this
//! workload's shapes, times the calls per step), to show where the time goes.
//!
//! Run: `RAYON_NUM_THREADS=1 cargo run --release -p mentor-policy --example train_step`
//! (offline, a few seconds; `-- --steps N --batch B --len L` to change the workload).

use std::time::Instant;

use candle_core::{DType, Device, Tensor, Var, D};
use mentor_policy::config::Config;
use mentor_policy::{kernels, LogProbOptions, Policy};

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

/// Milliseconds of one forward + backward of `op` on `args` (as trainable variables), best of 5
/// rounds of `reps`.
fn time_op(
    args: &[Tensor],
    reps: usize,
    op: &dyn Fn(&[Tensor]) -> candle_core::Result<Tensor>,
) -> candle_core::Result<f64> {
    let vars: Vec<Var> = args.iter().map(Var::from_tensor).collect::<candle_core::Result<_>>()?;
    let ts: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..reps {
            let g = op(&ts)?.sum_all()?.backward()?;
            std::hint::black_box(&g);
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    }
    Ok(best)
}

/// Fused kernels against the composite ops they replace, on this workload's shapes.
fn kernel_table(b: usize, t: usize, c: usize, cfg: &Config) -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let (hidden, heads, hd, inter, vocab) =
        (cfg.hidden_size, cfg.num_attention_heads, cfg.head_dim(), cfg.intermediate_size, cfg.vocab_size);
    let layers = cfg.num_hidden_layers;
    let scores = Tensor::randn(0f32, 1., (b, heads, t, t), &dev)?;
    let mut m = vec![0f32; b * t * t];
    for (i, v) in m.iter_mut().enumerate() {
        if i % t > (i / t) % t {
            *v = -1e9;
        }
    }
    let mask = Tensor::from_vec(m, (b, 1, t, t), &dev)?;
    let x = Tensor::randn(0f32, 1., (b, t, hidden), &dev)?;
    let w = Tensor::randn(1f32, 0.1, hidden, &dev)?;
    let q = Tensor::randn(0f32, 1., (b, t, heads, hd), &dev)?;
    let f = Tensor::randn(0f32, 1., (b, t, hd / 2), &dev)?;
    let (cos, sin) = (f.cos()?, f.sin()?);
    let gate = Tensor::randn(0f32, 1., (b, t, inter), &dev)?;
    let up = Tensor::randn(0f32, 1., (b, t, inter), &dev)?;
    let logits = Tensor::randn(0f32, 1., (b, c, vocab), &dev)?;
    let targets = Tensor::from_vec((0..b * c).map(|i| (i % vocab) as u32).collect(), (b, c), &dev)?;
    let scale = 1.0 / (hd as f64).sqrt();
    let mask5 = mask.reshape((b, 1, t, t))?;
    let rope_composite = |x: &Tensor| -> candle_core::Result<Tensor> {
        let half = hd / 2;
        let (cos, sin) = (cos.unsqueeze(1)?, sin.unsqueeze(1)?);
        let x1 = x.narrow(D::Minus1, 0, half)?;
        let x2 = x.narrow(D::Minus1, half, half)?;
        let r1 = (x1.broadcast_mul(&cos)? - x2.broadcast_mul(&sin)?)?;
        let r2 = (x2.broadcast_mul(&cos)? + x1.broadcast_mul(&sin)?)?;
        Tensor::cat(&[r1, r2], D::Minus1)
    };
    type Op<'a> = Box<dyn Fn(&[Tensor]) -> candle_core::Result<Tensor> + 'a>;
    let rows: Vec<(&str, usize, Vec<Tensor>, Op, Op)> = vec![
        (
            "masked softmax",
            layers,
            vec![scores],
            Box::new(|a| candle_nn::ops::softmax(&(&a[0] * scale)?.broadcast_add(&mask5)?, D::Minus1)),
            Box::new(|a| kernels::masked_softmax(&a[0], &mask, scale)),
        ),
        (
            "rms norm",
            2 * layers + 1,
            vec![x, w],
            Box::new(|a| candle_nn::ops::rms_norm_slow(&a[0], &a[1], 1e-5)),
            Box::new(|a| kernels::rms_norm(&a[0], &a[1], 1e-5)),
        ),
        (
            "rope",
            2 * layers,
            vec![q],
            Box::new(|a| rope_composite(&a[0].transpose(1, 2)?)),
            Box::new(|a| kernels::rope(&a[0].transpose(1, 2)?, &cos, &sin)),
        ),
        (
            "swiglu",
            layers,
            vec![gate, up],
            Box::new(|a| a[0].silu()? * &a[1]),
            Box::new(|a| kernels::swiglu(&a[0], &a[1])),
        ),
        (
            "token logprobs",
            1,
            vec![logits],
            Box::new(|a| {
                let lp = candle_nn::ops::log_softmax(&a[0], D::Minus1)?;
                lp.gather(&targets.unsqueeze(D::Minus1)?, D::Minus1)?.squeeze(D::Minus1)
            }),
            Box::new(|a| kernels::token_logprobs(&a[0], &targets)),
        ),
    ];
    println!("kernel (forward + backward)   calls/step   composite ms/step   fused ms/step");
    for (name, calls, args, composite, fused) in rows {
        let a = time_op(&args, 3, &composite)? * calls as f64;
        let f = time_op(&args, 3, &fused)? * calls as f64;
        println!("{name:<30}{calls:>10}{a:>20.1}{f:>16.1}");
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
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
    loss(&policy, &prompts, &completions)?.backward()?;
    let t = (Instant::now(), cpu_seconds());
    let mut last = 0f32;
    for _ in 0..steps {
        let l = loss(&policy, &prompts, &completions)?;
        let grads = l.backward()?;
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
    let c = completions.iter().map(Vec::len).max().unwrap_or(1);
    kernel_table(batch, c + 1, c, policy.config())?;
    Ok(())
}
