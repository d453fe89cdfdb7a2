//! GRPO for MENTOR: group advantages, TRL's loss variants (grpo, bnpo, dr_grpo, dapo), KL,
//! clipping, AdamW with learning-rate schedules and grad-norm clipping, DAPO dynamic sampling,
//! and step metrics.
//!
//! Numerically identical to TRL's `GRPOTrainer` (checked against TRL 1.16's own outputs in the
//! integration tests). Works on candle tensors of per-token log-probs `[batch, seq]` and masks,
//! independent of how the policy computes them: this crate never runs a model, never depends on
//! `mentor-policy`, and never links wasmtime.
//!
//! Two levels of API:
//! - pieces: [`group_advantages`], [`grpo_loss`], [`Optimizer`] (AdamW + [`LrSchedule`] +
//!   [`clip_grad_norm`]), [`GradAccumulator`], [`dynamic_sampling_filter`], [`rollout_stats`];
//! - one call per generation batch: [`Updater::update`], given a function that returns the
//!   policy's differentiable log-probs for a set of rows;
//! - supervised fine-tuning's loss and data-parallel gradients ([`sft`]), stepped by an
//!   [`Optimizer`] built from an [`OptimizerConfig`].
#![deny(missing_docs)]

mod advantage;
mod config;
mod dynamic_sampling;
mod error;
mod inplace;
mod loss;
mod masking;
mod metrics;
mod optim;
mod schedule;
pub mod sft;
mod staged;
mod update;

pub use advantage::{advantages_with_baselines, group_advantages, Advantages, STD_EPSILON};
pub use config::{
    GrpoConfig, ImportanceSamplingLevel, LossType, LrSchedulerType, OptimizerConfig, ScaleRewards,
};
pub use dynamic_sampling::{dynamic_sampling_filter, GroupFilter};
pub use error::{Error, Result};
pub use loss::{grpo_loss, LossInputs, LossOutput, LossScale, LossStats};
pub use masking::mask_truncated;
pub use metrics::{rollout_stats, RolloutStats, StepMetrics};
pub use optim::{clip_grad_norm, grad_norm, GradAccumulator, Optimizer, OptimizerState, StepReport};
pub use schedule::LrSchedule;
pub use staged::StagedBackward;
pub use update::{micro_batches, Pass, PolicyOutput, RolloutBatch, Updater};
