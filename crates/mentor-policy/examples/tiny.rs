//! A from-scratch char-level policy learns to answer one-digit additions with a few AdamW
//! steps on its differentiable log-probs, then samples and saves a checkpoint.
//!
//! Run: `cargo run -p mentor-policy --example tiny` (offline, seconds on CPU).

use candle_core::{DType, Device};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use mentor_policy::Config;
use mentor_policy::{GenerateConfig, LogProbOptions, Policy, Sampler};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let policy =
        Policy::char_level("0123456789+=\n", Config::tiny(0, 64, 2, 4, 2), 0, DType::F32, &Device::Cpu)?;
    println!("{} parameters, vocab {}", policy.num_params(), policy.config().vocab_size);
    let tok = policy.tokenizer();
    let eos = tok.stop_ids()[0];
    let mut prompts = vec![];
    let mut answers = vec![];
    for a in 0..5u32 {
        for b in 0..5u32 {
            prompts.push(tok.encode(&format!("{a}+{b}="))?);
            let mut ans = tok.encode(&(a + b).to_string())?;
            ans.push(eos);
            answers.push(ans);
        }
    }
    let mut opt = AdamW::new(
        policy.vars().into_iter().map(|(_, v)| v).collect(),
        ParamsAdamW { lr: 3e-3, weight_decay: 0.0, ..ParamsAdamW::default() },
    )?;
    for step in 0..=60 {
        let out = policy.logprobs(&prompts, &answers, &LogProbOptions::default())?;
        let tokens = out.mask.sum_all()?;
        let nll = (out.logprobs.sum_all()?.neg()? / tokens.to_scalar::<f32>()? as f64)?;
        if step % 20 == 0 {
            println!("step {step:>2}: mean NLL per answer token {:.3}", nll.to_scalar::<f32>()?);
        }
        opt.backward_step(&nll)?;
    }
    let cfg = GenerateConfig { sampler: Sampler::greedy(), max_new_tokens: 4, ..GenerateConfig::default() };
    let out = policy.generate(&prompts[..6], &cfg)?;
    for (p, g) in prompts.iter().zip(&out) {
        println!("{}{:?} ({:?})", tok.decode(p, true)?, g.text, g.finish_reason);
    }
    let dir = std::env::temp_dir().join("mentor-policy-tiny-example");
    policy.save(&dir)?;
    println!("checkpoint saved to {}", dir.display());
    Ok(())
}
