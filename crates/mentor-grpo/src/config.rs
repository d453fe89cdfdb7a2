//! GRPO configuration: field names and defaults follow TRL's `GRPOConfig` (and the
//! `TrainingArguments` fields it inherits) wherever the concept is the same.
//!
//! Everything here is plain data with serde derives so a trainer TOML can deserialize it
//! directly. [`GrpoConfig::validate`] checks ranges once, at the boundary; the loss and
//! optimizer code assumes a validated config.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How the per-token loss is normalised (TRL `loss_type`).
///
/// All four sum `per_token_loss * completion_mask`; they differ in the divisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LossType {
    /// Original GRPO: mean over each sequence's tokens, then mean over sequences, divided by
    /// the gradient-accumulation steps. Short sequences weigh more per token.
    Grpo,
    /// Sum over the micro-batch's tokens divided by the micro-batch's token count, divided by
    /// the gradient-accumulation steps.
    Bnpo,
    /// Dr. GRPO: sum over tokens divided by `rows * max_completion_length` (a constant, so no
    /// length bias), divided by the gradient-accumulation steps.
    DrGrpo,
    /// DAPO token-level loss: sum over tokens divided by the number of completion tokens in
    /// the whole accumulation window (all micro-batches of one optimizer step). TRL's default.
    #[default]
    Dapo,
}

/// How group-relative advantages are scaled (TRL `scale_rewards`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ScaleRewards {
    /// Divide by the group's (Bessel-corrected) reward std plus 1e-4. TRL's default.
    #[default]
    Group,
    /// Divide by the whole batch's reward std plus 1e-4 (the mean is still the group mean).
    Batch,
    /// No division (Dr. GRPO): advantage = reward - group mean.
    None,
}

/// Whether the importance ratio is per token or one per sequence (TRL
/// `importance_sampling_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ImportanceSamplingLevel {
    /// One ratio per token (GRPO, DAPO). TRL's default.
    #[default]
    Token,
    /// GSPO: one ratio per sequence, `exp(mean over real tokens of (logp - old_logp))`.
    Sequence,
}

/// Learning-rate schedule (a subset of Hugging Face's `lr_scheduler_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LrSchedulerType {
    /// Constant learning rate, warm-up ignored (HF `constant`).
    Constant,
    /// Linear warm-up from 0, then constant (HF `constant_with_warmup`).
    ConstantWithWarmup,
    /// Linear warm-up from 0, then linear decay to 0 at the last step (HF `linear`, the HF
    /// default).
    #[default]
    Linear,
    /// Linear warm-up from 0, then half a cosine wave down to 0 at the last step (HF
    /// `cosine`).
    Cosine,
}

/// GRPO hyper-parameters. Names and defaults are TRL's `GRPOConfig` where the concept exists
/// there; each field says where we differ. The optimizer's fields are an [`OptimizerConfig`]
/// in Rust ([`GrpoConfig::optimizer`]) and flat in TOML and JSON (`learning_rate`,
/// `max_grad_norm`, … beside `beta`), as in TRL, where `GRPOConfig` inherits them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "GrpoFields", into = "GrpoFields")]
pub struct GrpoConfig {
    /// Completions sampled per prompt (the group size). TRL default 8. Advantages themselves
    /// use explicit group ids, so groups of other sizes (e.g. hinted re-rollouts) also work.
    pub num_generations: usize,
    /// Lower clip range: ratios below `1 - epsilon` are clipped. TRL default 0.2.
    pub epsilon: f64,
    /// Upper clip range (DAPO clip-higher): ratios above `1 + epsilon_high` are clipped.
    /// `None` means "same as `epsilon`", as in TRL. DAPO recommends 0.28.
    pub epsilon_high: Option<f64>,
    /// Two-sided clipping (TRL `delta`, INTELLECT-2): when set, the unclipped ratio is also
    /// capped at `delta` (should be > `1 + epsilon_high`). `None` disables it, as in TRL.
    pub delta: Option<f64>,
    /// KL coefficient. TRL's current default is 0.0 (no reference model needed).
    pub beta: f64,
    /// Loss normalisation. TRL default `dapo`.
    pub loss_type: LossType,
    /// Advantage scaling. TRL default `group`.
    pub scale_rewards: ScaleRewards,
    /// Token- or sequence-level (GSPO) importance ratio. TRL default `token`.
    pub importance_sampling_level: ImportanceSamplingLevel,
    /// Exclude completions that hit `max_completion_length` without an end-of-sequence token
    /// from the loss (their mask becomes all zero). TRL default false.
    pub mask_truncated_completions: bool,
    /// Policy updates per generated batch (the old log-probs stay fixed across them). TRL
    /// default 1; with 1 the old log-probs are the detached current ones (ratio exactly 1).
    pub num_iterations: usize,
    /// Multiply the k3 KL estimate by the importance ratio (TRL `use_bias_correction_kl`),
    /// making it unbiased for samples drawn from the old policy. TRL default false.
    pub use_bias_correction_kl: bool,
    /// Maximum completion length in tokens; the `dr_grpo` divisor. TRL default 256.
    pub max_completion_length: usize,
    /// Micro-batches whose gradients are summed before one optimizer step. HF default 1.
    pub gradient_accumulation_steps: usize,
    /// AdamW, gradient-norm clipping and the learning-rate schedule. TRL's GRPO default
    /// learning rate is 1e-6; the rest are Hugging Face's `TrainingArguments` defaults.
    pub optimizer: OptimizerConfig,
}

/// [`GrpoConfig`] as it is written: every field flat, unknown ones refused (serde's
/// `flatten` cannot refuse them).
#[derive(Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct GrpoFields {
    /// Completions sampled per prompt (the group size). TRL default 8. Advantages themselves
    /// use explicit group ids, so groups of other sizes (e.g. hinted re-rollouts) also work.
    num_generations: usize,
    /// Lower clip range: ratios below `1 - epsilon` are clipped. TRL default 0.2.
    epsilon: f64,
    /// Upper clip range (DAPO clip-higher): ratios above `1 + epsilon_high` are clipped.
    /// `None` means "same as `epsilon`", as in TRL. DAPO recommends 0.28.
    epsilon_high: Option<f64>,
    /// Two-sided clipping (TRL `delta`, INTELLECT-2): when set, the unclipped ratio is also
    /// capped at `delta` (should be > `1 + epsilon_high`). `None` disables it, as in TRL.
    delta: Option<f64>,
    /// KL coefficient. TRL's current default is 0.0 (no reference model needed).
    beta: f64,
    /// Loss normalisation. TRL default `dapo`.
    loss_type: LossType,
    /// Advantage scaling. TRL default `group`.
    scale_rewards: ScaleRewards,
    /// Token- or sequence-level (GSPO) importance ratio. TRL default `token`.
    importance_sampling_level: ImportanceSamplingLevel,
    /// Exclude completions that hit `max_completion_length` without an end-of-sequence token
    /// from the loss (their mask becomes all zero). TRL default false.
    mask_truncated_completions: bool,
    /// Policy updates per generated batch (the old log-probs stay fixed across them). TRL
    /// default 1; with 1 the old log-probs are the detached current ones (ratio exactly 1).
    num_iterations: usize,
    /// Multiply the k3 KL estimate by the importance ratio (TRL `use_bias_correction_kl`),
    /// making it unbiased for samples drawn from the old policy. TRL default false.
    use_bias_correction_kl: bool,
    /// Maximum completion length in tokens; the `dr_grpo` divisor. TRL default 256.
    max_completion_length: usize,
    /// Micro-batches whose gradients are summed before one optimizer step. HF default 1.
    gradient_accumulation_steps: usize,
    /// Peak learning rate. TRL's GRPO default 1e-6.
    learning_rate: f64,
    /// Decoupled (AdamW) weight decay. HF default 0.0.
    weight_decay: f64,
    /// AdamW beta1. HF default 0.9.
    adam_beta1: f64,
    /// AdamW beta2. HF default 0.999.
    adam_beta2: f64,
    /// AdamW epsilon. HF default 1e-8.
    adam_epsilon: f64,
    /// Global gradient-norm clip (L2 over all parameters); `0` or negative disables it. HF
    /// default 1.0.
    max_grad_norm: f64,
    /// Learning-rate schedule. HF default `linear`.
    lr_scheduler_type: LrSchedulerType,
    /// Warm-up optimizer steps. Overrides `warmup_ratio` when non-zero, as in HF.
    warmup_steps: usize,
    /// Warm-up as a fraction of the total optimizer steps (used when `warmup_steps` is 0).
    warmup_ratio: f64,
}

impl Default for GrpoFields {
    fn default() -> Self {
        GrpoConfig::default().into()
    }
}

impl From<GrpoFields> for GrpoConfig {
    fn from(f: GrpoFields) -> Self {
        Self {
            num_generations: f.num_generations,
            epsilon: f.epsilon,
            epsilon_high: f.epsilon_high,
            delta: f.delta,
            beta: f.beta,
            loss_type: f.loss_type,
            scale_rewards: f.scale_rewards,
            importance_sampling_level: f.importance_sampling_level,
            mask_truncated_completions: f.mask_truncated_completions,
            num_iterations: f.num_iterations,
            use_bias_correction_kl: f.use_bias_correction_kl,
            max_completion_length: f.max_completion_length,
            gradient_accumulation_steps: f.gradient_accumulation_steps,
            optimizer: OptimizerConfig {
                learning_rate: f.learning_rate,
                weight_decay: f.weight_decay,
                adam_beta1: f.adam_beta1,
                adam_beta2: f.adam_beta2,
                adam_epsilon: f.adam_epsilon,
                max_grad_norm: f.max_grad_norm,
                lr_scheduler_type: f.lr_scheduler_type,
                warmup_steps: f.warmup_steps,
                warmup_ratio: f.warmup_ratio,
            },
        }
    }
}

impl From<GrpoConfig> for GrpoFields {
    fn from(c: GrpoConfig) -> Self {
        let o = c.optimizer;
        Self {
            num_generations: c.num_generations,
            epsilon: c.epsilon,
            epsilon_high: c.epsilon_high,
            delta: c.delta,
            beta: c.beta,
            loss_type: c.loss_type,
            scale_rewards: c.scale_rewards,
            importance_sampling_level: c.importance_sampling_level,
            mask_truncated_completions: c.mask_truncated_completions,
            num_iterations: c.num_iterations,
            use_bias_correction_kl: c.use_bias_correction_kl,
            max_completion_length: c.max_completion_length,
            gradient_accumulation_steps: c.gradient_accumulation_steps,
            learning_rate: o.learning_rate,
            weight_decay: o.weight_decay,
            adam_beta1: o.adam_beta1,
            adam_beta2: o.adam_beta2,
            adam_epsilon: o.adam_epsilon,
            max_grad_norm: o.max_grad_norm,
            lr_scheduler_type: o.lr_scheduler_type,
            warmup_steps: o.warmup_steps,
            warmup_ratio: o.warmup_ratio,
        }
    }
}

impl Default for GrpoConfig {
    fn default() -> Self {
        Self {
            num_generations: 8,
            epsilon: 0.2,
            epsilon_high: None,
            delta: None,
            beta: 0.0,
            loss_type: LossType::Dapo,
            scale_rewards: ScaleRewards::Group,
            importance_sampling_level: ImportanceSamplingLevel::Token,
            mask_truncated_completions: false,
            num_iterations: 1,
            use_bias_correction_kl: false,
            max_completion_length: 256,
            gradient_accumulation_steps: 1,
            optimizer: OptimizerConfig::default(),
        }
    }
}

/// The optimizer's hyper-parameters alone: AdamW, gradient-norm clipping and the learning-rate
/// schedule (the Hugging Face `TrainingArguments` fields of the same names and defaults). A
/// [`GrpoConfig`] embeds one ([`GrpoConfig::optimizer`]); SFT and other non-GRPO training build
/// this directly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OptimizerConfig {
    /// Peak learning rate. Default 1e-6 (TRL's GRPO default).
    pub learning_rate: f64,
    /// Decoupled (AdamW) weight decay. HF default 0.0.
    pub weight_decay: f64,
    /// AdamW beta1. HF default 0.9.
    pub adam_beta1: f64,
    /// AdamW beta2. HF default 0.999.
    pub adam_beta2: f64,
    /// AdamW epsilon. HF default 1e-8.
    pub adam_epsilon: f64,
    /// Global gradient-norm clip (L2 over all parameters); `0` or negative disables it. HF
    /// default 1.0.
    pub max_grad_norm: f64,
    /// Learning-rate schedule. HF default `linear`.
    pub lr_scheduler_type: LrSchedulerType,
    /// Warm-up optimizer steps. Overrides `warmup_ratio` when non-zero, as in HF.
    pub warmup_steps: usize,
    /// Warm-up as a fraction of the total optimizer steps (used when `warmup_steps` is 0).
    pub warmup_ratio: f64,
}

impl Default for OptimizerConfig {
    fn default() -> Self {
        Self {
            learning_rate: 1e-6,
            weight_decay: 0.0,
            adam_beta1: 0.9,
            adam_beta2: 0.999,
            adam_epsilon: 1e-8,
            max_grad_norm: 1.0,
            lr_scheduler_type: LrSchedulerType::Linear,
            warmup_steps: 0,
            warmup_ratio: 0.0,
        }
    }
}

impl OptimizerConfig {
    /// Check every range once. Call at the configuration boundary.
    pub fn validate(&self) -> Result<()> {
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return Err(Error::config("learning_rate", format!("must be > 0, got {}", self.learning_rate)));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(Error::config(
                "weight_decay",
                format!("must be finite and >= 0, got {}", self.weight_decay),
            ));
        }
        for (field, b) in [("adam_beta1", self.adam_beta1), ("adam_beta2", self.adam_beta2)] {
            if !(0.0..1.0).contains(&b) {
                return Err(Error::config(field, format!("must be in [0, 1), got {b}")));
            }
        }
        if !(self.adam_epsilon.is_finite() && self.adam_epsilon > 0.0) {
            return Err(Error::config("adam_epsilon", format!("must be > 0, got {}", self.adam_epsilon)));
        }
        if self.max_grad_norm.is_nan() {
            return Err(Error::config("max_grad_norm", "must not be NaN"));
        }
        if !(0.0..=1.0).contains(&self.warmup_ratio) {
            return Err(Error::config(
                "warmup_ratio",
                format!("must be in [0, 1], got {}", self.warmup_ratio),
            ));
        }
        Ok(())
    }
}

impl GrpoConfig {
    /// The effective upper clip range: `epsilon_high`, or `epsilon` when unset.
    pub fn epsilon_high(&self) -> f64 {
        self.epsilon_high.unwrap_or(self.epsilon)
    }

    /// Check every range once. Call at the configuration boundary.
    pub fn validate(&self) -> Result<()> {
        fn finite_nonneg(field: &'static str, v: f64) -> Result<()> {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(Error::config(field, format!("must be finite and >= 0, got {v}")))
            }
        }
        if self.num_generations < 2 {
            return Err(Error::config("num_generations", "GRPO needs at least 2 completions per prompt"));
        }
        if !(self.epsilon.is_finite() && self.epsilon > 0.0 && self.epsilon < 1.0) {
            return Err(Error::config("epsilon", format!("must be in (0, 1), got {}", self.epsilon)));
        }
        if let Some(e) = self.epsilon_high {
            if !(e.is_finite() && e > 0.0) {
                return Err(Error::config("epsilon_high", format!("must be finite and > 0, got {e}")));
            }
        }
        if let Some(d) = self.delta {
            if !(d.is_finite() && d > 1.0 + self.epsilon_high()) {
                return Err(Error::config("delta", format!("must be > 1 + epsilon_high, got {d}")));
            }
        }
        finite_nonneg("beta", self.beta)?;
        if self.num_iterations == 0 {
            return Err(Error::config("num_iterations", "must be >= 1"));
        }
        if self.max_completion_length == 0 {
            return Err(Error::config("max_completion_length", "must be >= 1"));
        }
        if self.gradient_accumulation_steps == 0 {
            return Err(Error::config("gradient_accumulation_steps", "must be >= 1"));
        }
        self.optimizer.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_trl_defaults_and_valid() {
        let c = GrpoConfig::default();
        c.validate().unwrap();
        assert_eq!(c.epsilon, 0.2);
        assert_eq!(c.epsilon_high(), 0.2);
        assert_eq!(c.beta, 0.0);
        assert_eq!(c.loss_type, LossType::Dapo);
        assert_eq!(c.scale_rewards, ScaleRewards::Group);
    }

    #[test]
    fn deserializes_trl_spellings_and_rejects_unknown_fields() {
        let c: GrpoConfig = serde_json::from_str(
            r#"{"loss_type":"dr_grpo","scale_rewards":"none","importance_sampling_level":"sequence",
                "epsilon_high":0.28,"beta":0.04,"lr_scheduler_type":"cosine"}"#,
        )
        .unwrap();
        assert_eq!(c.loss_type, LossType::DrGrpo);
        assert_eq!(c.scale_rewards, ScaleRewards::None);
        assert_eq!(c.importance_sampling_level, ImportanceSamplingLevel::Sequence);
        assert_eq!(c.epsilon_high(), 0.28);
        assert_eq!(c.optimizer.lr_scheduler_type, LrSchedulerType::Cosine);
        assert!(serde_json::from_str::<GrpoConfig>(r#"{"epsilon_hi":0.3}"#).is_err());
        assert!(serde_json::from_str::<GrpoConfig>(r#"{"optimizer":{}}"#).is_err(), "written flat");
    }

    #[test]
    fn the_optimizer_fields_are_written_flat_in_their_old_order() {
        let c = GrpoConfig {
            optimizer: OptimizerConfig { learning_rate: 3e-5, ..Default::default() },
            ..Default::default()
        };
        // Written field by field (not through a sorted map), so the text shows the order.
        let text = serde_json::to_string(&c).unwrap();
        let at = |k: &str| text.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("{k} missing: {text}"));
        // The trainer's resolved config.toml is compared on resume: the same keys, flat, in order.
        let order = [
            "num_generations",
            "epsilon",
            "epsilon_high",
            "delta",
            "beta",
            "loss_type",
            "scale_rewards",
            "importance_sampling_level",
            "mask_truncated_completions",
            "num_iterations",
            "use_bias_correction_kl",
            "max_completion_length",
            "gradient_accumulation_steps",
            "learning_rate",
            "weight_decay",
            "adam_beta1",
            "adam_beta2",
            "adam_epsilon",
            "max_grad_norm",
            "lr_scheduler_type",
            "warmup_steps",
            "warmup_ratio",
        ];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v.as_object().unwrap().len(), order.len());
        assert_eq!(v["learning_rate"], 3e-5);
        assert_eq!(serde_json::from_value::<GrpoConfig>(v).unwrap(), c);
    }

    #[test]
    fn validate_rejects_out_of_range() {
        let bad = [
            GrpoConfig { epsilon: 1.5, ..Default::default() },
            GrpoConfig { num_generations: 1, ..Default::default() },
            GrpoConfig { beta: f64::NAN, ..Default::default() },
            GrpoConfig { delta: Some(1.1), ..Default::default() },
            GrpoConfig { gradient_accumulation_steps: 0, ..Default::default() },
        ];
        for c in bad {
            assert!(c.validate().is_err(), "{c:?}");
        }
    }
}
