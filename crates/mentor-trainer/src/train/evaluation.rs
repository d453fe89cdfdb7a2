//! Evaluation without hints: the evaluation sets of a run (curriculum levels or the held-out
//! split) and one pass over them.

use mentor_core::{Task, Verifier};
use mentor_policy::Policy;

use super::tasks::Tasks;
use crate::config::TrainConfig;
use crate::error::Result;
use crate::eval::{evaluate, EvalRow};
use crate::seed::mix;

/// The seed of a curriculum run's evaluation sets (one per run seed, shared by its arms).
pub fn curriculum_eval_seed(cfg: &TrainConfig) -> u64 {
    mix(&[cfg.run.seed, 0xe7a1])
}

/// The evaluation sets: `(level, tasks)`.
pub fn eval_sets(cfg: &TrainConfig, tasks: &Tasks) -> Vec<(u32, Vec<Task>)> {
    match tasks {
        Tasks::Curriculum => cfg
            .eval_levels()
            .into_iter()
            .map(|l| (l, cfg.curriculum.tasks(curriculum_eval_seed(cfg), l, cfg.eval.problems, "eval")))
            .collect(),
        Tasks::Dataset { eval, .. } if !eval.is_empty() => vec![(0, eval.clone())],
        Tasks::Dataset { .. } => vec![],
    }
}

/// Runs every evaluation set once.
pub fn run_eval(
    cfg: &TrainConfig,
    policy: &Policy,
    verifier: &dyn Verifier,
    sets: &[(u32, Vec<Task>)],
    step: usize,
) -> Result<Vec<EvalRow>> {
    sets.iter()
        .map(|(level, tasks)| {
            evaluate(
                policy,
                verifier,
                tasks,
                step,
                *level,
                cfg.sampling.max_new_tokens,
                crate::eval::Sampled {
                    k: cfg.eval.k,
                    samples: cfg.eval.samples,
                    temperature: cfg.eval.temperature,
                },
                mix(&[cfg.run.seed, 0xe7a1, step as u64]),
            )
        })
        .collect()
}
