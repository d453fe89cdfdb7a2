//! The measurements of `cargo xtask bench peak`: the machine's own limits (FMA throughput,
//! memory bandwidth), then the policy's decode, prefill and update as achieved GFLOP/s (GB/s
//! for batch-1 decode) and as fractions of those limits, all in one process.
//!
//! **FLOP model.** A token through the model costs `2 × W` FLOPs forward, where `W` counts the
//! weights of every matrix product: per layer the q, k, v, o projections and the three MLP
//! matrices, plus the LM head (`vocab × hidden`). Attention's score and value products
//! (`4 × layers × hidden × context` per token) and every element-wise op are not counted, so
//! achieved figures are slight underestimates. Decode: `2 × W` per generated token. Prefill:
//! `2 × W_layers` per prompt token plus `2 × W_head` per prompt (logits come from the last
//! position only). Update (forward + backward of the differentiable log-probs): `6 × W_layers`
//! per input token and `6 × W_head` per scored completion token (backward = two products of
//! the forward's size).
//!
//! **Decode's products alone** (`decode products`, batch 32): the same FLOPs as decode at
//! that batch, timed as bare products on the crate's kernel (as decode runs them), with every
//! weight matrix a separate tensor as in the model, so that they come from memory. Decode does
//! these products and more, so their fraction of the peak bounds `decode32_frac` from above
//! while the machine runs as it did in that minute (timed right after that batch's decode).
//!
//! **The update's products alone** (`products`): the same FLOPs as the update, timed as bare
//! matrix products on the library the update runs them on (candle's matmul), without the rest
//! of the update (attention, element-wise ops, autograd's buffers). Its fraction is what the
//! matmul library reaches on these shapes; the gap between its seconds and the update's is
//! the share of the update spent outside the products.
//!
//! **The small-batch kernel on weights in cache** (`kernel_1t`, `kernel_all` of the limits):
//! the crate's own product ([`mentor_kernels::matmul::matmul_t`], which every decode step runs) at 32 ×
//! 576 times 384 × 576 transposed, on the same weights every call, so that they stay in a
//! core's L2. Decode's products also wait for memory, so these bound them from above.
//! `kernel_apart` runs the same loop on every thread at once, each on its own operands and
//! its own products (nothing split, nothing to wait for): where it reaches about `threads ×
//! kernel_1t` and `kernel_all` does not, the threads lose in splitting one product between
//! them; where it falls short too, they share something the FMA loop does not use (a host
//! core's caches, other tenants).
//!
//! **Bandwidth convention.** `read_gb_s` is a read-only pass (a sum) over a buffer far larger
//! than the caches, on all threads: what batch-1 decode, which reads every weight once per
//! token, is bound by. `copy_gb_s` (bytes copied per second; the traffic is twice that) is
//! reported beside it. Batch-1 decode's `bw_frac` is `4 × parameters × tok/s / read_gb_s` in
//! f32 (the embedding table is counted once, as the tied LM head; its lookup reads one row).

use std::time::Instant;

use mentor_policy::{GenerateConfig, LogProbOptions, Policy, Sampler};
use serde::Serialize;

/// What the FMA loop ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Isa {
    /// 8-lane `f32` fused multiply-adds (AVX2 + FMA).
    Avx2,
    /// 16-lane `f32` fused multiply-adds (AVX-512F).
    Avx512,
}

/// The machine's limits, measured.
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    /// Threads of the "all threads" figures.
    pub threads: usize,
    /// AVX2/FMA GFLOP/s of one thread.
    pub fma_avx2_1t: f64,
    /// AVX2/FMA GFLOP/s of all threads at once.
    pub fma_avx2_all: f64,
    /// AVX-512 GFLOP/s of one thread and of all (absent without AVX-512F).
    pub fma_avx512_1t: Option<f64>,
    /// AVX-512 GFLOP/s of all threads at once.
    pub fma_avx512_all: Option<f64>,
    /// The peak the fractions are taken against: the larger all-threads figure.
    pub peak_gflops: f64,
    /// Read-only bandwidth over a large buffer, all threads, GB/s.
    pub read_gb_s: f64,
    /// Bytes copied per second over a large buffer, all threads, GB/s.
    pub copy_gb_s: f64,
    /// The crate's own small-batch product ([`mentor_kernels::matmul::matmul_t`], the kernel of every
    /// decode step) at `kernel_shape` = `(M, K, N)`: `x` `[M, K]` times the same `w` `[N, K]`
    /// transposed on every call, so the weights stay in cache. GFLOP/s on one thread: an upper
    /// bound, on this machine as it runs now, for decode's products, which also read the
    /// weights from memory.
    pub kernel_1t: f64,
    /// The same on all threads.
    pub kernel_all: f64,
    /// The kernel on all threads at once, each running its own products on its own operands
    /// (one product per thread, not one product split among them): their GFLOP/s together.
    pub kernel_apart: f64,
    /// `(M, K, N)` of the kernel figures.
    pub kernel_shape: (usize, usize, usize),
}

/// One model measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// `decode`, `prefill`, `update`, or `products` (the update's matrix products alone).
    pub what: String,
    /// Rows in the batch.
    pub batch: usize,
    /// Tokens counted (generated, prefilled, or trained).
    pub tokens: usize,
    /// Seconds the counted work took.
    pub seconds: f64,
    /// Tokens per second.
    pub tok_s: f64,
    /// Achieved GFLOP/s under the FLOP model.
    pub gflops: f64,
    /// `gflops / peak_gflops`.
    pub frac: f64,
    /// Achieved weight-read GB/s (decode only).
    pub gb_s: Option<f64>,
    /// `gb_s / read_gb_s` (decode only; the figure that matters at batch 1).
    pub bw_frac: Option<f64>,
}

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The limits.
    pub limits: Limits,
    /// Matrix-product weights per token through the layers, and of the LM head.
    pub weights_layers: usize,
    /// LM-head weights (`vocab × hidden`).
    pub weights_head: usize,
    /// Parameters of the model (bytes read per batch-1 token: 4 × this).
    pub params: usize,
    /// The model figures.
    pub figures: Vec<Figure>,
}

/// Sizes of a run (the full bench, or a quick one for tests).
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Decode batch sizes.
    pub decode_batches: Vec<usize>,
    /// Tokens generated per decode measurement (the first is taken off as prefill).
    pub new_tokens: usize,
    /// Prefill: prompts and their length.
    pub prefill: (usize, usize),
    /// Update: rows and their total length (a quarter prompt, the rest completion).
    pub update: (usize, usize),
    /// Elements of the bandwidth buffers (f32).
    pub buffer_elems: usize,
    /// FMA loop iterations per thread.
    pub fma_iters: u64,
    /// `(M, K, N)` of the small-batch kernel figures.
    pub kernel: (usize, usize, usize),
    /// Products per timed round of the kernel figures.
    pub kernel_calls: usize,
}

impl Sizes {
    /// The bench's sizes.
    pub fn full() -> Self {
        Self {
            decode_batches: vec![1, 8, 32, 64],
            new_tokens: 64,
            prefill: (32, 128),
            update: (32, 128),
            buffer_elems: 128 << 20,
            fma_iters: 200_000_000,
            // Decode at batch 32 on SmolLM2-135M's hidden size; 384 weight rows (885 KiB)
            // stay in a core's L2 on the CPUs measured so far (1-2 MiB).
            kernel: (32, 576, 384),
            kernel_calls: 3_000,
        }
    }

    /// Small sizes for the tiny model (a test of the whole path, not a measurement).
    pub fn tiny() -> Self {
        Self {
            decode_batches: vec![1, 8, 32, 64],
            new_tokens: 6,
            prefill: (4, 16),
            update: (4, 16),
            buffer_elems: 1 << 16,
            fma_iters: 1_000,
            kernel: (32, 40, 24),
            kernel_calls: 3,
        }
    }
}

/// A small random model with a character tokenizer, for tests.
pub fn tiny_policy() -> Result<Policy, mentor_policy::Error> {
    Policy::char_level(
        "0123456789+=abcdefgh \n",
        mentor_policy::Config::tiny(0, 32, 2, 4, 2),
        0,
        candle_core::DType::F32,
        &candle_core::Device::Cpu,
    )
}

/// Chains of independent FMAs per loop: more than latency × ports (4 × 2 on current cores).
const CHAINS: usize = 12;

#[cfg(target_arch = "x86_64")]
mod fma {
    #![allow(unsafe_code)]
    use std::arch::x86_64::*;

    use super::CHAINS;

    /// `iters` rounds of `CHAINS` independent 8-lane FMAs; returns a value so nothing is
    /// optimised away.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2(iters: u64) -> f32 {
        let a = _mm256_set1_ps(0.999_999);
        let b = _mm256_set1_ps(1e-7);
        let mut acc = [_mm256_set1_ps(1.0); CHAINS];
        for _ in 0..iters {
            for x in acc.iter_mut() {
                *x = _mm256_fmadd_ps(*x, a, b);
            }
        }
        let mut s = _mm256_setzero_ps();
        for x in acc {
            s = _mm256_add_ps(s, x);
        }
        let mut out = [0f32; 8];
        _mm256_storeu_ps(out.as_mut_ptr(), s);
        out.iter().sum()
    }

    /// As [`avx2`] with 16 lanes.
    #[target_feature(enable = "avx512f")]
    unsafe fn avx512(iters: u64) -> f32 {
        let a = _mm512_set1_ps(0.999_999);
        let b = _mm512_set1_ps(1e-7);
        let mut acc = [_mm512_set1_ps(1.0); CHAINS];
        for _ in 0..iters {
            for x in acc.iter_mut() {
                *x = _mm512_fmadd_ps(*x, a, b);
            }
        }
        let mut s = _mm512_setzero_ps();
        for x in acc {
            s = _mm512_add_ps(s, x);
        }
        _mm512_reduce_add_ps(s)
    }

    /// Runs the loop of `isa` if the CPU has it: `Some(lanes)` then.
    pub fn run(isa: super::Isa, iters: u64) -> Option<(usize, f32)> {
        match isa {
            super::Isa::Avx2 if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") => {
                // SAFETY: the features the function enables were detected on this CPU.
                Some((8, unsafe { avx2(iters) }))
            }
            super::Isa::Avx512 if is_x86_feature_detected!("avx512f") => {
                // SAFETY: as above.
                Some((16, unsafe { avx512(iters) }))
            }
            _ => None,
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod fma {
    pub fn run(_isa: super::Isa, _iters: u64) -> Option<(usize, f32)> {
        None
    }
}

/// GFLOP/s of the FMA loop on `threads` threads at once (each `iters` rounds); `None` when
/// the CPU lacks `isa`. Best of three.
pub fn fma_gflops(isa: Isa, threads: usize, iters: u64) -> Option<f64> {
    fma::run(isa, 1)?;
    let mut best = 0f64;
    for _ in 0..3 {
        let t = Instant::now();
        let lanes: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads.max(1))
                .map(|_| s.spawn(move || fma::run(isa, iters).map(|(l, v)| (l, std::hint::black_box(v)))))
                .collect();
            hs.into_iter().filter_map(|h| h.join().ok().flatten()).map(|(l, _)| l).collect()
        });
        let secs = t.elapsed().as_secs_f64();
        let flops: f64 = lanes.iter().map(|&l| 2.0 * (l * CHAINS) as f64 * iters as f64).sum();
        best = best.max(flops / secs / 1e9);
    }
    Some(best)
}

/// Read-only and copy bandwidth (GB/s) over buffers of `elems` f32 split among `threads`;
/// best of three each.
pub fn bandwidth(threads: usize, elems: usize) -> (f64, f64) {
    let threads = threads.max(1);
    let src = vec![1f32; elems];
    let mut dst = vec![0f32; elems];
    let chunk = elems.div_ceil(threads);
    let bytes = (elems * 4) as f64;
    let mut read = 0f64;
    let mut copy = 0f64;
    for _ in 0..3 {
        let t = Instant::now();
        let total: f32 = std::thread::scope(|s| {
            let hs: Vec<_> = src
                .chunks(chunk)
                .map(|c| {
                    s.spawn(move || {
                        // 64 independent sums (eight 8-lane chains once vectorised): the
                        // adds' latency does not serialise the loads.
                        let mut acc = [0f32; 64];
                        for block in c.chunks_exact(64) {
                            for (a, x) in acc.iter_mut().zip(block) {
                                *a += x;
                            }
                        }
                        acc.iter().sum::<f32>()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or(0.0)).sum()
        });
        std::hint::black_box(total);
        read = read.max(bytes / t.elapsed().as_secs_f64() / 1e9);
        let t = Instant::now();
        std::thread::scope(|s| {
            for (d, c) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
                s.spawn(move || d.copy_from_slice(c));
            }
        });
        std::hint::black_box(&dst);
        copy = copy.max(bytes / t.elapsed().as_secs_f64() / 1e9);
    }
    (read, copy)
}

/// GFLOP/s of [`mentor_kernels::matmul::matmul_t`] at `(m, k, n)` on a pool of `threads` threads,
/// `calls` products per round on the same operands (the weights stay in cache); best of
/// three rounds.
pub fn kernel_gflops(
    threads: usize,
    (m, k, n): (usize, usize, usize),
    calls: usize,
) -> Result<f64, mentor_policy::Error> {
    let pool = kernel_pool(threads)?;
    let x = pattern((m, k), 1)?;
    let w = pattern((n, k), 2)?;
    let flops = 2.0 * (m * n * k * calls.max(1)) as f64;
    // Warm-up: the weights into cache, the kernel's buffers allocated.
    kernel_calls(&pool, &x, &w, 1)?;
    let mut best = 0f64;
    for _ in 0..3 {
        let t = Instant::now();
        kernel_calls(&pool, &x, &w, calls)?;
        best = best.max(flops / t.elapsed().as_secs_f64() / 1e9);
    }
    Ok(best)
}

/// A pool of `threads` threads for the kernel figures.
fn kernel_pool(threads: usize) -> Result<rayon::ThreadPool, mentor_policy::Error> {
    Ok(rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| candle_core::Error::Msg(format!("kernel figure: no thread pool: {e}")))?)
}

/// `calls` (at least one) products `x · wᵀ` of [`mentor_kernels::matmul::matmul_t`] on `pool`.
fn kernel_calls(
    pool: &rayon::ThreadPool,
    x: &candle_core::Tensor,
    w: &candle_core::Tensor,
    calls: usize,
) -> Result<(), mentor_policy::Error> {
    pool.install(|| {
        for _ in 0..calls.max(1) {
            std::hint::black_box(mentor_kernels::matmul::matmul_t(x, w)?);
        }
        Ok(())
    })
}

/// GFLOP/s of `threads` threads together, each running [`mentor_kernels::matmul::matmul_t`] on its own
/// operands at `(m, k, n)` on its own one-thread pool, all started at once (`calls` products
/// each per round, the round timed from the common start to the last thread's end); best of
/// three rounds.
pub fn kernel_apart_gflops(
    threads: usize,
    (m, k, n): (usize, usize, usize),
    calls: usize,
) -> Result<f64, mentor_policy::Error> {
    let threads = threads.max(1);
    let calls = calls.max(1);
    const ROUNDS: usize = 3;
    // Every round starts and ends on the barrier; the main thread takes the time between.
    let barrier = std::sync::Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let barrier = &barrier;
                s.spawn(move || -> Result<(), mentor_policy::Error> {
                    let ready = (|| {
                        let pool = kernel_pool(1)?;
                        let x = pattern((m, k), 2 * i + 1)?;
                        let w = pattern((n, k), 2 * i + 2)?;
                        // Warm-up: the weights into this core's cache, the buffers allocated.
                        kernel_calls(&pool, &x, &w, 1)?;
                        Ok::<_, mentor_policy::Error>((pool, x, w))
                    })();
                    // On every round's barriers whatever fails, so that no thread waits alone.
                    let mut failed = None;
                    for _ in 0..ROUNDS {
                        barrier.wait();
                        if let Ok((pool, x, w)) = &ready {
                            if let Err(e) = kernel_calls(pool, x, w, calls) {
                                failed = Some(e);
                            }
                        }
                        barrier.wait();
                    }
                    match (ready, failed) {
                        (Err(e), _) | (Ok(_), Some(e)) => Err(e),
                        _ => Ok(()),
                    }
                })
            })
            .collect();
        let mut best = 0f64;
        for _ in 0..ROUNDS {
            barrier.wait();
            let t = Instant::now();
            barrier.wait();
            best = best.max(2.0 * (m * n * k * calls * threads) as f64 / t.elapsed().as_secs_f64() / 1e9);
        }
        for w in workers {
            w.join().map_err(|_| candle_core::Error::Msg("kernel figure: a thread panicked".into()))??;
        }
        Ok(best)
    })
}

/// A `[rows, cols]` f32 tensor of values in [-0.5, 0.5) that differ with `seed` (written, so
/// every page is real memory, unlike a zeroed allocation).
fn pattern((rows, cols): (usize, usize), seed: usize) -> Result<candle_core::Tensor, mentor_policy::Error> {
    let values: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919 + seed) % 251) as f32 / 251.0 - 0.5).collect();
    Ok(candle_core::Tensor::from_vec(values, (rows, cols), &candle_core::Device::Cpu)?)
}

/// The machine's limits on `threads` threads.
pub fn limits(threads: usize, sizes: &Sizes) -> Result<Limits, mentor_policy::Error> {
    let fma_avx2_1t = fma_gflops(Isa::Avx2, 1, sizes.fma_iters).unwrap_or(0.0);
    let fma_avx2_all = fma_gflops(Isa::Avx2, threads, sizes.fma_iters).unwrap_or(0.0);
    let fma_avx512_1t = fma_gflops(Isa::Avx512, 1, sizes.fma_iters);
    let fma_avx512_all = fma_gflops(Isa::Avx512, threads, sizes.fma_iters);
    let peak_gflops = fma_avx2_all.max(fma_avx512_all.unwrap_or(0.0));
    let (read_gb_s, copy_gb_s) = bandwidth(threads, sizes.buffer_elems);
    // The three kernel figures in turns, twice, the best of each kept: other tenants' load,
    // which moves within a minute, then weighs on all three alike.
    let (mut kernel_1t, mut kernel_all, mut kernel_apart) = (0f64, 0f64, 0f64);
    for _ in 0..2 {
        kernel_1t = kernel_1t.max(kernel_gflops(1, sizes.kernel, sizes.kernel_calls)?);
        kernel_all = kernel_all.max(kernel_gflops(threads, sizes.kernel, sizes.kernel_calls)?);
        kernel_apart = kernel_apart.max(kernel_apart_gflops(threads, sizes.kernel, sizes.kernel_calls)?);
    }
    Ok(Limits {
        threads,
        fma_avx2_1t,
        fma_avx2_all,
        fma_avx512_1t,
        fma_avx512_all,
        peak_gflops,
        read_gb_s,
        copy_gb_s,
        kernel_1t,
        kernel_all,
        kernel_apart,
        kernel_shape: sizes.kernel,
    })
}

/// Matrix-product weights of the layers (per token) and of the LM head.
pub fn weights(policy: &Policy) -> (usize, usize) {
    let c = policy.config();
    let layer: usize = layer_matrices(policy).iter().map(|(n, k)| n * k).sum();
    (c.num_hidden_layers * layer, c.vocab_size * c.hidden_size)
}

/// One layer's weight matrices as `[N, K]` (`x · Wᵀ` maps `K` to `N`): q, k, v, o, gate, up,
/// down.
fn layer_matrices(policy: &Policy) -> [(usize, usize); 7] {
    let c = policy.config();
    let (h, i) = (c.hidden_size, c.intermediate_size);
    let (q, kv) = (c.num_attention_heads * c.head_dim(), c.kv_heads() * c.head_dim());
    [(q, h), (kv, h), (kv, h), (h, q), (i, h), (i, h), (h, i)]
}

/// Distinct prompts of `len` tokens (ids spread over the vocabulary, no special tokens).
fn prompts(policy: &Policy, rows: usize, len: usize) -> Vec<Vec<u32>> {
    let vocab = policy.config().vocab_size.max(2);
    (0..rows).map(|r| (0..len).map(|j| ((1 + r * 131 + j * 17) % (vocab - 1) + 1) as u32).collect()).collect()
}

fn generate(
    policy: &Policy,
    prompts: &[Vec<u32>],
    new_tokens: usize,
) -> Result<(f64, usize), mentor_policy::Error> {
    let cfg = GenerateConfig {
        sampler: Sampler { temperature: 1.0, top_p: 1.0, top_k: 0 },
        max_new_tokens: new_tokens,
        stop_ids: vec![],
        stop_strings: vec![],
        seed: 0,
        share_prefix: false,
    };
    let t = Instant::now();
    let out = policy.generate(prompts, &cfg)?;
    Ok((t.elapsed().as_secs_f64(), out.iter().map(|g| g.token_ids.len()).sum()))
}

/// Measures decode, prefill and update of `policy` against `limits`.
pub fn measure(policy: &Policy, limits: Limits, sizes: &Sizes) -> Result<Report, mentor_policy::Error> {
    let (wl, wh) = weights(policy);
    let params = policy.num_params();
    let peak = limits.peak_gflops.max(f64::MIN_POSITIVE);
    let mut figures = Vec::new();
    let mut products_figure = None;
    for &b in &sizes.decode_batches {
        let ps = prompts(policy, b, 16);
        generate(policy, &ps, 2)?; // warm-up: first touch of the buffers
                                   // Decode alone: the run of `new_tokens` minus the run of one token (prefill and the
                                   // first sample), best of two each.
        let one = (0..2).map(|_| generate(policy, &ps, 1)).collect::<Result<Vec<_>, _>>()?;
        let full = (0..2).map(|_| generate(policy, &ps, sizes.new_tokens)).collect::<Result<Vec<_>, _>>()?;
        let t1 = one.iter().map(|r| r.0).fold(f64::MAX, f64::min);
        let (tn, n) = full.iter().fold((f64::MAX, 0), |acc, r| if r.0 < acc.0 { *r } else { acc });
        let tokens = n.saturating_sub(one[0].1);
        let seconds = (tn - t1).max(1e-9);
        let tok_s = tokens as f64 / seconds;
        let gflops = 2.0 * (wl + wh) as f64 * tok_s / 1e9;
        // Rows decode together: each step reads the weights once for the whole batch.
        let gb_s = 4.0 * params as f64 * tok_s / b as f64 / 1e9;
        figures.push(Figure {
            what: "decode".into(),
            batch: b,
            tokens,
            seconds,
            tok_s,
            gflops,
            frac: gflops / peak,
            gb_s: Some(gb_s),
            bw_frac: Some(gb_s / limits.read_gb_s.max(f64::MIN_POSITIVE)),
        });
        // Decode's products alone at the batch of the summary line, on the same kernel and
        // FLOPs, right after that batch's decode (the box's speed moves within minutes).
        if b == DECODE_PRODUCTS_BATCH {
            let steps = sizes.new_tokens.saturating_sub(1).max(1);
            let seconds = mentor_kernels::on_pool(|| decode_products(policy, b, steps))?;
            let tokens = b * steps;
            let flops = 2.0 * ((wl + wh) * tokens) as f64;
            products_figure = Some(compute("decode products", b, tokens, seconds, flops, peak));
        }
    }
    figures.extend(products_figure);
    let (rows, len) = sizes.prefill;
    let ps = prompts(policy, rows, len);
    generate(policy, &ps, 1)?;
    let seconds = (0..2).map(|_| generate(policy, &ps, 1).map(|r| r.0)).collect::<Result<Vec<_>, _>>()?;
    let seconds = seconds.into_iter().fold(f64::MAX, f64::min);
    let tokens = rows * len;
    let flops = 2.0 * (wl * tokens + wh * rows) as f64;
    figures.push(compute("prefill", rows, tokens, seconds, flops, peak));
    let (rows, len) = sizes.update;
    let p_len = (len / 4).max(1);
    let c_len = len.saturating_sub(p_len).max(1);
    let ps = prompts(policy, rows, p_len);
    let cs = prompts(policy, rows, c_len + 3).into_iter().map(|c| c[3..].to_vec()).collect::<Vec<_>>();
    let step = || -> Result<f64, mentor_policy::Error> {
        let t = Instant::now();
        let opts = LogProbOptions { share_prompts: false, ..LogProbOptions::default() };
        let out = policy.logprobs(&ps, &cs, &opts)?;
        let loss = out.logprobs.sum_all()?.neg()?;
        // On the pool, as the trainer runs it (`mentor_grpo`'s accumulator).
        let grads = mentor_kernels::on_pool(|| loss.backward())?;
        std::hint::black_box(&grads);
        Ok(t.elapsed().as_secs_f64())
    };
    step()?;
    let seconds = (0..2).map(|_| step()).collect::<Result<Vec<_>, _>>()?.into_iter().fold(f64::MAX, f64::min);
    let tokens = rows * (p_len + c_len);
    let flops = 6.0 * (wl * rows * (p_len + c_len - 1) + wh * rows * c_len) as f64;
    figures.push(compute("update", rows, tokens, seconds, flops, peak));
    // The same FLOPs as the update's, in its matrix products alone.
    let seconds = mentor_kernels::on_pool(|| products(policy, rows * (p_len + c_len - 1), rows * c_len))?;
    figures.push(compute("products", rows, tokens, seconds, flops, peak));
    Ok(Report { limits, weights_layers: wl, weights_head: wh, params, figures })
}

/// A compute-bound figure (no bandwidth columns): `flops` done in `seconds` over `tokens`.
fn compute(what: &str, rows: usize, tokens: usize, seconds: f64, flops: f64, peak: f64) -> Figure {
    Figure {
        what: what.into(),
        batch: rows,
        tokens,
        seconds,
        tok_s: tokens as f64 / seconds,
        gflops: flops / seconds / 1e9,
        frac: flops / seconds / 1e9 / peak,
        gb_s: None,
        bw_frac: None,
    }
}

/// The decode batch whose products alone are timed (`decode products`): the summary line's.
pub const DECODE_PRODUCTS_BATCH: usize = 32;

/// Seconds of decode's matrix products alone for `steps` tokens at `rows` rows: per token,
/// [`mentor_kernels::matmul::matmul_t`] (the kernel decode runs them on) of `rows` × `K` inputs times
/// every layer's q, k, v, o, gate, up and down matrices and the LM head, each a separate
/// `[N, K]` tensor as in the model (about 4 bytes × parameters, so read from memory, not
/// cache, as decode reads them). No attention, norms, sampling or KV cache: decode at `rows`
/// does these products and more, so their fraction of the peak bounds decode's from above on
/// this machine as it runs now. Best of two timed runs after one untimed.
fn decode_products(policy: &Policy, rows: usize, steps: usize) -> Result<f64, mentor_policy::Error> {
    let c = policy.config();
    let mut shapes: Vec<(usize, usize)> =
        (0..c.num_hidden_layers).flat_map(|_| layer_matrices(policy)).collect();
    shapes.push((c.vocab_size, c.hidden_size));
    let weights = shapes.iter().enumerate().map(|(i, &s)| pattern(s, i)).collect::<Result<Vec<_>, _>>()?;
    // One input per distinct `K`, in cache as decode's (each product's input is the output
    // of the op before it).
    let mut inputs = std::collections::BTreeMap::new();
    for &(_, k) in &shapes {
        if let std::collections::btree_map::Entry::Vacant(e) = inputs.entry(k) {
            e.insert(pattern((rows, k), k)?);
        }
    }
    let once = || -> Result<f64, mentor_policy::Error> {
        let t = Instant::now();
        for _ in 0..steps {
            for (w, (_, k)) in weights.iter().zip(&shapes) {
                std::hint::black_box(mentor_kernels::matmul::matmul_t(&inputs[k], w)?);
            }
        }
        Ok(t.elapsed().as_secs_f64())
    };
    once()?;
    Ok(once()?.min(once()?))
}

/// Seconds of the update's matrix products alone, on candle's matmul (the `gemm` crate, which
/// the update calls for products of more than `SMALL_M` rows): for each matrix `W` `[N, K]` of
/// a layer, at `layer_rows` rows, and for the LM head, at `head_rows` rows, the forward
/// product `x · Wᵀ` and the backward's `g · W` and `gᵀ · x`, as the update computes them. One
/// layer's products are timed and counted `num_hidden_layers` times (every layer has the same
/// shapes). Best of two runs each, the first of three (first touch of the buffers) not
/// counted. No element-wise op, no attention, no autograd: the update's time beyond this
/// figure is everything else it does.
fn products(policy: &Policy, layer_rows: usize, head_rows: usize) -> Result<f64, mentor_policy::Error> {
    let c = policy.config();
    let mut layer_seconds = 0.0;
    for (n, k) in layer_matrices(policy) {
        layer_seconds += product_seconds(layer_rows, n, k)?;
    }
    let head = product_seconds(head_rows, c.vocab_size, c.hidden_size)?;
    Ok(layer_seconds * c.num_hidden_layers as f64 + head)
}

/// Best of two timed runs (after one untimed) of `x · Wᵀ`, `g · W` and `gᵀ · x` for `x`
/// `[m, k]`, `W` `[n, k]`, `g` `[m, n]`.
fn product_seconds(m: usize, n: usize, k: usize) -> Result<f64, mentor_policy::Error> {
    let dev = candle_core::Device::Cpu;
    let x = candle_core::Tensor::randn(0f32, 1.0, (m, k), &dev)?;
    let w = candle_core::Tensor::randn(0f32, 1.0, (n, k), &dev)?;
    let g = candle_core::Tensor::randn(0f32, 1.0, (m, n), &dev)?;
    let once = || -> Result<f64, mentor_policy::Error> {
        let t = Instant::now();
        let y = x.matmul(&w.t()?)?;
        let dx = g.matmul(&w)?;
        let dw = g.t()?.matmul(&x)?;
        std::hint::black_box((y, dx, dw));
        Ok(t.elapsed().as_secs_f64())
    };
    once()?;
    Ok(once()?.min(once()?))
}

impl Report {
    fn figure(&self, what: &str, batch: Option<usize>) -> Option<&Figure> {
        self.figures.iter().find(|f| f.what == what && batch.is_none_or(|b| f.batch == b))
    }

    /// The table a person reads.
    pub fn table(&self) -> String {
        let l = &self.limits;
        let opt = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
        let mut s = format!(
            "limits ({} threads): FMA AVX2 {:.1} GFLOP/s on 1 thread, {:.1} on all; AVX-512 {} / {}; \
             peak {:.1} GFLOP/s; read {:.1} GB/s, copy {:.1} GB/s\n\n",
            l.threads,
            l.fma_avx2_1t,
            l.fma_avx2_all,
            opt(l.fma_avx512_1t),
            opt(l.fma_avx512_all),
            l.peak_gflops,
            l.read_gb_s,
            l.copy_gb_s
        );
        let (m, k, n) = l.kernel_shape;
        let peak_1t = l.fma_avx2_1t.max(l.fma_avx512_1t.unwrap_or(0.0)).max(f64::MIN_POSITIVE);
        s.push_str(&format!(
            "the small-batch product ({m} × {k} times {n} × {k} transposed, the same weights every call, so in \
             cache): {:.1} GFLOP/s on 1 thread ({:.2} of the 1-thread FMA peak), {:.1} on {} ({:.2} of the \
             peak). Decode's products read their weights from memory: these bound them from above. The \
             {} threads each running their own products at once, nothing split: {:.1} GFLOP/s together \
             ({:.2}x one thread's, against {:.2}x when they split each product).\n\n",
            l.kernel_1t,
            l.kernel_1t / peak_1t,
            l.kernel_all,
            l.threads,
            l.kernel_all / l.peak_gflops.max(f64::MIN_POSITIVE),
            l.threads,
            l.kernel_apart,
            l.kernel_apart / l.kernel_1t.max(f64::MIN_POSITIVE),
            l.kernel_all / l.kernel_1t.max(f64::MIN_POSITIVE),
        ));
        s.push_str("| what | batch | tokens | seconds | tok/s | GFLOP/s | of peak | GB/s | of read bw |\n");
        s.push_str("|---|---|---|---|---|---|---|---|---|\n");
        for f in &self.figures {
            s.push_str(&format!(
                "| {} | {} | {} | {:.2} | {:.1} | {:.1} | {:.2} | {} | {} |\n",
                f.what,
                f.batch,
                f.tokens,
                f.seconds,
                f.tok_s,
                f.gflops,
                f.frac,
                opt(f.gb_s),
                f.bw_frac.map_or("–".to_string(), |v| format!("{v:.2}"))
            ));
        }
        if let (Some(d), Some(p)) =
            (self.figure("decode", Some(DECODE_PRODUCTS_BATCH)), self.figure("decode products", None))
        {
            s.push_str(&format!(
                "\nDecode's matrix products alone at batch {} reach {:.2} of the peak (timed right after decode at \
                 that batch, which reached {:.2}): decode cannot go above them while the products run at that \
                 speed. At these speeds they take {:.1} of its {:.1} ms per step ({:.0}%); the rest is \
                 attention, norms, sampling and the KV cache.\n",
                p.batch,
                p.frac,
                d.frac,
                1e3 * p.batch as f64 / p.tok_s.max(f64::MIN_POSITIVE),
                1e3 * d.batch as f64 / d.tok_s.max(f64::MIN_POSITIVE),
                100.0 * d.tok_s / p.tok_s.max(f64::MIN_POSITIVE),
            ));
        }
        if let (Some(u), Some(p)) = (self.figure("update", None), self.figure("products", None)) {
            s.push_str(&format!(
                "\nThe update's matrix products alone take {:.2} s of its {:.2} s ({:.0}%); the other {:.2} s is \
                 attention, element-wise ops and the backward's buffers.\n",
                p.seconds,
                u.seconds,
                100.0 * p.seconds / u.seconds.max(f64::MIN_POSITIVE),
                (u.seconds - p.seconds).max(0.0)
            ));
        }
        s
    }

    /// The last line: `peak_gflops=<n> decode32_frac=<f> prefill_frac=<f> update_frac=<f>
    /// decode1_bw_frac=<f>` (`nan` for a figure not measured).
    pub fn last_line(&self) -> String {
        let frac = |f: Option<&Figure>| f.map_or(f64::NAN, |f| f.frac);
        format!(
            "peak_gflops={:.1} decode32_frac={:.3} prefill_frac={:.3} update_frac={:.3} decode1_bw_frac={:.3}",
            self.limits.peak_gflops,
            frac(self.figure("decode", Some(32))),
            frac(self.figure("prefill", None)),
            frac(self.figure("update", None)),
            self.figure("decode", Some(1)).and_then(|f| f.bw_frac).unwrap_or(f64::NAN)
        )
    }
}
