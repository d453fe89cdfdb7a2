//! Golden tests on real failures, the guard's no-leak property, the baselines, and the `llm`
//! backend against a local mock endpoint (round trip and failure injection).

mod golden_code;
mod golden_math;
mod guard_property;
mod llm_backend;

use std::path::PathBuf;
use std::sync::Arc;

use mentor_agents::{AgentMentor, Guard, GuardConfig};
use mentor_core::{Attempt, Completion, FinishReason, Task};
use mentor_verify_math::MathEquivalence;

/// The guard with the math verifier's equivalence.
pub fn guard() -> Guard {
    Guard::new(GuardConfig::default(), Arc::new(MathEquivalence::default()))
}

/// The default rules mentor.
pub fn mentor() -> AgentMentor {
    AgentMentor::rules(guard())
}

/// Attempts judged by the real math verifier.
pub fn judged(task: &Task, texts: &[&str], finish: FinishReason) -> Vec<Attempt> {
    let gold = task.reference_answer().expect("math task");
    texts
        .iter()
        .map(|t| Attempt {
            completion: Completion { task_id: task.id.clone(), text: t.to_string(), finish_reason: finish },
            verdict: mentor_verify_math::check(gold, t, &mentor_verify_math::Config::default()),
        })
        .collect()
}

/// The shared benchmark data.
pub fn data_dir() -> PathBuf {
    mentor_core::datasets_dir!()
}
