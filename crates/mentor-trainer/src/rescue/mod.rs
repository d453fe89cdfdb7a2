//! `mentor rescue`: how often each mentor turns an all-fail group into a success, measured
//! on a real model and its real failures, without training.
//!
//! The protocol is paired. The learner samples G attempts per training problem at the run's
//! temperature (`sampling::BASE_STREAM`); the problems whose G attempts all fail are the
//! collapsed set. For every collapsed problem each arm ([`RescueArm`]) produces its
//! intervention — nothing (`retry`), a static hint, a refinement prompt, the `rules` mentor's
//! hint at each level and with escalation, the random-cut control of level 3
//! ([`mentor_agents::random_prefix`]), an `llm`/`local` mentor — and the learner samples G second attempts,
//! row `g` of problem `p` seeded by `(seed, p, g)` whatever the arm
//! (`sampling::PairedSampler`): arms differ only by what they show, so their rescue rates
//! are compared problem by problem (`stats`). Every accepted hint is checked for leaks on
//! its own (`leaks`). What is written: `records`; the report: `report`.
//!
//! A rescue is not transfer: it says a hint makes the *next, hinted* attempt succeed. Whether
//! training on rescued groups raises unhinted accuracy is what `mentor train` measures.

pub(crate) mod arms;
pub(crate) mod leaks;
pub(crate) mod pooled;
pub(crate) mod records;
pub(crate) mod reliance;
pub(crate) mod report;
pub(crate) mod sampling;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use indicatif::ProgressBar;
use mentor_core::{
    Attempt, Diagnosis, FailureCategory, GuardRejection, Hint, HintLevel, HintSource, Task, Verifier,
};
use mentor_integration::Credit;
use mentor_policy::Sampler;

pub use crate::config::{RescueArm, RescueSection};
pub use records::{ArmSummary, BaseLine, CategoryArm, CategorySummary, RescueLine, RescueSummary};

use self::arms::{ask, ask_all, ArmRow, Asked, Mentors};
use self::sampling::{PairedSampler, Request, Scored, BASE_STREAM, HINTED_STREAM};
use crate::config::TrainConfig;
use crate::error::{Error, Result};
use crate::seed::mix;
use crate::stats;
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
    /// Left out of the row's comparisons (`random_prefix` without another cut).
    excluded: bool,
    /// Reliance of each rescued (passing) hinted attempt, in attempt order.
    reliance: Vec<f64>,
}

impl Cell {
    /// A rescue: a hinted attempt that passed (binary correctness, as collapse is decided).
    fn rescued(&self) -> bool {
        any_passed(self.attempts.iter().map(|s| &s.attempt.verdict))
    }

    fn record(&mut self, asked: &Asked) {
        self.diagnosis = asked.diagnosis.clone().or(self.diagnosis.take());
        self.rejections.extend(asked.rejections.iter().cloned());
        self.redactions.extend(asked.redactions.iter().cloned());
        self.mentor_seconds += asked.seconds;
        self.mentor_calls += 1;
    }
}

/// Whether any of `verdicts` passed: a group is collapsed when none did
/// ([`mentor_integration::is_collapsed`], the predicate training uses), rescued when one did.
/// Binary correctness (`Verdict::passed`), never a shaped reward: a group of code attempts that
/// each pass some tests is still collapsed.
fn any_passed<'a>(verdicts: impl IntoIterator<Item = &'a mentor_core::Verdict>) -> bool {
    !mentor_integration::is_collapsed(verdicts.into_iter().map(mentor_core::Verdict::passed))
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
pub fn run(cfg: &TrainConfig, code: Option<&dyn Verifier>) -> Result<RescueSummary> {
    let t0 = Instant::now();
    let r = &cfg.rescue;
    r.validate().map_err(|message| Error::Config { file: "[rescue]".into(), message })?;
    let Tasks::Dataset { train: tasks, .. } = load_tasks(cfg)? else {
        return Err(Error::Config {
            file: "[data]".into(),
            message: "`mentor rescue` measures a dataset's training problems; `data.kind = \"curriculum\"` has none"
                .into(),
        });
    };
    let mut tasks = regime_tasks(cfg, tasks)?;
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
    let (g_base, g_hint) = group_sizes(cfg);
    let sampler_cfg = Sampler {
        temperature: cfg.sampling.temperature,
        top_p: cfg.sampling.top_p,
        top_k: cfg.sampling.top_k,
    };
    let mut sampler =
        PairedSampler::new(&policy, sampler_cfg, cfg.sampling.max_new_tokens, cfg.run.seed, r.batch_rows);
    let bar = crate::progress::bar(cfg.run.progress, "rescue");

    // 1. The unhinted attempts, a batch of problems at a time, until enough have collapsed.
    let t_base = Instant::now();
    let planned = if r.collapsed > 0 { tasks.len().min(r.collapsed) } else { tasks.len() };
    bar.set_message("unhinted");
    bar.set_length((planned * g_base) as u64);
    let per_call = (r.batch_rows / g_base).max(1);
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
        if bar.length().unwrap_or(0) < bar.position() + (requests.len() * g_base) as u64 {
            bar.set_length(bar.position() + (requests.len() * g_base) as u64);
        }
        let scored = sampler.sample(&requests, BASE_STREAM, g_base, &verifier, &bar)?;
        for (i, ss) in (start..end).zip(scored) {
            let rewards: Vec<f64> = ss.iter().map(|s| s.attempt.verdict.reward()).collect();
            passed += ss.iter().filter(|s| s.attempt.verdict.passed()).count();
            total += ss.len();
            let all_fail = !any_passed(ss.iter().map(|s| &s.attempt.verdict));
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
    // The model mentors' first-round answers, asked for all problems at once (batched).
    let mut model_asks: HashMap<RescueArm, usize> = HashMap::new();
    for arm in [RescueArm::Llm, RescueArm::Local] {
        let Some(mentor) = mentors.of(arm) else { continue };
        let mut levels: Vec<u8> =
            rows.iter().filter(|row| row.arm == arm).map(|row| row.level.unwrap_or(1)).collect();
        levels.sort_unstable();
        levels.dedup();
        for level in levels {
            let jobs: Vec<arms::Job<'_>> = problems
                .iter()
                .map(|prob| (prob.task, prob.attempts.as_slice(), hint_level(level), &[][..]))
                .collect();
            *model_asks.entry(arm).or_default() += jobs.len();
            for (p, a) in ask_all(mentor, mentors.chat_of(arm), &jobs, r.batch_rows)?.into_iter().enumerate()
            {
                asked.insert((arm, p, level), a);
            }
        }
    }
    let tokens = |text: &str| policy.tokenizer().encode(text).map_or(0, |ids| ids.len());
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
                RescueArm::StaticHints
                | RescueArm::Refinement
                | RescueArm::WrongAnswers
                | RescueArm::WhereOnly => {
                    let mentor = mentors.of(row.arm).expect("baselines always built");
                    ask(mentor, prob.task, &prob.attempts, HintLevel::NUDGE, &[])?
                }
                RescueArm::ReferenceInContext => reference_in_context(prob.task),
                RescueArm::RandomPrefix => {
                    let l3 = cached(&mut asked, &mentors, RescueArm::Mentor, p, 3, prob)?;
                    let control = l3.hint.as_ref().and_then(|h| {
                        mentor_agents::random_prefix::size_matched(prob.task, h, &tokens, &mentors.guard)
                    });
                    match control {
                        Some(c) => {
                            cell.cuts = Some([c.mentor_cut, c.random_cut]);
                            distinct += 1;
                            Asked { hint: c.hint, rejections: c.rejections, ..Asked::default() }
                        }
                        None => {
                            // No other cut (or no level-3 prefix): not a control of this
                            // problem. Left out of the comparisons, and counted.
                            cell.excluded = true;
                            continue;
                        }
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
    // The retry attempts: as many as escalation may draw (its rounds' attempts), so the
    // escalation-matched row takes its first ones; the plain row takes the first G'.
    let esc_rounds = if r.escalate { 3 } else { 1 };
    let retry_problems: Vec<usize> = {
        let mut ps: Vec<usize> = retry_rows.iter().map(|&(_, p)| p).collect();
        ps.sort_unstable();
        ps.dedup();
        ps
    };
    let hinted_rows_planned = pending.len() * g_hint + retry_problems.len() * g_hint * esc_rounds;
    bar.set_message("hinted");
    bar.set_position(0);
    bar.set_length(hinted_rows_planned as u64);
    let retry_requests: Vec<Request<'_>> = retry_problems
        .iter()
        .map(|&p| {
            let task = problems[p].task;
            Request { task, key: problems[p].index, prompt: task.prompt.clone(), prefix: None }
        })
        .collect();
    let pool = sampler.sample(&retry_requests, HINTED_STREAM, g_hint * esc_rounds, &verifier, &bar)?;
    let pool: HashMap<usize, Vec<Scored>> = retry_problems.iter().copied().zip(pool).collect();
    for &(k, p) in &retry_rows {
        if !rows[k].esc_attempts {
            cells[k][p].attempts = pool[&p][..g_hint.min(pool[&p].len())].to_vec();
        }
    }
    sample_round(cfg, &mut sampler, g_hint, &verifier, &bar, &problems, &mut cells, pending)?;

    // 4. Escalation: each diagnosing arm's rows with escalation ask one level up while every
    // hinted attempt failed (or no hint passed the guard), as training escalates.
    for level in 2..=3u8 {
        let mut pending = Vec::new();
        for (k, row) in rows.iter().enumerate().filter(|(_, row)| row.escalates()) {
            let mentor = mentors.of(row.arm).expect("a measured arm's mentor is built");
            let open: Vec<usize> = (0..problems.len()).filter(|&p| !cells[k][p].rescued()).collect();
            let answers = if matches!(row.arm, RescueArm::Llm | RescueArm::Local) {
                // A model mentor: every open problem at once (batched).
                let jobs: Vec<arms::Job<'_>> = open
                    .iter()
                    .map(|&p| {
                        let prob = &problems[p];
                        (prob.task, prob.attempts.as_slice(), hint_level(level), cells[k][p].hints.as_slice())
                    })
                    .collect();
                *model_asks.entry(row.arm).or_default() += jobs.len();
                ask_all(mentor, mentors.chat_of(row.arm), &jobs, r.batch_rows)?
            } else {
                let mut answers = Vec::with_capacity(open.len());
                for &p in &open {
                    let prob = &problems[p];
                    answers.push(ask(
                        mentor,
                        prob.task,
                        &prob.attempts,
                        hint_level(level),
                        &cells[k][p].hints,
                    )?);
                }
                answers
            };
            for (p, answer) in open.into_iter().zip(answers) {
                let cell = &mut cells[k][p];
                cell.record(&answer);
                if let Some(h) = answer.hint {
                    pending.push((k, p, h));
                }
            }
        }
        bar.set_length(bar.length().unwrap_or(0) + (pending.len() * g_hint) as u64);
        sample_round(cfg, &mut sampler, g_hint, &verifier, &bar, &problems, &mut cells, pending)?;
    }
    // The escalation-matched retry: per problem, as many attempts as `mentor esc` drew on it.
    if let Some(esc) = rows.iter().position(|row| row.arm == RescueArm::Mentor && row.escalates()) {
        for &(k, p) in &retry_rows {
            if rows[k].esc_attempts {
                let n = cells[esc][p].attempts.len().min(pool[&p].len());
                cells[k][p].attempts = pool[&p][..n].to_vec();
            }
        }
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

    // 5. Hint reliance of every rescued hinted attempt.
    let mut rescued_attempts = Vec::new();
    let mut rescued_owners = Vec::new();
    for (k, row_cells) in cells.iter().enumerate() {
        for (p, cell) in row_cells.iter().enumerate() {
            for (j, s) in cell.attempts.iter().enumerate() {
                let Some(hint) = cell.hints.get(j / g_hint.max(1)) else { continue };
                if !s.attempt.verdict.passed() {
                    continue;
                }
                let task = problems[p].task;
                let prefix = match cfg.strategy.intervention.credit {
                    Credit::Prefix => hint.solution_prefix.clone(),
                    _ => None,
                };
                rescued_attempts.push(reliance::Rescued {
                    unhinted: task.prompt.clone(),
                    hinted: cfg.strategy.intervention.hint_format.apply(task, hint),
                    prefix,
                    completion: s.ids.clone(),
                });
                rescued_owners.push((k, p));
            }
        }
    }
    let values = reliance::reliance(&policy, &rescued_attempts, r.batch_rows)?;
    for ((k, p), v) in rescued_owners.into_iter().zip(values) {
        cells[k][p].reliance.push(v);
    }

    // 6. Leaks and hint lengths of every hint shown.
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

    // 7. Files and the summary.
    let lines: Vec<RescueLine> = rows
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
    let summary = RescueSummary {
        collapsed: problems.len(),
        base_pass_rate,
        arms,
        by_category,
        problems: base_lines.len(),
        group_size: g_hint,
        unhinted_samples: g_base,
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
        regime: records::Regime {
            temperature: cfg.sampling.temperature,
            max_new_tokens: cfg.sampling.max_new_tokens,
            prompt: r.prompt.name().to_string(),
            stratum: (!r.stratum.is_empty()).then(|| r.stratum.clone()),
            unhinted_samples: g_base,
            hinted_samples: g_hint,
        },
        random_prefix_distinct: distinct,
        fallbacks: mentors
            .fallbacks
            .iter()
            .map(|(arm, counter)| records::MentorFallbacks {
                arm: arm.name().to_string(),
                fallbacks: counter.get(),
                asks: model_asks.get(arm).copied().unwrap_or(0),
            })
            .collect(),
        random_prefix_size: random_prefix_size(&rows, &cells),
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

/// The unhinted and the hinted attempts per problem (`rescue.unhinted_samples`,
/// `rescue.hinted_samples`; `sampling.group_size` where 0).
fn group_sizes(cfg: &TrainConfig) -> (usize, usize) {
    let or_group = |n: usize| if n > 0 { n } else { cfg.sampling.group_size };
    (or_group(cfg.rescue.unhinted_samples), or_group(cfg.rescue.hinted_samples))
}

/// The training problems of the configured regime: those of `rescue.stratum` (a stratum of
/// `mentor probe`, the generated arithmetic problems included), each prompt in
/// `rescue.prompt`'s style.
fn regime_tasks(cfg: &TrainConfig, tasks: Vec<Task>) -> Result<Vec<Task>> {
    use crate::probe::strata;
    let r = &cfg.rescue;
    let strata_of =
        |tasks: &[Task]| strata::of_dataset(tasks, cfg.data.kind.dataset().map_or("data", |d| d.name()));
    let (chosen, examples) = if r.stratum.is_empty() {
        let examples = strata_of(&tasks).first().map(|s| s.examples.clone()).unwrap_or_default();
        (tasks, examples)
    } else if let Some(rest) = r.stratum.strip_prefix("arith ") {
        // `arith <steps>-step seed <seed>`: as many generated problems as the rescue may use.
        let parsed = rest
            .split_once("-step seed ")
            .and_then(|(steps, seed)| Some((steps.parse::<usize>().ok()?, seed.parse::<u64>().ok()?)));
        let Some((steps, seed)) = parsed else {
            return Err(Error::Config {
                file: "[rescue]".into(),
                message: format!(
                    "`rescue.stratum` = \"{}\": expected `arith <steps>-step seed <seed>`",
                    r.stratum
                ),
            });
        };
        let n = if r.problems > 0 { r.problems } else { 10 * r.collapsed.max(1) };
        let s = strata::arith(seed, steps, n, cfg.data.system_prompt.as_deref());
        (s.tasks, s.examples)
    } else {
        let all = strata_of(&tasks);
        let names: Vec<String> = all.iter().map(|s| s.name.clone()).collect();
        let Some(s) = all.into_iter().find(|s| s.name == r.stratum) else {
            return Err(Error::Config {
                file: "[rescue]".into(),
                message: format!(
                    "`rescue.stratum` = \"{}\" is not a stratum of this data (allowed: {}, or `arith <steps>-step seed <seed>`)",
                    r.stratum,
                    names.join(", ")
                ),
            });
        };
        (s.tasks, s.examples)
    };
    Ok(chosen
        .into_iter()
        .map(|mut t| {
            t.prompt = strata::prompt(&t, r.prompt, &examples);
            t
        })
        .collect())
}

/// The `reference_in_context` arm's hint: the whole reference solution (leaking by design).
fn reference_in_context(task: &Task) -> Asked {
    let hint = task.reference_solution().map(|reference| Hint {
        level: HintLevel::PARTIAL_SOLUTION,
        text: format!(
            "Here is a worked solution of this problem:\n{}\nUse it to write your answer.",
            reference.trim()
        ),
        solution_prefix: None,
        source: HintSource::Reference,
    });
    Asked { hint, ..Asked::default() }
}

/// `random_prefix`'s size match on the problems it was paired on: the mean tokens of the
/// mentor's level-3 hint, of the control's hint, and the mean absolute difference.
fn random_prefix_size(rows: &[ArmRow], cells: &[Vec<Cell>]) -> Option<[f64; 3]> {
    let control = rows.iter().position(|r| r.arm == RescueArm::RandomPrefix)?;
    let mentor = rows.iter().position(|r| r.arm == RescueArm::Mentor && r.level == Some(3))?;
    let pairs: Vec<(f64, f64)> = cells[control]
        .iter()
        .zip(&cells[mentor])
        .filter(|(c, _)| !c.excluded)
        .filter_map(|(c, m)| Some((*m.hint_tokens.first()? as f64, *c.hint_tokens.first()? as f64)))
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len() as f64;
    let mean = |f: &dyn Fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / n;
    Some([mean(&|p| p.0), mean(&|p| p.1), mean(&|p| (p.0 - p.1).abs())])
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

/// Samples one round: every pending hint (the hint placed by the config's hint format; a
/// level-3 prefix forced as the answer's start under `prefix` credit, as training does), `n`
/// attempts each, all in one call; the attempts join their cells.
#[allow(clippy::too_many_arguments)] // the round's context, passed down as is
fn sample_round(
    cfg: &TrainConfig,
    sampler: &mut PairedSampler<'_>,
    n: usize,
    verifier: &dyn Verifier,
    bar: &ProgressBar,
    problems: &[Problem<'_>],
    cells: &mut [Vec<Cell>],
    pending: Vec<(usize, usize, Hint)>,
) -> Result<()> {
    let iv = &cfg.strategy.intervention;
    let mut owners = Vec::new();
    let mut requests = Vec::new();
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
        owners.push((k, p, hint));
    }
    let scored = sampler.sample(&requests, HINTED_STREAM, n, verifier, bar)?;
    for ((k, p, hint), ss) in owners.into_iter().zip(scored) {
        let cell = &mut cells[k][p];
        cell.hints.push(hint);
        cell.attempts.extend(ss);
    }
    Ok(())
}

fn intervention_line(row: &ArmRow, prob: &Problem<'_>, cell: &Cell) -> RescueLine {
    RescueLine {
        problem: prob.task.id.clone(),
        index: prob.index,
        arm: row.name().to_string(),
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
        reliance: cell.reliance.clone(),
        excluded: cell.excluded,
    }
}

/// Per-row numbers over the problems `members` (indices into each row's cells) the row was
/// measured on (not excluded), with paired bootstrap intervals over `bootstrap` resamples
/// (seeded with `seed`) of the problems both rows of a difference were measured on.
fn summarize(
    rows: &[ArmRow],
    cells: &[Vec<Cell>],
    members: &[usize],
    bootstrap: usize,
    seed: u64,
) -> Vec<ArmSummary> {
    let rescued = |k: usize, p: usize| if cells[k][p].rescued() { 1.0 } else { 0.0 };
    let find = |arm: RescueArm| rows.iter().position(|r| r.arm == arm && !r.esc_attempts);
    let diff = |k: usize, other: Option<usize>| -> Option<[f64; 3]> {
        let o = other?;
        let both: Vec<usize> =
            members.iter().copied().filter(|&p| !cells[k][p].excluded && !cells[o][p].excluded).collect();
        let a: Vec<f64> = both.iter().map(|&p| rescued(k, p)).collect();
        let b: Vec<f64> = both.iter().map(|&p| rescued(o, p)).collect();
        stats::paired_difference(&a, &b, &stats::resamples(both.len(), bootstrap, seed))
    };
    rows.iter()
        .enumerate()
        .map(|(k, row)| {
            let measured: Vec<usize> = members.iter().copied().filter(|&p| !cells[k][p].excluded).collect();
            let n = measured.len();
            let cs: Vec<&Cell> = measured.iter().map(|&p| &cells[k][p]).collect();
            let count = cs.iter().filter(|c| c.rescued()).count();
            let samples: usize = cs.iter().map(|c| c.attempts.len()).sum();
            let passes: usize =
                cs.iter().map(|c| c.attempts.iter().filter(|s| s.attempt.verdict.passed()).count()).sum();
            let tokens: Vec<usize> = cs.iter().flat_map(|c| c.hint_tokens.iter().copied()).collect();
            let calls: usize = cs.iter().map(|c| c.mentor_calls).sum();
            let (lo, hi) = stats::wilson(count, n).unwrap_or((0.0, 1.0));
            let mean_tokens =
                (!tokens.is_empty()).then(|| tokens.iter().sum::<usize>() as f64 / tokens.len() as f64);
            ArmSummary {
                arm: row.name().to_string(),
                level: row.level,
                rescue_rate: count as f64 / n.max(1) as f64,
                rescue_ci: [lo, hi],
                hinted_pass_rate: (samples > 0).then(|| passes as f64 / samples as f64),
                leaks: cs.iter().map(|c| c.leaks).sum(),
                guard_rejections: cs.iter().map(|c| c.rejections.len()).sum(),
                diff_vs_retry: diff(k, find(RescueArm::Retry)),
                diff_vs_static: diff(k, find(RescueArm::StaticHints)),
                diff_vs_wrong_answers: diff(k, find(RescueArm::WrongAnswers)),
                diff_vs_random_prefix: diff(k, find(RescueArm::RandomPrefix)),
                diff_vs_where_only: diff(k, find(RescueArm::WhereOnly)),
                rescued: count,
                hinted: cs.iter().filter(|c| !c.attempts.is_empty()).count(),
                excluded: members.len() - n,
                samples,
                mean_hint_tokens: mean_tokens,
                hint_tokens: mean_tokens,
                leaking: row.arm.leaks_by_design(),
                reliance: reliance::spread(
                    &cs.iter().flat_map(|c| c.reliance.iter().copied()).collect::<Vec<_>>(),
                ),
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
                    reliance: a.reliance,
                })
                .collect();
            CategorySummary { category, n: members.len(), arms }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use mentor_core::{MathPayload, Payload, Role};

    use super::*;

    fn gsm(i: usize, steps: usize) -> Task {
        let solution: Vec<String> = (0..steps).map(|s| format!("x = <<{s}+1={}>>{}", s + 1, s + 1)).collect();
        let mut t = Task::math(format!("gsm8k/train/{i}"), format!("question {i}"), "1");
        t.payload = Payload::Math(MathPayload { answer: "1".into(), solution: Some(solution.join("\n")) });
        t.prompt.insert(0, mentor_core::Message::system("sys"));
        t
    }

    fn cfg(sets: &[&str]) -> TrainConfig {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        TrainConfig::load("rescue-gsm8k-smollm2", &sets).unwrap()
    }

    #[test]
    fn the_regime_draws_the_stratum_in_the_prompt_style() {
        let tasks: Vec<Task> = (0..12).map(|i| gsm(i, 1 + i % 6)).collect();
        // The preset: GSM8K's easiest stratum, few-shot.
        let got = regime_tasks(&cfg(&[]), tasks.clone()).unwrap();
        assert!(got.iter().all(|t| crate::probe::strata::gsm8k_steps(t) <= 2), "{got:?}");
        let roles: Vec<Role> = got[0].prompt.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::Assistant, Role::User, Role::Assistant, Role::User]
        );
        // The generated stratum, as many problems as asked.
        let got = regime_tasks(
            &cfg(&["rescue.stratum=\"arith 3-step seed 4\"", "rescue.problems=7"]),
            tasks.clone(),
        )
        .unwrap();
        assert_eq!(got.len(), 7);
        assert!(got[0].id.starts_with("arith/4/3/"), "{}", got[0].id);
        // Every problem, as the run builds its prompt.
        let got =
            regime_tasks(&cfg(&["rescue.stratum=\"\"", "rescue.prompt=\"system\""]), tasks.clone()).unwrap();
        assert_eq!(got, tasks);
        // A stratum the data does not have is named with the ones it has.
        let e = regime_tasks(&cfg(&["rescue.stratum=\"gsm8k steps<=9\""]), tasks.clone())
            .unwrap_err()
            .to_string();
        assert!(e.contains("rescue.stratum") && e.contains("gsm8k steps 3-4"), "{e}");
        let e = regime_tasks(&cfg(&["rescue.stratum=\"arith two steps\""]), tasks).unwrap_err().to_string();
        assert!(e.contains("arith <steps>-step seed <seed>"), "{e}");
    }

    #[test]
    fn the_presets_hold_the_probed_regimes() {
        let g = TrainConfig::load("rescue-gsm8k-smollm2", &[]).unwrap();
        assert_eq!((g.rescue.stratum.as_str(), g.sampling.temperature), ("gsm8k steps<=2", 0.6));
        let a = TrainConfig::load("rescue-arith-smollm2", &[]).unwrap();
        assert_eq!((a.rescue.stratum.as_str(), a.sampling.temperature), ("arith 2-step seed 0", 0.3));
        let m = TrainConfig::load("rescue-mbpp-smollm2", &[]).unwrap();
        assert_eq!((m.rescue.stratum.as_str(), m.sampling.temperature), ("mbpp lines<=3", 0.3));
        assert_eq!(m.rescue.collapsed, 40);
        for c in [&g, &a, &m] {
            assert_eq!(group_sizes(c), (4, 2));
            assert_eq!(c.rescue.prompt, crate::probe::strata::PromptStyle::FewShot);
            assert_eq!(c.sampling.max_new_tokens, 128);
        }
    }
}
