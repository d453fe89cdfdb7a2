//! Per-run summary numbers and per-arm aggregates over seeds.
//!
//! Reward / ZRF means cover the post-jump phase: steps with `step >= jump_step` (all steps when
//! the run has no `jump_step`). `NaN` values are skipped. The final evaluation is the row of the
//! last evaluated step at the hard level (or, without a hard level or without any eval row for
//! it, at the highest level evaluated).

use super::load::RunData;

/// Arms in the order reports list them; other arms follow alphabetically.
pub const KNOWN_ARMS: [&str; 5] = ["vanilla", "static_hints", "mentor", "dapo", "refinement"];

/// Final unhinted evaluation of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalEval {
    /// Training step of the evaluation.
    pub step: u64,
    /// Level evaluated.
    pub level: u32,
    /// Greedy pass@1 (`None` when missing / NaN).
    pub pass1: Option<f64>,
    /// `k` of pass@k, if recorded.
    pub k: Option<u32>,
    /// pass@k (`None` when missing / NaN).
    pub passk: Option<f64>,
}

/// Summary numbers of one run (one row of the per-run table).
#[derive(Debug, Clone, PartialEq)]
pub struct RunStats {
    /// Run name.
    pub name: String,
    /// Arm.
    pub arm: String,
    /// Seed.
    pub seed: u64,
    /// Number of training steps recorded.
    pub steps: usize,
    /// Mean reward over the post-jump steps.
    pub mean_reward: Option<f64>,
    /// Mean zero-reward fraction over the post-jump steps.
    pub mean_zrf: Option<f64>,
    /// Total mentor interventions over all steps.
    pub interventions: u64,
    /// Total rescued groups over all steps.
    pub rescues: u64,
    /// `rescues / interventions` (`None` without interventions).
    pub rescue_rate: Option<f64>,
    /// Final evaluation at the hard level, if any eval ran.
    pub final_eval: Option<FinalEval>,
}

/// Mean and range of one number over the seeds of an arm (only seeds that have the number).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agg {
    /// Arithmetic mean.
    pub mean: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Number of seeds contributing.
    pub n: usize,
}

/// Per-arm aggregate row.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmRow {
    /// Arm name.
    pub arm: String,
    /// Seeds of the arm's runs, in report order.
    pub seeds: Vec<u64>,
    /// Post-jump mean reward.
    pub mean_reward: Option<Agg>,
    /// Post-jump mean ZRF.
    pub mean_zrf: Option<Agg>,
    /// Total interventions.
    pub interventions: Option<Agg>,
    /// Rescue rate.
    pub rescue_rate: Option<Agg>,
    /// Final unhinted pass@1 at the hard level.
    pub pass1: Option<Agg>,
    /// Final unhinted pass@k at the hard level.
    pub passk: Option<Agg>,
}

/// Sort key for arms: known arms in [`KNOWN_ARMS`] order, then the rest alphabetically.
pub fn arm_order(arm: &str) -> (usize, String) {
    let rank = KNOWN_ARMS.iter().position(|a| *a == arm).unwrap_or(KNOWN_ARMS.len());
    (rank, arm.to_string())
}

/// Sort key for runs: arm order, then seed, then name.
pub(crate) fn run_order(run: &RunData) -> ((usize, String), u64, String) {
    (arm_order(&run.arm), run.seed, run.name.clone())
}

/// Computes the per-run summary numbers.
pub fn run_stats(run: &RunData) -> RunStats {
    let start = run.jump_step.unwrap_or(0);
    let post = || run.steps.iter().filter(move |s| s.step >= start);
    let interventions: u64 = run.steps.iter().map(|s| s.intervened).sum();
    let rescues: u64 = run.steps.iter().map(|s| s.rescued).sum();
    RunStats {
        name: run.name.clone(),
        arm: run.arm.clone(),
        seed: run.seed,
        steps: run.steps.len(),
        mean_reward: finite_mean(post().map(|s| s.reward)),
        mean_zrf: finite_mean(post().map(|s| s.zrf)),
        interventions,
        rescues,
        rescue_rate: (interventions > 0).then(|| rescues as f64 / interventions as f64),
        final_eval: final_eval(run),
    }
}

fn final_eval(run: &RunData) -> Option<FinalEval> {
    let has_hard = run.hard_level.filter(|h| run.evals.iter().any(|e| e.level == *h));
    let level = has_hard.or_else(|| run.evals.iter().map(|e| e.level).max())?;
    // Last row wins on duplicate steps (a re-run evaluation overrides an earlier one).
    let row = run.evals.iter().filter(|e| e.level == level).max_by_key(|e| e.step)?;
    Some(FinalEval { step: row.step, level, pass1: finite(row.pass1), k: row.k, passk: finite(row.passk) })
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Mean of the finite values, `None` if there are none.
pub(crate) fn finite_mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.filter(|v| v.is_finite()).fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Aggregates the present, finite values; `None` if there are none.
pub fn aggregate(values: impl Iterator<Item = Option<f64>>) -> Option<Agg> {
    let vals: Vec<f64> = values.flatten().filter(|v| v.is_finite()).collect();
    let mean = finite_mean(vals.iter().copied())?;
    let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(Agg { mean, min, max, n: vals.len() })
}

/// Groups run stats by arm (in [`arm_order`]) and aggregates each number over seeds.
pub fn arm_table(stats: &[RunStats]) -> Vec<ArmRow> {
    let mut arms: Vec<&str> = stats.iter().map(|s| s.arm.as_str()).collect();
    arms.sort_by_key(|a| arm_order(a));
    arms.dedup();
    arms.into_iter().map(|arm| arm_row(arm, stats.iter().filter(|s| s.arm == arm).collect())).collect()
}

fn arm_row(arm: &str, runs: Vec<&RunStats>) -> ArmRow {
    let agg = |f: &dyn Fn(&RunStats) -> Option<f64>| aggregate(runs.iter().map(|r| f(r)));
    ArmRow {
        arm: arm.to_string(),
        seeds: runs.iter().map(|r| r.seed).collect(),
        mean_reward: agg(&|r| r.mean_reward),
        mean_zrf: agg(&|r| r.mean_zrf),
        interventions: agg(&|r| Some(r.interventions as f64)),
        rescue_rate: agg(&|r| r.rescue_rate),
        pass1: agg(&|r| r.final_eval.as_ref().and_then(|e| e.pass1)),
        passk: agg(&|r| r.final_eval.as_ref().and_then(|e| e.passk)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::load::{EvalRow, StepRow};
    use std::path::PathBuf;

    fn step(step: u64, reward: f64, zrf: f64, intervened: u64, rescued: u64) -> StepRow {
        StepRow {
            step,
            level: None,
            reward,
            zrf,
            groups: 4,
            collapsed: intervened,
            intervened,
            rescued,
            extra_rollouts: 0,
            guard_rejections: 0,
            loss: f64::NAN,
            grad_norm: f64::NAN,
            seconds: f64::NAN,
            levels_used: Default::default(),
        }
    }

    fn eval(step: u64, level: u32, pass1: f64, passk: f64) -> EvalRow {
        EvalRow { step, level, n: 10, pass1, k: Some(4), passk }
    }

    fn run(arm: &str, seed: u64, jump: Option<u64>, steps: Vec<StepRow>, evals: Vec<EvalRow>) -> RunData {
        RunData {
            dir: PathBuf::new(),
            name: format!("{arm}-s{seed}"),
            arm: arm.into(),
            seed,
            preset: None,
            jump_step: jump,
            hard_level: jump.map(|_| 4),
            steps,
            evals,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn run_stats_use_post_jump_steps_and_hard_level() {
        // Steps 0,1 are pre-jump and must not count; steps 2,3 → rewards 0.2, 0.6 → mean 0.4.
        let steps = vec![
            step(0, 0.9, 0.0, 0, 0),
            step(1, 0.9, 0.0, 0, 0),
            step(2, 0.2, 0.75, 4, 1),
            step(3, 0.6, 0.25, 2, 2),
        ];
        let evals = vec![eval(2, 4, 0.1, 0.3), eval(3, 2, 0.9, 0.95), eval(3, 4, 0.25, 0.5)];
        let s = run_stats(&run("mentor", 0, Some(2), steps, evals));
        assert_eq!(s.steps, 4);
        assert!(close(s.mean_reward.unwrap(), 0.4));
        assert!(close(s.mean_zrf.unwrap(), 0.5));
        assert_eq!((s.interventions, s.rescues), (6, 3));
        assert!(close(s.rescue_rate.unwrap(), 0.5));
        let fe = s.final_eval.unwrap();
        assert_eq!((fe.step, fe.level, fe.pass1, fe.passk, fe.k), (3, 4, Some(0.25), Some(0.5), Some(4)));
    }

    #[test]
    fn no_jump_uses_all_steps_and_highest_level() {
        let steps = vec![step(0, 0.1, 1.0, 0, 0), step(1, f64::NAN, f64::NAN, 0, 0), step(2, 0.3, 0.0, 0, 0)];
        let evals = vec![eval(5, 3, 0.4, f64::NAN), eval(5, 1, 0.8, 0.9), eval(2, 3, 0.1, 0.1)];
        let s = run_stats(&run("vanilla", 1, None, steps, evals));
        assert!(close(s.mean_reward.unwrap(), 0.2)); // NaN skipped: (0.1 + 0.3) / 2
        assert!(close(s.mean_zrf.unwrap(), 0.5));
        assert_eq!(s.rescue_rate, None);
        let fe = s.final_eval.unwrap();
        assert_eq!((fe.step, fe.level, fe.pass1, fe.passk), (5, 3, Some(0.4), None));
    }

    #[test]
    fn empty_run_has_no_numbers() {
        let s = run_stats(&run("mentor", 0, Some(3), vec![], vec![]));
        assert_eq!((s.steps, s.mean_reward, s.mean_zrf, s.rescue_rate), (0, None, None, None));
        assert!(s.final_eval.is_none());
    }

    #[test]
    fn arm_aggregates_over_seeds() {
        // mentor seed 0: rewards 0.2,0.4 → 0.3; interventions 2+2=4, rescues 1+2=3 → rate 0.75; pass1 0.2
        // mentor seed 1: rewards 0.6,0.8 → 0.7; interventions 4, rescues 1 → rate 0.25; pass1 0.4
        // → mean reward 0.5 (0.3–0.7), rate 0.5 (0.25–0.75), pass1 0.3 (0.2–0.4), interventions 4 (4–4)
        let m0 = run(
            "mentor",
            0,
            Some(0),
            vec![step(0, 0.2, 0.5, 2, 1), step(1, 0.4, 0.5, 2, 2)],
            vec![eval(1, 4, 0.2, 0.6)],
        );
        let m1 = run(
            "mentor",
            1,
            Some(0),
            vec![step(0, 0.6, 0.1, 4, 1), step(1, 0.8, 0.3, 0, 0)],
            vec![eval(1, 4, 0.4, f64::NAN)],
        );
        let v0 = run("vanilla", 0, Some(0), vec![step(0, 0.1, 0.9, 0, 0)], vec![]);
        let stats: Vec<RunStats> = [&m1, &v0, &m0].iter().map(|r| run_stats(r)).collect();
        let table = arm_table(&stats);
        assert_eq!(table.iter().map(|a| a.arm.as_str()).collect::<Vec<_>>(), ["vanilla", "mentor"]);
        let mentor = &table[1];
        assert_eq!(mentor.seeds, vec![1, 0]);
        let r = mentor.mean_reward.unwrap();
        assert!(close(r.mean, 0.5) && close(r.min, 0.3) && close(r.max, 0.7) && r.n == 2);
        let z = mentor.mean_zrf.unwrap(); // seed0 0.5, seed1 0.2
        assert!(close(z.mean, 0.35) && close(z.min, 0.2) && close(z.max, 0.5));
        let rate = mentor.rescue_rate.unwrap();
        assert!(close(rate.mean, 0.5) && close(rate.min, 0.25) && close(rate.max, 0.75));
        let p1 = mentor.pass1.unwrap();
        assert!(close(p1.mean, 0.3) && close(p1.min, 0.2) && close(p1.max, 0.4));
        let pk = mentor.passk.unwrap(); // only seed 0 has a finite pass@k
        assert!(close(pk.mean, 0.6) && pk.n == 1);
        let iv = mentor.interventions.unwrap();
        assert!(close(iv.mean, 4.0) && close(iv.min, 4.0) && close(iv.max, 4.0));
        assert_eq!(table[0].pass1, None);
        assert_eq!(table[0].rescue_rate, None);
    }

    #[test]
    fn unknown_arms_sort_after_known_ones() {
        let mut arms = vec!["zeta", "mentor", "alpha", "vanilla", "refinement"];
        arms.sort_by_key(|a| arm_order(a));
        assert_eq!(arms, ["vanilla", "mentor", "refinement", "alpha", "zeta"]);
    }
}
