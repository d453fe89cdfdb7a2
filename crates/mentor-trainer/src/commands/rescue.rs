//! `mentor rescue`: the paired rescue measurement ([`crate::rescue`]) of a config, with its
//! table on stdout (or the summary as JSON) and a one-line summary on stderr.

use anyhow::{Context, Result};

pub use crate::cli::RescueArgs;
use crate::config::{DataKind, TrainConfig};

/// Runs `mentor rescue`.
pub fn run(args: &RescueArgs) -> Result<()> {
    let cfg = TrainConfig::load(&args.config, &args.sets)
        .context("invalid configuration\nhint: see configs/rescue-*.toml for the `[rescue]` fields")?;
    let code = matches!(cfg.data.kind, DataKind::Mbpp | DataKind::Humaneval);
    let summary = super::sandbox::with_code(code, cfg.data.code_reward, |v| {
        crate::rescue::run(&cfg, v).context("the rescue measurement failed")
    })?;
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        print!("{}", crate::rescue::report::table(&summary));
    }
    let rates: Vec<String> = summary
        .arms
        .iter()
        .map(|a| format!("{} {:.2}", crate::rescue::report::label(&a.arm, a.level), a.rescue_rate))
        .collect();
    eprintln!(
        "rescue: {} collapsed of {} problems (unhinted pass rate {:.3}); rescue rate {}; {:.0} s → {}",
        summary.collapsed,
        summary.problems,
        summary.base_pass_rate,
        rates.join(", "),
        summary.seconds,
        summary.dir.join(crate::rescue::records::REPORT_FILE).display()
    );
    Ok(())
}
