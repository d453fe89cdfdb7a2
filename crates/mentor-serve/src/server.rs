//! The server: one thread accepts, each connection is read and answered on a thread of its
//! own (at most `max_connections`), cheap requests are answered at once, chat completions go
//! through the admission gate ([`crate::gate`]) and are cancelled when their client leaves or
//! their deadline passes; `/health` reports the counts.

use std::io::{ErrorKind, Read};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::gate::{Admission, Gate, POLL};
use crate::http::{read_request, write_reply, Failure, MAX_BODY, MAX_HEAD};
use crate::openai::{ChatJob, ChatService, Reply, Routed};
use crate::{Result, ServeError, ServeOptions};

/// How long a connection answered before its request was read is drained before closing (so
/// the client reads the reply instead of a reset).
pub(crate) const LINGER: Duration = Duration::from_secs(1);
/// Stack of a connection thread (generation runs on it).
pub(crate) const STACK: usize = 8 << 20;
/// Most connections past `--max-connections` answered 503 at once (the rest are closed).
pub(crate) const MAX_REJECTING: usize = 16;

/// The server's bounds, from the flags.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Limits {
    pub(crate) max_concurrency: usize,
    pub(crate) max_queue: usize,
    pub(crate) max_connections: usize,
    pub(crate) read_timeout: Duration,
    pub(crate) request_timeout: Duration,
}

impl Limits {
    pub(crate) fn from_args(args: &ServeOptions) -> Result<Self> {
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

    pub(crate) fn check(&self) -> Result<()> {
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

/// Accepts connections until the listener fails for good, each on its own thread.
pub(crate) fn serve(listener: TcpListener, server: Arc<Server>) -> Result<()> {
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
pub(crate) struct Stats {
    pub(crate) served: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) rejected: AtomicU64,
}

/// The shared state of a running server.
pub(crate) struct Server {
    pub(crate) service: ChatService,
    pub(crate) limits: Limits,
    pub(crate) gate: Gate,
    pub(crate) connections: AtomicUsize,
    pub(crate) rejecting: AtomicUsize,
    pub(crate) stats: Stats,
}

/// A place counted in one of the server's counters while it lives.
pub(crate) struct Permit {
    pub(crate) server: Arc<Server>,
    pub(crate) counter: fn(&Server) -> &AtomicUsize,
}

impl Permit {
    /// A place, if the counter is below `max`.
    pub(crate) fn take(
        server: &Arc<Server>,
        counter: fn(&Server) -> &AtomicUsize,
        max: usize,
    ) -> Option<Self> {
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
pub(crate) fn reject(server: &Arc<Server>, stream: TcpStream) {
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
pub(crate) enum Stop {
    /// The client closed its end or reset the connection.
    Gone,
    /// `--request-timeout-s` passed.
    Deadline,
}

/// Watches a request's client and deadline, cheaply enough to ask once per decode step.
pub(crate) struct Watch<'a> {
    pub(crate) stream: &'a TcpStream,
    pub(crate) deadline: Instant,
    pub(crate) next_look: Instant,
    pub(crate) stopped: Option<Stop>,
    pub(crate) asked: u64,
}

impl<'a> Watch<'a> {
    pub(crate) fn new(stream: &'a TcpStream, deadline: Instant) -> Self {
        Self { stream, deadline, next_look: Instant::now(), stopped: None, asked: 0 }
    }

    /// Why to stop, if the request should.
    pub(crate) fn check(&mut self) -> Option<Stop> {
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
pub(crate) fn client_gone(stream: &TcpStream) -> bool {
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
    pub(crate) fn new(service: ChatService, limits: Limits) -> Self {
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

    pub(crate) fn health(&self) -> Reply {
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
    pub(crate) fn connection(&self, stream: TcpStream, accepted: Instant) {
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
    pub(crate) fn generate(&self, stream: &TcpStream, job: ChatJob, deadline: Instant) -> Option<Reply> {
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
    pub(crate) fn stopped(&self, id: &str, why: Option<Stop>, when: &str, steps: u64) -> Option<Reply> {
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

    pub(crate) fn answer(&self, stream: &TcpStream, reply: &Reply) {
        match write_reply(stream, reply) {
            Ok(()) => {
                self.stats.served.fetch_add(1, Ordering::Relaxed);
            }
            // The client went away (e.g. its own timeout fired); the server carries on.
            Err(e) => eprintln!("serve: {}: cannot send the {} reply: {e}", peer(stream), reply.status),
        }
    }
}

pub(crate) fn peer(stream: &TcpStream) -> String {
    stream.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "a client".into())
}

/// After answering a request that was not read in full: stop sending, then read and drop what
/// the client still sends, for up to [`LINGER`], so that closing does not reset the connection
/// before the client has read the reply.
pub(crate) fn linger(stream: &TcpStream) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::ServiceConfig;
    use candle_core::{DType, Device};
    use mentor_policy::{Config, Policy};
    use serde_json::Value;
    use std::io::Write;
    use std::net::SocketAddr;

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
