//! The fixed-order mode (`set_deterministic`) on a whole model: forced kernel paths and
//! thread counts give the same bits for generation, log-probs and every weight's gradient.
//!
//! Its own test binary: the switches are process-wide, and the tests of the `it` binary
//! compare paths that must not change under them.

use std::sync::Mutex;

use candle_core::{DType, Device};
use mentor_kernels::{set_deterministic, set_kernel_path, KernelPath};
use mentor_policy::{Config, GenerateConfig, LogProbOptions, Policy, Sampler};

/// The switches are process-wide: one test at a time.
static LOCK: Mutex<()> = Mutex::new(());

const ALPHABET: &str = "0123456789+=:A\nH";

/// FNV-1a over the bits of every value.
fn fold(h: &mut u64, bits: impl IntoIterator<Item = u32>) {
    for b in bits {
        for byte in b.to_le_bytes() {
            *h ^= byte as u64;
            *h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// Samples a batch, then takes the log-probs of the samples and their gradient; returns the
/// samples and one hash of the log-probs and gradients. Sized so that the weight gradients
/// sum over more than 512 tokens (where gemm's block along `K` would split the sum).
fn run(path: KernelPath, threads: usize) -> (Vec<Vec<u32>>, u64) {
    set_kernel_path(path).expect("kernel path");
    set_deterministic(true);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
    pool.install(|| {
        let policy = Policy::char_level(ALPHABET, Config::tiny(0, 32, 2, 4, 2), 11, DType::F32, &Device::Cpu)
            .expect("model");
        let tok = policy.tokenizer();
        let prompts: Vec<Vec<u32>> = (0..24)
            .map(|i| tok.encode(&format!("{}+{}=", 17 * i + 3, 29 * i + 5)).expect("encode"))
            .collect();
        let gen = GenerateConfig {
            sampler: Sampler::default(),
            max_new_tokens: 30,
            seed: 5,
            ..GenerateConfig::default()
        };
        let out = policy.generate(&prompts, &gen).expect("generate");
        // Fixed-length completions (a 30-token tail of each prompt's digits) so that the batch
        // holds 24 × 30 = 720 target tokens whatever was sampled.
        let completions: Vec<Vec<u32>> =
            prompts.iter().map(|p| p.iter().cycle().take(30).copied().collect()).collect();
        let lp = policy.logprobs(&prompts, &completions, &LogProbOptions::default()).expect("logprobs");
        let loss = lp.logprobs.sum_all().expect("sum");
        let grads = loss.backward().expect("backward");
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let lps: Vec<f32> = lp.logprobs.flatten_all().and_then(|t| t.to_vec1()).expect("logprobs");
        fold(&mut h, lps.iter().map(|x| x.to_bits()));
        for (name, var) in policy.vars() {
            let g = grads.get(var.as_tensor()).unwrap_or_else(|| panic!("no gradient for {name}"));
            let g: Vec<f32> = g.flatten_all().and_then(|t| t.to_vec1()).expect("gradient");
            fold(&mut h, g.iter().map(|x| x.to_bits()));
        }
        (out.into_iter().map(|g| g.token_ids).collect(), h)
    })
}

#[test]
fn every_path_and_thread_count_gives_the_same_bits() {
    let _lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let reference = run(KernelPath::Portable, 1);
    let mut paths = vec![(KernelPath::Portable, 2)];
    if set_kernel_path(KernelPath::Avx2).is_ok() {
        paths.extend([(KernelPath::Avx2, 1), (KernelPath::Avx2, 2), (KernelPath::Auto, 3)]);
    } else {
        eprintln!("this CPU lacks AVX2/FMA: only the portable path is compared");
    }
    if set_kernel_path(KernelPath::Avx512).is_ok() {
        paths.extend([(KernelPath::Avx512, 1), (KernelPath::Avx512, 2)]);
    } else {
        eprintln!("this CPU lacks AVX-512 F/DQ: the AVX-512 tile is not compared");
    }
    for (path, threads) in paths {
        let got = run(path, threads);
        assert_eq!(got.0, reference.0, "{} at {threads} threads: other samples", path.name());
        assert_eq!(got.1, reference.1, "{} at {threads} threads: other log-probs or gradients", path.name());
    }
    set_deterministic(false);
    set_kernel_path(KernelPath::Auto).expect("auto");
}

#[test]
fn the_kernel_path_parses_and_avx2_and_avx512_are_refused_without_the_cpu_features() {
    let _lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!("Portable".parse::<KernelPath>().expect("parse"), KernelPath::Portable);
    assert_eq!("avx2".parse::<KernelPath>().expect("parse"), KernelPath::Avx2);
    assert!("sse9".parse::<KernelPath>().is_err());
    let avx2 = std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
    assert_eq!(set_kernel_path(KernelPath::Avx2).is_ok(), avx2);
    assert_eq!("AVX512".parse::<KernelPath>().expect("parse"), KernelPath::Avx512);
    let avx512 = avx2
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512dq");
    assert_eq!(set_kernel_path(KernelPath::Avx512).is_ok(), avx512);
    set_kernel_path(KernelPath::Auto).expect("auto");
}
