//! The plug-in driven by scripted rollouts: a test double of the policy whose success depends
//! on the task and the hint level it is shown, judged by the real math verifier.

#![allow(missing_docs)] // test doubles; each says what it does in its own comment

mod batching;
mod paths;
mod properties;
mod real_step;

use std::collections::HashMap;

use mentor_core::{
    Completion, FinishReason, Hint, HintLevel, HintSource, Intervention, Mentor, MentorError, MentorRequest,
    Task,
};
use mentor_grpo::ScaleRewards;
use mentor_integration::{Group, Rollout, Sample, SampleRequest, Scored, TaskSource, TrainRow};
use mentor_verify_math::MathVerifier;

/// The advantage of `row`, one of `rows`, as the GRPO update computes it (group-relative,
/// `scale_rewards = group`; `prefix` rows against their baseline).
pub fn advantage_of(rows: &[TrainRow], row: &TrainRow) -> f64 {
    let i = rows.iter().position(|r| std::ptr::eq(r, row)).expect("a row of `rows`");
    mentor_integration::advantages(rows, ScaleRewards::Group).unwrap()[i]
}

/// A policy double: task `t` is solved when shown a hint of level ≥ `needs[t]` (0 = solved
/// without hints, 4 = never). With a forced prefix it continues after it. Token ids are the
/// bytes of the text; log-probs are −0.5 per token.
pub struct Scripted {
    pub needs: HashMap<String, u8>,
    pub calls: Vec<(String, Option<u8>, bool)>,
}

impl Scripted {
    pub fn new(needs: &[(&str, u8)]) -> Self {
        Self { needs: needs.iter().map(|(k, v)| (k.to_string(), *v)).collect(), calls: Vec::new() }
    }
}

/// The hint level written into the prompt by [`LevelMentor`] (`[L2]`), if any.
fn shown_level(req: &SampleRequest<'_>) -> Option<u8> {
    let text = &req.prompt.last()?.content;
    let i = text.find("[L")?;
    text[i + 2..i + 3].parse().ok()
}

pub fn sample(text: &str, prefix: &str) -> Sample {
    Sample {
        completion: Completion {
            task_id: String::new(),
            text: text.into(),
            finish_reason: FinishReason::Stop,
        },
        prefix_ids: prefix.bytes().map(u32::from).collect(),
        ids: text.bytes().map(u32::from).collect(),
        logprobs: vec![-0.5; text.len()],
    }
}

impl Rollout for Scripted {
    fn sample(&mut self, req: &SampleRequest<'_>) -> Result<Vec<Sample>, mentor_integration::RolloutError> {
        let level = shown_level(req);
        self.calls.push((req.task.id.clone(), level, req.assistant_prefix.is_some()));
        let need = self.needs.get(&req.task.id).copied().unwrap_or(4);
        let gold = req.task.reference_answer().unwrap_or("0");
        let solved = level.unwrap_or(0) >= need;
        Ok((0..req.n)
            .map(|i| {
                // Half of a solved group is right, so hinted groups have reward variance.
                let text = if solved && i % 2 == 0 {
                    format!("so \\boxed{{{gold}}}")
                } else {
                    "so \\boxed{999999}".to_string()
                };
                sample(&text, req.assistant_prefix.unwrap_or(""))
            })
            .collect())
    }
    fn off_policy(&mut self, task: &Task, text: &str) -> Result<Sample, mentor_integration::RolloutError> {
        self.calls.push((task.id.clone(), None, false));
        Ok(sample(text, ""))
    }
}

/// A mentor double: the hint says its level (`[L2]`), level 3 carries a solution prefix.
pub struct LevelMentor;

impl Mentor for LevelMentor {
    fn name(&self) -> &str {
        "level"
    }
    fn intervene(&self, r: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        let l = r.level.get();
        Ok(Intervention {
            diagnosis: None,
            hint: Some(Hint {
                level: r.level,
                text: format!("[L{l}] think again"),
                solution_prefix: (l == 3).then(|| "Step one. ".to_string()),
                source: HintSource::Mentor,
            }),
            rejections: Vec::new(),
            redactions: Vec::new(),
        })
    }
}

pub fn task(id: &str, gold: &str) -> Task {
    Task::math(id, format!("Problem {id}"), gold)
}

/// Unhinted groups of size `g` sampled from `policy`, verified.
pub fn groups(policy: &mut Scripted, tasks: &[Task], g: usize) -> Vec<Group> {
    let v = MathVerifier::default();
    tasks
        .iter()
        .map(|t| {
            let samples = policy
                .sample(&SampleRequest { task: t, prompt: &t.prompt, assistant_prefix: None, n: g })
                .unwrap();
            let samples = samples
                .into_iter()
                .map(|s| {
                    let verdict = mentor_core::Verifier::verify(&v, t, &s.completion.text).unwrap();
                    Scored { sample: s, verdict }
                })
                .collect();
            Group { task: t.clone(), samples }
        })
        .collect()
}

/// Tasks from a list.
pub struct Tasks(pub Vec<Task>);

impl TaskSource for Tasks {
    fn next_task(&mut self) -> Option<Task> {
        (!self.0.is_empty()).then(|| self.0.remove(0))
    }
}

pub fn level(n: u8) -> HintLevel {
    HintLevel::try_from(n).unwrap()
}
