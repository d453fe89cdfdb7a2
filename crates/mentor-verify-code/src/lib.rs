//! CPython in a wasmtime sandbox, and the unit-test harnesses that turn code completions into
//! rewards with per-test feedback (HumanEval, MBPP, stdin/stdout).
//!
//! * [`Sandbox`]: one engine, the pre-initialised CPython component (compiled once per machine
//!   and cached), a fresh store per execution from the pooling allocator, CPU (epoch) and
//!   wall-clock limits, a memory cap, capped output, no files, env, sockets or processes.
//!   Async API plus blocking and batch wrappers; `Send + Sync`.
//! * [`CodeVerifier`]: the [`mentor_core::Verifier`] for `Payload::Code` tasks. Each test runs
//!   separately inside the guest harness, so feedback names the failing test with its input,
//!   expected and actual value, or the exception and traceback, or the limit that was hit.
//! * Anti reward-hacking: the tests and the candidate never share an interpreter. A judged run
//!   has two instances, the candidate's (its program only) and the tests' (the task's own
//!   code), and values cross between them through the host in a closed data codec, so no
//!   introspection inside the candidate's interpreter can reach a test, an expected value or
//!   the verdict; early exits never pass; the report must echo a per-run secret.
//! * [`cli::run_jsonl`]: the `mentor verify code` contract as a library function.
//!
//! What it deliberately does not do: depend on candle, read environment variables (callers
//! pass paths, see [`SandboxConfig::from_assets`]), or print.
//!
//! The guest program lives in `guest/` (`app.py`, `runner.wit`) and is built into
//! `runner.wasm` by `cargo xtask setup`.
#![deny(missing_docs)]

pub mod cli;
mod compile_cache;
mod error;
pub mod extract;
mod harness;
mod limits;
mod output;
mod record;
mod sandbox;
mod verifier;
mod warm_up;

pub use compile_cache::{CacheStatus, LoadReport};
pub use error::{Error, Result};
pub use harness::outputs_match;
pub use limits::{Limits, NATIVE_CPU_SECONDS, SANDBOX_SLOWDOWN};
pub use record::{Format, RecordError, TaskRecord};
pub use sandbox::{Execution, Exit, Sandbox, SandboxConfig, SlotReset};
pub use verifier::{CodeVerifier, RewardMode, VerifierConfig};

#[cfg(test)]
mod send_sync {
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn sandbox_is_send_and_sync() {
        assert_send_sync::<crate::Sandbox>();
        assert_send_sync::<crate::CodeVerifier<'static>>();
    }
}
