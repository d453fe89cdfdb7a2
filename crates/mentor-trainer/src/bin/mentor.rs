//! The `mentor` binary: a thin shell over [`mentor_trainer::main`].

// Tensor work allocates and frees large buffers at a high rate; the system allocator returns
// them to the OS each time and page-faults them back in (about a quarter of a small model's
// training step here). mimalloc keeps them, once its delayed purging of freed memory is off:
// measured on 60 demo pretraining steps, 14.2–14.8 s with the default purge delay against
// 13.5–13.9 s without purging (system time 1.3–1.9 s → 0.6–0.9 s), peak RSS unchanged; on a
// batch-32 SmolLM2 prefill 8.8 → 6.0 CPU s (docs/PERFORMANCE.md, mentor-policy).
//
// Not for `rescue` and `serve` ([`mentor_trainer::MemoryUse::Varying`]): hundreds of generate
// calls of varying shapes left never-purged memory behind. `mentor rescue` on 12 GSM8K problems
// (2026-12-02, one run each): 308 s and 12.9 GB peak RSS without purging, 355 s and 9.6 GB
// with mimalloc's default 10 ms delay, the same table; with 100 problems the never-purging
// process grew to 24.4 GB and was killed. They keep mimalloc's purge delay, but purge by
// resetting (`MADV_FREE`: the kernel takes the pages back when it needs them, and a page used
// again before that costs no fault) instead of decommitting (`MADV_DONTNEED`: every reuse
// faults and zeroes the page again). Same 12 problems on another box (2026-12-02, AVX-512
// EPYC, one run each): 235 s and 653 k page faults decommitting, 193 s and 47 k resetting,
// the same table.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h (v2 and v3: after `eager_commit_delay` = 14, before
/// `use_numa_nodes` = 16); libmimalloc-sys names neither the option nor its value.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// `mi_option_purge_decommits` in mimalloc.h (v2 and v3: after `arena_eager_commit` = 4, before
/// `allow_large_os_pages` = 6).
const MI_OPTION_PURGE_DECOMMITS: libmimalloc_sys::mi_option_t = 5;

fn main() -> std::process::ExitCode {
    mentor_trainer::main_with(|memory| {
        // A purge delay or mode the user set (`MIMALLOC_PURGE_DELAY`, `MIMALLOC_PURGE_DECOMMITS`,
        // read by mimalloc itself) wins.
        let (option, value, var) = match memory {
            // -1 = never purge freed memory.
            mentor_trainer::MemoryUse::Repeating => (MI_OPTION_PURGE_DELAY, -1, "MIMALLOC_PURGE_DELAY"),
            // 0 = purge by resetting (`MADV_FREE`), not by decommitting.
            mentor_trainer::MemoryUse::Varying => (MI_OPTION_PURGE_DECOMMITS, 0, "MIMALLOC_PURGE_DECOMMITS"),
        };
        if std::env::var_os(var).is_none() {
            // SAFETY: sets a process-wide integer option (no pointers). mimalloc reads both
            // options where it schedules or runs a purge, so setting them after the first
            // allocations (argument parsing) takes effect for all that follows.
            #[allow(unsafe_code)]
            unsafe {
                libmimalloc_sys::mi_option_set(option, value)
            };
        }
    })
}
