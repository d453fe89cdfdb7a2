//! Batched generation: padding independence, seeding, stops, and agreement with log-probs.

use candle_core::DType;
use mentor_policy::{GenerateConfig, Kernels, LogProbOptions, Sampler, StopCondition};

use crate::tiny;

fn prompts(p: &mentor_policy::Policy) -> Vec<Vec<u32>> {
    ["1+1=", "(12*3)-4=", "abc", "99/3=", "x"].iter().map(|s| p.tokenizer().encode(s).unwrap()).collect()
}

#[test]
fn batched_left_padded_greedy_equals_one_at_a_time() {
    let p = tiny(DType::F32, 11);
    let cfg = GenerateConfig { sampler: Sampler::greedy(), max_new_tokens: 12, ..GenerateConfig::default() };
    let ps = prompts(&p);
    let batched = p.generate(&ps, &cfg).unwrap();
    for (i, prompt) in ps.iter().enumerate() {
        let alone = p.generate(std::slice::from_ref(prompt), &cfg).unwrap().remove(0);
        assert_eq!(batched[i].token_ids, alone.token_ids, "row {i}");
        for (a, b) in batched[i].logprobs.iter().zip(&alone.logprobs) {
            assert!((a - b).abs() < 1e-4, "row {i}: {a} vs {b}");
        }
    }
}

#[test]
fn rows_that_stop_early_leave_the_batch_without_changing_the_others() {
    // Finished rows are dropped from the batch and its KV cache once enough of them are done:
    // the rows still running must produce what they produce alone.
    let p = tiny(DType::F32, 11);
    let ps = prompts(&p);
    let free = GenerateConfig { sampler: Sampler::greedy(), max_new_tokens: 12, ..GenerateConfig::default() };
    let full = p.generate(&ps, &free).unwrap();
    // A stop id that row 2 generates first and not every row does, so rows end at different
    // steps (this tiny model repeats one token per row).
    let stop_ids = vec![full[2].token_ids[0]];
    assert!(full.iter().any(|g| !g.token_ids.contains(&stop_ids[0])));
    let cfg = GenerateConfig { stop_ids: stop_ids.clone(), ..free };
    let batched = p.generate(&ps, &cfg).unwrap();
    let lens: std::collections::BTreeSet<usize> = batched.iter().map(|g| g.token_ids.len()).collect();
    assert!(lens.len() >= 2, "rows should stop at different steps: {lens:?}");
    assert_eq!(batched[2].finish_reason, StopCondition::Stop);
    for (i, prompt) in ps.iter().enumerate() {
        let alone = p.generate(std::slice::from_ref(prompt), &cfg).unwrap().remove(0);
        assert_eq!(batched[i].token_ids, alone.token_ids, "row {i}");
        assert_eq!(batched[i].finish_reason, alone.finish_reason, "row {i}");
        for (a, b) in batched[i].logprobs.iter().zip(&alone.logprobs) {
            assert!((a - b).abs() < 1e-4, "row {i}: {a} vs {b}");
        }
    }
}

#[test]
fn same_seed_same_samples_other_seed_differs() {
    let p = tiny(DType::F32, 12);
    let ps = prompts(&p);
    let cfg = |seed| GenerateConfig {
        sampler: Sampler { temperature: 1.5, top_p: 0.95, top_k: 20 },
        max_new_tokens: 16,
        seed,
        ..GenerateConfig::default()
    };
    let a = p.generate(&ps, &cfg(5)).unwrap();
    let b = p.generate(&ps, &cfg(5)).unwrap();
    let c = p.generate(&ps, &cfg(6)).unwrap();
    assert_eq!(a, b);
    assert_ne!(
        a.iter().map(|g| &g.token_ids).collect::<Vec<_>>(),
        c.iter().map(|g| &g.token_ids).collect::<Vec<_>>()
    );
    for g in &a {
        assert_eq!(g.token_ids.len(), g.logprobs.len());
        assert!(g.logprobs.iter().all(|l| l.is_finite() && *l <= 0.0));
    }
}

#[test]
fn sampling_logprobs_equal_differentiable_logprobs() {
    // The KV-cache path (fused kernels) and the full-sequence training path must agree.
    let p = tiny(DType::F32, 13);
    let ps = prompts(&p);
    let temperature = 0.7;
    let cfg = GenerateConfig {
        sampler: Sampler { temperature, top_p: 1.0, top_k: 0 },
        max_new_tokens: 10,
        seed: 1,
        ..GenerateConfig::default()
    };
    let gens = p.generate(&ps, &cfg).unwrap();
    let completions: Vec<Vec<u32>> = gens.iter().map(|g| g.token_ids.clone()).collect();
    let opts = LogProbOptions {
        temperature,
        entropy: mentor_policy::Entropy::Off,
        kernels: Kernels::Differentiable,
        ..LogProbOptions::default()
    };
    let lp = p.logprobs(&ps, &completions, &opts).unwrap().logprobs.to_vec2::<f32>().unwrap();
    for (r, g) in gens.iter().enumerate() {
        for (j, want) in g.logprobs.iter().enumerate() {
            assert!((lp[r][j] - want).abs() < 1e-4, "row {r} token {j}: {} vs {want}", lp[r][j]);
        }
        assert!(lp[r][g.logprobs.len()..].iter().all(|x| *x == 0.0), "padding is masked to 0");
    }
}

#[test]
fn stop_ids_stop_strings_and_length() {
    let p = tiny(DType::F32, 14);
    let ps = prompts(&p);
    let greedy =
        GenerateConfig { sampler: Sampler::greedy(), max_new_tokens: 8, ..GenerateConfig::default() };
    let free = p.generate(&ps[..1], &greedy).unwrap().remove(0);
    assert_eq!(free.finish_reason, StopCondition::Length);
    assert_eq!(free.token_ids.len(), 8);
    // Make the third generated token a stop id: generation ends there and drops it from text.
    let stop = free.token_ids[2];
    let first = free.token_ids.iter().position(|t| *t == stop).unwrap();
    let cfg = GenerateConfig { stop_ids: vec![stop], ..greedy.clone() };
    let g = p.generate(&ps[..1], &cfg).unwrap().remove(0);
    assert_eq!(g.finish_reason, StopCondition::Stop);
    assert_eq!(g.token_ids, free.token_ids[..=first]);
    assert_eq!(g.text, p.tokenizer().decode(&free.token_ids[..first], true).unwrap());
    // A stop string made of the 2nd and 3rd characters cuts the text before them.
    let text = p.tokenizer().decode(&free.token_ids, true).unwrap();
    let chars: Vec<char> = text.chars().collect();
    let needle: String = chars[1..3].iter().collect();
    let cut = text.find(&needle).unwrap();
    let cfg = GenerateConfig { stop_strings: vec![needle], ..greedy };
    let g = p.generate(&ps[..1], &cfg).unwrap().remove(0);
    assert_eq!(g.finish_reason, StopCondition::StopString);
    assert_eq!(g.text, text[..cut]);
    assert!(g.token_ids.len() <= 3);
}

#[test]
fn bad_requests_are_errors() {
    let p = tiny(DType::F32, 15);
    let cfg = GenerateConfig::default();
    assert!(p.generate(&[vec![]], &cfg).is_err());
    assert!(p.generate(&[vec![10_000]], &cfg).is_err());
    let bad = GenerateConfig { sampler: Sampler { temperature: f64::NAN, top_p: 1.0, top_k: 0 }, ..cfg };
    assert!(p.generate(&[vec![5]], &bad).is_err());
    assert!(p.logprobs(&[vec![5]], &[], &LogProbOptions::default()).is_err());
    assert!(p.logprobs(&[vec![]], &[vec![5]], &LogProbOptions::default()).is_err());
}

#[test]
fn shared_prefix_prefill_changes_nothing_but_rounding() {
    // Prompts with a common start (as a system prompt gives), repeated prompts (as a GRPO
    // group gives), a prompt that is a prefix of another and different lengths.
    let p = tiny(DType::F32, 13);
    let texts = ["Q: 1+1=", "Q: 1+1=", "Q: (12*3)-4=", "Q: 1+1=", "Q: 9", "Q: 1+1=?", "Q: (12*3)-4="];
    let ps: Vec<Vec<u32>> = texts.iter().map(|s| p.tokenizer().encode(s).unwrap()).collect();
    for sampler in [Sampler::greedy(), Sampler { temperature: 1.0, top_p: 1.0, top_k: 0 }] {
        let shared = GenerateConfig {
            sampler: sampler.clone(),
            max_new_tokens: 10,
            seed: 5,
            ..GenerateConfig::default()
        };
        assert!(shared.share_prefix, "sharing is the default");
        let full = GenerateConfig { share_prefix: false, ..shared.clone() };
        let (a, b) = (p.generate(&ps, &shared).unwrap(), p.generate(&ps, &full).unwrap());
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x.token_ids, y.token_ids, "row {i}, {sampler:?}");
            for (l, m) in x.logprobs.iter().zip(&y.logprobs) {
                assert!((l - m).abs() < 1e-4, "row {i}: {l} vs {m}");
            }
        }
        if sampler.temperature == 0.0 {
            for (i, prompt) in ps.iter().enumerate() {
                let alone = p.generate(std::slice::from_ref(prompt), &shared).unwrap().remove(0);
                assert_eq!(a[i].token_ids, alone.token_ids, "row {i}");
            }
        }
    }
}
