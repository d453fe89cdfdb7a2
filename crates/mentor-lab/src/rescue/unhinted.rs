//! Stage 1: the unhinted attempts, a batch of problems at a time, until enough have
//! collapsed (every attempt failed).

use std::time::Instant;

use mentor_core::{Attempt, Task};

use super::context::{any_passed, Ctx};
use super::records::BaseLine;
use super::sampling::{PairedSampler, Request, BASE_STREAM};
use mentor_trainer::Result;

/// What the unhinted attempts found.
pub(super) struct Unhinted {
    /// One line per problem sampled.
    pub lines: Vec<BaseLine>,
    /// The collapsed problems: their index in the task order and their failed attempts.
    pub collapsed: Vec<(usize, Vec<Attempt>)>,
    /// Attempts that passed over attempts sampled.
    pub pass_rate: f64,
    /// Attempts sampled.
    pub rows: usize,
    /// Wall time.
    pub seconds: f64,
}

/// Samples `ctx.g_base` attempts per problem of `tasks`, in order, stopping once
/// `rescue.collapsed` problems collapsed and were admitted by `admit` (when set).
pub(super) fn sample(
    ctx: &Ctx<'_>,
    sampler: &mut PairedSampler<'_>,
    tasks: &[Task],
    admit: &mut dyn FnMut(&Task, &[Attempt]) -> Result<bool>,
) -> Result<Unhinted> {
    let r = &ctx.cfg.rescue;
    let t_base = Instant::now();
    let planned = if r.collapsed > 0 { tasks.len().min(r.collapsed) } else { tasks.len() };
    ctx.bar.set_message("unhinted");
    ctx.bar.set_length((planned * ctx.g_base) as u64);
    let per_call = (r.batch_rows / ctx.g_base).max(1);
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
        if ctx.bar.length().unwrap_or(0) < ctx.bar.position() + (requests.len() * ctx.g_base) as u64 {
            ctx.bar.set_length(ctx.bar.position() + (requests.len() * ctx.g_base) as u64);
        }
        let scored = sampler.sample(&requests, BASE_STREAM, ctx.g_base, ctx.verifier, ctx.bar)?;
        for (i, ss) in (start..end).zip(scored) {
            let rewards: Vec<f64> = ss.iter().map(|s| s.attempt.verdict.reward()).collect();
            passed += ss.iter().filter(|s| s.attempt.verdict.passed()).count();
            total += ss.len();
            let all_fail = !any_passed(ss.iter().map(|s| &s.attempt.verdict));
            let completions = ss.iter().map(|s| s.attempt.completion.text.clone()).collect();
            let attempts: Vec<Attempt> = ss.into_iter().map(|s| s.attempt).collect();
            let admitted = all_fail && admit(&tasks[i], &attempts)?;
            base_lines.push(BaseLine {
                problem: tasks[i].id.clone(),
                index: i as u64,
                rewards,
                collapsed: all_fail,
                skipped: all_fail && !admitted,
                completions,
            });
            if admitted {
                collapsed.push((i, attempts));
            }
        }
        start = end;
    }
    Ok(Unhinted {
        lines: base_lines,
        collapsed,
        pass_rate: passed as f64 / total.max(1) as f64,
        rows: total,
        seconds: t_base.elapsed().as_secs_f64(),
    })
}
