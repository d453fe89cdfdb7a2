//! Evaluation without hints: the evaluation sets of a run (curriculum levels or the held-out
//! split) and one pass over them.

use mentor_core::{Task, Verifier};
use mentor_policy::Policy;

use super::tasks::{curriculum_eval_seed, Tasks};
use crate::config::TrainConfig;
use crate::error::Result;
use crate::eval::{evaluate, EvalRow};
use crate::seed::mix;

/// One evaluation set: a curriculum level, the held-out split, or a named set of `[[eval.sets]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalSet {
    /// The curriculum level (0 for dataset and named sets).
    pub level: u32,
    /// The name of an `[[eval.sets]]` set (`None`: a level, or `data.eval`).
    pub name: Option<String>,
    /// Its tasks, in evaluation order.
    pub tasks: Vec<Task>,
    /// pass@k on the first this many tasks (`None`: all).
    pub passk_n: Option<usize>,
}

/// The evaluation sets: the curriculum's levels, or `data.eval` and every `[[eval.sets]]`.
pub fn eval_sets(cfg: &TrainConfig, tasks: &Tasks) -> Vec<EvalSet> {
    match tasks {
        Tasks::Curriculum => cfg
            .eval_levels()
            .into_iter()
            .map(|l| EvalSet {
                level: l,
                name: None,
                tasks: cfg.curriculum.tasks(curriculum_eval_seed(cfg), l, cfg.eval.problems, "eval"),
                passk_n: None,
            })
            .collect(),
        Tasks::Dataset { eval, named, .. } => {
            let mut out = Vec::new();
            if !eval.is_empty() {
                out.push(EvalSet { level: 0, name: None, tasks: eval.clone(), passk_n: None });
            }
            out.extend(named.iter().map(|(name, tasks)| EvalSet {
                level: 0,
                name: Some(name.clone()),
                tasks: tasks.clone(),
                passk_n: cfg.eval.sets.iter().find(|s| &s.name == name).and_then(|s| s.passk_n),
            }));
            out
        }
    }
}

/// Runs every evaluation set once.
pub fn run_eval(
    cfg: &TrainConfig,
    policy: &Policy,
    verifier: &dyn Verifier,
    sets: &[EvalSet],
    step: usize,
) -> Result<Vec<EvalRow>> {
    sets.iter()
        .map(|set| {
            let row = evaluate(
                policy,
                verifier,
                &set.tasks,
                step,
                set.level,
                cfg.sampling.max_new_tokens,
                crate::eval::Sampled {
                    k: cfg.eval.k,
                    samples: cfg.eval.samples,
                    temperature: cfg.eval.temperature,
                    problems: set.passk_n,
                },
                mix(&[cfg.run.seed, 0xe7a1, step as u64]),
            )?;
            Ok(EvalRow { set: set.name.clone(), ..row })
        })
        .collect()
}
