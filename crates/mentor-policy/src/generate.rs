//! Batched sampling with a KV cache.
//!
//! Prompts are left-padded into one batch; each row gets its own RoPE positions and a
//! key-padding mask ([`crate::batch`]), so a row's result does not depend on the other rows
//! (greedy batched output equals one-at-a-time output; see the tests). The prompt is run once
//! (prefill), then one token per step against the cache, with the fused no-grad kernels.
//! Rows that finish keep a masked pad slot until enough of them have (an eighth of the batch):
//! then they are dropped from the batch and its KV cache, so finished rows stop costing
//! compute.

use candle_core::{DType, Tensor};
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::batch::{attention_mask, left_pad, positions};
use crate::error::{Error, Result};
use crate::model::{Kernels, KvCache};
use crate::policy::Policy;
use crate::sampling::Sampler;

/// Generation settings.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateConfig {
    /// Token choice.
    pub sampler: Sampler,
    /// Upper bound on generated tokens per row.
    pub max_new_tokens: usize,
    /// Extra ids that end a row (the tokenizer's stop ids always do).
    pub stop_ids: Vec<u32>,
    /// Strings that end a row; the text is cut before the first occurrence.
    pub stop_strings: Vec<String>,
    /// RNG seed: the same seed, prompts and model give the same output.
    pub seed: u64,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        Self {
            sampler: Sampler::default(),
            max_new_tokens: 256,
            stop_ids: vec![],
            stop_strings: vec![],
            seed: 0,
        }
    }
}

/// Why a row stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A stop id was generated (it is the last of `token_ids`, not part of `text`).
    Stop,
    /// A stop string appeared (the text is cut before it; `token_ids` end with the token that
    /// completed it).
    StopString,
    /// `max_new_tokens` was reached.
    Length,
}

/// One generated completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    /// Generated ids (the prompt is not included).
    pub token_ids: Vec<u32>,
    /// Decoded text without special tokens, cut at a stop string.
    pub text: String,
    /// Why generation stopped.
    pub finish_reason: FinishReason,
    /// Log-probability of each generated token under the temperature-scaled distribution
    /// (see [`crate::sampling`]); same length as `token_ids`.
    pub logprobs: Vec<f32>,
}

struct Row {
    ids: Vec<u32>,
    logprobs: Vec<f32>,
    done: Option<FinishReason>,
    cut: Option<usize>,
}

impl Policy {
    /// Generates one completion per prompt (token ids, e.g. from [`Policy::encode_chat`]).
    /// Errors on an empty prompt or an id outside the vocabulary.
    pub fn generate(&self, prompts: &[Vec<u32>], cfg: &GenerateConfig) -> Result<Vec<Generation>> {
        cfg.sampler.validate()?;
        let model = self.model();
        let vocab = model.config().vocab_size;
        for (i, p) in prompts.iter().enumerate() {
            if p.is_empty() {
                return Err(Error::InvalidRequest(format!("prompt {i} is empty")));
            }
            if let Some(bad) = p.iter().find(|&&id| id as usize >= vocab) {
                return Err(Error::InvalidRequest(format!("prompt {i} has id {bad} >= vocab {vocab}")));
            }
        }
        let tok = self.tokenizer();
        let mut stop_ids = tok.stop_ids().to_vec();
        stop_ids.extend(&cfg.stop_ids);
        let mut rows: Vec<Row> =
            prompts.iter().map(|_| Row { ids: vec![], logprobs: vec![], done: None, cut: None }).collect();
        if prompts.is_empty() || cfg.max_new_tokens == 0 {
            return rows.into_iter().map(|r| self.finish(r, FinishReason::Length)).collect();
        }
        let dev = model.device().clone();
        let b = prompts.len();
        let pad = tok.pad_id();
        let (ids, valid, t) = left_pad(prompts, pad);
        let mut key_valid = valid.clone();
        let mut next_pos: Vec<usize> = prompts.iter().map(Vec::len).collect();
        let mut cache = KvCache::with_capacity(model.config().num_hidden_layers, t + cfg.max_new_tokens);
        let ids = Tensor::from_vec(ids, (b, t), &dev)?;
        let pos = positions(&valid, &vec![0; b], &dev)?;
        let mask = attention_mask(&key_valid, t, model.dtype(), &dev)?;
        let mut logits = model.forward(&ids, &pos, &mask, Some(&mut cache), t - 1, Kernels::Fused)?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
        // Original row of each batch slot; shrinks as finished rows are dropped.
        let mut active: Vec<usize> = (0..b).collect();
        for _step in 0..cfg.max_new_tokens {
            let host: Vec<Vec<f32>> = logits.squeeze(1)?.to_dtype(DType::F32)?.to_vec2()?;
            let mut next = vec![pad; active.len()];
            for (slot, &r) in active.iter().enumerate() {
                let row = &mut rows[r];
                if row.done.is_some() {
                    continue;
                }
                let (id, lp) = cfg.sampler.sample(&host[slot], &mut rng)?;
                row.ids.push(id);
                row.logprobs.push(lp);
                next[slot] = id;
                if stop_ids.contains(&id) {
                    row.done = Some(FinishReason::Stop);
                } else if !cfg.stop_strings.is_empty() {
                    let text = tok.decode(&row.ids, true)?;
                    if let Some(at) = cfg.stop_strings.iter().filter_map(|s| text.find(s.as_str())).min() {
                        row.done = Some(FinishReason::StopString);
                        row.cut = Some(at);
                    }
                }
                if row.done.is_none() && row.ids.len() >= cfg.max_new_tokens {
                    row.done = Some(FinishReason::Length);
                }
            }
            let running: Vec<usize> = (0..active.len()).filter(|&s| rows[active[s]].done.is_none()).collect();
            if running.is_empty() {
                break;
            }
            if (active.len() - running.len()) * 8 >= active.len() {
                // Drop the finished rows: the rows are independent, so the others' results
                // do not change.
                cache.select_rows(&running)?;
                active = running.iter().map(|&s| active[s]).collect();
                key_valid = running.iter().map(|&s| std::mem::take(&mut key_valid[s])).collect();
                next_pos = running.iter().map(|&s| next_pos[s]).collect();
                next = running.iter().map(|&s| next[s]).collect();
            }
            let n = active.len();
            let step_valid: Vec<Vec<bool>> = active.iter().map(|&r| vec![rows[r].done.is_none()]).collect();
            for (kv, sv) in key_valid.iter_mut().zip(&step_valid) {
                kv.push(sv[0]);
            }
            let ids = Tensor::from_vec(next, (n, 1), &dev)?;
            let pos = positions(&step_valid, &next_pos, &dev)?;
            for (p, sv) in next_pos.iter_mut().zip(&step_valid) {
                *p += usize::from(sv[0]);
            }
            let mask = attention_mask(&key_valid, 1, model.dtype(), &dev)?;
            logits = model.forward(&ids, &pos, &mask, Some(&mut cache), 0, Kernels::Fused)?;
        }
        rows.into_iter()
            .map(|r| {
                let reason = r.done.unwrap_or(FinishReason::Length);
                self.finish(r, reason)
            })
            .collect()
    }

    fn finish(&self, row: Row, reason: FinishReason) -> Result<Generation> {
        let text_ids =
            if reason == FinishReason::Stop { &row.ids[..row.ids.len() - 1] } else { &row.ids[..] };
        let mut text = self.tokenizer().decode(text_ids, true)?;
        if let Some(at) = row.cut {
            text.truncate(at);
        }
        Ok(Generation { token_ids: row.ids, text, finish_reason: reason, logprobs: row.logprobs })
    }

    /// Renders `messages` with the chat template (assistant turn opened) and encodes it.
    pub fn encode_chat(&self, messages: &[crate::chat_template::Message]) -> Result<Vec<u32>> {
        self.tokenizer().encode(&self.render_chat(messages)?)
    }
}
