//! Evaluation without hints: greedy pass@1 and, optionally, sampled pass@k, per curriculum
//! level or on held-out dataset tasks. The evaluation set depends only on the run's seed, so
//! arms that share a seed are compared on the same problems.

use mentor_core::{Task, Verifier};
use mentor_policy::{GenerateConfig, Policy, Sampler};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::seed::mix;

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
    /// The k of pass@k (0: not measured).
    pub k: usize,
    /// pass@k, when `k > 0`: the unbiased estimator of Chen et al. (2021) from `samples`
    /// draws per problem, averaged over problems.
    pub passk: Option<f64>,
    /// Samples drawn per problem for pass@k and mean@k (`>= k`).
    #[serde(default)]
    pub samples: usize,
    /// mean@k, when `k > 0`: the fraction of all sampled completions that are correct.
    #[serde(default)]
    pub meank: Option<f64>,
    /// Problems pass@k and mean@k were measured on: the first `passk_n` of the set (`n` when
    /// the row says nothing: every problem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passk_n: Option<usize>,
    /// Correct completions of each of those problems out of `samples`, in set order (empty
    /// without pass@k, and in rows written before it was recorded): the per-problem pass@k
    /// that pairs arms problem by problem.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub right: Vec<usize>,
    /// Greedy pass/fail of each problem, in evaluation-set order (`pass1` is the share of
    /// `true`). The set depends only on the run's seed, so the vectors of two arms of one seed
    /// are paired problem by problem. Empty in rows written before it was recorded.
    #[serde(default)]
    pub correct: Vec<bool>,
    /// The named evaluation set (`[[eval.sets]]`) the row is of; absent for a curriculum level
    /// and for `data.eval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<String>,
}

/// How pass@k is measured: `samples >= k` completions per problem at `temperature`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampled {
    /// The k of pass@k (0: no sampled evaluation).
    pub k: usize,
    /// Completions drawn per problem (`>= k`; more draws give a lower-variance estimate).
    pub samples: usize,
    /// Sampling temperature.
    pub temperature: f64,
    /// pass@k on the first this many problems only (`None`: all of them; `Some(0)`: none):
    /// sampled evaluation costs `samples` times greedy's, so a set can measure it on a prefix.
    pub problems: Option<usize>,
}

/// The unbiased pass@k estimator of Chen et al. (2021) for one problem with `c` correct
/// completions out of `n` drawn: `1 - C(n - c, k) / C(n, k)`, computed as a stable product.
/// `k > n` is undefined and gives `NaN`.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> f64 {
    if k > n || c > n {
        return f64::NAN;
    }
    if n - c < k {
        return 1.0;
    }
    1.0 - ((n - c + 1)..=n).map(|i| 1.0 - k as f64 / i as f64).product::<f64>()
}

/// Batches of at most this many rows per generate call.
const CHUNK: usize = 128;

fn generate_all(policy: &Policy, tasks: &[Task], n: usize, cfg: &GenerateConfig) -> Result<Vec<String>> {
    let mut prompts = Vec::with_capacity(tasks.len() * n);
    for t in tasks {
        let ids = policy.encode_chat(&t.prompt)?;
        prompts.extend(std::iter::repeat_n(ids, n));
    }
    let mut texts = Vec::with_capacity(prompts.len());
    for (i, chunk) in prompts.chunks(CHUNK).enumerate() {
        let cfg = GenerateConfig { seed: mix(&[cfg.seed, i as u64]), ..cfg.clone() };
        texts.extend(policy.generate(chunk, &cfg)?.into_iter().map(|g| g.text));
    }
    Ok(texts)
}

/// Evaluates `tasks` (one level's set): greedy pass@1, and pass@k and mean@k from
/// `sampled.samples` completions per problem of the first `sampled.problems` (`None`: all)
/// when `sampled.k > 0`, drawn from `seed`.
#[allow(clippy::too_many_arguments)]
pub fn evaluate(
    policy: &Policy,
    verifier: &dyn Verifier,
    tasks: &[Task],
    step: usize,
    level: u32,
    max_new_tokens: usize,
    sampled: Sampled,
    seed: u64,
) -> Result<EvalRow> {
    let Sampled { k, temperature, .. } = sampled;
    let samples = sampled.samples.max(k);
    let greedy =
        GenerateConfig { sampler: Sampler::greedy(), max_new_tokens, seed, ..GenerateConfig::default() };
    let texts = generate_all(policy, tasks, 1, &greedy)?;
    let items: Vec<(&Task, &str)> = tasks.iter().zip(&texts).map(|(t, s)| (t, s.as_str())).collect();
    let correct: Vec<bool> =
        verifier.verify_batch(&items).into_iter().map(|v| matches!(v, Ok(v) if v.passed())).collect();
    let pass = correct.iter().filter(|&&c| c).count();
    let n = tasks.len();
    let pass1 = pass as f64 / n.max(1) as f64;
    let sampled_tasks = match sampled.problems {
        None => tasks,
        Some(m) => &tasks[..m.min(n)],
    };
    let measured = k > 0 && !sampled_tasks.is_empty();
    let (passk, meank, right) = if measured {
        let tasks = sampled_tasks;
        let cfg = GenerateConfig {
            sampler: Sampler { temperature, top_p: 1.0, top_k: 0 },
            max_new_tokens,
            seed: mix(&[seed, step as u64, u64::from(level), 0x7a55]),
            ..GenerateConfig::default()
        };
        let texts = generate_all(policy, tasks, samples, &cfg)?;
        let items: Vec<(&Task, &str)> =
            texts.iter().enumerate().map(|(i, s)| (&tasks[i / samples], s.as_str())).collect();
        let verdicts = verifier.verify_batch(&items);
        let right: Vec<usize> = verdicts
            .chunks(samples)
            .map(|vs| vs.iter().filter(|v| matches!(v, Ok(v) if v.passed())).count())
            .collect();
        let denom = tasks.len().max(1) as f64;
        let passk = right.iter().map(|&c| pass_at_k(samples, c, k)).sum::<f64>() / denom;
        let meank = right.iter().sum::<usize>() as f64 / (denom * samples as f64);
        (Some(passk), Some(meank), right)
    } else {
        (None, None, Vec::new())
    };
    Ok(EvalRow {
        step,
        level,
        n,
        pass1,
        k: if measured { k } else { 0 },
        passk,
        samples: if measured { samples } else { 0 },
        meank,
        passk_n: (measured && sampled_tasks.len() < n).then_some(sampled_tasks.len()),
        right,
        correct,
        set: None,
    })
}

#[cfg(test)]
mod tests {
    use super::{pass_at_k, EvalRow};

    #[test]
    fn eval_rows_without_per_problem_outcomes_still_read_back() {
        // An `eval.jsonl` line written before `correct` was recorded.
        let old = r#"{"step":40,"level":4,"n":3,"pass1":0.5,"k":4,"passk":0.75,"samples":8,"meank":0.5}"#;
        let row: EvalRow = serde_json::from_str(old).unwrap();
        assert_eq!((row.step, row.n, row.pass1, row.correct.len()), (40, 3, 0.5, 0));
        // Older still: no `samples` / `meank` either.
        let older: EvalRow =
            serde_json::from_str(r#"{"step":0,"level":1,"n":2,"pass1":0.0,"k":0,"passk":null}"#).unwrap();
        assert!(older.correct.is_empty() && older.meank.is_none());
    }

    #[test]
    fn per_problem_outcomes_round_trip_in_order() {
        let row = EvalRow {
            step: 7,
            level: 4,
            n: 3,
            pass1: 2.0 / 3.0,
            k: 0,
            passk: None,
            samples: 0,
            meank: None,
            passk_n: None,
            right: Vec::new(),
            correct: vec![true, false, true],
            set: None,
        };
        let line = serde_json::to_string(&row).unwrap();
        assert!(!line.contains("\"set\""), "no set name: the line is as before {line}");
        assert!(line.contains(r#""correct":[true,false,true]"#), "{line}");
        assert_eq!(serde_json::from_str::<EvalRow>(&line).unwrap(), row);
    }

    #[test]
    fn pass_at_k_matches_hand_computed_values() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // 1 - C(n-c, k) / C(n, k), by hand.
        assert!(close(pass_at_k(5, 2, 1), 2.0 / 5.0));
        assert!(close(pass_at_k(5, 2, 2), 1.0 - 3.0 / 10.0));
        assert!(close(pass_at_k(10, 3, 5), 1.0 - 21.0 / 252.0));
        assert!(close(pass_at_k(20, 1, 10), 0.5));
        assert_eq!(pass_at_k(10, 0, 3), 0.0);
        assert_eq!(pass_at_k(4, 3, 2), 1.0); // fewer than k wrong: every k-subset has a right one
        assert_eq!(pass_at_k(4, 4, 4), 1.0);
        // n = k: "any of k".
        assert_eq!((pass_at_k(4, 0, 4), pass_at_k(4, 1, 4)), (0.0, 1.0));
        assert!(pass_at_k(2, 1, 3).is_nan());
    }
}
