//! `mentor report`: Markdown + SVG plots over run directories.

use std::path::PathBuf;

use anyhow::{Context, Result};

pub use crate::cli::ReportArgs;
use mentor_lab::report::{load_run, load_runs_under, write_report};
use mentor_trainer::train::RUN_FILE;

/// Runs `mentor report`.
pub fn run(args: &ReportArgs) -> Result<()> {
    let mut runs = Vec::new();
    for dir in &args.runs {
        if dir.join(RUN_FILE).is_file() {
            runs.push(load_run(dir).with_context(|| format!("reading run {}", dir.display()))?);
        } else {
            let found =
                load_runs_under(dir).with_context(|| format!("reading runs under {}", dir.display()))?;
            if found.is_empty() {
                anyhow::bail!(
                    "{} holds no run (no {RUN_FILE})\nhint: pass run directories written by `mentor train`",
                    dir.display()
                );
            }
            runs.extend(found);
        }
    }
    let out = args.out.clone().unwrap_or_else(|| {
        args.runs[0].parent().map(|p| p.join("report")).unwrap_or_else(|| PathBuf::from("report"))
    });
    let summary = write_report(&runs, &out, &args.title).context("writing the report")?;
    eprintln!("report of {} runs: {}", summary.runs, summary.markdown.display());
    Ok(())
}
