//! The model half of `mentor serve`: OpenAI-compatible chat completions over a [`Policy`],
//! without any sockets.
//!
//! [`ChatService::handle`] takes a method, a path and a request body and returns the status
//! code and JSON body to send back, so routing, validation and generation are unit-testable
//! and the HTTP layer (the parent module) only moves bytes. Supported:
//!
//! - `POST /v1/chat/completions`, non-streaming: `messages` (string content, or an array of
//!   `{"type":"text","text":…}` parts) rendered through the model's chat template, `temperature`
//!   (0 = greedy), `top_p`, `max_tokens` / `max_completion_tokens`, `seed`, `stop` (a string or
//!   up to 4 strings), `n` (up to [`MAX_N`] choices, sampled as one batch). Other OpenAI fields
//!   (`frequency_penalty`, `user`, …) are accepted and ignored; `model` may name anything: the
//!   reply's `model` says which model answered.
//! - `GET /v1/models`: the one served model.
//!
//! Bad requests get OpenAI-style error bodies (`{"error":{"message","type","param","code"}}`)
//! with 400 (invalid JSON or field), 404 (unknown path), 405 (wrong method) or 500 (the model
//! failed). Without `seed`, request `k` of the service uses seed `k`, so a server's replies are
//! reproducible from its start (in order of arrival).
//!
//! A server that wants to answer cheap requests while a generation runs, or to abandon one,
//! splits [`ChatService::handle`] in two: [`ChatService::route`] answers everything but a chat
//! completion at once (and validates that one, rendering its prompt), and
//! [`ChatService::complete`] runs the generation, asking a `stop` callback once per decode
//! step. `ChatService` is `Sync`: several threads may generate at once.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::{json, Value};

use mentor_core::{Message, Role};
use mentor_policy::{GenerateConfig, Policy, Sampler, StopCondition};

/// Most choices (`n`) per request.
pub const MAX_N: usize = 8;
/// Most stop strings per request (OpenAI's limit).
pub const MAX_STOP: usize = 4;

/// A status code and the JSON body to send with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// The JSON body.
    pub body: Value,
}

impl Reply {
    fn ok(body: Value) -> Self {
        Self { status: 200, body }
    }

    /// An OpenAI-style error reply.
    pub fn error(status: u16, kind: &str, message: impl Into<String>, param: Option<&str>) -> Self {
        let code = match status {
            404 => Some("not_found"),
            405 => Some("method_not_allowed"),
            408 => Some("request_timeout"),
            411 => Some("length_required"),
            413 => Some("request_too_large"),
            431 => Some("headers_too_large"),
            503 => Some("server_busy"),
            504 => Some("timeout"),
            _ => None,
        };
        Self {
            status,
            body: json!({"error": {"message": message.into(), "type": kind, "param": param, "code": code}}),
        }
    }

    fn invalid(message: impl Into<String>, param: &str) -> Self {
        Self::error(400, "invalid_request_error", message, Some(param))
    }
}

/// Service settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceConfig {
    /// The id `/v1/models` lists and replies carry in `model`.
    pub model_id: String,
    /// `max_tokens` when the request gives none.
    pub default_max_tokens: usize,
    /// Upper bound on `max_tokens`; larger requests are clamped to it.
    pub max_tokens_cap: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self { model_id: "mentor".into(), default_max_tokens: 256, max_tokens_cap: 4096 }
    }
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
struct Part {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RequestMessage {
    role: String,
    content: Option<Content>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Stop {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct ChatRequest {
    messages: Vec<RequestMessage>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    top_p: Option<f64>,
    #[serde(default)]
    max_tokens: Option<i64>,
    #[serde(default)]
    max_completion_tokens: Option<i64>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    stop: Option<Stop>,
    #[serde(default)]
    n: Option<i64>,
    #[serde(default)]
    stream: Option<bool>,
}

/// A validated chat request: what to render and how to sample.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatParams {
    /// The conversation.
    pub messages: Vec<Message>,
    /// Sampling, length, stop strings and seed.
    pub generate: GenerateConfig,
    /// Choices to return.
    pub n: usize,
}

/// Parses and validates a chat-completions body. `fallback_seed` is used when the request
/// has no `seed`.
pub fn parse_request(body: &[u8], cfg: &ServiceConfig, fallback_seed: u64) -> Result<ChatParams, Reply> {
    let req: ChatRequest = serde_json::from_slice(body).map_err(|e| {
        Reply::error(400, "invalid_request_error", format!("invalid request body: {e}"), None)
    })?;
    if req.stream == Some(true) {
        return Err(Reply::invalid("streaming is not supported; send \"stream\": false", "stream"));
    }
    if req.messages.is_empty() {
        return Err(Reply::invalid("`messages` must not be empty", "messages"));
    }
    let mut messages = Vec::with_capacity(req.messages.len());
    for (i, m) in req.messages.into_iter().enumerate() {
        // Chat templates know `system`; `developer` is OpenAI's newer name for it.
        let role = match m.role.as_str() {
            "system" | "developer" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => {
                return Err(Reply::invalid(
                    format!("messages[{i}].role `{other}` is not one of system, developer, user, assistant"),
                    "messages",
                ))
            }
        };
        let content = match m.content {
            None => String::new(),
            Some(Content::Text(t)) => t,
            Some(Content::Parts(parts)) => {
                let mut text = String::new();
                for p in parts {
                    match (p.kind.as_str(), p.text) {
                        ("text", Some(t)) => text.push_str(&t),
                        (kind, _) => {
                            return Err(Reply::invalid(
                                format!("messages[{i}]: content part `{kind}` is not supported (text only)"),
                                "messages",
                            ))
                        }
                    }
                }
                text
            }
        };
        messages.push(Message { role, content });
    }
    let temperature = req.temperature.unwrap_or(1.0);
    if !(0.0..=2.0).contains(&temperature) {
        return Err(Reply::invalid(format!("temperature {temperature} must be in [0, 2]"), "temperature"));
    }
    let top_p = req.top_p.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(Reply::invalid(format!("top_p {top_p} must be in (0, 1]"), "top_p"));
    }
    let (max_param, max_tokens) = match (req.max_completion_tokens, req.max_tokens) {
        (Some(m), _) => ("max_completion_tokens", Some(m)),
        (None, m) => ("max_tokens", m),
    };
    let max_new_tokens = match max_tokens {
        None => cfg.default_max_tokens,
        Some(m) if m < 1 => return Err(Reply::invalid(format!("{max_param} {m} must be >= 1"), max_param)),
        Some(m) => usize::try_from(m).unwrap_or(usize::MAX),
    }
    .min(cfg.max_tokens_cap);
    let stop_strings = match req.stop {
        None => vec![],
        Some(Stop::One(s)) => vec![s],
        Some(Stop::Many(v)) => v,
    };
    if stop_strings.len() > MAX_STOP || stop_strings.iter().any(String::is_empty) {
        return Err(Reply::invalid(format!("`stop` takes 1 to {MAX_STOP} non-empty strings"), "stop"));
    }
    let n = match req.n {
        None => 1,
        Some(n) if (1..=MAX_N as i64).contains(&n) => n as usize,
        Some(n) => return Err(Reply::invalid(format!("n {n} must be in 1..={MAX_N}"), "n")),
    };
    let generate = GenerateConfig {
        sampler: Sampler { temperature, top_p, top_k: 0 },
        max_new_tokens,
        stop_ids: vec![],
        stop_strings,
        seed: req.seed.unwrap_or(fallback_seed),
        ..GenerateConfig::default()
    };
    Ok(ChatParams { messages, generate, n })
}

/// A validated chat-completions request, ready to generate: from [`ChatService::route`], run
/// by [`ChatService::complete`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChatJob {
    /// The request's number in the service (its `id` is `chatcmpl-{k}`).
    pub k: u64,
    /// What to generate.
    pub params: ChatParams,
    /// The rendered, encoded prompt.
    pub prompt: Vec<u32>,
}

/// What a request needs: an answer now, or a generation.
#[derive(Debug, Clone, PartialEq)]
pub enum Routed {
    /// The answer (models, errors).
    Reply(Reply),
    /// A valid chat completion: generating it is the expensive part.
    Generate(ChatJob),
}

/// Chat completions over one policy.
#[derive(Debug)]
pub struct ChatService {
    policy: Policy,
    cfg: ServiceConfig,
    requests: AtomicU64,
    created: u64,
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl ChatService {
    /// A service answering with `policy`.
    pub fn new(policy: Policy, cfg: ServiceConfig) -> Self {
        Self { policy, cfg, requests: AtomicU64::new(0), created: unix_now() }
    }

    /// The served policy.
    #[cfg(test)]
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The settings.
    pub fn config(&self) -> &ServiceConfig {
        &self.cfg
    }

    /// Routes and answers one request, generating if it is a chat completion. `path` may
    /// carry a query string (ignored). (The server uses [`ChatService::route`] and
    /// [`ChatService::complete`]; this is their composition, for tests.)
    #[cfg(test)]
    pub fn handle(&self, method: &str, path: &str, body: &[u8]) -> Reply {
        match self.route(method, path, body) {
            Routed::Reply(reply) => reply,
            Routed::Generate(job) => self.complete(job, || false).unwrap_or_else(|| {
                Reply::error(500, "server_error", "generation stopped without being asked to", None)
            }),
        }
    }

    /// Routes one request without generating: everything but a valid chat completion is
    /// answered ([`Routed::Reply`]); a chat completion is validated and its prompt rendered
    /// ([`Routed::Generate`]). `path` may carry a query string (ignored).
    pub fn route(&self, method: &str, path: &str, body: &[u8]) -> Routed {
        let path = path.split('?').next().unwrap_or("").trim_end_matches('/');
        let reply = match (method, path) {
            ("POST", "/v1/chat/completions") => match self.prepare(body) {
                Ok(job) => return Routed::Generate(job),
                Err(reply) => reply,
            },
            ("GET", "/v1/models") => Reply::ok(json!({"object": "list", "data": [self.model_entry()]})),
            (_, "/v1/chat/completions") | (_, "/v1/models") => {
                Reply::error(405, "invalid_request_error", format!("{method} is not allowed on {path}"), None)
            }
            _ => Reply::error(404, "invalid_request_error", format!("no route for {method} {path}"), None),
        };
        Routed::Reply(reply)
    }

    fn model_entry(&self) -> Value {
        json!({"id": self.cfg.model_id, "object": "model", "created": self.created, "owned_by": "mentor"})
    }

    /// Validates a chat-completions body and renders its prompt: the job to generate, or the
    /// error reply.
    pub fn prepare(&self, body: &[u8]) -> Result<ChatJob, Reply> {
        let k = self.requests.fetch_add(1, Ordering::Relaxed);
        let params = parse_request(body, &self.cfg, k)?;
        let prompt = self
            .policy
            .encode_chat(&params.messages)
            .map_err(|e| Reply::error(400, "invalid_request_error", e.to_string(), Some("messages")))?;
        let context = self.policy.config().max_position_embeddings;
        if prompt.len() + params.generate.max_new_tokens > context {
            return Err(Reply::error(
                400,
                "invalid_request_error",
                format!(
                    "the prompt has {} tokens and max_tokens is {}: together more than the model's context of {context}",
                    prompt.len(),
                    params.generate.max_new_tokens
                ),
                Some("messages"),
            ));
        }
        Ok(ChatJob { k, params, prompt })
    }

    /// Generates a prepared job's reply. `stop` is asked before the prefill and once per
    /// decode step; once it returns true the generation is abandoned and `None` comes back.
    pub fn complete(&self, job: ChatJob, stop: impl FnMut() -> bool) -> Option<Reply> {
        let ChatJob { k, params, prompt } = job;
        let prompts = vec![prompt.clone(); params.n];
        let gens = match self.policy.generate_until(&prompts, &params.generate, stop) {
            Ok(Some(g)) => g,
            Ok(None) => return None,
            Err(e) => {
                return Some(Reply::error(500, "server_error", format!("generation failed: {e}"), None))
            }
        };
        let completion_tokens: usize = gens.iter().map(|g| g.token_ids.len()).sum();
        let choices: Vec<Value> = gens
            .into_iter()
            .enumerate()
            .map(|(i, g)| {
                let finish = match g.finish_reason {
                    StopCondition::Stop | StopCondition::StopString => "stop",
                    StopCondition::Length => "length",
                };
                json!({
                    "index": i,
                    "message": {"role": "assistant", "content": g.text},
                    "finish_reason": finish,
                })
            })
            .collect();
        Some(Reply::ok(json!({
            "id": format!("chatcmpl-{k}"),
            "object": "chat.completion",
            "created": unix_now(),
            "model": self.cfg.model_id,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt.len(),
                "completion_tokens": completion_tokens,
                "total_tokens": prompt.len() + completion_tokens,
            },
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};
    use mentor_policy::Config;

    fn service() -> ChatService {
        let policy =
            Policy::char_level("abcdefgh ", Config::tiny(0, 32, 2, 4, 2), 3, DType::F32, &Device::Cpu)
                .unwrap();
        ChatService::new(policy, ServiceConfig { model_id: "tiny".into(), ..ServiceConfig::default() })
    }

    fn post(s: &ChatService, body: Value) -> Reply {
        s.handle("POST", "/v1/chat/completions", body.to_string().as_bytes())
    }

    #[test]
    fn greedy_completion_round_trip_matches_direct_generation() {
        let s = service();
        let r = post(
            &s,
            json!({"model": "x", "messages": [{"role": "user", "content": "abc"}], "temperature": 0, "max_tokens": 6}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["object"], "chat.completion");
        assert_eq!(r.body["model"], "tiny");
        let ids = s.policy().encode_chat(&[Message::user("abc")]).unwrap();
        let cfg =
            GenerateConfig { sampler: Sampler::greedy(), max_new_tokens: 6, ..GenerateConfig::default() };
        let want = s.policy().generate(std::slice::from_ref(&ids), &cfg).unwrap().remove(0);
        assert_eq!(r.body["choices"][0]["message"]["content"], want.text.as_str());
        assert_eq!(r.body["choices"][0]["message"]["role"], "assistant");
        assert_eq!(r.body["usage"]["prompt_tokens"], ids.len());
        assert_eq!(r.body["usage"]["completion_tokens"], want.token_ids.len());
        let finish = if want.finish_reason == StopCondition::Length { "length" } else { "stop" };
        assert_eq!(r.body["choices"][0]["finish_reason"], finish);
    }

    #[test]
    fn seed_makes_sampling_reproducible_and_n_gives_choices() {
        let s = service();
        let body = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "ab"}]}],
                          "temperature": 1.5, "max_tokens": 8, "seed": 42, "n": 3});
        let a = post(&s, body.clone());
        let b = post(&s, body);
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.body["choices"], b.body["choices"]);
        assert_eq!(a.body["choices"].as_array().unwrap().len(), 3);
        assert_ne!(a.body["id"], b.body["id"]);
    }

    #[test]
    fn stop_strings_and_length_caps_are_honoured() {
        let cfg = ServiceConfig { max_tokens_cap: 5, ..ServiceConfig::default() };
        let p = parse_request(
            br#"{"messages":[{"role":"user","content":"a"}],"max_tokens":100,"stop":["x","yz"],"seed":9}"#,
            &cfg,
            0,
        )
        .unwrap();
        assert_eq!(p.generate.max_new_tokens, 5);
        assert_eq!(p.generate.stop_strings, vec!["x".to_string(), "yz".to_string()]);
        assert_eq!(p.generate.seed, 9);
        assert_eq!(p.generate.sampler.temperature, 1.0);
        let p = parse_request(br#"{"messages":[{"role":"developer","content":"a"}],"stop":"q"}"#, &cfg, 7)
            .unwrap();
        assert_eq!(p.generate.stop_strings, vec!["q".to_string()]);
        assert_eq!(p.generate.seed, 7);
        assert_eq!(p.messages[0].role, Role::System);
    }

    #[test]
    fn bad_requests_get_openai_errors_with_status_codes() {
        let s = service();
        let cases: Vec<(&[u8], &str)> = vec![
            (b"not json", "invalid request body"),
            (br#"{"messages": []}"#, "must not be empty"),
            (br#"{"model": "m"}"#, "missing field `messages`"),
            (br#"{"messages":[{"role":"tool","content":"a"}]}"#, "role `tool`"),
            (br#"{"messages":[{"role":"user","content":"a"}],"temperature":3}"#, "temperature"),
            (br#"{"messages":[{"role":"user","content":"a"}],"top_p":0}"#, "top_p"),
            (br#"{"messages":[{"role":"user","content":"a"}],"max_tokens":0}"#, "max_tokens 0"),
            (br#"{"messages":[{"role":"user","content":"a"}],"n":9}"#, "n 9"),
            (br#"{"messages":[{"role":"user","content":"a"}],"stop":["a","b","c","d","e"]}"#, "stop"),
            (br#"{"messages":[{"role":"user","content":"a"}],"stream":true}"#, "streaming"),
            (br#"{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}"#, "image_url"),
            (br#"{"messages":[{"role":"user","content":"a"}],"max_tokens":5000}"#, "context"),
        ];
        for (body, needle) in cases {
            let r = s.handle("POST", "/v1/chat/completions", body);
            assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(body));
            let msg = r.body["error"]["message"].as_str().unwrap();
            assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
            assert_eq!(r.body["error"]["type"], "invalid_request_error");
        }
        assert_eq!(s.handle("GET", "/v1/chat/completions", b"").status, 405);
        assert_eq!(s.handle("POST", "/v1/models", b"").status, 405);
        let r = s.handle("GET", "/v2/anything", b"");
        assert_eq!((r.status, r.body["error"]["code"].as_str()), (404, Some("not_found")));
    }

    #[test]
    fn route_answers_cheap_requests_and_defers_generation() {
        let s = service();
        assert!(matches!(s.route("GET", "/v1/models", b""), Routed::Reply(r) if r.status == 200));
        assert!(
            matches!(s.route("POST", "/v1/chat/completions", b"{}"), Routed::Reply(r) if r.status == 400)
        );
        let body =
            json!({"messages": [{"role": "user", "content": "abc"}], "temperature": 0, "max_tokens": 6});
        let Routed::Generate(job) = s.route("POST", "/v1/chat/completions", body.to_string().as_bytes())
        else {
            panic!("a valid chat completion is a job");
        };
        assert_eq!(job.params.generate.max_new_tokens, 6);
        assert_eq!(job.prompt, s.policy().encode_chat(&[Message::user("abc")]).unwrap());
        // Completed without stopping: the same reply as `handle` (but for the request number).
        let mut steps = 0;
        let done = s
            .complete(job.clone(), || {
                steps += 1;
                false
            })
            .unwrap();
        assert!(steps >= 2, "asked before the prefill and per step");
        let direct = post(&s, body);
        assert_eq!(done.body["choices"], direct.body["choices"]);
        // Stopped: nothing comes back, and the stop was asked no more after it said yes.
        let mut asked = 0;
        let stopped = s.complete(job, || {
            asked += 1;
            asked == 2
        });
        assert_eq!((stopped, asked), (None, 2));
    }

    #[test]
    fn the_service_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<ChatService>();
    }

    #[test]
    fn models_lists_the_served_model() {
        let r = service().handle("GET", "/v1/models?x=1", b"");
        assert_eq!(r.status, 200);
        assert_eq!(r.body["data"][0]["id"], "tiny");
        assert_eq!(r.body["object"], "list");
    }
}
