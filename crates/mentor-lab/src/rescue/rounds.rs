//! Stages 3 and 4: every arm's interventions on the collapsed problems and the hinted
//! attempts they lead to — the first round in one batch, then escalation one level at a time
//! for the rows that escalate, and the retry rows' attempts matched to them.

use std::collections::HashMap;
use std::time::Instant;

use mentor_core::{Hint, HintLevel, HintSource, Task};
use mentor_integration::Credit;

use super::arms::{self, ask, ask_all, ArmRow, Asked, Mentors};
use super::context::{hint_level, note, Cell, Ctx, Problem};
use super::sampling::{PairedSampler, Request, Scored, HINTED_STREAM};
use mentor_trainer::config::RescueArm;
use mentor_trainer::{Error, Result};

/// Every arm row's cells after its hinted attempts, and what the mentors were asked.
pub(super) struct Hinted {
    /// The measured rows (an arm, at a level or escalating).
    pub rows: Vec<ArmRow>,
    /// `cells[row][problem]`.
    pub cells: Vec<Vec<Cell>>,
    /// The model mentors' asks per arm.
    pub model_asks: HashMap<RescueArm, usize>,
    /// Problems `random_prefix` found another cut for.
    pub distinct: usize,
}

/// The first round's answers, keyed `(arm, problem, level)`.
type Answers = HashMap<(RescueArm, usize, u8), Asked>;

/// Asks every arm for its interventions on `problems` and samples `ctx.g_hint` hinted attempts
/// per hint; `unhinted_rows` (the rows sampled before) only enters the progress note.
pub(super) fn sample(
    ctx: &Ctx<'_>,
    sampler: &mut PairedSampler<'_>,
    problems: &[Problem<'_>],
    unhinted_rows: usize,
) -> Result<Hinted> {
    let r = &ctx.cfg.rescue;
    // 3. Every arm's first intervention, sampled in one batch.
    let rows = arms::rows(&r.arms, &r.levels, r.escalate);
    let mut cells: Vec<Vec<Cell>> = rows.iter().map(|_| vec![Cell::default(); problems.len()]).collect();
    let (mut asked, mut model_asks) = first_answers(ctx, problems, &rows)?;
    let first = first_round(ctx, problems, &rows, &mut cells, &mut asked)?;
    let mentor_seconds: f64 = cells.iter().flatten().map(|c| c.mentor_seconds).sum();
    let t_hinted = Instant::now();
    retry_attempts(ctx, sampler, problems, &rows, &mut cells, &first)?;
    sample_round(ctx, sampler, problems, &mut cells, first.pending)?;

    // 4. Escalation: each diagnosing arm's rows with escalation ask one level up while every
    // hinted attempt failed (or no hint passed the guard), as training escalates.
    for level in 2..=3u8 {
        escalate(ctx, sampler, problems, &rows, &mut cells, &mut model_asks, level)?;
    }
    ctx.bar.finish_and_clear();
    note(
        ctx.bar,
        &format!(
            "rescue: {} hinted rows ({} tokens in all so far) sampled and verified in {:.0} s; first-round mentor calls {:.1} s",
            sampler.rows - unhinted_rows,
            sampler.tokens,
            t_hinted.elapsed().as_secs_f64(),
            mentor_seconds
        ),
    );
    Ok(Hinted { rows, cells, model_asks, distinct: first.distinct })
}

/// The diagnosing mentors' first-round answers: the `rules` mentor's level 1 (each problem's
/// diagnosis, already asked) and the model mentors' at each of their rows' levels, asked for
/// all problems at once (batched). Also how many asks each model mentor got.
fn first_answers(
    ctx: &Ctx<'_>,
    problems: &[Problem<'_>],
    rows: &[ArmRow],
) -> Result<(Answers, HashMap<RescueArm, usize>)> {
    let r = &ctx.cfg.rescue;
    let mut asked: Answers = HashMap::new();
    for (p, prob) in problems.iter().enumerate() {
        asked.insert((RescueArm::Mentor, p, 1), prob.rules_l1.clone());
    }
    let mut model_asks: HashMap<RescueArm, usize> = HashMap::new();
    for arm in [RescueArm::Llm, RescueArm::Local] {
        let Some(mentor) = ctx.mentors.of(arm) else { continue };
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
            for (p, a) in
                ask_all(mentor, ctx.mentors.chat_of(arm), &jobs, r.batch_rows)?.into_iter().enumerate()
            {
                asked.insert((arm, p, level), a);
            }
        }
    }
    Ok((asked, model_asks))
}

/// What the first round asks to sample: the hints to show (`(row, problem, hint)`), the retry
/// cells (no hint: attempts drawn apart) and how many problems `random_prefix` found another
/// cut for.
struct FirstRound {
    pending: Vec<(usize, usize, Hint)>,
    retry: Vec<(usize, usize)>,
    distinct: usize,
}

/// Every row's first intervention on every problem, recorded in its cell; a cell whose
/// control has nothing to show is excluded (and counted).
fn first_round(
    ctx: &Ctx<'_>,
    problems: &[Problem<'_>],
    rows: &[ArmRow],
    cells: &mut [Vec<Cell>],
    asked: &mut Answers,
) -> Result<FirstRound> {
    let mut first = FirstRound { pending: Vec::new(), retry: Vec::new(), distinct: 0 };
    for (k, row) in rows.iter().enumerate() {
        for (p, prob) in problems.iter().enumerate() {
            let cell = &mut cells[k][p];
            let answer = match row.arm {
                RescueArm::Retry => {
                    first.retry.push((k, p));
                    continue;
                }
                RescueArm::StaticHints
                | RescueArm::Refinement
                | RescueArm::WrongAnswers
                | RescueArm::WhereOnly => {
                    let mentor = ctx.mentors.of(row.arm).expect("baselines always built");
                    ask(mentor, prob.task, &prob.attempts, HintLevel::NUDGE, &[])?
                }
                RescueArm::ReferenceInContext => reference_in_context(prob.task),
                RescueArm::RandomStep | RescueArm::PriorStep | RescueArm::AllSteps => {
                    match twin_answer(ctx, row, prob, cell)? {
                        Some(a) => a,
                        None => continue,
                    }
                }
                RescueArm::RandomPrefix => match random_prefix_answer(ctx, asked, p, prob, cell)? {
                    Some(a) => {
                        first.distinct += 1;
                        a
                    }
                    None => continue,
                },
                arm => cached(asked, ctx.mentors, arm, p, row.level.unwrap_or(1), prob)?,
            };
            cell.record(&answer);
            if let Some(h) = answer.hint {
                first.pending.push((k, p, h));
            }
        }
    }
    Ok(first)
}

/// A step twin's hint (the mentor's template about another step); `None`, with the cell
/// excluded, when the problem has no step of the mentor's size (or no calibrated step): not a
/// control of this problem, left out of the comparisons and counted.
fn twin_answer(ctx: &Ctx<'_>, row: &ArmRow, prob: &Problem<'_>, cell: &mut Cell) -> Result<Option<Asked>> {
    let twin = ctx
        .mentors
        .twin_of(row.arm)
        .ok_or_else(|| Error::Missing(format!("no twin built for the `{}` arm", row.arm)))?;
    let t0 = Instant::now();
    let level = hint_level(row.level.unwrap_or(1));
    let got = twin.twin(prob.task, &prob.attempts, level).map_err(|e| {
        Error::Integration(mentor_integration::Error::Mentor(mentor_core::MentorError {
            backend: row.arm.name().into(),
            message: e.to_string(),
        }))
    })?;
    let Some(tw) = got else {
        cell.excluded = true;
        return Ok(None);
    };
    cell.twin = Some(super::records::TwinSteps {
        mentor_step: tw.mentor_step,
        twin_steps: tw.twin_steps.clone(),
        sizes: tw.sizes,
    });
    if tw.excluded {
        cell.excluded = true;
        return Ok(None);
    }
    Ok(Some(Asked {
        hint: tw.hint,
        rejections: tw.rejections,
        seconds: t0.elapsed().as_secs_f64(),
        ..Asked::default()
    }))
}

/// The mentor's level-3 hint cut at the other boundary nearest in tokens; `None`, with the
/// cell excluded, when there is no other cut (or no level-3 prefix).
fn random_prefix_answer(
    ctx: &Ctx<'_>,
    asked: &mut Answers,
    p: usize,
    prob: &Problem<'_>,
    cell: &mut Cell,
) -> Result<Option<Asked>> {
    let tokens = |text: &str| ctx.policy.tokenizer().encode(text).map_or(0, |ids| ids.len());
    let l3 = cached(asked, ctx.mentors, RescueArm::Mentor, p, 3, prob)?;
    let control = l3
        .hint
        .as_ref()
        .and_then(|h| mentor_agents::random_prefix::size_matched(prob.task, h, &tokens, &ctx.mentors.guard));
    let Some(c) = control else {
        cell.excluded = true;
        return Ok(None);
    };
    cell.cuts = Some([c.mentor_cut, c.random_cut]);
    Ok(Some(Asked { hint: c.hint, rejections: c.rejections, ..Asked::default() }))
}

/// The retry rows' attempts: as many per problem as escalation may draw (its rounds'
/// attempts), sampled once per problem; the fixed row takes them all, the plain row the first
/// G'. Also sizes the progress bar for the hinted stage.
fn retry_attempts(
    ctx: &Ctx<'_>,
    sampler: &mut PairedSampler<'_>,
    problems: &[Problem<'_>],
    rows: &[ArmRow],
    cells: &mut [Vec<Cell>],
    first: &FirstRound,
) -> Result<()> {
    let esc_rounds = if ctx.cfg.rescue.escalate { 3 } else { 1 };
    let retry_problems: Vec<usize> = {
        let mut ps: Vec<usize> = first.retry.iter().map(|&(_, p)| p).collect();
        ps.sort_unstable();
        ps.dedup();
        ps
    };
    let hinted_rows_planned =
        first.pending.len() * ctx.g_hint + retry_problems.len() * ctx.g_hint * esc_rounds;
    ctx.bar.set_message("hinted");
    ctx.bar.set_position(0);
    ctx.bar.set_length(hinted_rows_planned as u64);
    let retry_requests: Vec<Request<'_>> = retry_problems
        .iter()
        .map(|&p| {
            let task = problems[p].task;
            Request { task, key: problems[p].index, prompt: task.prompt.clone(), prefix: None }
        })
        .collect();
    let pool =
        sampler.sample(&retry_requests, HINTED_STREAM, ctx.g_hint * esc_rounds, ctx.verifier, ctx.bar)?;
    let pool: HashMap<usize, Vec<Scored>> = retry_problems.iter().copied().zip(pool).collect();
    for &(k, p) in &first.retry {
        let n = if rows[k].fixed_attempts { ctx.g_hint * esc_rounds } else { ctx.g_hint };
        cells[k][p].attempts = pool[&p][..n.min(pool[&p].len())].to_vec();
    }
    Ok(())
}

/// One escalation round at `level`: each escalating row asks again on its open (not yet
/// rescued) problems, with the hints it already gave, and the new hints are sampled.
fn escalate(
    ctx: &Ctx<'_>,
    sampler: &mut PairedSampler<'_>,
    problems: &[Problem<'_>],
    rows: &[ArmRow],
    cells: &mut [Vec<Cell>],
    model_asks: &mut HashMap<RescueArm, usize>,
    level: u8,
) -> Result<()> {
    let mut pending = Vec::new();
    for (k, row) in rows.iter().enumerate().filter(|(_, row)| row.escalates()) {
        let mentor = ctx.mentors.of(row.arm).expect("a measured arm's mentor is built");
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
            ask_all(mentor, ctx.mentors.chat_of(row.arm), &jobs, ctx.cfg.rescue.batch_rows)?
        } else {
            let mut answers = Vec::with_capacity(open.len());
            for &p in &open {
                let prob = &problems[p];
                answers.push(ask(mentor, prob.task, &prob.attempts, hint_level(level), &cells[k][p].hints)?);
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
    ctx.bar.set_length(ctx.bar.length().unwrap_or(0) + (pending.len() * ctx.g_hint) as u64);
    sample_round(ctx, sampler, problems, cells, pending)
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

/// A diagnosing arm's first-round answer at `level` for problem `p`, asked once.
fn cached(
    asked: &mut Answers,
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
/// level-3 prefix forced as the answer's start under `prefix` credit, as training does),
/// `ctx.g_hint` attempts each, all in one call; the attempts join their cells.
fn sample_round(
    ctx: &Ctx<'_>,
    sampler: &mut PairedSampler<'_>,
    problems: &[Problem<'_>],
    cells: &mut [Vec<Cell>],
    pending: Vec<(usize, usize, Hint)>,
) -> Result<()> {
    let iv = &ctx.cfg.strategy.intervention;
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
    let scored = sampler.sample(&requests, HINTED_STREAM, ctx.g_hint, ctx.verifier, ctx.bar)?;
    for ((k, p, hint), ss) in owners.into_iter().zip(scored) {
        let cell = &mut cells[k][p];
        cell.hints.push(hint);
        cell.attempts.extend(ss);
    }
    Ok(())
}
