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
//! columns of all but one row per group from the forward and the backward.

use candle_core::{Tensor, D};

use crate::batch::{attention_mask, distinct_rows, left_pad, positions};
use crate::error::{Error, Result};
use crate::kernels;
use crate::model::{Attend, Kernels, SharedPrefix};
use crate::policy::Policy;

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
}

impl Default for LogProbOptions {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            entropy: Entropy::Off,
            kernels: Kernels::Differentiable,
            share_prompts: true,
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
        let model = self.model();
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
        let logits = if opts.share_prompts && distinct.len() < b {
            self.shared_prompt_logits(&distinct, &row_prompt, completions, c_len, opts.kernels)?
        } else {
            // Input columns: the last token of a row never predicts a completion token, so `t`
            // stops one short and the logits from `p_len - 1` on are exactly the `c_len` needed
            // (no narrow of the `[B, C, vocab]` logits, whose backward would be passes over all
            // of them).
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
            model.forward(&ids, &pos, &att, None, p_len - 1, opts.kernels)?
        };
        let logits = if opts.temperature == 1.0 { logits } else { (logits / opts.temperature)? };
        let targets = Tensor::from_vec(targets, (b, c_len), &dev)?;
        let mask = Tensor::from_vec(mask, (b, c_len), &dev)?.to_dtype(dtype)?;
        let (lp, entropy) = if opts.entropy != Entropy::Differentiable && kernels::supported(&logits) {
            // One fused pass (and one backward), no `[B, C, vocab]` log-prob tensor; a metric
            // entropy is one more pass over the logits, outside the graph.
            let entropy = match opts.entropy {
                Entropy::Metric => Some((kernels::token_entropy(&logits)? * &mask)?),
                _ => None,
            };
            (kernels::token_logprobs(&logits, &targets)?, entropy)
        } else {
            let logp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
            let lp = logp.gather(&targets.unsqueeze(D::Minus1)?, D::Minus1)?.squeeze(D::Minus1)?;
            let entropy_of = |logp: &Tensor| -> Result<Tensor> {
                let h = (logp.exp()? * logp)?.sum(D::Minus1)?.neg()?;
                Ok((h * &mask)?)
            };
            let entropy = match opts.entropy {
                Entropy::Off => None,
                Entropy::Metric => Some(entropy_of(&logp.detach())?),
                Entropy::Differentiable => Some(entropy_of(&logp)?),
            };
            (lp, entropy)
        };
        Ok(TokenLogProbs { logprobs: (lp * &mask)?, entropy, mask })
    }
}

impl Policy {
    /// Logits `[B, C, vocab]` of the completion columns, each distinct prompt run once (see the
    /// module docs). `row_prompt[b]` indexes `distinct`.
    fn shared_prompt_logits(
        &self,
        distinct: &[&[u32]],
        row_prompt: &[usize],
        completions: &[Vec<u32>],
        c_len: usize,
        kernels: Kernels,
    ) -> Result<Tensor> {
        let model = self.model();
        let (dev, dtype, fast) = (model.device().clone(), model.dtype(), model.fast(kernels));
        let pad = self.tokenizer().pad_id();
        let (g, b) = (distinct.len(), completions.len());
        // 1. The distinct prompts, left-padded to `p`, with every layer's keys and values.
        let (ids, valid, p) = left_pad(distinct, pad);
        let ids = Tensor::from_vec(ids, (g, p), &dev)?;
        let pos = positions(&valid, &vec![0; g], &dev)?;
        let att = attention_mask(&valid, p, dtype, &dev)?;
        let mut layers = Vec::new();
        let x = model.body(&ids, &pos, &att, Attend::Cache(None), Some(&mut layers), kernels, fast)?;
        let rows = Tensor::from_vec(row_prompt.iter().map(|&r| r as u32).collect::<Vec<_>>(), b, &dev)?;
        // The last prompt column predicts each row's first completion token.
        let first = x.narrow(1, p - 1, 1)?.contiguous()?.index_select(&rows, 0)?;
        // 2. Each row's completion columns but the last, after its prompt's keys and values.
        let s = c_len - 1;
        let hidden = if s == 0 {
            first
        } else {
            let mut ids = Vec::with_capacity(b * s);
            let mut keys = Vec::with_capacity(b);
            let mut start = Vec::with_capacity(b);
            for (c, &r) in completions.iter().zip(row_prompt) {
                ids.extend(c.iter().copied().chain(std::iter::repeat(pad)).take(s));
                let mut k = valid[r].clone();
                k.extend((0..s).map(|j| j < c.len()));
                keys.push(k);
                start.push(distinct[r].len());
            }
            let ids = Tensor::from_vec(ids, (b, s), &dev)?;
            let pos = positions(&vec![vec![true; s]; b], &start, &dev)?;
            let att = attention_mask(&keys, s, dtype, &dev)?;
            let prefix = SharedPrefix { layers, rows };
            let rest = model.body(&ids, &pos, &att, Attend::Prefix(&prefix), None, kernels, fast)?;
            Tensor::cat(&[&first, &rest], 1)?
        };
        model.head(&hidden, kernels, fast)
    }
}
