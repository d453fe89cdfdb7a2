//! The rescue measurement over several attempt seeds: `mentor rescue --seeds 0,1,2` runs each
//! seed into `run.output_dir/seed-<s>/` (a seed whose `summary.json` exists is not run again,
//! so seeds may be run in different sessions) and pools whatever seeds exist into
//! `pooled.json` and `pooled.md`.
//!
//! Pooled, the unit is a (seed, collapsed problem) pair: rates over units with Wilson
//! intervals, paired differences with bootstrap intervals over units both rows were measured
//! on. Per seed, each seed's own summary is shown beside it, so a claim can be checked to hold
//! on every seed and not only pooled.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::records::{RescueLine, RescueSummary, RESCUE_FILE, SUMMARY_FILE};
use super::report::label;
use crate::stats;
use mentor_trainer::{Error, Result};

/// The pooled JSON, in the measurement's directory.
pub const POOLED_JSON: &str = "pooled.json";
/// The pooled report, in the measurement's directory.
pub const POOLED_MARKDOWN: &str = "pooled.md";

/// The directory of seed `seed` under `dir`.
pub fn seed_dir(dir: &Path, seed: u64) -> PathBuf {
    dir.join(format!("seed-{seed}"))
}

/// An arm row: its arm name and level.
type RowKey = (String, Option<u8>);
/// Per (seed, problem) unit: rescued, excluded.
type Units = BTreeMap<(u64, u64), (bool, bool)>;
/// Per row: every hint's tokens, every rescued attempt's reliance, whether it leaks.
type Extras = (Vec<usize>, Vec<f64>, bool);

/// One arm row pooled over seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PooledArm {
    /// The arm.
    pub arm: String,
    /// The level.
    pub level: Option<u8>,
    /// (seed, problem) units the row was measured on.
    pub units: usize,
    /// Units rescued.
    pub rescued: usize,
    /// Rescue rate over the units.
    pub rescue_rate: f64,
    /// Its Wilson 95% interval.
    pub rescue_ci: [f64; 2],
    /// Mean hint tokens.
    pub hint_tokens: Option<f64>,
    /// Reliance of the rescued hinted attempts, `[mean, sd, n]`.
    pub reliance: Option<[f64; 3]>,
    /// Whether the arm leaks by design.
    pub leaking: bool,
    /// Paired differences `[d, lo, hi]` over the units both rows were measured on.
    pub diff_vs_retry: Option<[f64; 3]>,
    /// Against `static_hints`.
    pub diff_vs_static: Option<[f64; 3]>,
    /// Against `wrong_answers`.
    pub diff_vs_wrong_answers: Option<[f64; 3]>,
    /// Against the size-matched `random_prefix`.
    pub diff_vs_random_prefix: Option<[f64; 3]>,
    /// Against `where_only`.
    pub diff_vs_where_only: Option<[f64; 3]>,
}

/// The pooled measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pooled {
    /// The seeds found, ascending.
    pub seeds: Vec<u64>,
    /// Collapsed problems per seed.
    pub collapsed: Vec<usize>,
    /// Unhinted pass@1 over all sampled problems of all seeds (attempt-weighted).
    pub base_pass_rate: f64,
    /// The arm rows, in the first seed's order.
    pub arms: Vec<PooledArm>,
    /// Each seed's summary.
    pub per_seed: Vec<RescueSummary>,
}

fn read_summary(dir: &Path) -> Result<RescueSummary> {
    let path = dir.join(SUMMARY_FILE);
    let text = std::fs::read_to_string(&path).map_err(Error::io(&path))?;
    serde_json::from_str(&text).map_err(|e| Error::Jsonl { path, line: e.line(), message: e.to_string() })
}

pub(crate) fn read_lines(dir: &Path) -> Result<Vec<RescueLine>> {
    let path = dir.join(RESCUE_FILE);
    let text = std::fs::read_to_string(&path).map_err(Error::io(&path))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| Error::Jsonl {
                path: path.clone(),
                line: i + 1,
                message: e.to_string(),
            })
        })
        .collect()
}

/// The seeds with a finished measurement under `dir` (a `seed-<s>/summary.json`), ascending.
pub fn finished_seeds(dir: &Path) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut seeds: Vec<u64> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("seed-")?.parse().ok())
        .filter(|&s| seed_dir(dir, s).join(SUMMARY_FILE).is_file())
        .collect();
    seeds.sort_unstable();
    seeds
}

/// Pools every finished seed under `dir`; `bootstrap` resamples seeded with `seed`.
pub fn pool(dir: &Path, bootstrap: usize, seed: u64) -> Result<Pooled> {
    let seeds = finished_seeds(dir);
    if seeds.is_empty() {
        return Err(Error::Missing(format!(
            "no finished seed under {} (a seed-<s>/summary.json)\nhint: run `mentor rescue --seeds 0`",
            dir.display()
        )));
    }
    let mut per_seed = Vec::new();
    // (arm, level) → unit → (rescued, excluded); in the first seed's row order.
    let mut order: Vec<RowKey> = Vec::new();
    let mut cells: BTreeMap<RowKey, Units> = BTreeMap::new();
    let mut extras: BTreeMap<RowKey, Extras> = BTreeMap::new();
    let (mut passed, mut attempts) = (0.0, 0.0);
    for &s in &seeds {
        let d = seed_dir(dir, s);
        let summary = read_summary(&d)?;
        let n = summary.problems as f64 * summary.unhinted_samples.max(1) as f64;
        passed += summary.base_pass_rate * n;
        attempts += n;
        for a in &summary.arms {
            let key = (a.arm.clone(), a.level);
            if !order.contains(&key) {
                order.push(key.clone());
            }
            extras.entry(key).or_insert_with(|| (Vec::new(), Vec::new(), false)).2 |= a.leaking;
        }
        for line in read_lines(&d)? {
            let key = (line.arm.clone(), line.level);
            cells.entry(key.clone()).or_default().insert((s, line.index), (line.rescued, line.excluded));
            let e = extras.entry(key).or_insert_with(|| (Vec::new(), Vec::new(), false));
            e.0.extend(&line.hint_tokens);
            e.1.extend(&line.reliance);
        }
        per_seed.push(summary);
    }
    let find = |arm: &str| order.iter().find(|(a, _)| a == arm).cloned();
    let measured = |key: &RowKey| -> Vec<((u64, u64), bool)> {
        cells
            .get(key)
            .map_or_else(Vec::new, |m| m.iter().filter(|(_, v)| !v.1).map(|(u, v)| (*u, v.0)).collect())
    };
    let diff = |key: &RowKey, other: Option<RowKey>| -> Option<[f64; 3]> {
        let other = other?;
        let (a, b) = (cells.get(key)?, cells.get(&other)?);
        let both: Vec<(f64, f64)> = a
            .iter()
            .filter(|(_, v)| !v.1)
            .filter_map(|(u, v)| {
                b.get(u).filter(|w| !w.1).map(|w| (f64::from(u8::from(v.0)), f64::from(u8::from(w.0))))
            })
            .collect();
        let (x, y): (Vec<f64>, Vec<f64>) = both.into_iter().unzip();
        stats::paired_difference(&x, &y, &stats::resamples(x.len(), bootstrap, seed))
    };
    let arms = order
        .iter()
        .map(|key| {
            let units = measured(key);
            let rescued = units.iter().filter(|(_, r)| *r).count();
            let (lo, hi) = stats::wilson(rescued, units.len()).unwrap_or((0.0, 1.0));
            let (tokens, reliance, leaking) = extras.get(key).cloned().unwrap_or_default();
            PooledArm {
                arm: key.0.clone(),
                level: key.1,
                units: units.len(),
                rescued,
                rescue_rate: rescued as f64 / units.len().max(1) as f64,
                rescue_ci: [lo, hi],
                hint_tokens: (!tokens.is_empty())
                    .then(|| tokens.iter().sum::<usize>() as f64 / tokens.len() as f64),
                reliance: super::reliance::spread(&reliance),
                leaking,
                diff_vs_retry: diff(key, find("retry")),
                diff_vs_static: diff(key, find("static_hints")),
                diff_vs_wrong_answers: diff(key, find("wrong_answers")),
                diff_vs_random_prefix: diff(key, find("random_prefix")),
                diff_vs_where_only: diff(key, find("where_only")),
            }
        })
        .collect();
    Ok(Pooled {
        collapsed: per_seed.iter().map(|s| s.collapsed).collect(),
        seeds,
        base_pass_rate: if attempts > 0.0 { passed / attempts } else { 0.0 },
        arms,
        per_seed,
    })
}

fn d(x: Option<[f64; 3]>) -> String {
    x.map_or_else(|| "–".into(), |[d, lo, hi]| format!("{d:+.3} [{lo:+.3}, {hi:+.3}]"))
}

/// `pooled.md`: the pooled table, then each seed's differences of the diagnosing rows against
/// the matched controls.
pub fn markdown(p: &Pooled) -> String {
    let mut out = String::from("# Rescue measurement, pooled over attempt seeds\n\n");
    let _ = writeln!(
        out,
        "Seeds {:?}; collapsed problems per seed {:?}; unhinted pass@1 {:.3} over every sampled problem. \
         The unit is a (seed, problem) pair; intervals: Wilson for rates, paired bootstrap over the units both \
         rows were measured on for differences.\n",
        p.seeds, p.collapsed, p.base_pass_rate
    );
    let _ = writeln!(
        out,
        "| arm | units | rescue rate [95% CI] | Δ vs retry | Δ vs wrong_answers | Δ vs random_prefix | Δ vs where_only | Δ vs static | hint tokens | reliance |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    for a in &p.arms {
        let mut name = label(&a.arm, a.level);
        if a.leaking {
            name.push_str(" (leaks: bound, not a method)");
        }
        let _ = writeln!(
            out,
            "| {name} | {} | {:.3} [{:.3}, {:.3}] | {} | {} | {} | {} | {} | {} | {} |",
            a.units,
            a.rescue_rate,
            a.rescue_ci[0],
            a.rescue_ci[1],
            d(a.diff_vs_retry),
            d(a.diff_vs_wrong_answers),
            d(a.diff_vs_random_prefix),
            d(a.diff_vs_where_only),
            d(a.diff_vs_static),
            a.hint_tokens.map_or_else(|| "–".into(), |t| format!("{t:.1}")),
            a.reliance.map_or_else(|| "–".into(), |[m, sd, n]| format!("{m:+.2} ± {sd:.2} ({n})")),
        );
    }
    let _ = writeln!(out, "\n## Per seed: the diagnosing rows against the matched controls\n");
    let _ = writeln!(out, "| seed | row | rescue rate | Δ vs wrong_answers | Δ vs random_prefix | Δ vs where_only | Δ vs retry |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for (seed, s) in p.seeds.iter().zip(&p.per_seed) {
        for a in s.arms.iter().filter(|a| matches!(a.arm.as_str(), "mentor" | "llm" | "local")) {
            let _ = writeln!(
                out,
                "| {seed} | {} | {:.3} | {} | {} | {} | {} |",
                label(&a.arm, a.level),
                a.rescue_rate,
                d(a.diff_vs_wrong_answers),
                d(a.diff_vs_random_prefix),
                d(a.diff_vs_where_only),
                d(a.diff_vs_retry)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rescue::records::{ArmSummary, Regime};

    fn line(arm: &str, level: Option<u8>, index: u64, rescued: bool, excluded: bool) -> RescueLine {
        RescueLine {
            index,
            excluded,
            reliance: if rescued { vec![-0.5] } else { Vec::new() },
            ..RescueLine::bare(&format!("p{index}"), arm, level, rescued)
        }
    }

    fn summary(arms: &[(&str, Option<u8>)]) -> RescueSummary {
        let arm = |(name, level): &(&str, Option<u8>)| ArmSummary {
            arm: name.to_string(),
            level: *level,
            rescue_rate: 0.0,
            rescue_ci: [0.0, 1.0],
            hinted_pass_rate: None,
            leaks: 0,
            guard_rejections: 0,
            diff_vs_retry: None,
            diff_vs_static: None,
            diff_vs_wrong_answers: None,
            diff_vs_random_prefix: None,
            diff_vs_where_only: None,
            rescued: 0,
            hinted: 0,
            excluded: 0,
            leaking: false,
            reliance: None,
            samples: 0,
            mean_hint_tokens: None,
            hint_tokens: None,
            mentor_seconds: None,
        };
        RescueSummary {
            diagnosed_steps: Default::default(),
            prior_steps: None,
            collapsed: 3,
            base_pass_rate: 0.25,
            arms: arms.iter().map(arm).collect(),
            by_category: Vec::new(),
            problems: 4,
            group_size: 2,
            unhinted_samples: 4,
            regime: Regime::default(),
            temperature: 1.0,
            max_new_tokens: 64,
            model: "m".into(),
            data: "d".into(),
            credit: "prefix".into(),
            random_prefix_distinct: 0,
            fallbacks: Vec::new(),
            random_prefix_size: None,
            rows: 0,
            tokens: 0,
            seconds: 0.0,
            base_seconds: 0.0,
            memory: None,
            dir: PathBuf::new(),
        }
    }

    fn write(dir: &Path, seed: u64, lines: &[RescueLine], arms: &[(&str, Option<u8>)]) {
        let d = seed_dir(dir, seed);
        std::fs::create_dir_all(&d).unwrap();
        mentor_trainer::jsonl::write_lines(&d.join(RESCUE_FILE), lines).unwrap();
        mentor_trainer::jsonl::write_json(&d.join(SUMMARY_FILE), &summary(arms)).unwrap();
    }

    /// Two seeds of three problems: units are (seed, problem), an excluded unit is left out of
    /// the control's rate and of every difference against it, and an unfinished seed is not
    /// pooled.
    #[test]
    fn seeds_pool_by_seed_and_problem_and_exclusions_stay_out() {
        let dir = tempfile::tempdir().unwrap();
        let arms = [("retry", None), ("mentor", Some(3)), ("random_prefix", Some(3))];
        // Seed 0: mentor rescues problems 0 and 1, retry only 1, the control 1 and is excluded on 2.
        write(
            dir.path(),
            0,
            &[
                line("retry", None, 0, false, false),
                line("retry", None, 1, true, false),
                line("retry", None, 2, false, false),
                line("mentor", Some(3), 0, true, false),
                line("mentor", Some(3), 1, true, false),
                line("mentor", Some(3), 2, false, false),
                line("random_prefix", Some(3), 0, false, false),
                line("random_prefix", Some(3), 1, true, false),
                line("random_prefix", Some(3), 2, false, true),
            ],
            &arms,
        );
        // Seed 1 (the same problem numbers: other units): nothing rescued.
        let quiet: Vec<RescueLine> =
            arms.iter().flat_map(|(a, l)| (0..3).map(move |i| line(a, *l, i, false, false))).collect();
        write(dir.path(), 1, &quiet, &arms);
        // A seed without its summary is not finished.
        std::fs::create_dir_all(seed_dir(dir.path(), 2)).unwrap();
        let p = pool(dir.path(), 500, 1).unwrap();
        assert_eq!(p.seeds, [0, 1]);
        assert_eq!(p.collapsed, [3, 3]);
        let by = |arm: &str| p.arms.iter().find(|a| a.arm == arm).unwrap();
        assert_eq!((by("retry").units, by("retry").rescued), (6, 1));
        assert_eq!((by("mentor").units, by("mentor").rescued), (6, 2));
        assert_eq!((by("random_prefix").units, by("random_prefix").rescued), (5, 1));
        // mentor − retry over 6 units: (1 + 0 + 0 + 0 + 0 + 0) / 6.
        let d = by("mentor").diff_vs_retry.unwrap();
        assert!((d[0] - 1.0 / 6.0).abs() < 1e-12, "{d:?}");
        // mentor − random_prefix over the 5 units the control has: (1 + 0 + 0 + 0 + 0) / 5.
        let d = by("mentor").diff_vs_random_prefix.unwrap();
        assert!((d[0] - 0.2).abs() < 1e-12, "{d:?}");
        assert_eq!(by("mentor").reliance, Some([-0.5, 0.0, 2.0]));
        assert!((p.base_pass_rate - 0.25).abs() < 1e-12);
        let md = markdown(&p);
        assert!(md.contains("mentor L3") && md.contains("| 0 | mentor L3 |"), "{md}");
        assert!(pool(&dir.path().join("none"), 10, 1).is_err());
    }
}
