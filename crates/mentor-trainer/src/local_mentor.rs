//! The mentor's `local` backend: the `llm` role prompts answered by an in-process
//! `mentor-policy` model instead of an HTTP endpoint — a separate mentor model, or the learner
//! itself as a self-mentor. It lives here, not in `mentor-agents`, because the agents depend
//! on no model: they talk to any model through their [`ChatModel`] trait, and this crate is
//! the one that wires a policy to them.
//!
//! [`PolicyChat`] renders the conversation through the model's chat template and samples with
//! fixed settings ([`LocalConfig`]); the diagnoser and tutor are the `llm` ones
//! ([`mentor_agents::llm::chat_mentor`]), so an unparseable reply or a model error falls back to
//! `rules` and is counted, exactly as with an endpoint. For a self-mentor, share the learner
//! as an `Arc<Policy>`: its weights are updated in place by the optimizer (the `Var`s share
//! storage), so the mentor always speaks with the current policy.

use std::sync::Arc;

use mentor_policy::{GenerateConfig, Message, Policy, Sampler};

use mentor_agents::llm::{chat_mentor, ChatModel, FallbackCounter};
use mentor_agents::{AgentMentor, Error, Guard, Prompts, Result};

/// How the in-process model samples its replies.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalConfig {
    /// Sampling temperature; 0 is greedy.
    pub temperature: f64,
    /// Reply length cap in tokens.
    pub max_tokens: usize,
    /// RNG seed: the same conversation gives the same reply.
    pub seed: u64,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self { temperature: 0.2, max_tokens: 256, seed: 0 }
    }
}

/// A [`ChatModel`] over an in-process policy.
pub struct PolicyChat {
    policy: Arc<Policy>,
    config: LocalConfig,
}

impl std::fmt::Debug for PolicyChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyChat").field("policy", &self.policy).field("config", &self.config).finish()
    }
}

impl PolicyChat {
    /// Chats with `policy` (it needs a chat template; without one every call fails and the
    /// agents fall back to rules).
    pub fn new(policy: Arc<Policy>, config: LocalConfig) -> Self {
        Self { policy, config }
    }
}

impl ChatModel for PolicyChat {
    fn chat(&self, messages: &[Message]) -> Result<String> {
        let err = |e: mentor_policy::Error| Error::Local(e.to_string());
        let prompt = self.policy.encode_chat(messages).map_err(err)?;
        let cfg = GenerateConfig {
            sampler: Sampler { temperature: self.config.temperature, top_p: 1.0, top_k: 0 },
            max_new_tokens: self.config.max_tokens,
            seed: self.config.seed,
            ..GenerateConfig::default()
        };
        let context = self.policy.config().max_position_embeddings;
        if prompt.len() + cfg.max_new_tokens > context {
            return Err(Error::Local(format!(
                "prompt of {} tokens plus {} new ones exceeds the context of {context}",
                prompt.len(),
                cfg.max_new_tokens
            )));
        }
        let generation = self.policy.generate(&[prompt], &cfg).map_err(err)?;
        generation
            .into_iter()
            .next()
            .map(|g| g.text)
            .ok_or_else(|| Error::Local("generation returned no row".into()))
    }
}

/// The `local` mentor: the `llm` diagnoser and tutor over `policy`, the given guard, and the
/// shared fallback counter.
pub fn mentor(
    policy: Arc<Policy>,
    config: LocalConfig,
    prompts: Prompts,
    guard: Guard,
) -> (AgentMentor, Arc<FallbackCounter>) {
    chat_mentor("local", Arc::new(PolicyChat::new(policy, config)), prompts, guard)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};
    use mentor_policy::config::Config;

    fn tiny() -> Arc<Policy> {
        let p = Policy::char_level(
            "{}\":abcdefghint ",
            Config::tiny(0, 32, 2, 4, 2),
            5,
            DType::F32,
            &Device::Cpu,
        )
        .unwrap();
        Arc::new(p)
    }

    #[test]
    fn replies_are_the_policys_greedy_generation() {
        let policy = tiny();
        let chat = PolicyChat::new(policy.clone(), LocalConfig { temperature: 0.0, max_tokens: 7, seed: 1 });
        let reply = chat.chat(&[Message::system("be brief"), Message::user("hint")]).unwrap();
        let ids = policy.encode_chat(&[Message::system("be brief"), Message::user("hint")]).unwrap();
        let cfg =
            GenerateConfig { sampler: Sampler::greedy(), max_new_tokens: 7, ..GenerateConfig::default() };
        assert_eq!(reply, policy.generate(&[ids], &cfg).unwrap()[0].text);
        assert_eq!(reply, chat.chat(&[Message::system("be brief"), Message::user("hint")]).unwrap());
    }

    #[test]
    fn over_long_requests_are_errors_not_panics() {
        let chat = PolicyChat::new(tiny(), LocalConfig { temperature: 0.0, max_tokens: 1 << 20, seed: 0 });
        let e = chat.chat(&[Message::user("a")]).unwrap_err();
        assert!(e.to_string().contains("exceeds the context"), "{e}");
    }
}
