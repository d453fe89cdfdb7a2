//! Differentiable per-token log-probabilities (and entropy) of completions under prompts.
//!
//! Layout: prompts are left-padded to the longest prompt `P`, completions right-padded to the
//! longest completion `C`, so completion token `j` of every row sits in column `P + j` and is
//! predicted by the logits of column `P + j - 1`. Logits are computed only for those `C`
//! columns, which keeps the `[B, C, vocab]` tensor as small as it can be.
//!
//! With [`LogProbOptions::share_prompts`] (the default) rows with the same prompt share its
//! computation: the `G` distinct prompts run as `G` left-padded rows, recording each layer's
//! keys and values; then the `B` rows run only their completion columns, attending to their
//! prompt's keys and values (selected per row, in the graph) before their own. The logits of
//! the last prompt column (which predict the first completion token) come from the prompt
//! pass. In a GRPO step of `G` prompts and `B = G x group` rows this removes the prompt
//! columns of all but one row per group from the forward and the backward. The completion
//! columns are packed too: the norms, linear layers, MLP and LM head run only on each row's
//! real columns (attention on the padded layout), so completions shorter than the longest
//! cost no padding columns.
//!
//! With [`LogProbOptions::staged`] the graph is cut after every layer ([`Stages`]): a
//! `backward` of a loss over the log-probs then reaches only the final norm and the LM head,
//! and [`TokenLogProbs::stages`] carries it down the layers, one at a time, so that a layer's
//! activations are freed as soon as its gradients are taken.

use candle_core::{Tensor, D};

use crate::batch::{attention_mask, distinct_rows, left_pad, positions};
use crate::error::{Error, Result};
use crate::head;
use crate::model::{Attend, Kernels, SharedPrefix};
use crate::packing::Packing;
use crate::policy::Policy;
use crate::stages::Stages;
use mentor_kernels::ops;

/// Options of [`Policy::logprobs`].
#[derive(Debug, Clone, PartialEq)]
pub struct LogProbOptions {
    /// Logits are divided by this before the softmax (match the sampling temperature; 1 = raw).
    pub temperature: f64,
    /// Whether to return the per-token entropy of the (tempered) distribution, and how.
    pub entropy: Entropy,
    /// [`Kernels::Differentiable`] to train on the result; [`Kernels::Fused`] for no-grad
    /// reference log-probs (faster, and no gradient flows).
    pub kernels: Kernels,
    /// Rows whose prompts are identical (a GRPO group: one prompt, several completions) run
    /// their prompt through the model once: its keys and values are computed for one row and
    /// attended by every row of the group, and its gradient gathers theirs. Results equal the
    /// unshared computation up to float rounding; off computes every row in full.
    pub share_prompts: bool,
    /// Cut the graph after every layer (with [`Kernels::Differentiable`]; ignored otherwise):
    /// the result's [`TokenLogProbs::stages`] is then `Some`, and a `backward` of a loss over
    /// the log-probs reaches only the variables above the last layer until
    /// [`Stages::backward`] carries it down. The same gradients, in parts: a weight used both
    /// above and below a cut (a tied embedding: the LM head and the input embedding) gets one
    /// part from each stage. A lower memory peak: one layer's gradients at a time, and each
    /// layer's activations freed once its backward has run.
    pub staged: bool,
}

impl Default for LogProbOptions {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            entropy: Entropy::Off,
            kernels: Kernels::Differentiable,
            share_prompts: true,
            staged: false,
        }
    }
}

/// The per-token entropy [`Policy::logprobs`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Entropy {
    /// None.
    #[default]
    Off,
    /// As a metric, outside the graph (no gradient flows through it). On CPU f32/f64 one more
    /// pass over the logits (no `[B, C, vocab]` tensor) and the fused log-prob kernel stays in
    /// use; elsewhere it is computed from the detached log-softmax of the general path.
    Metric,
    /// Differentiable (for an entropy term in a loss): the log-softmax path, which holds the
    /// `[B, C, vocab]` log-prob tensor.
    Differentiable,
}

/// Per-token results, all `[B, C]` in the model dtype, `C` = longest completion.
#[derive(Debug, Clone)]
pub struct TokenLogProbs {
    /// `log p(completion[b][j] | prompt[b], completion[b][..j])`; 0 at padding.
    pub logprobs: Tensor,
    /// Entropy of the next-token distribution at each completion position; 0 at padding.
    pub entropy: Option<Tensor>,
    /// 1 for real completion tokens, 0 for padding.
    pub mask: Tensor,
    /// The layer boundaries of a [`LogProbOptions::staged`] pass: its backward below the
    /// last layer (`None` when not staged, or not differentiable).
    pub stages: Option<Stages>,
}

impl Policy {
    /// Log-probs of `completions[b]` given `prompts[b]` (token ids). Every prompt must be
    /// non-empty; empty completions give all-masked rows. Differentiable with respect to
    /// every weight with [`Kernels::Differentiable`].
    pub fn logprobs(
        &self,
        prompts: &[Vec<u32>],
        completions: &[Vec<u32>],
        opts: &LogProbOptions,
    ) -> Result<TokenLogProbs> {
        // On the thread pool: its kernels split their work without a hand-over per product.
        mentor_kernels::on_pool(|| self.logprobs_here(prompts, completions, opts))
    }

    /// [`Policy::logprobs`] on the calling thread.
    fn logprobs_here(
        &self,
        prompts: &[Vec<u32>],
        completions: &[Vec<u32>],
        opts: &LogProbOptions,
    ) -> Result<TokenLogProbs> {
        let model = self.model_for(opts.kernels);
        let vocab = model.config().vocab_size;
        if prompts.len() != completions.len() || prompts.is_empty() {
            return Err(Error::InvalidRequest(format!(
                "{} prompts and {} completions (need the same, non-zero number)",
                prompts.len(),
                completions.len()
            )));
        }
        if !(opts.temperature > 0.0 && opts.temperature.is_finite()) {
            return Err(Error::InvalidRequest(format!("temperature {} must be > 0", opts.temperature)));
        }
        for (i, (p, c)) in prompts.iter().zip(completions).enumerate() {
            if p.is_empty() {
                return Err(Error::InvalidRequest(format!("prompt {i} is empty")));
            }
            if p.iter().chain(c).any(|&id| id as usize >= vocab) {
                return Err(Error::InvalidRequest(format!("row {i} has an id >= vocab {vocab}")));
            }
        }
        let (b, dev, dtype) = (prompts.len(), model.device().clone(), model.dtype());
        let p_len = prompts.iter().map(Vec::len).max().unwrap_or(0);
        let c_len = completions.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let pad = self.tokenizer().pad_id();
        let mut targets = Vec::with_capacity(b * c_len);
        let mut mask = Vec::with_capacity(b * c_len);
        for c in completions {
            targets.extend_from_slice(c);
            targets.extend(std::iter::repeat_n(0u32, c_len - c.len()));
            mask.extend((0..c_len).map(|j| if j < c.len() { 1f32 } else { 0f32 }));
        }
        let (distinct, row_prompt) = if opts.share_prompts {
            distinct_rows(prompts.iter().map(Vec::as_slice))
        } else {
            (Vec::new(), Vec::new())
        };
        // Packed (shared prompts): hidden states `[1, L, hidden]` of the real completion
        // columns' predictions, the targets in that order and each padded position's index
        // among them; else `[B, C, hidden]`.
        let mut stages = (opts.staged && opts.kernels == Kernels::Differentiable).then(Stages::default);
        let fast = model.fast(opts.kernels);
        let (hidden, packed) = if opts.share_prompts && distinct.len() < b {
            let (hidden, targets, unpack) = self.shared_prompt_hidden(
                &distinct,
                &row_prompt,
                completions,
                c_len,
                opts.kernels,
                stages.as_mut(),
            )?;
            (hidden, Some((targets, unpack)))
        } else {
            // Input columns: the last token of a row never predicts a completion token, so `t`
            // stops one short and the hidden states from `p_len - 1` on are exactly the `c_len`
            // needed (no narrow of the `[B, C, vocab]` logits, whose backward would be passes
            // over all of them).
            let t = p_len + c_len - 1;
            let mut ids = Vec::with_capacity(b * t);
            let mut valid = Vec::with_capacity(b);
            for (p, c) in prompts.iter().zip(completions) {
                let lead = p_len - p.len();
                let row = std::iter::repeat_n(pad, lead).chain(p.iter().copied()).chain(c.iter().copied());
                ids.extend(row.chain(std::iter::repeat(pad)).take(t));
                valid.push((0..t).map(|i| i >= lead && i < p_len + c.len()).collect::<Vec<bool>>());
            }
            let ids = Tensor::from_vec(ids, (b, t), &dev)?;
            let pos = positions(&valid, &vec![0; b], &dev)?;
            let att = attention_mask(&valid, t, dtype, &dev)?;
            let attend = Attend::Cache(None);
            let x = model.body(&ids, &pos, &att, attend, None, stages.as_mut(), opts.kernels, fast)?;
            (x.narrow(1, p_len - 1, c_len)?, None)
        };
        let mask = Tensor::from_vec(mask, (b, c_len), &dev)?.to_dtype(dtype)?;
        // Per-token values in the logits' layout, then `[B, C]` with zeros at padding.
        let (targets, to_rows): (Tensor, Box<dyn Fn(Tensor) -> Result<Tensor>>) = match packed {
            Some((targets, unpack)) => {
                let l = targets.len();
                let unpack = Tensor::from_vec(unpack, b * c_len, &dev)?;
                let to_rows = move |x: Tensor| -> Result<Tensor> {
                    let zero = Tensor::zeros(1, x.dtype(), x.device())?;
                    let x = Tensor::cat(&[&x.reshape(l)?, &zero], 0)?;
                    Ok(x.index_select(&unpack, 0)?.reshape((b, c_len))?)
                };
                (Tensor::from_vec(targets, (1, l), &dev)?, Box::new(to_rows))
            }
            None => {
                let mask = mask.clone();
                (Tensor::from_vec(targets, (b, c_len), &dev)?, Box::new(move |x: Tensor| Ok((x * &mask)?)))
            }
        };
        let (lp, entropy) = if opts.entropy != Entropy::Differentiable && ops::supported(&hidden) {
            // The head and the log-probs as one node (`crate::head`): no `[B, C, vocab]`
            // log-prob tensor, the logits turned into their own gradient in the backward, and
            // in a staged pass the head weight's gradient handed to the stages. A metric
            // entropy is one more pass over the logits, outside the graph.
            let x = model.final_norm(&hidden, opts.kernels, fast)?;
            let metric = opts.entropy == Entropy::Metric;
            let slot = stages.as_ref().map(Stages::head_slot);
            let out = head::head_logprobs(&x, model.lm_head(), &targets, opts.temperature, metric, slot)?;
            (out.logprobs, out.entropy.map(&to_rows).transpose()?)
        } else {
            let logits = model.head(&hidden, opts.kernels, fast)?;
            let logits = if opts.temperature == 1.0 { logits } else { (logits / opts.temperature)? };
            let logp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
            let lp = logp.gather(&targets.unsqueeze(D::Minus1)?, D::Minus1)?.squeeze(D::Minus1)?;
            let entropy_of =
                |logp: &Tensor| -> Result<Tensor> { to_rows((logp.exp()? * logp)?.sum(D::Minus1)?.neg()?) };
            let entropy = match opts.entropy {
                Entropy::Off => None,
                Entropy::Metric => Some(entropy_of(&logp.detach())?),
                Entropy::Differentiable => Some(entropy_of(&logp)?),
            };
            (lp, entropy)
        };
        Ok(TokenLogProbs { logprobs: to_rows(lp)?, entropy, mask, stages })
    }
}

impl Policy {
    /// Hidden states `[1, L, hidden]` (before the final norm) of the `L` real completion
    /// columns' predictions, each distinct prompt run once
    /// and the completion columns packed (see the module docs). `row_prompt[b]` indexes
    /// `distinct`. Also returns the `L` targets and, for each position of the `[B, C]` result,
    /// its index among the `L` columns (`L` at padding).
    ///
    /// Layout of the `L` columns: first one per row (the prompt pass's last column, which
    /// predicts the row's first token; an empty completion's is computed and never read), then
    /// each row's completion columns but its last, packed. Both passes through the layers are
    /// cut into `stages` when given.
    fn shared_prompt_hidden(
        &self,
        distinct: &[&[u32]],
        row_prompt: &[usize],
        completions: &[Vec<u32>],
        c_len: usize,
        kernels: Kernels,
        mut stages: Option<&mut Stages>,
    ) -> Result<(Tensor, Vec<u32>, Vec<u32>)> {
        let model = self.model_for(kernels);
        let (dev, dtype, fast) = (model.device().clone(), model.dtype(), model.fast(kernels));
        let pad = self.tokenizer().pad_id();
        let (g, b) = (distinct.len(), completions.len());
        // 1. The distinct prompts, left-padded to `p`, with every layer's keys and values.
        let (ids, valid, p) = left_pad(distinct, pad);
        let ids = Tensor::from_vec(ids, (g, p), &dev)?;
        let pos = positions(&valid, &vec![0; g], &dev)?;
        let att = attention_mask(&valid, p, dtype, &dev)?;
        let mut layers = Vec::new();
        let x = model.body(
            &ids,
            &pos,
            &att,
            Attend::Cache(None),
            Some(&mut layers),
            stages.as_deref_mut(),
            kernels,
            fast,
        )?;
        let rows = Tensor::from_vec(row_prompt.iter().map(|&r| r as u32).collect::<Vec<_>>(), b, &dev)?;
        // The last prompt column predicts each row's first completion token.
        let first = x.narrow(1, p - 1, 1)?.contiguous()?.index_select(&rows, 0)?.reshape((1, b, ()))?;
        // 2. Each row's completion columns but the last, after its prompt's keys and values.
        let s = c_len - 1;
        let real: Vec<usize> = completions.iter().map(|c| c.len().saturating_sub(1)).collect();
        let n: usize = real.iter().sum();
        let mut targets: Vec<u32> = completions.iter().map(|c| c.first().copied().unwrap_or(0)).collect();
        let mut unpack = vec![(b + n) as u32; b * c_len];
        let mut next = b;
        for (row, c) in completions.iter().enumerate() {
            if !c.is_empty() {
                unpack[row * c_len] = row as u32;
            }
            for (j, &tok) in c.iter().enumerate().skip(1) {
                unpack[row * c_len + j] = next as u32;
                targets.push(tok);
                next += 1;
            }
        }
        let hidden = if n == 0 {
            first
        } else {
            let mut ids = Vec::with_capacity(n);
            let mut keys = Vec::with_capacity(b);
            let mut start = Vec::with_capacity(b);
            for ((c, &r), &real) in completions.iter().zip(row_prompt).zip(&real) {
                ids.extend_from_slice(&c[..real]);
                let mut k = valid[r].clone();
                k.extend((0..s).map(|j| j < real));
                keys.push(k);
                start.push(distinct[r].len());
            }
            let ids = Tensor::from_vec(ids, (1, n), &dev)?;
            let pos = positions(&vec![vec![true; s]; b], &start, &dev)?;
            let att = attention_mask(&keys, s, dtype, &dev)?;
            let packed = Some(Packing::new(&real, s, &dev)?);
            let prefix = SharedPrefix { layers, rows, packed };
            let rest = model.body(&ids, &pos, &att, Attend::Prefix(&prefix), None, stages, kernels, fast)?;
            Tensor::cat(&[&first, &rest], 1)?
        };
        Ok((hidden, targets, unpack))
    }
}
