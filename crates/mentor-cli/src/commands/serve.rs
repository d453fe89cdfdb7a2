//! `mentor serve`: the flags into [`mentor_serve::ServeOptions`], then the server
//! (crates/mentor-serve) until killed.

use anyhow::Result;

use crate::cli::ServeArgs;

/// Runs `mentor serve` until killed.
pub fn run(args: &ServeArgs) -> Result<()> {
    let options = mentor_serve::ServeOptions {
        model: args.model.clone(),
        host: args.host.clone(),
        port: args.port,
        model_id: args.model_id.clone(),
        default_max_tokens: args.default_max_tokens,
        max_tokens_cap: args.max_tokens_cap,
        max_concurrency: args.max_concurrency,
        max_queue: args.max_queue,
        max_connections: args.max_connections,
        read_timeout_s: args.read_timeout_s,
        request_timeout_s: args.request_timeout_s,
    };
    Ok(mentor_serve::run(&options)?)
}
