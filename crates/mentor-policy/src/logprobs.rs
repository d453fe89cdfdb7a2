//! Differentiable per-token log-probabilities (and entropy) of completions under prompts.
//!
//! Layout: prompts are left-padded to the longest prompt `P`, completions right-padded to the
//! longest completion `C`, so completion token `j` of every row sits in column `P + j` and is
//! predicted by the logits of column `P + j - 1`. Logits are computed only for those `C`
//! columns, which keeps the `[B, C, vocab]` tensor as small as it can be.

use candle_core::{Tensor, D};

use crate::batch::{attention_mask, positions};
use crate::error::{Error, Result};
use crate::kernels;
use crate::model::Kernels;
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
}

impl Default for LogProbOptions {
    fn default() -> Self {
        Self { temperature: 1.0, entropy: Entropy::Off, kernels: Kernels::Differentiable }
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
        // Input columns: the last token of a row never predicts a completion token, so `t` stops
        // one short and the logits from `p_len - 1` on are exactly the `c_len` needed (no narrow
        // of the `[B, C, vocab]` logits, whose backward would be passes over all of them).
        let t = p_len + c_len - 1;
        let pad = self.tokenizer().pad_id();
        let mut ids = Vec::with_capacity(b * t);
        let mut valid = Vec::with_capacity(b);
        let mut targets = Vec::with_capacity(b * c_len);
        let mut mask = Vec::with_capacity(b * c_len);
        for (p, c) in prompts.iter().zip(completions) {
            let lead = p_len - p.len();
            let row = std::iter::repeat_n(pad, lead).chain(p.iter().copied()).chain(c.iter().copied());
            ids.extend(row.chain(std::iter::repeat(pad)).take(t));
            valid.push((0..t).map(|i| i >= lead && i < p_len + c.len()).collect::<Vec<bool>>());
            targets.extend_from_slice(c);
            targets.extend(std::iter::repeat_n(0u32, c_len - c.len()));
            mask.extend((0..c_len).map(|j| if j < c.len() { 1f32 } else { 0f32 }));
        }
        let ids = Tensor::from_vec(ids, (b, t), &dev)?;
        let pos = positions(&valid, &vec![0; b], &dev)?;
        let att = attention_mask(&valid, t, dtype, &dev)?;
        let logits = model.forward(&ids, &pos, &att, None, p_len - 1, opts.kernels)?;
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
