//! The library half of `mentor generate`: load a model, encode one prompt (optionally through
//! the model's chat template, as a user message with the template's default system prompt),
//! generate, and return what the CLI prints. The CLI itself (argument parsing, printing,
//! reading `HF_*` variables into [`HubOptions`]) lives in `mentor-trainer`.

use serde::{Deserialize, Serialize};

use crate::chat_template::Message;
use crate::error::Result;
use crate::generate::{FinishReason, GenerateConfig};
use crate::policy::{LoadOptions, Policy};
use crate::sampling::Sampler;
use crate::source::{HubOptions, ModelSource};

/// Arguments of `mentor generate`.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateArgs {
    /// Hub repo id, local directory or GGUF path ([`ModelSource::parse`]).
    pub model: String,
    /// The prompt text.
    pub prompt: String,
    /// Render the prompt as a user message through the model's chat template.
    pub chat: bool,
    /// Upper bound on generated tokens.
    pub max_new_tokens: usize,
    /// Sampling temperature; 0 is greedy.
    pub temperature: f64,
    /// RNG seed.
    pub seed: u64,
}

/// What `mentor generate --json` prints (one line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateOutput {
    /// The completion text.
    pub text: String,
    /// The generated ids (prompt excluded).
    pub token_ids: Vec<u32>,
    /// Why generation stopped.
    pub finish_reason: FinishReason,
}

/// Runs `mentor generate` on CPU in f32.
pub fn generate_once(args: &GenerateArgs, hub: &HubOptions) -> Result<GenerateOutput> {
    let opts = LoadOptions { hub: hub.clone(), ..LoadOptions::default() };
    let policy = Policy::load(&ModelSource::parse(&args.model), &opts)?;
    generate_with(&policy, args)
}

/// Same as [`generate_once`] with an already loaded policy (`args.model` is ignored).
pub fn generate_with(policy: &Policy, args: &GenerateArgs) -> Result<GenerateOutput> {
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
        .ok_or_else(|| crate::error::Error::InvalidRequest("generation returned no row".into()))?;
    Ok(GenerateOutput { text: g.text, token_ids: g.token_ids, finish_reason: g.finish_reason })
}
