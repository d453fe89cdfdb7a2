//! `prior_step`'s table: on a calibration set (the stratum's problems under
//! `rescue.calibration_seed`, never a test problem), the learner's unhinted attempts, the
//! `rules` diagnosis of every collapsed problem, and per template and step count the step the
//! diagnosis locates most often (ties: the earliest). No per-problem diagnosis reaches the
//! twin: only this table. Written once to `prior_steps.json` (beside the chunks when the run
//! is one of `--seeds`) and read back while its stratum and seed match.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mentor_core::HintLevel;

use super::arms::ask;
use super::context::{note, Ctx};
use super::records::PriorSteps;
use super::sampling::PairedSampler;
use super::unhinted;
use mentor_trainer::{Error, Result};

/// The table's file name.
pub const FILE: &str = "prior_steps.json";

/// Where a run's table lives: beside the chunks (`seed-<s>` directories), else in the run's
/// directory.
pub fn path(dir: &Path) -> PathBuf {
    let chunk = dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("seed-"));
    match dir.parent() {
        Some(parent) if chunk => parent.join(FILE),
        _ => dir.join(FILE),
    }
}

/// The most frequent position of each key's counts (ties: the earliest).
pub fn modes(counts: &BTreeMap<String, Vec<usize>>) -> BTreeMap<String, usize> {
    counts
        .iter()
        .filter_map(|(key, c)| {
            let best = c
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .max_by(|(i, a), (j, b)| a.cmp(b).then(j.cmp(i)));
            best.map(|(i, _)| (key.clone(), i))
        })
        .collect()
}

/// The run's table: read from [`path`] when it was made for this stratum and seed, else
/// calibrated with `sampler` (its own seed: the test's attempts are untouched) and written.
pub(super) fn prior_steps(ctx: &Ctx<'_>, sampler: &mut PairedSampler<'_>) -> Result<PriorSteps> {
    let r = &ctx.cfg.rescue;
    let file = path(ctx.cfg.output_dir());
    if let Ok(text) = std::fs::read_to_string(&file) {
        let table: PriorSteps = serde_json::from_str(&text).map_err(|e| Error::Jsonl {
            path: file.clone(),
            line: e.line(),
            message: e.to_string(),
        })?;
        if table.stratum == r.stratum && table.calibration_seed == r.calibration_seed {
            note(ctx.bar, &format!("rescue: prior_step reads {}", file.display()));
            return Ok(table);
        }
    }
    let tasks = super::regime::calibration(ctx.cfg)?;
    let mut cfg = ctx.cfg.clone();
    cfg.rescue.collapsed = r.calibration_collapsed;
    let cal = Ctx { cfg: &cfg, ..*ctx };
    // Every collapsed problem counts: the table estimates where the learner fails.
    let base = unhinted::sample(&cal, sampler, &tasks, &mut |_, _| Ok(true))?;
    let mut counts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, attempts) in &base.collapsed {
        let task = &tasks[*i];
        let asked = ask(ctx.mentors.rules.as_ref(), task, attempts, HintLevel::NUDGE, &[])?;
        let Some(step) = asked.diagnosis.and_then(|d| d.first_wrong_step) else { continue };
        super::quota::tally(&mut counts, mentor_agents::prior_key(task), super::quota::steps(task), step);
    }
    let table = PriorSteps {
        stratum: r.stratum.clone(),
        calibration_seed: r.calibration_seed,
        problems: base.lines.len(),
        collapsed: base.collapsed.len(),
        prior: modes(&counts),
        counts,
    };
    mentor_trainer::jsonl::write_json(&file, &table)?;
    note(
        ctx.bar,
        &format!(
            "rescue: prior_step calibrated on {} collapsed of {} problems (family seed {}) → {}",
            table.collapsed,
            table.problems,
            r.calibration_seed,
            file.display()
        ),
    );
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prior_is_the_most_located_step_ties_to_the_earliest() {
        let counts = BTreeMap::from([
            ("a/3".to_string(), vec![1, 4, 4]),
            ("b/2".to_string(), vec![0, 2]),
            ("c/2".to_string(), vec![0, 0]),
        ]);
        assert_eq!(modes(&counts), BTreeMap::from([("a/3".to_string(), 1), ("b/2".to_string(), 1)]));
        assert_eq!(path(Path::new("/x/seed-3")), Path::new("/x/prior_steps.json"));
        assert_eq!(path(Path::new("/x/run")), Path::new("/x/run/prior_steps.json"));
    }
}
