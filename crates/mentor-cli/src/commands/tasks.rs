//! `mentor tasks`: load a benchmark file and print its tasks as JSON Lines on stdout.

use std::io::Write;

use anyhow::{Context, Result};
use mentor_core::assets::AssetDir;
use mentor_core::datasets::Dataset;

pub use crate::cli::TasksArgs;

/// Runs `mentor tasks`.
pub fn run(args: &TasksArgs) -> Result<()> {
    let dataset = Dataset::from_name(&args.dataset).with_context(|| {
        let names: Vec<_> = Dataset::ALL.iter().map(|d| d.name()).collect();
        format!("unknown dataset `{}`\nhint: use one of {}", args.dataset, names.join(", "))
    })?;
    let file = match (&args.file, &args.data_dir) {
        (Some(f), _) => f.clone(),
        (None, Some(d)) => d.join(dataset.default_file()),
        (None, None) => AssetDir::resolve(|k| std::env::var(k).ok())
            .context("cannot locate the data directory\nhint: pass --file or --data-dir")?
            .datasets()
            .join(dataset.default_file()),
    };
    let tasks = dataset.load(&file).with_context(|| {
        format!(
            "cannot load {} as {}\nhint: `cargo xtask datasets` installs the benchmark files",
            file.display(),
            dataset.name()
        )
    })?;
    let shown = args.limit.unwrap_or(tasks.len()).min(tasks.len());
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for task in &tasks[..shown] {
        serde_json::to_writer(&mut out, task)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    eprintln!("{}: {} tasks loaded from {}, {} printed", dataset.name(), tasks.len(), file.display(), shown);
    Ok(())
}
