//! The `llm` backend against a scripted OpenAI-compatible endpoint on loopback.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mentor_agents::llm::{self, LlmConfig};
use mentor_agents::Prompts;
use mentor_core::{FailureCategory, FinishReason, HintLevel, Mentor, MentorRequest, Task};

use crate::{guard, judged};

/// One scripted reply: HTTP status, assistant content (or raw body), delay before answering.
#[derive(Clone)]
struct Reply {
    status: u16,
    body: String,
    delay: Duration,
}

fn chat(content: &str) -> Reply {
    let body =
        serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}]}).to_string();
    Reply { status: 200, body, delay: Duration::ZERO }
}

/// Serves `replies` in order (the last one repeats), at most 16 connections, then stops.
fn serve(replies: Vec<Reply>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for (i, stream) in listener.incoming().take(16).enumerate() {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            let r = replies[i.min(replies.len() - 1)].clone();
            std::thread::sleep(r.delay);
            let _ = write!(
                stream,
                "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                r.status,
                r.body.len(),
                r.body
            );
        }
    });
    (format!("http://{addr}/v1"), hits)
}

fn config(base_url: String) -> LlmConfig {
    LlmConfig {
        base_url,
        model: "test".into(),
        timeout: Duration::from_millis(800),
        retries: 1,
        backoff: Duration::from_millis(10),
        ..LlmConfig::default()
    }
}

fn janet_group() -> (Task, Vec<mentor_core::Attempt>) {
    let task = mentor_core::datasets::Dataset::Gsm8k.load_from_dir(&crate::data_dir()).unwrap().remove(0);
    let attempts = judged(&task, &["16 - 3 = 13. 13 * 2 = 26. \\boxed{26}"], FinishReason::Stop);
    (task, attempts)
}

fn run(replies: Vec<Reply>) -> (mentor_core::Intervention, usize, usize) {
    let (url, hits) = serve(replies);
    let (mentor, fallbacks) = llm::mentor(config(url), Prompts::default(), guard());
    let (task, attempts) = janet_group();
    let i = mentor
        .intervene(&MentorRequest {
            task: &task,
            attempts: &attempts,
            level: HintLevel::PLAN,
            previous_hints: &[],
        })
        .unwrap();
    (i, fallbacks.get(), hits.load(Ordering::SeqCst))
}

#[test]
fn round_trip_uses_the_models_diagnosis_and_hint() {
    let (i, fallbacks, hits) = run(vec![
        chat("Here you go:\n{\"category\": \"wrong_method\", \"shared_mode\": \"they forget the muffins\", \"evidence\": [\"16 - 3 = 13\"], \"first_wrong_step\": 1, \"confidence\": 0.9}"),
        chat("{\"hint\": \"Remember she also uses 4 eggs for muffins. The final answer is 18.\"}"),
    ]);
    assert_eq!((fallbacks, hits), (0, 2));
    let d = i.diagnosis.unwrap();
    assert_eq!(d.category, FailureCategory::WrongMethod);
    assert_eq!(d.shared_mode, "they forget the muffins");
    assert_eq!(d.first_wrong_step, Some(0));
    let h = i.hint.unwrap().text;
    assert!(h.starts_with("Remember she also uses 4 eggs"), "{h}");
    assert!(!h.contains("18"), "the guard redacts the leaked answer: {h}");
}

#[test]
fn server_down_falls_back_to_rules() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }; // listener dropped: nothing listens there now
    let (mentor, fallbacks) =
        llm::mentor(config(format!("http://127.0.0.1:{port}/v1")), Prompts::default(), guard());
    let (task, attempts) = janet_group();
    let i = mentor
        .intervene(&MentorRequest {
            task: &task,
            attempts: &attempts,
            level: HintLevel::PLAN,
            previous_hints: &[],
        })
        .unwrap();
    assert_eq!(fallbacks.get(), 2, "diagnoser and tutor both fell back");
    assert_eq!(i.diagnosis.unwrap().category, FailureCategory::WrongMethod, "the rules diagnosis");
    assert!(i.hint.unwrap().text.contains("16 - 3 - 4 = 9"));
}

#[test]
fn slow_server_times_out_and_falls_back() {
    let slow = Reply { delay: Duration::from_millis(1500), ..chat("{\"hint\": \"late\"}") };
    let (i, fallbacks, hits) = run(vec![slow]);
    assert_eq!(fallbacks, 2);
    assert!(hits >= 2, "it retried");
    assert!(i.hint.is_some());
}

#[test]
fn malformed_replies_fall_back() {
    let (i, fallbacks, _) = run(vec![chat("I cannot answer in JSON, sorry."), chat("{\"hint\": \"\"}")]);
    assert_eq!(fallbacks, 2);
    assert!(i.hint.unwrap().text.contains("16 - 3 - 4 = 9"));
    let (_, fallbacks, _) =
        run(vec![Reply { status: 200, body: "not json at all".into(), delay: Duration::ZERO }]);
    assert_eq!(fallbacks, 2);
}

#[test]
fn server_errors_are_retried() {
    let err = Reply { status: 503, body: "busy".into(), delay: Duration::ZERO };
    let (i, fallbacks, hits) = run(vec![
        err.clone(),
        chat("{\"category\": \"arithmetic_slip\", \"shared_mode\": \"bad sums\", \"evidence\": [], \"first_wrong_step\": null, \"confidence\": 0.5}"),
        err,
        chat("{\"hint\": \"Recheck 16 - 3.\"}"),
    ]);
    assert_eq!(fallbacks, 0);
    assert_eq!(hits, 4);
    assert_eq!(i.diagnosis.unwrap().category, FailureCategory::ArithmeticSlip);
    assert_eq!(i.hint.unwrap().text, "Recheck 16 - 3.");
}
