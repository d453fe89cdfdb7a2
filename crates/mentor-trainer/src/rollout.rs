//! Sampling from the current policy: the trainer's [`Rollout`] for the strategy plug-in, and
//! the batched first sampling of a step's groups.

use mentor_core::{Completion, FinishReason, Message, Task, Verifier};
use mentor_integration::{Group, Rollout, Sample, SampleRequest, Scored};
use mentor_policy::generate::GenerateConfig;
use mentor_policy::{Policy, Sampler};

use crate::error::Result;
use crate::policy::{messages, mix};

/// Samples on-policy at the training temperature, top-k/top-p off, so the sampling
/// log-probs are exact. Each call draws from its own seed `mix(seed, step, call)`: a run
/// repeats exactly, and resuming at a step reproduces that step's samples.
pub struct PolicyRollout<'a> {
    policy: &'a Policy,
    temperature: f64,
    max_new_tokens: usize,
    seed: u64,
    step: u64,
    calls: u64,
}

impl<'a> PolicyRollout<'a> {
    /// A rollout for training step `step` of a run seeded with `seed`.
    pub fn new(policy: &'a Policy, temperature: f64, max_new_tokens: usize, seed: u64, step: u64) -> Self {
        Self { policy, temperature, max_new_tokens, seed, step, calls: 0 }
    }

    fn config(&mut self) -> GenerateConfig {
        self.calls += 1;
        GenerateConfig {
            sampler: Sampler { temperature: self.temperature, top_p: 1.0, top_k: 0 },
            max_new_tokens: self.max_new_tokens,
            seed: mix(&[self.seed, self.step, self.calls]),
            ..GenerateConfig::default()
        }
    }

    /// Samples `n` completions for every task in one batch (rows of a task contiguous).
    pub fn sample_tasks(&mut self, tasks: &[Task], n: usize) -> Result<Vec<Vec<Sample>>> {
        let prompts: Vec<(&Task, &[Message])> = tasks.iter().map(|t| (t, t.prompt.as_slice())).collect();
        self.draw(&prompts, n, None)
    }

    /// Samples `n` completions per `(task, prompt)`, each answer starting with `prefix`.
    fn draw(
        &mut self,
        prompts: &[(&Task, &[Message])],
        n: usize,
        prefix: Option<&str>,
    ) -> Result<Vec<Vec<Sample>>> {
        let prefix_ids = match prefix {
            Some(p) => self.policy.tokenizer().encode(p)?,
            None => Vec::new(),
        };
        let mut rows = Vec::with_capacity(prompts.len() * n);
        for (_, prompt) in prompts {
            let mut ids = self.policy.encode_chat(&messages(prompt))?;
            ids.extend_from_slice(&prefix_ids);
            rows.extend(std::iter::repeat_n(ids, n));
        }
        let cfg = self.config();
        let gens = self.policy.generate(&rows, &cfg)?;
        let mut out: Vec<Vec<Sample>> = prompts.iter().map(|_| Vec::with_capacity(n)).collect();
        for (i, g) in gens.into_iter().enumerate() {
            let task = prompts[i / n].0;
            out[i / n].push(Sample {
                completion: Completion {
                    task_id: task.id.clone(),
                    text: g.text,
                    finish_reason: match g.finish_reason {
                        mentor_policy::FinishReason::Length => FinishReason::Length,
                        _ => FinishReason::Stop,
                    },
                },
                prefix_ids: prefix_ids.clone(),
                ids: g.token_ids,
                logprobs: g.logprobs,
            });
        }
        Ok(out)
    }
}

impl Rollout for PolicyRollout<'_> {
    fn sample(&mut self, req: &SampleRequest<'_>) -> std::result::Result<Vec<Sample>, String> {
        let mut out =
            self.draw(&[(req.task, req.prompt)], req.n, req.assistant_prefix).map_err(|e| e.to_string())?;
        Ok(out.pop().unwrap_or_default())
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
