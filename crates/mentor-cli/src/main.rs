//! The `mentor` binary: a thin shell over [`mentor_trainer::main`].

// mimalloc, tuned per subcommand below: commands that free and reallocate the same buffers
// (training) never purge freed memory; `rescue` and `serve`, whose buffers vary in shape,
// purge by resetting pages instead of decommitting them. Why, with the measurements:
// docs/PERFORMANCE.md ("Allocator and threads"). Wrapped
// in `Counted`, which counts live bytes for the reports beside the resident set size.
#[global_allocator]
static GLOBAL: mentor_trainer::Counted<mimalloc::MiMalloc> = mentor_trainer::Counted(mimalloc::MiMalloc);

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
