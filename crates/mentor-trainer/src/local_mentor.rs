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
//!
//! **Batching** across the mentor's one-problem-at-a-time calls: see [`PolicyChat`].

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use mentor_core::Message;
use mentor_policy::{GenerateConfig, Policy, Sampler};

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

/// A [`ChatModel`] over an in-process policy, batching the calls of registered clients.
///
/// It renders the conversation through the model's chat template and samples with fixed
/// settings ([`LocalConfig`]). A model at batch 1 decodes a fraction of what it does at batch
/// 32: callers that ask for many conversations at once register one [`Client`] per thread
/// ([`PolicyChat::client`], all before any asks); while registered clients exist, a reply is
/// generated only once every one of them is waiting, and their requests go through the model
/// in one call. Which requests share a batch depends only on what the clients ask, not on
/// timing; each row samples from its own seed (the config's seed and the conversation), so a
/// reply does not depend on its batch (up to float rounding). Without registered clients each
/// call runs alone.
pub struct PolicyChat {
    policy: Arc<Policy>,
    config: LocalConfig,
    /// Most rows one model call takes; larger batches are generated in chunks.
    max_rows: usize,
    /// Most prompt tokens one model call takes (the prefill's attention grows with rows ×
    /// length²: 64 mentor prompts of ~1,500 tokens once held 24 GB).
    max_prompt_tokens: usize,
    batch: Mutex<Batch>,
    changed: Condvar,
    /// Model calls made (a chunk of a batch is one call).
    calls: std::sync::atomic::AtomicUsize,
}

/// The requests waiting for a batched call, and the replies not yet collected.
#[derive(Default)]
struct Batch {
    /// Registered clients (threads that will ask, or are asking).
    clients: usize,
    /// Requests waiting for the next call: (ticket, prompt ids).
    queue: Vec<(u64, Vec<u32>)>,
    /// Replies by ticket, until their caller takes them.
    replies: HashMap<u64, std::result::Result<String, String>>,
    /// Whether a caller is generating a batch now.
    busy: bool,
    next_ticket: u64,
}

/// A registration with [`PolicyChat::client`]: while it lives, the chat waits for this
/// client's request (or its drop) before running a batch. Give one to each thread that asks;
/// a thread that stops asking drops it.
pub struct Client {
    chat: Arc<PolicyChat>,
}

impl Drop for Client {
    fn drop(&mut self) {
        let mut b = self.chat.lock();
        b.clients = b.clients.saturating_sub(1);
        drop(b);
        // The waiting clients may now be all there are: one of them runs the batch.
        self.chat.changed.notify_all();
    }
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
        Self {
            policy,
            config,
            max_rows: 64,
            max_prompt_tokens: 16_384,
            batch: Mutex::default(),
            changed: Condvar::new(),
            calls: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// At most `rows` conversations per model call (at least 1).
    pub fn with_max_rows(mut self, rows: usize) -> Self {
        self.max_rows = rows.max(1);
        self
    }

    /// At most `tokens` prompt tokens per model call (at least one conversation per call).
    pub fn with_max_prompt_tokens(mut self, tokens: usize) -> Self {
        self.max_prompt_tokens = tokens.max(1);
        self
    }

    /// Model calls made so far (each takes one batch, or one chunk of it of at most `max_rows` rows and `max_prompt_tokens` prompt tokens).
    pub fn model_calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Registers one client (the batching above): create all of a round's clients before any
    /// of them asks, so the first batch waits for every one.
    pub fn client(self: &Arc<Self>) -> Client {
        self.lock().clients += 1;
        Client { chat: self.clone() }
    }

    fn lock(&self) -> MutexGuard<'_, Batch> {
        // A panic while holding the lock leaves plain data behind: keep using it.
        self.batch.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn settings(&self) -> GenerateConfig {
        GenerateConfig {
            sampler: Sampler { temperature: self.config.temperature, top_p: 1.0, top_k: 0 },
            max_new_tokens: self.config.max_tokens,
            seed: self.config.seed,
            ..GenerateConfig::default()
        }
    }

    /// The row seed of a conversation: the config's seed and the prompt, nothing else.
    fn row_seed(&self, prompt: &[u32]) -> u64 {
        crate::seed::mix(&[self.config.seed, crate::seed::ids_key(prompt)])
    }

    /// Generates the replies of `prompts`, at most `max_rows` rows and `max_prompt_tokens` prompt tokens per model call.
    fn generate(&self, prompts: &[Vec<u32>]) -> Vec<std::result::Result<String, String>> {
        let cfg = self.settings();
        let mut out = Vec::with_capacity(prompts.len());
        // Chunks of at most `max_rows` rows and `max_prompt_tokens` prompt tokens, in order.
        let mut chunks: Vec<&[Vec<u32>]> = Vec::new();
        let (mut start, mut tokens) = (0, 0);
        for (i, p) in prompts.iter().enumerate() {
            if i > start && (i - start == self.max_rows || tokens + p.len() > self.max_prompt_tokens) {
                chunks.push(&prompts[start..i]);
                (start, tokens) = (i, 0);
            }
            tokens += p.len();
        }
        if start < prompts.len() {
            chunks.push(&prompts[start..]);
        }
        for chunk in chunks {
            let seeds: Vec<u64> = chunk.iter().map(|p| self.row_seed(p)).collect();
            self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match self.policy.generate_with_row_seeds(chunk, &cfg, &seeds) {
                Ok(gens) if gens.len() == chunk.len() => out.extend(gens.into_iter().map(|g| Ok(g.text))),
                Ok(gens) => out.extend(
                    chunk
                        .iter()
                        .map(|_| Err(format!("generation returned {} rows for {}", gens.len(), chunk.len()))),
                ),
                Err(e) => out.extend(chunk.iter().map(|_| Err(e.to_string()))),
            }
        }
        out
    }

    /// Queues `prompt` and waits for its reply; the caller that completes the set of waiting
    /// clients generates the batch.
    fn batched(&self, prompt: Vec<u32>) -> std::result::Result<String, String> {
        let mut b = self.lock();
        let ticket = b.next_ticket;
        b.next_ticket += 1;
        b.queue.push((ticket, prompt));
        loop {
            if let Some(reply) = b.replies.remove(&ticket) {
                return reply;
            }
            if !b.busy && !b.queue.is_empty() && b.queue.len() >= b.clients {
                let (tickets, prompts): (Vec<u64>, Vec<Vec<u32>>) =
                    std::mem::take(&mut b.queue).into_iter().unzip();
                b.busy = true;
                drop(b);
                let replies = self.generate(&prompts);
                b = self.lock();
                b.busy = false;
                for (t, r) in tickets.into_iter().zip(replies) {
                    b.replies.insert(t, r);
                }
                self.changed.notify_all();
                continue;
            }
            b = self.changed.wait(b).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

impl ChatModel for PolicyChat {
    fn chat(&self, messages: &[Message]) -> Result<String> {
        let prompt = self.policy.encode_chat(messages).map_err(|e| Error::Local(e.to_string()))?;
        let context = self.policy.config().max_position_embeddings;
        if prompt.len() + self.config.max_tokens > context {
            return Err(Error::Local(format!(
                "prompt of {} tokens plus {} new ones exceeds the context of {context}",
                prompt.len(),
                self.config.max_tokens
            )));
        }
        let registered = self.lock().clients > 0;
        let reply = if registered {
            self.batched(prompt)
        } else {
            self.generate(std::slice::from_ref(&prompt)).pop().unwrap_or_else(|| Err("no row".into()))
        };
        reply.map_err(Error::Local)
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
    let (mentor, fallbacks, _) = batching_mentor(policy, config, prompts, guard, 64);
    (mentor, fallbacks)
}

/// [`mentor`], also returning its chat, to register batching [`Client`]s with; at most
/// `max_rows` conversations per model call.
pub fn batching_mentor(
    policy: Arc<Policy>,
    config: LocalConfig,
    prompts: Prompts,
    guard: Guard,
    max_rows: usize,
) -> (AgentMentor, Arc<FallbackCounter>, Arc<PolicyChat>) {
    let chat = Arc::new(PolicyChat::new(policy, config).with_max_rows(max_rows));
    let (mentor, fallbacks) = chat_mentor("local", chat.clone(), prompts, guard);
    (mentor, fallbacks, chat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};
    use mentor_policy::Config;

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

    #[test]
    fn registered_clients_share_one_model_call_and_get_their_own_replies() {
        let policy = tiny();
        let cfg = LocalConfig { temperature: 0.8, max_tokens: 6, seed: 3 };
        let conversations: Vec<Vec<Message>> =
            ["ab", "hint ", "c", "de", "fgh"].iter().map(|t| vec![Message::user(*t)]).collect();
        // Alone: one call each.
        let alone = PolicyChat::new(policy.clone(), cfg.clone());
        let expected: Vec<String> = conversations.iter().map(|c| alone.chat(c).unwrap()).collect();
        assert_eq!(alone.model_calls(), 5);
        // Five registered clients on five threads: one call, chunked by `max_rows` = 2 into 3.
        // A budget of one token puts every conversation in a call of its own (a call takes at
        // least one, whatever its length).
        for (rows, budget, calls) in [(64, 1 << 20, 1), (2, 1 << 20, 3), (64, 1, 5)] {
            let chat = Arc::new(
                PolicyChat::new(policy.clone(), cfg.clone())
                    .with_max_rows(rows)
                    .with_max_prompt_tokens(budget),
            );
            let clients: Vec<Client> = conversations.iter().map(|_| chat.client()).collect();
            let replies: Vec<String> = std::thread::scope(|s| {
                let handles: Vec<_> = conversations
                    .iter()
                    .zip(clients)
                    .map(|(c, client)| {
                        let chat = chat.clone();
                        s.spawn(move || {
                            let reply = chat.chat(c).unwrap();
                            drop(client);
                            reply
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert_eq!(replies, expected, "a reply does not depend on its batch (max_rows {rows})");
            assert_eq!(chat.model_calls(), calls, "max_rows {rows}");
        }
    }

    #[test]
    fn a_client_that_never_asks_releases_the_batch_when_dropped() {
        let policy = tiny();
        let chat =
            Arc::new(PolicyChat::new(policy, LocalConfig { temperature: 0.0, max_tokens: 3, seed: 0 }));
        let idle = chat.client();
        let asking = chat.client();
        let reply = std::thread::scope(|s| {
            let h = s.spawn(|| {
                let r = chat.chat(&[Message::user("ab")]).unwrap();
                drop(asking);
                r
            });
            // The asking thread waits for `idle`; dropping it lets the batch run.
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(idle);
            h.join().unwrap()
        });
        assert_eq!(chat.model_calls(), 1);
        assert_eq!(
            reply,
            PolicyChat::new(tiny(), LocalConfig { temperature: 0.0, max_tokens: 3, seed: 0 })
                .chat(&[Message::user("ab")])
                .unwrap()
        );
    }
}
