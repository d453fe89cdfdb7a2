//! A training experiment over arms and seeds (`mentor experiment`): each finished run is
//! condensed into a small result file (`<arm>-s<seed>.json`: what ran, where, how long, its
//! learning curve and its per-problem evaluation outcomes) that is committed, so runs made on
//! different days and machines pool; [`pool`] reads every result file and writes the table.
//!
//! The pooled numbers, per evaluation set: each arm's final greedy pass@1 per seed and its
//! mean; per contrast (`mentor` − each other arm) the per-seed paired differences, a seed-level
//! interval (t over the seeds: with 3 seeds it is wide, and says so) and a paired interval over
//! (seed, problem) units with problems clustered across seeds (the same problem index of a set
//! is one cluster: exact for sets fixed in the config, conservative for sets drawn per seed).
//! For a set whose problems name their template (the held-out family's), also a t interval
//! over templates: each template's mean paired difference over its problems and the seeds,
//! with templates as the unit — the unit a held-out claim generalises over. The intervals
//! are 95% per contrast, with no correction for the contrasts' number; beside them, the
//! problem-clustered interval's bootstrap p-value, Holm-adjusted over the set's registered
//! contrasts ([`REGISTERED`]: `mentor` − `vanilla`, `retry`, `random_step`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::report::RunData;
use crate::stats;
use mentor_trainer::{Error, Result};

/// One training step of a run, as the result file keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepLine {
    /// The step.
    pub step: usize,
    /// Mean training reward of the step's groups.
    pub mean_reward: f64,
    /// Zero-reward fraction (groups whose every attempt failed).
    pub zrf: f64,
    /// Groups intervened on.
    pub intervened: usize,
    /// Intervened groups rescued.
    pub rescued: usize,
    /// Rows trained on.
    pub rows: usize,
    /// Completions sampled beyond the groups (hinted or retried).
    pub extra_rollouts: usize,
    /// Tokens of the hints shown (text and forced prefix).
    pub hint_tokens: usize,
    /// Trained tokens of rescued groups, and of those the learner's own.
    pub rescued_tokens: [usize; 2],
}

/// One evaluation of a run on one set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalLine {
    /// The set: its `[[eval.sets]]` name, `level <L>`, or `eval` (`data.eval`).
    pub set: String,
    /// The step evaluated after.
    pub step: usize,
    /// Greedy pass@1.
    pub pass1: f64,
    /// pass@k, when measured, and its k.
    pub passk: Option<(usize, f64)>,
    /// Each problem's greedy outcome, in set order.
    pub correct: Vec<bool>,
    /// Draws per problem of the sampled evaluation (0: none).
    #[serde(default)]
    pub samples: usize,
    /// Correct draws of each problem the sampled evaluation covered (the set's first ones),
    /// in set order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub right: Vec<usize>,
}

impl EvalLine {
    /// Each covered problem's unbiased pass@k (empty without a sampled evaluation).
    pub fn passk_each(&self) -> Vec<f64> {
        match self.passk {
            Some((k, _)) if self.samples >= k => {
                self.right.iter().map(|&c| mentor_trainer::eval::pass_at_k(self.samples, c, k)).collect()
            }
            _ => Vec::new(),
        }
    }
}

/// A finished run, condensed (`<arm>-s<seed>.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultFile {
    /// The arm.
    pub arm: String,
    /// The run seed.
    pub seed: u64,
    /// SHA-256 of the run's `config.toml` with `strategy.arm`, `run.seed` and the paths
    /// taken out: equal across the arms and seeds of one experiment.
    pub config_hash: String,
    /// The commit the binary was built from (as given by the caller).
    pub commit: String,
    /// The CPU (`model name` of /proc/cpuinfo) and the tensor threads.
    pub cpu: String,
    /// Tensor threads.
    pub threads: usize,
    /// Seconds of the run's training steps (sampling, mentor, update), summed over the
    /// sessions it took; evaluations not included.
    pub step_seconds: f64,
    /// Peak resident memory, MiB.
    pub peak_rss_mib: Option<f64>,
    /// The learning curve.
    pub steps: Vec<StepLine>,
    /// Every evaluation, in file order.
    pub evals: Vec<EvalLine>,
    /// Final pass@1 on the `same_templates` set, when the run has one.
    pub final_same_templates_pass1: Option<f64>,
    /// Final pass@1 on the `new_templates` set, when the run has one.
    pub final_new_templates_pass1: Option<f64>,
}

/// The step-0 evaluation of one seed, made once for every arm (`start/s<seed>.json`): the
/// arms of a seed start from one model and are evaluated on the same sets with the same
/// seeds, so their step-0 rows are these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartFile {
    /// The run seed.
    pub seed: u64,
    /// [`config_hash`] of the config it was made under (a result file's, for any arm).
    pub config_hash: String,
    /// The commit the binary was built from.
    pub commit: String,
    /// The CPU.
    pub cpu: String,
    /// Tensor threads.
    pub threads: usize,
    /// Seconds the evaluation took (with the model's building and any pretraining).
    pub seconds: f64,
    /// The rows, one per evaluation set, as `eval.jsonl` has them.
    pub rows: Vec<mentor_trainer::eval::EvalRow>,
}

impl StartFile {
    /// Reads one.
    pub fn read(path: &Path) -> Result<Self> {
        mentor_trainer::jsonl::read_json(path)
    }
}

/// The file name of a run's result.
pub fn file_name(arm: &str, seed: u64) -> String {
    format!("{arm}-s{seed}.json")
}

fn set_name(row: &mentor_trainer::eval::EvalRow) -> String {
    match (&row.set, row.level) {
        (Some(name), _) => name.clone(),
        (None, 0) => "eval".into(),
        (None, l) => format!("level {l}"),
    }
}

/// A config's identity across arms and seeds: its TOML with the lines that name the arm, the
/// seed, the run's name and its paths left out, hashed.
pub fn config_hash(config_toml: &str) -> String {
    use sha2::{Digest, Sha256};
    let varying = ["arm =", "seed =", "name =", "output_dir =", "dir ="];
    let kept: Vec<&str> =
        config_toml.lines().filter(|l| !varying.iter().any(|v| l.trim_start().starts_with(v))).collect();
    let digest = Sha256::digest(kept.join("\n").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl ResultFile {
    /// Condenses a finished run; `meta` says what ran it and where.
    pub fn of_run(run: &RunData, meta: RunMeta) -> Self {
        let steps = run
            .steps
            .iter()
            .map(|s| StepLine {
                step: s.step,
                mean_reward: s.strategy.mean_reward,
                zrf: s.strategy.zrf,
                intervened: s.strategy.intervened,
                rescued: s.strategy.rescued,
                rows: s.strategy.rows,
                extra_rollouts: s.strategy.extra_rollouts,
                hint_tokens: s.strategy.hint_tokens,
                rescued_tokens: [s.strategy.rescued_tokens, s.strategy.rescued_own_tokens],
            })
            .collect();
        let evals: Vec<EvalLine> = run
            .evals
            .iter()
            .map(|e| EvalLine {
                set: set_name(e),
                step: e.step,
                pass1: e.pass1,
                passk: e.passk.map(|p| (e.k, p)),
                correct: e.correct.clone(),
                samples: e.samples,
                right: e.right.clone(),
            })
            .collect();
        let last =
            |name: &str| evals.iter().filter(|e| e.set == name).max_by_key(|e| e.step).map(|e| e.pass1);
        Self {
            arm: run.info.arm.clone(),
            seed: run.info.seed,
            config_hash: config_hash(&meta.config_toml),
            commit: meta.commit,
            cpu: meta.cpu,
            threads: meta.threads,
            step_seconds: run.steps.iter().map(|s| s.timing.seconds).sum(),
            peak_rss_mib: run.steps.iter().filter_map(|s| s.timing.peak_rss_mib).reduce(f64::max),
            steps,
            final_same_templates_pass1: last("same_templates"),
            final_new_templates_pass1: last("new_templates"),
            evals,
        }
    }

    /// The final evaluation of `set` (the last step's).
    pub fn final_eval(&self, set: &str) -> Option<&EvalLine> {
        self.evals.iter().filter(|e| e.set == set).max_by_key(|e| e.step)
    }
}

/// What a result file says of where and how a run ran.
#[derive(Debug, Clone, PartialEq)]
pub struct RunMeta {
    /// The run's `config.toml`.
    pub config_toml: String,
    /// The commit.
    pub commit: String,
    /// The CPU.
    pub cpu: String,
    /// Tensor threads.
    pub threads: usize,
}

/// The CPU's model name (`unknown` where /proc/cpuinfo does not say).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Reads every result file (`*-s<seed>.json`) in `dir`, sorted by arm and seed.
pub fn read_results(dir: &Path) -> Result<Vec<ResultFile>> {
    let entries = std::fs::read_dir(dir).map_err(Error::io(dir))?;
    let mut out = Vec::new();
    for e in entries {
        let path = e.map_err(Error::io(dir))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(stem) = name.strip_suffix(".json") else { continue };
        if stem.rsplit_once("-s").is_none_or(|(_, s)| s.parse::<u64>().is_err()) {
            continue;
        }
        out.push(mentor_trainer::jsonl::read_json::<ResultFile>(&path)?);
    }
    out.sort_by(|a, b| (&a.arm, a.seed).cmp(&(&b.arm, b.seed)));
    Ok(out)
}

/// One arm on one set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmOnSet {
    /// The arm.
    pub arm: String,
    /// Final pass@1 per seed, `(seed, pass1)`.
    pub per_seed: Vec<(u64, f64)>,
    /// Their mean.
    pub mean: f64,
    /// Step-0 pass@1 per seed (the same model before training: equal across arms of a seed).
    pub step0: Vec<(u64, f64)>,
    /// Final pass@k per seed, `(seed, pass@k)`, where the runs measured it.
    #[serde(default)]
    pub passk: Vec<(u64, f64)>,
    /// Its k.
    #[serde(default)]
    pub k: Option<usize>,
}

/// `mentor` against another arm on one set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmContrast {
    /// The arm compared with `mentor`.
    pub other: String,
    /// `(seed, mentor − other)` of final pass@1, on the seeds both ran.
    pub per_seed: Vec<(u64, f64)>,
    /// `[mean, lo, hi]`: the seed-level 95% t interval (`null` with one seed).
    pub by_seed: Option<[f64; 3]>,
    /// `[mean, lo, hi]` over (seed, problem) units, problems clustered across seeds.
    pub by_problem: Option<[f64; 3]>,
    /// The same for pass@k (per problem, the unbiased estimate from its draws), where both
    /// arms measured it.
    #[serde(default)]
    pub passk_by_problem: Option<[f64; 3]>,
    /// `[mean, lo, hi]`: the 95% t interval over templates of each template's mean paired
    /// pass@1 difference (its problems and the seeds pooled), where the set's problems name
    /// their template ([`Templates`]) and at least two templates are paired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_template: Option<[f64; 3]>,
    /// Templates in `by_template` (0: not measured).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub templates: usize,
    /// The two-sided bootstrap p-value of `by_problem` ([`stats::paired_difference_p`], the
    /// same resamples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_by_problem: Option<f64>,
    /// `p_by_problem` Holm-adjusted over the set's registered contrasts ([`REGISTERED`]);
    /// `None` for a contrast outside that family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_holm: Option<f64>,
}

/// The arms `mentor` is compared with in issue 58's plan, the family a set's p-values are
/// Holm-adjusted over; a contrast with any other arm (e.g. the one-seed `dapo`) is reported
/// beside them, outside the family.
pub const REGISTERED: [&str; 3] = ["vanilla", "retry", "random_step"];

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Each evaluated problem's template, by set and seed, in set order (the template names a
/// generated family puts in `meta.subject`): `templates[set][seed][i]` is problem `i`'s.
/// Sets and seeds without names are absent.
pub type Templates = BTreeMap<String, BTreeMap<u64, Vec<String>>>;

/// The mean and 95% t interval of `values` (`None` under two).
fn t_interval(values: &[f64]) -> Option<[f64; 3]> {
    let n = values.len();
    (n >= 2).then(|| {
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let half = t975(n - 1) * (var / n as f64).sqrt();
        [mean, mean - half, mean + half]
    })
}

/// One evaluation set pooled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetPooled {
    /// The set.
    pub set: String,
    /// Per arm.
    pub arms: Vec<ArmOnSet>,
    /// `mentor` − each other arm.
    pub contrasts: Vec<ArmContrast>,
}

/// The experiment pooled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pooled {
    /// Result files read.
    pub runs: usize,
    /// Distinct config hashes among them (1 when every run is of one experiment).
    pub config_hashes: Vec<String>,
    /// Per evaluation set.
    pub sets: Vec<SetPooled>,
    /// What each run cost, in arm and seed order.
    #[serde(default)]
    pub costs: Vec<RunCost>,
}

/// What one run cost and drew.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCost {
    /// The arm.
    pub arm: String,
    /// The seed.
    pub seed: u64,
    /// Training steps.
    pub steps: usize,
    /// Seconds of the training steps (evaluations not included).
    pub step_seconds: f64,
    /// Peak resident memory, MiB.
    pub peak_rss_mib: Option<f64>,
    /// Rows trained on, summed over steps.
    pub rows: usize,
    /// Completions sampled beyond the groups (hinted or retried), summed.
    pub extra_rollouts: usize,
    /// Groups intervened on, summed.
    pub intervened: usize,
    /// Of those, rescued.
    pub rescued: usize,
    /// Tokens of the hints shown, summed.
    pub hint_tokens: usize,
    /// The learner's own share of the rescued groups' trained tokens (`None`: nothing rescued).
    pub own_share: Option<f64>,
    /// Where it ran: the CPU, the tensor threads and the commit.
    pub machine: String,
}

impl RunCost {
    fn of(r: &ResultFile) -> Self {
        let sum = |f: fn(&StepLine) -> usize| r.steps.iter().map(f).sum::<usize>();
        let rescued_tokens = sum(|s| s.rescued_tokens[0]);
        Self {
            arm: r.arm.clone(),
            seed: r.seed,
            steps: r.steps.len(),
            step_seconds: r.step_seconds,
            peak_rss_mib: r.peak_rss_mib,
            rows: sum(|s| s.rows),
            extra_rollouts: sum(|s| s.extra_rollouts),
            intervened: sum(|s| s.intervened),
            rescued: sum(|s| s.rescued),
            hint_tokens: sum(|s| s.hint_tokens),
            own_share: (rescued_tokens > 0)
                .then(|| sum(|s| s.rescued_tokens[1]) as f64 / rescued_tokens as f64),
            machine: format!("{}, {} threads, {}", r.cpu, r.threads, r.commit),
        }
    }
}

/// The two-sided 97.5% quantile of Student's t with `df` degrees of freedom (1-30; above, the
/// normal's).
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042,
    ];
    T.get(df.wrapping_sub(1)).copied().unwrap_or(1.960)
}

/// Pools result files: per set, every arm's final pass@1 and `mentor`'s contrasts; `templates`
/// names each problem's template where a set has them (empty: no template intervals).
pub fn pool(results: &[ResultFile], templates: &Templates, bootstrap: usize, seed: u64) -> Pooled {
    let sets: BTreeSet<&str> = results.iter().flat_map(|r| r.evals.iter().map(|e| e.set.as_str())).collect();
    let arms: BTreeSet<&str> = results.iter().map(|r| r.arm.as_str()).collect();
    let find = |arm: &str, s: u64| results.iter().find(|r| r.arm == arm && r.seed == s);
    let mut out = Vec::new();
    for set in sets {
        let arm_rows: Vec<ArmOnSet> = arms
            .iter()
            .map(|&arm| {
                let runs: Vec<&ResultFile> = results.iter().filter(|r| r.arm == arm).collect();
                let per_seed: Vec<(u64, f64)> =
                    runs.iter().filter_map(|r| Some((r.seed, r.final_eval(set)?.pass1))).collect();
                let step0 = runs
                    .iter()
                    .filter_map(|r| {
                        Some((r.seed, r.evals.iter().find(|e| e.set == set && e.step == 0)?.pass1))
                    })
                    .collect();
                let mean = per_seed.iter().map(|p| p.1).sum::<f64>() / per_seed.len().max(1) as f64;
                let finals: Vec<(u64, &EvalLine)> =
                    runs.iter().filter_map(|r| Some((r.seed, r.final_eval(set)?))).collect();
                let passk = finals.iter().filter_map(|(s, e)| Some((*s, e.passk?.1))).collect();
                let k = finals.iter().find_map(|(_, e)| e.passk.map(|p| p.0));
                ArmOnSet { arm: arm.to_string(), per_seed, mean, step0, passk, k }
            })
            .collect();
        let mut contrasts = Vec::new();
        if arms.contains("mentor") {
            for &other in arms.iter().filter(|a| **a != "mentor") {
                let (mut per_seed, mut a, mut b, mut clusters) =
                    (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                let (mut ka, mut kb, mut kclusters) = (Vec::new(), Vec::new(), Vec::new());
                // Per template: (sum of paired differences, problems).
                let mut by_name: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
                for r in results.iter().filter(|r| r.arm == "mentor") {
                    let (Some(m), Some(o)) =
                        (r.final_eval(set), find(other, r.seed).and_then(|o| o.final_eval(set)))
                    else {
                        continue;
                    };
                    per_seed.push((r.seed, m.pass1 - o.pass1));
                    if m.correct.len() == o.correct.len() {
                        let names = templates
                            .get(set)
                            .and_then(|by_seed| by_seed.get(&r.seed))
                            .filter(|names| names.len() == m.correct.len());
                        for (i, (x, y)) in m.correct.iter().zip(&o.correct).enumerate() {
                            a.push(f64::from(u8::from(*x)));
                            b.push(f64::from(u8::from(*y)));
                            clusters.push(i as u64);
                            if let Some(names) = names {
                                let e = by_name.entry(names[i].as_str()).or_default();
                                e.0 += f64::from(u8::from(*x)) - f64::from(u8::from(*y));
                                e.1 += 1;
                            }
                        }
                    }
                    let (pm, po) = (m.passk_each(), o.passk_each());
                    if !pm.is_empty() && pm.len() == po.len() && m.passk.map(|p| p.0) == o.passk.map(|p| p.0)
                    {
                        kclusters.extend(0..pm.len() as u64);
                        ka.extend(pm);
                        kb.extend(po);
                    }
                }
                let by_seed = t_interval(&per_seed.iter().map(|p| p.1).collect::<Vec<_>>());
                let template_means: Vec<f64> = by_name.values().map(|(d, n)| d / *n as f64).collect();
                let by_template = t_interval(&template_means);
                let resamples = stats::clustered_resamples(&clusters, bootstrap, seed);
                let by_problem = stats::paired_difference(&a, &b, &resamples);
                let p_by_problem = stats::paired_difference_p(&a, &b, &resamples);
                let passk_by_problem = (!ka.is_empty())
                    .then(|| {
                        stats::paired_difference(
                            &ka,
                            &kb,
                            &stats::clustered_resamples(&kclusters, bootstrap, seed),
                        )
                    })
                    .flatten();
                contrasts.push(ArmContrast {
                    other: other.to_string(),
                    per_seed,
                    by_seed,
                    by_problem,
                    passk_by_problem,
                    templates: if by_template.is_some() { template_means.len() } else { 0 },
                    by_template,
                    p_by_problem,
                    p_holm: None,
                });
            }
        }
        let family: Vec<usize> = (0..contrasts.len())
            .filter(|&i| {
                REGISTERED.contains(&contrasts[i].other.as_str()) && contrasts[i].p_by_problem.is_some()
            })
            .collect();
        let adjusted =
            stats::holm(&family.iter().filter_map(|&i| contrasts[i].p_by_problem).collect::<Vec<_>>());
        for (&i, p) in family.iter().zip(adjusted) {
            contrasts[i].p_holm = Some(p);
        }
        out.push(SetPooled { set: set.to_string(), arms: arm_rows, contrasts });
    }
    let hashes: BTreeSet<String> = results.iter().map(|r| r.config_hash.clone()).collect();
    Pooled {
        runs: results.len(),
        config_hashes: hashes.into_iter().collect(),
        sets: out,
        costs: results.iter().map(RunCost::of).collect(),
    }
}

/// One value of a sweep, judged by the sweep's rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// The value, as given.
    pub value: String,
    /// Runs of it pooled (arms × seeds that finished).
    pub runs: usize,
    /// Mean train reward over the first `window` steps and over the last `window`, averaged
    /// over the runs.
    pub reward: [f64; 2],
    /// The last window's mean is above the first's.
    pub rises: bool,
    /// The regime at the start: step 0's train reward (the unhinted sampled pass@1) and
    /// zero-reward fraction, averaged over the runs.
    pub step0: [f64; 2],
    /// Greedy pass@1 on the rule's set at step 0 and at the end, averaged over the runs.
    pub pass1: Option<[f64; 2]>,
    /// The final pass@1 is not below step 0's.
    pub holds: bool,
    /// The rule's choice: the largest value that rises and holds.
    pub chosen: bool,
}

/// The mean of each of two columns (0 for no rows).
fn column_means(rows: &[[f64; 2]]) -> [f64; 2] {
    let n = rows.len().max(1) as f64;
    [rows.iter().map(|r| r[0]).sum::<f64>() / n, rows.iter().map(|r| r[1]).sum::<f64>() / n]
}

/// The sweep's rule over `values` (each value with its finished runs): for each, the train
/// reward's mean over the first and the last `window` steps and the greedy pass@1 on `set` at
/// step 0 and at the end; the chosen value is the largest (as a number) whose reward rises
/// and whose pass@1 does not fall. A value without a finished run, or without the set, is
/// never chosen.
pub fn sweep(values: &[(String, Vec<ResultFile>)], set: &str, window: usize) -> Vec<SweepRow> {
    let window = window.max(1);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut rows: Vec<SweepRow> = values
        .iter()
        .map(|(value, runs)| {
            let ends: Vec<[f64; 2]> = runs
                .iter()
                .filter(|r| !r.steps.is_empty())
                .map(|r| {
                    let rewards: Vec<f64> = r.steps.iter().map(|s| s.mean_reward).collect();
                    let w = window.min(rewards.len());
                    [mean(&rewards[..w]), mean(&rewards[rewards.len() - w..])]
                })
                .collect();
            let reward = column_means(&ends);
            let pass: Vec<[f64; 2]> = runs
                .iter()
                .filter_map(|r| {
                    let start = r.evals.iter().find(|e| e.set == set && e.step == 0)?.pass1;
                    let end = r.final_eval(set).filter(|e| e.step > 0)?.pass1;
                    Some([start, end])
                })
                .collect();
            let pass1 = (!pass.is_empty()).then(|| column_means(&pass));
            let rises = !ends.is_empty() && reward[1] > reward[0];
            let firsts: Vec<[f64; 2]> =
                runs.iter().filter_map(|r| r.steps.first()).map(|s| [s.mean_reward, s.zrf]).collect();
            let step0 = column_means(&firsts);
            let holds = pass1.is_some_and(|[a, b]| b >= a);
            SweepRow {
                value: value.clone(),
                runs: runs.len(),
                reward,
                rises,
                step0,
                pass1,
                holds,
                chosen: false,
            }
        })
        .collect();
    let number = |v: &str| v.trim().parse::<f64>().unwrap_or(f64::NAN);
    let best = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.rises && r.holds && number(&r.value).is_finite())
        .max_by(|a, b| number(&a.1.value).total_cmp(&number(&b.1.value)))
        .map(|(i, _)| i);
    if let Some(i) = best {
        rows[i].chosen = true;
    }
    rows
}

/// The sweep's table as Markdown.
pub fn sweep_markdown(key: &str, set: &str, window: usize, rows: &[SweepRow]) -> String {
    let mut s = format!(
        "Sweep of `{key}`. Rule (fixed before the runs): the largest value whose train reward rises \
         (mean of the last {window} steps above the first {window}'s) while its final greedy pass@1 \
         on `{set}` does not fall below step 0's. Step 0's train reward and zero-reward fraction \
         are the regime the runs start in.\n\n| {key} | runs | step 0 reward | step 0 ZRF | reward, first {window} | last {window} | rises | {set} pass@1, step 0 | end | holds | chosen |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    for r in rows {
        let (p0, p1) =
            r.pass1.map_or(("–".into(), "–".into()), |[a, b]| (format!("{a:.3}"), format!("{b:.3}")));
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.2} | {:.3} | {:.3} | {} | {p0} | {p1} | {} | {} |",
            r.value,
            r.runs,
            r.step0[0],
            r.step0[1],
            r.reward[0],
            r.reward[1],
            if r.rises { "yes" } else { "no" },
            if r.holds { "yes" } else { "no" },
            if r.chosen { "**chosen**" } else { "" }
        );
    }
    if !rows.iter().any(|r| r.chosen) {
        s.push_str("\nNo value meets the rule.\n");
    }
    s
}

/// The learning curves of every run as SVG files, `(file name, text)`: train reward, the
/// zero-reward fraction and the rows trained on per step, one line per arm and seed.
pub fn curves(
    results: &[ResultFile],
) -> std::result::Result<Vec<(String, String)>, crate::report::ReportError> {
    /// One chart: its file, title, y label, the y range always shown, and the number.
    struct Spec {
        file: &'static str,
        title: &'static str,
        label: &'static str,
        base: (f64, f64),
        of: fn(&StepLine) -> f64,
    }
    let specs = [
        Spec {
            file: "curve_reward.svg",
            title: "Training reward",
            label: "mean reward",
            base: (0.0, 0.3),
            of: |s| s.mean_reward,
        },
        Spec {
            file: "curve_zrf.svg",
            title: "Zero-reward fraction",
            label: "groups with every attempt failed",
            base: (0.0, 1.0),
            of: |s| s.zrf,
        },
        Spec {
            file: "curve_rows.svg",
            title: "Rows trained on per step",
            label: "rows",
            base: (0.0, 1.0),
            of: |s| s.rows as f64,
        },
    ];
    specs
        .iter()
        .map(|spec| {
            let lines: Vec<crate::report::Curve<'_>> = results
                .iter()
                .map(|r| crate::report::Curve {
                    arm: &r.arm,
                    seed: r.seed,
                    points: r.steps.iter().map(|s| (s.step as f64, (spec.of)(s))).collect(),
                })
                .collect();
            let chart = crate::report::curves_chart(spec.file, spec.title, spec.label, spec.base, &lines);
            Ok((spec.file.to_string(), crate::report::render_svg(&chart)?))
        })
        .collect()
}

fn interval(d: Option<[f64; 3]>) -> String {
    d.map_or_else(|| "–".into(), |[m, lo, hi]| format!("{m:+.3} [{lo:+.3}, {hi:+.3}]"))
}

/// The pooled table as Markdown.
pub fn markdown(p: &Pooled) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{} runs pooled; config hashes: {}.\n", p.runs, p.config_hashes.join(", "));
    if p.config_hashes.len() > 1 {
        s.push_str("**The runs do not share one config**: they are not one experiment.\n\n");
    }
    if p.sets.iter().any(|set| set.contrasts.len() > 1) {
        let _ = writeln!(
            s,
            "Each interval is 95% for its own contrast, not corrected for the number of contrasts. \
             The last column's p-value goes with the problem-clustered interval (bootstrap, the \
             same resamples) and is Holm-adjusted, within its set, over the registered contrasts \
             (`mentor` − {}); a contrast with another arm has none.\n",
            REGISTERED.join(", ")
        );
    }
    for set in &p.sets {
        let _ = writeln!(s, "### {}\n", set.set);
        let k = set.arms.iter().find_map(|a| a.k);
        let kcol = k.map(|k| format!(" pass@{k} (mean) | pass@{k} per seed |")).unwrap_or_default();
        let _ = writeln!(
            s,
            "| arm | final pass@1 (mean) | per seed | step 0 |{kcol}\n|---|---|---|---|{}",
            if k.is_some() { "---|---|" } else { "" }
        );
        for a in &set.arms {
            let seeds: Vec<String> = a.per_seed.iter().map(|(s, v)| format!("s{s} {v:.3}")).collect();
            let step0: Vec<String> = a.step0.iter().map(|(s, v)| format!("s{s} {v:.3}")).collect();
            let _ = write!(s, "| {} | {:.3} | {} | {} |", a.arm, a.mean, seeds.join(", "), step0.join(", "));
            if k.is_some() {
                let each: Vec<String> = a.passk.iter().map(|(s, v)| format!("s{s} {v:.3}")).collect();
                let mean = a.passk.iter().map(|p| p.1).sum::<f64>() / a.passk.len().max(1) as f64;
                let mean = if a.passk.is_empty() { "–".into() } else { format!("{mean:.3}") };
                let _ = write!(s, " {mean} | {} |", each.join(", "));
            }
            s.push('\n');
        }
        if !set.contrasts.is_empty() {
            let kcol = k.map(|k| format!(" pass@{k} by problem |")).unwrap_or_default();
            let templates = set.contrasts.iter().map(|c| c.templates).max().unwrap_or(0);
            let tcol = if templates > 0 {
                format!(" by template (t over {templates}, 95%) |")
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "\n| mentor − | per seed | by seed (t, 95%) | by problem (clustered, 95%) |{tcol}{kcol} p (Holm) |\n|---|---|---|---|{}{}---|",
                if templates > 0 { "---|" } else { "" },
                if k.is_some() { "---|" } else { "" }
            );
            for c in &set.contrasts {
                let seeds: Vec<String> = c.per_seed.iter().map(|(s, v)| format!("s{s} {v:+.3}")).collect();
                let _ = write!(
                    s,
                    "| {} | {} | {} | {} |",
                    c.other,
                    seeds.join(", "),
                    interval(c.by_seed),
                    interval(c.by_problem)
                );
                if templates > 0 {
                    let _ = write!(s, " {} |", interval(c.by_template));
                }
                if k.is_some() {
                    let _ = write!(s, " {} |", interval(c.passk_by_problem));
                }
                let _ = write!(s, " {} |", c.p_holm.map_or_else(|| "–".into(), |p| format!("{p:.3}")));
                s.push('\n');
            }
        }
        s.push('\n');
    }
    if !p.costs.is_empty() {
        s.push_str("### cost per run\n\n| run | steps | step s | peak RSS MiB | rows | extra rollouts | interventions | rescued | hint tokens | own share | where |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
        for c in &p.costs {
            let _ = writeln!(
                s,
                "| {}-s{} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} |",
                c.arm,
                c.seed,
                c.steps,
                c.step_seconds,
                c.peak_rss_mib.map_or_else(|| "–".into(), |m| format!("{m:.0}")),
                c.rows,
                c.extra_rollouts,
                c.intervened,
                c.rescued,
                c.hint_tokens,
                c.own_share.map_or_else(|| "–".into(), |v| format!("{v:.3}")),
                c.machine
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(arm: &str, seed: u64, correct: &[bool]) -> ResultFile {
        let pass1 = correct.iter().filter(|c| **c).count() as f64 / correct.len() as f64;
        ResultFile {
            arm: arm.into(),
            seed,
            config_hash: "h".into(),
            commit: "c".into(),
            cpu: "cpu".into(),
            threads: 2,
            step_seconds: 1.0,
            peak_rss_mib: None,
            steps: Vec::new(),
            evals: vec![
                EvalLine {
                    set: "new_templates".into(),
                    step: 0,
                    pass1: 0.0,
                    passk: None,
                    correct: vec![false; 4],
                    samples: 0,
                    right: Vec::new(),
                },
                EvalLine {
                    set: "new_templates".into(),
                    step: 5,
                    pass1,
                    passk: None,
                    correct: correct.to_vec(),
                    samples: 0,
                    right: Vec::new(),
                },
            ],
            final_same_templates_pass1: None,
            final_new_templates_pass1: Some(pass1),
        }
    }

    /// Two seeds of `mentor` and `vanilla` on four problems. Per seed: s0 mentor 3/4 vs 1/4
    /// (+0.5), s1 2/4 vs 2/4 (0): mean +0.25, sd √((0.25² + 0.25²)/1) = 0.3536, half-width
    /// 12.706 · 0.3536 / √2 = 3.177.
    #[test]
    fn pooling_by_hand() {
        let t = true;
        let f = false;
        let results = [
            result("mentor", 0, &[t, t, t, f]),
            result("vanilla", 0, &[t, f, f, f]),
            result("mentor", 1, &[t, f, t, f]),
            result("vanilla", 1, &[f, t, t, f]),
        ];
        let p = pool(&results, &Templates::new(), 500, 3);
        assert_eq!(p.runs, 4);
        let set = &p.sets[0];
        assert_eq!(set.set, "new_templates");
        let mentor = set.arms.iter().find(|a| a.arm == "mentor").unwrap();
        assert_eq!(mentor.per_seed, vec![(0, 0.75), (1, 0.5)]);
        assert!((mentor.mean - 0.625).abs() < 1e-12);
        assert_eq!(mentor.step0, vec![(0, 0.0), (1, 0.0)]);
        let c = &set.contrasts[0];
        assert_eq!(c.other, "vanilla");
        assert_eq!(c.per_seed, vec![(0, 0.5), (1, 0.0)]);
        let [m, lo, hi] = c.by_seed.unwrap();
        assert!((m - 0.25).abs() < 1e-12 && (hi - m - 3.177).abs() < 1e-3 && (m - lo - 3.177).abs() < 1e-3);
        // By problem: 8 units, mentor − vanilla per unit: 0,1,1,0 and 1,-1,0,0 → mean 0.25.
        assert!((c.by_problem.unwrap()[0] - 0.25).abs() < 1e-12);
        assert!(markdown(&p).contains("| vanilla | s0 +0.500, s1 +0.000 |"));
        assert!(c.by_template.is_none() && c.templates == 0);
        assert!(!markdown(&p).contains("by template"));
        // A family of one: Holm leaves its p-value as it is.
        assert!(c.p_by_problem.is_some() && c.p_holm == c.p_by_problem);
    }

    /// `mentor` against `vanilla` (+3 of 40 problems), `retry` (+10 of 40) and `dapo` (+10):
    /// the registered two are Holm-adjusted as a family (the smaller p doubled, the larger
    /// kept, neither above the other), and `dapo`, outside the family, gets none.
    #[test]
    fn the_registered_contrasts_are_holm_adjusted_and_others_are_not() {
        let mentor: Vec<bool> = (0..40).map(|i| i < 20).collect();
        let shifted = |k: usize| -> Vec<bool> { (0..40).map(|i| i < 20 - k).collect() };
        let results = [
            result("mentor", 0, &mentor),
            result("vanilla", 0, &shifted(3)),
            result("retry", 0, &shifted(10)),
            result("dapo", 0, &shifted(10)),
        ];
        let p = pool(&results, &Templates::new(), 999, 5);
        let c = |arm: &str| p.sets[0].contrasts.iter().find(|c| c.other == arm).unwrap().clone();
        let (v, r, d) = (c("vanilla"), c("retry"), c("dapo"));
        let raw = [v.p_by_problem.unwrap(), r.p_by_problem.unwrap()];
        assert!(raw[1] < 0.01 && raw[0] > raw[1], "{raw:?}");
        assert_eq!(r.p_holm, Some((2.0 * raw[1]).min(1.0)));
        assert_eq!(v.p_holm, Some(raw[0].max(2.0 * raw[1]).min(1.0)));
        assert!(d.p_by_problem.is_some() && d.p_holm.is_none());
        let md = markdown(&p);
        assert!(md.contains("Holm-adjusted") && md.contains("| p (Holm) |"), "{md}");
        assert!(md.lines().any(|l| l.starts_with("| dapo | s0 +0.250 |") && l.ends_with("| – |")), "{md}");
    }

    /// The same runs with problems 0, 1 of template `a` and 2, 3 of `b` on both seeds. Paired
    /// differences (mentor − vanilla): seed 0: 0, 1 | 1, 0; seed 1: 1, −1 | 0, 0. Template `a`:
    /// (0 + 1 + 1 − 1) / 4 = 0.25; `b`: (1 + 0 + 0 + 0) / 4 = 0.25. Mean 0.25, sd 0: the
    /// interval is that point. With problem 3 named `c` instead: `a` 0.25, `b` (1 + 0) / 2 =
    /// 0.5, `c` (0 + 0) / 2 = 0: mean 0.25, sd 0.25, half-width 4.303 · 0.25 / √3 = 0.6211.
    #[test]
    fn templates_are_the_unit_of_the_template_interval() {
        let t = true;
        let f = false;
        let results = [
            result("mentor", 0, &[t, t, t, f]),
            result("vanilla", 0, &[t, f, f, f]),
            result("mentor", 1, &[t, f, t, f]),
            result("vanilla", 1, &[f, t, t, f]),
        ];
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let of = |v: &[&str]| {
            let mut t = Templates::new();
            t.insert("new_templates".into(), [(0, names(v)), (1, names(v))].into_iter().collect());
            t
        };
        let p = pool(&results, &of(&["a", "a", "b", "b"]), 500, 3);
        let c = &p.sets[0].contrasts[0];
        assert_eq!((c.by_template, c.templates), (Some([0.25, 0.25, 0.25]), 2));
        let p = pool(&results, &of(&["a", "a", "b", "c"]), 500, 3);
        let c = &p.sets[0].contrasts[0];
        let [m, lo, hi] = c.by_template.unwrap();
        assert_eq!(c.templates, 3);
        assert!((m - 0.25).abs() < 1e-12 && (hi - m - 0.6211).abs() < 1e-3 && (m - lo - 0.6211).abs() < 1e-3);
        assert!(markdown(&p).contains("by template (t over 3, 95%)"));
        // Names that do not match the set's length are not used.
        let p = pool(&results, &of(&["a", "b"]), 500, 3);
        assert!(p.sets[0].contrasts[0].by_template.is_none());
    }

    /// pass@2 from 4 draws: c = 0 → 0, c = 1 → 1 − C(3,2)/C(4,2) = 1/2, c = 2 → 1 − 1/6 = 5/6.
    /// Seed 0: mentor [1, 2] vs vanilla [0, 1] → differences 1/2 and 1/3; seed 1: all 0 → 0, 0.
    /// Over the 4 (seed, problem) units: (1/2 + 1/3) / 4 = 5/24.
    #[test]
    fn pass_at_k_pools_problem_by_problem() {
        let with_draws = |arm: &str, seed: u64, right: Vec<usize>| {
            let mut r = result(arm, seed, &[true, false, false, false]);
            let last = r.evals.last_mut().unwrap();
            let each: Vec<f64> = right.iter().map(|&c| mentor_trainer::eval::pass_at_k(4, c, 2)).collect();
            last.passk = Some((2, each.iter().sum::<f64>() / 2.0));
            last.samples = 4;
            last.right = right;
            r
        };
        let results = [
            with_draws("mentor", 0, vec![1, 2]),
            with_draws("vanilla", 0, vec![0, 1]),
            with_draws("mentor", 1, vec![0, 0]),
            with_draws("vanilla", 1, vec![0, 0]),
        ];
        let each = results[0].final_eval("new_templates").unwrap().passk_each();
        assert!(each.len() == 2 && (each[0] - 0.5).abs() < 1e-12 && (each[1] - 5.0 / 6.0).abs() < 1e-12);
        let p = pool(&results, &Templates::new(), 500, 3);
        let set = &p.sets[0];
        let mentor = set.arms.iter().find(|a| a.arm == "mentor").unwrap();
        assert_eq!(mentor.k, Some(2));
        assert_eq!(mentor.passk.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 1]);
        assert!((mentor.passk[0].1 - (0.5 + 5.0 / 6.0) / 2.0).abs() < 1e-12 && mentor.passk[1].1 == 0.0);
        let [m, lo, hi] = set.contrasts[0].passk_by_problem.unwrap();
        assert!((m - 5.0 / 24.0).abs() < 1e-12 && lo <= m && m <= hi, "{m} [{lo}, {hi}]");
        let md = markdown(&p);
        assert!(md.contains("pass@2 (mean)") && md.contains("pass@2 by problem"), "{md}");
    }

    #[test]
    fn costs_sum_the_steps_and_curves_draw_one_line_per_run() {
        let step = |i: usize, rescued: [usize; 2]| StepLine {
            step: i,
            mean_reward: 0.1 * i as f64,
            zrf: 0.5,
            intervened: 2,
            rescued: 1,
            rows: 40,
            extra_rollouts: 8,
            hint_tokens: 30,
            rescued_tokens: rescued,
        };
        let mut a = result("mentor", 0, &[true]);
        a.steps = vec![step(0, [100, 60]), step(1, [50, 45]), step(2, [0, 0])];
        let mut b = result("vanilla", 0, &[false]);
        b.steps = vec![step(0, [0, 0]), step(1, [0, 0]), step(2, [0, 0])];
        let p = pool(&[a.clone(), b.clone()], &Templates::new(), 10, 1);
        let c = &p.costs[0];
        assert_eq!((c.steps, c.rows, c.extra_rollouts, c.intervened, c.hint_tokens), (3, 120, 24, 6, 90));
        assert!((c.own_share.unwrap() - 105.0 / 150.0).abs() < 1e-12);
        assert_eq!(p.costs[1].own_share, None);
        assert!(markdown(&p).contains("| mentor-s0 | 3 | 1 |"), "{}", markdown(&p));
        let svgs = curves(&[a, b]).unwrap();
        let names: Vec<&str> = svgs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["curve_reward.svg", "curve_zrf.svg", "curve_rows.svg"]);
        for (_, svg) in &svgs {
            // Data lines have a point per step (legend samples have 2), one per run, each in its
            // arm's colour.
            let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
            let strokes: Vec<&str> = doc
                .descendants()
                .filter(|n| n.has_tag_name("polyline"))
                .filter(|n| n.attribute("points").unwrap_or("").split_whitespace().count() >= 3)
                .map(|n| n.attribute("stroke").unwrap_or(""))
                .collect();
            assert_eq!(strokes.len(), 2, "one line per run");
            assert_ne!(strokes[0], strokes[1], "the arms' colours differ");
            assert!(svg.contains("mentor-s0") && svg.contains("vanilla-s0"));
        }
    }

    /// Three values of one seed on four steps, window 2. 1e-6: rewards 0.1, 0.1, 0.1, 0.1 (does
    /// not rise); 1e-5: 0.1, 0.1, 0.2, 0.3 (rises: 0.25 > 0.1), pass@1 0 → 0.5 (holds); 1e-4:
    /// rises more but pass@1 falls 0.5 → 0.25 (evaluated at step 0 on all-true outcomes). The
    /// rule picks 1e-5, not 1e-4, though 1e-4 is larger.
    #[test]
    fn the_sweep_takes_the_largest_value_that_rises_and_holds() {
        let run = |rewards: [f64; 4], start: &[bool], end: &[bool]| {
            let mut r = result("vanilla", 0, end);
            r.evals[0].correct = start.to_vec();
            r.evals[0].pass1 = start.iter().filter(|c| **c).count() as f64 / start.len() as f64;
            r.steps = rewards
                .iter()
                .enumerate()
                .map(|(i, &m)| StepLine {
                    step: i,
                    mean_reward: m,
                    zrf: 0.0,
                    intervened: 0,
                    rescued: 0,
                    rows: 0,
                    extra_rollouts: 0,
                    hint_tokens: 0,
                    rescued_tokens: [0, 0],
                })
                .collect();
            r
        };
        let (t, f) = (true, false);
        let values = vec![
            ("1e-6".to_string(), vec![run([0.1; 4], &[f, f], &[f, f])]),
            ("1e-5".to_string(), vec![run([0.1, 0.1, 0.2, 0.3], &[f, f], &[t, f])]),
            ("1e-4".to_string(), vec![run([0.1, 0.1, 0.4, 0.6], &[t, f, t, f], &[t, f, f, f])]),
            ("3e-4".to_string(), Vec::new()),
        ];
        let rows = sweep(&values, "new_templates", 2);
        let chosen: Vec<&str> = rows.iter().filter(|r| r.chosen).map(|r| r.value.as_str()).collect();
        assert_eq!(chosen, ["1e-5"]);
        assert!(!rows[0].rises && rows[0].holds);
        assert!(rows[1].rises && rows[1].holds && (rows[1].reward[1] - 0.25).abs() < 1e-12);
        assert!(rows[2].rises && !rows[2].holds && rows[2].pass1 == Some([0.5, 0.25]));
        assert!(!rows[3].rises && !rows[3].holds && rows[3].runs == 0);
        let md = sweep_markdown("grpo.learning_rate", "new_templates", 2, &rows);
        assert!(
            md.contains(
                "| 1e-5 | 1 | 0.100 | 0.00 | 0.100 | 0.250 | yes | 0.000 | 0.500 | yes | **chosen** |"
            ),
            "{md}"
        );
    }

    #[test]
    fn the_config_hash_ignores_arm_seed_and_paths() {
        let a = "[run]\nname = \"a\"\nseed = 0\noutput_dir = \"x\"\n[strategy]\narm = \"mentor\"\n[grpo]\nlr = 1e-5\n";
        let b = "[run]\nname = \"b\"\nseed = 2\noutput_dir = \"y\"\n[strategy]\narm = \"vanilla\"\n[grpo]\nlr = 1e-5\n";
        assert_eq!(config_hash(a), config_hash(b));
        assert_ne!(config_hash(a), config_hash(&a.replace("1e-5", "2e-5")));
        assert_eq!(file_name("random_step", 2), "random_step-s2.json");
        assert!((t975(2) - 4.303).abs() < 1e-9 && t975(100) == 1.960);
    }
}
