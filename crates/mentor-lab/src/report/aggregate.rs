//! Per-run summary numbers and per-arm aggregates over seeds.
//!
//! Reward, ZRF and training-dynamics means cover the post-jump phase: steps with
//! `step >= jump_step` (all steps when the run has no `jump_step`); steps that did not record
//! a number (no update, no KL) and non-finite values are skipped. The final evaluation is the row of the
//! last evaluated step at the hard level (or, without a hard level or without any eval row for
//! it, at the highest level evaluated).

use super::load::RunData;
use mentor_trainer::config::Arm;
use mentor_trainer::train::StepRecord;

/// A number read off each `metrics.jsonl` line ([`StepRecord`]), for the per-run tables and
/// the per-step plots: the one place that says which fields of the trainer's record the
/// report shows, and how.
#[derive(Debug, Clone, Copy)]
pub struct StepMetric {
    /// Short name: the plot's file stem (`<key>.svg`).
    pub key: &'static str,
    /// Column header and axis label.
    pub label: &'static str,
    /// Plot title.
    pub title: &'static str,
    /// What it is, for the report's notes.
    pub about: &'static str,
    /// The y range its plot always shows (the data may extend it).
    pub y_base: (f64, f64),
    /// The value at a step (`None`: not recorded at that step, e.g. a step with nothing to
    /// train on has no update metrics, a run without a KL penalty logs no KL).
    pub value: fn(&StepRecord) -> Option<f64>,
}

/// Mean unhinted training reward.
pub const REWARD: StepMetric = StepMetric {
    key: "reward",
    label: "mean reward",
    title: "Mean unhinted training reward",
    about: "mean unhinted training reward per step (`mean_reward`)",
    y_base: (0.0, 1.0),
    value: |s| Some(s.strategy.mean_reward),
};

/// Zero-reward fraction.
pub const ZRF: StepMetric = StepMetric {
    key: "zrf",
    label: "ZRF",
    title: "Zero-reward fraction (ZRF)",
    about: "zero-reward fraction per step (groups where every sample failed, which triggers the mentor)",
    y_base: (0.0, 1.0),
    value: |s| Some(s.strategy.zrf),
};

/// The training dynamics the report tabulates and plots beside reward and ZRF, in column
/// order. A plot is drawn only for those some run recorded.
pub const DYNAMICS: [StepMetric; 6] = [
    StepMetric {
        key: "zero_std",
        label: "zero-std frac",
        title: "Zero-std fraction (groups without a learning signal)",
        about: "share of unhinted groups whose rewards are all equal (`zero_std_frac`: no GRPO \
                advantage, all-fail or all-pass)",
        y_base: (0.0, 1.0),
        value: |s| Some(s.strategy.zero_std_frac),
    },
    StepMetric {
        key: "kl",
        label: "KL",
        title: "KL to the reference policy",
        about: "mean k3 KL to the reference policy (`kl`; logged only with `grpo.beta > 0`)",
        y_base: (0.0, 0.0),
        value: |s| s.update.as_ref().and_then(|u| u.kl),
    },
    StepMetric {
        key: "entropy",
        label: "entropy",
        title: "Mean token entropy",
        about: "mean token entropy of the trained completions (`entropy`)",
        y_base: (0.0, 0.0),
        value: |s| s.update.as_ref().and_then(|u| u.entropy),
    },
    StepMetric {
        key: "grad_norm",
        label: "grad norm",
        title: "Gradient norm before clipping",
        about: "global gradient norm before clipping, mean over the step's optimizer steps (`grad_norm`)",
        y_base: (0.0, 0.0),
        value: |s| s.update.as_ref().map(|u| u.grad_norm),
    },
    StepMetric {
        key: "clip_ratio",
        label: "clip ratio",
        title: "Clipped token fraction",
        about: "share of tokens whose ratio was clipped, either side (`clip_ratio_region`)",
        y_base: (0.0, 0.0),
        value: |s| s.update.as_ref().map(|u| u.clip_ratio_region),
    },
    StepMetric {
        key: "completion_length",
        label: "completion length",
        title: "Mean completion length (tokens)",
        about: "mean length in tokens of the completions trained on, hinted ones included \
                (`completion_length_mean`)",
        y_base: (0.0, 0.0),
        value: |s| s.update.as_ref().map(|u| u.rollout.completion_length_mean),
    },
];

/// Final unhinted evaluation of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalEval {
    /// Training step of the evaluation.
    pub step: usize,
    /// Level evaluated.
    pub level: u32,
    /// Greedy pass@1 (`None` when not finite).
    pub pass1: Option<f64>,
    /// `k` of pass@k, if measured.
    pub k: Option<usize>,
    /// pass@k (`None` when not measured).
    pub passk: Option<f64>,
    /// Greedy pass/fail per evaluation problem, in evaluation-set order ([`EvalRow::correct`]);
    /// `None` when the row did not record them (older runs) or recorded a number of outcomes
    /// other than its `n`.
    ///
    /// [`EvalRow::correct`]: mentor_trainer::eval::EvalRow::correct
    pub correct: Option<Vec<bool>>,
}

/// Summary numbers of one run (one row of the per-run tables).
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
    /// Steps that trained (had rows for a GRPO update).
    pub trained_steps: usize,
    /// Steps that trained but whose loss or gradient norm was not finite (a diverged loss, or
    /// a gradient norm that made the optimizer skip; `metrics.jsonl` holds them as `null`,
    /// read back as NaN).
    pub non_finite_updates: usize,
    /// Mean reward over the post-jump steps.
    pub mean_reward: Option<f64>,
    /// Mean zero-reward fraction over the post-jump steps.
    pub mean_zrf: Option<f64>,
    /// Post-jump means of [`DYNAMICS`], in its order.
    pub dynamics: Vec<Option<f64>>,
    /// Total mentor interventions over all steps.
    pub interventions: usize,
    /// Total rescued groups over all steps.
    pub rescues: usize,
    /// `rescues / interventions` (`None` without interventions).
    pub rescue_rate: Option<f64>,
    /// Mean wall-clock seconds per step.
    pub seconds_per_step: Option<f64>,
    /// Final evaluation at the hard level, if any eval ran.
    pub final_eval: Option<FinalEval>,
    /// The pretrained model's seed ([`mentor_trainer::train::RunInfo::pretrain_seed`]).
    pub pretrain_seed: Option<u64>,
    /// Hints shown over all steps (escalations count; `full_solution`: references trained on).
    pub hints: usize,
    /// Their size in the policy's tokens, summed.
    pub hint_tokens: usize,
    /// Completion tokens trained on in rescued groups, summed.
    pub rescued_tokens: usize,
    /// Of those, the tokens the policy sampled itself.
    pub rescued_own_tokens: usize,
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

/// Sort key for arms: the arms of [`Arm::ALL`] in its order, then the rest (arms of runs
/// this build does not know) alphabetically.
pub fn arm_order(arm: &str) -> (usize, String) {
    let rank = Arm::parse(arm).and_then(|a| Arm::ALL.iter().position(|b| *b == a)).unwrap_or(Arm::ALL.len());
    (rank, arm.to_string())
}

/// Sort key for runs: arm order, then seed, then name.
pub(crate) fn run_order(run: &RunData) -> ((usize, String), u64, String) {
    (arm_order(&run.info.arm), run.info.seed, run.info.name.clone())
}

/// The steps from the run's `jump_step` on (all steps without a jump).
fn post_jump(run: &RunData) -> impl Iterator<Item = &StepRecord> {
    let start = run.info.jump_step.unwrap_or(0);
    run.steps.iter().filter(move |s| s.step >= start)
}

/// Mean of `metric` over the post-jump steps that recorded a finite value.
pub fn post_jump_mean(run: &RunData, metric: &StepMetric) -> Option<f64> {
    finite_mean(post_jump(run).filter_map(metric.value))
}

/// Computes the per-run summary numbers.
pub fn run_stats(run: &RunData) -> RunStats {
    let interventions: usize = run.steps.iter().map(|s| s.strategy.intervened).sum();
    let rescues: usize = run.steps.iter().map(|s| s.strategy.rescued).sum();
    RunStats {
        name: run.info.name.clone(),
        arm: run.info.arm.clone(),
        seed: run.info.seed,
        steps: run.steps.len(),
        trained_steps: run.steps.iter().filter(|s| s.strategy.rows > 0).count(),
        non_finite_updates: run
            .steps
            .iter()
            .filter(|s| {
                s.strategy.rows > 0
                    && s.update.as_ref().is_none_or(|u| !(u.loss.is_finite() && u.grad_norm.is_finite()))
            })
            .count(),
        mean_reward: post_jump_mean(run, &REWARD),
        mean_zrf: post_jump_mean(run, &ZRF),
        dynamics: DYNAMICS.iter().map(|m| post_jump_mean(run, m)).collect(),
        interventions,
        rescues,
        rescue_rate: (interventions > 0).then(|| rescues as f64 / interventions as f64),
        seconds_per_step: finite_mean(run.steps.iter().map(|s| s.timing.seconds)),
        final_eval: final_eval(run),
        pretrain_seed: run.info.pretrain_seed,
        hints: run.steps.iter().map(|s| s.strategy.hints).sum(),
        hint_tokens: run.steps.iter().map(|s| s.strategy.hint_tokens).sum(),
        rescued_tokens: run.steps.iter().map(|s| s.strategy.rescued_tokens).sum(),
        rescued_own_tokens: run.steps.iter().map(|s| s.strategy.rescued_own_tokens).sum(),
    }
}

/// The final evaluation of a run's main set: the hardest curriculum level, or `data.eval` (named
/// sets, `[[eval.sets]]`, are each their own chart and are not the main set; a run with named
/// sets only takes its first).
fn final_eval(run: &RunData) -> Option<FinalEval> {
    let main = run
        .evals
        .iter()
        .find(|e| e.set.is_none())
        .map_or_else(|| run.evals.first().and_then(|e| e.set.clone()), |_| None);
    let of_main = |e: &&mentor_trainer::eval::EvalRow| e.set == main;
    let has_hard = run.info.hard_level.filter(|h| run.evals.iter().filter(of_main).any(|e| e.level == *h));
    let level = has_hard.or_else(|| run.evals.iter().filter(of_main).map(|e| e.level).max())?;
    // Last row wins on duplicate steps (a re-run evaluation overrides an earlier one).
    let row = run.evals.iter().filter(of_main).filter(|e| e.level == level).max_by_key(|e| e.step)?;
    Some(FinalEval {
        step: row.step,
        level,
        pass1: finite(row.pass1),
        k: (row.k > 0).then_some(row.k),
        passk: row.passk.and_then(finite),
        correct: (row.n > 0 && row.correct.len() == row.n).then(|| row.correct.clone()),
    })
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
    use crate::report::fixtures::{eval, mentor, run, step, vanilla};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn run_stats_use_post_jump_steps_and_hard_level() {
        // Steps 0,1 are pre-jump and must not count; steps 2,3 → rewards 0.2, 0.6 → mean 0.4.
        let mut steps = vec![
            step(0, 0.9, 0.0, 0, 0),
            step(1, 0.9, 0.0, 0, 0),
            step(2, 0.2, 0.75, 4, 1),
            step(3, 0.6, 0.25, 2, 2),
        ];
        steps[3].update.as_mut().unwrap().grad_norm = 0.25; // step 2: 0.75 → mean 0.5
        let evals =
            vec![eval(2, 4, 0.1, Some(0.3)), eval(3, 2, 0.9, Some(0.95)), eval(3, 4, 0.25, Some(0.5))];
        let s = run_stats(&run(mentor(), 0, Some(2), steps, evals));
        assert_eq!((s.steps, s.trained_steps, s.non_finite_updates), (4, 4, 0));
        assert!(close(s.mean_reward.unwrap(), 0.4));
        assert!(close(s.mean_zrf.unwrap(), 0.5));
        assert_eq!((s.interventions, s.rescues), (6, 3));
        assert!(close(s.rescue_rate.unwrap(), 0.5));
        assert_eq!(s.seconds_per_step, Some(1.0));
        let by_key = |k: &str| s.dynamics[DYNAMICS.iter().position(|m| m.key == k).unwrap()];
        assert_eq!(by_key("grad_norm"), Some(0.5));
        assert_eq!(by_key("zero_std"), Some(0.5));
        assert_eq!(by_key("kl"), None, "no KL logged without a KL penalty");
        let fe = s.final_eval.unwrap();
        assert_eq!((fe.step, fe.level, fe.pass1, fe.passk, fe.k), (3, 4, Some(0.25), Some(0.5), Some(4)));
        assert_eq!(fe.correct, None, "the fixture's rows record no per-problem outcomes");
    }

    #[test]
    fn final_eval_carries_per_problem_outcomes_only_when_they_match_n() {
        let mut row = eval(3, 4, 0.25, None);
        row.n = 4;
        row.correct = vec![false, true, false, false];
        let fe = run_stats(&run(mentor(), 0, Some(2), vec![], vec![row.clone()])).final_eval.unwrap();
        assert_eq!(fe.correct, Some(vec![false, true, false, false]));
        row.correct.pop();
        let fe = run_stats(&run(mentor(), 0, Some(2), vec![], vec![row])).final_eval.unwrap();
        assert_eq!(fe.correct, None, "3 outcomes for 4 problems are not trusted");
    }

    #[test]
    fn steps_without_an_update_do_not_count_in_update_means() {
        let mut idle = step(1, 0.0, 1.0, 0, 0);
        (idle.update, idle.strategy.rows) = (None, 0);
        let s = run_stats(&run(vanilla(), 0, None, vec![step(0, 0.5, 0.5, 0, 0), idle], vec![]));
        assert_eq!((s.steps, s.trained_steps, s.non_finite_updates), (2, 1, 0));
        assert_eq!(s.mean_reward, Some(0.25), "the reward of an untrained step counts");
        let entropy = DYNAMICS.iter().position(|m| m.key == "entropy").unwrap();
        assert_eq!(s.dynamics[entropy], Some(1.5), "its missing entropy does not");
    }

    #[test]
    fn an_update_with_a_non_finite_number_is_counted_not_averaged() {
        // The optimizer skipped a step for an infinite gradient norm: the trainer writes the
        // norm as `null` (JSON has no infinity), and it reads back as NaN.
        let mut skipped = step(1, 0.5, 0.5, 0, 0);
        skipped.update.as_mut().unwrap().grad_norm = f64::INFINITY;
        skipped.update.as_mut().unwrap().skipped_steps = 1;
        let line = serde_json::to_string(&skipped).unwrap();
        let read: StepRecord = serde_json::from_str(&line).unwrap();
        assert!(read.update.as_ref().is_some_and(|u| u.grad_norm.is_nan()), "{line}");
        let s = run_stats(&run(mentor(), 0, None, vec![step(0, 0.5, 0.5, 0, 0), read], vec![]));
        assert_eq!((s.steps, s.trained_steps, s.non_finite_updates), (2, 2, 1));
        let grad_norm = DYNAMICS.iter().position(|m| m.key == "grad_norm").unwrap();
        assert_eq!(s.dynamics[grad_norm], Some(0.75), "the step that read back");
    }

    #[test]
    fn no_jump_uses_all_steps_and_highest_level() {
        let steps = vec![step(0, 0.1, 1.0, 0, 0), step(1, f64::NAN, f64::NAN, 0, 0), step(2, 0.3, 0.0, 0, 0)];
        let mut unmeasured = eval(5, 3, 0.4, None);
        unmeasured.k = 0;
        let evals = vec![unmeasured, eval(5, 1, 0.8, Some(0.9)), eval(2, 3, 0.1, Some(0.1))];
        let s = run_stats(&run(vanilla(), 1, None, steps, evals));
        assert!(close(s.mean_reward.unwrap(), 0.2)); // NaN skipped: (0.1 + 0.3) / 2
        assert!(close(s.mean_zrf.unwrap(), 0.5));
        assert_eq!(s.rescue_rate, None);
        let fe = s.final_eval.unwrap();
        assert_eq!((fe.step, fe.level, fe.pass1, fe.k, fe.passk), (5, 3, Some(0.4), None, None));
    }

    #[test]
    fn empty_run_has_no_numbers() {
        let s = run_stats(&run(mentor(), 0, Some(3), vec![], vec![]));
        assert_eq!((s.steps, s.mean_reward, s.mean_zrf, s.rescue_rate), (0, None, None, None));
        assert!(s.dynamics.iter().all(Option::is_none) && s.seconds_per_step.is_none());
        assert!(s.final_eval.is_none());
    }

    #[test]
    fn arm_aggregates_over_seeds() {
        // mentor seed 0: rewards 0.2,0.4 → 0.3; interventions 2+2=4, rescues 1+2=3 → rate 0.75; pass1 0.2
        // mentor seed 1: rewards 0.6,0.8 → 0.7; interventions 4, rescues 1 → rate 0.25; pass1 0.4
        // → mean reward 0.5 (0.3–0.7), rate 0.5 (0.25–0.75), pass1 0.3 (0.2–0.4), interventions 4 (4–4)
        let m0 = run(
            mentor(),
            0,
            Some(0),
            vec![step(0, 0.2, 0.5, 2, 1), step(1, 0.4, 0.5, 2, 2)],
            vec![eval(1, 4, 0.2, Some(0.6))],
        );
        let m1 = run(
            mentor(),
            1,
            Some(0),
            vec![step(0, 0.6, 0.1, 4, 1), step(1, 0.8, 0.3, 0, 0)],
            vec![eval(1, 4, 0.4, None)],
        );
        let v0 = run(vanilla(), 0, Some(0), vec![step(0, 0.1, 0.9, 0, 0)], vec![]);
        let stats: Vec<RunStats> = [&m1, &v0, &m0].iter().map(|r| run_stats(r)).collect();
        let table = arm_table(&stats);
        assert_eq!(table.iter().map(|a| a.arm.as_str()).collect::<Vec<_>>(), [vanilla(), mentor()]);
        let m = &table[1];
        assert_eq!(m.seeds, vec![1, 0]);
        let r = m.mean_reward.unwrap();
        assert!(close(r.mean, 0.5) && close(r.min, 0.3) && close(r.max, 0.7) && r.n == 2);
        let z = m.mean_zrf.unwrap(); // seed0 0.5, seed1 0.2
        assert!(close(z.mean, 0.35) && close(z.min, 0.2) && close(z.max, 0.5));
        let rate = m.rescue_rate.unwrap();
        assert!(close(rate.mean, 0.5) && close(rate.min, 0.25) && close(rate.max, 0.75));
        let p1 = m.pass1.unwrap();
        assert!(close(p1.mean, 0.3) && close(p1.min, 0.2) && close(p1.max, 0.4));
        let pk = m.passk.unwrap(); // only seed 0 has a pass@k
        assert!(close(pk.mean, 0.6) && pk.n == 1);
        let iv = m.interventions.unwrap();
        assert!(close(iv.mean, 4.0) && close(iv.min, 4.0) && close(iv.max, 4.0));
        assert_eq!(table[0].pass1, None);
        assert_eq!(table[0].rescue_rate, None);
    }

    #[test]
    fn arms_sort_in_the_enums_order_then_unknown_ones_alphabetically() {
        let mut arms: Vec<&str> = vec!["zeta", "alpha"];
        arms.extend(Arm::ALL.iter().rev().map(|a| a.name()));
        arms.sort_by_key(|a| arm_order(a));
        let known: Vec<&str> = Arm::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(arms[..known.len()], known[..]);
        assert_eq!(arms[known.len()..], ["alpha", "zeta"]);
    }
}
