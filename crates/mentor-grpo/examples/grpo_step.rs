//! One GRPO loss + backward + AdamW step on a hand-made batch, printed step by step.
//!
//! Run: `cargo run -p mentor-grpo --example grpo_step`

use candle_core::{Device, Tensor, Var};
use mentor_grpo::{
    dynamic_sampling_filter, group_advantages, grpo_loss, GrpoConfig, LossInputs, LossScale, LossType,
    LrSchedulerType, Optimizer, OptimizerConfig,
};

fn main() -> mentor_grpo::Result<()> {
    let dev = Device::Cpu;
    // Two prompts x three completions; prompt 1's completions all failed.
    let rewards = [1.0, 0.0, 1.0, 0.0, 0.0, 0.0];
    let group_ids = [0, 0, 0, 1, 1, 1];
    let filter = dynamic_sampling_filter(&rewards, &group_ids)?;
    println!(
        "dynamic sampling: keep rows {:?}, dropped {} all-zero / {} all-one groups",
        filter.keep_rows, filter.dropped_all_zero, filter.dropped_all_one
    );

    let config = GrpoConfig {
        loss_type: LossType::Dapo,
        epsilon_high: Some(0.28),
        beta: 0.04,
        optimizer: OptimizerConfig {
            learning_rate: 0.1,
            lr_scheduler_type: LrSchedulerType::Constant,
            ..OptimizerConfig::default()
        },
        ..GrpoConfig::default()
    };
    config.validate()?;
    let adv = group_advantages(&rewards, &group_ids, config.scale_rewards)?;
    println!("advantages: {:?}", adv.advantages);

    // Stand-in "policy": the per-token log-probs themselves are the trainable parameters.
    let logps = Var::from_tensor(&Tensor::new(
        &[
            [-0.5f32, -1.0, -0.2, 0.0],
            [-1.5, -0.7, 0.0, 0.0],
            [-0.3, -0.4, -0.9, -1.2],
            [-2.0, -0.1, 0.0, 0.0],
            [-0.6, -0.6, -0.6, 0.0],
            [-1.0, -1.0, 0.0, 0.0],
        ],
        &dev,
    )?)?;
    let mask = Tensor::new(
        &[
            [1f32, 1., 1., 0.],
            [1., 1., 0., 0.],
            [1., 1., 1., 1.],
            [1., 1., 0., 0.],
            [1., 1., 1., 0.],
            [1., 1., 0., 0.],
        ],
        &dev,
    )?;
    let old = (logps.as_tensor() + 0.1)?; // the sampling policy was slightly different
    let reference = (logps.as_tensor() - 0.05)?;
    let advantages = Tensor::from_vec(adv.advantages.iter().map(|&a| a as f32).collect(), 6, &dev)?;

    let inputs = LossInputs {
        logps: logps.as_tensor(),
        old_logps: Some(&old),
        ref_logps: Some(&reference),
        mask: &mask,
        advantages: &advantages,
        entropies: None,
    };
    let out = grpo_loss(&config, &inputs, LossScale::single(&mask)?)?;
    println!("loss {:.6}  stats {:?}", out.loss.to_scalar::<f32>()?, out.stats);

    let mut optimizer = Optimizer::new(vec![logps.clone()], &config.optimizer, 1)?;
    let mut grads = out.loss.backward()?;
    let report = optimizer.step(&mut grads)?;
    println!("grad norm {:.6}, lr {}, applied {}", report.grad_norm, report.learning_rate, report.applied);
    println!("updated log-probs row 0: {:?}", logps.as_tensor().get(0)?.to_vec1::<f32>()?);
    Ok(())
}
