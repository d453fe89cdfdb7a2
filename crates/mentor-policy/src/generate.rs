//! Batched sampling with a KV cache.
//!
//! Prompts are left-padded into one batch; each row gets its own RoPE positions and a
//! key-padding mask (`batch.rs`), so a row's result does not depend on the other rows
//! (greedy batched output equals one-at-a-time output; see the tests). The prompt is run once
//! (prefill), then one token per step against the cache, with the fused no-grad kernels.
//! Rows that finish keep a masked pad slot until enough of them have (an eighth of the batch):
//! then they are dropped from the batch and its KV cache, so finished rows stop costing
//! compute.
//!
//! Prefill shares work between prompts ([`GenerateConfig::share_prefix`], on by default):
//! the tokens every prompt starts with (a system prompt, a few-shot preamble) are run once, as
//! one row, and each distinct rest of a prompt once (a GRPO step repeats every prompt once per
//! sample of its group); the cache is then copied out to every row. A token's keys and values
//! depend only on the tokens before it and its position, and positions count a row's own
//! tokens, so this changes nothing but float rounding (the products run on other row counts).
//! The cache then holds the shared tokens first and each row's padding after them, which the
//! key-padding mask blocks as it blocks left padding.

use candle_core::{DType, Tensor};
use rand::SeedableRng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::batch::{attention_mask, left_pad, positions};
use crate::error::{Error, Result};
use crate::model::{Kernels, KvCache};
use crate::policy::Policy;
use crate::sampling::{Prepared, Sampler};

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
    /// Prefill the prompts' common first tokens and each distinct prompt only once (a GRPO
    /// step repeats each prompt once per sample of its group), then copy the cache out to
    /// every row: a token's keys and values depend only on the tokens before it. Same results
    /// up to float rounding; off runs every row in full.
    pub share_prefix: bool,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        Self {
            sampler: Sampler::default(),
            max_new_tokens: 256,
            stop_ids: vec![],
            stop_strings: vec![],
            seed: 0,
            share_prefix: true,
        }
    }
}

/// How a batch of prompts is prefilled: `shared` first tokens common to every prompt, then the
/// distinct rests of the prompts.
#[derive(Debug, PartialEq)]
struct PrefillPlan<'a> {
    /// Leading tokens every prompt has (and at least one more).
    shared: usize,
    /// The distinct rests `prompt[shared..]`, in order of first appearance.
    rests: Vec<&'a [u32]>,
    /// For each prompt, the index of its rest in `rests`.
    rest_of: Vec<usize>,
}

impl<'a> PrefillPlan<'a> {
    /// The plan for non-empty `prompts`: without `share` (or for one prompt) every prompt is
    /// its own rest.
    fn new(prompts: &'a [Vec<u32>], share: bool) -> Self {
        if !share || prompts.len() < 2 {
            return Self {
                shared: 0,
                rests: prompts.iter().map(Vec::as_slice).collect(),
                rest_of: (0..prompts.len()).collect(),
            };
        }
        let first = &prompts[0];
        let shortest = prompts.iter().map(Vec::len).min().unwrap_or(0);
        // Leave every prompt at least one token of its own: its logits start the sampling.
        let limit = shortest.saturating_sub(1);
        let shared = (0..limit).take_while(|&i| prompts.iter().all(|p| p[i] == first[i])).count();
        let (rests, rest_of) = crate::batch::distinct_rows(prompts.iter().map(|p| &p[shared..]));
        Self { shared, rests, rest_of }
    }

    /// Whether prompt `i` is rest `i` (nothing is shared).
    fn is_trivial(&self) -> bool {
        self.shared == 0 && self.rests.len() == self.rest_of.len()
    }
}

/// Which of the decoder's stop conditions ended a row, and so how its `token_ids` and `text`
/// end. Finer than `mentor_core::FinishReason` (whole or truncated, what verifiers and the
/// mentor read), which it converts into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCondition {
    /// A stop id was generated (it is the last of `token_ids`, not part of `text`).
    Stop,
    /// A stop string appeared (the text is cut before it; `token_ids` end with the token that
    /// completed it).
    StopString,
    /// `max_new_tokens` was reached.
    Length,
}

impl From<StopCondition> for mentor_core::FinishReason {
    /// What a verifier and the mentor need to know: truncated (`Length`) or ended on its own
    /// (a stop id or a stop string).
    fn from(r: StopCondition) -> Self {
        match r {
            StopCondition::Length => mentor_core::FinishReason::Length,
            StopCondition::Stop | StopCondition::StopString => mentor_core::FinishReason::Stop,
        }
    }
}

/// One generated completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    /// Generated ids (the prompt is not included).
    pub token_ids: Vec<u32>,
    /// Decoded text without special tokens, cut at a stop string.
    pub text: String,
    /// Which stop condition ended the row.
    pub finish_reason: StopCondition,
    /// Log-probability of each generated token under the distribution it was drawn from: the
    /// temperature-scaled softmax, restricted to the tokens top-k/top-p kept and renormalised
    /// (the whole vocabulary when neither cuts; at temperature 1 for greedy decoding). See
    /// [`Sampler::sample`]. Same length as `token_ids`.
    pub logprobs: Vec<f32>,
}

/// What [`Policy::prefill`] leaves for decoding.
struct Prefilled {
    /// Every prompt's keys and values.
    cache: KvCache,
    /// The logits at each prompt's last position, `[prompts, 1, vocab]`.
    logits: Tensor,
    /// Per prompt, which cache positions are real tokens (not left padding).
    key_valid: Vec<Vec<bool>>,
}

struct Row {
    ids: Vec<u32>,
    logprobs: Vec<f32>,
    done: Option<StopCondition>,
    cut: Option<usize>,
}

impl Policy {
    /// Generates one completion per prompt (token ids, e.g. from [`Policy::encode_chat`]).
    /// Errors on an empty prompt or an id outside the vocabulary.
    pub fn generate(&self, prompts: &[Vec<u32>], cfg: &GenerateConfig) -> Result<Vec<Generation>> {
        // A `stop` that is never true: the same loop, and `None` cannot come back.
        Ok(self.generate_until(prompts, cfg, || false)?.unwrap_or_default())
    }

    /// [`Policy::generate`] that can be abandoned: `stop` is asked before the prefill and
    /// before each decode step, and once it returns true generation ends and `Ok(None)` comes
    /// back (a server whose client went away, a deadline). While `stop` returns false the
    /// results are exactly [`Policy::generate`]'s; it costs one call per step.
    pub fn generate_until(
        &self,
        prompts: &[Vec<u32>],
        cfg: &GenerateConfig,
        stop: impl FnMut() -> bool,
    ) -> Result<Option<Vec<Generation>>> {
        self.generate_inner(prompts, cfg, None, stop)
    }

    /// [`Policy::generate`] with one random stream per row: row `i` samples from its own RNG
    /// seeded with `row_seeds[i]` (`cfg.seed` is not used), so what a row draws depends only
    /// on its prompt, its seed and the model, not on which other rows share the batch or in
    /// what order (up to float rounding, as for greedy decoding: the products run on other
    /// row counts). Paired comparisons use it: the same prompt with the same seed gives the
    /// same completion in any batch. Errors when `row_seeds` and `prompts` differ in length.
    pub fn generate_with_row_seeds(
        &self,
        prompts: &[Vec<u32>],
        cfg: &GenerateConfig,
        row_seeds: &[u64],
    ) -> Result<Vec<Generation>> {
        if row_seeds.len() != prompts.len() {
            return Err(Error::InvalidRequest(format!(
                "{} row seeds for {} prompts",
                row_seeds.len(),
                prompts.len()
            )));
        }
        Ok(self.generate_inner(prompts, cfg, Some(row_seeds), || false)?.unwrap_or_default())
    }

    /// The decoding loop: one RNG seeded with `cfg.seed` drawn from in slot order, or one RNG
    /// per row when `row_seeds` is given.
    fn generate_inner(
        &self,
        prompts: &[Vec<u32>],
        cfg: &GenerateConfig,
        row_seeds: Option<&[u64]>,
        mut stop: impl FnMut() -> bool,
    ) -> Result<Option<Vec<Generation>>> {
        cfg.sampler.validate()?;
        let model = self.model_for(Kernels::Fused);
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
            return rows
                .into_iter()
                .map(|r| self.finish(r, StopCondition::Length))
                .collect::<Result<_>>()
                .map(Some);
        }
        if stop() {
            return Ok(None);
        }
        let b = prompts.len();
        let pad = tok.pad_id();
        // The model's work runs on the thread pool (`on_pool`: no hand-over per product);
        // `stop` is asked here, between steps, on the caller's thread.
        let Prefilled { mut cache, mut logits, mut key_valid } =
            mentor_kernels::on_pool(|| self.prefill(prompts, cfg))?;
        let mut next_pos: Vec<usize> = prompts.iter().map(Vec::len).collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
        let mut row_rngs: Option<Vec<rand::rngs::StdRng>> =
            row_seeds.map(|seeds| seeds.iter().map(|&s| rand::rngs::StdRng::seed_from_u64(s)).collect());
        // Original row of each batch slot; shrinks as finished rows are dropped.
        let mut active: Vec<usize> = (0..b).collect();
        for _step in 0..cfg.max_new_tokens {
            if stop() {
                return Ok(None);
            }
            let step = || -> Result<bool> {
                let host: Vec<Vec<f32>> = logits.squeeze(1)?.to_dtype(DType::F32)?.to_vec2()?;
                // The running rows' softmaxes over the vocabulary, over the pool; then the
                // draws in row order (the same choices as sampling the rows one by one).
                let prepared: Vec<Option<Prepared>> = {
                    let rows = &rows;
                    active
                        .par_iter()
                        .zip(&host)
                        .map(|(&r, row)| rows[r].done.is_none().then(|| cfg.sampler.prepare(row)).transpose())
                        .collect::<Result<_>>()?
                };
                let mut next = vec![pad; active.len()];
                for (slot, &r) in active.iter().enumerate() {
                    let row = &mut rows[r];
                    let Some(prepared) = &prepared[slot] else {
                        continue;
                    };
                    let draw = match row_rngs.as_mut() {
                        Some(rngs) => &mut rngs[r],
                        None => &mut rng,
                    };
                    let (id, lp) = prepared.draw(&host[slot], draw)?;
                    row.ids.push(id);
                    row.logprobs.push(lp);
                    next[slot] = id;
                    if stop_ids.contains(&id) {
                        row.done = Some(StopCondition::Stop);
                    } else if !cfg.stop_strings.is_empty() {
                        let text = tok.decode(&row.ids, true)?;
                        if let Some(at) = cfg.stop_strings.iter().filter_map(|s| text.find(s.as_str())).min()
                        {
                            row.done = Some(StopCondition::StopString);
                            row.cut = Some(at);
                        }
                    }
                    if row.done.is_none() && row.ids.len() >= cfg.max_new_tokens {
                        row.done = Some(StopCondition::Length);
                    }
                }
                let running: Vec<usize> =
                    (0..active.len()).filter(|&s| rows[active[s]].done.is_none()).collect();
                if running.is_empty() {
                    return Ok(false);
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
                let running: Vec<bool> = active.iter().map(|&r| rows[r].done.is_none()).collect();
                logits = self.decode_step(next, &running, &mut key_valid, &mut next_pos, &mut cache)?;
                Ok(true)
            };
            if !mentor_kernels::on_pool(step)? {
                break;
            }
        }
        rows.into_iter()
            .map(|r| {
                let reason = r.done.unwrap_or(StopCondition::Length);
                self.finish(r, reason)
            })
            .collect::<Result<_>>()
            .map(Some)
    }

    /// Runs the prompts through the model into a fresh cache (sized for `cfg.max_new_tokens`
    /// more positions): their common first tokens once, each distinct rest once, then the
    /// cache rows and last-position logits copied out to every prompt ([`PrefillPlan`]).
    fn prefill(&self, prompts: &[Vec<u32>], cfg: &GenerateConfig) -> Result<Prefilled> {
        let model = self.model_for(Kernels::Fused);
        let dev = model.device().clone();
        let b = prompts.len();
        let plan = PrefillPlan::new(prompts, cfg.share_prefix);
        let longest_rest = plan.rests.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut cache = KvCache::with_capacity(
            model.config().num_hidden_layers,
            plan.shared + longest_rest + cfg.max_new_tokens,
        );
        if plan.shared > 0 {
            // The common first tokens, once, as one row; then one copy per distinct rest.
            let s = plan.shared;
            let ids = Tensor::from_vec(prompts[0][..s].to_vec(), (1, s), &dev)?;
            let valid = vec![vec![true; s]];
            let pos = positions(&valid, &[0], &dev)?;
            let mask = attention_mask(&valid, s, model.dtype(), &dev)?;
            model.forward(&ids, &pos, &mask, Some(&mut cache), s - 1, Kernels::Fused)?;
            if plan.rests.len() > 1 {
                cache.select_rows(&vec![0; plan.rests.len()])?;
            }
        }
        let (ids, valid, t) = left_pad(&plan.rests, self.tokenizer().pad_id());
        let u = plan.rests.len();
        let mut key_valid: Vec<Vec<bool>> = valid
            .iter()
            .map(|v| std::iter::repeat_n(true, plan.shared).chain(v.iter().copied()).collect())
            .collect();
        let ids = Tensor::from_vec(ids, (u, t), &dev)?;
        let pos = positions(&valid, &vec![plan.shared; u], &dev)?;
        let mask = attention_mask(&key_valid, t, model.dtype(), &dev)?;
        let mut logits = model.forward(&ids, &pos, &mask, Some(&mut cache), t - 1, Kernels::Fused)?;
        if !plan.is_trivial() {
            // Copy each distinct prompt's cache rows and logits out to the prompts that have it.
            cache.select_rows(&plan.rest_of)?;
            let rows = Tensor::from_vec(plan.rest_of.iter().map(|&r| r as u32).collect::<Vec<_>>(), b, &dev)?;
            logits = logits.index_select(&rows, 0)?;
            key_valid = plan.rest_of.iter().map(|&r| key_valid[r].clone()).collect();
        }
        Ok(Prefilled { cache, logits, key_valid })
    }

    /// One decode step: feeds `next` (one token per batch slot; slots whose row is no longer
    /// `running` feed padding that no later query attends to) at each slot's next position and
    /// returns the next logits `[slots, 1, vocab]`.
    fn decode_step(
        &self,
        next: Vec<u32>,
        running: &[bool],
        key_valid: &mut [Vec<bool>],
        next_pos: &mut [usize],
        cache: &mut KvCache,
    ) -> Result<Tensor> {
        let model = self.model_for(Kernels::Fused);
        let dev = model.device().clone();
        let n = running.len();
        let step_valid: Vec<Vec<bool>> = running.iter().map(|&r| vec![r]).collect();
        for (kv, &r) in key_valid.iter_mut().zip(running) {
            kv.push(r);
        }
        let ids = Tensor::from_vec(next, (n, 1), &dev)?;
        let pos = positions(&step_valid, next_pos, &dev)?;
        for (p, &r) in next_pos.iter_mut().zip(running) {
            *p += usize::from(r);
        }
        let mask = attention_mask(key_valid, 1, model.dtype(), &dev)?;
        model.forward(&ids, &pos, &mask, Some(cache), 0, Kernels::Fused)
    }

    fn finish(&self, row: Row, reason: StopCondition) -> Result<Generation> {
        let text_ids =
            if reason == StopCondition::Stop { &row.ids[..row.ids.len() - 1] } else { &row.ids[..] };
        let mut text = self.tokenizer().decode(text_ids, true)?;
        if let Some(at) = row.cut {
            text.truncate(at);
        }
        Ok(Generation { token_ids: row.ids, text, finish_reason: reason, logprobs: row.logprobs })
    }

    /// Renders `messages` with the chat template (assistant turn opened) and encodes it.
    pub fn encode_chat(&self, messages: &[mentor_core::Message]) -> Result<Vec<u32>> {
        self.tokenizer().encode(&self.render_chat(messages)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_length_limit_is_a_truncation_for_verifiers() {
        let core = |r: StopCondition| -> mentor_core::FinishReason { r.into() };
        assert_eq!(core(StopCondition::Length), mentor_core::FinishReason::Length);
        assert_eq!(core(StopCondition::Stop), mentor_core::FinishReason::Stop);
        assert_eq!(core(StopCondition::StopString), mentor_core::FinishReason::Stop);
    }

    #[test]
    fn prefill_plan_shares_the_common_start_and_repeated_prompts() {
        let ps = vec![vec![1, 2, 3, 4], vec![1, 2, 5], vec![1, 2, 3, 4], vec![1, 2, 5]];
        let plan = PrefillPlan::new(&ps, true);
        assert_eq!(plan.shared, 2);
        assert_eq!(plan.rests, vec![&[3u32, 4][..], &[5][..]]);
        assert_eq!(plan.rest_of, vec![0, 1, 0, 1]);
        assert!(!plan.is_trivial());
    }

    #[test]
    fn prefill_plan_leaves_every_prompt_a_token_of_its_own() {
        // Identical prompts: all but the last token shared, one rest.
        let ps = vec![vec![7, 8, 9]; 3];
        let plan = PrefillPlan::new(&ps, true);
        assert_eq!((plan.shared, plan.rests.len(), plan.rest_of), (2, 1, vec![0, 0, 0]));
        // A prompt that is a prefix of another.
        let ps = vec![vec![7, 8], vec![7, 8, 9]];
        let plan = PrefillPlan::new(&ps, true);
        assert_eq!((plan.shared, plan.rests), (1, vec![&[8u32][..], &[8, 9][..]]));
        // One-token prompts share nothing.
        let ps = vec![vec![7], vec![7]];
        let plan = PrefillPlan::new(&ps, true);
        assert_eq!((plan.shared, plan.rests.len()), (0, 1));
    }

    #[test]
    fn generate_until_stops_when_asked_and_changes_nothing_otherwise() {
        use crate::config::Config;
        use candle_core::Device;
        let policy =
            Policy::char_level("abcdefgh ", Config::tiny(0, 32, 2, 4, 2), 3, DType::F32, &Device::Cpu)
                .unwrap();
        let prompts = vec![policy.tokenizer().encode("abc").unwrap(); 2];
        let cfg = GenerateConfig { max_new_tokens: 12, seed: 5, ..GenerateConfig::default() };
        let want = policy.generate(&prompts, &cfg).unwrap();
        let mut asked = 0;
        let got = policy.generate_until(&prompts, &cfg, || {
            asked += 1;
            false
        });
        assert_eq!(got.unwrap(), Some(want.clone()));
        // Once before the prefill, then once per decode step.
        let steps = want.iter().map(|g| g.token_ids.len()).max().unwrap();
        assert_eq!(asked, 1 + steps);
        let mut asked = 0;
        let got = policy.generate_until(&prompts, &cfg, || {
            asked += 1;
            asked == 3
        });
        assert_eq!((got.unwrap(), asked), (None, 3));
        assert_eq!(policy.generate_until(&prompts, &cfg, || true).unwrap(), None);
    }

    fn tiny_policy() -> Policy {
        use crate::config::Config;
        use candle_core::Device;
        Policy::char_level("abcdefgh ", Config::tiny(0, 32, 2, 4, 2), 3, DType::F32, &Device::Cpu).unwrap()
    }

    #[test]
    fn row_seeds_make_a_rows_sample_independent_of_the_rest_of_the_batch() {
        let policy = tiny_policy();
        let enc = |s: &str| policy.tokenizer().encode(s).unwrap();
        let (a, b, c) = (enc("abc"), enc("hgfe dc"), enc("ba"));
        // Temperature 1 over an untrained model: samples differ from seed to seed.
        let cfg = GenerateConfig { max_new_tokens: 10, seed: 99, ..GenerateConfig::default() };
        let alone = policy.generate_with_row_seeds(std::slice::from_ref(&a), &cfg, &[7]).unwrap();
        let mixed = policy
            .generate_with_row_seeds(&[b.clone(), a.clone(), c.clone(), a.clone()], &cfg, &[1, 7, 2, 8])
            .unwrap();
        let other = policy.generate_with_row_seeds(&[c, a.clone(), b], &cfg, &[3, 7, 4]).unwrap();
        assert_eq!(mixed[1], alone[0]);
        assert_eq!(other[1], alone[0]);
        // Another seed on the same prompt draws another sample (with these settings).
        assert_ne!(mixed[3].token_ids, mixed[1].token_ids);
        // `cfg.seed` plays no part.
        let reseeded = GenerateConfig { seed: 5, ..cfg.clone() };
        assert_eq!(policy.generate_with_row_seeds(std::slice::from_ref(&a), &reseeded, &[7]).unwrap(), alone);
        // One row: its own stream is the shared stream of that seed.
        let shared = GenerateConfig { seed: 7, ..cfg.clone() };
        assert_eq!(policy.generate(std::slice::from_ref(&a), &shared).unwrap(), alone);
        let e = policy.generate_with_row_seeds(&[a.clone(), a], &cfg, &[1]).unwrap_err().to_string();
        assert!(e.contains("1 row seeds for 2 prompts"), "{e}");
    }

    #[test]
    fn without_row_seeds_the_rows_share_one_stream_in_slot_order() {
        // The default path: two identical prompts in one batch draw different samples from the
        // one shared RNG, and the batch repeats exactly under the same seed.
        let policy = tiny_policy();
        let a = policy.tokenizer().encode("abc").unwrap();
        let cfg = GenerateConfig { max_new_tokens: 10, seed: 7, ..GenerateConfig::default() };
        let two = policy.generate(&[a.clone(), a.clone()], &cfg).unwrap();
        assert_eq!(two, policy.generate(&[a.clone(), a], &cfg).unwrap());
        assert_ne!(two[0].token_ids, two[1].token_ids);
    }

    #[test]
    fn prefill_plan_is_trivial_without_sharing_or_with_one_prompt() {
        let ps = vec![vec![1, 2, 3], vec![1, 2, 3]];
        let plan = PrefillPlan::new(&ps, false);
        assert_eq!((plan.shared, plan.rests.len()), (0, 2));
        assert!(plan.is_trivial());
        assert!(PrefillPlan::new(&ps[..1], true).is_trivial());
        let distinct = vec![vec![1, 2], vec![3, 4]];
        assert!(PrefillPlan::new(&distinct, true).is_trivial());
    }
}
