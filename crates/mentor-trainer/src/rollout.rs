//! Sampling from the current policy: the trainer's [`Rollout`] for the strategy plug-in, and
//! the batched first sampling of a step's groups.

use mentor_core::{Completion, FinishReason, Task, Verifier};
use mentor_integration::{Group, Rollout, RolloutError, Sample, SampleRequest, Scored};
use mentor_policy::GenerateConfig;
use mentor_policy::{Policy, Sampler};

use crate::error::Result;
use crate::seed::mix;

/// Samples on-policy with the training sampler: temperature, and top-p / top-k when set with
/// [`PolicyRollout::with_top`] (off by default). Each completion's log-probs are those of the
/// distribution its tokens were drawn from (the truncated, renormalised softmax when top-p /
/// top-k cut; see [`mentor_policy::sampling`]), so they are the exact behaviour log-probs of
/// the samples. Every call ([`PolicyRollout::sample_tasks`], [`Rollout::sample`],
/// [`Rollout::sample_batch`]) is one batched generate with its own seed `mix(seed, step,
/// call)`: a run repeats exactly, and resuming at a step reproduces that step's samples.
pub struct PolicyRollout<'a> {
    policy: &'a Policy,
    temperature: f64,
    top_p: f64,
    top_k: usize,
    max_new_tokens: usize,
    seed: u64,
    step: u64,
    calls: u64,
}

impl<'a> PolicyRollout<'a> {
    /// A rollout for training step `step` of a run seeded with `seed`, top-p and top-k off.
    pub fn new(policy: &'a Policy, temperature: f64, max_new_tokens: usize, seed: u64, step: u64) -> Self {
        Self { policy, temperature, top_p: 1.0, top_k: 0, max_new_tokens, seed, step, calls: 0 }
    }

    /// Nucleus sampling with `top_p` (`1` = off) and top-k with `top_k` (`0` = off), for every
    /// sampling call. Values are checked when sampling: a `top_p` outside `(0, 1]` fails the
    /// call.
    pub fn with_top(mut self, top_p: f64, top_k: usize) -> Self {
        self.top_p = top_p;
        self.top_k = top_k;
        self
    }

    fn config(&mut self) -> GenerateConfig {
        self.calls += 1;
        GenerateConfig {
            sampler: Sampler { temperature: self.temperature, top_p: self.top_p, top_k: self.top_k },
            max_new_tokens: self.max_new_tokens,
            seed: mix(&[self.seed, self.step, self.calls]),
            ..GenerateConfig::default()
        }
    }

    /// Samples `n` completions for every task in one batch (rows of a task contiguous).
    pub fn sample_tasks(&mut self, tasks: &[Task], n: usize) -> Result<Vec<Vec<Sample>>> {
        let requests: Vec<SampleRequest<'_>> = tasks
            .iter()
            .map(|task| SampleRequest { task, prompt: &task.prompt, assistant_prefix: None, n })
            .collect();
        self.draw(&requests)
    }

    /// Samples every request in one generate: `request.n` rows of each request's prompt, each
    /// followed by the tokens of its assistant prefix; one list per request, in order.
    fn draw(&mut self, requests: &[SampleRequest<'_>]) -> Result<Vec<Vec<Sample>>> {
        let mut prefixes = Vec::with_capacity(requests.len());
        let mut rows = Vec::with_capacity(requests.iter().map(|r| r.n).sum());
        for req in requests {
            let prefix_ids = match req.assistant_prefix {
                Some(p) => self.policy.tokenizer().encode(p)?,
                None => Vec::new(),
            };
            let mut ids = self.policy.encode_chat(req.prompt)?;
            ids.extend_from_slice(&prefix_ids);
            rows.extend(std::iter::repeat_n(ids, req.n));
            prefixes.push(prefix_ids);
        }
        let cfg = self.config();
        let mut gens = self.policy.generate(&rows, &cfg)?.into_iter();
        let mut out = Vec::with_capacity(requests.len());
        for (req, prefix_ids) in requests.iter().zip(prefixes) {
            let mut samples = Vec::with_capacity(req.n);
            for _ in 0..req.n {
                let g = gens.next().ok_or_else(|| {
                    crate::Error::Missing("the policy returned fewer generations than rows".into())
                })?;
                samples.push(Sample {
                    completion: Completion {
                        task_id: req.task.id.clone(),
                        text: g.text,
                        finish_reason: g.finish_reason.into(),
                    },
                    prefix_ids: prefix_ids.clone(),
                    ids: g.token_ids,
                    logprobs: g.logprobs,
                });
            }
            out.push(samples);
        }
        Ok(out)
    }
}

impl Rollout for PolicyRollout<'_> {
    /// One request: [`Rollout::sample_batch`] of one.
    fn sample(&mut self, req: &SampleRequest<'_>) -> std::result::Result<Vec<Sample>, RolloutError> {
        let mut out = self.sample_batch(std::slice::from_ref(req))?;
        out.pop().ok_or_else(|| "the policy returned no samples for the request".into())
    }

    /// Every request in one generate call (one seed), each with its own prompt, assistant
    /// prefix and `n`.
    fn sample_batch(
        &mut self,
        requests: &[SampleRequest<'_>],
    ) -> std::result::Result<Vec<Vec<Sample>>, RolloutError> {
        Ok(self.draw(requests)?)
    }

    /// The text's tokens and the end-of-sequence id, with the current policy's log-probs of
    /// them under the task's plain prompt (one forward pass).
    /// The policy's tokens (characters where the tokenizer refuses the text).
    fn token_count(&self, text: &str) -> usize {
        self.policy.tokenizer().encode(text).map_or_else(|_| text.chars().count(), |ids| ids.len())
    }

    fn off_policy(&mut self, task: &Task, text: &str) -> std::result::Result<Sample, RolloutError> {
        let tok = self.policy.tokenizer();
        let mut ids = tok.encode(text)?;
        ids.extend(tok.stop_ids().first());
        let prompt = self.policy.encode_chat(&task.prompt)?;
        let out = self.policy.logprobs(
            &[prompt],
            std::slice::from_ref(&ids),
            &mentor_policy::LogProbOptions::default(),
        )?;
        let logprobs: Vec<f32> = out.logprobs.squeeze(0)?.to_vec1()?;
        Ok(Sample {
            completion: Completion {
                task_id: task.id.clone(),
                text: text.to_string(),
                finish_reason: FinishReason::Stop,
            },
            prefix_ids: Vec::new(),
            logprobs: logprobs[..ids.len().min(logprobs.len())].to_vec(),
            ids,
        })
    }
}

/// Scores sampled groups with `verifier` (in one batch).
pub fn score(tasks: Vec<Task>, samples: Vec<Vec<Sample>>, verifier: &dyn Verifier) -> Result<Vec<Group>> {
    let items: Vec<(&Task, &str)> = tasks
        .iter()
        .zip(&samples)
        .flat_map(|(t, ss)| ss.iter().map(move |s| (t, s.completion.text.as_str())))
        .collect();
    // A completion the verifier fails on scores 0 and carries the error; the step goes on.
    let mut verdicts = verifier.judge_batch(&items).into_iter();
    let mut groups = Vec::with_capacity(tasks.len());
    for (task, ss) in tasks.into_iter().zip(samples) {
        let mut scored = Vec::with_capacity(ss.len());
        for sample in ss {
            let verdict = verdicts.next().ok_or_else(|| {
                crate::Error::Missing("the verifier returned fewer verdicts than completions".into())
            })?;
            scored.push(Scored { sample, verdict });
        }
        groups.push(Group { task, samples: scored });
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};
    use mentor_core::Message;
    use mentor_policy::Config;

    use super::*;
    use mentor_tasks::curriculum::ALPHABET;

    fn policy() -> Policy {
        Policy::char_level(ALPHABET, Config::tiny(0, 32, 2, 4, 2), 7, DType::F32, &Device::Cpu).unwrap()
    }

    /// What one generate call `call` of a rollout seeded `(9, 4)` returns for `rows`.
    fn generate(
        p: &Policy,
        rows: &[Vec<u32>],
        sampler: Sampler,
        call: u64,
    ) -> Vec<mentor_policy::Generation> {
        let cfg = GenerateConfig {
            sampler,
            max_new_tokens: 6,
            seed: mix(&[9, 4, call]),
            ..GenerateConfig::default()
        };
        p.generate(rows, &cfg).unwrap()
    }

    fn tempered() -> Sampler {
        Sampler { temperature: 1.3, top_p: 1.0, top_k: 0 }
    }

    #[test]
    fn sample_batch_is_one_generate_with_each_requests_prompt_prefix_and_n() {
        let p = policy();
        let (a, b) = (Task::math("a", "12+3=", "15"), Task::math("b", "4+4=", "8"));
        let hinted = vec![Message::user("4+4=Hint 8")];
        let reqs = [
            SampleRequest { task: &a, prompt: &a.prompt, assistant_prefix: None, n: 2 },
            SampleRequest { task: &b, prompt: &hinted, assistant_prefix: Some("A:"), n: 3 },
        ];
        let mut rollout = PolicyRollout::new(&p, 1.3, 6, 9, 4);
        let out = rollout.sample_batch(&reqs).unwrap();
        assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 3]);
        // The same rows in one generate with the first call's seed.
        let prefix = p.tokenizer().encode("A:").unwrap();
        let row_a = p.encode_chat(&a.prompt).unwrap();
        let mut row_b = p.encode_chat(&hinted).unwrap();
        row_b.extend_from_slice(&prefix);
        let rows = vec![row_a.clone(), row_a, row_b.clone(), row_b.clone(), row_b];
        let gens = generate(&p, &rows, tempered(), 1);
        let flat: Vec<&Sample> = out.iter().flatten().collect();
        for (s, g) in flat.iter().zip(&gens) {
            assert_eq!((&s.ids, &s.logprobs, &s.completion.text), (&g.token_ids, &g.logprobs, &g.text));
        }
        for s in &out[0] {
            assert!(s.prefix_ids.is_empty() && s.completion.task_id == "a");
        }
        for s in &out[1] {
            assert_eq!(s.prefix_ids, prefix);
            assert_eq!(s.completion.task_id, "b");
        }
        // The next call draws from the next seed.
        let again = rollout.sample_batch(&reqs[..1]).unwrap();
        let gens = generate(&p, &rows[..2], tempered(), 2);
        assert_eq!(again[0][1].ids, gens[1].token_ids);
    }

    #[test]
    fn sample_is_a_batch_of_one_and_sample_tasks_a_batch_of_plain_prompts() {
        let p = policy();
        let a = Task::math("a", "12+3=", "15");
        let req = SampleRequest { task: &a, prompt: &a.prompt, assistant_prefix: Some("A:"), n: 3 };
        let one = PolicyRollout::new(&p, 1.3, 6, 9, 4).sample(&req).unwrap();
        let batch = PolicyRollout::new(&p, 1.3, 6, 9, 4).sample_batch(&[req]).unwrap();
        assert_eq!(vec![one], batch);

        let tasks = [a.clone(), Task::math("b", "4+4=", "8")];
        let out = PolicyRollout::new(&p, 1.3, 6, 9, 4).sample_tasks(&tasks, 2).unwrap();
        let rows: Vec<Vec<u32>> = tasks
            .iter()
            .flat_map(|t| {
                let ids = p.encode_chat(&t.prompt).unwrap();
                [ids.clone(), ids]
            })
            .collect();
        let gens = generate(&p, &rows, tempered(), 1);
        let ids: Vec<&Vec<u32>> = out.iter().flatten().map(|s| &s.ids).collect();
        assert_eq!(ids, gens.iter().map(|g| &g.token_ids).collect::<Vec<_>>());
    }

    #[test]
    fn with_top_samples_every_call_with_top_p_and_top_k() {
        let p = policy();
        let tasks = [Task::math("a", "12+3=", "15")];
        let mut rollout = PolicyRollout::new(&p, 1.3, 6, 9, 4).with_top(0.8, 3);
        let out = rollout.sample_tasks(&tasks, 4).unwrap();
        let row = p.encode_chat(&tasks[0].prompt).unwrap();
        let gens = generate(&p, &vec![row; 4], Sampler { temperature: 1.3, top_p: 0.8, top_k: 3 }, 1);
        for (s, g) in out[0].iter().zip(&gens) {
            assert_eq!((&s.ids, &s.logprobs), (&g.token_ids, &g.logprobs));
        }
        let req = SampleRequest { task: &tasks[0], prompt: &tasks[0].prompt, assistant_prefix: None, n: 1 };
        let bad = PolicyRollout::new(&p, 1.3, 6, 9, 4).with_top(0.0, 0).sample(&req);
        assert!(bad.unwrap_err().to_string().contains("top_p"));
    }
}
