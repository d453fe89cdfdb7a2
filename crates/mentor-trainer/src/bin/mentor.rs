//! The `mentor` binary: a thin shell over [`mentor_trainer::main`].

fn main() -> std::process::ExitCode {
    mentor_trainer::main()
}
