//! Parity with TRL 1.16: every case of `grpo_loss_cases.json` (computed in float64 by TRL's
//! own `_compute_loss`; see `shared/fixtures/README.md`) must match within 1e-6: advantages,
//! micro-batch losses, the summed loss, the gradient with respect to every per-token log-prob,
//! and the logged KL / clip-ratio metrics.
//!
//! The fixture path comes from `MENTOR_GRPO_FIXTURE` when set, else the shared copy beside the
//! repository. The test fails when it compared zero cases.

use std::path::PathBuf;

use candle_core::{DType, Device, Tensor, Var};
use mentor_grpo::{group_advantages, grpo_loss, GrpoConfig, LossInputs, LossScale, LossType, ScaleRewards};
use serde::Deserialize;

const TOL: f64 = 1e-6;

#[derive(Deserialize)]
struct Fixture {
    meta: Meta,
    inputs: Inputs,
    advantages: AdvantageTable,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Meta {
    epsilon_low: f64,
    epsilon_high: f64,
    max_completion_length: usize,
    importance_sampling_level: String,
}

#[derive(Deserialize)]
struct Inputs {
    group_size: usize,
    completion_mask: Vec<Vec<f64>>,
    rewards: Vec<f64>,
    per_token_logps: Vec<Vec<f64>>,
    old_per_token_logps: Vec<Vec<f64>>,
    ref_per_token_logps: Vec<Vec<f64>>,
}

#[derive(Deserialize)]
struct AdvantageTable {
    group: AdvantageRef,
    batch: AdvantageRef,
    none: AdvantageRef,
}

#[derive(Deserialize)]
struct AdvantageRef {
    advantages: Vec<f64>,
    mean_per_row: Vec<f64>,
    std_per_row: Vec<f64>,
    is_std_zero: Vec<bool>,
}

#[derive(Deserialize)]
struct Case {
    loss_type: LossType,
    beta: f64,
    use_bias_correction_kl: Option<bool>,
    scale_rewards: ScaleRewards,
    on_policy: bool,
    grad_accum: usize,
    micro_batch_rows: Vec<Vec<u32>>,
    micro_batch_losses: Vec<f64>,
    loss: f64,
    grad_wrt_per_token_logps: Vec<Vec<f64>>,
    metrics_per_micro_batch: Vec<Metrics>,
}

#[derive(Deserialize)]
struct Metrics {
    kl: Option<f64>,
    #[serde(rename = "clip_ratio/low_mean")]
    low: f64,
    #[serde(rename = "clip_ratio/high_mean")]
    high: f64,
    #[serde(rename = "clip_ratio/region_mean")]
    region: f64,
}

fn fixture_path() -> PathBuf {
    match std::env::var_os("MENTOR_GRPO_FIXTURE") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(
            std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
        )
        .join("../../../shared/fixtures/grpo_loss_cases.json"),
    }
}

fn load() -> Fixture {
    let path = fixture_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("cannot read GRPO fixture {}: {e} (set MENTOR_GRPO_FIXTURE)", path.display())
    });
    serde_json::from_str(&text).expect("fixture parses")
}

fn t2(rows: &[Vec<f64>]) -> Tensor {
    let b = rows.len();
    let t = rows[0].len();
    Tensor::from_vec(rows.concat(), (b, t), &Device::Cpu).unwrap()
}

/// Group ids for group-major rows: rows `g*G .. g*G+G-1` are prompt `g`.
fn group_ids(n: usize, group_size: usize) -> Vec<usize> {
    (0..n).map(|i| i / group_size).collect()
}

fn close(what: &str, got: f64, want: f64) -> f64 {
    assert!((got - want).abs() <= TOL, "{what}: got {got:e}, want {want:e}, diff {:e}", (got - want).abs());
    (got - want).abs()
}

#[test]
fn advantages_match_trl_for_every_scale_rewards() {
    let fx = load();
    let ids = group_ids(fx.inputs.rewards.len(), fx.inputs.group_size);
    let mut compared = 0;
    for (scale, reference) in [
        (ScaleRewards::Group, &fx.advantages.group),
        (ScaleRewards::Batch, &fx.advantages.batch),
        (ScaleRewards::None, &fx.advantages.none),
    ] {
        let ours = group_advantages(&fx.inputs.rewards, &ids, scale).unwrap();
        for i in 0..ours.len() {
            close(&format!("{scale:?} advantage[{i}]"), ours.advantages[i], reference.advantages[i]);
            close(&format!("{scale:?} mean[{i}]"), ours.mean_per_row[i], reference.mean_per_row[i]);
            close(&format!("{scale:?} std[{i}]"), ours.std_per_row[i], reference.std_per_row[i]);
            assert_eq!(ours.is_std_zero[i], reference.is_std_zero[i], "{scale:?} is_std_zero[{i}]");
            if reference.is_std_zero[i] {
                assert_eq!(ours.advantages[i], 0.0, "zero-variance group must give exactly 0");
            }
        }
        compared += 1;
    }
    assert_eq!(compared, 3);
}

#[test]
fn loss_and_gradient_match_trl_for_every_case() {
    let fx = load();
    assert_eq!(fx.meta.importance_sampling_level, "token");
    let dev = Device::Cpu;
    let ids = group_ids(fx.inputs.rewards.len(), fx.inputs.group_size);
    let logps = Var::from_tensor(&t2(&fx.inputs.per_token_logps)).unwrap();
    let old = t2(&fx.inputs.old_per_token_logps);
    let reference = t2(&fx.inputs.ref_per_token_logps);
    let mask = t2(&fx.inputs.completion_mask);

    let mut compared = 0usize;
    let (mut worst_loss, mut worst_grad) = (0f64, 0f64);
    for (k, case) in fx.cases.iter().enumerate() {
        let config = GrpoConfig {
            epsilon: fx.meta.epsilon_low,
            epsilon_high: Some(fx.meta.epsilon_high),
            max_completion_length: fx.meta.max_completion_length,
            beta: case.beta,
            use_bias_correction_kl: case.use_bias_correction_kl.unwrap_or(false),
            loss_type: case.loss_type,
            scale_rewards: case.scale_rewards,
            gradient_accumulation_steps: case.grad_accum,
            ..GrpoConfig::default()
        };
        config.validate().unwrap();
        let adv = group_advantages(&fx.inputs.rewards, &ids, config.scale_rewards).unwrap();
        let adv = Tensor::from_vec(adv.advantages, ids.len(), &dev).unwrap();

        let window: Vec<u32> = case.micro_batch_rows.concat();
        let window_idx = Tensor::from_vec(window.clone(), window.len(), &dev).unwrap();
        let window_tokens =
            mask.index_select(&window_idx, 0).unwrap().sum_all().unwrap().to_scalar::<f64>().unwrap();
        let scale = LossScale::new(case.grad_accum, window_tokens).unwrap();
        assert_eq!(case.micro_batch_rows.len(), case.grad_accum);

        let mut total: Option<Tensor> = None;
        for (m, rows) in case.micro_batch_rows.iter().enumerate() {
            let idx = Tensor::from_vec(rows.clone(), rows.len(), &dev).unwrap();
            let pick = |x: &Tensor| x.index_select(&idx, 0).unwrap();
            let lp = pick(logps.as_tensor());
            let old_mb = pick(&old);
            let ref_mb = pick(&reference);
            let mask_mb = pick(&mask);
            let adv_mb = pick(&adv);
            let inputs = LossInputs {
                logps: &lp,
                old_logps: if case.on_policy { None } else { Some(&old_mb) },
                ref_logps: Some(&ref_mb),
                mask: &mask_mb,
                advantages: &adv_mb,
                entropies: None,
            };
            let out = grpo_loss(&config, &inputs, scale).unwrap();
            let what = format!("case {k} ({:?} beta {} mb {m})", case.loss_type, case.beta);
            close(&format!("{what} loss"), out.loss.to_scalar::<f64>().unwrap(), case.micro_batch_losses[m]);
            let want = &case.metrics_per_micro_batch[m];
            match (out.stats.kl, want.kl) {
                (Some(a), Some(b)) => {
                    close(&format!("{what} kl"), a, b);
                }
                (None, None) => {}
                (a, b) => panic!("{what} kl presence differs: {a:?} vs {b:?}"),
            }
            close(&format!("{what} clip low"), out.stats.clip_ratio_low, want.low);
            close(&format!("{what} clip high"), out.stats.clip_ratio_high, want.high);
            close(&format!("{what} clip region"), out.stats.clip_ratio_region, want.region);
            total = Some(match total {
                None => out.loss,
                Some(t) => (t + out.loss).unwrap(),
            });
        }
        let total = total.expect("at least one micro-batch");
        let d = close(&format!("case {k} total loss"), total.to_scalar::<f64>().unwrap(), case.loss);
        worst_loss = worst_loss.max(d);

        let grads = total.backward().unwrap();
        let grad = grads.get(logps.as_tensor()).expect("gradient reaches the log-probs");
        assert_eq!(grad.dtype(), DType::F64);
        let grad = grad.to_vec2::<f64>().unwrap();
        for (i, (row, want_row)) in grad.iter().zip(&case.grad_wrt_per_token_logps).enumerate() {
            for (j, (g, w)) in row.iter().zip(want_row).enumerate() {
                worst_grad = worst_grad.max(close(&format!("case {k} grad[{i}][{j}]"), *g, *w));
            }
        }
        compared += 1;
    }
    eprintln!(
        "TRL parity: compared {compared} GRPO loss cases (loss, micro-batch losses, gradient, metrics); \
         worst |loss diff| {worst_loss:e}, worst |grad diff| {worst_grad:e}"
    );
    assert!(compared > 0, "no fixture cases were compared");
    assert_eq!(compared, fx.cases.len());
}
