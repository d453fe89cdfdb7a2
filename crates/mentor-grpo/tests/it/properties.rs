//! Property tests (proptest) of advantages and the loss, from first principles.

use candle_core::{Device, Tensor, Var};
use mentor_grpo::{
    group_advantages, grpo_loss, GrpoConfig, ImportanceSamplingLevel, LossInputs, LossScale, LossType,
    ScaleRewards,
};
use proptest::prelude::*;

const LOSS_TYPES: [LossType; 4] = [LossType::Grpo, LossType::Bnpo, LossType::DrGrpo, LossType::Dapo];
const MAX_LEN: usize = 6;

/// A random batch: `groups` groups of `g` rows, `MAX_LEN` positions, lengths in 1..=MAX_LEN.
#[derive(Debug, Clone)]
struct Batch {
    rewards: Vec<f64>,
    ids: Vec<usize>,
    lengths: Vec<usize>,
    logps: Vec<f64>,
    old: Vec<f64>,
    reference: Vec<f64>,
}

fn batch() -> impl Strategy<Value = Batch> {
    (1usize..4, 2usize..5).prop_flat_map(|(groups, g)| {
        let n = groups * g;
        let cells = n * MAX_LEN;
        (
            prop::collection::vec(prop_oneof![Just(0.0), Just(1.0), 0.0f64..1.0], n),
            prop::collection::vec(1usize..=MAX_LEN, n),
            prop::collection::vec(-3.0f64..-0.01, cells),
            prop::collection::vec(-0.5f64..0.5, cells),
            prop::collection::vec(-0.5f64..0.5, cells),
        )
            .prop_map(move |(rewards, lengths, logps, d_old, d_ref)| Batch {
                ids: (0..n).map(|i| i / g).collect(),
                old: logps.iter().zip(&d_old).map(|(l, d)| l + d).collect(),
                reference: logps.iter().zip(&d_ref).map(|(l, d)| l + d).collect(),
                rewards,
                lengths,
                logps,
            })
    })
}

impl Batch {
    fn rows(&self) -> usize {
        self.rewards.len()
    }
    fn mask(&self) -> Vec<f64> {
        self.lengths.iter().flat_map(|&l| (0..MAX_LEN).map(move |t| if t < l { 1.0 } else { 0.0 })).collect()
    }
    fn tensor(&self, v: &[f64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), (self.rows(), MAX_LEN), &Device::Cpu).unwrap()
    }
}

struct Run {
    loss: f64,
    grad: Vec<f64>,
}

fn run(b: &Batch, config: &GrpoConfig, logps: &[f64], on_policy: bool) -> Run {
    let var = Var::from_tensor(&b.tensor(logps)).unwrap();
    let mask = b.tensor(&b.mask());
    let old = b.tensor(&b.old);
    let reference = b.tensor(&b.reference);
    let adv = group_advantages(&b.rewards, &b.ids, config.scale_rewards).unwrap();
    let adv = Tensor::from_vec(adv.advantages, b.rows(), &Device::Cpu).unwrap();
    let inputs = LossInputs {
        logps: var.as_tensor(),
        old_logps: (!on_policy).then_some(&old),
        ref_logps: Some(&reference),
        mask: &mask,
        advantages: &adv,
        entropies: None,
    };
    let out = grpo_loss(config, &inputs, LossScale::single(&mask).unwrap()).unwrap();
    let grads = out.loss.backward().unwrap();
    let grad = grads.get(var.as_tensor()).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap();
    Run { loss: out.loss.to_scalar::<f64>().unwrap(), grad }
}

fn config(loss_type: LossType, beta: f64) -> GrpoConfig {
    GrpoConfig {
        loss_type,
        beta,
        epsilon_high: Some(0.28),
        max_completion_length: MAX_LEN,
        ..GrpoConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn shifting_a_groups_rewards_leaves_advantages_unchanged(b in batch(), shift in -10.0f64..10.0, which in 0usize..4) {
        let target = which % (b.ids.iter().max().unwrap() + 1);
        let shifted: Vec<f64> =
            b.rewards.iter().zip(&b.ids).map(|(r, &g)| if g == target { r + shift } else { *r }).collect();
        for scale in [ScaleRewards::Group, ScaleRewards::None] {
            let a = group_advantages(&b.rewards, &b.ids, scale).unwrap();
            let s = group_advantages(&shifted, &b.ids, scale).unwrap();
            for (x, y) in a.advantages.iter().zip(&s.advantages) {
                prop_assert!((x - y).abs() < 1e-6, "{scale:?}: {x} vs {y}");
            }
        }
        // Batch scaling uses the batch std, so the whole batch must shift together.
        let all: Vec<f64> = b.rewards.iter().map(|r| r + shift).collect();
        let a = group_advantages(&b.rewards, &b.ids, ScaleRewards::Batch).unwrap();
        let s = group_advantages(&all, &b.ids, ScaleRewards::Batch).unwrap();
        for (x, y) in a.advantages.iter().zip(&s.advantages) {
            prop_assert!((x - y).abs() < 1e-6);
        }
    }

    #[test]
    fn all_equal_group_contributes_zero_gradient(mut b in batch(), value in prop_oneof![Just(0.0), Just(1.0), 0.0f64..1.0]) {
        // Make group 0 all-equal; with beta 0 its rows must get exactly zero gradient.
        for (r, &g) in b.rewards.iter_mut().zip(&b.ids) {
            if g == 0 { *r = value; }
        }
        for lt in LOSS_TYPES {
            for level in [ImportanceSamplingLevel::Token, ImportanceSamplingLevel::Sequence] {
                let cfg = GrpoConfig { importance_sampling_level: level, ..config(lt, 0.0) };
                let r = run(&b, &cfg, &b.logps, false);
                for (i, &g) in b.ids.iter().enumerate() {
                    if g == 0 {
                        for t in 0..MAX_LEN {
                            prop_assert_eq!(r.grad[i * MAX_LEN + t], 0.0);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn ratio_one_and_beta_zero_gives_the_plain_policy_gradient(b in batch()) {
        // On-policy: d loss / d logp[i,t] = -A_i * mask[i,t] / normaliser.
        let adv = group_advantages(&b.rewards, &b.ids, ScaleRewards::Group).unwrap().advantages;
        let mask = b.mask();
        let rows = b.rows() as f64;
        let tokens: f64 = mask.iter().sum();
        for lt in LOSS_TYPES {
            let r = run(&b, &config(lt, 0.0), &b.logps, true);
            for i in 0..b.rows() {
                let norm = match lt {
                    LossType::Grpo => b.lengths[i] as f64 * rows,
                    LossType::Bnpo | LossType::Dapo => tokens,
                    LossType::DrGrpo => rows * MAX_LEN as f64,
                };
                for t in 0..MAX_LEN {
                    let want = -adv[i] * mask[i * MAX_LEN + t] / norm;
                    let got = r.grad[i * MAX_LEN + t];
                    prop_assert!((got - want).abs() < 1e-12, "{lt:?} [{i},{t}] {got} vs {want}");
                }
            }
            // And the loss value itself is -mean advantage-weighted count, i.e. sum of -A*m/norm.
            prop_assert!(r.loss.is_finite());
        }
    }

    #[test]
    fn clipped_tokens_get_no_policy_gradient(b in batch()) {
        // Token-level, beta 0: where the ratio left the trust region on the profitable side
        // (A > 0 and r > 1 + eps_high, or A < 0 and r < 1 - eps), the gradient is exactly 0;
        // inside the region it is -A * r / normaliser (bnpo).
        let adv = group_advantages(&b.rewards, &b.ids, ScaleRewards::Group).unwrap().advantages;
        let mask = b.mask();
        let tokens: f64 = mask.iter().sum();
        let cfg = config(LossType::Bnpo, 0.0);
        let r = run(&b, &cfg, &b.logps, false);
        for (i, (&a, &len)) in adv.iter().zip(&b.lengths).enumerate() {
            for t in 0..len {
                let k = i * MAX_LEN + t;
                let ratio = (b.logps[k] - b.old[k]).exp();
                let clipped = (a > 0.0 && ratio > 1.28) || (a < 0.0 && ratio < 0.8);
                let want = if clipped { 0.0 } else { -a * ratio / tokens };
                prop_assert!((r.grad[k] - want).abs() < 1e-12, "[{i},{t}] r={ratio} A={a} {} vs {want}", r.grad[k]);
            }
        }
    }

    #[test]
    fn masks_exclude_padding_exactly(b in batch(), filler in prop::collection::vec(-20.0f64..0.0, 18 * MAX_LEN)) {
        // Changing any padded value of the current, old or reference log-probs changes neither
        // the loss nor any gradient, and padded positions get exactly zero gradient.
        let mask = b.mask();
        let refill = |v: &[f64]| -> Vec<f64> {
            v.iter().zip(&mask).enumerate().map(|(k, (x, m))| if *m == 0.0 { filler[k % filler.len()] } else { *x }).collect()
        };
        let mut c = b.clone();
        c.old = refill(&b.old);
        c.reference = refill(&b.reference);
        let logps2 = refill(&b.logps);
        for lt in LOSS_TYPES {
            for level in [ImportanceSamplingLevel::Token, ImportanceSamplingLevel::Sequence] {
                let cfg = GrpoConfig { importance_sampling_level: level, use_bias_correction_kl: true, ..config(lt, 0.04) };
                let r1 = run(&b, &cfg, &b.logps, false);
                let r2 = run(&c, &cfg, &logps2, false);
                prop_assert_eq!(r1.loss, r2.loss);
                prop_assert_eq!(&r1.grad, &r2.grad);
                for (k, m) in mask.iter().enumerate() {
                    if *m == 0.0 { prop_assert_eq!(r1.grad[k], 0.0); }
                }
            }
        }
    }
}
