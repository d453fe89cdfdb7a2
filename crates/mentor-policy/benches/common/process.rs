//! The process settings every policy bench runs under, as the `mentor` binary does: mimalloc
//! keeps freed pages (no purging), and candle's element-wise pool helpers spin briefly.

/// Applies the settings; call first thing in `main`, before any tensor op.
pub fn tune() {
    // `mi_option_purge_delay` of mimalloc.h (v2 and v3: between `eager_commit_delay` = 14 and
    // `use_numa_nodes` = 16; libmimalloc-sys names neither the option nor its value).
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: sets a process-wide integer option (no pointers); -1 = never purge freed memory.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1)
    };
    use mentor_kernels::{POOL_SPIN_LIMIT, POOL_SPIN_VAR};
    if std::env::var_os(POOL_SPIN_VAR).is_none() {
        std::env::set_var(POOL_SPIN_VAR, POOL_SPIN_LIMIT.to_string());
    }
}
