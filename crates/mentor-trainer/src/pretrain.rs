//! Supervised pretraining of the tiny model on the curriculum, and the probe that shows what
//! it learned: plain problems at the easy levels, and *hinted* problems (a hint marker plus
//! the first reference lines given as the start of the answer) up to the hard level.
//!
//! This is what gives RL something to unlock: after pretraining, the model solves hard
//! problems only when part of the worked solution is in its context, and not at all on its
//! own (the probe prints both). Vanilla GRPO then sees all-zero groups at the hard level;
//! a mentor that supplies the lines up to the first wrong one turns them into successes.

use mentor_core::{Hint, HintLevel, HintSource, Verifier};
use mentor_grpo::{sft, LrSchedulerType, Optimizer, OptimizerConfig};
use mentor_integration::HintFormat;
use mentor_policy::{GenerateConfig, LogProbOptions, Policy, Sampler};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::config::{CurriculumSection, PretrainSection};
use crate::error::Result;
use crate::seed::mix;
use mentor_tasks::curriculum::{Problem, Tens};

/// One supervised example: prompt ids (including any given answer start) and target ids.
struct Example {
    prompt: Vec<u32>,
    target: Vec<u32>,
}

/// The hint text of hinted examples: the mentor's level-3 text, which marks a context whose
/// answer starts with given reference lines. (The static baseline's generic texts are taught
/// only through `pretrain.static_fraction`, before plain problems, never with given lines.)
pub fn hint_texts(prompts: &mentor_agents::Prompts) -> Vec<String> {
    prompts.render_hint(mentor_core::Domain::Math, 3).into_iter().collect()
}

/// The hint texts pretraining shows: the mentor's level-3 text (a marker before given lines)
/// and the static baseline's generic texts (shown with no lines).
struct Texts {
    hinted: Vec<String>,
    statics: Vec<String>,
}

impl Texts {
    fn new(prompts: &mentor_agents::Prompts) -> Self {
        Self {
            hinted: hint_texts(prompts),
            statics: prompts.static_hints(mentor_core::Domain::Math).to_vec(),
        }
    }
}

fn example(
    policy: &Policy,
    cfg: &PretrainSection,
    curriculum: &CurriculumSection,
    texts: &Texts,
    format: &HintFormat,
    rng: &mut StdRng,
) -> Result<Example> {
    let tok = policy.tokenizer();
    let eos = tok.stop_ids().first().copied().unwrap_or(0);
    let hinted = !texts.hinted.is_empty() && rng.random_bool(cfg.hinted_fraction);
    // A static-hinted example is drawn from the plain share (no draw at all when there are
    // none, so configs without them keep their examples).
    let plain_share = 1.0 - cfg.hinted_fraction;
    let statics = !hinted
        && cfg.static_fraction > 0.0
        && !texts.statics.is_empty()
        && rng.random_bool((cfg.static_fraction / plain_share).min(1.0));
    let levels = if hinted { &cfg.hinted_levels } else { &cfg.unhinted_levels };
    let level = levels[rng.random_range(0..levels.len())];
    // With ten columns withheld, no ten line is ever a target: plain examples hold none,
    // hinted ones at most one, always inside the given lines.
    let withheld = !curriculum.ten_levels.is_empty();
    let tens = match (withheld, hinted) {
        (false, _) => Tens::Any,
        (true, false) => Tens::None,
        (true, true) => Tens::AtMostOne,
    };
    let p = Problem::draw_with(level, curriculum.operands_at(level), tens, rng);
    let task = p.task("pretrain", level);
    let (prompt_msgs, given, rest) = if hinted {
        let steps = p.steps();
        let first = p.ten_steps().first().map_or(1, |&c| c + 1);
        let k = rng.random_range(first..=steps.len());
        let given = steps[..k].join("\n");
        let rest = p.solution()[given.len()..].to_string();
        let text = texts.hinted[rng.random_range(0..texts.hinted.len())].clone();
        let hint = Hint {
            level: HintLevel::PARTIAL_SOLUTION,
            text,
            solution_prefix: Some(given.clone()),
            source: HintSource::Mentor,
        };
        (format.apply(&task, &hint), given, rest)
    } else if statics {
        let text = texts.statics[rng.random_range(0..texts.statics.len())].clone();
        let hint = Hint { level: HintLevel::NUDGE, text, solution_prefix: None, source: HintSource::Static };
        (format.apply(&task, &hint), String::new(), p.solution())
    } else {
        (task.prompt.clone(), String::new(), p.solution())
    };
    let mut prompt = policy.encode_chat(&prompt_msgs)?;
    prompt.extend(tok.encode(&given)?);
    let mut target = tok.encode(&rest)?;
    target.push(eos);
    Ok(Example { prompt, target })
}

/// Summed negative log-likelihood of the examples' targets.
/// Each example is laid out as one sequence (prompt then target) after its first token, so
/// the batch is padded to its longest *sequence*, not to the longest prompt plus the longest
/// target; prompt positions are masked out of the loss.
fn batch_loss(policy: &Policy, batch: Vec<Example>) -> Result<candle_core::Tensor> {
    let mut firsts = Vec::with_capacity(batch.len());
    let mut rests = Vec::with_capacity(batch.len());
    let mut masks = Vec::with_capacity(batch.len());
    for e in batch {
        let mut seq = e.prompt;
        let given = seq.len() - 1;
        seq.extend_from_slice(&e.target);
        firsts.push(vec![seq[0]]);
        rests.push(seq[1..].to_vec());
        masks.push((0..seq.len() - 1).map(|i| if i >= given { 1f32 } else { 0.0 }).collect::<Vec<f32>>());
    }
    let width = rests.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let flat: Vec<f32> = masks
        .into_iter()
        .flat_map(|mut m| {
            m.resize(width, 0.0);
            m
        })
        .collect();
    let out = policy.logprobs(&firsts, &rests, &LogProbOptions::default())?;
    let mask = candle_core::Tensor::from_vec(flat, (firsts.len(), width), out.logprobs.device())?;
    Ok(sft::nll_sum(&out.logprobs, &mask)?)
}

/// Where pretraining's examples come from: its settings, the curriculum's problems, the hint
/// texts and their format.
#[derive(Clone, Copy)]
pub struct Corpus<'a> {
    /// `[pretrain]`.
    pub cfg: &'a PretrainSection,
    /// The curriculum the problems are drawn from.
    pub curriculum: &'a CurriculumSection,
    /// The hint and static-hint texts.
    pub prompts: &'a mentor_agents::Prompts,
    /// How a hint is placed in a prompt.
    pub format: &'a HintFormat,
}

/// Progress callback: `(step, steps, loss)`.
pub type OnStep<'a> = &'a mut dyn FnMut(usize, usize, f64);

/// Trains `policy` on `cfg.steps` batches drawn from `seed`. Returns the mean loss of the
/// last 20 steps.
pub fn pretrain(policy: &Policy, corpus: &Corpus<'_>, seed: u64, on_step: OnStep<'_>) -> Result<f64> {
    let Corpus { cfg, curriculum, format, .. } = *corpus;
    let texts = Texts::new(corpus.prompts);
    let vars: Vec<_> = policy.vars().into_iter().map(|(_, v)| v).collect();
    let opt_cfg = OptimizerConfig {
        learning_rate: cfg.learning_rate,
        lr_scheduler_type: LrSchedulerType::Cosine,
        warmup_steps: cfg.warmup,
        max_grad_norm: 1.0,
        ..OptimizerConfig::default()
    };
    let mut opt = Optimizer::new(vars, &opt_cfg, cfg.steps)?;
    let shards = shards(cfg);
    let mut recent = std::collections::VecDeque::new();
    for step in 0..cfg.steps {
        let mut rng = StdRng::seed_from_u64(mix(&[seed, 0x9e7, step as u64]));
        let batch: Vec<Example> = (0..cfg.batch)
            .map(|_| example(policy, cfg, curriculum, &texts, format, &mut rng))
            .collect::<Result<_>>()?;
        // Mean target NLL over the batch, in `shards` data-parallel pieces.
        let tokens: f64 = batch.iter().map(|e| e.target.len() as f64).sum();
        let pieces = sft::shard(batch, shards);
        let (l, mut grads) =
            sft::sharded_gradients(pieces, tokens, opt.vars(), |piece| batch_loss(policy, piece))?;
        opt.step(&mut grads)?;
        recent.push_back(l);
        if recent.len() > 20 {
            recent.pop_front();
        }
        on_step(step + 1, cfg.steps, l);
    }
    Ok(recent.iter().sum::<f64>() / recent.len().max(1) as f64)
}

/// The longest of `n` pretraining examples drawn as [`pretrain`] draws them (its first
/// step's stream), in tokens (prompt and target): the sequence length the memory estimate
/// counts for pretraining.
pub fn longest_example(policy: &Policy, corpus: &Corpus<'_>, seed: u64, n: usize) -> Result<usize> {
    let Corpus { cfg, curriculum, format, .. } = *corpus;
    let texts = Texts::new(corpus.prompts);
    let mut rng = StdRng::seed_from_u64(mix(&[seed, 0x9e7, 0]));
    let mut longest = 0;
    for _ in 0..n {
        let e = example(policy, cfg, curriculum, &texts, format, &mut rng)?;
        longest = longest.max(e.prompt.len().saturating_add(e.target.len()));
    }
    Ok(longest)
}

/// Examples per step computed in parallel (`pretrain.shards`, 0: one per core).
pub fn shards(cfg: &PretrainSection) -> usize {
    if cfg.shards > 0 {
        cfg.shards
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// What a probe row gives the model after the hint marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "lines")]
pub enum ProbeCut {
    /// The first `n` reference lines (0: a plain problem, no marker).
    Lines(usize),
    /// The lines before the problem's ten column (it must write that line itself).
    BeforeTen,
    /// The lines up to and including the ten column.
    ThroughTen,
    /// One of the static baseline's generic hints (a different one per problem, in turn),
    /// and no line.
    Static,
}

impl ProbeCut {
    /// The number of lines given for `p`, whose steps are `steps`.
    fn lines(self, p: &Problem, steps: usize) -> usize {
        let ten = p.ten_steps().first().copied();
        match self {
            ProbeCut::Lines(n) => n.min(steps),
            ProbeCut::BeforeTen => ten.unwrap_or(0),
            ProbeCut::ThroughTen => ten.map_or(0, |c| c + 1),
            ProbeCut::Static => 0,
        }
    }
}

impl std::fmt::Display for ProbeCut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeCut::Lines(0) => write!(f, "no hint"),
            ProbeCut::Lines(1) => write!(f, "1 reference line given"),
            ProbeCut::Lines(n) => write!(f, "{n} reference lines given"),
            ProbeCut::BeforeTen => write!(f, "the lines before the ten column given"),
            ProbeCut::ThroughTen => write!(f, "the lines through the ten column given"),
            ProbeCut::Static => write!(f, "a static hint, no line"),
        }
    }
}

/// One row of the pretraining probe.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeRow {
    /// Level.
    pub level: u32,
    /// What was given after the hint marker.
    pub cut: ProbeCut,
    /// Greedy accuracy.
    pub accuracy: f64,
    /// Accuracy of one sample per problem at the training temperature.
    pub sampled: f64,
    /// Of the greedy failures, the share whose first wrong line is the problem's ten column
    /// (`None`: no failure, or no ten column).
    pub fail_at_ten: Option<f64>,
}

/// Index of the first line of `text` that differs from the reference `steps` (the answer line
/// counts as one more step); `None` if the text reproduces them all.
fn first_wrong_line(steps: &[String], answer_line: &str, text: &str) -> Option<usize> {
    let want = steps.iter().map(String::as_str).chain(std::iter::once(answer_line));
    let mut got = text.lines();
    want.enumerate().find(|(_, w)| got.next() != Some(*w)).map(|(i, _)| i)
}

/// Greedy (and sampled) accuracy at each level under each cut.
#[allow(clippy::too_many_arguments)]
pub fn probe(
    policy: &Policy,
    curriculum: &CurriculumSection,
    prompts: &mentor_agents::Prompts,
    format: &HintFormat,
    levels: &[u32],
    cuts: &[ProbeCut],
    problems: usize,
    seed: u64,
    max_new_tokens: usize,
    temperature: f64,
) -> Result<Vec<ProbeRow>> {
    let verifier = mentor_verify_math::MathVerifier::default();
    let text = prompts.render_hint(mentor_core::Domain::Math, 3).unwrap_or_else(|| "continue".into());
    let statics = prompts.static_hints(mentor_core::Domain::Math);
    let greedy = GenerateConfig { sampler: Sampler::greedy(), max_new_tokens, ..GenerateConfig::default() };
    let sampled = GenerateConfig {
        sampler: Sampler { temperature, ..Sampler::greedy() },
        max_new_tokens,
        seed: mix(&[seed, 0x5a4b]),
        ..GenerateConfig::default()
    };
    let mut rows = Vec::new();
    for &level in levels {
        let mut rng = StdRng::seed_from_u64(mix(&[seed, 0x9b0be, u64::from(level)]));
        let ps: Vec<Problem> = (0..problems).map(|_| curriculum.draw(level, &mut rng)).collect();
        let has_ten = ps.iter().any(|p| !p.ten_steps().is_empty());
        for &cut in cuts {
            if matches!(cut, ProbeCut::BeforeTen | ProbeCut::ThroughTen) && !has_ten
                || cut == ProbeCut::Static && statics.is_empty()
            {
                continue;
            }
            let mut ids = Vec::with_capacity(ps.len());
            let mut starts = Vec::with_capacity(ps.len());
            for p in &ps {
                let task = p.task("probe", level);
                let steps = p.steps();
                let k = cut.lines(p, steps.len());
                let start = steps[..k].join("\n");
                let msgs = if cut == ProbeCut::Lines(0) {
                    task.prompt.clone()
                } else if cut == ProbeCut::Static {
                    let hint = Hint {
                        level: HintLevel::NUDGE,
                        text: statics[ids.len() % statics.len()].clone(),
                        solution_prefix: None,
                        source: HintSource::Static,
                    };
                    format.apply(&task, &hint)
                } else {
                    let hint = Hint {
                        level: HintLevel::PARTIAL_SOLUTION,
                        text: text.clone(),
                        solution_prefix: Some(start.clone()),
                        source: HintSource::Mentor,
                    };
                    format.apply(&task, &hint)
                };
                let mut x = policy.encode_chat(&msgs)?;
                x.extend(policy.tokenizer().encode(&start)?);
                ids.push(x);
                starts.push((task, start, *p));
            }
            let passed = |gens: &[mentor_policy::Generation]| -> Vec<bool> {
                gens.iter()
                    .zip(&starts)
                    .map(|(g, (task, start, _))| {
                        verifier
                            .verify(task, &format!("{start}{}", g.text))
                            .map(|v| v.passed())
                            .unwrap_or(false)
                    })
                    .collect()
            };
            let g = policy.generate(&ids, &greedy)?;
            let ok = passed(&g);
            let s = policy.generate(&ids, &sampled)?;
            let sampled_ok = passed(&s).into_iter().filter(|&b| b).count();
            let (mut failed, mut at_ten) = (0usize, 0usize);
            for ((gen, (_, start, p)), ok) in g.iter().zip(&starts).zip(&ok) {
                let Some(&ten) = p.ten_steps().first() else { continue };
                if *ok {
                    continue;
                }
                failed += 1;
                let full = format!("{start}{}", gen.text);
                if first_wrong_line(&p.steps(), &format!("A:{}", p.answer()), &full) == Some(ten) {
                    at_ten += 1;
                }
            }
            let n = ps.len().max(1) as f64;
            rows.push(ProbeRow {
                level,
                cut,
                accuracy: ok.iter().filter(|&&b| b).count() as f64 / n,
                sampled: sampled_ok as f64 / n,
                fail_at_ten: (failed > 0).then(|| at_ten as f64 / failed as f64),
            });
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_wrong_line_counts_the_answer_as_a_step() {
        let steps = vec!["7+8+0=15".to_string(), "5+6+1=12".to_string()];
        let answer = "A:521";
        assert_eq!(first_wrong_line(&steps, answer, "7+8+0=15\n5+6+1=12\nA:521"), None);
        assert_eq!(first_wrong_line(&steps, answer, "7+8+0=15\n5+6+1=11\nA:511"), Some(1));
        assert_eq!(first_wrong_line(&steps, answer, "7+8+0=15\n5+6+1=12\nA:52"), Some(2));
        assert_eq!(first_wrong_line(&steps, answer, "7+8+0=15"), Some(1), "stopping early");
    }

    #[test]
    fn static_examples_show_a_static_text_and_target_a_whole_solution_without_a_ten() {
        use candle_core::{DType, Device};
        use mentor_policy::Config;
        use mentor_tasks::curriculum::ALPHABET;
        let policy =
            Policy::char_level(ALPHABET, Config::tiny(0, 32, 2, 4, 2), 7, DType::F32, &Device::Cpu).unwrap();
        let prompts = mentor_agents::Prompts::with_hints(
            crate::train::arms::CURRICULUM_HINTS,
            crate::train::arms::CURRICULUM_STATIC_HINTS,
        )
        .unwrap();
        let texts = Texts::new(&prompts);
        let format = HintFormat::new("{prompt}{hint}").unwrap();
        let curriculum = CurriculumSection { ten_levels: vec![4], ..CurriculumSection::default() };
        let all_static = PretrainSection {
            hinted_fraction: 0.0,
            static_fraction: 1.0,
            unhinted_levels: vec![4],
            ..PretrainSection::default()
        };
        let tok = policy.tokenizer();
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..20 {
            let e = example(&policy, &all_static, &curriculum, &texts, &format, &mut rng).unwrap();
            let prompt = tok.decode(&e.prompt, false).unwrap();
            let target = tok.decode(&e.target, true).unwrap();
            assert!(texts.statics.iter().any(|t| prompt.contains(t.as_str())), "{prompt:?}");
            assert!(target.contains("A:") && !target.contains("=10\n"), "{target:?}");
        }
        // With no static share, a plain example's prompt carries no hint at all.
        let none = PretrainSection { static_fraction: 0.0, ..all_static };
        let e = example(&policy, &none, &curriculum, &texts, &format, &mut rng).unwrap();
        assert!(!tok.decode(&e.prompt, false).unwrap().contains('H'));
    }

    #[test]
    fn probe_cuts_are_counted_from_the_ten_column() {
        // 1234+1272: 4+2+0=6, 3+7+0=10 (the ten column, step 1), 2+2+1=5, 1+1+0=2.
        let p = Problem { a: 1234, b: 1272 };
        assert_eq!(p.ten_steps(), vec![1]);
        let n = p.steps().len();
        assert_eq!(ProbeCut::BeforeTen.lines(&p, n), 1);
        assert_eq!(ProbeCut::ThroughTen.lines(&p, n), 2);
        assert_eq!(ProbeCut::Lines(3).lines(&p, n), 3);
        assert_eq!(ProbeCut::Lines(9).lines(&p, n), n, "capped at the steps");
        // Without a ten column, neither ten cut gives a line.
        let q = Problem { a: 1111, b: 2222 };
        assert_eq!((ProbeCut::BeforeTen.lines(&q, 4), ProbeCut::ThroughTen.lines(&q, 4)), (0, 0));
    }
}
