//! One GRPO update from the rows the strategy plug-in assembled: token ids, masks and
//! advantages into a [`RolloutBatch`], log-probs from the policy's differentiable path.

use candle_core::backprop::GradStore;
use candle_core::{Device, Tensor};
use mentor_grpo::{Pass, PolicyOutput, RolloutBatch, StagedBackward, StepMetrics, Updater};
use mentor_integration::TrainRow;
use mentor_policy::{Entropy, Kernels, LogProbOptions, Policy};

use crate::error::Result;

/// Runs one update of `updater` on `rows` (a no-op returning `None` when there are none).
/// `reference` gives KL reference log-probs when the config's `beta` is not zero.
pub fn grpo_step(
    policy: &Policy,
    reference: Option<&Policy>,
    updater: &mut Updater,
    rows: &[TrainRow],
    temperature: f64,
) -> Result<Option<StepMetrics>> {
    if rows.is_empty() {
        return Ok(None);
    }
    let prompts: Vec<Vec<u32>> = rows
        .iter()
        .map(|r| {
            let mut ids = policy.encode_chat(&r.prompt)?;
            ids.extend_from_slice(&r.context_ids);
            Ok(ids)
        })
        .collect::<Result<_>>()?;
    let completions: Vec<Vec<u32>> = rows.iter().map(|r| r.completion_ids.clone()).collect();
    let t = completions.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let b = rows.len();
    let dev = Device::Cpu;
    let pad_rows = |vals: Vec<Vec<f32>>| -> Result<Tensor> {
        let flat: Vec<f32> = vals
            .into_iter()
            .flat_map(|mut v| {
                v.resize(t, 0.0);
                v
            })
            .collect();
        Ok(Tensor::from_vec(flat, (b, t), &dev)?)
    };
    let mask = pad_rows(completions.iter().map(|c| vec![1.0; c.len()]).collect())?;
    let no_grad = LogProbOptions {
        temperature,
        entropy: Entropy::Off,
        kernels: Kernels::Fused,
        share_prompts: true,
        staged: false,
    };
    let widen = |x: Tensor| -> Result<Tensor> {
        let w = x.dim(1)?;
        Ok(if w < t { x.pad_with_zeros(1, 0, t - w)? } else { x })
    };
    // Importance ratios only where a row carries behaviour log-probs (`stripped_is`); other
    // rows use the current policy's (ratio 1 at the first iteration). The behaviour log-probs
    // are those of the distribution actually sampled from: with top-p / top-k the truncated,
    // renormalised softmax, while the policy's are of the full tempered softmax, so such a
    // ratio is the true pi / mu (at most 1 for the same prompt before any update).
    //
    // The pass runs over the update's micro-batches, not the whole batch at once: the no-grad
    // kernels detach norms, RoPE and softmax but the projections still record their inputs
    // (the weights are variables), so one pass over every row held the whole batch's
    // activations — 20 GB on the MBPP preset (32 rows of up to 443 + 256 tokens) against
    // 10 GB for a training micro-batch, the peak the memory estimate models.
    let old_logps = if rows.iter().any(|r| r.behaviour_logprobs.is_some()) {
        let mut current: Vec<Vec<f32>> = Vec::with_capacity(b);
        for chunk in mentor_grpo::micro_batches(b, updater.config().gradient_accumulation_steps) {
            let p: Vec<Vec<u32>> = chunk.iter().map(|&i| prompts[i].clone()).collect();
            let c: Vec<Vec<u32>> = chunk.iter().map(|&i| completions[i].clone()).collect();
            current.extend(widen(policy.logprobs(&p, &c, &no_grad)?.logprobs)?.to_vec2::<f32>()?);
        }
        let merged = rows
            .iter()
            .zip(current)
            .map(|(r, cur)| match &r.behaviour_logprobs {
                Some(b) => b.clone(),
                None => cur,
            })
            .collect();
        Some(pad_rows(merged)?)
    } else {
        None
    };
    let ref_logps = match reference {
        Some(r) if updater.config().beta != 0.0 => {
            Some(widen(r.logprobs(&prompts, &completions, &no_grad)?.logprobs)?)
        }
        _ => None,
    };
    let batch = RolloutBatch {
        rewards: rows.iter().map(|r| r.reward).collect(),
        group_ids: rows.iter().map(|r| r.group).collect(),
        mask,
        truncated: rows.iter().map(|r| r.truncated).collect(),
        old_logps,
        ref_logps,
        baselines: Some(rows.iter().map(|r| r.baseline).collect()),
    };
    // Token entropy is logged (TRL's `entropy`): one pass over the logits, outside the graph.
    // The graph is cut after every layer (`Staged`): the update holds one layer's gradients
    // at a time beside the micro-batches' running sums, and frees each layer's activations
    // as its backward runs.
    let opts = LogProbOptions {
        temperature,
        entropy: Entropy::Metric,
        kernels: Kernels::Differentiable,
        share_prompts: true,
        staged: true,
    };
    // Rows that carry no gradient (a group whose rewards are all equal) only need the entropy:
    // the no-grad kernels, no graph.
    let metrics_only = LogProbOptions { entropy: Entropy::Metric, ..no_grad.clone() };
    let metrics = updater.update(
        &batch,
        |idx: &[usize], pass: Pass| -> std::result::Result<PolicyOutput, crate::Error> {
            let p: Vec<Vec<u32>> = idx.iter().map(|&i| prompts[i].clone()).collect();
            let c: Vec<Vec<u32>> = idx.iter().map(|&i| completions[i].clone()).collect();
            let out = policy.logprobs(&p, &c, if pass == Pass::Train { &opts } else { &metrics_only })?;
            let entropies = out.entropy.map(widen).transpose()?;
            let rest = out.stages.map(|s| Box::new(Staged(s)) as Box<dyn StagedBackward>);
            Ok(PolicyOutput { logps: widen(out.logprobs)?, entropies, rest })
        },
    )?;
    Ok(Some(metrics))
}

/// A policy pass's layer boundaries as the rest of the update's backward.
#[derive(Debug)]
struct Staged(mentor_policy::Stages);

impl StagedBackward for Staged {
    fn finish(
        self: Box<Self>,
        top: GradStore,
        add: &mut dyn FnMut(&GradStore) -> mentor_grpo::Result<()>,
    ) -> mentor_grpo::Result<()> {
        self.0.backward(top, add)
    }
}
