//! The `llm` backend against `mentor serve` running the real SmolLM2 GGUF, and the `local`
//! backend with the same model in-process: a real round trip, then failure injection (model
//! reply that is not JSON, a timeout shorter than generation, the server killed). Every
//! failure ends in a rules fallback — the same diagnosis and hint the `rules` mentor gives —
//! never in an error. Budgets are tiny (≤ 32 new tokens, greedy) so this stays fast and
//! deterministic.

use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mentor_agents::llm::ChatModel;
use mentor_agents::llm::{self, first_json_object, LlmClient, LlmConfig};
use mentor_agents::{AgentMentor, Guard, GuardConfig, Prompts};
use mentor_core::assets::AssetDir;
use mentor_core::datasets::Dataset;
use mentor_core::{
    Attempt, Completion, FailureCategory, FinishReason, HintLevel, Intervention, Mentor, MentorRequest, Task,
};
use mentor_policy::{LoadOptions, ModelSource, Policy};
use mentor_trainer::local_mentor::{mentor as local_mentor, LocalConfig, PolicyChat};
use serde_json::{json, Value};

use crate::{data_dir, mentor};
use mentor_verify_math::MathEquivalence;

fn guard() -> Guard {
    Guard::new(GuardConfig::default(), Arc::new(MathEquivalence::default()))
}

fn gguf() -> std::path::PathBuf {
    let gguf = AssetDir::resolve(|k| std::env::var(k).ok()).expect("HOME or MENTOR_HOME").smollm2_gguf();
    assert!(gguf.is_file(), "{} is missing: run `cargo xtask setup`", gguf.display());
    gguf
}

/// GSM8K's first problem (Janet's ducks, answer 18) with two wrong attempts judged by the
/// math verifier.
fn failed_gsm8k() -> (Task, Vec<Attempt>) {
    let task = Dataset::Gsm8k.load_from_dir(&data_dir()).unwrap().into_iter().next().unwrap();
    assert_eq!(task.reference_answer(), Some("18"));
    let attempts = [
        "Janet has 16 eggs. She eats 3, so 16 - 3 = 13 eggs remain. 13 * 2 = 26. The answer is \\boxed{26}.",
        "16 - 3 = 13 eggs.\n13 x 2 = 26 dollars.\n#### 26",
    ]
    .iter()
    .map(|t| Attempt {
        completion: Completion {
            task_id: task.id.clone(),
            text: t.to_string(),
            finish_reason: FinishReason::Stop,
        },
        verdict: mentor_verify_math::check("18", t, &mentor_verify_math::Config::default()),
    })
    .collect::<Vec<_>>();
    assert!(attempts.iter().all(|a| !a.verdict.passed()));
    (task, attempts)
}

fn intervene(m: &AgentMentor, task: &Task, attempts: &[Attempt]) -> Intervention {
    m.intervene(&MentorRequest { task, attempts, level: HintLevel::PLAN, previous_hints: &[] })
        .expect("a mentor with a rules fallback never errs")
}

/// A chat model that keeps every reply it passes on.
struct Recording<M> {
    inner: M,
    replies: Mutex<Vec<String>>,
}

impl<M: ChatModel> Recording<M> {
    fn new(inner: M) -> Arc<Self> {
        Arc::new(Self { inner, replies: Mutex::new(Vec::new()) })
    }

    fn replies(&self) -> Vec<String> {
        self.replies.lock().unwrap().clone()
    }
}

impl<M: ChatModel> ChatModel for Recording<M> {
    fn chat(&self, messages: &[mentor_core::Message]) -> mentor_agents::Result<String> {
        let reply = self.inner.chat(messages)?;
        self.replies.lock().unwrap().push(reply.clone());
        Ok(reply)
    }
}

/// Checks an intervention whose agents asked a real model (`replies`: the diagnoser's, then
/// the tutor's): a guarded hint without the answer; one fallback per reply the `llm` parsing
/// rules refuse (no JSON object with a known `category` / a non-empty `hint`); and when both
/// fell back, exactly the rules intervention.
fn check_against_rules(got: &Intervention, rules: &Intervention, replies: &[String], fallbacks: usize) {
    assert!(replies.len() >= 2, "both agents asked the model: {replies:?}");
    let hint = got.hint.as_ref().expect("a hint that passed the guard");
    assert!(!hint.text.trim().is_empty());
    assert!(!hint.text.contains("18"), "no answer leak: {}", hint.text);
    let diagnosis_ok = first_json_object(&replies[0])
        .is_some_and(|v| serde_json::from_value::<FailureCategory>(v["category"].clone()).is_ok());
    let hint_ok = |r: &String| {
        first_json_object(r).is_some_and(|v| v["hint"].as_str().is_some_and(|h| !h.trim().is_empty()))
    };
    let hints_refused = replies[1..].iter().filter(|r| !hint_ok(r)).count();
    assert_eq!(fallbacks, usize::from(!diagnosis_ok) + hints_refused, "{replies:?}");
    if !diagnosis_ok && hints_refused == replies.len() - 1 {
        assert_eq!(got, rules, "every agent fell back: the rules intervention");
    }
}

/// `mentor serve` on the GGUF with a free port; killed on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start() -> Self {
        let (child, addr, lines) = crate::spawn_serve(&gguf(), &[]);
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, addr }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn post(url: &str, body: &Value) -> (u16, Value) {
    match ureq::post(url).send_json(body.clone()) {
        Ok(r) => (r.status(), r.into_json().unwrap()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_json().unwrap()),
        Err(e) => panic!("{url}: {e}"),
    }
}

fn france() -> (String, usize) {
    let fixture = data_dir().join("../fixtures/smollm2_greedy.json");
    let fixture: Value = serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    let case = fixture["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["prompt"] == "What is the capital of France?")
        .expect("fixture case")
        .clone();
    (case["greedy"].as_str().unwrap().to_string(), case["greedy_ids"].as_array().unwrap().len())
}

#[test]
fn llm_backend_against_mentor_serve_with_failure_injection() {
    let server = Server::start();

    // A real round trip: greedy SmolLM2 through its chat template equals transformers'.
    let (want, want_tokens) = france();
    let body = json!({"model": "anything", "messages": [{"role": "user", "content": "What is the capital of France?"}],
                      "temperature": 0, "max_tokens": 12, "seed": 1});
    let (status, reply) = post(&server.url("/v1/chat/completions"), &body);
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["choices"][0]["message"]["content"], want.as_str());
    assert_eq!(reply["choices"][0]["finish_reason"], "stop");
    assert_eq!(reply["usage"]["completion_tokens"], want_tokens, "the ids end with the stop token");
    let models: Value = ureq::get(&server.url("/v1/models")).call().unwrap().into_json().unwrap();
    assert_eq!(models["data"][0]["id"], "SmolLM2-135M-Instruct.Q4_1");
    assert_eq!(reply["model"], models["data"][0]["id"]);

    // `stop` cuts the text before the stop string; `seed` makes sampling reproducible.
    let cut = json!({"messages": [{"role": "user", "content": "What is the capital of France?"}],
                     "temperature": 0, "max_tokens": 12, "stop": ["Paris"]});
    let (status, reply) = post(&server.url("/v1/chat/completions"), &cut);
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["choices"][0]["message"]["content"], want.split("Paris").next().unwrap());
    assert_eq!(reply["choices"][0]["finish_reason"], "stop");
    let sampled = json!({"messages": [{"role": "user", "content": "Tell me a story."}],
                         "temperature": 1.0, "max_tokens": 6, "seed": 7});
    let (a, b) = (
        post(&server.url("/v1/chat/completions"), &sampled),
        post(&server.url("/v1/chat/completions"), &sampled),
    );
    assert_eq!((a.0, b.0), (200, 200));
    assert_eq!(a.1["choices"], b.1["choices"]);
    let n = a.1["usage"]["completion_tokens"].as_u64().unwrap();
    assert!((1..=6).contains(&n), "max_tokens caps the reply: {}", a.1);

    // Bad requests are JSON errors with their status codes.
    let (status, err) = post(&server.url("/v1/chat/completions"), &json!({"messages": []}));
    assert_eq!((status, err["error"]["type"].as_str()), (400, Some("invalid_request_error")));
    let (status, _) = post(&server.url("/v1/completions"), &json!({}));
    assert_eq!(status, 404);
    match ureq::post(&server.url("/v1/chat/completions")).send_string("{not json") {
        Err(ureq::Error::Status(400, r)) => {
            assert!(r.into_string().unwrap().contains("invalid request body"))
        }
        other => panic!("{other:?}"),
    }

    // Concurrent clients queue; none fails.
    let short = json!({"messages": [{"role": "user", "content": "What is the capital of France?"}],
                       "temperature": 0, "max_tokens": 3});
    let replies: Vec<(u16, Value)> = std::thread::scope(|s| {
        let handles: Vec<_> =
            (0..3).map(|_| s.spawn(|| post(&server.url("/v1/chat/completions"), &short))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (status, r) in &replies {
        assert_eq!(*status, 200, "{r}");
        assert_eq!(r["choices"][0]["message"]["content"], replies[0].1["choices"][0]["message"]["content"]);
    }

    let (task, attempts) = failed_gsm8k();
    let rules = intervene(&AgentMentor::rules(guard()), &task, &attempts);
    assert!(rules.hint.is_some());
    let cfg = LlmConfig {
        base_url: server.url("/v1"),
        model: "SmolLM2".into(),
        timeout: Duration::from_secs(120),
        retries: 0,
        backoff: Duration::from_millis(10),
        temperature: 0.0,
        max_tokens: 32,
        ..LlmConfig::default()
    };

    // The real thing: the role prompts go to SmolLM2, whatever it answers ends in a guarded hint.
    let model = Recording::new(LlmClient::new(cfg.clone()));
    let (m, fallbacks) = llm::chat_mentor("llm", model.clone(), Prompts::default(), guard());
    let got = intervene(&m, &task, &attempts);
    check_against_rules(&got, &rules, &model.replies(), fallbacks.get());

    // Malformed JSON: a one-token reply cannot be a JSON object with a category or a hint.
    let (m, fallbacks) = llm::mentor(LlmConfig { max_tokens: 1, ..cfg.clone() }, Prompts::default(), guard());
    let got = intervene(&m, &task, &attempts);
    assert_eq!(fallbacks.get(), 2);
    assert_eq!(got, rules);

    // Slow: a timeout far shorter than prefill plus 32 tokens.
    let slow = LlmConfig { timeout: Duration::from_millis(30), retries: 1, ..cfg.clone() };
    let (m, fallbacks) = llm::mentor(slow, Prompts::default(), guard());
    let got = intervene(&m, &task, &attempts);
    assert_eq!(fallbacks.get(), 2);
    assert_eq!(got, rules);

    // Down: the server is killed; connections are refused.
    drop(server);
    let (m, fallbacks) = llm::mentor(LlmConfig { retries: 2, ..cfg }, Prompts::default(), guard());
    let got = intervene(&m, &task, &attempts);
    assert_eq!(fallbacks.get(), 2);
    assert_eq!(got, rules);
}

#[test]
fn local_backend_with_smollm2_in_process() {
    let policy = Policy::load(&ModelSource::Gguf(gguf()), &LoadOptions::default()).unwrap();
    let policy = Arc::new(policy);

    // The adapter speaks through the chat template like the server: transformers' greedy text.
    let (want, _) = france();
    let chat = PolicyChat::new(policy.clone(), LocalConfig { temperature: 0.0, max_tokens: 12, seed: 0 });
    assert_eq!(chat.chat(&[mentor_core::Message::user("What is the capital of France?")]).unwrap(), want);

    let (task, attempts) = failed_gsm8k();
    let rules = intervene(&AgentMentor::rules(guard()), &task, &attempts);
    let cfg = LocalConfig { temperature: 0.0, max_tokens: 32, seed: 0 };
    let model = Recording::new(PolicyChat::new(policy.clone(), cfg));
    let (m, fallbacks) = llm::chat_mentor("local", model.clone(), Prompts::default(), guard());
    let got = intervene(&m, &task, &attempts);
    check_against_rules(&got, &rules, &model.replies(), fallbacks.get());

    // A one-token budget cannot hold a JSON reply: both agents fall back to rules.
    let tiny = LocalConfig { temperature: 0.0, max_tokens: 1, seed: 0 };
    let (m, fallbacks) = local_mentor(policy, tiny, Prompts::default(), guard());
    assert_eq!(mentor_core::Mentor::name(&m), "local");
    assert_eq!(intervene(&m, &task, &attempts), rules);
    assert_eq!(fallbacks.get(), 2);
}

#[test]
fn serve_fails_fast_with_clear_errors() {
    // A taken port fails before the model is loaded (the model path does not even exist).
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out =
        mentor().args(["serve", "--model", "/nonexistent/model.gguf", "--port", &port]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&format!("cannot bind 127.0.0.1:{port}")), "{err}");

    // A missing model is named, with the hint.
    let out = mentor().args(["serve", "--model", "/nonexistent/model.gguf", "--port", "0"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("cannot load `/nonexistent/model.gguf`") && err.contains("hint:"), "{err}");
    assert!(!err.contains("listening on"), "{err}");
}
