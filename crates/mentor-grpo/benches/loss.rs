//! Cost of the GRPO loss + backward relative to a small policy forward.
//!
//! `policy_forward`: a tiny policy (token embedding [V, H] -> tanh -> output projection [H, V]
//! -> log-softmax -> gather of the sampled tokens) producing per-token log-probs `[B, T]`.
//! `loss_backward`: `grpo_loss` (dapo, beta 0.04, off-policy) on log-probs of the same shape
//! plus `backward` down to those log-probs (a leaf), i.e. the overhead this crate adds on top
//! of whatever the policy costs. The ratio of the two medians goes in docs/PERFORMANCE.md.

use candle_core::{DType, Device, Tensor, Var, D};
use criterion::{criterion_group, criterion_main, Criterion};
use mentor_grpo::{grpo_loss, GrpoConfig, LossInputs, LossScale};

const B: usize = 16;
const T: usize = 128;
const V: usize = 512;
const H: usize = 64;

fn bench(c: &mut Criterion) {
    let dev = Device::Cpu;
    let embed = Var::randn(0f32, 0.5, (V, H), &dev).unwrap();
    let out = Var::randn(0f32, 0.1, (H, V), &dev).unwrap();
    let tokens = Tensor::rand(0f32, V as f32, (B, T), &dev).unwrap().to_dtype(DType::U32).unwrap();
    let inputs_flat = tokens.flatten_all().unwrap();

    let forward = || {
        let h = embed.as_tensor().index_select(&inputs_flat, 0).unwrap().tanh().unwrap(); // [B*T, H]
        let logits = h.matmul(out.as_tensor()).unwrap(); // [B*T, V]
        let lp = candle_nn::ops::log_softmax(&logits, D::Minus1).unwrap();
        lp.gather(&inputs_flat.unsqueeze(1).unwrap(), 1).unwrap().reshape((B, T)).unwrap()
    };

    let logps = Var::from_tensor(&forward().detach()).unwrap();
    let old = (logps.as_tensor() + Tensor::randn(0f32, 0.1, (B, T), &dev).unwrap()).unwrap();
    let reference = (logps.as_tensor() + Tensor::randn(0f32, 0.1, (B, T), &dev).unwrap()).unwrap();
    let mask = Tensor::ones((B, T), DType::F32, &dev).unwrap();
    let adv = Tensor::randn(0f32, 1.0, B, &dev).unwrap();
    let config = GrpoConfig { beta: 0.04, epsilon_high: Some(0.28), ..GrpoConfig::default() };
    let scale = LossScale::single(&mask).unwrap();

    let mut group = c.benchmark_group(format!("grpo_B{B}_T{T}_V{V}_H{H}"));
    group.bench_function("policy_forward", |b| b.iter(|| std::hint::black_box(forward())));
    group.bench_function("loss_backward", |b| {
        b.iter(|| {
            let inputs = LossInputs {
                logps: logps.as_tensor(),
                old_logps: Some(&old),
                ref_logps: Some(&reference),
                mask: &mask,
                advantages: &adv,
                entropies: None,
            };
            let out = grpo_loss(&config, &inputs, scale).unwrap();
            std::hint::black_box(out.loss.backward().unwrap())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
