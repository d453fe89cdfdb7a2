//! The `mentor` binary: a thin shell over [`mentor_trainer::main`].

// Tensor work allocates and frees large buffers at a high rate; the system allocator returns
// them to the OS each time and page-faults them back in (about a quarter of a small model's
// training step here). mimalloc keeps them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    mentor_trainer::main()
}
