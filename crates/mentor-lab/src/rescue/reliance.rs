//! Hint reliance: how much a rescued attempt leans on its hint.
//!
//! For a rescued (passing) hinted attempt with completion tokens `c`, reliance is the mean
//! per-token log-probability of `c` under the *unhinted* prompt minus that under the *hinted*
//! prompt, both teacher-forced at temperature 1 with the no-grad kernels. A level-3 prefix
//! forced before the completion is context on both sides, so only the hint text differs. Near 0:
//! the learner writes that success almost as readily without the hint — training on it moves
//! the unhinted policy. Strongly negative: the success leans on the hint.

use mentor_core::Message;
use mentor_integration::Credit;
use mentor_policy::{Entropy, Kernels, LogProbOptions, Policy};

use super::context::{Cell, Ctx, Problem};
use mentor_trainer::Result;

/// Stage 5: the reliance of every rescued (passing) hinted attempt of `cells`, appended to
/// its cell in attempt order.
pub(super) fn of_rescued(ctx: &Ctx<'_>, problems: &[Problem<'_>], cells: &mut [Vec<Cell>]) -> Result<()> {
    let iv = &ctx.cfg.strategy.intervention;
    let mut rescued_attempts = Vec::new();
    let mut rescued_owners = Vec::new();
    for (k, row_cells) in cells.iter().enumerate() {
        for (p, cell) in row_cells.iter().enumerate() {
            for (j, s) in cell.attempts.iter().enumerate() {
                let Some(hint) = cell.hints.get(j / ctx.g_hint.max(1)) else { continue };
                if !s.attempt.verdict.passed() {
                    continue;
                }
                let task = problems[p].task;
                let prefix = match iv.credit {
                    Credit::Prefix => hint.solution_prefix.clone(),
                    _ => None,
                };
                rescued_attempts.push(Rescued {
                    unhinted: task.prompt.clone(),
                    hinted: iv.hint_format.apply(task, hint),
                    prefix,
                    completion: s.ids.clone(),
                });
                rescued_owners.push((k, p));
            }
        }
    }
    let values = reliance_both(ctx.policy, &rescued_attempts, ctx.cfg.rescue.batch_rows)?;
    for ((k, p), (mean, seq)) in rescued_owners.into_iter().zip(values) {
        cells[k][p].reliance.push(mean);
        cells[k][p].seq_reliance.push(seq);
    }
    Ok(())
}

/// One rescued attempt to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Rescued {
    /// The prompt without the hint.
    pub unhinted: Vec<Message>,
    /// The prompt the attempt was sampled from.
    pub hinted: Vec<Message>,
    /// Text forced before the completion (a level-3 prefix under `prefix` credit).
    pub prefix: Option<String>,
    /// The completion's token ids, as generated.
    pub completion: Vec<u32>,
}

/// Mean and summed per-token log-prob of each `completions[i]` given `prompts[i]`,
/// `batch_rows` rows per pass.
fn mean_logprobs(
    policy: &Policy,
    prompts: &[Vec<u32>],
    completions: &[Vec<u32>],
    batch_rows: usize,
) -> Result<Vec<(f64, f64)>> {
    let opts = LogProbOptions {
        temperature: 1.0,
        entropy: Entropy::Off,
        kernels: Kernels::Fused,
        share_prompts: true,
        staged: false,
    };
    let mut out = Vec::with_capacity(prompts.len());
    let step = batch_rows.max(1);
    for (p, c) in prompts.chunks(step).zip(completions.chunks(step)) {
        let rows: Vec<Vec<f32>> = policy.logprobs(p, c, &opts)?.logprobs.to_vec2::<f32>()?;
        for (row, comp) in rows.iter().zip(c) {
            let n = comp.len();
            let sum: f64 = row.iter().take(n).map(|&x| f64::from(x)).sum();
            out.push((if n > 0 { sum / n as f64 } else { 0.0 }, sum));
        }
    }
    Ok(out)
}

/// Rows per teacher-forced pass: a pass holds the logits of its rows' completion columns
/// (49,152 floats per token on SmolLM2) besides one layer's activations.
const ROWS_PER_PASS: usize = 8;

/// Reliance of each attempt (see the module docs), at most `batch_rows` (and 8) rows per pass.
/// Attempts with an empty completion get 0.
///
/// The passes run on a frozen copy of the policy (its weights detached, one copy of them for
/// the whole call): on the trainable policy the projections record their inputs even under
/// the no-grad kernels, and a pass over 64 few-shot rows held every layer's activations until
/// the process was killed at 24 GB.
/// Besides, the reliance over the whole sequence: the completion's summed log-prob without the
/// hint minus with it (the log ratio of the two sequence probabilities, where the one or two
/// tokens that decide are not diluted). `(per token, per sequence)` per attempt.
pub fn reliance_both(policy: &Policy, attempts: &[Rescued], batch_rows: usize) -> Result<Vec<(f64, f64)>> {
    if attempts.is_empty() {
        return Ok(Vec::new());
    }
    let frozen = policy.frozen_copy()?;
    let policy = &frozen;
    let batch_rows = batch_rows.clamp(1, ROWS_PER_PASS);
    let tok = policy.tokenizer();
    let context = |messages: &[Message], prefix: &Option<String>| -> Result<Vec<u32>> {
        let mut ids = policy.encode_chat(messages)?;
        if let Some(p) = prefix {
            ids.extend(tok.encode(p)?);
        }
        Ok(ids)
    };
    let mut plain = Vec::with_capacity(attempts.len());
    let mut hinted = Vec::with_capacity(attempts.len());
    for a in attempts {
        plain.push(context(&a.unhinted, &a.prefix)?);
        hinted.push(context(&a.hinted, &a.prefix)?);
    }
    let completions: Vec<Vec<u32>> = attempts.iter().map(|a| a.completion.clone()).collect();
    let without = mean_logprobs(policy, &plain, &completions, batch_rows)?;
    let with = mean_logprobs(policy, &hinted, &completions, batch_rows)?;
    Ok(without.iter().zip(&with).map(|(u, h)| (u.0 - h.0, u.1 - h.1)).collect())
}

/// Mean, standard deviation and count of `values` (`None` when empty).
pub fn spread(values: &[f64]) -> Option<[f64; 3]> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    Some([mean, var.sqrt(), n])
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};
    use mentor_policy::Config;
    use mentor_policy::{GenerateConfig, Sampler};

    use super::*;
    use mentor_tasks::curriculum::ALPHABET;

    /// By hand: each token's log-prob from its own one-token teacher-forced pass over the prompt
    /// and the tokens before it, averaged, on each side; and the hinted side also against the
    /// generator's own log-probs (at temperature 1 without truncation, each sampled token's
    /// log-prob given the prompt, computed incrementally with a key/value cache).
    #[test]
    fn reliance_is_the_difference_of_mean_and_summed_token_logprobs() {
        let p =
            Policy::char_level(ALPHABET, Config::tiny(0, 32, 2, 4, 2), 3, DType::F32, &Device::Cpu).unwrap();
        let cfg = GenerateConfig {
            sampler: Sampler { temperature: 1.0, top_p: 1.0, top_k: 0 },
            max_new_tokens: 6,
            ..GenerateConfig::default()
        };
        let (plain, hinted) = (vec![Message::user("12+3=")], vec![Message::user("12+3=H15")]);
        let generated =
            &p.generate_with_row_seeds(&[p.encode_chat(&hinted).unwrap()], &cfg, &[9]).unwrap()[0];
        let ids = generated.token_ids.clone();
        assert!(!ids.is_empty());
        let opts = LogProbOptions {
            temperature: 1.0,
            entropy: Entropy::Off,
            kernels: Kernels::Fused,
            share_prompts: false,
            staged: false,
        };
        let by_hand = |prompt: &[Message]| -> f64 {
            let base = p.encode_chat(prompt).unwrap();
            let mut sum = 0.0;
            for j in 0..ids.len() {
                let context = [base.clone(), ids[..j].to_vec()].concat();
                let lp = p
                    .logprobs(&[context], &[vec![ids[j]]], &opts)
                    .unwrap()
                    .logprobs
                    .to_vec2::<f32>()
                    .unwrap();
                sum += f64::from(lp[0][0]);
            }
            sum
        };
        let mean_generated =
            generated.logprobs.iter().map(|&x| f64::from(x)).sum::<f64>() / generated.logprobs.len() as f64;
        let n = ids.len() as f64;
        let (u, h) = (by_hand(&plain), by_hand(&hinted));
        assert!((h / n - mean_generated).abs() < 1e-4, "{h} vs {mean_generated}");
        let r = reliance_both(
            &p,
            &[Rescued {
                unhinted: plain.clone(),
                hinted: hinted.clone(),
                prefix: None,
                completion: ids.clone(),
            }],
            4,
        )
        .unwrap();
        assert!((r[0].0 - (u - h) / n).abs() < 1e-4, "{r:?} vs {}", (u - h) / n);
        assert!((r[0].1 - (u - h)).abs() < 1e-3, "{r:?} vs {}", u - h);
        assert!(r[0].0.abs() > 1e-6, "the two prompts differ, so do the log-probs");
        // A hint that is no hint: reliance 0.
        let same = reliance_both(
            &p,
            &[Rescued { unhinted: plain.clone(), hinted: plain, prefix: Some("1".into()), completion: ids }],
            4,
        )
        .unwrap();
        assert!(same[0].0.abs() < 1e-9 && same[0].1.abs() < 1e-9, "{same:?}");
    }

    #[test]
    fn spread_is_mean_sd_and_count() {
        assert_eq!(spread(&[]), None);
        let s = spread(&[1.0, 3.0]).unwrap();
        assert_eq!(s, [2.0, 1.0, 2.0]);
    }
}
