//! One GRPO update over a generation batch: advantages, truncation masking, fixed old
//! log-probs, `num_iterations` optimizer steps, each over `gradient_accumulation_steps`
//! micro-batches, then step metrics.
//!
//! The policy stays outside: the caller passes a function that returns differentiable
//! per-token log-probs for a set of batch rows. The function is called once per micro-batch
//! per iteration, plus once over all rows (result detached) to fix the old log-probs when
//! `num_iterations > 1` and the batch carries none.

use candle_core::{Device, Tensor, Var};

use crate::advantage::{advantages_with_baselines, group_advantages};
use crate::config::{GrpoConfig, LossType};
use crate::error::{Error, Result};
use crate::loss::{entropy_metric, grpo_loss, mask_tokens, LossInputs, LossScale, LossStats};
use crate::masking::mask_truncated;
use crate::metrics::{rollout_stats, StepMetrics};
use crate::optim::{GradAccumulator, Optimizer};
use crate::staged::StagedBackward;

/// A scored generation batch. Row `i` of every field is completion `i`.
#[derive(Debug, Clone)]
pub struct RolloutBatch {
    /// Reward per completion.
    pub rewards: Vec<f64>,
    /// Group (prompt) id per completion; advantages are relative within a group.
    pub group_ids: Vec<usize>,
    /// Completion mask `[batch, seq]`: 1 for completion tokens, 0 for padding.
    pub mask: Tensor,
    /// Whether each completion hit the length limit without an end-of-sequence token.
    pub truncated: Vec<bool>,
    /// Log-probs under the sampling policy `[batch, seq]`. `None`: computed from the
    /// current policy before the first update (on-policy).
    pub old_logps: Option<Tensor>,
    /// Reference-policy log-probs `[batch, seq]`; required when `beta != 0`.
    pub ref_logps: Option<Tensor>,
    /// A fixed baseline per row, or `None` for a group-relative advantage: a row with a
    /// baseline gets `reward − baseline` ([`crate::advantages_with_baselines`]). MENTOR's
    /// `prefix` credit takes hinted rows' advantages against the failed unhinted group's mean,
    /// which a group-relative normalisation would undo. `None` here: every row group-relative.
    pub baselines: Option<Vec<Option<f64>>>,
}

/// What [`Updater::update`] asks of the log-prob function for a set of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Differentiable log-probs to train on (and entropies, if the caller logs them).
    Train,
    /// Only the entropies are read (for the metric): the rows carry no gradient, so the
    /// log-probs may come from a no-grad path. Asked for a micro-batch whose every row has a
    /// zero advantage in an update where that makes its loss and gradient exactly zero.
    Metrics,
}

/// What the log-prob function returns for a set of rows.
#[derive(Debug)]
pub struct PolicyOutput {
    /// Differentiable per-token log-probs of the sampled tokens, `[rows, seq]`.
    pub logps: Tensor,
    /// Optional per-token entropies `[rows, seq]` (metric only).
    pub entropies: Option<Tensor>,
    /// The rest of the backward, when the policy cut its graph into stages: `backward` of the
    /// loss reaches only the top of the graph, and this carries it down ([`StagedBackward`]).
    /// `None`: the loss's `backward` reaches every variable.
    pub rest: Option<Box<dyn StagedBackward>>,
}

/// Owns the config and the optimizer; runs GRPO updates.
#[derive(Debug)]
pub struct Updater {
    config: GrpoConfig,
    optimizer: Optimizer,
    /// The micro-batches' gradient sums, whose buffers carry over from update to update.
    grads: GradAccumulator,
}

impl Updater {
    /// An updater training `vars`, with the LR schedule spanning `total_updates` generation
    /// batches (each makes `num_iterations` optimizer steps).
    pub fn new(config: GrpoConfig, vars: Vec<Var>, total_updates: usize) -> Result<Self> {
        config.validate()?;
        let optimizer = Optimizer::new(vars, &config.optimizer, total_updates * config.num_iterations)?;
        let grads = GradAccumulator::new(optimizer.vars().to_vec());
        Ok(Self { config, optimizer, grads })
    }

    /// The configuration in use.
    pub fn config(&self) -> &GrpoConfig {
        &self.config
    }

    /// The optimizer (for its step count and next learning rate).
    pub fn optimizer(&self) -> &Optimizer {
        &self.optimizer
    }

    /// The optimizer, mutably (to restore a saved state when resuming).
    pub fn optimizer_mut(&mut self) -> &mut Optimizer {
        &mut self.optimizer
    }

    /// Run one update on `batch`. `logps_for(rows, pass)` must return the current policy's
    /// log-probs for those batch rows, in that order, with `seq` equal to the mask's
    /// (differentiable for [`Pass::Train`]; for [`Pass::Metrics`] only the entropies are read).
    ///
    /// Set-up (`Window::new`: checks, advantages, the rows that can carry a gradient, the
    /// mask, fixed old log-probs, micro-batches), then `num_iterations` optimizer steps over
    /// the micro-batches (`Updater::iterate`), then the step metrics.
    pub fn update<F, E>(&mut self, batch: &RolloutBatch, mut logps_for: F) -> Result<StepMetrics>
    where
        F: FnMut(&[usize], Pass) -> std::result::Result<PolicyOutput, E>,
        E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    {
        let t = batch.mask.dims2()?.1;
        let mut call = |rows: &[usize], pass: Pass| -> Result<PolicyOutput> {
            let out = logps_for(rows, pass).map_err(|e| Error::LogProbs(e.into()))?;
            if out.logps.dims() != [rows.len(), t] {
                return Err(Error::shape("logps", [rows.len(), t], out.logps.dims()));
            }
            Ok(out)
        };
        let window = Window::new(&self.config, batch, &mut call)?;
        let totals = self.iterate(batch, &window, &mut call)?;
        totals.metrics(&self.config, batch)
    }

    /// The optimizer steps of one update: `num_iterations` passes over the micro-batches, each
    /// accumulating their gradients into one optimizer step.
    fn iterate(
        &mut self,
        batch: &RolloutBatch,
        w: &Window,
        call: &mut impl FnMut(&[usize], Pass) -> Result<PolicyOutput>,
    ) -> Result<Totals> {
        let cfg = &self.config;
        let device = batch.mask.device().clone();
        let acc = &mut self.grads;
        acc.reserve()?;
        let mut totals = Totals::default();
        for _ in 0..cfg.num_iterations {
            let mut step_loss = 0.0;
            for all in &w.micro {
                let inert = w.inert && all.iter().all(|&i| !w.live[i]);
                let rows: Vec<usize> = if w.drop_rows || inert {
                    all.iter().copied().filter(|&i| w.live[i]).collect()
                } else {
                    all.clone()
                };
                let all_mask = w.mask.index_select(&index(all, &device)?, 0)?;
                let tokens = mask_tokens(&all_mask)?;
                if rows.is_empty() {
                    acc.add_zeros()?;
                    // Left out of a window that runs its other micro-batches: the entropy
                    // metric still covers these rows, from a pass without a gradient.
                    let entropy = if w.drop_rows {
                        None
                    } else {
                        let out = call(all, Pass::Metrics)?;
                        out.entropies
                            .as_ref()
                            .map(|e| entropy_metric(e, &all_mask, out.logps.dtype()))
                            .transpose()?
                    };
                    totals.stats.push(LossStats {
                        tokens,
                        kl: None,
                        entropy,
                        clip_ratio_low: 0.0,
                        clip_ratio_high: 0.0,
                        clip_ratio_region: 0.0,
                    });
                    continue;
                }
                let rows = rows.as_slice();
                let idx = index(rows, &device)?;
                let pick = |x: &Tensor| -> Result<Tensor> { Ok(x.index_select(&idx, 0)?) };
                let PolicyOutput { logps, entropies, rest } = call(rows, Pass::Train)?;
                let old_mb = w.old.as_ref().map(pick).transpose()?;
                let ref_mb = batch.ref_logps.as_ref().map(pick).transpose()?;
                let (mask_mb, adv_mb) = (pick(&w.mask)?, pick(&w.adv)?);
                let inputs = LossInputs {
                    logps: &logps,
                    old_logps: old_mb.as_ref(),
                    ref_logps: ref_mb.as_ref(),
                    mask: &mask_mb,
                    advantages: &adv_mb,
                    entropies: entropies.as_ref(),
                };
                let loss = grpo_loss(cfg, &inputs, w.scale)?;
                step_loss += loss.loss.to_dtype(candle_core::DType::F64)?.to_scalar::<f64>()?;
                totals.stats.push(LossStats { tokens, ..loss.stats });
                // The log-probs and entropies go before the backward: a staged rest frees
                // each layer's activations only once nothing above holds the graph.
                drop((logps, entropies));
                acc.backward_staged(loss.loss, rest)?;
            }
            let mut grads = acc.take();
            let report = self.optimizer.step(&mut grads)?;
            acc.recycle(grads);
            totals.loss_sum += step_loss;
            totals.norm_sum += report.grad_norm;
            totals.lr = report.learning_rate;
            if report.applied {
                totals.applied += 1;
            } else {
                totals.skipped += 1;
            }
        }
        Ok(totals)
    }
}

/// What one update works on, fixed before its first optimizer step.
struct Window {
    /// Advantage per row, `[batch]`.
    adv: Tensor,
    /// Whether each row can carry a gradient.
    live: Vec<bool>,
    /// Whether a zero-advantage row carries no gradient in this window (no KL term, ratio
    /// exactly 1).
    inert: bool,
    /// Whether the rows that cannot carry a gradient are left out of every pass (`dapo`, or a
    /// window where no row can).
    drop_rows: bool,
    /// The completion mask after truncation masking.
    mask: Tensor,
    /// Fixed old log-probs (`None`: on-policy, the current ones detached).
    old: Option<Tensor>,
    /// The micro-batches' rows.
    micro: Vec<Vec<usize>>,
    /// The window's loss divisors.
    scale: LossScale,
}

impl Window {
    /// Checks `batch` against `cfg` and prepares the update (calling `call` once over all rows
    /// when `num_iterations > 1` needs fixed old log-probs the batch does not carry).
    fn new(
        cfg: &GrpoConfig,
        batch: &RolloutBatch,
        call: &mut impl FnMut(&[usize], Pass) -> Result<PolicyOutput>,
    ) -> Result<Self> {
        let b = batch.mask.dims2()?.0;
        for (what, len) in [("rewards", batch.rewards.len()), ("group_ids", batch.group_ids.len())] {
            if len != b {
                return Err(Error::shape(what, b, len));
            }
        }
        if batch.truncated.len() != b {
            return Err(Error::shape("truncated", b, batch.truncated.len()));
        }
        if cfg.beta != 0.0 && batch.ref_logps.is_none() {
            return Err(Error::MissingInput {
                what: "ref_logps",
                why: "beta != 0 needs reference log-probs",
            });
        }
        let device = batch.mask.device().clone();
        let adv = match &batch.baselines {
            Some(baselines) => {
                advantages_with_baselines(&batch.rewards, &batch.group_ids, baselines, cfg.scale_rewards)?
            }
            None => group_advantages(&batch.rewards, &batch.group_ids, cfg.scale_rewards)?.advantages,
        };
        // Rows with a zero advantage carry no gradient when there is no KL term and the ratio is
        // exactly 1 (on-policy, one iteration, no behaviour log-probs): their per-token loss is
        // `-ratio * 0 = 0` whatever the log-probs are. When every row is such a row (a collapsed
        // vanilla step) the forward and backward passes are skipped for any loss type; the
        // optimizer still steps on zero gradients, so its moments decay exactly as if the passes
        // had run. With the `dapo` loss, whose normaliser is the whole window's token count, the
        // zero rows are also left out of the passes of a mixed batch (the loss and gradient are
        // unchanged). Either way the clip metrics are 0 (ratio 1), the token count covers every
        // row, and an entropy metric covers only the rows that were passed.
        // With the other losses a micro-batch made only of such rows (a group whose rewards are
        // all equal, when micro-batches are groups) adds exactly zero to the loss and the
        // gradient whatever its divisors, so its training pass is skipped too; its rows' entropy
        // comes from a `Pass::Metrics` call, so every metric equals the full computation's.
        let inert = cfg.beta == 0.0 && batch.old_logps.is_none() && cfg.num_iterations == 1;
        let live: Vec<bool> = adv.iter().map(|a| !inert || *a != 0.0).collect();
        let drop_rows = inert && (cfg.loss_type == LossType::Dapo || live.iter().all(|l| !l));
        let adv = Tensor::from_vec(adv, b, &device)?;
        let mask = if cfg.mask_truncated_completions {
            mask_truncated(&batch.mask, &batch.truncated)?
        } else {
            batch.mask.clone()
        };
        let all_rows: Vec<usize> = (0..b).collect();
        let old = match (&batch.old_logps, cfg.num_iterations) {
            (Some(o), _) => Some(o.detach()),
            (None, 1) => None,
            (None, _) => Some(call(&all_rows, Pass::Train)?.logps.detach()),
        };
        let micro = micro_batches(b, cfg.gradient_accumulation_steps);
        let scale = LossScale::new(micro.len().max(1), mask_tokens(&mask)?)?;
        Ok(Self { adv, live, inert, drop_rows, mask, old, micro, scale })
    }
}

/// What an update's optimizer steps add up to.
#[derive(Default)]
struct Totals {
    /// One entry per micro-batch pass.
    stats: Vec<LossStats>,
    loss_sum: f64,
    norm_sum: f64,
    lr: f64,
    applied: usize,
    skipped: usize,
}

impl Totals {
    /// The step metrics (per-iteration means, as TRL logs them).
    fn metrics(&self, cfg: &GrpoConfig, batch: &RolloutBatch) -> Result<StepMetrics> {
        let stats = &self.stats;
        let lengths = row_lengths(&batch.mask)?;
        let iters = cfg.num_iterations as f64;
        let n = stats.len().max(1) as f64;
        let mean = |f: &dyn Fn(&LossStats) -> f64| stats.iter().map(f).sum::<f64>() / n;
        let mean_opt = |f: &dyn Fn(&LossStats) -> Option<f64>| -> Option<f64> {
            let v: Vec<f64> = stats.iter().filter_map(f).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        Ok(StepMetrics {
            rollout: rollout_stats(&batch.rewards, &batch.group_ids, &lengths, &batch.truncated)?,
            loss: self.loss_sum / iters,
            clip_ratio_low: mean(&|s| s.clip_ratio_low),
            clip_ratio_high: mean(&|s| s.clip_ratio_high),
            clip_ratio_region: mean(&|s| s.clip_ratio_region),
            kl: mean_opt(&|s| s.kl),
            entropy: mean_opt(&|s| s.entropy),
            grad_norm: self.norm_sum / iters,
            learning_rate: self.lr,
            num_tokens: stats.iter().map(|s| s.tokens).sum::<f64>() / iters,
            optimizer_steps: self.applied,
            skipped_steps: self.skipped,
        })
    }
}

/// Split `rows` rows into at most `k` contiguous micro-batches whose sizes differ by at most
/// one (fewer when there are fewer rows than `k`).
pub fn micro_batches(rows: usize, k: usize) -> Vec<Vec<usize>> {
    let k = k.max(1).min(rows.max(1));
    let (base, extra) = (rows / k, rows % k);
    let mut out = Vec::with_capacity(k);
    let mut start = 0;
    for i in 0..k {
        let len = base + usize::from(i < extra);
        if len > 0 {
            out.push((start..start + len).collect());
        }
        start += len;
    }
    out
}

fn index(rows: &[usize], device: &Device) -> Result<Tensor> {
    let idx: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
    Ok(Tensor::from_vec(idx, rows.len(), device)?)
}

/// Completion length per row: the row sums of the mask.
fn row_lengths(mask: &Tensor) -> Result<Vec<usize>> {
    let sums = mask.to_dtype(candle_core::DType::F64)?.sum(1)?.to_vec1::<f64>()?;
    Ok(sums.into_iter().map(|s| s.round().max(0.0) as usize).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_batches_are_contiguous_and_balanced() {
        assert_eq!(micro_batches(5, 2), vec![vec![0, 1, 2], vec![3, 4]]);
        assert_eq!(micro_batches(2, 4), vec![vec![0], vec![1]]);
        assert_eq!(micro_batches(4, 1), vec![vec![0, 1, 2, 3]]);
        assert!(micro_batches(0, 3).is_empty());
    }
}
