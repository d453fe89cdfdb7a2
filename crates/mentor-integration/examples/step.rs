//! One MENTOR step on a collapsed group, with a stand-in policy that solves the task only when
//! the hint shows it the first steps, the offline `rules` mentor and the real math verifier.
//!
//! `cargo run -p mentor-integration --example step`

use std::sync::Arc;

use mentor_agents::{AgentMentor, Guard, GuardConfig};
use mentor_core::{Completion, MathPayload, Payload, Task, Verifier};
use mentor_grpo::ScaleRewards;
use mentor_integration::{
    Group, InterventionConfig, MonitorConfig, Plugin, Rollout, Sample, SampleRequest, Scored, Strategy,
};
use mentor_verify_math::MathEquivalence;
use mentor_verify_math::MathVerifier;

/// Answers right only when its answer is forced to start with worked steps (a level-3 hint).
struct StandIn;

impl Rollout for StandIn {
    fn sample(&mut self, req: &SampleRequest<'_>) -> Result<Vec<Sample>, mentor_integration::RolloutError> {
        let text = match req.assistant_prefix {
            Some(_) => "\nShe makes 9 * 2 = 18 dollars. \\boxed{18}",
            None => "She has 16 - 3 = 13 eggs, 13 * 2 = 26. \\boxed{26}",
        };
        Ok((0..req.n)
            .map(|_| Sample {
                completion: Completion::new(&req.task.id, text),
                prefix_ids: req.assistant_prefix.unwrap_or("").bytes().map(u32::from).collect(),
                ids: text.bytes().map(u32::from).collect(),
                logprobs: vec![-1.0; text.len()],
            })
            .collect())
    }
}

fn main() {
    let mut task = Task::math("janet", "Janet's ducks lay 16 eggs a day. She eats 3 and bakes with 4, and sells the rest at $2 each. How much does she make?", "18");
    task.payload = Payload::Math(MathPayload {
        answer: "18".into(),
        solution: Some("Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18 every day.".into()),
    });
    let verifier = MathVerifier::default();
    let mut policy = StandIn;
    let samples = policy
        .sample(&SampleRequest { task: &task, prompt: &task.prompt, assistant_prefix: None, n: 4 })
        .unwrap_or_default();
    let samples = samples
        .into_iter()
        .filter_map(|s| Some(Scored { verdict: verifier.verify(&task, &s.completion.text).ok()?, sample: s }))
        .collect();
    let mentor = AgentMentor::rules(Guard::new(GuardConfig::default(), Arc::new(MathEquivalence::default())));
    let strategy = Strategy::Intervene {
        mentor: Box::new(mentor),
        config: InterventionConfig { hinted_samples: 4, ..Default::default() },
    };
    let mut plugin = Plugin::new(strategy, MonitorConfig::default());
    match plugin.process(vec![Group { task, samples }], &mut policy, &verifier, None) {
        Ok(out) => {
            println!("metrics: {:?}", out.metrics);
            for rec in &out.interventions {
                println!("diagnosis: {:?}", rec.diagnosis.as_ref().map(|d| (d.category, d.first_wrong_step)));
                for h in &rec.hints {
                    println!("hint (level {}): {}", h.level.get(), h.text);
                }
                println!("rescued: {}, hinted rewards {:?}", rec.rescued, rec.hinted_rewards);
            }
            let advantages =
                mentor_integration::advantages(&out.rows, ScaleRewards::Group).unwrap_or_default();
            for (r, a) in out.rows.iter().zip(&advantages) {
                println!(
                    "row group {} reward {} advantage {a} hint {:?}",
                    r.group,
                    r.reward,
                    r.hint_level.map(|l| l.get())
                );
            }
        }
        Err(e) => eprintln!("error: {e}"),
    }
}
