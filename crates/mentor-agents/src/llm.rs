//! The `llm` backend: diagnoser and tutor as role prompts to any OpenAI-compatible
//! chat-completions endpoint (vLLM, llama.cpp server, Ollama, `mentor serve`).
//!
//! Replies are parsed robustly (the first JSON object in the reply, so chatty models work).
//! Requests have a timeout, are retried with exponential backoff on transport errors, 429 and
//! 5xx, and are capped in concurrency. Any failure — endpoint down, too slow, malformed reply —
//! falls back to the `rules` agent with the reason logged (`tracing::warn`) and counted; the
//! mentor never fails because the LLM did.
//!
//! The agents are generic over [`ChatModel`] (messages in, reply text out), so any model that
//! answers a conversation (the trainer's `local` backend: an in-process `mentor-policy` model)
//! shares the prompts, the parsing and the fallback logic with the HTTP client.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use mentor_core::{
    Attempt, Diagnosis, Evidence, FailureCategory, Hint, HintLevel, HintSource, Message, Task,
};
use serde::Serialize;
use serde_json::Value;

use crate::rules::{RulesDiagnoser, RulesTutor};
use crate::{Diagnoser, Error, Prompts, Result, Tutor};

/// How to reach the endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmConfig {
    /// Base URL including the version path, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Bearer token, if the endpoint needs one (callers read it from an env var of their choice).
    pub api_key: Option<String>,
    /// Per-request timeout (connect + read).
    pub timeout: Duration,
    /// Retries after the first try, for transport errors, 429 and 5xx.
    pub retries: u32,
    /// First backoff; doubles on every retry.
    pub backoff: Duration,
    /// Most requests in flight at once.
    pub max_concurrency: usize,
    /// Sampling temperature.
    pub temperature: f32,
    /// Reply length cap.
    pub max_tokens: u32,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8080/v1".into(),
            model: "default".into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            retries: 2,
            backoff: Duration::from_millis(500),
            max_concurrency: 4,
            temperature: 0.2,
            max_tokens: 512,
        }
    }
}

/// A small counting semaphore (requests in flight).
#[derive(Debug)]
struct Slots {
    free: Mutex<usize>,
    cv: Condvar,
}

impl Slots {
    fn acquire(&self) -> SlotGuard<'_> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = self.cv.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        SlotGuard(self)
    }
}

struct SlotGuard<'a>(&'a Slots);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.0.cv.notify_one();
    }
}

/// Something that answers a conversation: an HTTP endpoint ([`LlmClient`]) or an in-process
/// model (the trainer's `local_mentor::PolicyChat`).
pub trait ChatModel: Send + Sync {
    /// Answers `messages` with the assistant's reply text.
    fn chat(&self, messages: &[Message]) -> Result<String>;
}

/// A chat-completions client.
#[derive(Debug)]
pub struct LlmClient {
    config: LlmConfig,
    agent: ureq::Agent,
    slots: Slots,
}

impl LlmClient {
    /// A client for `config`.
    pub fn new(config: LlmConfig) -> Self {
        let agent = ureq::AgentBuilder::new().timeout(config.timeout).build();
        let slots = Slots { free: Mutex::new(config.max_concurrency.max(1)), cv: Condvar::new() };
        Self { config, agent, slots }
    }

    /// Sends `messages` and returns the assistant's reply text.
    pub fn chat(&self, messages: &[Message]) -> Result<String> {
        let _slot = self.slots.acquire();
        let url = format!("{}/chat/completions", self.config.base_url.trim_end_matches('/'));
        let body = serde_json::json!({
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        });
        let mut last = String::new();
        for attempt in 0..=self.config.retries {
            if attempt > 0 {
                std::thread::sleep(self.config.backoff * 2u32.saturating_pow(attempt - 1));
            }
            let mut req = self.agent.post(&url);
            if let Some(key) = &self.config.api_key {
                req = req.set("Authorization", &format!("Bearer {key}"));
            }
            match req.send_json(body.clone()) {
                Ok(resp) => {
                    let v: Value =
                        resp.into_json().map_err(|e| Error::Llm(format!("reply is not JSON: {e}")))?;
                    return v["choices"][0]["message"]["content"]
                        .as_str()
                        .map(str::to_string)
                        .ok_or_else(|| Error::Llm("reply has no choices[0].message.content".into()));
                }
                Err(ureq::Error::Status(code, resp)) => {
                    last = format!(
                        "HTTP {code}: {}",
                        resp.into_string().unwrap_or_default().chars().take(200).collect::<String>()
                    );
                    if code != 429 && code < 500 {
                        return Err(Error::Llm(last));
                    }
                }
                Err(ureq::Error::Transport(t)) => last = format!("transport: {t}"),
            }
        }
        Err(Error::Llm(format!("{} tries failed; last: {last}", self.config.retries + 1)))
    }
}

impl ChatModel for LlmClient {
    fn chat(&self, messages: &[Message]) -> Result<String> {
        LlmClient::chat(self, messages)
    }
}

/// The first complete JSON object in `text` (braces inside strings are respected).
pub fn first_json_object(text: &str) -> Option<Value> {
    let b = text.as_bytes();
    let mut start = 0;
    while let Some(s) = text[start..].find('{').map(|i| i + start) {
        let (mut depth, mut in_str, mut esc) = (0usize, false, false);
        for (i, &c) in b.iter().enumerate().skip(s) {
            if in_str {
                match c {
                    _ if esc => esc = false,
                    b'\\' => esc = true,
                    b'"' => in_str = false,
                    _ => {}
                }
                continue;
            }
            match c {
                b'"' => in_str = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        if let Ok(v @ Value::Object(_)) = serde_json::from_str(&text[s..=i]) {
                            return Some(v);
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
        start = s + 1;
    }
    None
}

#[derive(Serialize)]
struct AttemptView {
    text: String,
    feedback: String,
}

fn attempt_views(attempts: &[Attempt]) -> Vec<AttemptView> {
    attempts
        .iter()
        .map(|a| AttemptView {
            text: a.completion.text.chars().take(2_000).collect(),
            feedback: crate::baselines::feedback_summary(a.verdict.feedback()),
        })
        .collect()
}

/// Counts how often the LLM agents fell back to rules.
#[derive(Debug, Default)]
pub struct FallbackCounter(AtomicUsize);

impl FallbackCounter {
    /// Fallbacks so far.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
    fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Diagnoser that asks a chat model, falling back to [`RulesDiagnoser`].
pub struct LlmDiagnoser<M: ?Sized = LlmClient> {
    client: std::sync::Arc<M>,
    prompts: Prompts,
    fallbacks: std::sync::Arc<FallbackCounter>,
}

impl<M: ChatModel + ?Sized> LlmDiagnoser<M> {
    /// A diagnoser over `client`; fallbacks are counted in `fallbacks`.
    pub fn new(
        client: std::sync::Arc<M>,
        prompts: Prompts,
        fallbacks: std::sync::Arc<FallbackCounter>,
    ) -> Self {
        Self { client, prompts, fallbacks }
    }

    fn ask(&self, task: &Task, attempts: &[Attempt]) -> Result<Diagnosis> {
        let reply = self.client.chat(&diagnoser_messages(&self.prompts, task, attempts)?)?;
        parse_diagnosis(&reply)
    }
}

fn snippet(s: &str) -> String {
    s.chars().take(120).collect()
}

/// The diagnoser's conversation about a failed group: the `llm` role prompts (system, then
/// user) rendered with the task, its reference data and each attempt with its feedback.
pub fn diagnoser_messages(prompts: &Prompts, task: &Task, attempts: &[Attempt]) -> Result<Vec<Message>> {
    let ctx = serde_json::json!({
        "question": task.question(),
        "reference_solution": task.reference_solution(),
        "reference_answer": task.reference_answer(),
        "attempts": attempt_views(attempts),
    });
    let user = prompts.render("llm.diagnoser_user", &prompts.llm.diagnoser_user, &ctx)?;
    Ok(vec![Message::system(prompts.llm.diagnoser_system.as_str()), Message::user(user)])
}

/// The diagnosis in a diagnoser's reply: its first JSON object, with a known `category`
/// (required), `shared_mode`, up to five `evidence` quotes, a 1-based `first_wrong_step` and a
/// `confidence` (clamped to [0, 1]; 0.5 when absent). An error when there is no such object.
pub fn parse_diagnosis(reply: &str) -> Result<Diagnosis> {
    let v = first_json_object(reply)
        .ok_or_else(|| Error::Llm(format!("no JSON object in reply: {}", snippet(reply))))?;
    let category: FailureCategory = serde_json::from_value(v["category"].clone())
        .map_err(|_| Error::Llm(format!("unknown category {}", v["category"])))?;
    let evidence = v["evidence"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e.as_str())
                .take(5)
                .map(|q| Evidence {
                    attempt: None,
                    quote: q.to_string(),
                    note: "quoted by the LLM diagnoser".into(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Diagnosis {
        category,
        shared_mode: v["shared_mode"].as_str().unwrap_or("").to_string(),
        evidence,
        first_wrong_step: v["first_wrong_step"].as_u64().and_then(|s| (s as usize).checked_sub(1)),
        confidence: v["confidence"].as_f64().map(|c| c.clamp(0.0, 1.0) as f32).unwrap_or(0.5),
    })
}

/// The tutor's conversation: the `llm` role prompts rendered with the task, the diagnosis,
/// the level asked for and the hints already given.
pub fn tutor_messages(
    prompts: &Prompts,
    task: &Task,
    diagnosis: &Diagnosis,
    level: HintLevel,
    previous: &[Hint],
) -> Result<Vec<Message>> {
    let ctx = serde_json::json!({
        "question": task.question(),
        "reference_solution": task.reference_solution(),
        "category": crate::prompts::category_key(diagnosis.category),
        "shared_mode": diagnosis.shared_mode,
        "evidence": diagnosis.evidence.iter().map(|e| e.quote.as_str()).collect::<Vec<_>>().join(" | "),
        "level": level.get(),
        "previous": previous.iter().map(|h| h.text.as_str()).collect::<Vec<_>>().join(" | "),
    });
    let user = prompts.render("llm.tutor_user", &prompts.llm.tutor_user, &ctx)?;
    Ok(vec![Message::system(prompts.llm.tutor_system.as_str()), Message::user(user)])
}

/// The hint at `level` in a tutor's reply: the non-empty `hint` string of its first JSON
/// object (trimmed), as the mentor's own hint. An error when there is none. The guard has not
/// seen it yet.
pub fn parse_hint(reply: &str, level: HintLevel) -> Result<Hint> {
    let v = first_json_object(reply)
        .ok_or_else(|| Error::Llm(format!("no JSON object in reply: {}", snippet(reply))))?;
    let text = v["hint"]
        .as_str()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::Llm("reply has no `hint`".into()))?;
    Ok(Hint { level, text: text.to_string(), solution_prefix: None, source: HintSource::Mentor })
}

impl<M: ChatModel + ?Sized> Diagnoser for LlmDiagnoser<M> {
    fn diagnose(&self, task: &Task, attempts: &[Attempt]) -> Result<Diagnosis> {
        self.ask(task, attempts).or_else(|e| {
            tracing::warn!(reason = %e, task = %task.id, "llm diagnoser failed; falling back to rules");
            self.fallbacks.bump();
            RulesDiagnoser.diagnose(task, attempts)
        })
    }
}

/// Tutor that asks a chat model, falling back to [`RulesTutor`].
pub struct LlmTutor<M: ?Sized = LlmClient> {
    client: std::sync::Arc<M>,
    prompts: Prompts,
    fallback: RulesTutor,
    fallbacks: std::sync::Arc<FallbackCounter>,
}

impl<M: ChatModel + ?Sized> LlmTutor<M> {
    /// A tutor over `client`; fallbacks are counted in `fallbacks`.
    pub fn new(
        client: std::sync::Arc<M>,
        prompts: Prompts,
        fallbacks: std::sync::Arc<FallbackCounter>,
    ) -> Self {
        Self { client, fallback: RulesTutor::new(prompts.clone()), prompts, fallbacks }
    }

    fn ask(&self, task: &Task, diagnosis: &Diagnosis, level: HintLevel, previous: &[Hint]) -> Result<Hint> {
        let reply = self.client.chat(&tutor_messages(&self.prompts, task, diagnosis, level, previous)?)?;
        parse_hint(&reply, level)
    }
}

impl<M: ChatModel + ?Sized> Tutor for LlmTutor<M> {
    fn hint(
        &self,
        task: &Task,
        attempts: &[Attempt],
        diagnosis: &Diagnosis,
        level: HintLevel,
        previous: &[Hint],
    ) -> Result<Hint> {
        self.ask(task, diagnosis, level, previous).or_else(|e| {
            tracing::warn!(reason = %e, task = %task.id, "llm tutor failed; falling back to rules");
            self.fallbacks.bump();
            self.fallback.hint(task, attempts, diagnosis, level, previous)
        })
    }
}

/// The `llm` mentor: LLM diagnoser and tutor over one client, the given guard, and a shared
/// fallback counter.
pub fn mentor(
    config: LlmConfig,
    prompts: Prompts,
    guard: crate::Guard,
) -> (crate::AgentMentor, std::sync::Arc<FallbackCounter>) {
    chat_mentor("llm", std::sync::Arc::new(LlmClient::new(config)), prompts, guard)
}

/// A mentor named `name` whose diagnoser and tutor ask `model` with the `llm` role prompts and
/// fall back to rules; returns it with its fallback counter.
pub fn chat_mentor<M: ChatModel + 'static>(
    name: &str,
    model: std::sync::Arc<M>,
    prompts: Prompts,
    guard: crate::Guard,
) -> (crate::AgentMentor, std::sync::Arc<FallbackCounter>) {
    let fallbacks = std::sync::Arc::new(FallbackCounter::default());
    let m = crate::AgentMentor::new(
        name,
        Box::new(LlmDiagnoser::new(model.clone(), prompts.clone(), fallbacks.clone())),
        Box::new(LlmTutor::new(model, prompts, fallbacks.clone())),
        guard,
    );
    (m, fallbacks)
}

#[cfg(test)]
mod tests {
    use super::first_json_object;

    #[test]
    fn finds_the_first_object_in_chatty_replies() {
        let v = first_json_object("Sure! Here it is: {\"hint\": \"use {braces} \\\"carefully\\\"\"} done")
            .unwrap();
        assert_eq!(v["hint"], "use {braces} \"carefully\"");
        assert!(first_json_object("no json { here").is_none());
        assert_eq!(first_json_object("{bad} {\"a\":1}").unwrap()["a"], 1);
    }
}
