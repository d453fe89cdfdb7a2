//! `mentor serve` against slow, leaving and excess clients, on loopback with the SmolLM2 GGUF
//! (`cargo xtask setup` installs it). Every wait is bounded; the bounds are generous and come
//! from the server's own short timeouts, not from its speed.
//!
//! - A client that declares a large body and stalls (and one that stalls in its headers) holds
//!   up nobody: `/v1/models` and 8 small chat completions (2 at a time) are all answered while
//!   the stalled ones are still waiting, and these get 408 at their read timeout.
//! - A client that leaves while its generation runs, or while it is queued, is cancelled (the
//!   `/health` counter and the stderr line say so, with the decode steps it took), frees its
//!   slot, and the next request is answered; past `--max-concurrency` + `--max-queue` a request
//!   gets 503 with an OpenAI-style error.
//! - A request past `--request-timeout-s` gets 504.
//!
//! The load test prints its latencies (run with `--nocapture` to see them).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mentor_core::assets::AssetDir;
use serde_json::{json, Value};

fn gguf() -> std::path::PathBuf {
    let gguf = AssetDir::resolve(|k| std::env::var(k).ok()).expect("HOME or MENTOR_HOME").smollm2_gguf();
    assert!(gguf.is_file(), "{} is missing: run `cargo xtask setup`", gguf.display());
    gguf
}

/// `mentor serve` on a free loopback port with extra flags; its stderr is kept; killed on drop.
struct Server {
    child: Child,
    addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(flags: &[&str]) -> Self {
        let (child, addr, lines) = crate::spawn_serve(&gguf(), flags);
        let log = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&log);
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.map_while(|l| l.ok()).for_each(|l| keep.lock().unwrap().push(l)));
        Self { child, addr, log }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn log_lines(&self, needle: &str) -> Vec<String> {
        self.log.lock().unwrap().iter().filter(|l| l.contains(needle)).cloned().collect()
    }

    /// The log lines containing `needle`, once there are at least `n` (at most `limit`): the
    /// server may write its line after the reply, and stderr is drained by another thread.
    fn wait_log(&self, needle: &str, n: usize, limit: Duration) -> Vec<String> {
        let t0 = Instant::now();
        loop {
            let lines = self.log_lines(needle);
            if lines.len() >= n || t0.elapsed() > limit {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn health(&self) -> Value {
        let (status, h) = get(&self.url("/health"));
        assert_eq!(status, 200, "{h}");
        h
    }

    /// Polls `/health` until `ok` holds (at most `limit`).
    fn wait_for(&self, what: &str, limit: Duration, ok: impl Fn(&Value) -> bool) -> Value {
        let t0 = Instant::now();
        loop {
            let h = self.health();
            if ok(&h) {
                return h;
            }
            assert!(t0.elapsed() < limit, "{what}: not within {limit:?}: {h}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A raw client that sends `body` to the chat endpoint and reads nothing (yet).
    fn open_chat(&self, body: &Value) -> TcpStream {
        let body = body.to_string();
        let mut s = TcpStream::connect(&self.addr).unwrap();
        write!(
            s,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        s
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new().timeout(Duration::from_secs(120)).build()
}

fn answer(r: Result<ureq::Response, ureq::Error>, url: &str) -> (u16, Value) {
    match r {
        Ok(r) => (r.status(), r.into_json().unwrap()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_json().unwrap()),
        Err(e) => panic!("{url}: {e}"),
    }
}

fn get(url: &str) -> (u16, Value) {
    answer(agent().get(url).call(), url)
}

fn post(url: &str, body: &Value) -> (u16, Value) {
    answer(agent().post(url).send_json(body.clone()), url)
}

fn chat(content: &str, max_tokens: usize) -> Value {
    json!({"messages": [{"role": "user", "content": content}], "temperature": 0, "max_tokens": max_tokens})
}

/// A chat completion long enough to still be generating when its client leaves: sampled hot,
/// 2,000 tokens at most.
fn long_chat() -> Value {
    json!({"messages": [{"role": "user", "content": "Write a very long story about a dragon and a lighthouse."}],
           "temperature": 1.6, "seed": 11, "max_tokens": 2000})
}

/// Reads a raw client's reply to the end: status and JSON body.
fn read_reply(s: &mut TcpStream, limit: Duration) -> (u16, Value) {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no reply head in {text:?}"));
    (head.split(' ').nth(1).unwrap().parse().unwrap(), serde_json::from_str(body).unwrap())
}

/// Whether the server has sent this client anything yet.
fn answered(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let got = s.peek(&mut byte);
    s.set_nonblocking(false).unwrap();
    match got {
        Ok(_) => true,
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    }
}

/// `requests` small chat completions from `clients` threads: each latency, in ms, sorted.
fn load(server: &Server, requests: usize, clients: usize) -> Vec<f64> {
    let url = server.url("/v1/chat/completions");
    let questions = ["What is 2 + 2?", "Name a colour.", "What is the capital of France?", "Say hello."];
    let mut ms: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let url = &url;
                s.spawn(move || {
                    (c..requests)
                        .step_by(clients)
                        .map(|i| {
                            let t0 = Instant::now();
                            let (status, reply) = post(url, &chat(questions[i % questions.len()], 4));
                            assert_eq!(status, 200, "{reply}");
                            assert!(reply["usage"]["completion_tokens"].as_u64().unwrap() <= 4, "{reply}");
                            t0.elapsed().as_secs_f64() * 1e3
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(ms.len(), requests);
    ms.sort_by(f64::total_cmp);
    ms
}

fn summary(ms: &[f64]) -> String {
    let median =
        if ms.len() % 2 == 1 { ms[ms.len() / 2] } else { (ms[ms.len() / 2 - 1] + ms[ms.len() / 2]) / 2.0 };
    format!("median {median:.0} ms, max {:.0} ms", ms[ms.len() - 1])
}

#[test]
fn serve_a_slow_client_holds_up_nobody() {
    // Long enough for the load below on a busy 2-core machine; the stalled clients wait it out.
    const READ_TIMEOUT_S: u64 = 60;
    let timeout = READ_TIMEOUT_S.to_string();
    let server = Server::start(&["--max-concurrency", "2", "--max-queue", "8", "--read-timeout-s", &timeout]);
    let (requests, clients) = (8, 2);
    // A first request warms up the allocator and caches; it is not counted.
    assert_eq!(post(&server.url("/v1/chat/completions"), &chat("Hi.", 4)).0, 200);
    let plain = load(&server, requests, clients);

    // A body declared at 2,000,000 bytes of which 12 come, and a head that never ends.
    let stalled_at = Instant::now();
    let mut body = TcpStream::connect(&server.addr).unwrap();
    body.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n{\"messages\":")
        .unwrap();
    let mut head = TcpStream::connect(&server.addr).unwrap();
    head.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Le").unwrap();
    let (status, models) = get(&server.url("/v1/models"));
    assert_eq!((status, models["data"][0]["id"].as_str()), (200, Some("SmolLM2-135M-Instruct.Q4_1")));
    let slowed = load(&server, requests, clients);
    let (status, models) = get(&server.url("/v1/models"));
    assert_eq!(status, 200, "{models}");
    let waited = stalled_at.elapsed();
    eprintln!(
        "serve load: {requests} requests of max_tokens 4, {clients} at a time, --max-concurrency 2: \
         without a slow client {}; with a stalled body and a stalled head {} ({waited:?} in all)",
        summary(&plain),
        summary(&slowed)
    );
    // Everyone was answered while the stalled clients still waited for their 408.
    assert!(!answered(&body) && !answered(&head), "the stalled clients timed out first ({waited:?})");

    for s in [&mut body, &mut head] {
        let (status, err) = read_reply(s, Duration::from_secs(READ_TIMEOUT_S + 60));
        assert_eq!((status, err["error"]["code"].as_str()), (408, Some("request_timeout")), "{err}");
    }
    assert!(stalled_at.elapsed() >= Duration::from_secs(READ_TIMEOUT_S));
    let h = server.health();
    assert_eq!((h["timed_out"].as_u64(), h["generating"].as_u64()), (Some(2), Some(0)), "{h}");
    assert_eq!(server.wait_log(": 408", 2, Duration::from_secs(20)).len(), 2, "{:?}", server.log_lines(""));
}

/// The decode steps a cancelled generation took, from its stderr line.
fn steps_of(line: &str) -> u64 {
    let at = line.find(" after ").unwrap_or_else(|| panic!("no step count in {line:?}"));
    line[at + 7..].split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn serve_cancels_clients_that_leave_and_refuses_past_the_queue() {
    let server = Server::start(&["--max-concurrency", "1", "--max-queue", "1"]);
    let long = long_chat();

    // A generates; cheap requests are answered meanwhile.
    let generating = server.open_chat(&long);
    server.wait_for("A generating", Duration::from_secs(60), |h| h["generating"] == 1);
    let (status, models) = get(&server.url("/v1/models"));
    assert_eq!(status, 200, "{models}");
    // B waits for the one slot; C finds slot and queue taken.
    let queued = server.open_chat(&long);
    server.wait_for("B queued", Duration::from_secs(30), |h| h["queued"] == 1);
    let (status, err) = post(&server.url("/v1/chat/completions"), &chat("Hi.", 4));
    assert_eq!(status, 503, "{err}");
    assert_eq!(
        (err["error"]["type"].as_str(), err["error"]["code"].as_str()),
        (Some("server_error"), Some("server_busy"))
    );
    assert!(err["error"]["message"].as_str().unwrap().contains("busy"), "{err}");

    // B leaves the queue; then A leaves mid-generation.
    drop(queued);
    server.wait_for("B cancelled", Duration::from_secs(30), |h| h["cancelled"] == 1 && h["queued"] == 0);
    assert!(!answered(&generating), "A is still generating");
    let left_at = Instant::now();
    drop(generating);
    server.wait_for("A cancelled", Duration::from_secs(30), |h| h["cancelled"] == 2 && h["generating"] == 0);
    let t0 = Instant::now();
    let (status, reply) = post(&server.url("/v1/chat/completions"), &chat("Hi.", 4));
    assert_eq!(status, 200, "{reply}");
    let next = t0.elapsed();

    let lines = server.wait_log("cancelled", 2, Duration::from_secs(20));
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("while queued"), "{lines:?}");
    assert!(lines[1].contains("generating after"), "{lines:?}");
    let steps = steps_of(&lines[1]);
    assert!(steps < 2000, "A stopped before its 2,000 tokens: {lines:?}");
    eprintln!(
        "serve cancel: A stopped after {steps} of up to 2000 decode steps, {:?} after it left; the next 4-token request took {next:?}",
        t0 - left_at
    );
    let h = server.health();
    assert_eq!(
        (h["rejected"].as_u64(), h["generating"].as_u64(), h["queued"].as_u64()),
        (Some(1), Some(0), Some(0)),
        "{h}"
    );
}

#[test]
fn serve_answers_504_past_the_request_timeout() {
    let server = Server::start(&["--request-timeout-s", "2"]);
    let t0 = Instant::now();
    let (status, err) = post(&server.url("/v1/chat/completions"), &long_chat());
    assert_eq!((status, err["error"]["code"].as_str()), (504, Some("timeout")), "{err}");
    assert!(t0.elapsed() >= Duration::from_secs(2));
    let h = server.health();
    assert_eq!((h["timed_out"].as_u64(), h["generating"].as_u64()), (Some(1), Some(0)), "{h}");
    let lines = server.wait_log(": 504", 1, Duration::from_secs(20));
    assert_eq!(lines.len(), 1, "{:?}", server.log_lines(""));
    assert!(steps_of(&lines[0]) < 2000, "{lines:?}");
}
