//! `mentor generate`: one completion from a model, as text or one JSON line.

use anyhow::{Context, Result};
use mentor_policy::command::{generate_once, GenerateArgs as PolicyArgs};
use mentor_policy::HubOptions;

pub use crate::cli::GenerateArgs;

/// Runs `mentor generate`.
pub fn run(args: &GenerateArgs) -> Result<()> {
    let hub = HubOptions::from_env(|k| std::env::var(k).ok());
    let policy_args = PolicyArgs {
        model: args.model.clone(),
        prompt: args.prompt.clone(),
        chat: args.chat,
        max_new_tokens: args.max_new_tokens,
        temperature: args.temperature,
        seed: args.seed,
    };
    let out = generate_once(&policy_args, &hub).with_context(|| {
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
