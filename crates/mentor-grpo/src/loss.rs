//! The GRPO loss: clipped importance-weighted surrogate, k3 KL to a reference policy, and
//! TRL's four normalisations. A line-by-line port of TRL's `GRPOTrainer._compute_loss`.
//!
//! Inputs are per-token log-probs `[batch, seq]` of the sampled completion tokens, however the
//! policy computed them. Only `logps` needs to carry a gradient; the result's `loss` is a
//! differentiable scalar whose backward reaches whatever produced `logps`.
//!
//! What it deliberately does not do: run the policy, compute advantages, or step an optimizer.
//!
//! Per token (row `i`, position `t`, `A_i` the advantage):
//!
//! ```text
//! r      = exp(logp - old_logp)              (token level)
//!        = exp(mean_t (logp - old_logp))     (sequence level, GSPO; one ratio per row)
//! loss_t = -min(r * A_i, clamp(r, 1 - eps, 1 + eps_high) * A_i)
//!          + beta * (exp(ref - logp) - (ref - logp) - 1) [* r when use_bias_correction_kl]
//! ```
//!
//! With no old log-probs (`num_iterations = 1`) the old log-probs are `logp.detach()`: the ratio
//! is exactly 1 but its derivative is not zero, which is how TRL gets the policy gradient.

use candle_core::{DType, Tensor, D};

use crate::config::{GrpoConfig, ImportanceSamplingLevel, LossType};
use crate::error::{Error, Result};

/// Per-token inputs of one micro-batch. All `[batch, seq]` tensors share shape and device.
#[derive(Debug, Clone, Copy)]
pub struct LossInputs<'a> {
    /// Current policy log-probs of the sampled tokens, `[batch, seq]`, f32 or f64,
    /// differentiable. Padded positions may hold any finite value.
    pub logps: &'a Tensor,
    /// Log-probs under the policy that sampled the batch, `[batch, seq]`. `None` means
    /// on-policy (`num_iterations = 1`): `logps.detach()` is used.
    pub old_logps: Option<&'a Tensor>,
    /// Reference-policy log-probs, `[batch, seq]`. Required when `beta != 0`, ignored otherwise.
    pub ref_logps: Option<&'a Tensor>,
    /// Completion mask, `[batch, seq]`, 1 for real completion tokens and 0 for padding (and
    /// for truncated completions when `mask_truncated_completions` is on). Any float/int dtype.
    pub mask: &'a Tensor,
    /// Advantage per row, `[batch]` (or `[batch, 1]`).
    pub advantages: &'a Tensor,
    /// Optional per-token entropies `[batch, seq]`, only for the entropy metric.
    pub entropies: Option<&'a Tensor>,
}

/// The divisors that depend on the accumulation window, not on the micro-batch itself.
///
/// TRL divides `grpo`, `bnpo` and `dr_grpo` micro-batch losses by the number of accumulation
/// steps, and the `dapo` loss by the completion-token count of the whole window
/// (`num_items_in_batch`), so that summing the micro-batch gradients gives the window's
/// gradient.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossScale {
    accumulation_steps: usize,
    window_tokens: f64,
}

impl LossScale {
    /// `accumulation_steps` micro-batches per optimizer step, `window_tokens` completion tokens
    /// (mask sum) over all of them. `window_tokens` is clamped to at least 1 so that an
    /// all-masked window yields loss 0, not NaN (TRL would divide by zero).
    pub fn new(accumulation_steps: usize, window_tokens: f64) -> Result<Self> {
        if accumulation_steps == 0 {
            return Err(Error::config("gradient_accumulation_steps", "must be >= 1"));
        }
        if !window_tokens.is_finite() || window_tokens < 0.0 {
            return Err(Error::shape("window_tokens", "finite >= 0", window_tokens));
        }
        Ok(Self { accumulation_steps, window_tokens: window_tokens.max(1.0) })
    }

    /// One micro-batch that is its own accumulation window.
    pub fn single(mask: &Tensor) -> Result<Self> {
        Self::new(1, mask_tokens(mask)?)
    }

    /// Micro-batches per optimizer step.
    pub fn accumulation_steps(&self) -> usize {
        self.accumulation_steps
    }

    /// Completion tokens in the window (at least 1).
    pub fn window_tokens(&self) -> f64 {
        self.window_tokens
    }
}

/// Number of completion tokens in a mask (its sum), as f64.
pub(crate) fn mask_tokens(mask: &Tensor) -> Result<f64> {
    Ok(mask.to_dtype(DType::F64)?.sum_all()?.to_scalar::<f64>()?)
}

/// Metrics of one micro-batch, computed as TRL logs them (masked means over real tokens).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LossStats {
    /// Completion tokens in the micro-batch.
    pub tokens: f64,
    /// Mean k3 KL (bias-corrected when configured) over real tokens; `None` when `beta == 0`.
    pub kl: Option<f64>,
    /// Mean entropy over real tokens, when entropies were given.
    pub entropy: Option<f64>,
    /// Fraction of tokens with ratio `< 1 - epsilon` and negative advantage.
    pub clip_ratio_low: f64,
    /// Fraction of tokens with ratio `> 1 + epsilon_high` and positive advantage.
    pub clip_ratio_high: f64,
    /// Fraction of tokens clipped either way.
    pub clip_ratio_region: f64,
}

/// A differentiable scalar loss plus its metrics.
#[derive(Debug, Clone)]
pub struct LossOutput {
    /// Scalar (rank-0) loss in the dtype of `logps`, differentiable w.r.t. `logps`.
    pub loss: Tensor,
    /// Metrics of this micro-batch.
    pub stats: LossStats,
}

/// Compute the GRPO loss of one micro-batch (TRL `_compute_loss`).
///
/// `config` should have passed [`GrpoConfig::validate`]. Errors on shape mismatches, or when
/// `beta != 0` and no reference log-probs are given.
pub fn grpo_loss(config: &GrpoConfig, inputs: &LossInputs<'_>, scale: LossScale) -> Result<LossOutput> {
    let logps = inputs.logps;
    let dtype = logps.dtype();
    let (b, t) = logps.dims2()?;
    let same = |what: &'static str, x: &Tensor| -> Result<Tensor> {
        if x.dims() != [b, t] {
            return Err(Error::shape(what, [b, t], x.dims()));
        }
        Ok(x.to_dtype(dtype)?)
    };
    let mask = same("mask", inputs.mask)?.detach();
    let old = match inputs.old_logps {
        Some(o) => same("old_logps", o)?.detach(),
        None => logps.detach(),
    };
    let adv = match inputs.advantages.dims() {
        [n] if *n == b => inputs.advantages.reshape((b, 1))?,
        [n, 1] if *n == b => inputs.advantages.clone(),
        other => return Err(Error::shape("advantages", [b], other)),
    }
    .to_dtype(dtype)?
    .detach();

    let log_ratio = (logps - &old)?;
    let log_iw = match config.importance_sampling_level {
        ImportanceSamplingLevel::Token => log_ratio,
        ImportanceSamplingLevel::Sequence => {
            let len = mask.sum_keepdim(D::Minus1)?.maximum(1.0)?;
            (&log_ratio * &mask)?.sum_keepdim(D::Minus1)?.div(&len)?
        }
    };
    let coef_1 = log_iw.exp()?;

    let kl = if config.beta != 0.0 {
        let reference = inputs.ref_logps.ok_or(Error::MissingInput {
            what: "ref_logps",
            why: "beta != 0 needs reference-policy log-probs for the KL term",
        })?;
        let diff = (same("ref_logps", reference)?.detach() - logps)?;
        let k3 = ((diff.exp()? - &diff)? - 1.0)?;
        Some(if config.use_bias_correction_kl { k3.broadcast_mul(&coef_1)? } else { k3 })
    } else {
        None
    };

    let lo = 1.0 - config.epsilon;
    let hi = 1.0 + config.epsilon_high();
    let coef_2 = clamp_inclusive(&coef_1, Some(lo), Some(hi))?;
    let coef_1 = match config.delta {
        Some(delta) => clamp_inclusive(&coef_1, None, Some(delta))?,
        None => coef_1,
    };
    let surrogate_1 = coef_1.broadcast_mul(&adv)?;
    let surrogate_2 = coef_2.broadcast_mul(&adv)?;
    let mut per_token = surrogate_1.minimum(&surrogate_2)?.neg()?;
    if let Some(kl) = &kl {
        per_token = per_token.broadcast_add(&(kl * config.beta)?)?;
    }
    let masked = per_token.broadcast_mul(&mask)?;

    let steps = scale.accumulation_steps as f64;
    let loss = match config.loss_type {
        LossType::Grpo => {
            let len = mask.sum(D::Minus1)?.maximum(1.0)?;
            ((masked.sum(D::Minus1)?.div(&len)?.mean_all()?) / steps)?
        }
        LossType::Bnpo => {
            let tokens = mask.sum_all()?.maximum(1.0)?;
            (masked.sum_all()?.div(&tokens)? / steps)?
        }
        LossType::DrGrpo => (masked.sum_all()? / (b as f64 * config.max_completion_length as f64 * steps))?,
        LossType::Dapo => (masked.sum_all()? / scale.window_tokens)?,
    };

    let stats = stats(config, &coef_1.detach(), &adv, &mask, kl.as_ref(), inputs.entropies)?;
    Ok(LossOutput { loss, stats })
}

/// `torch.clamp` with PyTorch's gradient: 1 where `lo <= x <= hi` (inclusive), 0 outside.
/// (candle's `clamp` halves the gradient exactly on a bound.)
fn clamp_inclusive(x: &Tensor, lo: Option<f64>, hi: Option<f64>) -> Result<Tensor> {
    let mut y = x.clone();
    if let Some(hi) = hi {
        let bound = x.ones_like()?.affine(0.0, hi)?;
        y = x.gt(hi)?.where_cond(&bound, &y)?;
    }
    if let Some(lo) = lo {
        let bound = x.ones_like()?.affine(0.0, lo)?;
        y = x.lt(lo)?.where_cond(&bound, &y)?;
    }
    Ok(y)
}

/// TRL's `masked_batch_mean`: a plain mean for per-row tensors `[B, 1]`, else the mean over
/// real tokens.
fn masked_batch_mean(x: &Tensor, mask: &Tensor) -> Result<f64> {
    let v = if x.dim(D::Minus1)? == 1 {
        x.mean_all()?
    } else {
        x.broadcast_mul(mask)?.sum_all()?.div(&mask.sum_all()?.maximum(1.0)?)?
    };
    Ok(v.to_dtype(DType::F64)?.to_scalar::<f64>()?)
}

/// The entropy metric of one micro-batch: the mean of `entropies` over its real tokens, in
/// `dtype` (that of the log-probs), as [`grpo_loss`] logs it.
pub(crate) fn entropy_metric(entropies: &Tensor, mask: &Tensor, dtype: DType) -> Result<f64> {
    if entropies.dims() != mask.dims() {
        return Err(Error::shape("entropies", mask.dims(), entropies.dims()));
    }
    masked_batch_mean(&entropies.to_dtype(dtype)?.detach(), &mask.to_dtype(dtype)?)
}

fn stats(
    config: &GrpoConfig,
    coef_1: &Tensor,
    adv: &Tensor,
    mask: &Tensor,
    kl: Option<&Tensor>,
    entropies: Option<&Tensor>,
) -> Result<LossStats> {
    let dtype = coef_1.dtype();
    let flag = |t: Tensor| -> Result<Tensor> { Ok(t.to_dtype(dtype)?) };
    let neg_adv = flag(adv.lt(0.0)?)?;
    let pos_adv = flag(adv.gt(0.0)?)?;
    let low = flag(coef_1.lt(1.0 - config.epsilon)?)?.broadcast_mul(&neg_adv)?;
    let high = flag(coef_1.gt(1.0 + config.epsilon_high())?)?.broadcast_mul(&pos_adv)?;
    let region = (&low + &high)?; // disjoint: low needs A < 0, high needs A > 0
    let entropy = match entropies {
        Some(e) => Some(entropy_metric(e, mask, dtype)?),
        None => None,
    };
    Ok(LossStats {
        tokens: mask_tokens(mask)?,
        kl: kl.map(|k| masked_batch_mean(&k.detach(), mask)).transpose()?,
        entropy,
        clip_ratio_low: masked_batch_mean(&low, mask)?,
        clip_ratio_high: masked_batch_mean(&high, mask)?,
        clip_ratio_region: masked_batch_mean(&region, mask)?,
    })
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Var};

    use super::*;

    fn t(v: &[f64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), (1, v.len()), &Device::Cpu).unwrap()
    }

    /// Loss and gradient for a one-row batch.
    fn one_row(
        config: &GrpoConfig,
        logp: &[f64],
        old: Option<&[f64]>,
        reference: &[f64],
        adv: f64,
    ) -> (f64, Vec<f64>) {
        let var = Var::from_tensor(&t(logp)).unwrap();
        let old = old.map(t);
        let reference = t(reference);
        let mask = t(&vec![1.0; logp.len()]);
        let adv = Tensor::new(&[adv], &Device::Cpu).unwrap();
        let inputs = LossInputs {
            logps: var.as_tensor(),
            old_logps: old.as_ref(),
            ref_logps: Some(&reference),
            mask: &mask,
            advantages: &adv,
            entropies: None,
        };
        let out = grpo_loss(config, &inputs, LossScale::single(&mask).unwrap()).unwrap();
        let g = out.loss.backward().unwrap().get(var.as_tensor()).unwrap().to_vec2::<f64>().unwrap();
        (out.loss.to_scalar::<f64>().unwrap(), g[0].clone())
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    #[test]
    fn gspo_uses_one_ratio_per_sequence() {
        // log-ratios 0.2 and -0.1: sequence ratio exp(0.05), inside the trust region; A = 1.
        let cfg = GrpoConfig {
            importance_sampling_level: ImportanceSamplingLevel::Sequence,
            loss_type: LossType::Grpo,
            ..Default::default()
        };
        let (loss, g) = one_row(&cfg, &[-1.0, -2.0], Some(&[-1.2, -1.9]), &[0.0, 0.0], 1.0);
        let r = 0.05f64.exp();
        close(loss, -r);
        close(g[0], -r / 2.0);
        close(g[1], -r / 2.0);
    }

    #[test]
    fn delta_caps_the_unclipped_ratio_for_negative_advantages() {
        // r = 3, A = -1: without delta the loss is -min(-3, -1.28) = 3 with gradient -A * r = 3;
        // delta = 2 caps r at 2 (loss 2) and stops the gradient.
        let base = GrpoConfig { loss_type: LossType::Bnpo, epsilon_high: Some(0.28), ..Default::default() };
        let (loss, g) = one_row(&base, &[3f64.ln() - 1.0], Some(&[-1.0]), &[0.0], -1.0);
        close(loss, 3.0);
        close(g[0], 3.0);
        let capped = GrpoConfig { delta: Some(2.0), ..base };
        let (loss, g) = one_row(&capped, &[3f64.ln() - 1.0], Some(&[-1.0]), &[0.0], -1.0);
        close(loss, 2.0);
        close(g[0], 0.0);
    }

    #[test]
    fn k3_kl_value_and_gradient_by_hand() {
        // A = 0 isolates the KL term: kl = exp(ref - logp) - (ref - logp) - 1, d/dlogp = 1 - exp(ref - logp).
        let cfg = GrpoConfig { beta: 1.0, loss_type: LossType::Bnpo, ..Default::default() };
        let (loss, g) = one_row(&cfg, &[-1.0], None, &[-2.0], 0.0);
        let e = (-1.0f64).exp();
        close(loss, e);
        close(g[0], 1.0 - e);
    }

    #[test]
    fn entropy_metric_is_the_mean_over_real_tokens() {
        let x = Tensor::new(&[[-1.0f64, -1.0, -1.0], [-1.0, -1.0, -1.0]], &Device::Cpu).unwrap();
        let mask = Tensor::new(&[[1.0f64, 1.0, 0.0], [1.0, 0.0, 0.0]], &Device::Cpu).unwrap();
        let ent = Tensor::new(&[[1.0f64, 2.0, 100.0], [3.0, 100.0, 100.0]], &Device::Cpu).unwrap();
        let adv = Tensor::new(&[1.0f64, -1.0], &Device::Cpu).unwrap();
        let inputs = LossInputs {
            logps: &x,
            old_logps: None,
            ref_logps: None,
            mask: &mask,
            advantages: &adv,
            entropies: Some(&ent),
        };
        let out = grpo_loss(&GrpoConfig::default(), &inputs, LossScale::single(&mask).unwrap()).unwrap();
        close(out.stats.entropy.unwrap(), 2.0);
        close(out.stats.tokens, 3.0);
        assert_eq!(out.stats.kl, None);
    }

    #[test]
    fn errors_instead_of_panicking_on_bad_inputs() {
        let cfg = GrpoConfig { beta: 0.1, ..Default::default() };
        let x = t(&[-1.0, -1.0]);
        let mask = t(&[1.0, 1.0]);
        let adv = Tensor::new(&[1.0f64], &Device::Cpu).unwrap();
        let inputs = LossInputs {
            logps: &x,
            old_logps: None,
            ref_logps: None,
            mask: &mask,
            advantages: &adv,
            entropies: None,
        };
        let scale = LossScale::single(&mask).unwrap();
        assert!(matches!(grpo_loss(&cfg, &inputs, scale), Err(Error::MissingInput { .. })));
        let short = t(&[1.0]);
        let inputs = LossInputs { mask: &short, ref_logps: Some(&x), ..inputs };
        assert!(matches!(grpo_loss(&cfg, &inputs, scale), Err(Error::ShapeMismatch { what: "mask", .. })));
        assert!(LossScale::new(0, 1.0).is_err());
    }
}
