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
        .build_global()
        .map_err(|e| Error::ThreadPool(e.to_string()))
}

/// Threads in rayon's global pool.
pub fn current_threads() -> usize {
    rayon::current_num_threads()
}
