//! `mentor verify math|code`: judge completions from a JSONL file, one JSON line per input on
//! stdout in input order, a summary on stderr.

use std::io::{BufRead, BufReader, Write};

use anyhow::{Context, Result};

pub use crate::cli::VerifyMathArgs;

pub(crate) fn open_input(path: &std::path::Path) -> Result<Box<dyn BufRead>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufReader::new(std::io::stdin())));
    }
    let f = std::fs::File::open(path).with_context(|| {
        format!("cannot open {}\nhint: pass a JSONL file with --input (or - for stdin)", path.display())
    })?;
    Ok(Box::new(BufReader::new(f)))
}

/// Runs `mentor verify math`.
pub fn math(args: &VerifyMathArgs) -> Result<()> {
    let input = open_input(&args.input)?;
    let stdout = std::io::stdout();
    let out = std::io::BufWriter::new(stdout.lock());
    let mut text = Vec::new();
    let summary =
        mentor_verify_math::cli::run_jsonl(input, out, &mut text, &mentor_verify_math::Config::default())
            .with_context(|| format!("verifying {}", args.input.display()))?;
    let mut err = std::io::stderr().lock();
    if args.json {
        serde_json::to_writer(&mut err, &summary)?;
        writeln!(err)?;
    } else {
        err.write_all(&text)?;
    }
    nothing_judged(summary.checked, summary.malformed)
}

/// An error when no record was judged: an input of only malformed (or no) lines is a mistake
/// the caller must see in the exit status, not a run with nothing to report.
pub(crate) fn nothing_judged(judged: usize, malformed: usize) -> Result<()> {
    if judged > 0 {
        return Ok(());
    }
    if malformed > 0 {
        anyhow::bail!(
            "none of the {malformed} input records could be judged (each is reported on its output line)"
        );
    }
    anyhow::bail!("the input holds no records\nhint: pass a JSONL file with one record per line")
}
