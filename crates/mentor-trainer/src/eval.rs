//! Evaluation without hints: greedy pass@1 and, optionally, sampled pass@k, per curriculum
//! level or on held-out dataset tasks. The evaluation set depends only on the run's seed, so
//! arms that share a seed are compared on the same problems.

use mentor_core::{Task, Verifier};
use mentor_policy::{GenerateConfig, Policy, Sampler};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::policy::{messages, mix};

/// One evaluation result (a line of `eval.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalRow {
    /// The training step the policy had completed.
    pub step: usize,
    /// Curriculum level (0 for dataset tasks).
    pub level: u32,
    /// Problems.
    pub n: usize,
    /// Greedy pass@1.
    pub pass1: f64,
    /// Samples per problem for pass@k (0: not measured).
    pub k: usize,
    /// pass@k (fraction of problems with at least one correct sample), when `k > 0`.
    pub passk: Option<f64>,
}

/// Batches of at most this many rows per generate call.
const CHUNK: usize = 128;

fn generate_all(policy: &Policy, tasks: &[Task], n: usize, cfg: &GenerateConfig) -> Result<Vec<String>> {
    let mut prompts = Vec::with_capacity(tasks.len() * n);
    for t in tasks {
        let ids = policy.encode_chat(&messages(&t.prompt))?;
        prompts.extend(std::iter::repeat_n(ids, n));
    }
    let mut texts = Vec::with_capacity(prompts.len());
    for (i, chunk) in prompts.chunks(CHUNK).enumerate() {
        let cfg = GenerateConfig { seed: mix(&[cfg.seed, i as u64]), ..cfg.clone() };
        texts.extend(policy.generate(chunk, &cfg)?.into_iter().map(|g| g.text));
    }
    Ok(texts)
}

/// Evaluates `tasks` (one level's set): greedy pass@1, and pass@k with `k` samples at
/// `temperature` when `k > 0`, drawn from `seed`.
#[allow(clippy::too_many_arguments)]
pub fn evaluate(
    policy: &Policy,
    verifier: &dyn Verifier,
    tasks: &[Task],
    step: usize,
    level: u32,
    max_new_tokens: usize,
    k: usize,
    temperature: f64,
    seed: u64,
) -> Result<EvalRow> {
    let greedy =
        GenerateConfig { sampler: Sampler::greedy(), max_new_tokens, seed, ..GenerateConfig::default() };
    let texts = generate_all(policy, tasks, 1, &greedy)?;
    let items: Vec<(&Task, &str)> = tasks.iter().zip(&texts).map(|(t, s)| (t, s.as_str())).collect();
    let pass = verifier.verify_batch(&items).into_iter().filter(|v| matches!(v, Ok(v) if v.passed())).count();
    let n = tasks.len();
    let pass1 = pass as f64 / n.max(1) as f64;
    let passk = if k > 0 {
        let cfg = GenerateConfig {
            sampler: Sampler { temperature, top_p: 1.0, top_k: 0 },
            max_new_tokens,
            seed: mix(&[seed, step as u64, u64::from(level), 0x7a55]),
            ..GenerateConfig::default()
        };
        let texts = generate_all(policy, tasks, k, &cfg)?;
        let items: Vec<(&Task, &str)> =
            texts.iter().enumerate().map(|(i, s)| (&tasks[i / k], s.as_str())).collect();
        let verdicts = verifier.verify_batch(&items);
        let solved = (0..n)
            .filter(|&p| verdicts[p * k..(p + 1) * k].iter().any(|v| matches!(v, Ok(v) if v.passed())))
            .count();
        Some(solved as f64 / n.max(1) as f64)
    } else {
        None
    };
    Ok(EvalRow { step, level, n, pass1, k, passk })
}
