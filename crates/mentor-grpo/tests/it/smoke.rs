//! Training smoke test: a tiny prompt-conditioned policy over an 8-token vocabulary samples
//! completions from its own softmax; the reward is the fraction of emitted tokens equal to 3.
//! GRPO must raise the mean reward. Deterministic (seeded), no timing assertions.

use candle_core::{Device, Tensor, Var, D};
use mentor_grpo::{
    GrpoConfig, LossType, LrSchedulerType, OptimizerConfig, Pass, PolicyOutput, RolloutBatch, Updater,
};

const VOCAB: usize = 8;
const HIDDEN: usize = 16;
const PROMPTS: usize = 4;
const GROUP: usize = 8;
const MAX_LEN: usize = 4;
const TARGET: u32 = 3;

/// SplitMix64: a tiny seeded generator so the test needs no RNG crate.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-12), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Prompt embedding -> tanh -> per-position logits over the vocabulary.
struct Policy {
    embed: Var, // [PROMPTS, HIDDEN]
    pos: Var,   // [MAX_LEN, HIDDEN]
    out: Var,   // [HIDDEN, VOCAB]
}

impl Policy {
    fn new(rng: &mut Rng) -> Self {
        let mut init = |r: usize, c: usize, s: f64| {
            let v: Vec<f32> = (0..r * c).map(|_| (rng.normal() * s) as f32).collect();
            Var::from_tensor(&Tensor::from_vec(v, (r, c), &Device::Cpu).unwrap()).unwrap()
        };
        Self {
            embed: init(PROMPTS, HIDDEN, 0.5),
            pos: init(MAX_LEN, HIDDEN, 0.5),
            out: init(HIDDEN, VOCAB, 0.3),
        }
    }

    fn vars(&self) -> Vec<Var> {
        vec![self.embed.clone(), self.pos.clone(), self.out.clone()]
    }

    /// Log-softmax over the vocabulary, `[rows, MAX_LEN, VOCAB]`, for the given prompts.
    fn log_probs(&self, prompts: &[u32]) -> candle_core::Result<Tensor> {
        let idx = Tensor::from_vec(prompts.to_vec(), prompts.len(), &Device::Cpu)?;
        let e = self.embed.as_tensor().index_select(&idx, 0)?.unsqueeze(1)?; // [rows, 1, H]
        let h = e.broadcast_add(&self.pos.as_tensor().unsqueeze(0)?)?.tanh()?; // [rows, L, H]
        let logits = h.broadcast_matmul(&self.out.as_tensor().unsqueeze(0)?)?; // [rows, L, V]
        candle_nn::ops::log_softmax(&logits, D::Minus1)
    }

    /// Per-token log-probs of `tokens` `[rows, MAX_LEN]`.
    fn token_logps(&self, prompts: &[u32], tokens: &Tensor) -> candle_core::Result<Tensor> {
        self.log_probs(prompts)?.gather(&tokens.unsqueeze(D::Minus1)?, D::Minus1)?.squeeze(D::Minus1)
    }

    /// What `Updater::update` asks for: the log-probs of the batch rows `rows`.
    fn rows_output(
        &self,
        prompts: &[u32],
        tokens: &Tensor,
        rows: &[usize],
    ) -> candle_core::Result<PolicyOutput> {
        let idx =
            Tensor::from_vec(rows.iter().map(|&i| i as u32).collect::<Vec<_>>(), rows.len(), &Device::Cpu)?;
        let p: Vec<u32> = rows.iter().map(|&i| prompts[i]).collect();
        let logp = self.log_probs(&p)?;
        let logps = logp.gather(&tokens.index_select(&idx, 0)?.unsqueeze(D::Minus1)?, D::Minus1)?;
        let entropies = (logp.exp()? * &logp)?.sum(D::Minus1)?.neg()?.detach();
        Ok(PolicyOutput { logps: logps.squeeze(D::Minus1)?, entropies: Some(entropies), rest: None })
    }
}

struct Rollout {
    batch: RolloutBatch,
    prompts: Vec<u32>,
    tokens: Tensor,
}

fn sample(policy: &Policy, rng: &mut Rng) -> Rollout {
    let prompts: Vec<u32> = (0..PROMPTS as u32).flat_map(|p| std::iter::repeat_n(p, GROUP)).collect();
    let probs = policy.log_probs(&prompts).unwrap().exp().unwrap().to_vec3::<f32>().unwrap();
    let (mut tokens, mut mask, mut rewards, mut truncated) = (vec![], vec![], vec![], vec![]);
    for row in &probs {
        // Completion length 2..=MAX_LEN; a length-MAX_LEN completion counts as truncated.
        let len = 2 + (rng.next_u64() % (MAX_LEN as u64 - 1)) as usize;
        let mut hits = 0;
        for (t, dist) in row.iter().enumerate() {
            let u = rng.uniform() as f32;
            let mut acc = 0.0;
            let tok = dist.iter().position(|p| {
                acc += p;
                u < acc
            });
            let tok = tok.unwrap_or(VOCAB - 1) as u32;
            let real = t < len;
            tokens.push(if real { tok } else { 0 });
            mask.push(if real { 1f32 } else { 0.0 });
            hits += usize::from(real && tok == TARGET);
        }
        rewards.push(hits as f64 / len as f64);
        truncated.push(len == MAX_LEN);
    }
    let n = prompts.len();
    Rollout {
        batch: RolloutBatch {
            rewards,
            group_ids: prompts.iter().map(|&p| p as usize).collect(),
            mask: Tensor::from_vec(mask, (n, MAX_LEN), &Device::Cpu).unwrap(),
            truncated,
            old_logps: None,
            ref_logps: None,
            baselines: None,
        },
        prompts,
        tokens: Tensor::from_vec(tokens, (n, MAX_LEN), &Device::Cpu).unwrap(),
    }
}

/// Train for `steps` updates; returns the mean reward of each sampled batch.
fn train(config: GrpoConfig, steps: usize, with_reference: bool) -> Vec<f64> {
    let mut rng = Rng(0x5EED);
    let policy = Policy::new(&mut rng);
    let reference = Policy::new(&mut Rng(0x5EED)); // same init: the frozen reference policy
    let mut updater = Updater::new(config, policy.vars(), steps).unwrap();
    let mut rewards = Vec::new();
    for _ in 0..steps {
        let mut r = sample(&policy, &mut rng);
        if with_reference {
            r.batch.ref_logps = Some(reference.token_logps(&r.prompts, &r.tokens).unwrap().detach());
        }
        let prompts = r.prompts.clone();
        let tokens = r.tokens.clone();
        let metrics = updater
            .update(&r.batch, |rows: &[usize], _: Pass| -> candle_core::Result<PolicyOutput> {
                policy.rows_output(&prompts, &tokens, rows)
            })
            .unwrap();
        assert!(metrics.grad_norm.is_finite());
        assert_eq!(metrics.optimizer_steps, updater.config().num_iterations);
        assert_eq!(with_reference, metrics.kl.is_some());
        rewards.push(metrics.rollout.reward_mean);
    }
    rewards
}

fn assert_rises(rewards: &[f64]) {
    let k = 5;
    let first = rewards[..k].iter().sum::<f64>() / k as f64;
    let last = rewards[rewards.len() - k..].iter().sum::<f64>() / k as f64;
    eprintln!("mean reward first {k} updates {first:.3}, last {k} updates {last:.3}");
    assert!(last > first + 0.3, "reward did not rise: {first:.3} -> {last:.3} ({rewards:?})");
    assert!(last > 0.6, "reward stayed low: {last:.3}");
}

#[test]
fn reward_rises_with_default_dapo_loss() {
    let config = GrpoConfig {
        max_completion_length: MAX_LEN,
        epsilon_high: Some(0.28),
        optimizer: OptimizerConfig {
            learning_rate: 0.05,
            lr_scheduler_type: LrSchedulerType::Constant,
            ..OptimizerConfig::default()
        },
        ..GrpoConfig::default()
    };
    assert_rises(&train(config, 40, false));
}

#[test]
fn reward_rises_with_iterations_accumulation_kl_and_truncation_masking() {
    let config = GrpoConfig {
        loss_type: LossType::Grpo,
        beta: 0.04,
        use_bias_correction_kl: true,
        num_iterations: 2,
        gradient_accumulation_steps: 2,
        mask_truncated_completions: true,
        max_completion_length: MAX_LEN,
        optimizer: OptimizerConfig {
            learning_rate: 0.05,
            lr_scheduler_type: LrSchedulerType::Cosine,
            warmup_steps: 2,
            ..OptimizerConfig::default()
        },
        ..GrpoConfig::default()
    };
    assert_rises(&train(config, 40, true));
}

/// A batch whose advantages are all zero (a collapsed step) skips the forward and backward
/// passes, yet the parameters move exactly as after the full computation: the optimizer
/// steps on zero gradients and its momentum carries on.
#[test]
fn an_all_zero_advantage_step_skips_the_passes_and_matches_the_full_computation() {
    let config = GrpoConfig {
        max_completion_length: MAX_LEN,
        optimizer: OptimizerConfig {
            learning_rate: 0.05,
            lr_scheduler_type: LrSchedulerType::Constant,
            ..OptimizerConfig::default()
        },
        ..GrpoConfig::default()
    };
    let mut rng = Rng(0x5EED);
    let policies = [Policy::new(&mut Rng(7)), Policy::new(&mut Rng(7))];
    let mut updaters: Vec<Updater> =
        policies.iter().map(|p| Updater::new(config.clone(), p.vars(), 2).unwrap()).collect();
    let first = sample(&policies[0], &mut rng);
    let mut zero = sample(&policies[0], &mut rng);
    // Every row against a baseline equal to its own reward: every advantage is exactly 0.
    zero.batch.baselines = Some(zero.batch.rewards.iter().map(|&r| Some(r)).collect());
    let values = |p: &Policy| -> Vec<Vec<f32>> {
        p.vars().iter().map(|v| v.as_tensor().flatten_all().unwrap().to_vec1::<f32>().unwrap()).collect()
    };
    let mut calls = [0usize; 2];
    for (i, (policy, updater)) in policies.iter().zip(updaters.iter_mut()).enumerate() {
        for (step, r) in [&first, &zero].into_iter().enumerate() {
            let mut batch = r.batch.clone();
            if i == 1 && step == 1 {
                // The same step forced down the full path: behaviour log-probs equal to the
                // current ones give a ratio of exactly 1.
                batch.old_logps = Some(policy.token_logps(&r.prompts, &r.tokens).unwrap().detach());
            }
            let before = values(policy);
            let m = updater
                .update(&batch, |rows: &[usize], _: Pass| -> candle_core::Result<PolicyOutput> {
                    if step == 1 {
                        calls[i] += 1;
                    }
                    policy.rows_output(&r.prompts, &r.tokens, rows)
                })
                .unwrap();
            assert_eq!(m.optimizer_steps, 1);
            if step == 1 {
                assert_eq!(m.grad_norm, 0.0);
                assert_eq!(m.loss, 0.0);
                assert_ne!(values(policy), before, "momentum still moves the parameters");
            }
        }
    }
    assert_eq!(calls, [0, 1], "the zero step computed no log-probs; the forced one did");
    assert_eq!(values(&policies[0]), values(&policies[1]));
}

/// With the `dapo` loss, rows whose advantage is zero are left out of the passes of a mixed
/// batch; the update equals the full computation (up to float summation order).
#[test]
fn zero_advantage_rows_are_left_out_of_a_dapo_update_without_changing_it() {
    let config = GrpoConfig {
        max_completion_length: MAX_LEN,
        optimizer: OptimizerConfig {
            learning_rate: 0.05,
            lr_scheduler_type: LrSchedulerType::Constant,
            ..OptimizerConfig::default()
        },
        ..GrpoConfig::default()
    };
    assert_eq!(config.loss_type, LossType::Dapo);
    let mut rng = Rng(0xACE);
    let policies = [Policy::new(&mut Rng(11)), Policy::new(&mut Rng(11))];
    let mut r = sample(&policies[0], &mut rng);
    let n = r.batch.rewards.len();
    let adv: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { (i as f64 - 10.0) / 7.0 } else { 0.0 }).collect();
    // Baselines that give these advantages (`reward − (reward − adv)`; exactly 0 where adv is).
    r.batch.baselines = Some(r.batch.rewards.iter().zip(&adv).map(|(&r, &a)| Some(r - a)).collect());
    let mut seen: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    let mut losses = [0.0; 2];
    for (i, policy) in policies.iter().enumerate() {
        let mut updater = Updater::new(config.clone(), policy.vars(), 1).unwrap();
        let mut batch = r.batch.clone();
        if i == 1 {
            batch.old_logps = Some(policy.token_logps(&r.prompts, &r.tokens).unwrap().detach());
        }
        let m = updater
            .update(&batch, |rows: &[usize], _: Pass| -> candle_core::Result<PolicyOutput> {
                seen[i].extend_from_slice(rows);
                policy.rows_output(&r.prompts, &r.tokens, rows)
            })
            .unwrap();
        let all_tokens: f32 = r.batch.mask.sum_all().unwrap().to_scalar().unwrap();
        assert_eq!(m.num_tokens, f64::from(all_tokens), "the token count covers every row");
        losses[i] = m.loss;
    }
    let live: Vec<usize> = (0..n).filter(|&i| adv[i] != 0.0).collect();
    assert_eq!(seen[0], live, "only rows with a non-zero advantage were passed");
    assert_eq!(seen[1], (0..n).collect::<Vec<_>>());
    assert!((losses[0] - losses[1]).abs() < 1e-6, "{losses:?}");
    for (a, b) in policies[0].vars().iter().zip(policies[1].vars()) {
        let d = (a.as_tensor() - b.as_tensor()).unwrap().abs().unwrap().max_all().unwrap();
        assert!(d.to_scalar::<f32>().unwrap() < 1e-6);
    }
}

/// `loss_type = "grpo"` in equal micro-batches (one per prompt group) sums to the gradients of
/// the whole batch, as TRL's accumulation does: the update equals one batch's up to float
/// summation order, at a quarter of the activations (what `cargo xtask bench step` relies on).
#[test]
fn a_grpo_update_in_equal_micro_batches_equals_one_batch() {
    let mut rng = Rng(0xB47C);
    let policies = [Policy::new(&mut Rng(13)), Policy::new(&mut Rng(13))];
    let r = sample(&policies[0], &mut rng);
    let n = r.batch.rewards.len();
    assert_eq!(n, PROMPTS * GROUP);
    let mut passes: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    let mut reports = Vec::new();
    for (i, policy) in policies.iter().enumerate() {
        let config = GrpoConfig {
            loss_type: LossType::Grpo,
            optimizer: OptimizerConfig {
                learning_rate: 0.05,
                lr_scheduler_type: LrSchedulerType::Constant,
                ..OptimizerConfig::default()
            },
            max_completion_length: MAX_LEN,
            gradient_accumulation_steps: if i == 0 { 1 } else { PROMPTS },
            ..GrpoConfig::default()
        };
        let mut updater = Updater::new(config, policy.vars(), 1).unwrap();
        let m = updater
            .update(&r.batch, |rows: &[usize], _: Pass| -> candle_core::Result<PolicyOutput> {
                passes[i].push(rows.len());
                policy.rows_output(&r.prompts, &r.tokens, rows)
            })
            .unwrap();
        assert_eq!(m.optimizer_steps, 1);
        reports.push(m);
    }
    assert_eq!(passes[1], vec![GROUP; PROMPTS], "one micro-batch per prompt group");
    assert!(passes[0].len() == 1, "{:?}", passes[0]);
    assert!(reports[0].grad_norm > 0.0);
    assert!(
        (reports[0].grad_norm - reports[1].grad_norm).abs() < 1e-6 * reports[0].grad_norm,
        "{} vs {}",
        reports[0].grad_norm,
        reports[1].grad_norm
    );
    for (a, b) in policies[0].vars().iter().zip(policies[1].vars()) {
        let d = (a.as_tensor() - b.as_tensor()).unwrap().abs().unwrap().max_all().unwrap();
        assert!(d.to_scalar::<f32>().unwrap() < 1e-6);
    }
}

/// With `loss_type = "grpo"` in one micro-batch per group, a group whose advantages are all
/// zero (its rewards all equal) adds nothing to the loss or the gradient, so its training pass
/// is skipped and only a metrics pass gives its entropy: every metric and every weight equal
/// the full computation's (forced by behaviour log-probs equal to the current ones).
#[test]
fn a_zero_advantage_group_skips_its_training_pass_without_changing_the_update() {
    let mut r = sample(&Policy::new(&mut Rng(17)), &mut Rng(0x5C1B));
    assert_eq!(r.batch.rewards.len(), PROMPTS * GROUP);
    // Group 1's rewards all equal: its advantages are exactly zero.
    for i in GROUP..2 * GROUP {
        r.batch.rewards[i] = 0.5;
    }
    assert!(r.batch.rewards[..GROUP].iter().any(|&x| x != r.batch.rewards[0]), "group 0 is mixed");
    let mut passes: [Vec<(Vec<usize>, Pass)>; 2] = [Vec::new(), Vec::new()];
    let mut reports = Vec::new();
    for loss_type in [LossType::Grpo, LossType::DrGrpo, LossType::Bnpo] {
        for (i, pass_log) in passes.iter_mut().enumerate() {
            let config = GrpoConfig {
                loss_type,
                max_completion_length: MAX_LEN,
                gradient_accumulation_steps: PROMPTS,
                optimizer: OptimizerConfig {
                    learning_rate: 0.05,
                    lr_scheduler_type: LrSchedulerType::Constant,
                    ..OptimizerConfig::default()
                },
                ..GrpoConfig::default()
            };
            // A fresh copy of the same policy for each run.
            let policy = Policy::new(&mut Rng(17));
            let mut batch = r.batch.clone();
            if i == 1 {
                batch.old_logps = Some(policy.token_logps(&r.prompts, &r.tokens).unwrap().detach());
            }
            let mut updater = Updater::new(config, policy.vars(), 1).unwrap();
            pass_log.clear();
            let m = updater
                .update(&batch, |rows: &[usize], pass: Pass| -> candle_core::Result<PolicyOutput> {
                    pass_log.push((rows.to_vec(), pass));
                    policy.rows_output(&r.prompts, &r.tokens, rows)
                })
                .unwrap();
            reports.push((m, policy.vars().iter().map(|v| v.as_tensor().clone()).collect::<Vec<_>>()));
        }
        let kinds = |p: &[(Vec<usize>, Pass)]| p.iter().map(|(_, k)| *k).collect::<Vec<_>>();
        assert_eq!(
            kinds(&passes[0]),
            [Pass::Train, Pass::Metrics, Pass::Train, Pass::Train],
            "{loss_type:?}: group 1 had only a metrics pass"
        );
        assert_eq!(passes[0][1].0, (GROUP..2 * GROUP).collect::<Vec<_>>());
        assert_eq!(kinds(&passes[1]), [Pass::Train; 4], "{loss_type:?}: the forced path trains every group");
        let ((a, wa), (b, wb)) = (&reports[reports.len() - 2], &reports[reports.len() - 1]);
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-6 * (1.0 + x.abs());
        assert!(a.entropy.is_some() && b.entropy.is_some());
        for (what, x, y) in [
            ("loss", a.loss, b.loss),
            ("grad_norm", a.grad_norm, b.grad_norm),
            ("entropy", a.entropy.unwrap(), b.entropy.unwrap()),
            ("clip_ratio_region", a.clip_ratio_region, b.clip_ratio_region),
            ("num_tokens", a.num_tokens, b.num_tokens),
        ] {
            assert!(close(x, y), "{loss_type:?} {what}: {x} vs {y}");
        }
        assert!(a.grad_norm > 0.0);
        for (x, y) in wa.iter().zip(wb) {
            let d = (x - y).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
            assert!(d < 1e-6, "{loss_type:?}: weights differ by {d}");
        }
    }
}
