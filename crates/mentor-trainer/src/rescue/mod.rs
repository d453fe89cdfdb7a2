//! `mentor rescue`: how often each mentor turns an all-fail group into a success, measured
//! on a real model and its real failures, without training.
//!
//! The protocol is paired. The learner samples G attempts per training problem at the run's
//! temperature (`sampling::BASE_STREAM`); the problems whose G attempts all fail are the
//! collapsed set. For every collapsed problem each arm ([`RescueArm`]) produces its
//! intervention — nothing (`retry`), a static hint, a refinement prompt, the `rules` mentor's
//! hint at each level and with escalation, the random-cut control of level 3
//! ([`crate::random_prefix`]), an `llm`/`local` mentor — and the learner samples G second attempts,
//! row `g` of problem `p` seeded by `(seed, p, g)` whatever the arm
//! (`sampling::PairedSampler`): arms differ only by what they show, so their rescue rates
//! are compared problem by problem (`stats`). Every accepted hint is checked for leaks on
//! its own (`leaks`). What is written: `records`; the report: `report`.
//!
//! A rescue is not transfer: it says a hint makes the *next, hinted* attempt succeed. Whether
//! training on rescued groups raises unhinted accuracy is what `mentor train` measures.

pub(crate) mod arms;
pub(crate) mod config;
pub(crate) mod leaks;
pub(crate) mod records;
pub(crate) mod report;
pub(crate) mod sampling;
pub(crate) mod stats;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use indicatif::ProgressBar;
use mentor_core::{Attempt, Diagnosis, FailureCategory, GuardRejection, Hint, HintLevel, Task, Verifier};
use mentor_integration::Credit;
use mentor_policy::Sampler;

pub use config::{RescueArm, RescueSection};
pub use records::{ArmSummary, BaseLine, CategoryArm, CategorySummary, InterventionLine, Summary};

use self::arms::{ask, ArmRow, Asked, Mentors};
use self::sampling::{PairedSampler, Request, Scored, BASE_STREAM, HINTED_STREAM};
use crate::config::TrainConfig;
use crate::error::{Error, Result};
use crate::policy::mix;
use crate::train::{load_tasks, Tasks};

/// A collapsed problem.
struct Problem<'a> {
    /// Its number in the run's task order (its rows' seeds).
    index: u64,
    task: &'a Task,
    /// The G failed unhinted attempts.
    attempts: Vec<Attempt>,
    /// The `rules` mentor's level-1 answer: the diagnosis every arm's breakdown uses.
    rules_l1: Asked,
}

impl Problem<'_> {
    fn category(&self) -> Option<FailureCategory> {
        self.rules_l1.diagnosis.as_ref().map(|d| d.category)
    }
}

/// One arm row's result on one problem.
#[derive(Debug, Clone, Default)]
struct Cell {
    hints: Vec<Hint>,
    diagnosis: Option<Diagnosis>,
    rejections: Vec<GuardRejection>,
    redactions: Vec<String>,
    attempts: Vec<Scored>,
    leaks: usize,
    hint_tokens: Vec<usize>,
    mentor_seconds: f64,
    mentor_calls: usize,
    cuts: Option<[usize; 2]>,
}

impl Cell {
    /// Training's rescue: a hinted attempt with a reward above 0.
    fn rescued(&self) -> bool {
        self.attempts.iter().any(|s| s.attempt.verdict.reward() > 0.0)
    }

    fn record(&mut self, asked: &Asked) {
        self.diagnosis = asked.diagnosis.clone().or(self.diagnosis.take());
        self.rejections.extend(asked.rejections.iter().cloned());
        self.redactions.extend(asked.redactions.iter().cloned());
        self.mentor_seconds += asked.seconds;
        self.mentor_calls += 1;
    }
}

/// Progress of a measurement: the phase and the rows generated.
fn progress_bar(visible: bool) -> ProgressBar {
    use indicatif::{ProgressDrawTarget, ProgressStyle};
    let target = if visible { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
    let pb = ProgressBar::with_draw_target(Some(0), target);
    pb.set_style(
        ProgressStyle::with_template("rescue {msg} [{bar:30}] {pos}/{len} rows {elapsed_precise} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb
}

/// A line above the bar (or plainly on stderr when the bar is hidden).
fn note(bar: &ProgressBar, line: &str) {
    if bar.is_hidden() {
        eprintln!("{line}");
    } else {
        bar.println(line);
    }
}

/// Runs the measurement a config describes (`[rescue]` with the run's model, data, sampling,
/// hint format, credit and mentor settings) and writes its files to `run.output_dir`.
/// `code` is the code verifier (for code tasks).
pub fn run(cfg: &TrainConfig, code: Option<&dyn Verifier>) -> Result<Summary> {
    let t0 = Instant::now();
    let r = &cfg.rescue;
    r.validate().map_err(|message| Error::Config { file: "[rescue]".into(), message })?;
    let Tasks::Dataset { train: mut tasks, .. } = load_tasks(cfg)? else {
        return Err(Error::Config {
            file: "[data]".into(),
            message: "`mentor rescue` measures a dataset's training problems; `data.kind = \"curriculum\"` has none"
                .into(),
        });
    };
    if r.problems > 0 {
        tasks.truncate(r.problems);
    }
    if tasks.is_empty() {
        return Err(Error::Config { file: "[data]".into(), message: "no training tasks to sample".into() });
    }
    let dir = cfg.output_dir().to_path_buf();
    std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
    let policy = Arc::new(crate::policy::build(&cfg.model, cfg.run.seed)?);
    let mentors = Mentors::build(cfg, &policy, &r.arms)?;
    let verifier = crate::verify::DomainVerifier::new(code);
    let g = cfg.sampling.group_size;
    let sampler_cfg = Sampler {
        temperature: cfg.sampling.temperature,
        top_p: cfg.sampling.top_p,
        top_k: cfg.sampling.top_k,
    };
    let mut sampler =
        PairedSampler::new(&policy, sampler_cfg, cfg.sampling.max_new_tokens, cfg.run.seed, g, r.batch_rows);
    let bar = progress_bar(cfg.run.progress);

    // 1. The unhinted attempts, a batch of problems at a time, until enough have collapsed.
    let t_base = Instant::now();
    let planned = if r.collapsed > 0 { tasks.len().min(r.collapsed) } else { tasks.len() };
    bar.set_message("unhinted");
    bar.set_length((planned * g) as u64);
    let per_call = (r.batch_rows / g).max(1);
    let mut base_lines = Vec::new();
    let mut collapsed: Vec<(usize, Vec<Attempt>)> = Vec::new();
    let (mut passed, mut total) = (0usize, 0usize);
    let mut start = 0;
    while start < tasks.len() {
        // With a target, sample only as many problems as could still collapse: every arm's
        // work grows with the collapsed set, so overshooting it is expensive.
        let want = if r.collapsed > 0 { r.collapsed.saturating_sub(collapsed.len()) } else { per_call };
        if want == 0 {
            break;
        }
        let end = (start + per_call.min(want)).min(tasks.len());
        let requests: Vec<Request<'_>> = (start..end)
            .map(|i| Request {
                task: &tasks[i],
                key: i as u64,
                prompt: tasks[i].prompt.clone(),
                prefix: None,
            })
            .collect();
        if bar.length().unwrap_or(0) < bar.position() + (requests.len() * g) as u64 {
            bar.set_length(bar.position() + (requests.len() * g) as u64);
        }
        let scored = sampler.sample(&requests, BASE_STREAM, &verifier, &bar)?;
        for (i, ss) in (start..end).zip(scored) {
            let rewards: Vec<f64> = ss.iter().map(|s| s.attempt.verdict.reward()).collect();
            passed += ss.iter().filter(|s| s.attempt.verdict.passed()).count();
            total += ss.len();
            let all_fail = rewards.iter().all(|&x| x == 0.0);
            base_lines.push(BaseLine {
                problem: tasks[i].id.clone(),
                index: i as u64,
                rewards,
                collapsed: all_fail,
                completions: ss.iter().map(|s| s.attempt.completion.text.clone()).collect(),
            });
            if all_fail {
                collapsed.push((i, ss.into_iter().map(|s| s.attempt).collect()));
            }
        }
        start = end;
    }
    let base_seconds = t_base.elapsed().as_secs_f64();
    let base_pass_rate = passed as f64 / total.max(1) as f64;
    crate::jsonl::write_lines(&dir.join(records::BASE_FILE), &base_lines)?;
    note(
        &bar,
        &format!(
            "rescue: {} of {} problems collapsed (unhinted pass rate {:.3}) in {:.0} s",
            collapsed.len(),
            base_lines.len(),
            base_pass_rate,
            base_seconds
        ),
    );
    if collapsed.is_empty() {
        bar.finish_and_clear();
        return Err(Error::Missing(
            "no problem collapsed: every problem had a successful unhinted attempt\nhint: sample more problems (rescue.problems) or a larger group"
                .into(),
        ));
    }

    // 2. Each collapsed problem's `rules` diagnosis (the mentor's level-1 answer).
    let mut problems = Vec::with_capacity(collapsed.len());
    for (i, attempts) in collapsed {
        let rules_l1 = ask(mentors.rules.as_ref(), &tasks[i], &attempts, HintLevel::NUDGE, &[])?;
        problems.push(Problem { index: i as u64, task: &tasks[i], attempts, rules_l1 });
    }

    // 3. Every arm's first intervention, sampled in one batch.
    let rows = arms::rows(&r.arms, &r.levels, r.escalate);
    let mut cells: Vec<Vec<Cell>> = rows.iter().map(|_| vec![Cell::default(); problems.len()]).collect();
    // First-round answers of the diagnosing mentors: (arm, problem, level).
    let mut asked: HashMap<(RescueArm, usize, u8), Asked> = HashMap::new();
    for (p, prob) in problems.iter().enumerate() {
        asked.insert((RescueArm::Mentor, p, 1), prob.rules_l1.clone());
    }
    let mut pending: Vec<(usize, usize, Hint)> = Vec::new();
    let mut retry_rows: Vec<(usize, usize)> = Vec::new();
    let mut distinct = 0;
    for (k, row) in rows.iter().enumerate() {
        for (p, prob) in problems.iter().enumerate() {
            let cell = &mut cells[k][p];
            let answer = match row.arm {
                RescueArm::Retry => {
                    retry_rows.push((k, p));
                    continue;
                }
                RescueArm::StaticHints | RescueArm::Refinement => {
                    let mentor = mentors.of(row.arm).expect("baselines always built");
                    ask(mentor, prob.task, &prob.attempts, HintLevel::NUDGE, &[])?
                }
                RescueArm::RandomPrefix => {
                    let l3 = cached(&mut asked, &mentors, RescueArm::Mentor, p, 3, prob)?;
                    match &l3.hint {
                        Some(h) => {
                            let seed = mix(&[cfg.run.seed, 0x7a9d, prob.index]);
                            let c = crate::random_prefix::control(prob.task, h, seed, &mentors.guard);
                            cell.cuts = Some([c.mentor_cut, c.random_cut]);
                            distinct += usize::from(c.mentor_cut != c.random_cut);
                            Asked {
                                hint: c.hint,
                                diagnosis: None,
                                rejections: c.rejections,
                                redactions: Vec::new(),
                                seconds: 0.0,
                            }
                        }
                        None => Asked {
                            hint: None,
                            diagnosis: None,
                            rejections: Vec::new(),
                            redactions: Vec::new(),
                            seconds: 0.0,
                        },
                    }
                }
                arm => cached(&mut asked, &mentors, arm, p, row.level.unwrap_or(1), prob)?,
            };
            cell.record(&answer);
            if let Some(h) = answer.hint {
                pending.push((k, p, h));
            }
        }
    }
    let mentor_seconds: f64 = cells.iter().flatten().map(|c| c.mentor_seconds).sum();
    let t_hinted = Instant::now();
    let hinted_rows_planned = (pending.len() + retry_rows.len()) * g;
    bar.set_message("hinted");
    bar.set_position(0);
    bar.set_length(hinted_rows_planned as u64);
    sample_round(cfg, &mut sampler, &verifier, &bar, &problems, &mut cells, &retry_rows, pending)?;

    // 4. Escalation: each diagnosing arm's rows with escalation ask one level up while every
    // hinted attempt failed (or no hint passed the guard), as training escalates.
    for level in 2..=3u8 {
        let mut pending = Vec::new();
        for (k, row) in rows.iter().enumerate().filter(|(_, row)| row.escalates()) {
            let mentor = mentors.of(row.arm).expect("a measured arm's mentor is built");
            for (p, prob) in problems.iter().enumerate() {
                let cell = &mut cells[k][p];
                if cell.rescued() {
                    continue;
                }
                let answer = ask(mentor, prob.task, &prob.attempts, hint_level(level), &cell.hints)?;
                cell.record(&answer);
                if let Some(h) = answer.hint {
                    pending.push((k, p, h));
                }
            }
        }
        bar.set_length(bar.length().unwrap_or(0) + (pending.len() * g) as u64);
        sample_round(cfg, &mut sampler, &verifier, &bar, &problems, &mut cells, &[], pending)?;
    }
    bar.finish_and_clear();
    note(
        &bar,
        &format!(
            "rescue: {} hinted rows ({} tokens in all so far) sampled and verified in {:.0} s; first-round mentor calls {:.1} s",
            sampler.rows - total,
            sampler.tokens,
            t_hinted.elapsed().as_secs_f64(),
            mentor_seconds
        ),
    );

    // 5. Leaks and hint lengths of every hint shown.
    let mut items = Vec::new();
    let mut owners = Vec::new();
    for (k, row_cells) in cells.iter().enumerate() {
        for (p, cell) in row_cells.iter().enumerate() {
            for h in &cell.hints {
                items.push((problems[p].task, h));
                owners.push((k, p));
            }
        }
    }
    let leaked = leaks::leaks(&items, &verifier, cfg.mentor.max_code_overlap);
    let mut lengths = Vec::with_capacity(items.len());
    for (_, h) in &items {
        lengths.push(policy.tokenizer().encode(&h.text)?.len());
    }
    for (((k, p), leak), len) in owners.into_iter().zip(leaked).zip(lengths) {
        cells[k][p].leaks += usize::from(leak);
        cells[k][p].hint_tokens.push(len);
    }

    // 6. Files and the summary.
    let lines: Vec<InterventionLine> = rows
        .iter()
        .enumerate()
        .flat_map(|(k, row)| {
            let cells = &cells;
            problems.iter().enumerate().map(move |(p, prob)| intervention_line(row, prob, &cells[k][p]))
        })
        .collect();
    crate::jsonl::write_lines(&dir.join(records::RESCUE_FILE), &lines)?;
    let seed = mix(&[cfg.run.seed, 0xb007]);
    let arms = summarize(&rows, &cells, &(0..problems.len()).collect::<Vec<_>>(), r.bootstrap, seed);
    let by_category = by_category(&rows, &cells, &problems, r.bootstrap, seed);
    let summary = Summary {
        collapsed: problems.len(),
        base_pass_rate,
        arms,
        by_category,
        problems: base_lines.len(),
        group_size: g,
        temperature: cfg.sampling.temperature,
        max_new_tokens: cfg.sampling.max_new_tokens,
        model: cfg.model.source.to_string(),
        data: cfg
            .data
            .train_spec()
            .ok()
            .flatten()
            .map_or_else(|| format!("{:?}", cfg.data.kind), |s| s.to_string()),
        credit: serde_json::to_value(cfg.strategy.intervention.credit)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        random_prefix_distinct: distinct,
        rows: sampler.rows,
        tokens: sampler.tokens,
        seconds: t0.elapsed().as_secs_f64(),
        base_seconds,
        dir: dir.clone(),
    };
    crate::jsonl::write_json(&dir.join(records::SUMMARY_FILE), &summary)?;
    crate::jsonl::write_atomic(&dir.join(records::REPORT_FILE), report::markdown(&summary).as_bytes())?;
    let svg = report::chart_svg(&summary).map_err(|e| Error::Missing(format!("the rescue chart: {e}")))?;
    crate::jsonl::write_atomic(&dir.join(records::CHART_FILE), svg.as_bytes())?;
    Ok(summary)
}

/// Level `l` (validated to be in 1..=3 with the config; level 1 otherwise).
fn hint_level(l: u8) -> HintLevel {
    HintLevel::try_from(l).unwrap_or(HintLevel::NUDGE)
}

/// A diagnosing arm's first-round answer at `level` for problem `p`, asked once.
fn cached(
    asked: &mut HashMap<(RescueArm, usize, u8), Asked>,
    mentors: &Mentors,
    arm: RescueArm,
    p: usize,
    level: u8,
    prob: &Problem<'_>,
) -> Result<Asked> {
    if let Some(a) = asked.get(&(arm, p, level)) {
        return Ok(a.clone());
    }
    let mentor = mentors.of(arm).ok_or_else(|| Error::Missing(format!("no mentor for the `{arm}` arm")))?;
    let a = ask(mentor, prob.task, &prob.attempts, hint_level(level), &[])?;
    asked.insert((arm, p, level), a.clone());
    Ok(a)
}

/// Samples one round: the retry rows (plain prompt) and every pending hint (the hint placed
/// by the config's hint format; a level-3 prefix forced as the answer's start under `prefix`
/// credit, as training does), all in one call; the attempts join their cells.
#[allow(clippy::too_many_arguments)] // the round's context, passed down as is
fn sample_round(
    cfg: &TrainConfig,
    sampler: &mut PairedSampler<'_>,
    verifier: &dyn Verifier,
    bar: &ProgressBar,
    problems: &[Problem<'_>],
    cells: &mut [Vec<Cell>],
    retry_rows: &[(usize, usize)],
    pending: Vec<(usize, usize, Hint)>,
) -> Result<()> {
    let iv = &cfg.strategy.intervention;
    let mut owners = Vec::new();
    let mut requests = Vec::new();
    for &(k, p) in retry_rows {
        let task = problems[p].task;
        requests.push(Request { task, key: problems[p].index, prompt: task.prompt.clone(), prefix: None });
        owners.push((k, p, None));
    }
    for (k, p, hint) in pending {
        let task = problems[p].task;
        let prefix = match iv.credit {
            Credit::Prefix => hint.solution_prefix.clone(),
            _ => None,
        };
        requests.push(Request {
            task,
            key: problems[p].index,
            prompt: iv.hint_format.apply(task, &hint),
            prefix,
        });
        owners.push((k, p, Some(hint)));
    }
    let scored = sampler.sample(&requests, HINTED_STREAM, verifier, bar)?;
    for ((k, p, hint), ss) in owners.into_iter().zip(scored) {
        let cell = &mut cells[k][p];
        cell.hints.extend(hint);
        cell.attempts.extend(ss);
    }
    Ok(())
}

fn intervention_line(row: &ArmRow, prob: &Problem<'_>, cell: &Cell) -> InterventionLine {
    InterventionLine {
        problem: prob.task.id.clone(),
        index: prob.index,
        arm: row.arm.name().to_string(),
        level: row.level,
        category: prob.category(),
        diagnosis: cell.diagnosis.clone(),
        hints: cell.hints.clone(),
        rejections: cell.rejections.clone(),
        redactions: cell.redactions.clone(),
        rewards: cell.attempts.iter().map(|s| s.attempt.verdict.reward()).collect(),
        completions: cell.attempts.iter().map(|s| s.attempt.completion.text.clone()).collect(),
        rescued: cell.rescued(),
        leaks: cell.leaks,
        hint_tokens: cell.hint_tokens.clone(),
        mentor_seconds: cell.mentor_seconds,
        cuts: cell.cuts,
    }
}

/// Per-row numbers over the problems `members` (indices into each row's cells), with paired
/// bootstrap intervals over `bootstrap` resamples of them seeded with `seed`.
fn summarize(
    rows: &[ArmRow],
    cells: &[Vec<Cell>],
    members: &[usize],
    bootstrap: usize,
    seed: u64,
) -> Vec<ArmSummary> {
    let n = members.len();
    let resamples = stats::resamples(n, bootstrap, seed);
    let rescued: Vec<Vec<f64>> = cells
        .iter()
        .map(|row| members.iter().map(|&p| if row[p].rescued() { 1.0 } else { 0.0 }).collect())
        .collect();
    let find = |arm: RescueArm| rows.iter().position(|r| r.arm == arm);
    let (retry, static_hints) = (find(RescueArm::Retry), find(RescueArm::StaticHints));
    rows.iter()
        .enumerate()
        .map(|(k, row)| {
            let cs: Vec<&Cell> = members.iter().map(|&p| &cells[k][p]).collect();
            let count = rescued[k].iter().filter(|&&x| x > 0.0).count();
            let samples: usize = cs.iter().map(|c| c.attempts.len()).sum();
            let passes: usize =
                cs.iter().map(|c| c.attempts.iter().filter(|s| s.attempt.verdict.passed()).count()).sum();
            let tokens: Vec<usize> = cs.iter().flat_map(|c| c.hint_tokens.iter().copied()).collect();
            let calls: usize = cs.iter().map(|c| c.mentor_calls).sum();
            let (lo, hi) = stats::wilson(count, n).unwrap_or((0.0, 1.0));
            let diff = |other: Option<usize>| {
                other.and_then(|o| stats::paired_difference(&rescued[k], &rescued[o], &resamples))
            };
            ArmSummary {
                arm: row.arm.name().to_string(),
                level: row.level,
                rescue_rate: count as f64 / n.max(1) as f64,
                rescue_ci: [lo, hi],
                hinted_pass_rate: (samples > 0).then(|| passes as f64 / samples as f64),
                leaks: cs.iter().map(|c| c.leaks).sum(),
                guard_rejections: cs.iter().map(|c| c.rejections.len()).sum(),
                diff_vs_retry: diff(retry),
                diff_vs_static: diff(static_hints),
                rescued: count,
                hinted: cs.iter().filter(|c| !c.attempts.is_empty()).count(),
                samples,
                mean_hint_tokens: (!tokens.is_empty())
                    .then(|| tokens.iter().sum::<usize>() as f64 / tokens.len() as f64),
                mentor_seconds: (calls > 0)
                    .then(|| cs.iter().map(|c| c.mentor_seconds).sum::<f64>() / calls as f64),
            }
        })
        .collect()
}

/// [`summarize`] within each diagnosis category (most frequent first).
fn by_category(
    rows: &[ArmRow],
    cells: &[Vec<Cell>],
    problems: &[Problem<'_>],
    bootstrap: usize,
    seed: u64,
) -> Vec<CategorySummary> {
    let name = |c: Option<FailureCategory>| {
        c.and_then(|c| serde_json::to_value(c).ok())
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_else(|| "none".into())
    };
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (p, prob) in problems.iter().enumerate() {
        let c = name(prob.category());
        match groups.iter_mut().find(|(n, _)| *n == c) {
            Some((_, members)) => members.push(p),
            None => groups.push((c, vec![p])),
        }
    }
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (category, members))| {
            let arms = summarize(rows, cells, &members, bootstrap, mix(&[seed, i as u64]))
                .into_iter()
                .map(|a| CategoryArm {
                    arm: a.arm,
                    level: a.level,
                    rescue_rate: a.rescue_rate,
                    diff_vs_retry: a.diff_vs_retry,
                    diff_vs_static: a.diff_vs_static,
                })
                .collect();
            CategorySummary { category, n: members.len(), arms }
        })
        .collect()
}
