//! The `mentor verify math` JSONL contract on stdin/stdout (what the `mentor` binary wires up).
//!
//! Run: `echo '{"id":1,"gold":"5","completion":"\\boxed{5}"}' | cargo run -p mentor-verify-math --example verify_jsonl`
//!
//! One JSON line per input line on stdout, the summary line on stderr.

use std::io::{stderr, stdin, stdout, BufWriter};

fn main() -> anyhow::Result<()> {
    let out = BufWriter::new(stdout().lock());
    mentor_verify_math::cli::run_jsonl(
        stdin().lock(),
        out,
        stderr().lock(),
        &mentor_verify_math::Config::default(),
    )?;
    Ok(())
}
