//! Resource limits of one execution, and the engine-wide bounds they must fit in.

use std::time::Duration;

/// Limits applied to every execution. All of them are enforced by the host: the guest cannot
/// raise them.
///
/// * `cpu_time`: enforced by epoch interruption, which stops guest code that is *running*
///   (loops, huge arithmetic). It is checked at the granularity of the epoch tick (10 ms).
/// * `wall_time`: an async timeout around the whole call, which also stops a guest that is
///   *blocked in a host call* (`time.sleep`), where epochs never fire.
/// * `memory_bytes`: the guest's linear memory cannot grow beyond it; CPython then raises
///   `MemoryError` (or the guest traps), reported as a memory-limit verdict.
/// * `stdout_bytes` / `stderr_bytes`: output beyond the cap is discarded and the truncation
///   flagged; writing never fails, so a chatty program is not broken by the cap.
///
/// # See also
/// [`crate::SandboxConfig::max_memory_bytes`] (the pool's per-instance ceiling, which bounds
/// `memory_bytes`) and [`crate::SandboxConfig::max_wasm_stack`] (stack depth, engine-wide).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Guest CPU time (epoch-based).
    pub cpu_time: Duration,
    /// Wall-clock time of the whole call.
    pub wall_time: Duration,
    /// Linear-memory cap in bytes.
    pub memory_bytes: usize,
    /// Captured stdout cap in bytes.
    pub stdout_bytes: usize,
    /// Captured stderr cap in bytes.
    pub stderr_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu_time: Duration::from_secs(5),
            wall_time: Duration::from_secs(10),
            memory_bytes: 256 << 20,
            stdout_bytes: 64 << 10,
            stderr_bytes: 64 << 10,
        }
    }
}

/// The interval of the epoch ticker thread.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

impl Limits {
    /// Epoch ticks before the CPU deadline fires (at least 1, plus one for the partial tick).
    pub(crate) fn deadline_ticks(&self) -> u64 {
        let ticks = self.cpu_time.as_millis() / EPOCH_TICK.as_millis();
        u64::try_from(ticks).unwrap_or(u64::MAX - 1).max(1) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_rounds_up_and_never_zero() {
        let l = |ms| Limits { cpu_time: Duration::from_millis(ms), ..Limits::default() };
        assert_eq!(l(0).deadline_ticks(), 2);
        assert_eq!(l(5).deadline_ticks(), 2);
        assert_eq!(l(100).deadline_ticks(), 11);
        assert_eq!(l(5000).deadline_ticks(), 501);
    }
}
