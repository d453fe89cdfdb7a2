//! `mentor serve`: an OpenAI-compatible chat-completions endpoint over a local model.
//!
//! The HTTP layer only: `tiny_http` accepts connections on its own threads and queues the
//! requests; this loop answers them one at a time with [`ChatService::handle`] (routing,
//! validation and generation live in `mentor_policy::openai`). One generation at a time is
//! what a CPU can give anyway; concurrent clients wait their turn instead of failing (their
//! own timeouts permitting).

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use mentor_policy::openai::{ChatService, Reply, ServiceConfig};
use mentor_policy::{HubOptions, LoadOptions, ModelSource, Policy};

/// Largest request body read (bytes); larger ones get 413.
const MAX_BODY: u64 = 4 << 20;

/// Arguments of `mentor serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Hub repo id (`org/name[@revision]`), a local model directory, or a `.gguf` file.
    #[arg(long)]
    pub model: String,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to bind; 0 picks a free one. The bound address is printed on stderr as
    /// `listening on http://ADDR`.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Model id listed by `/v1/models` and echoed in replies (default: from `--model`).
    #[arg(long)]
    pub model_id: Option<String>,
    /// `max_tokens` for requests that give none.
    #[arg(long, default_value_t = 256)]
    pub default_max_tokens: usize,
    /// Upper bound on `max_tokens` (larger requests are clamped).
    #[arg(long, default_value_t = 2048)]
    pub max_tokens_cap: usize,
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

/// Runs `mentor serve` until killed.
pub fn run(args: &ServeArgs) -> Result<()> {
    // Bind first: a taken port fails at once, not after loading the model; connections made
    // while the model loads wait in the backlog.
    let server = tiny_http::Server::http((args.host.as_str(), args.port))
        .map_err(|e| anyhow!("cannot bind {}:{}: {e}", args.host, args.port))?;
    let addr: SocketAddr = server.server_addr().to_ip().ok_or_else(|| anyhow!("bound a non-IP socket"))?;
    let hub = HubOptions::from_env(|k| std::env::var(k).ok());
    let opts = LoadOptions { hub, ..LoadOptions::default() };
    let policy = Policy::load(&ModelSource::parse(&args.model), &opts).with_context(|| {
        format!("cannot load `{}`\nhint: pass a Hub repo id, a model directory or a .gguf file (`cargo xtask setup` installs SmolLM2's GGUF under $MENTOR_HOME/models)", args.model)
    })?;
    if policy.chat_template().is_none() {
        return Err(anyhow!("`{}` has no chat template: it cannot serve chat completions", args.model));
    }
    let cfg = ServiceConfig {
        model_id: args.model_id.clone().unwrap_or_else(|| default_model_id(&args.model)),
        default_max_tokens: args.default_max_tokens,
        max_tokens_cap: args.max_tokens_cap,
    };
    let service = ChatService::new(policy, cfg);
    let json = tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..])
        .map_err(|()| anyhow!("invalid Content-Type header"))?;
    eprintln!("serving `{}` as `{}`", args.model, service.config().model_id);
    eprintln!("listening on http://{addr}");
    for mut request in server.incoming_requests() {
        let method = request.method().as_str().to_string();
        let url = request.url().to_string();
        let reply = match read_body(&mut request) {
            Ok(body) => service.handle(&method, &url, &body),
            Err(reply) => reply,
        };
        let status = reply.status;
        let response = tiny_http::Response::from_string(reply.body.to_string())
            .with_status_code(status)
            .with_header(json.clone());
        if let Err(e) = request.respond(response) {
            // The client went away (e.g. its own timeout fired); the server carries on.
            eprintln!("{method} {url}: cannot send the reply: {e}");
        }
    }
    Ok(())
}

fn read_body(request: &mut tiny_http::Request) -> std::result::Result<Vec<u8>, Reply> {
    let too_large =
        || Reply::error(413, "invalid_request_error", format!("request body over {MAX_BODY} bytes"), None);
    if request.body_length().is_some_and(|n| n as u64 > MAX_BODY) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    request.as_reader().take(MAX_BODY + 1).read_to_end(&mut body).map_err(|e| {
        Reply::error(400, "invalid_request_error", format!("cannot read the body: {e}"), None)
    })?;
    if body.len() as u64 > MAX_BODY {
        return Err(too_large());
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::default_model_id;

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
