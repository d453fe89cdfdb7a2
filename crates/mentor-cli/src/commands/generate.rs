//! `mentor generate`: one completion from a model, as text or one JSON line.
//!
//! Loads the model (CPU, f32), encodes the prompt (with `--chat`, as a user message through the
//! model's chat template, with the template's default system prompt), generates, and prints
//! the text or [`GenerateOutput`].

use anyhow::{Context, Result};
use mentor_core::Message;
use mentor_policy::{GenerateConfig, HubOptions, LoadOptions, ModelSource, Policy, Sampler, StopCondition};
use serde::{Deserialize, Serialize};

pub use crate::cli::GenerateArgs;

/// What `mentor generate --json` prints (one line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateOutput {
    /// The completion text.
    pub text: String,
    /// The generated ids (prompt excluded).
    pub token_ids: Vec<u32>,
    /// Which stop condition ended the completion.
    pub finish_reason: StopCondition,
}

/// Runs `mentor generate`.
pub fn run(args: &GenerateArgs) -> Result<()> {
    let hub = HubOptions::from_env(|k| std::env::var(k).ok());
    let out = generate_once(args, &hub).with_context(|| {
        format!("cannot generate with `{}`\nhint: pass a Hub repo id, a model directory or a .gguf file (`cargo xtask setup` installs SmolLM2's GGUF under $MENTOR_HOME/models)", args.model)
    })?;
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
    } else {
        println!("{}", out.text);
    }
    eprintln!("{} tokens, finish reason {:?}", out.token_ids.len(), out.finish_reason);
    Ok(())
}

/// Loads `args.model` on CPU in f32 and generates.
fn generate_once(args: &GenerateArgs, hub: &HubOptions) -> mentor_policy::Result<GenerateOutput> {
    let opts = LoadOptions { hub: hub.clone(), ..LoadOptions::default() };
    let policy = Policy::load(&ModelSource::parse(&args.model), &opts)?;
    generate_with(&policy, args)
}

/// [`generate_once`] with an already loaded policy (`args.model` is ignored).
fn generate_with(policy: &Policy, args: &GenerateArgs) -> mentor_policy::Result<GenerateOutput> {
    let ids = if args.chat {
        policy.encode_chat(&[Message::user(args.prompt.clone())])?
    } else {
        policy.tokenizer().encode(&args.prompt)?
    };
    let cfg = GenerateConfig {
        sampler: Sampler { temperature: args.temperature, top_p: 1.0, top_k: 0 },
        max_new_tokens: args.max_new_tokens,
        seed: args.seed,
        ..GenerateConfig::default()
    };
    let g = policy
        .generate(&[ids], &cfg)?
        .into_iter()
        .next()
        .ok_or_else(|| mentor_policy::Error::InvalidRequest("generation returned no row".into()))?;
    Ok(GenerateOutput { text: g.text, token_ids: g.token_ids, finish_reason: g.finish_reason })
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};
    use mentor_policy::Config;

    use super::*;

    #[test]
    fn generate_loads_a_directory_and_reports_json() {
        let p =
            Policy::char_level("0123456789+= ", Config::tiny(0, 32, 2, 4, 2), 16, DType::F32, &Device::Cpu)
                .unwrap();
        let dir = tempfile::tempdir().unwrap();
        p.save(dir.path()).unwrap();
        let args = GenerateArgs {
            model: dir.path().to_str().unwrap().to_string(),
            prompt: "2+2=".into(),
            chat: true,
            max_new_tokens: 5,
            temperature: 0.0,
            seed: 3,
            json: true,
        };
        let out = generate_once(&args, &HubOptions::default()).unwrap();
        // The tiny model's template concatenates contents, so the chat prompt is the text itself.
        let ids = p.encode_chat(&[Message::user("2+2=")]).unwrap();
        assert_eq!(ids, p.tokenizer().encode("2+2=").unwrap());
        let cfg =
            GenerateConfig { sampler: Sampler::greedy(), max_new_tokens: 5, ..GenerateConfig::default() };
        let want = p.generate(&[ids], &cfg).unwrap().remove(0);
        assert_eq!(
            (out.token_ids.clone(), out.text.clone(), out.finish_reason),
            (want.token_ids, want.text, want.finish_reason)
        );
        let json: serde_json::Value = serde_json::to_value(&out).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 3);
        assert!(json["finish_reason"] == "length" || json["finish_reason"] == "stop");
    }
}
