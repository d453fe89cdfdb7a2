//! CPU thread count.
//!
//! candle's CPU matmuls (gemm) and this crate's kernels run on rayon's global pool. Call
//! [`set_threads`] once, before the first tensor op, to size it. Note that candle also reads
//! `RAYON_NUM_THREADS` to decide how many chunks gemm splits work into, and
//! `CANDLE_NUM_THREADS` for its own element-wise (barrier) pool, whose helpers spin
//! `CANDLE_BARRIER_POOL_SPIN_LIMIT` times (default 25,000) after each op before they sleep;
//! binaries that want an exact count should set those variables too, and
//! [`POOL_SPIN_LIMIT`] for the spin (this library does not touch the environment). On a small
//! shared machine, one thread per process is often fastest for tiny models.
//!
//! [`on_pool`] runs a piece of work on one of the pool's own threads. A kernel that splits its
//! work from a thread outside the pool hands the whole job over and sleeps until it is done:
//! two cross-thread wake-ups per product, a few hundred per decoded token. From inside the
//! pool only the idle worker is woken to take its share (SmolLM2-135M at 2 threads on a
//! 2-vCPU AVX-512 EPYC, 64 tokens: batch 32 7.07-7.65 -> 6.24-6.25 s, batch 1 1.90-2.16 ->
//! 1.56 s; `docs/PERFORMANCE.md`). mentor-policy's entry points (generation, log-probs) use
//! it, and so does `mentor-grpo`'s backward and optimizer step.

use crate::error::{Error, Result};

/// A value for `CANDLE_BARRIER_POOL_SPIN_LIMIT`: candle's default (25,000) keeps a pool helper
/// spinning after every element-wise op on a core that the next matmul's rayon workers need.
/// SmolLM2-135M training step at 2 threads on 2 cores, 5 steady-state steps x 3 alternating
/// runs: mean 4.96 / 5.50 / 5.28 s with the default, 4.68 / 5.19 / 4.93 s with 300 (the
/// helper spent 7% of the step's CPU time spinning). candle runs element-wise ops under 64 Ki
/// elements (most of decoding's) without the pool.
pub const POOL_SPIN_LIMIT: u32 = 300;

/// The environment variable candle reads [`POOL_SPIN_LIMIT`]'s kind of value from (once, when
/// its element-wise pool starts).
pub const POOL_SPIN_VAR: &str = "CANDLE_BARRIER_POOL_SPIN_LIMIT";

/// Builds rayon's global pool with `n` threads (`n >= 1`). Fails if the pool was already
/// initialised (by an earlier call or by a tensor op).
pub fn set_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::ThreadPool("thread count must be at least 1".into()));
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        // Work moved here from the main thread ([`on_pool`]) keeps the main thread's stack:
        // autograd's graph walk and the drop of a graph recurse once per op on the longest
        // path. (SmolLM2-135M's backward at 32 x 128 ran on a 256 KiB pool stack with optimised
        // dependencies; unoptimised frames are larger.) Only the pages touched are committed.
        .stack_size(STACK_BYTES)
        .build_global()
        .map_err(|e| Error::ThreadPool(e.to_string()))
}

/// Stack of each pool thread built by [`set_threads`]: the size of a Linux main thread's
/// default stack. A pool that rayon builds by itself gets its default (2 MiB).
pub const STACK_BYTES: usize = 8 << 20;

/// Runs `f` on a thread of rayon's pool and returns what it returns: in place when the caller
/// is already one of the pool's threads (of any pool), else on a worker of the global pool
/// while the caller waits. Kernels that `f` calls then split their work without handing each
/// product to the pool and sleeping until it is done. A panic in `f` is resumed in the caller.
pub fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    rayon::scope(|_| f())
}

/// Threads in rayon's global pool.
pub fn current_threads() -> usize {
    rayon::current_num_threads()
}
