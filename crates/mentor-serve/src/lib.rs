//! An OpenAI-compatible chat-completions endpoint over a local `mentor-policy` model: what
//! `mentor serve` runs, and what the `llm` mentor backend can talk to.
//!
//! ```no_run
//! let options = mentor_serve::ServeOptions::new("SmolLM2-135M-Instruct.Q4_1.gguf");
//! mentor_serve::run(&options)?; // serves until the process is killed
//! # Ok::<(), mentor_serve::ServeError>(())
//! ```
//!
//! Routing, validation and generation live in `openai.rs` (socket-free); this module is the HTTP
//! layer: a small HTTP/1.1 server on `std::net`, built so that no client can hold up another.
//! (It replaced `tiny_http`, which reads request heads on unbounded threads without a timeout,
//! leaves the body to be read on the serving loop, and hides the socket, so a stalled body could
//! not be timed out with a 408 and a client that went away could not be noticed.)
//!
//! - **Connections.** One thread accepts; each connection is read and answered on a thread of
//!   its own, at most `--max-connections` at once (past that, a new connection gets 503 at once
//!   and is closed). Every connection carries one request and is closed after the reply
//!   (`Connection: close`).
//! - **Read timeouts.** The request line, the headers and the body must all arrive within
//!   `--read-timeout-s` of the connection being accepted: the socket's read timeout is set to
//!   the time left before every read, so a trickle of bytes does not extend it. Past it the
//!   client gets 408 and the connection is closed. Heads over 16 KiB get 431, bodies over
//!   4 MiB 413 (unread), chunked bodies 411 (send `Content-Length`). A reply must also be
//!   taken within `--read-timeout-s` per write.
//! - **Cheap requests** (`GET /v1/models`, `GET /health`, every error) are answered on their
//!   connection's thread as soon as they are read, whatever is generating.
//! - **Generation slots.** At most `--max-concurrency` chat completions generate at once (they
//!   share the tensor threads of `--threads`); up to `--max-queue` more wait, served in order of
//!   arrival; past that a request gets 503 with `Retry-After: 1`.
//! - **Cancellation.** A request waiting for a slot or generating looks at its client every
//!   100 ms (a non-blocking peek at the socket: end of stream or a socket error means the
//!   client is gone) and at its deadline, `--request-timeout-s` after it was accepted. A gone
//!   client's request leaves the queue, or its generation stops at the next decode step
//!   (`mentor_policy::Policy::generate_until`); stderr gets a line with `cancelled`. A deadline
//!   stops it the same way and answers 504. A client must therefore not half-close its socket
//!   (`shutdown(SHUT_WR)`) while it waits for the reply: that reads as leaving.
//! - **`GET /health`**: `{"status":"ok", "generating", "queued", "connections", "served",
//!   "cancelled", "timed_out", "rejected"}` (counts since start).
//!
//! Limits that remain: many slow clients at once can fill `--max-connections` until their read
//! timeouts expire (there is no per-address limit), and the server has no TLS.

#![deny(missing_docs)]

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mentor_policy::{HubOptions, LoadOptions, ModelSource, Policy};
use serde_json::json;

use self::openai::{ChatJob, ChatService, Reply, Routed, ServiceConfig};

/// The crate's result.
pub type Result<T, E = ServeError> = std::result::Result<T, E>;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A limit or timeout out of range; the message names the option.
    #[error("{0}")]
    Options(String),
    /// The address could not be bound (taken, not local, no permission).
    #[error("cannot bind {address}: {source}")]
    Bind {
        /// `host:port` as given.
        address: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The model could not be loaded.
    #[error("cannot load `{model}`: {source}\nhint: pass a Hub repo id, a model directory or a .gguf file (`cargo xtask setup` installs SmolLM2's GGUF under $MENTOR_HOME/models)")]
    Load {
        /// The model argument.
        model: String,
        /// The loader's error.
        #[source]
        source: mentor_policy::Error,
    },
    /// The model has no chat template, so it cannot answer chat completions.
    #[error("`{0}` has no chat template: it cannot serve chat completions")]
    NoChatTemplate(String),
    /// Accepting connections kept failing (more than a thousand times in a row).
    #[error("accept keeps failing: {0}")]
    Accept(#[source] std::io::Error),
}

/// What to serve and within which bounds (the flags of `mentor serve`, same defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct ServeOptions {
    /// Hub repo id (`org/name[@revision]`), a local model directory, or a `.gguf` file.
    pub model: String,
    /// Address to bind.
    pub host: String,
    /// Port to bind; 0 picks a free one (the bound address is printed on stderr as
    /// `listening on http://ADDR`).
    pub port: u16,
    /// Model id listed by `/v1/models` and echoed in replies (default: from `model`).
    pub model_id: Option<String>,
    /// `max_tokens` for requests that give none.
    pub default_max_tokens: usize,
    /// Upper bound on `max_tokens` (larger requests are clamped).
    pub max_tokens_cap: usize,
    /// Chat completions generating at once.
    pub max_concurrency: usize,
    /// Chat completions waiting for a generation slot; past that, 503.
    pub max_queue: usize,
    /// Connections open at once; must exceed `max_concurrency + max_queue`.
    pub max_connections: usize,
    /// Seconds a client has to send its whole request; also the limit on each reply write.
    pub read_timeout_s: f64,
    /// Seconds from connecting to the reply; past that, 504.
    pub request_timeout_s: f64,
}

impl ServeOptions {
    /// `model` on 127.0.0.1:8080 with the CLI's defaults.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            host: "127.0.0.1".into(),
            port: 8080,
            model_id: None,
            default_max_tokens: 256,
            max_tokens_cap: 2048,
            max_concurrency: 2,
            max_queue: 16,
            max_connections: 64,
            read_timeout_s: 30.0,
            request_timeout_s: 300.0,
        }
    }
}

pub mod openai;

/// Largest request body read (bytes); larger ones get 413.
const MAX_BODY: u64 = 4 << 20;
/// Largest request head (request line and headers, bytes); larger ones get 431.
const MAX_HEAD: usize = 16 << 10;
/// How often a waiting or generating request looks at its client.
const POLL: Duration = Duration::from_millis(100);
/// How long a connection answered before its request was read is drained before closing (so
/// the client reads the reply instead of a reset).
const LINGER: Duration = Duration::from_secs(1);
/// Stack of a connection thread (generation runs on it).
const STACK: usize = 8 << 20;
/// Most connections past `--max-connections` answered 503 at once (the rest are closed).
const MAX_REJECTING: usize = 16;

/// The server's bounds, from the flags.
#[derive(Debug, Clone, PartialEq)]
struct Limits {
    max_concurrency: usize,
    max_queue: usize,
    max_connections: usize,
    read_timeout: Duration,
    request_timeout: Duration,
}

impl Limits {
    fn from_args(args: &ServeOptions) -> Result<Self> {
        let seconds = |flag: &str, s: f64| {
            if s > 0.0 {
                Duration::try_from_secs_f64(s).map_err(|e| ServeError::Options(format!("{flag} {s}: {e}")))
            } else {
                Err(ServeError::Options(format!("{flag} {s} must be a positive number of seconds")))
            }
        };
        let limits = Self {
            max_concurrency: args.max_concurrency,
            max_queue: args.max_queue,
            max_connections: args.max_connections,
            read_timeout: seconds("--read-timeout-s", args.read_timeout_s)?,
            request_timeout: seconds("--request-timeout-s", args.request_timeout_s)?,
        };
        limits.check()?;
        Ok(limits)
    }

    fn check(&self) -> Result<()> {
        if self.max_concurrency == 0 {
            return Err(ServeError::Options("--max-concurrency must be at least 1".into()));
        }
        if self.max_connections <= self.max_concurrency + self.max_queue {
            return Err(ServeError::Options(format!(
                "--max-connections {} must exceed --max-concurrency {} + --max-queue {} (room for the requests that are not generating)",
                self.max_connections,
                self.max_concurrency,
                self.max_queue
            )));
        }
        Ok(())
    }
}

/// The id a model argument is served under: a file's stem, a directory's name, a repo id.
fn default_model_id(model: &str) -> String {
    match ModelSource::parse(model) {
        ModelSource::Gguf(p) => p.file_stem().map(|s| s.to_string_lossy().into_owned()),
        ModelSource::Dir(p) => Path::new(&p).file_name().map(|s| s.to_string_lossy().into_owned()),
        ModelSource::Hub { .. } => None,
    }
    .unwrap_or_else(|| model.to_string())
}

/// Serves `args.model` until the process is killed (or accepting fails for good). Progress
/// lines (what is served, the limits, `listening on http://ADDR`, one line per request) go to
/// stderr.
pub fn run(args: &ServeOptions) -> Result<()> {
    let limits = Limits::from_args(args)?;
    // Bind first: a taken port fails at once, not after loading the model; connections made
    // while the model loads wait in the backlog.
    let address = format!("{}:{}", args.host, args.port);
    let bind_error = |source| ServeError::Bind { address: address.clone(), source };
    let listener = TcpListener::bind((args.host.as_str(), args.port)).map_err(bind_error)?;
    let addr: SocketAddr = listener.local_addr().map_err(bind_error)?;
    let hub = HubOptions::from_env(|k| std::env::var(k).ok());
    let opts = LoadOptions { hub, ..LoadOptions::default() };
    let policy = Policy::load(&ModelSource::parse(&args.model), &opts)
        .map_err(|source| ServeError::Load { model: args.model.clone(), source })?;
    if policy.chat_template().is_none() {
        return Err(ServeError::NoChatTemplate(args.model.clone()));
    }
    let cfg = ServiceConfig {
        model_id: args.model_id.clone().unwrap_or_else(|| default_model_id(&args.model)),
        default_max_tokens: args.default_max_tokens,
        max_tokens_cap: args.max_tokens_cap,
    };
    let service = ChatService::new(policy, cfg);
    eprintln!("serving `{}` as `{}`", args.model, service.config().model_id);
    eprintln!(
        "limits: {} generating, {} queued, {} connections; read timeout {:?}, request timeout {:?}",
        limits.max_concurrency,
        limits.max_queue,
        limits.max_connections,
        limits.read_timeout,
        limits.request_timeout
    );
    eprintln!("listening on http://{addr}");
    serve(listener, Arc::new(Server::new(service, limits)))
}

/// Accepts connections until the listener fails for good, each on its own thread.
fn serve(listener: TcpListener, server: Arc<Server>) -> Result<()> {
    let mut failures = 0u32;
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => {
                failures = 0;
                s
            }
            Err(e) => {
                // Out of descriptors, an aborted handshake: wait a little and go on.
                failures += 1;
                eprintln!("serve: accept failed: {e}");
                if failures > 1000 {
                    return Err(ServeError::Accept(e));
                }
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let accepted = Instant::now();
        let Some(permit) = Permit::take(&server, |s| &s.connections, server.limits.max_connections) else {
            reject(&server, stream);
            continue;
        };
        let spawned =
            std::thread::Builder::new().name("serve-conn".into()).stack_size(STACK).spawn(move || {
                permit.server.connection(stream, accepted);
                drop(permit);
            });
        if let Err(e) = spawned {
            eprintln!("serve: cannot start a connection thread: {e}");
        }
    }
    Ok(())
}

/// Counts since the start.
#[derive(Debug, Default)]
struct Stats {
    served: AtomicU64,
    cancelled: AtomicU64,
    timed_out: AtomicU64,
    rejected: AtomicU64,
}

/// The shared state of a running server.
struct Server {
    service: ChatService,
    limits: Limits,
    gate: Gate,
    connections: AtomicUsize,
    rejecting: AtomicUsize,
    stats: Stats,
}

/// A place counted in one of the server's counters while it lives.
struct Permit {
    server: Arc<Server>,
    counter: fn(&Server) -> &AtomicUsize,
}

impl Permit {
    /// A place, if the counter is below `max`.
    fn take(server: &Arc<Server>, counter: fn(&Server) -> &AtomicUsize, max: usize) -> Option<Self> {
        counter(server)
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1))
            .ok()
            .map(|_| Self { server: Arc::clone(server), counter })
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        (self.counter)(&self.server).fetch_sub(1, Ordering::AcqRel);
    }
}

/// Answers a connection past `--max-connections` with 503, on a short-lived thread that
/// lingers so the client reads the reply; past [`MAX_REJECTING`] of those at once, the
/// connection is closed unanswered.
fn reject(server: &Arc<Server>, stream: TcpStream) {
    server.stats.rejected.fetch_add(1, Ordering::Relaxed);
    let Some(permit) = Permit::take(server, |s| &s.rejecting, MAX_REJECTING) else {
        return;
    };
    let busy = Reply::error(
        503,
        "server_error",
        format!("the server is busy: {} connections are open; retry later", server.limits.max_connections),
        None,
    );
    let spawned = std::thread::Builder::new().name("serve-reject".into()).spawn(move || {
        let _ = stream.set_write_timeout(Some(LINGER));
        if write_reply(&stream, &busy).is_ok() {
            linger(&stream);
        }
        drop(permit);
    });
    if let Err(e) = spawned {
        eprintln!("serve: cannot start a thread to answer 503: {e}");
    }
}

/// Why a request stopped before its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The client closed its end or reset the connection.
    Gone,
    /// `--request-timeout-s` passed.
    Deadline,
}

/// Watches a request's client and deadline, cheaply enough to ask once per decode step.
struct Watch<'a> {
    stream: &'a TcpStream,
    deadline: Instant,
    next_look: Instant,
    stopped: Option<Stop>,
    asked: u64,
}

impl<'a> Watch<'a> {
    fn new(stream: &'a TcpStream, deadline: Instant) -> Self {
        Self { stream, deadline, next_look: Instant::now(), stopped: None, asked: 0 }
    }

    /// Why to stop, if the request should.
    fn check(&mut self) -> Option<Stop> {
        self.asked += 1;
        if self.stopped.is_none() {
            let now = Instant::now();
            if now >= self.deadline {
                self.stopped = Some(Stop::Deadline);
            } else if now >= self.next_look {
                self.next_look = now + POLL;
                if client_gone(self.stream) {
                    self.stopped = Some(Stop::Gone);
                }
            }
        }
        self.stopped
    }
}

/// Whether the client has closed or reset its connection (a request was read in full, so
/// nothing more is expected from it): a non-blocking peek.
fn client_gone(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return true;
    }
    let mut byte = [0u8; 1];
    let gone = match stream.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted),
    };
    gone | stream.set_nonblocking(false).is_err()
}

impl Server {
    fn new(service: ChatService, limits: Limits) -> Self {
        let gate = Gate::new(limits.max_concurrency, limits.max_queue);
        Self {
            service,
            limits,
            gate,
            connections: AtomicUsize::new(0),
            rejecting: AtomicUsize::new(0),
            stats: Stats::default(),
        }
    }

    fn health(&self) -> Reply {
        let (generating, queued) = self.gate.load();
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Reply {
            status: 200,
            body: json!({
                "status": "ok",
                "generating": generating,
                "queued": queued,
                "connections": self.connections.load(Ordering::Relaxed),
                "served": n(&self.stats.served),
                "cancelled": n(&self.stats.cancelled),
                "timed_out": n(&self.stats.timed_out),
                "rejected": n(&self.stats.rejected),
            }),
        }
    }

    /// Reads, answers and closes one connection.
    fn connection(&self, stream: TcpStream, accepted: Instant) {
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(self.limits.read_timeout));
        let request = match read_request(&stream, accepted + self.limits.read_timeout) {
            Ok(r) => r,
            Err(Failure::Gone) => return,
            Err(Failure::Reply(reply)) => {
                if reply.status == 408 {
                    self.stats.timed_out.fetch_add(1, Ordering::Relaxed);
                    eprintln!(
                        "serve: {}: no complete request within the read timeout of {:?}: 408",
                        peer(&stream),
                        self.limits.read_timeout
                    );
                }
                self.answer(&stream, &reply);
                linger(&stream);
                return;
            }
        };
        let path = request.target.split('?').next().unwrap_or("").trim_end_matches('/');
        let routed = match (request.method.as_str(), path) {
            ("GET", "/health") => Routed::Reply(self.health()),
            (method, "/health") => Routed::Reply(Reply::error(
                405,
                "invalid_request_error",
                format!("{method} is not allowed on /health"),
                None,
            )),
            (method, _) => self.service.route(method, &request.target, &request.body),
        };
        match routed {
            Routed::Reply(reply) => self.answer(&stream, &reply),
            Routed::Generate(job) => {
                if let Some(reply) = self.generate(&stream, job, accepted + self.limits.request_timeout) {
                    self.answer(&stream, &reply);
                }
            }
        }
        let _ = stream.shutdown(Shutdown::Write);
    }

    /// Waits for a generation slot and generates, watching the client and the deadline. `None`:
    /// the client is gone, nothing to send.
    fn generate(&self, stream: &TcpStream, job: ChatJob, deadline: Instant) -> Option<Reply> {
        let id = format!("chatcmpl-{}", job.k);
        let mut watch = Watch::new(stream, deadline);
        let slot = match self.gate.acquire(|| watch.check().is_none()) {
            Admission::Granted(slot) => slot,
            Admission::Full { generating, queued } => {
                self.stats.rejected.fetch_add(1, Ordering::Relaxed);
                eprintln!("serve: {id}: {generating} generating and {queued} queued: 503");
                return Some(Reply::error(
                    503,
                    "server_error",
                    format!("the server is busy ({generating} generating, {queued} waiting); retry later"),
                    None,
                ));
            }
            Admission::GaveUp => return self.stopped(&id, watch.stopped, "while queued", 0),
        };
        let steps_before = watch.asked;
        let reply = self.service.complete(job, || watch.check().is_some());
        drop(slot);
        match reply {
            Some(reply) => Some(reply),
            None => self.stopped(&id, watch.stopped, "generating", watch.asked - steps_before),
        }
    }

    /// Logs and counts a request stopped early; the reply to send, if any.
    fn stopped(&self, id: &str, why: Option<Stop>, when: &str, steps: u64) -> Option<Reply> {
        let steps = if steps > 0 { format!(" after {steps} decode steps") } else { String::new() };
        match why {
            Some(Stop::Gone) => {
                let n = self.stats.cancelled.fetch_add(1, Ordering::Relaxed) + 1;
                eprintln!(
                    "serve: {id}: the client went away {when}{steps}: cancelled ({n} cancelled so far)"
                );
                None
            }
            Some(Stop::Deadline) | None => {
                self.stats.timed_out.fetch_add(1, Ordering::Relaxed);
                eprintln!(
                    "serve: {id}: request timeout of {:?} {when}{steps}: 504",
                    self.limits.request_timeout
                );
                Some(Reply::error(
                    504,
                    "server_error",
                    format!(
                        "no reply within the request timeout of {:?} (the server's --request-timeout-s)",
                        self.limits.request_timeout
                    ),
                    None,
                ))
            }
        }
    }

    fn answer(&self, stream: &TcpStream, reply: &Reply) {
        match write_reply(stream, reply) {
            Ok(()) => {
                self.stats.served.fetch_add(1, Ordering::Relaxed);
            }
            // The client went away (e.g. its own timeout fired); the server carries on.
            Err(e) => eprintln!("serve: {}: cannot send the {} reply: {e}", peer(stream), reply.status),
        }
    }
}

fn peer(stream: &TcpStream) -> String {
    stream.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "a client".into())
}

/// After answering a request that was not read in full: stop sending, then read and drop what
/// the client still sends, for up to [`LINGER`], so that closing does not reset the connection
/// before the client has read the reply.
fn linger(stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let end = Instant::now() + LINGER;
    let mut sink = [0u8; 8192];
    let mut left = MAX_BODY + MAX_HEAD as u64;
    while left > 0 {
        let wait = end.saturating_duration_since(Instant::now());
        if wait.is_zero() || stream.set_read_timeout(Some(wait)).is_err() {
            return;
        }
        match (&*stream).read(&mut sink) {
            Ok(0) => return,
            Ok(n) => left = left.saturating_sub(n as u64),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// The bytes of a reply: JSON, a length, and `Connection: close`.
fn encode_reply(reply: &Reply) -> Vec<u8> {
    let body = reply.body.to_string();
    let retry = if reply.status == 503 { "Retry-After: 1\r\n" } else { "" };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{retry}\r\n",
        reply.status,
        reason(reply.status),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn write_reply(mut stream: &TcpStream, reply: &Reply) -> std::io::Result<()> {
    stream.write_all(&encode_reply(reply))?;
    stream.flush()
}

/// A request read in full.
#[derive(Debug, Clone, PartialEq)]
struct Request {
    method: String,
    target: String,
    body: Vec<u8>,
}

/// Why no request came out of a connection.
#[derive(Debug, PartialEq)]
enum Failure {
    /// The client closed the connection or it failed: nothing to answer.
    Gone,
    /// Answer this and close.
    Reply(Reply),
}

fn invalid(status: u16, message: impl Into<String>) -> Failure {
    Failure::Reply(Reply::error(status, "invalid_request_error", message, None))
}

/// What the head of a request says.
#[derive(Debug, Clone, PartialEq)]
struct Head {
    method: String,
    target: String,
    content_length: Option<u64>,
    expect_continue: bool,
}

/// Parses a request head (the bytes before the blank line).
fn parse_head(head: &[u8]) -> std::result::Result<Head, Failure> {
    let text = std::str::from_utf8(head).map_err(|_| invalid(400, "the request head is not UTF-8"))?;
    // A client may send empty lines before the request line (RFC 9112 §2.2).
    let mut lines = text.trim_start_matches("\r\n").split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut parts = line.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) if !m.is_empty() && !t.is_empty() => (m, t, v),
        _ => return Err(invalid(400, format!("malformed request line {line:?}"))),
    };
    if !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(invalid(400, format!("malformed method {method:?}")));
    }
    match version {
        "HTTP/1.1" | "HTTP/1.0" => {}
        v if v.starts_with("HTTP/") => {
            return Err(invalid(505, format!("{v} is not supported: send HTTP/1.1")));
        }
        v => return Err(invalid(400, format!("malformed HTTP version {v:?}"))),
    }
    let mut content_length = None;
    let mut expect_continue = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(invalid(400, format!("malformed header line {line:?}")));
        };
        if name.is_empty() || name.bytes().any(|b| b.is_ascii_whitespace()) {
            return Err(invalid(400, format!("malformed header name {name:?}")));
        }
        let value = value.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case("content-length") {
            let n = (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()))
                .then(|| value.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| invalid(400, format!("malformed Content-Length {value:?}")))?;
            if content_length.is_some_and(|m| m != n) {
                return Err(invalid(400, "conflicting Content-Length headers"));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(invalid(411, "chunked request bodies are not supported: send a Content-Length"));
        } else if name.eq_ignore_ascii_case("expect") {
            expect_continue |= value.eq_ignore_ascii_case("100-continue");
        }
    }
    Ok(Head { method: method.to_string(), target: target.to_string(), content_length, expect_continue })
}

/// One read that gives up at `deadline` (408).
fn read_by(mut stream: &TcpStream, buf: &mut [u8], deadline: Instant) -> std::result::Result<usize, Failure> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(invalid(408, "the request did not arrive within the read timeout"));
        }
        stream.set_read_timeout(Some(left)).map_err(|_| Failure::Gone)?;
        match stream.read(buf) {
            Ok(0) => return Err(Failure::Gone),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Err(Failure::Gone),
        }
    }
}

/// Reads one request (head and body) by `deadline`.
fn read_request(stream: &TcpStream, deadline: Instant) -> std::result::Result<Request, Failure> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buf.len() > MAX_HEAD {
            return Err(invalid(431, format!("the request head is over {MAX_HEAD} bytes")));
        }
        let n = read_by(stream, &mut chunk, deadline)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    if head_end > MAX_HEAD {
        return Err(invalid(431, format!("the request head is over {MAX_HEAD} bytes")));
    }
    let head = parse_head(&buf[..head_end])?;
    let len = head.content_length.unwrap_or(0);
    if len > MAX_BODY {
        return Err(Failure::Reply(Reply::error(
            413,
            "invalid_request_error",
            format!("request body over {MAX_BODY} bytes"),
            None,
        )));
    }
    let len = len as usize;
    let mut body = buf.split_off(head_end + 4);
    if head.expect_continue && body.len() < len {
        let mut s = stream;
        s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").map_err(|_| Failure::Gone)?;
    }
    while body.len() < len {
        let want = (len - body.len()).min(chunk.len());
        let n = read_by(stream, &mut chunk[..want], deadline)?;
        body.extend_from_slice(&chunk[..n]);
    }
    // Anything after the body (a pipelined request) is not served: the connection closes.
    body.truncate(len);
    Ok(Request { method: head.method, target: head.target, body })
}

/// Generation slots, handed out in order of arrival.
struct Gate {
    slots: usize,
    queue: usize,
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    generating: usize,
    waiting: VecDeque<u64>,
    next_ticket: u64,
}

/// How a request fared at the gate.
enum Admission<'a> {
    /// It may generate while the slot lives.
    Granted(Slot<'a>),
    /// Every slot and queue place is taken.
    Full { generating: usize, queued: usize },
    /// It stopped waiting (its client left, its deadline passed).
    GaveUp,
}

/// A held generation slot; dropping it frees it.
struct Slot<'a> {
    gate: &'a Gate,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut state = self.gate.lock();
        state.generating -= 1;
        drop(state);
        self.gate.changed.notify_all();
    }
}

impl Gate {
    fn new(slots: usize, queue: usize) -> Self {
        Self { slots, queue, state: Mutex::new(GateState::default()), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        // A panic while holding the lock leaves counts that are still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `(generating, queued)` now.
    fn load(&self) -> (usize, usize) {
        let s = self.lock();
        (s.generating, s.waiting.len())
    }

    /// Takes a slot, waiting in line for one while `keep_waiting` (asked every [`POLL`])
    /// says so.
    fn acquire(&self, mut keep_waiting: impl FnMut() -> bool) -> Admission<'_> {
        let mut state = self.lock();
        if state.generating + state.waiting.len() >= self.slots + self.queue {
            return Admission::Full { generating: state.generating, queued: state.waiting.len() };
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push_back(ticket);
        loop {
            if state.waiting.front() == Some(&ticket) && state.generating < self.slots {
                state.waiting.pop_front();
                state.generating += 1;
                drop(state);
                // The next in line may have a slot too.
                self.changed.notify_all();
                return Admission::Granted(Slot { gate: self });
            }
            state = self.changed.wait_timeout(state, POLL).unwrap_or_else(|e| e.into_inner()).0;
            drop(state);
            let keep = keep_waiting();
            state = self.lock();
            if !keep {
                state.waiting.retain(|&t| t != ticket);
                drop(state);
                self.changed.notify_all();
                return Admission::GaveUp;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};
    use mentor_policy::Config;
    use serde_json::Value;

    #[test]
    fn model_ids_come_from_the_model_argument() {
        assert_eq!(default_model_id("/x/y/SmolLM2-135M-Instruct-Q8_0.gguf"), "SmolLM2-135M-Instruct-Q8_0");
        assert_eq!(
            default_model_id("HuggingFaceTB/SmolLM2-135M-Instruct"),
            "HuggingFaceTB/SmolLM2-135M-Instruct"
        );
        let dir = tempfile::tempdir().unwrap();
        let ckpt = dir.path().join("step-10");
        std::fs::create_dir(&ckpt).unwrap();
        assert_eq!(default_model_id(ckpt.to_str().unwrap()), "step-10");
    }

    fn status(f: std::result::Result<Head, Failure>) -> u16 {
        match f {
            Err(Failure::Reply(r)) => r.status,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn heads_are_parsed_strictly() {
        let h = parse_head(b"\r\nPOST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\ncontent-length:  12 \r\nExpect: 100-Continue\r\nContent-Length: 12").unwrap();
        assert_eq!(
            h,
            Head {
                method: "POST".into(),
                target: "/v1/chat/completions?x=1".into(),
                content_length: Some(12),
                expect_continue: true
            }
        );
        let h = parse_head(b"GET /v1/models HTTP/1.0").unwrap();
        assert_eq!((h.content_length, h.expect_continue), (None, false));
        assert_eq!(status(parse_head(b"GET /v1/models")), 400);
        assert_eq!(status(parse_head(b"GET  /v1/models HTTP/1.1")), 400);
        assert_eq!(status(parse_head(b"G@T / HTTP/1.1")), 400);
        assert_eq!(status(parse_head(b"GET / HTTP/2.0")), 505);
        assert_eq!(status(parse_head(b"GET / HTTX")), 400);
        assert_eq!(status(parse_head(b"GET / HTTP/1.1\r\nno colon")), 400);
        assert_eq!(status(parse_head(b"GET / HTTP/1.1\r\n folded: x")), 400);
        assert_eq!(status(parse_head(b"POST / HTTP/1.1\r\nContent-Length: -1")), 400);
        assert_eq!(status(parse_head(b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999")), 400);
        assert_eq!(status(parse_head(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2")), 400);
        assert_eq!(status(parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked")), 411);
        assert_eq!(status(parse_head(b"GET / HTTP/1.1\r\nX: \xff")), 400);
    }

    #[test]
    fn replies_carry_length_and_close() {
        let text = String::from_utf8(encode_reply(&Reply::error(503, "server_error", "busy", None))).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{head}");
        assert!(head.contains(&format!("Content-Length: {}", body.len())), "{head}");
        assert!(head.contains("Connection: close") && head.contains("Retry-After: 1"), "{head}");
        let v: Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "server_busy");
    }

    #[test]
    fn limits_are_checked() {
        let ok = Limits {
            max_concurrency: 2,
            max_queue: 3,
            max_connections: 6,
            read_timeout: Duration::from_secs(1),
            request_timeout: Duration::from_secs(1),
        };
        ok.check().unwrap();
        assert!(Limits { max_concurrency: 0, ..ok.clone() }.check().is_err());
        let err = Limits { max_connections: 5, ..ok }.check().unwrap_err().to_string();
        assert!(err.contains("--max-connections 5"), "{err}");
    }

    #[test]
    fn the_gate_admits_in_order_queues_and_refuses_past_the_queue() {
        let gate = Gate::new(1, 2);
        let first = match gate.acquire(|| panic!("a free slot is granted at once")) {
            Admission::Granted(s) => s,
            _ => panic!("a free slot"),
        };
        assert_eq!(gate.load(), (1, 0));
        let order = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            let (gate, order) = (&gate, &order);
            let waiter = |name: &'static str| {
                move || {
                    if let Admission::Granted(_slot) = gate.acquire(|| true) {
                        order.lock().unwrap().push(name);
                    }
                }
            };
            s.spawn(waiter("a"));
            while gate.load().1 < 1 {
                std::thread::yield_now();
            }
            s.spawn(waiter("b"));
            while gate.load().1 < 2 {
                std::thread::yield_now();
            }
            // One generating, two waiting: the next is refused.
            assert!(matches!(gate.acquire(|| true), Admission::Full { generating: 1, queued: 2 }));
            drop(first);
        });
        assert_eq!(*order.lock().unwrap(), vec!["a", "b"]);
        assert_eq!(gate.load(), (0, 0));
    }

    #[test]
    fn a_waiter_that_gives_up_leaves_the_queue() {
        let gate = Gate::new(1, 1);
        let held = match gate.acquire(|| true) {
            Admission::Granted(s) => s,
            _ => panic!("a free slot"),
        };
        let mut asked = 0;
        let gave_up = gate.acquire(|| {
            asked += 1;
            asked < 2
        });
        assert!(matches!(gave_up, Admission::GaveUp));
        assert_eq!(gate.load(), (1, 0));
        drop(held);
        assert!(matches!(gate.acquire(|| true), Admission::Granted(_)));
    }

    /// A server with a tiny random model on a free loopback port.
    fn start(limits: Limits) -> SocketAddr {
        let policy =
            Policy::char_level("abcdefgh ", Config::tiny(0, 32, 2, 4, 2), 3, DType::F32, &Device::Cpu)
                .unwrap();
        let service =
            ChatService::new(policy, ServiceConfig { model_id: "tiny".into(), ..ServiceConfig::default() });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = Arc::new(Server::new(service, limits));
        std::thread::spawn(move || serve(listener, server));
        addr
    }

    fn limits(read_timeout: Duration) -> Limits {
        Limits {
            max_concurrency: 1,
            max_queue: 1,
            max_connections: 4,
            read_timeout,
            request_timeout: Duration::from_secs(60),
        }
    }

    /// Sends raw bytes and reads the reply to the end (the server closes): status and body.
    fn exchange(addr: SocketAddr, raw: &[u8]) -> (u16, Value) {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.write_all(raw).unwrap();
        read_reply(&mut s)
    }

    fn read_reply(s: &mut TcpStream) -> (u16, Value) {
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head in {text:?}"));
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }

    fn chat(max_tokens: usize) -> Vec<u8> {
        let body = json!({"messages": [{"role": "user", "content": "abc"}], "temperature": 0, "max_tokens": max_tokens})
            .to_string();
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    #[test]
    fn stalled_clients_hold_up_nobody_and_get_408() {
        let addr = start(limits(Duration::from_secs(3)));
        let t0 = Instant::now();
        // A body that never comes, and a head that never ends.
        let mut body = TcpStream::connect(addr).unwrap();
        body.write_all(
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n{\"messages\":",
        )
        .unwrap();
        let mut head = TcpStream::connect(addr).unwrap();
        head.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Le").unwrap();
        // Everyone else is answered meanwhile, before the stalled ones time out.
        let (status, models) = exchange(addr, b"GET /v1/models HTTP/1.1\r\n\r\n");
        assert_eq!((status, models["data"][0]["id"].as_str()), (200, Some("tiny")));
        let (status, reply) = exchange(addr, &chat(4));
        assert_eq!(status, 200, "{reply}");
        let (status, health) = exchange(addr, b"GET /health HTTP/1.1\r\n\r\n");
        assert_eq!(status, 200);
        assert!(health["connections"].as_u64().unwrap() >= 3, "the stalled two and this one: {health}");
        assert!(t0.elapsed() < Duration::from_secs(3), "answered while the others stall");
        for s in [&mut body, &mut head] {
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let (status, err) = read_reply(s);
            assert_eq!((status, err["error"]["code"].as_str()), (408, Some("request_timeout")));
        }
        assert!(t0.elapsed() >= Duration::from_secs(3));
        let (_, health) = exchange(addr, b"GET /health HTTP/1.1\r\n\r\n");
        assert_eq!(health["timed_out"], 2, "{health}");
    }

    #[test]
    fn a_trickle_does_not_extend_the_read_timeout() {
        let addr = start(limits(Duration::from_millis(800)));
        let mut s = TcpStream::connect(addr).unwrap();
        let t0 = Instant::now();
        let mut status = None;
        for b in b"GET /v1/models HTTP/1.1\r\nX-Slow: ".iter().chain(std::iter::repeat(&b'a')) {
            if s.write_all(&[*b]).is_err() || t0.elapsed() > Duration::from_secs(10) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
            let mut peek = [0u8; 1];
            s.set_nonblocking(true).unwrap();
            let got = s.peek(&mut peek);
            s.set_nonblocking(false).unwrap();
            if matches!(got, Ok(n) if n > 0) {
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                status = Some(read_reply(&mut s).0);
                break;
            }
        }
        assert_eq!(status, Some(408));
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    }

    #[test]
    fn bodies_too_large_chunked_or_announced_with_expect_are_handled() {
        let addr = start(limits(Duration::from_secs(5)));
        let big = format!("POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n{{", MAX_BODY + 1);
        assert_eq!(exchange(addr, big.as_bytes()).0, 413);
        let chunked = b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n";
        assert_eq!(exchange(addr, chunked).0, 411);
        assert_eq!(exchange(addr, b"GET /nowhere HTTP/1.1\r\n\r\n").0, 404);
        assert_eq!(exchange(addr, b"POST /health HTTP/1.1\r\n\r\n").0, 405);
        assert_eq!(exchange(addr, b"nonsense\r\n\r\n").0, 400);
        let huge_head = format!("GET /v1/models HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(exchange(addr, huge_head.as_bytes()).0, 431);

        // `Expect: 100-continue`: the body is sent after the interim reply.
        let body = json!({"messages": [{"role": "user", "content": "ab"}], "max_tokens": 2}).to_string();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "POST /v1/chat/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .unwrap();
        let mut interim = [0u8; 25];
        s.read_exact(&mut interim).unwrap();
        assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
        s.write_all(body.as_bytes()).unwrap();
        let (status, reply) = read_reply(&mut s);
        assert_eq!(status, 200, "{reply}");
        assert_eq!(reply["object"], "chat.completion");
    }

    #[test]
    fn connections_past_the_limit_get_503_at_once() {
        let addr = start(limits(Duration::from_secs(20)));
        // Four stalled connections fill --max-connections 4.
        let stalled: Vec<TcpStream> = (0..4)
            .map(|_| {
                let mut s = TcpStream::connect(addr).unwrap();
                s.write_all(b"GET /v1/mod").unwrap();
                s
            })
            .collect();
        let t0 = Instant::now();
        let mut status = 0;
        while t0.elapsed() < Duration::from_secs(10) {
            // The acceptor may not have counted the last stalled one yet.
            status = exchange(addr, b"GET /v1/models HTTP/1.1\r\n\r\n").0;
            if status == 503 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(status, 503);
        assert!(t0.elapsed() < Duration::from_secs(10));
        drop(stalled);
        // Closed connections free their places.
        let t0 = Instant::now();
        while exchange(addr, b"GET /v1/models HTTP/1.1\r\n\r\n").0 != 200 {
            assert!(t0.elapsed() < Duration::from_secs(10), "places are freed");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
