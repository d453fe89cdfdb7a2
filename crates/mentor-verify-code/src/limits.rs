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

/// The CPU seconds a program gets natively under the default limits: what it may take on a
/// native CPython, which the sandbox's default stretches by [`SANDBOX_SLOWDOWN`].
pub const NATIVE_CPU_SECONDS: f64 = 5.0;

/// How much slower CPython computes in the sandbox than natively: one fixed, recorded factor
/// (so rewards stay deterministic across machines), from
/// `cargo bench --profile dev -p mentor-verify-code --bench slowdown` (CPU-bound workloads timed by
/// themselves, the sandbox's CPython 3.14 on one worker against a native CPython). On
/// 2026-12-06, against CPython 3.11.7 on a 2-vCPU AMD EPYC, over seven runs of 3-5 rounds: an
/// integer loop 3.6-3.9 (4.6 in one run beside a cargo build), strings and dicts 3.2-4.0, MBPP
/// 123's divisor sums 2.7-2.9, sorting 2.1-2.5, recursion 2.1-3.1. The ratio is a property of
/// the box and its load; the factor is not re-measured at run time. The default CPU limit is
/// `NATIVE_CPU_SECONDS * SANDBOX_SLOWDOWN`: the slowest benchmark reference, MBPP 123 (3.7-3.9 s
/// natively on that box, three runs), takes about half of it.
pub const SANDBOX_SLOWDOWN: f64 = 4.0;

impl Default for Limits {
    /// CPU time: [`NATIVE_CPU_SECONDS`] × [`SANDBOX_SLOWDOWN`]; wall time twice that; 256 MiB
    /// of memory; 64 KiB of stdout and of stderr.
    fn default() -> Self {
        let cpu = Duration::from_secs_f64(NATIVE_CPU_SECONDS * SANDBOX_SLOWDOWN);
        Self {
            cpu_time: cpu,
            wall_time: cpu * 2,
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

    #[test]
    fn the_default_cpu_limit_is_the_native_budget_stretched_by_the_recorded_slowdown() {
        let d = Limits::default();
        assert_eq!(d.cpu_time, Duration::from_secs(20));
        assert_eq!(d.cpu_time.as_secs_f64(), NATIVE_CPU_SECONDS * SANDBOX_SLOWDOWN);
        assert_eq!(d.wall_time, 2 * d.cpu_time);
    }
}
