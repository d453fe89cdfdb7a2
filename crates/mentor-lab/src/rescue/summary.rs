//! Stage 7: the per-problem lines, the per-arm summary with its paired intervals (overall
//! and per diagnosis category), and the files they are written to.

use std::collections::BTreeMap;
use std::time::Instant;

use mentor_core::FailureCategory;

use super::arms::ArmRow;
use super::context::{Cell, Ctx, Problem};
use super::records::{self, ArmSummary, CategoryArm, CategorySummary, RescueLine, RescueSummary};
use super::rounds::Hinted;
use super::sampling::PairedSampler;
use super::unhinted::Unhinted;
use super::{reliance, report};
use crate::stats;
use mentor_trainer::config::RescueArm;
use mentor_trainer::seed::mix;
use mentor_trainer::{Error, Result};

/// What the measurement learned besides the rows: its memory peaks so far, when it started,
/// where the diagnosis located the failing step, and `prior_step`'s table.
pub(super) struct RunFacts {
    pub memory: records::MemoryPeaks,
    pub t0: Instant,
    pub diagnosed_steps: BTreeMap<usize, Vec<usize>>,
    pub prior_steps: Option<records::PriorSteps>,
}

/// Writes the measurement's files into the run's output directory and returns its summary
/// (`run`: what it learned besides the rows).
pub(super) fn write(
    ctx: &Ctx<'_>,
    problems: &[Problem<'_>],
    base: &Unhinted,
    hinted: &Hinted,
    sampler: &PairedSampler<'_>,
    run: RunFacts,
) -> Result<RescueSummary> {
    let RunFacts { memory, t0, diagnosed_steps, prior_steps } = run;
    let dir = ctx.cfg.output_dir();
    let lines: Vec<RescueLine> = hinted
        .rows
        .iter()
        .enumerate()
        .flat_map(|(k, row)| {
            let cells = &hinted.cells;
            problems.iter().enumerate().map(move |(p, prob)| intervention_line(row, prob, &cells[k][p]))
        })
        .collect();
    mentor_trainer::jsonl::write_lines(&dir.join(records::RESCUE_FILE), &lines)?;
    let seed = mix(&[ctx.cfg.run.seed, 0xb007]);
    let arms = summarize(
        &hinted.rows,
        &hinted.cells,
        &(0..problems.len()).collect::<Vec<_>>(),
        ctx.cfg.rescue.bootstrap,
        seed,
    );
    let by_category = by_category(&hinted.rows, &hinted.cells, problems, ctx.cfg.rescue.bootstrap, seed);
    let summary = RescueSummary {
        collapsed: problems.len(),
        base_pass_rate: base.pass_rate,
        arms,
        by_category,
        problems: base.lines.len(),
        group_size: ctx.g_hint,
        unhinted_samples: ctx.g_base,
        temperature: ctx.cfg.sampling.temperature,
        max_new_tokens: ctx.cfg.sampling.max_new_tokens,
        model: ctx.cfg.model.source.to_string(),
        data: ctx
            .cfg
            .data
            .train_spec()
            .ok()
            .flatten()
            .map_or_else(|| format!("{:?}", ctx.cfg.data.kind), |s| s.to_string()),
        credit: serde_json::to_value(ctx.cfg.strategy.intervention.credit)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        regime: records::Regime {
            temperature: ctx.cfg.sampling.temperature,
            max_new_tokens: ctx.cfg.sampling.max_new_tokens,
            prompt: ctx.cfg.rescue.prompt.name().to_string(),
            stratum: (!ctx.cfg.rescue.stratum.is_empty()).then(|| ctx.cfg.rescue.stratum.clone()),
            unhinted_samples: ctx.g_base,
            hinted_samples: ctx.g_hint,
        },
        random_prefix_distinct: hinted.distinct,
        fallbacks: ctx
            .mentors
            .fallbacks
            .iter()
            .map(|(arm, counter)| records::MentorFallbacks {
                arm: arm.name().to_string(),
                fallbacks: counter.get(),
                asks: hinted.model_asks.get(arm).copied().unwrap_or(0),
            })
            .collect(),
        random_prefix_size: random_prefix_size(&hinted.rows, &hinted.cells),
        rows: sampler.rows,
        tokens: sampler.tokens,
        seconds: t0.elapsed().as_secs_f64(),
        base_seconds: base.seconds,
        memory: Some(memory),
        dir: dir.to_path_buf(),
        diagnosed_steps,
        prior_steps,
    };
    mentor_trainer::jsonl::write_json(&dir.join(records::SUMMARY_FILE), &summary)?;
    mentor_trainer::jsonl::write_atomic(
        &dir.join(records::REPORT_FILE),
        report::markdown(&summary).as_bytes(),
    )?;
    let svg = report::chart_svg(&summary).map_err(|e| Error::Missing(format!("the rescue chart: {e}")))?;
    mentor_trainer::jsonl::write_atomic(&dir.join(records::CHART_FILE), svg.as_bytes())?;
    Ok(summary)
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
        seq_reliance: cell.seq_reliance.clone(),
        template: prob.task.meta.subject.clone(),
        steps: prob.steps(),
        diagnosed_step: prob.rules_l1.diagnosis.as_ref().and_then(|d| d.first_wrong_step),
        twin: cell.twin.clone(),
        derivation_leaks: cell.derivation_leaks,
        no_learner: cell.no_learner,
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
    let find = |arm: RescueArm| rows.iter().position(|r| r.arm == arm && !r.fixed_attempts);
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
