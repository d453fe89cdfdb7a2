//! Paired sampling: each completion of a prompt is drawn from its own random stream, seeded
//! by `(run seed, stream, problem, sample index)` and not by the arm or the batch, so two arms
//! that show the learner the same prompt get the same completions, and arms that show
//! different prompts differ only by what they show. Rows of many problems and arms go through
//! one generate call ([`mentor_policy::Policy::generate_with_row_seeds`]); completions are
//! verified after the forced assistant prefix, as training verifies prefix-credited attempts.

use std::collections::HashMap;

use indicatif::ProgressBar;
use mentor_core::{Attempt, Completion, Message, Task, Verifier};
use mentor_policy::GenerateConfig;
use mentor_policy::{Policy, Sampler};

use mentor_trainer::seed::mix;
use mentor_trainer::{Error, Result};

/// The stream of the unhinted first attempts.
pub const BASE_STREAM: u64 = 0xba5e;
/// The stream of every second attempt (retry and hinted alike).
pub const HINTED_STREAM: u64 = 0x41e7;

/// One prompt to sample for a problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Request<'a> {
    /// The problem.
    pub task: &'a Task,
    /// The problem's number: the seeds of its rows.
    pub key: u64,
    /// The prompt the learner sees.
    pub prompt: Vec<Message>,
    /// Text the answer is forced to start with (a level-3 hint under `prefix` credit).
    pub prefix: Option<String>,
}

/// A sampled attempt, as verified.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The attempt: the completion (after the forced prefix, which is not part of it) and the
    /// verdict on prefix + completion.
    pub attempt: Attempt,
    /// Tokens generated.
    pub tokens: usize,
    /// The generated token ids (after the forced prefix).
    pub ids: Vec<u32>,
}

/// Samples and verifies requests with per-row seeds, at most `batch_rows` rows per generate
/// call.
pub struct PairedSampler<'a> {
    policy: &'a Policy,
    config: GenerateConfig,
    seed: u64,
    batch_rows: usize,
    cache: HashMap<String, Vec<Scored>>,
    /// Tokens generated so far.
    pub tokens: usize,
    /// Rows generated so far.
    pub rows: usize,
}

impl<'a> PairedSampler<'a> {
    /// A sampler over `policy` with the run's sampler settings.
    pub fn new(
        policy: &'a Policy,
        sampler: Sampler,
        max_new_tokens: usize,
        seed: u64,
        batch_rows: usize,
    ) -> Self {
        let config = GenerateConfig { sampler, max_new_tokens, ..GenerateConfig::default() };
        Self { policy, config, seed, batch_rows, cache: HashMap::new(), tokens: 0, rows: 0 }
    }

    /// The seed of row `g` of problem `key` in `stream`.
    pub fn row_seed(&self, stream: u64, key: u64, g: usize) -> u64 {
        mix(&[self.seed, stream, key, g as u64])
    }

    /// Samples `n` rows of every request in `stream` (rows of a request seeded by its problem
    /// and the sample index only, so the first `m` of `n` rows are the `m` rows asked for
    /// alone) and verifies them in one batch; one list of `n` per request, in order. Requests of the hinted stream seen before (same problem, prompt and prefix)
    /// are answered from memory: their rows have the same seeds, so sampling them again would
    /// draw the same completions.
    pub fn sample(
        &mut self,
        requests: &[Request<'_>],
        stream: u64,
        n: usize,
        verifier: &dyn Verifier,
        bar: &ProgressBar,
    ) -> Result<Vec<Vec<Scored>>> {
        let key = |r: &Request<'_>| {
            format!("{stream}\u{0}{n}\u{0}{}\u{0}{:?}\u{0}{:?}", r.task.id, r.prompt, r.prefix)
        };
        let mut fresh: Vec<usize> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, r) in requests.iter().enumerate() {
            let k = key(r);
            if !self.cache.contains_key(&k) && !seen.contains_key(&k) {
                seen.insert(k, i);
                fresh.push(i);
            }
        }
        let drawn =
            self.draw(&fresh.iter().map(|&i| &requests[i]).collect::<Vec<_>>(), stream, n, verifier, bar)?;
        for (&i, scored) in fresh.iter().zip(drawn) {
            self.cache.insert(key(&requests[i]), scored);
        }
        let out = requests.iter().map(|r| self.cache.get(&key(r)).cloned().unwrap_or_default()).collect();
        if stream != HINTED_STREAM {
            // Only the hinted stream is asked twice; keep memory bounded otherwise.
            self.cache.retain(|k, _| !k.starts_with(&format!("{stream}\u{0}")));
        }
        Ok(out)
    }

    /// Generates and verifies `requests` without the cache.
    fn draw(
        &mut self,
        requests: &[&Request<'_>],
        stream: u64,
        n: usize,
        verifier: &dyn Verifier,
        bar: &ProgressBar,
    ) -> Result<Vec<Vec<Scored>>> {
        let policy = self.policy;
        let tok = policy.tokenizer();
        let mut prompts = Vec::with_capacity(requests.len());
        for r in requests {
            let mut ids = policy.encode_chat(&r.prompt)?;
            if let Some(p) = &r.prefix {
                ids.extend(tok.encode(p)?);
            }
            prompts.push(ids);
        }
        // Prompts of similar length share a generate call (less padding in the prefill and the
        // cache); the per-row seeds make the order irrelevant to what is drawn.
        let mut order: Vec<usize> = (0..requests.len()).collect();
        order.sort_by_key(|&i| prompts[i].len());
        let mut rows: Vec<Vec<u32>> = Vec::with_capacity(requests.len() * n);
        let mut seeds = Vec::with_capacity(rows.capacity());
        for &i in &order {
            for g in 0..n {
                rows.push(prompts[i].clone());
                seeds.push(self.row_seed(stream, requests[i].key, g));
            }
        }
        let per_call = (self.batch_rows / n).max(1) * n;
        let mut sorted = Vec::with_capacity(rows.len());
        for (chunk, chunk_seeds) in rows.chunks(per_call).zip(seeds.chunks(per_call)) {
            let out = policy.generate_with_row_seeds(chunk, &self.config, chunk_seeds)?;
            self.tokens += out.iter().map(|g| g.token_ids.len()).sum::<usize>();
            self.rows += out.len();
            bar.inc(out.len() as u64);
            sorted.extend(out);
        }
        if sorted.len() != rows.len() {
            return Err(Error::Missing("the policy returned fewer generations than rows".into()));
        }
        // Back to request order.
        let mut slots: Vec<Option<mentor_policy::Generation>> = (0..rows.len()).map(|_| None).collect();
        for (j, g) in sorted.into_iter().enumerate() {
            slots[order[j / n] * n + j % n] = Some(g);
        }
        let gens: Vec<mentor_policy::Generation> = slots.into_iter().flatten().collect();
        if gens.len() != rows.len() {
            return Err(Error::Missing("the policy returned fewer generations than rows".into()));
        }
        let texts: Vec<String> = gens
            .iter()
            .enumerate()
            .map(|(i, g)| format!("{}{}", requests[i / n].prefix.as_deref().unwrap_or(""), g.text))
            .collect();
        let items: Vec<(&Task, &str)> =
            texts.iter().enumerate().map(|(i, t)| (requests[i / n].task, t.as_str())).collect();
        let verdicts = verifier.judge_batch(&items);
        if verdicts.len() != items.len() {
            return Err(Error::Missing("the verifier returned fewer verdicts than completions".into()));
        }
        let mut scored = gens.into_iter().zip(verdicts).enumerate().map(|(i, (g, verdict))| Scored {
            tokens: g.token_ids.len(),
            ids: g.token_ids,
            attempt: Attempt {
                completion: Completion {
                    task_id: requests[i / n].task.id.clone(),
                    text: g.text,
                    finish_reason: g.finish_reason.into(),
                },
                verdict,
            },
        });
        Ok(requests.iter().map(|_| scored.by_ref().take(n).collect()).collect())
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};
    use mentor_policy::Config;

    use super::*;
    use mentor_tasks::curriculum::ALPHABET;

    fn policy() -> Policy {
        Policy::char_level(ALPHABET, Config::tiny(0, 32, 2, 4, 2), 7, DType::F32, &Device::Cpu).unwrap()
    }

    fn sampler(p: &Policy, batch_rows: usize) -> PairedSampler<'_> {
        PairedSampler::new(p, Sampler { temperature: 1.0, top_p: 1.0, top_k: 0 }, 8, 3, batch_rows)
    }

    fn texts(s: &[Scored]) -> Vec<&str> {
        s.iter().map(|x| x.attempt.completion.text.as_str()).collect()
    }

    /// The paired design's promise: one prompt gives the same samples whichever arm asks for
    /// it, in whatever batch, next to whatever other prompts.
    #[test]
    fn identical_prompts_get_identical_samples_across_arms_and_batches() {
        let p = policy();
        let verifier = mentor_trainer::verify::DomainVerifier::new(None);
        let bar = ProgressBar::hidden();
        let (a, b) = (Task::math("a", "12+3=", "15"), Task::math("b", "4+4=", "8"));
        let retry = Request { task: &a, key: 4, prompt: a.prompt.clone(), prefix: None };
        // An arm whose hint is empty shows the plain prompt: the retry's prompt.
        let empty_hint = retry.clone();
        let hinted = Request { task: &a, key: 4, prompt: vec![Message::user("12+3=H")], prefix: None };
        let other = Request { task: &b, key: 9, prompt: b.prompt.clone(), prefix: Some("1".into()) };

        // Arm 1 samples the retry alone; arm 2 samples the empty hint among others, in small
        // batches and without the memory of the first sampler.
        let alone = sampler(&p, 64).sample(&[retry], HINTED_STREAM, 3, &verifier, &bar).unwrap();
        let mut s2 = sampler(&p, 3);
        let mixed = s2
            .sample(&[other.clone(), hinted.clone(), empty_hint], HINTED_STREAM, 3, &verifier, &bar)
            .unwrap();
        assert_eq!(s2.rows, 9, "three requests of three rows, none from memory");
        assert_eq!(texts(&alone[0]), texts(&mixed[2]));
        assert_eq!(alone[0], mixed[2]);
        // (Another prompt with the same seeds is another distribution; this untrained model's
        // is nearly uniform whatever the prompt, so its samples may coincide: not checked.)
        // Within a prompt the three rows have their own seeds.
        let t = texts(&alone[0]);
        assert!(t[0] != t[1] || t[1] != t[2], "{t:?}");
        // The first-attempt stream draws other samples of the same prompt.
        let base =
            sampler(&p, 64).sample(std::slice::from_ref(&hinted), BASE_STREAM, 3, &verifier, &bar).unwrap();
        assert_ne!(texts(&base[0]), texts(&mixed[1]));
        // Asked again, a hinted request is answered from memory, unchanged.
        let again = s2.sample(&[hinted], HINTED_STREAM, 3, &verifier, &bar).unwrap();
        assert_eq!((s2.rows, &again[0]), (9, &mixed[1]));
    }

    /// The rows of a request are its first ones whatever `n`: a retry of `n` attempts holds the
    /// retry of fewer (the escalation-matched retry takes its first ones).
    #[test]
    fn fewer_attempts_are_the_first_of_more() {
        let p = policy();
        let verifier = mentor_trainer::verify::DomainVerifier::new(None);
        let bar = ProgressBar::hidden();
        let a = Task::math("a", "12+3=", "15");
        let r = Request { task: &a, key: 4, prompt: a.prompt.clone(), prefix: None };
        let two =
            sampler(&p, 64).sample(std::slice::from_ref(&r), HINTED_STREAM, 2, &verifier, &bar).unwrap();
        let six =
            sampler(&p, 64).sample(std::slice::from_ref(&r), HINTED_STREAM, 6, &verifier, &bar).unwrap();
        assert_eq!(two[0][..], six[0][..2]);
    }
}
