//! `mentor rescue`: the paired rescue measurement ([`mentor_lab::rescue`]) of a config, with its
//! table on stdout (or the summary as JSON) and a one-line summary on stderr.

use anyhow::{Context, Result};

pub use crate::cli::RescueArgs;
use mentor_trainer::config::{DataKind, TrainConfig};

/// Runs `mentor rescue`.
pub fn run(args: &RescueArgs) -> Result<()> {
    let cfg = TrainConfig::load(&args.config, &args.sets)
        .context("invalid configuration\nhint: see configs/rescue-*.toml for the `[rescue]` fields")?;
    if args.seeds.is_empty() {
        return one(&cfg, Some(args.json));
    }
    let dir = cfg.output_dir().to_path_buf();
    for &seed in &args.seeds {
        let seed_dir = mentor_lab::rescue::pooled::seed_dir(&dir, seed);
        if seed_dir.join(mentor_lab::rescue::records::SUMMARY_FILE).is_file() {
            eprintln!("rescue: seed {seed} already measured in {} (not run again)", seed_dir.display());
            continue;
        }
        eprintln!("rescue: seed {seed} → {}", seed_dir.display());
        let mut c = cfg.clone();
        c.run.seed = seed;
        c.run.output_dir = seed_dir;
        // Each seed's table stays in its directory; stdout gets the pooled one.
        one(&c, None)?;
    }
    let pooled = mentor_lab::rescue::pooled::pool(
        &dir,
        cfg.rescue.bootstrap,
        mentor_trainer::seed::mix(&[0xb007, 0x5eed]),
    )
    .context("pooling the seeds")?;
    mentor_trainer::jsonl::write_json(&dir.join(mentor_lab::rescue::pooled::POOLED_JSON), &pooled)?;
    let md = mentor_lab::rescue::pooled::markdown(&pooled);
    mentor_trainer::jsonl::write_atomic(
        &dir.join(mentor_lab::rescue::pooled::POOLED_MARKDOWN),
        md.as_bytes(),
    )?;
    // The problem- and template-clustered contrasts over the chunks' distinct problems.
    let analysis = mentor_lab::rescue::contrasts::analyse_dir(
        &dir,
        cfg.rescue.bootstrap,
        mentor_trainer::seed::mix(&[0xa7a, 0x5eed]),
    )
    .context("analysing the chunks")?;
    mentor_trainer::jsonl::write_json(&dir.join(mentor_lab::rescue::contrasts::ANALYSIS_JSON), &analysis)?;
    let analysis_md = mentor_lab::rescue::contrasts::markdown(&analysis);
    mentor_trainer::jsonl::write_atomic(
        &dir.join(mentor_lab::rescue::contrasts::ANALYSIS_MARKDOWN),
        analysis_md.as_bytes(),
    )?;
    if args.json {
        println!("{}", serde_json::to_string(&pooled)?);
    } else {
        print!("{md}\n{analysis_md}");
    }
    eprintln!(
        "rescue: pooled seeds {:?} ({} collapsed problems in all) → {}",
        pooled.seeds,
        pooled.collapsed.iter().sum::<usize>(),
        dir.join(mentor_lab::rescue::pooled::POOLED_MARKDOWN).display()
    );
    Ok(())
}

/// One measurement: its table (`Some(false)`) or JSON (`Some(true)`) on stdout, or nothing
/// (`None`); its one-line summary on stderr.
fn one(cfg: &TrainConfig, json: Option<bool>) -> Result<()> {
    let code = matches!(cfg.data.kind, DataKind::Mbpp | DataKind::Humaneval);
    let summary = super::sandbox::with_code(code, cfg.data.code_reward, |v| {
        mentor_lab::rescue::run(cfg, v).context("the rescue measurement failed")
    })?;
    match json {
        Some(true) => println!("{}", serde_json::to_string(&summary)?),
        Some(false) => print!("{}", mentor_lab::rescue::report::table(&summary)),
        None => {}
    }
    let rates: Vec<String> = summary
        .arms
        .iter()
        .map(|a| format!("{} {:.2}", mentor_lab::rescue::report::label(&a.arm, a.level), a.rescue_rate))
        .collect();
    eprintln!(
        "rescue: {} collapsed of {} problems (unhinted pass rate {:.3}); rescue rate {}; {:.0} s; {} → {}",
        summary.collapsed,
        summary.problems,
        summary.base_pass_rate,
        rates.join(", "),
        summary.seconds,
        summary
            .memory
            .as_ref()
            .map_or_else(|| "memory not measured".into(), mentor_lab::rescue::report::memory_line),
        summary.dir.join(mentor_lab::rescue::records::REPORT_FILE).display()
    );
    Ok(())
}
