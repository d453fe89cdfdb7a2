//! An OpenAI-compatible chat-completions endpoint over a local `mentor-policy` model: what
//! `mentor serve` runs, and what the `llm` mentor backend can talk to.
//!
//! ```no_run
//! let options = mentor_serve::ServeOptions::new("SmolLM2-135M-Instruct.Q4_1.gguf");
//! mentor_serve::run(&options)?; // serves until the process is killed
//! # Ok::<(), mentor_serve::ServeError>(())
//! ```
//!
//! Routing, validation and generation live in `openai.rs` (socket-free); the rest is a small
//! HTTP/1.1 server on `std::net`, built so that no client can hold up another, in three parts
//! that depend one way: `http.rs` (a request's head and body read against a deadline, a reply
//! encoded and written), `gate.rs` (the admission gate: generation slots and the queue in
//! arrival order) and `server.rs` (accepting, connection threads, cancellation, `/health`
//! counts), which uses the other two.
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

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;

use mentor_policy::{HubOptions, LoadOptions, ModelSource, Policy};

use self::openai::{ChatService, ServiceConfig};
use self::server::{serve, Limits, Server};

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

mod gate;
mod http;
pub mod openai;
mod server;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
