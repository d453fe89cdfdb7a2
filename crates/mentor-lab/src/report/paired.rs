//! Paired comparison of arms: each run's final unhinted accuracy, the per-arm mean over seeds
//! with a percentile-bootstrap interval over evaluation problems, and each arm's paired
//! difference to a reference arm (`mentor`, else the first arm in report order).
//!
//! The arms of one seed share the warm-up and are evaluated on the same problems in the same
//! order (the evaluation set depends only on the run seed), so the comparison is paired:
//!
//! * An arm's mean is the mean over its seeds of the final greedy pass@1
//!   ([`FinalEval::pass1`]). Its interval is a percentile bootstrap over evaluation problems:
//!   in each resample, every seed's problems are drawn with replacement from that seed's
//!   per-problem outcomes ([`FinalEval::correct`]), the resampled accuracies are averaged over
//!   seeds, and the interval is the `(1 - level) / 2` and `(1 + level) / 2` quantiles of those
//!   averages. The seeds themselves are not resampled: the interval is the evaluation noise of
//!   these seeds' runs, not the spread of training over seeds.
//! * A paired difference `arm − versus` is the mean over the seeds both arms ran of the
//!   difference of their accuracies; its interval resamples the same problem indices for both
//!   arms of a seed. The indices of a resample depend only on the bootstrap seed, the run seed
//!   and the number of problems, never on the arm, so two arms with identical outcomes have a
//!   difference of exactly 0 in every resample.
//!
//! Where a run did not record per-problem outcomes (runs older than [`FinalEval::correct`]),
//! the intervals it would enter are `None` (`null` in `summary.json`) rather than guessed.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::aggregate::{arm_order, FinalEval, RunStats};
use super::cells::{num, MISSING};
use crate::stats::{quantile, resamples};
use mentor_trainer::config::Arm;

/// Default number of bootstrap resamples.
pub const RESAMPLES: usize = 2000;

/// Default coverage of the bootstrap intervals.
pub const LEVEL: f64 = 0.95;

/// Default seed of the bootstrap's random number generator (fixed, so a report is reproducible).
pub const BOOTSTRAP_SEED: u64 = 0x4d45_4e54_4f52;

/// How the intervals are computed (recorded in `summary.json`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bootstrap {
    /// Number of resamples (0: no intervals).
    pub resamples: usize,
    /// Coverage of the percentile intervals, in (0, 1).
    pub level: f64,
    /// Seed of the resampling RNG (see `resamples` in this module).
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self { resamples: RESAMPLES, level: LEVEL, seed: BOOTSTRAP_SEED }
    }
}

/// One run's numbers (an entry of `summary.json`'s `runs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// Arm.
    pub arm: String,
    /// Seed.
    pub seed: u64,
    /// Greedy pass@1 of the last unhinted evaluation at the hard level ([`FinalEval::pass1`];
    /// `None` without one).
    pub final_accuracy: Option<f64>,
    /// Mean zero-reward fraction over the post-jump steps ([`RunStats::mean_zrf`]).
    pub zrf_after_jump: Option<f64>,
    /// Mentor interventions over all steps.
    pub interventions: usize,
    /// Rescued groups over all steps.
    pub rescues: usize,
    /// The pretrained model's seed (`None`: not recorded, a run that did not start from the
    /// demo's pretraining or an older run).
    pub pretrain_seed: Option<u64>,
    /// Mean size of a hint shown, in the policy's tokens (text plus forced lines;
    /// `full_solution`: the reference); `None` without hints.
    pub hint_tokens: Option<f64>,
    /// In the rescued groups, the fraction of the trained completion tokens the learner
    /// sampled itself (1: all its own; `None` without rescues).
    pub self_written_fraction: Option<f64>,
    /// Rescues per 100 hint tokens shown (`None` without hints).
    pub rescues_per_100_hint_tokens: Option<f64>,
}

/// One arm's final accuracy over seeds (an entry of `summary.json`'s `arms`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmInterval {
    /// Arm.
    pub arm: String,
    /// Seeds with a final accuracy (those the mean is over).
    pub seeds: usize,
    /// Mean final accuracy over those seeds (`None` without any).
    pub mean_final_accuracy: Option<f64>,
    /// Lower end of the bootstrap interval of the mean (`None` when a seed lacks per-problem
    /// outcomes).
    pub ci_low: Option<f64>,
    /// Upper end of the bootstrap interval of the mean.
    pub ci_high: Option<f64>,
    /// Lowest final accuracy over seeds.
    pub min: Option<f64>,
    /// Highest final accuracy over seeds.
    pub max: Option<f64>,
    /// With runs from more than one pretrained model: each model's mean over its RL seeds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_pretrained: Vec<PretrainedMean>,
    /// The spread over pretrained models: the standard deviation of [`Self::per_pretrained`]'s
    /// means (`None` with fewer than two models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd_between_pretrained: Option<f64>,
    /// The spread over RL seeds: the mean over pretrained models of the standard deviation of
    /// a model's runs (`None` unless some model has two runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd_within_pretrained: Option<f64>,
}

/// One pretrained model's mean final accuracy over its RL seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PretrainedMean {
    /// The pretrained model's seed.
    pub pretrain_seed: u64,
    /// Its runs with a final accuracy.
    pub runs: usize,
    /// Their mean final accuracy.
    pub mean: f64,
}

/// One arm's paired difference to the reference arm (an entry of `summary.json`'s `paired`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedDifference {
    /// The arm.
    pub arm: String,
    /// The reference arm it is compared with (`arm − versus`).
    pub versus: String,
    /// Seeds where both arms have a final accuracy (those the mean is over).
    pub seeds: usize,
    /// Mean over those seeds of `accuracy(arm) − accuracy(versus)` (`None` without any).
    pub mean_difference: Option<f64>,
    /// Lower end of the paired bootstrap interval (`None` when a seed of either arm lacks
    /// per-problem outcomes, or the two arms' evaluations of a seed differ in size).
    pub ci_low: Option<f64>,
    /// Upper end of the paired bootstrap interval.
    pub ci_high: Option<f64>,
    /// Paired runs where the arm is ahead (`accuracy(arm) > accuracy(versus)`).
    #[serde(default)]
    pub ahead: usize,
    /// Paired runs where it is behind.
    #[serde(default)]
    pub behind: usize,
}

/// The paired comparison of a set of runs: the content of `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedSummary {
    /// Every run, in report order (arm order, then seed).
    pub runs: Vec<RunOutcome>,
    /// Every arm, in report order.
    pub arms: Vec<ArmInterval>,
    /// Each arm but the reference, against the reference.
    pub paired: Vec<PairedDifference>,
    /// How the intervals were computed.
    pub bootstrap: Bootstrap,
}

impl PairedSummary {
    /// The runs (pretrained model's seed, RL seed) with at least one final accuracy,
    /// ascending (the rows of the paired table).
    pub fn seeds(&self) -> Vec<(Option<u64>, u64)> {
        let mut seeds: Vec<(Option<u64>, u64)> = self
            .runs
            .iter()
            .filter(|r| r.final_accuracy.is_some())
            .map(|r| (r.pretrain_seed, r.seed))
            .collect();
        seeds.sort_unstable();
        seeds.dedup();
        seeds
    }

    /// The final accuracy of `arm` on run `key` (the first such run's that has one, as in the
    /// means).
    pub fn accuracy(&self, arm: &str, key: (Option<u64>, u64)) -> Option<f64> {
        self.runs
            .iter()
            .filter(|r| r.arm == arm && (r.pretrain_seed, r.seed) == key)
            .find_map(|r| r.final_accuracy)
    }
}

/// One run as the comparison uses it: final accuracy and per-problem outcomes.
struct Cell<'a> {
    accuracy: f64,
    correct: Option<&'a [bool]>,
}

/// Which run of an arm a cell is: the pretrained model's seed (0 when not recorded) and the
/// RL seed. Arms are paired on it.
type RunKey = (u64, u64);

/// Per arm (report order): run key → the arm's first run with that key that has a final
/// accuracy.
type Grid<'a> = Vec<(String, BTreeMap<RunKey, Cell<'a>>)>;

/// Computes the paired comparison of `stats` (any order; the result is in report order).
pub fn paired_summary(stats: &[RunStats], bootstrap: Bootstrap) -> PairedSummary {
    let mut ordered: Vec<&RunStats> = stats.iter().collect();
    ordered.sort_by_key(|r| (arm_order(&r.arm), r.pretrain_seed, r.seed));
    let runs = ordered
        .iter()
        .map(|r| RunOutcome {
            arm: r.arm.clone(),
            seed: r.seed,
            final_accuracy: accuracy(r.final_eval.as_ref()),
            zrf_after_jump: r.mean_zrf,
            interventions: r.interventions,
            rescues: r.rescues,
            pretrain_seed: r.pretrain_seed,
            hint_tokens: (r.hints > 0).then(|| r.hint_tokens as f64 / r.hints as f64),
            self_written_fraction: (r.rescued_tokens > 0)
                .then(|| r.rescued_own_tokens as f64 / r.rescued_tokens as f64),
            rescues_per_100_hint_tokens: (r.hint_tokens > 0)
                .then(|| 100.0 * r.rescues as f64 / r.hint_tokens as f64),
        })
        .collect();
    let mut grid: Grid = Vec::new();
    for r in &ordered {
        if grid.last().is_none_or(|(arm, _)| *arm != r.arm) {
            grid.push((r.arm.clone(), BTreeMap::new()));
        }
        let Some(fe) = r.final_eval.as_ref() else { continue };
        let Some(accuracy) = accuracy(Some(fe)) else { continue };
        if let Some((_, cells)) = grid.last_mut() {
            let key = (r.pretrain_seed.unwrap_or(0), r.seed);
            cells.entry(key).or_insert(Cell { accuracy, correct: fe.correct.as_deref() });
        }
    }
    let arms = grid.iter().map(|(arm, cells)| arm_interval(arm, cells, &bootstrap)).collect();
    let reference = grid.iter().position(|(arm, _)| arm == Arm::Mentor.name()).unwrap_or(0);
    let paired = match grid.get(reference) {
        Some((versus, base)) => grid
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != reference)
            .map(|(_, (arm, cells))| paired_difference(arm, cells, versus, base, &bootstrap))
            .collect(),
        None => Vec::new(),
    };
    PairedSummary { runs, arms, paired, bootstrap }
}

fn accuracy(fe: Option<&FinalEval>) -> Option<f64> {
    fe.and_then(|e| e.pass1).filter(|p| p.is_finite())
}

/// Population standard deviation (`None` for fewer than two values).
fn sd(values: &[f64]) -> Option<f64> {
    (values.len() > 1).then(|| {
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64).sqrt()
    })
}

/// Each pretrained model's mean and the two spreads of [`ArmInterval`] (nothing with one model).
fn spreads(cells: &BTreeMap<RunKey, Cell>) -> (Vec<PretrainedMean>, Option<f64>, Option<f64>) {
    let mut by_model: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for ((p, _), c) in cells {
        by_model.entry(*p).or_default().push(c.accuracy);
    }
    if by_model.len() < 2 {
        return (Vec::new(), None, None);
    }
    let means: Vec<PretrainedMean> = by_model
        .iter()
        .map(|(p, v)| PretrainedMean {
            pretrain_seed: *p,
            runs: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
        })
        .collect();
    let between = sd(&means.iter().map(|m| m.mean).collect::<Vec<_>>());
    let within: Vec<f64> = by_model.values().filter_map(|v| sd(v)).collect();
    let within = (!within.is_empty()).then(|| within.iter().sum::<f64>() / within.len() as f64);
    (means, between, within)
}

fn arm_interval(arm: &str, cells: &BTreeMap<RunKey, Cell>, b: &Bootstrap) -> ArmInterval {
    let values: Vec<f64> = cells.values().map(|c| c.accuracy).collect();
    let n = values.len();
    let mean = (n > 0).then(|| values.iter().sum::<f64>() / n as f64);
    let min = values.iter().copied().reduce(f64::min);
    let max = values.iter().copied().reduce(f64::max);
    // Every seed's resampled accuracies, or no interval at all.
    let resampled: Option<Vec<Vec<f64>>> =
        cells.iter().map(|(key, c)| c.correct.and_then(|o| resampled_accuracy(o, *key, b))).collect();
    let ci = resampled.and_then(|per_seed| interval(mean_over_seeds(&per_seed, b.resamples), b.level));
    let (per_pretrained, sd_between_pretrained, sd_within_pretrained) = spreads(cells);
    ArmInterval {
        arm: arm.to_string(),
        seeds: n,
        mean_final_accuracy: mean,
        ci_low: ci.map(|c| c.0),
        ci_high: ci.map(|c| c.1),
        min,
        max,
        per_pretrained,
        sd_between_pretrained,
        sd_within_pretrained,
    }
}

fn paired_difference(
    arm: &str,
    cells: &BTreeMap<RunKey, Cell>,
    versus: &str,
    base: &BTreeMap<RunKey, Cell>,
    b: &Bootstrap,
) -> PairedDifference {
    let pairs: Vec<(RunKey, &Cell, &Cell)> =
        cells.iter().filter_map(|(seed, c)| base.get(seed).map(|r| (*seed, c, r))).collect();
    let n = pairs.len();
    let mean = (n > 0).then(|| pairs.iter().map(|(_, c, r)| c.accuracy - r.accuracy).sum::<f64>() / n as f64);
    let resampled: Option<Vec<Vec<f64>>> = pairs
        .iter()
        .map(|(seed, c, r)| {
            let (a, z) = (c.correct?, r.correct?);
            if a.len() != z.len() {
                return None; // not the same evaluation set: no pairing
            }
            let (a, z) = (resampled_accuracy(a, *seed, b)?, resampled_accuracy(z, *seed, b)?);
            Some(a.iter().zip(&z).map(|(x, y)| x - y).collect())
        })
        .collect();
    let ci = resampled.and_then(|per_seed| interval(mean_over_seeds(&per_seed, b.resamples), b.level));
    PairedDifference {
        arm: arm.to_string(),
        versus: versus.to_string(),
        seeds: n,
        mean_difference: mean,
        ci_low: ci.map(|c| c.0),
        ci_high: ci.map(|c| c.1),
        ahead: pairs.iter().filter(|(_, c, r)| c.accuracy > r.accuracy).count(),
        behind: pairs.iter().filter(|(_, c, r)| c.accuracy < r.accuracy).count(),
    }
}

/// The accuracy of `correct` on each of `b.resamples` resamples of its problems, drawn with
/// replacement. The indices depend only on `(b.seed, run key, correct.len())`: two arms of a
/// run key resample the same problems. `None` for an empty vector.
fn resampled_accuracy(correct: &[bool], (pretrain, run_seed): RunKey, b: &Bootstrap) -> Option<Vec<f64>> {
    let n = correct.len();
    if n == 0 {
        return None;
    }
    // (Pretrained model 0 keeps the draws of reports from before pretrained models were keyed.)
    let seed = match pretrain {
        0 => mentor_trainer::seed::mix(&[b.seed, run_seed, n as u64]),
        p => mentor_trainer::seed::mix(&[b.seed, run_seed, n as u64, p]),
    };
    Some(
        resamples(n, b.resamples, seed)
            .iter()
            .map(|idx| idx.iter().filter(|&&i| correct[i]).count() as f64 / n as f64)
            .collect(),
    )
}

/// Per resample, the mean over seeds of `per_seed[seed][resample]` (empty without seeds).
fn mean_over_seeds(per_seed: &[Vec<f64>], resamples: usize) -> Vec<f64> {
    if per_seed.is_empty() {
        return Vec::new();
    }
    (0..resamples).map(|i| per_seed.iter().map(|v| v[i]).sum::<f64>() / per_seed.len() as f64).collect()
}

/// The central percentile interval of coverage `level` of `values` (quantiles by linear
/// interpolation between order statistics); `None` without values or for a `level` outside
/// (0, 1].
fn interval(mut values: Vec<f64>, level: f64) -> Option<(f64, f64)> {
    if values.is_empty() || !(level > 0.0 && level <= 1.0) {
        return None;
    }
    let alpha = (1.0 - level) / 2.0;
    Some((quantile(&mut values, alpha), quantile(&mut values, 1.0 - alpha)))
}

/// Formats `mean [low, high]` with 3 decimals; `mean [–]` without an interval, `–`
/// without a mean.
pub fn mean_ci(mean: Option<f64>, low: Option<f64>, high: Option<f64>) -> String {
    match (mean, low, high) {
        (Some(m), Some(l), Some(h)) => format!("{m:.3} [{l:.3}, {h:.3}]"),
        (Some(m), _, _) => format!("{m:.3} [{MISSING}]"),
        _ => MISSING.to_string(),
    }
}

/// The report's paired section: a table of final accuracy per seed (rows) and arm (columns)
/// with a `mean [CI]` row, then the paired differences to the reference arm. Empty when no
/// run has a final accuracy.
pub fn markdown_section(summary: &PairedSummary) -> String {
    let seeds = summary.seeds();
    if seeds.is_empty() {
        return String::new();
    }
    let b = &summary.bootstrap;
    let pct = format!("{:.0}%", b.level * 100.0);
    let mut s = String::from("## Paired comparison (final unhinted accuracy per seed)\n\n");
    let _ = write!(
        s,
        "Cells: greedy pass@1 of each run's last unhinted evaluation at the hard level. The arms of \
         a seed share the warm-up and the evaluation problems. Mean [{pct} CI]: mean over seeds, \
         with a percentile bootstrap over evaluation problems ({} resamples; each seed's problems \
         redrawn with replacement, seeds fixed): it measures evaluation noise, not the spread of \
         training over seeds. [{MISSING}]: a run without per-problem outcomes, no interval.\n\n",
        b.resamples
    );
    s.push_str("| seed |");
    for a in &summary.arms {
        let _ = write!(s, " {} |", a.arm.replace('|', "\\|"));
    }
    s.push_str("\n|---:|");
    s.push_str(&"---:|".repeat(summary.arms.len()));
    s.push('\n');
    for key in &seeds {
        match key {
            (Some(p), seed) if seeds.iter().any(|k| k.0 != Some(0)) => {
                let _ = write!(s, "| pretrained {p}, seed {seed} |");
            }
            (_, seed) => {
                let _ = write!(s, "| {seed} |");
            }
        }
        for a in &summary.arms {
            let _ = write!(s, " {} |", num(summary.accuracy(&a.arm, *key)));
        }
        s.push('\n');
    }
    let _ = write!(s, "| mean [{pct} CI] |");
    for a in &summary.arms {
        let _ = write!(s, " {} |", mean_ci(a.mean_final_accuracy, a.ci_low, a.ci_high));
    }
    s.push_str("\n\n");
    if summary.arms.iter().any(|a| !a.per_pretrained.is_empty()) {
        s.push_str(
            "Spread of the final accuracy over pretrained models (the standard deviation of each \
             model's mean over its RL seeds) and over RL seeds (a model's standard deviation, \
             averaged over models):\n\n| arm | per pretrained model | sd between models | sd within a model |\n\
             |---|---|---:|---:|\n",
        );
        for a in &summary.arms {
            let per: Vec<String> =
                a.per_pretrained.iter().map(|m| format!("{}: {:.3}", m.pretrain_seed, m.mean)).collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                a.arm.replace('|', "\\|"),
                per.join(", "),
                num(a.sd_between_pretrained),
                num(a.sd_within_pretrained)
            );
        }
        s.push('\n');
    }
    if let Some(versus) = summary.paired.first().map(|p| p.versus.replace('|', "\\|")) {
        let _ = write!(
            s,
            "Paired differences to {versus} (arm − {versus}, mean over the seeds both ran; both arms \
             of a seed resample the same problems; ahead / behind: the runs where the arm is above / \
             below {versus}):\n\n| arm | seeds | mean difference [{pct} CI] | ahead / behind |\n\
             |---|---:|---:|---:|\n"
        );
        for p in &summary.paired {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} / {} |",
                p.arm.replace('|', "\\|"),
                p.seeds,
                mean_ci(p.mean_difference, p.ci_low, p.ci_high),
                p.ahead,
                p.behind
            );
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::aggregate::run_stats;
    use crate::report::fixtures::{eval, eval_outcomes, mentor, outcomes, run, step, vanilla};

    /// Stats of a run whose final evaluation has outcomes `correct` (no evaluation if `None`).
    fn stats(arm: &str, seed: u64, correct: Option<&[bool]>) -> RunStats {
        let evals = correct.map(|c| vec![eval_outcomes(5, 4, c)]).unwrap_or_default();
        run_stats(&run(arm, seed, Some(2), vec![step(3, 0.5, 0.25, 4, 1)], evals))
    }

    fn arm<'a>(s: &'a PairedSummary, name: &str) -> &'a ArmInterval {
        s.arms.iter().find(|a| a.arm == name).unwrap()
    }

    #[test]
    fn all_correct_gives_the_interval_one_one() {
        let all = outcomes(50, 50);
        let s = paired_summary(
            &[stats(mentor(), 0, Some(&all)), stats(mentor(), 1, Some(&all))],
            Bootstrap::default(),
        );
        let m = arm(&s, mentor());
        assert_eq!(
            (m.seeds, m.mean_final_accuracy, m.ci_low, m.ci_high),
            (2, Some(1.0), Some(1.0), Some(1.0))
        );
        assert_eq!((m.min, m.max), (Some(1.0), Some(1.0)));
    }

    #[test]
    fn half_correct_of_a_hundred_gives_an_interval_around_a_half() {
        // Binomial(100, 0.5) / 100 has sd 0.05: a 95% interval is about [0.40, 0.60].
        let half = outcomes(100, 50);
        let s = paired_summary(&[stats(vanilla(), 0, Some(&half))], Bootstrap::default());
        let v = arm(&s, vanilla());
        let (lo, hi) = (v.ci_low.unwrap(), v.ci_high.unwrap());
        assert_eq!(v.mean_final_accuracy, Some(0.5));
        assert!(lo < 0.5 && 0.5 < hi, "[{lo}, {hi}]");
        assert!(lo >= 0.25 && hi <= 0.75, "[{lo}, {hi}]");
        assert!(lo > 0.35 && hi < 0.65 && hi - lo > 0.1, "about ±2 sd: [{lo}, {hi}]");
    }

    /// Runs from two pretrained models on the same RL seeds are different runs: paired by
    /// (model, seed), with the spread over models apart from the spread over seeds.
    #[test]
    fn pretrained_models_are_kept_apart_and_their_spread_reported() {
        let on = |arm: &str, model: u64, seed: u64, right: usize| {
            let mut s = stats(arm, seed, Some(&outcomes(10, right)));
            s.pretrain_seed = Some(model);
            s
        };
        // Mentor: model 0 at 0.2 and 0.4, model 1 at 0.6 and 0.8. Vanilla: 0.3 everywhere.
        let runs = [
            on(mentor(), 0, 0, 2),
            on(mentor(), 0, 1, 4),
            on(mentor(), 1, 0, 6),
            on(mentor(), 1, 1, 8),
            on(vanilla(), 0, 0, 3),
            on(vanilla(), 0, 1, 3),
            on(vanilla(), 1, 0, 3),
            on(vanilla(), 1, 1, 3),
        ];
        let s = paired_summary(&runs, Bootstrap::default());
        let m = arm(&s, mentor());
        assert_eq!(m.seeds, 4);
        assert!((m.mean_final_accuracy.unwrap() - 0.5).abs() < 1e-12);
        let means: Vec<(u64, usize, f64)> =
            m.per_pretrained.iter().map(|p| (p.pretrain_seed, p.runs, p.mean)).collect();
        assert_eq!(means.len(), 2);
        assert!((means[0].2 - 0.3).abs() < 1e-12 && (means[1].2 - 0.7).abs() < 1e-12, "{means:?}");
        // Between: the sd of 0.3 and 0.7 is 0.2; within: each model's pair is 0.1 off its mean.
        assert!((m.sd_between_pretrained.unwrap() - 0.2).abs() < 1e-12);
        assert!((m.sd_within_pretrained.unwrap() - 0.1).abs() < 1e-12);
        let v = arm(&s, vanilla());
        assert_eq!((v.sd_between_pretrained, v.sd_within_pretrained), (Some(0.0), Some(0.0)));
        // Vanilla − mentor on the four runs: ahead on one (0.3 > 0.2), behind on three.
        let p = &s.paired[0];
        assert_eq!((p.seeds, p.ahead, p.behind), (4, 1, 3));
        assert!((p.mean_difference.unwrap() + 0.2).abs() < 1e-12);
        assert_eq!(s.seeds().len(), 4);
        assert_eq!(s.accuracy(mentor(), (Some(1), 0)), Some(0.6));
        let md = markdown_section(&s);
        assert!(md.contains("| pretrained 1, seed 0 |") && md.contains("sd between models"), "{md}");
        // One model only: no spread fields in summary.json.
        let one = paired_summary(&runs[..2], Bootstrap::default());
        let json = serde_json::to_string(&one).unwrap();
        assert!(!json.contains("per_pretrained") && !json.contains("sd_between"), "{json}");
    }

    #[test]
    fn identical_arms_differ_by_exactly_zero() {
        let (a, b) = (outcomes(40, 13), [outcomes(25, 20), outcomes(5, 0)].concat());
        let runs = [
            stats(vanilla(), 0, Some(&a)),
            stats(mentor(), 0, Some(&a)),
            stats(vanilla(), 1, Some(&b)),
            stats(mentor(), 1, Some(&b)),
        ];
        let s = paired_summary(&runs, Bootstrap::default());
        assert_eq!(s.paired.len(), 1);
        let p = &s.paired[0];
        assert_eq!((p.arm.as_str(), p.versus.as_str(), p.seeds), (vanilla(), mentor(), 2));
        assert_eq!((p.mean_difference, p.ci_low, p.ci_high), (Some(0.0), Some(0.0), Some(0.0)));
        // Same outcomes, same resampled indices: the two arms' intervals are the same too.
        let (v, m) = (arm(&s, vanilla()), arm(&s, mentor()));
        assert_eq!((v.ci_low, v.ci_high), (m.ci_low, m.ci_high));
        assert!(v.ci_low.unwrap() < v.ci_high.unwrap());
    }

    #[test]
    fn a_constant_shift_is_a_paired_difference_with_a_tight_interval() {
        // Vanilla fails exactly the problems mentor fails plus 10 more of 100, on every seed:
        // every resample that draws them shifts both arms alike, so the difference stays near
        // -0.1 and its interval is much narrower than either arm's.
        let runs: Vec<RunStats> = (0..3)
            .flat_map(|seed| {
                let m = outcomes(100, 60);
                let v = outcomes(100, 50);
                [stats(mentor(), seed, Some(&m)), stats(vanilla(), seed, Some(&v))]
            })
            .collect();
        let s = paired_summary(&runs, Bootstrap::default());
        let p = &s.paired[0];
        assert!((p.mean_difference.unwrap() + 0.1).abs() < 1e-12);
        let (lo, hi) = (p.ci_low.unwrap(), p.ci_high.unwrap());
        assert!(lo < -0.1 && -0.1 < hi && hi < 0.0, "[{lo}, {hi}]");
        let m = arm(&s, mentor());
        assert!(hi - lo < m.ci_high.unwrap() - m.ci_low.unwrap(), "pairing removes the shared noise");
    }

    #[test]
    fn the_bootstrap_is_deterministic_and_follows_its_seed() {
        let c = outcomes(30, 11);
        let runs = [stats(mentor(), 0, Some(&c)), stats(mentor(), 1, Some(&outcomes(30, 20)))];
        let a = paired_summary(&runs, Bootstrap::default());
        assert_eq!(a, paired_summary(&runs, Bootstrap::default()));
        let other = paired_summary(&runs, Bootstrap { seed: 7, ..Bootstrap::default() });
        assert_eq!(other.arms[0].mean_final_accuracy, a.arms[0].mean_final_accuracy);
        assert_ne!((other.arms[0].ci_low, other.arms[0].ci_high), (a.arms[0].ci_low, a.arms[0].ci_high));
    }

    #[test]
    fn runs_without_outcomes_have_means_but_no_intervals() {
        let old = |arm: &str, seed: u64, p: f64| {
            run_stats(&run(arm, seed, Some(2), vec![], vec![eval(5, 4, p, None)]))
        };
        let runs = [
            old(mentor(), 0, 0.25),
            stats(mentor(), 1, Some(&outcomes(4, 3))),
            old(vanilla(), 0, 0.5),
            stats(vanilla(), 2, None),
        ];
        let s = paired_summary(&runs, Bootstrap::default());
        let m = arm(&s, mentor());
        assert_eq!((m.seeds, m.mean_final_accuracy, m.ci_low, m.ci_high), (2, Some(0.5), None, None));
        let v = arm(&s, vanilla());
        assert_eq!((v.seeds, v.mean_final_accuracy, v.min, v.max), (1, Some(0.5), Some(0.5), Some(0.5)));
        let p = &s.paired[0];
        assert_eq!((p.seeds, p.mean_difference, p.ci_low, p.ci_high), (1, Some(0.25), None, None));
        let json = serde_json::to_value(&s).unwrap();
        assert!(json["arms"][0]["ci_low"].is_null(), "{json}");
    }

    #[test]
    fn the_reference_is_mentor_else_the_first_arm() {
        let c = outcomes(10, 5);
        let s = paired_summary(
            &[stats("odd", 0, Some(&c)), stats(mentor(), 0, Some(&c)), stats(vanilla(), 0, Some(&c))],
            Bootstrap::default(),
        );
        let pairs: Vec<(&str, &str)> = s.paired.iter().map(|p| (p.arm.as_str(), p.versus.as_str())).collect();
        assert_eq!(pairs, [(vanilla(), mentor()), ("odd", mentor())]);
        let s =
            paired_summary(&[stats("odd", 0, Some(&c)), stats(vanilla(), 0, Some(&c))], Bootstrap::default());
        let pairs: Vec<(&str, &str)> = s.paired.iter().map(|p| (p.arm.as_str(), p.versus.as_str())).collect();
        assert_eq!(pairs, [("odd", vanilla())]);
    }

    #[test]
    fn different_evaluation_sets_are_not_paired() {
        let s = paired_summary(
            &[stats(mentor(), 0, Some(&outcomes(10, 5))), stats(vanilla(), 0, Some(&outcomes(12, 6)))],
            Bootstrap::default(),
        );
        let p = &s.paired[0];
        assert_eq!((p.mean_difference, p.ci_low, p.ci_high), (Some(0.0), None, None));
    }

    #[test]
    fn summary_json_has_stable_field_names() {
        let s = paired_summary(
            &[stats(mentor(), 0, Some(&outcomes(10, 4))), stats(vanilla(), 0, Some(&outcomes(10, 2)))],
            Bootstrap::default(),
        );
        let json = serde_json::to_value(&s).unwrap();
        let keys = |v: &serde_json::Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(keys(&json), ["arms", "bootstrap", "paired", "runs"]);
        assert_eq!(
            keys(&json["runs"][0]),
            [
                "arm",
                "final_accuracy",
                "hint_tokens",
                "interventions",
                "pretrain_seed",
                "rescues",
                "rescues_per_100_hint_tokens",
                "seed",
                "self_written_fraction",
                "zrf_after_jump"
            ]
        );
        assert_eq!(
            keys(&json["arms"][0]),
            ["arm", "ci_high", "ci_low", "max", "mean_final_accuracy", "min", "seeds"]
        );
        assert_eq!(
            keys(&json["paired"][0]),
            ["ahead", "arm", "behind", "ci_high", "ci_low", "mean_difference", "seeds", "versus"]
        );
        assert_eq!(keys(&json["bootstrap"]), ["level", "resamples", "seed"]);
        assert_eq!(json["bootstrap"]["resamples"], 2000);
        assert_eq!(json["bootstrap"]["level"], 0.95);
        // Report order: vanilla before mentor; numbers as computed.
        assert_eq!(json["runs"][0]["arm"], vanilla());
        assert_eq!(json["runs"][1]["final_accuracy"], 0.4);
        assert_eq!(json["runs"][1]["zrf_after_jump"], 0.25);
        assert_eq!(
            (json["runs"][1]["interventions"].as_u64(), json["runs"][1]["rescues"].as_u64()),
            (Some(4), Some(1))
        );
        assert_eq!(json["arms"][1]["seeds"], 1);
        let back: PairedSummary = serde_json::from_value(json).unwrap();
        assert_eq!((&back.runs, back.bootstrap), (&s.runs, s.bootstrap));
    }

    #[test]
    fn percentile_interval_by_hand() {
        let v: Vec<f64> = (0..=100).map(f64::from).collect();
        let (lo, hi) = interval(v.clone(), 0.9).unwrap();
        assert!((lo - 5.0).abs() < 1e-9 && (hi - 95.0).abs() < 1e-9, "[{lo}, {hi}]");
        assert_eq!(interval(v.clone(), 1.0), Some((0.0, 100.0)));
        assert_eq!(interval(vec![0.0, 1.0], 0.5), Some((0.25, 0.75)));
        assert_eq!(interval(vec![], 0.95), None);
        assert_eq!(interval(v, 0.0), None);
    }

    #[test]
    fn markdown_table_has_a_row_per_seed_and_a_mean_row() {
        let runs = [
            stats(mentor(), 0, Some(&outcomes(10, 4))),
            stats(mentor(), 1, Some(&outcomes(10, 6))),
            stats(vanilla(), 0, Some(&outcomes(10, 1))),
            stats(vanilla(), 1, None),
        ];
        let s = paired_summary(&runs, Bootstrap::default());
        let md = markdown_section(&s);
        assert!(md.contains("| seed | vanilla | mentor |\n|---:|---:|---:|\n"), "{md}");
        assert!(md.contains("| 0 | 0.100 | 0.400 |\n| 1 | – | 0.600 |\n"), "{md}");
        let m = arm(&s, mentor());
        let mentor_cell = format!("0.500 [{:.3}, {:.3}]", m.ci_low.unwrap(), m.ci_high.unwrap());
        assert!(md.contains("| mean [95% CI] | 0.100 ["), "{md}");
        assert!(md.contains(&format!(" | {mentor_cell} |")), "{md}");
        assert!(md.contains("| vanilla | 1 | -0.300 ["), "{md}");
        assert!(
            markdown_section(&paired_summary(&[stats(mentor(), 0, None)], Bootstrap::default())).is_empty()
        );
    }
}
