//! One full step of every strategy with the real tiny policy (mentor-policy, character-level)
//! and the real math verifier, through to a GRPO update with a finite loss.

use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use mentor_agents::{AgentMentor, Guard, GuardConfig, Refinement, StaticHints};
use mentor_core::{Completion, FinishReason, Task, Verifier};
use mentor_grpo::{GrpoConfig, Pass, PolicyOutput, RolloutBatch, Updater};
use mentor_integration::{
    Group, InterventionConfig, MonitorConfig, Plugin, Rollout, Sample, SampleRequest, Scored, Strategy,
    TaskSource, TrainRow,
};
use mentor_policy::GenerateConfig;
use mentor_policy::{Config, LogProbOptions, Policy, Sampler};
use mentor_verify_math::MathEquivalence;
use mentor_verify_math::MathVerifier;

struct PolicyRollout<'a> {
    policy: &'a Policy,
    seed: u64,
}

impl Rollout for PolicyRollout<'_> {
    fn sample(&mut self, req: &SampleRequest<'_>) -> Result<Vec<Sample>, mentor_integration::RolloutError> {
        let err = |e: mentor_policy::Error| e.to_string();
        let mut ids = self.policy.encode_chat(req.prompt).map_err(err)?;
        let prefix_ids = match req.assistant_prefix {
            Some(p) => self.policy.tokenizer().encode(p).map_err(err)?,
            None => Vec::new(),
        };
        ids.extend_from_slice(&prefix_ids);
        self.seed += 1;
        let cfg = GenerateConfig {
            sampler: Sampler::default(),
            max_new_tokens: 6,
            seed: self.seed,
            ..GenerateConfig::default()
        };
        let gens = self.policy.generate(&vec![ids; req.n], &cfg).map_err(err)?;
        Ok(gens
            .into_iter()
            .map(|g| Sample {
                completion: Completion {
                    task_id: req.task.id.clone(),
                    text: g.text,
                    finish_reason: if g.finish_reason == mentor_policy::StopCondition::Length {
                        FinishReason::Length
                    } else {
                        FinishReason::Stop
                    },
                },
                prefix_ids: prefix_ids.clone(),
                ids: g.token_ids,
                logprobs: g.logprobs,
            })
            .collect())
    }
}

struct More(Vec<Task>);
impl TaskSource for More {
    fn next_task(&mut self) -> Option<Task> {
        self.0.pop()
    }
}

fn tasks() -> Vec<Task> {
    let mut t = vec![Task::math("a", "12+35=", "47"), Task::math("b", "8+9=", "17")];
    for task in &mut t {
        task.payload = mentor_core::Payload::Math(mentor_core::MathPayload {
            answer: task.reference_answer().unwrap().to_string(),
            solution: Some(format!("{} carry 1\nso {}", task.question(), task.reference_answer().unwrap())),
        });
    }
    t
}

/// Pads rows into a GRPO batch and runs one update; returns the loss.
fn update(policy: &Policy, rows: &[TrainRow]) -> f64 {
    let prompts: Vec<Vec<u32>> = rows.iter().map(|r| policy.encode_chat(&r.prompt).unwrap()).collect();
    let completions: Vec<Vec<u32>> = rows.iter().map(|r| r.completion_ids.clone()).collect();
    let t = completions.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mask: Vec<f32> =
        completions.iter().flat_map(|c| (0..t).map(move |i| if i < c.len() { 1.0 } else { 0.0 })).collect();
    let batch = RolloutBatch {
        rewards: rows.iter().map(|r| r.reward).collect(),
        group_ids: rows.iter().map(|r| r.group).collect(),
        mask: Tensor::from_vec(mask, (rows.len(), t), &Device::Cpu).unwrap(),
        truncated: rows.iter().map(|r| r.truncated).collect(),
        old_logps: None,
        ref_logps: None,
        baselines: Some(rows.iter().map(|r| r.baseline).collect()),
    };
    let vars = policy.vars().into_iter().map(|(_, v)| v).collect();
    let mut updater = Updater::new(
        GrpoConfig {
            optimizer: mentor_grpo::OptimizerConfig { learning_rate: 1e-3, ..Default::default() },
            ..GrpoConfig::default()
        },
        vars,
        1,
    )
    .unwrap();
    let metrics = updater
        .update(&batch, |idx: &[usize], _: Pass| -> Result<PolicyOutput, mentor_policy::Error> {
            let p: Vec<_> = idx.iter().map(|&i| prompts[i].clone()).collect();
            let c: Vec<_> = idx.iter().map(|&i| completions[i].clone()).collect();
            let out = policy.logprobs(&p, &c, &LogProbOptions::default())?;
            // Pad to the batch width.
            let w = out.logprobs.dim(1)?;
            let logps = if w < t { out.logprobs.pad_with_zeros(1, 0, t - w)? } else { out.logprobs };
            Ok(PolicyOutput { logps, entropies: None, rest: None })
        })
        .unwrap();
    metrics.loss
}

#[test]
fn every_strategy_runs_a_full_step_with_a_finite_loss() {
    let policy = Policy::char_level(
        "0123456789+= \n\\boxed{}acrysol",
        Config::tiny(0, 32, 2, 4, 2),
        7,
        DType::F32,
        &Device::Cpu,
    )
    .unwrap();
    let verifier = MathVerifier::default();
    let guard = || Guard::new(GuardConfig::default(), Arc::new(MathEquivalence::default()));
    let arms: Vec<Strategy> = vec![
        Strategy::Vanilla,
        Strategy::Dapo { max_refill_groups: 2 },
        Strategy::Intervene {
            mentor: Box::new(StaticHints::new(1)),
            config: InterventionConfig { hinted_samples: 3, ..Default::default() },
        },
        Strategy::Intervene {
            mentor: Box::new(Refinement::new(guard(), 200)),
            config: InterventionConfig { hinted_samples: 3, ..Default::default() },
        },
        Strategy::Intervene {
            mentor: Box::new(AgentMentor::rules(guard())),
            config: InterventionConfig { hinted_samples: 3, ..Default::default() },
        },
    ];
    for arm in arms {
        let name = arm.name();
        let mut plugin = Plugin::new(arm, MonitorConfig::default());
        let mut rollout = PolicyRollout { policy: &policy, seed: 0 };
        let groups: Vec<Group> = tasks()
            .into_iter()
            .map(|task| {
                let samples = rollout
                    .sample(&SampleRequest {
                        task: &task,
                        prompt: &task.prompt,
                        assistant_prefix: None,
                        n: 4,
                    })
                    .unwrap();
                let scored = samples
                    .into_iter()
                    .map(|s| Scored {
                        verdict: verifier.verify(&task, &s.completion.text).unwrap(),
                        sample: s,
                    })
                    .collect();
                Group { task, samples: scored }
            })
            .collect();
        let mut more = More(vec![Task::math("c", "1+1=", "2")]);
        let out = plugin.process(groups, &mut rollout, &verifier, Some(&mut more)).unwrap();
        assert_eq!(out.metrics.groups, 2, "{name}");
        assert_eq!(out.metrics.collapsed, 2, "{name}: an untrained model solves nothing");
        if name == "dapo" {
            assert!(out.rows.is_empty() || out.metrics.dapo_refilled > 0, "{name}");
            continue; // every group dropped: nothing to update
        }
        if name != "vanilla" {
            assert_eq!(out.metrics.intervened, 2, "{name}");
            assert!(out.metrics.extra_rollouts >= 6, "{name}");
        }
        let loss = update(&policy, &out.rows);
        assert!(loss.is_finite(), "{name}: loss {loss}");
    }
}
