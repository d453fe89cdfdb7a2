//! CPU thread count.
//!
//! candle's CPU matmuls (gemm) and element-wise ops run on rayon's global pool. Call
//! [`set_threads`] once, before the first tensor op, to size it. Note that candle also reads
//! `RAYON_NUM_THREADS` to decide how many chunks gemm splits work into, and
//! `CANDLE_NUM_THREADS` for its own barrier pool; binaries that want an exact count should set
//! those variables too (this library does not touch the environment). On a small shared
//! machine, one thread per process is often fastest for tiny models.

use crate::error::{Error, Result};

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
