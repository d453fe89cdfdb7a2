//! The sandbox's warm-up self-check: [`Sandbox::new`] builds a sandbox and judges one
//! trivial passing program through the harness before handing it out. It sits above both
//! files, so the sandbox never calls the harness that drives it.

use std::time::{Duration, Instant};

use crate::sandbox::block_on;
use crate::{Error, Limits, Result, Sandbox, SandboxConfig};

impl Sandbox {
    /// Builds the engine, loads (or compiles and caches) the runtime and pre-links it.
    pub fn new(config: &SandboxConfig) -> Result<Self> {
        Self::unwarmed(config)?.warmed_up()
    }

    /// Judges one trivial passing program before the sandbox is handed out, outside any
    /// caller's limits. The first runs of a process fault in the runtime's code and memory
    /// image from the mapped artifact; on a loaded machine with a cold disk that took past a
    /// 1.5 s limit in CI, so a caller's first verdict would have been a false timeout. It is
    /// also a self-check: a runtime that cannot pass it fails here, with its report, instead
    /// of failing every verdict later. Runs on a scoped thread with a private runtime, so
    /// `new` may be called from inside an async runtime too.
    fn warmed_up(mut self) -> Result<Self> {
        let limits = Limits {
            cpu_time: Duration::from_secs(60),
            wall_time: Duration::from_secs(120),
            memory_bytes: self.max_memory_bytes.min(256 << 20),
            ..self.limits().clone()
        };
        let tests = ["assert warm_up() == 1".to_string()];
        let started = Instant::now();
        let sb = &self;
        let feedback = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    block_on(crate::harness::run_suite(
                        sb,
                        "warm-up",
                        "def warm_up():\n    return 1\n",
                        crate::harness::Setup { before: "", after: "" },
                        crate::harness::Suite::Mbpp { tests: &tests },
                        &limits,
                    ))
                })
                .join()
                .map_err(|_| Error::Protocol("the sandbox's warm-up run panicked".into()))
        })???;
        if feedback.outcome != mentor_core::CodeOutcome::Passed {
            return Err(Error::Protocol(format!(
                "the runtime failed its warm-up self-check (a one-line passing program): {:?} {}",
                feedback.outcome,
                feedback.detail.unwrap_or_default()
            )));
        }
        self.warm_up = started.elapsed();
        Ok(self)
    }
}
