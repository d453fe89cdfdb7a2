//! The pre-registered analysis of a rescue over chunks of distinct problems (`--seeds` with a
//! `seed *` stratum: each chunk draws new problems), written to `analysis.json` and
//! `analysis.md` beside the chunks.
//!
//! The unit is the problem (its id, distinct across chunks); every attempt of a problem stays
//! together. Per arm row: the rescue rate with a problem-clustered bootstrap interval, hint size,
//! the share of hints that leak by derivation and the rescue rate on problems whose hints none
//! leak, the no-learner share, and the sequence-level reliance with a problem-clustered interval.
//! Per contrast: the paired difference with a problem-clustered and a template-clustered
//! interval (a template's problems are not independent), the exact paired test (McNemar) and,
//! over the [`PRIMARY`] contrasts only, Holm-adjusted p-values; per-template differences beside.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::records::RescueLine;
use super::report::label;
use crate::stats;
use mentor_trainer::seed::mix;
use mentor_trainer::Result;

/// The analysis JSON, beside the chunks.
pub const ANALYSIS_JSON: &str = "analysis.json";
/// The analysis report, beside the chunks.
pub const ANALYSIS_MARKDOWN: &str = "analysis.md";

/// A row: its arm name and level (`union_text` is the union of the three text controls).
type Row = (String, Option<u8>);

/// The union of `static_hints`, `wrong_answers` and `where_only`: rescued when any of them
/// rescued the problem (their attempts together, as many as escalation's most).
pub const UNION_TEXT: &str = "union_text";

/// A row named in a contrast: its arm and level.
pub type RowRef = (&'static str, Option<u8>);

/// A contrast planned in advance: what it asks, the rows `a − b`, and the problems it is made
/// on (`all`, `steps=4`, `targeted`: the two rows' first hints differ).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Planned {
    /// What it asks.
    pub name: &'static str,
    /// The row compared.
    pub a: RowRef,
    /// The row compared against.
    pub b: RowRef,
    /// Which problems.
    pub problems: &'static str,
}

const fn planned(name: &'static str, a: RowRef, b: RowRef, problems: &'static str) -> Planned {
    Planned { name, a, b, problems }
}

/// The pre-registered primary contrasts: Holm's correction runs over these. `steps=4`: the only
/// count where `random_prefix` draws among several other cuts.
pub const PRIMARY: [Planned; 5] = [
    planned(
        "operator hint vs random step (L1)",
        ("mentor_no_wrong_op", Some(1)),
        ("random_step", Some(1)),
        "all",
    ),
    planned("L2 vs its random-step twin", ("mentor_no_wrong_op", Some(2)), ("random_step", Some(2)), "all"),
    planned("L3 vs size-matched random prefix", ("mentor", Some(3)), ("random_prefix", Some(3)), "steps=4"),
    planned("best of 3 levels vs retry at 6", ("mentor", None), ("retry_fixed", None), "all"),
    planned("best of 3 levels vs text union", ("mentor", None), (UNION_TEXT, None), "all"),
];

/// Secondary contrasts: reported with their own p-values, never corrected into the primary set.
pub const SECONDARY: [Planned; 8] = [
    planned(
        "operator hint vs prior step (L1)",
        ("mentor_no_wrong_op", Some(1)),
        ("prior_step", Some(1)),
        "all",
    ),
    planned("L2 vs its prior-step twin", ("mentor_no_wrong_op", Some(2)), ("prior_step", Some(2)), "all"),
    planned(
        "operator hint vs all steps (L1)",
        ("mentor_no_wrong_op", Some(1)),
        ("all_steps", Some(1)),
        "all",
    ),
    planned("what \"not X\" adds (L1)", ("mentor", Some(1)), ("mentor_no_wrong_op", Some(1)), "all"),
    planned(
        "operator hint vs random step, targeted (L1)",
        ("mentor_no_wrong_op", Some(1)),
        ("random_step", Some(1)),
        "targeted",
    ),
    planned(
        "L2 vs random step, targeted",
        ("mentor_no_wrong_op", Some(2)),
        ("random_step", Some(2)),
        "targeted",
    ),
    planned("L2 vs where_only", ("mentor_no_wrong_op", Some(2)), ("where_only", None), "all"),
    planned("L2 vs wrong_answers", ("mentor_no_wrong_op", Some(2)), ("wrong_answers", None), "all"),
];

/// One arm row over every chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmRow {
    /// The arm.
    pub arm: String,
    /// The level.
    pub level: Option<u8>,
    /// Problems measured (excluded ones left out).
    pub problems: usize,
    /// Problems rescued.
    pub rescued: usize,
    /// The rescue rate.
    pub rate: f64,
    /// Its problem-clustered bootstrap 95% interval.
    pub ci: [f64; 2],
    /// Problems excluded (no twin, no other cut).
    pub excluded: usize,
    /// Mean hint size (tokens of text plus forced prefix).
    pub hint_tokens: Option<f64>,
    /// Share of hints that leak by derivation.
    pub derivation_leak_share: Option<f64>,
    /// Rescue rate on the problems none of whose hints leak by derivation, and their number.
    pub rescue_unflagged: Option<(f64, usize)>,
    /// Share of hints the no-learner solver answers from the question and the hint alone.
    pub no_learner_share: Option<f64>,
    /// Sequence-level reliance of rescued attempts: `[mean, lo, hi]`, problem-clustered.
    pub seq_reliance: Option<[f64; 3]>,
}

/// One paired contrast.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contrast {
    /// What it asks.
    pub name: String,
    /// The rows compared (`a − b`).
    pub a: String,
    /// The row compared against.
    pub b: String,
    /// Which problems: `all`, `steps=4`, `targeted` (the two hints differ).
    pub problems: String,
    /// Whether it is one of the pre-registered primary contrasts.
    pub primary: bool,
    /// Problems both rows were measured on.
    pub n: usize,
    /// `[d, lo, hi]`: the mean difference and its problem-clustered 95% interval.
    pub by_problem: Option<[f64; 3]>,
    /// The same with templates resampled (`null` without templates).
    pub by_template: Option<[f64; 3]>,
    /// Problems only `a` rescued, and only `b`.
    pub discordant: [usize; 2],
    /// The exact paired test's two-sided p-value.
    pub p: Option<f64>,
    /// Holm-adjusted over the primary contrasts (`null` for secondary ones).
    pub p_holm: Option<f64>,
    /// Per template: `(template, n, d)`.
    pub per_template: Vec<(String, usize, f64)>,
}

/// The analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Distinct collapsed problems over every chunk.
    pub problems: usize,
    /// Templates seen.
    pub templates: Vec<String>,
    /// Collapsed problems by step count.
    pub by_steps: BTreeMap<usize, usize>,
    /// Arm rows.
    pub arms: Vec<ArmRow>,
    /// The contrasts, primary first.
    pub contrasts: Vec<Contrast>,
}

/// Per row, the problem's line (the last one read for an id).
type Table = BTreeMap<Row, BTreeMap<String, RescueLine>>;

fn table(lines: Vec<RescueLine>) -> (Vec<Row>, Table) {
    let mut order = Vec::new();
    let mut t: Table = BTreeMap::new();
    for l in lines {
        let row = (l.arm.clone(), l.level);
        if !order.contains(&row) {
            order.push(row.clone());
        }
        t.entry(row).or_default().insert(l.problem.clone(), l);
    }
    // The union of the text controls, on the problems all three were measured on.
    let parts: Vec<&BTreeMap<String, RescueLine>> = ["static_hints", "wrong_answers", "where_only"]
        .iter()
        .filter_map(|a| t.get(&(a.to_string(), None)))
        .collect();
    if parts.len() == 3 {
        let union: BTreeMap<String, RescueLine> = parts[0]
            .iter()
            .filter_map(|(id, first)| {
                let all: Vec<&RescueLine> = parts.iter().map(|p| p.get(id)).collect::<Option<_>>()?;
                let mut line = first.clone();
                line.arm = UNION_TEXT.into();
                line.rescued = all.iter().any(|l| l.rescued);
                line.hints = all.iter().flat_map(|l| l.hints.clone()).collect();
                line.hint_tokens = all.iter().flat_map(|l| l.hint_tokens.clone()).collect();
                line.derivation_leaks = all.iter().map(|l| l.derivation_leaks).sum();
                line.no_learner = all.iter().map(|l| l.no_learner).sum();
                line.seq_reliance = all.iter().flat_map(|l| l.seq_reliance.clone()).collect();
                line.excluded = all.iter().any(|l| l.excluded);
                Some((id.clone(), line))
            })
            .collect();
        order.push((UNION_TEXT.into(), None));
        t.insert((UNION_TEXT.into(), None), union);
    }
    (order, t)
}

fn template_of(l: &RescueLine) -> String {
    l.template.clone().unwrap_or_else(|| "–".into())
}

fn arm_row(row: &Row, lines: &BTreeMap<String, RescueLine>, bootstrap: usize, seed: u64) -> ArmRow {
    let measured: Vec<&RescueLine> = lines.values().filter(|l| !l.excluded).collect();
    let x: Vec<f64> = measured.iter().map(|l| f64::from(u8::from(l.rescued))).collect();
    let zeros = vec![0.0; x.len()];
    let problem_ids: Vec<&str> = measured.iter().map(|l| l.problem.as_str()).collect();
    let r = stats::clustered_resamples(&problem_ids, bootstrap, seed);
    let rate = stats::paired_difference(&x, &zeros, &r);
    let hints: usize = measured.iter().map(|l| l.hint_tokens.len()).sum();
    let tokens: usize = measured.iter().flat_map(|l| &l.hint_tokens).sum();
    let share = |f: &dyn Fn(&RescueLine) -> usize| {
        (hints > 0).then(|| measured.iter().map(|l| f(l)).sum::<usize>() as f64 / hints as f64)
    };
    let unflagged: Vec<&&RescueLine> =
        measured.iter().filter(|l| !l.hints.is_empty() && l.derivation_leaks == 0).collect();
    // Sequence reliance: every rescued attempt's value, clustered by its problem.
    let (mut values, mut owners) = (Vec::new(), Vec::new());
    for l in &measured {
        for v in &l.seq_reliance {
            values.push(*v);
            owners.push(l.problem.as_str());
        }
    }
    let seq = (!values.is_empty()).then(|| {
        let zeros = vec![0.0; values.len()];
        stats::paired_difference(&values, &zeros, &stats::clustered_resamples(&owners, bootstrap, seed))
    });
    ArmRow {
        arm: row.0.clone(),
        level: row.1,
        problems: measured.len(),
        rescued: measured.iter().filter(|l| l.rescued).count(),
        rate: rate.map_or(0.0, |r| r[0]),
        ci: rate.map_or([0.0, 1.0], |r| [r[1], r[2]]),
        excluded: lines.len() - measured.len(),
        hint_tokens: (hints > 0).then(|| tokens as f64 / hints as f64),
        derivation_leak_share: share(&|l| l.derivation_leaks),
        rescue_unflagged: (!unflagged.is_empty()).then(|| {
            (unflagged.iter().filter(|l| l.rescued).count() as f64 / unflagged.len() as f64, unflagged.len())
        }),
        no_learner_share: share(&|l| l.no_learner),
        seq_reliance: seq.flatten(),
    }
}

fn first_text(l: &RescueLine) -> Option<&str> {
    l.hints.first().map(|h| h.text.as_str())
}

fn contrast(
    t: &Table,
    Planned { name, a, b, problems }: Planned,
    primary: bool,
    bootstrap: usize,
    seed: u64,
) -> Option<Contrast> {
    let la = t.get(&(a.0.to_string(), a.1))?;
    let lb = t.get(&(b.0.to_string(), b.1))?;
    let pairs: Vec<(&RescueLine, &RescueLine)> = la
        .iter()
        .filter_map(|(id, x)| Some((x, lb.get(id)?)))
        .filter(|(x, y)| !x.excluded && !y.excluded)
        .filter(|(x, y)| match problems {
            "steps=4" => x.steps == 4,
            "targeted" => first_text(x) != first_text(y),
            _ => true,
        })
        .collect();
    let ra: Vec<bool> = pairs.iter().map(|(x, _)| x.rescued).collect();
    let rb: Vec<bool> = pairs.iter().map(|(_, y)| y.rescued).collect();
    let fa: Vec<f64> = ra.iter().map(|&r| f64::from(u8::from(r))).collect();
    let fb: Vec<f64> = rb.iter().map(|&r| f64::from(u8::from(r))).collect();
    let problem_ids: Vec<&str> = pairs.iter().map(|(x, _)| x.problem.as_str()).collect();
    let templates: Vec<String> = pairs.iter().map(|(x, _)| template_of(x)).collect();
    let template_refs: Vec<&str> = templates.iter().map(String::as_str).collect();
    let by_problem =
        stats::paired_difference(&fa, &fb, &stats::clustered_resamples(&problem_ids, bootstrap, seed));
    let distinct: BTreeSet<&str> = template_refs.iter().copied().collect();
    let by_template = (distinct.len() > 1)
        .then(|| {
            stats::paired_difference(&fa, &fb, &stats::clustered_resamples(&template_refs, bootstrap, seed))
        })
        .flatten();
    let mut per_template = Vec::new();
    for tpl in &distinct {
        let idx: Vec<usize> = (0..pairs.len()).filter(|&i| template_refs[i] == *tpl).collect();
        let d = idx.iter().map(|&i| fa[i] - fb[i]).sum::<f64>() / idx.len().max(1) as f64;
        per_template.push((tpl.to_string(), idx.len(), d));
    }
    Some(Contrast {
        name: name.into(),
        a: label(a.0, a.1),
        b: label(b.0, b.1),
        problems: problems.into(),
        primary,
        n: pairs.len(),
        by_problem,
        by_template,
        discordant: [
            ra.iter().zip(&rb).filter(|(x, y)| **x && !**y).count(),
            ra.iter().zip(&rb).filter(|(x, y)| !**x && **y).count(),
        ],
        p: stats::mcnemar_exact(&ra, &rb),
        p_holm: None,
        per_template,
    })
}

/// The analysis of `lines` (every chunk's `rescue.jsonl`), `bootstrap` resamples seeded with
/// `seed`.
pub fn analyse(lines: Vec<RescueLine>, bootstrap: usize, seed: u64) -> Analysis {
    let mut problems_seen: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for l in &lines {
        problems_seen.entry(l.problem.clone()).or_insert_with(|| (l.steps, template_of(l)));
    }
    let (order, t) = table(lines);
    let arms = order
        .iter()
        .enumerate()
        .filter_map(|(i, row)| Some(arm_row(row, t.get(row)?, bootstrap, mix(&[seed, i as u64]))))
        .collect();
    let mut contrasts: Vec<Contrast> = PRIMARY
        .iter()
        .enumerate()
        .filter_map(|(i, c)| contrast(&t, *c, true, bootstrap, mix(&[seed, 0x9e, i as u64])))
        .collect();
    let adjusted = stats::holm(&contrasts.iter().map(|c| c.p.unwrap_or(1.0)).collect::<Vec<_>>());
    for (c, p) in contrasts.iter_mut().zip(adjusted) {
        c.p_holm = Some(p);
    }
    contrasts.extend(
        SECONDARY
            .iter()
            .enumerate()
            .filter_map(|(i, c)| contrast(&t, *c, false, bootstrap, mix(&[seed, 0x5ec, i as u64]))),
    );
    let mut by_steps = BTreeMap::new();
    for (steps, _) in problems_seen.values() {
        *by_steps.entry(*steps).or_insert(0) += 1;
    }
    let templates: BTreeSet<String> = problems_seen.values().map(|(_, t)| t.clone()).collect();
    Analysis {
        problems: problems_seen.len(),
        templates: templates.into_iter().collect(),
        by_steps,
        arms,
        contrasts,
    }
}

/// Reads every finished chunk under `dir` and analyses their lines.
pub fn analyse_dir(dir: &Path, bootstrap: usize, seed: u64) -> Result<Analysis> {
    let mut lines = Vec::new();
    for s in super::pooled::finished_seeds(dir) {
        lines.extend(super::pooled::read_lines(&super::pooled::seed_dir(dir, s))?);
    }
    Ok(analyse(lines, bootstrap, seed))
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "–".into(), |v| format!("{v:.3}"))
}

fn interval(d: Option<[f64; 3]>) -> String {
    d.map_or_else(|| "–".into(), |[d, lo, hi]| format!("{d:+.3} [{lo:+.3}, {hi:+.3}]"))
}

fn p_value(p: Option<f64>) -> String {
    p.map_or_else(|| "–".into(), |p| if p < 0.001 { format!("{p:.1e}") } else { format!("{p:.3}") })
}

/// The analysis as Markdown: the arm table, the contrasts, the per-template differences.
pub fn markdown(a: &Analysis) -> String {
    let mut s = String::new();
    let steps: Vec<String> = a.by_steps.iter().map(|(k, n)| format!("{n} of {k} steps")).collect();
    let _ = writeln!(
        s,
        "{} distinct collapsed problems ({}), {} templates.\n",
        a.problems,
        steps.join(", "),
        a.templates.len()
    );
    s.push_str("| arm | rescued | rate [95% CI, by problem] | excluded | hint tokens | derivation leaks | rate, unflagged hints (n) | no-learner | seq. reliance [95% CI] |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for r in &a.arms {
        let _ = writeln!(
            s,
            "| {} | {}/{} | {:.3} [{:.3}, {:.3}] | {} | {} | {} | {} | {} | {} |",
            label(&r.arm, r.level),
            r.rescued,
            r.problems,
            r.rate,
            r.ci[0],
            r.ci[1],
            r.excluded,
            r.hint_tokens.map_or_else(|| "–".into(), |t| format!("{t:.1}")),
            opt(r.derivation_leak_share),
            r.rescue_unflagged.map_or_else(|| "–".into(), |(x, n)| format!("{x:.3} ({n})")),
            opt(r.no_learner_share),
            r.seq_reliance.map_or_else(|| "–".into(), |[m, lo, hi]| format!("{m:+.2} [{lo:+.2}, {hi:+.2}]")),
        );
    }
    s.push_str("\n| contrast | a − b | problems | n | d [95% CI, by problem] | [by template] | only a / only b | exact p | Holm p |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for c in &a.contrasts {
        let _ = writeln!(
            s,
            "| {}{} | {} − {} | {} | {} | {} | {} | {} / {} | {} | {} |",
            if c.primary { "**primary** " } else { "" },
            c.name,
            c.a,
            c.b,
            c.problems,
            c.n,
            interval(c.by_problem),
            interval(c.by_template),
            c.discordant[0],
            c.discordant[1],
            p_value(c.p),
            p_value(c.p_holm),
        );
    }
    s.push_str("\nPer template (d = a − b; n):\n\n| contrast |");
    for t in &a.templates {
        let _ = write!(s, " {t} |");
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(a.templates.len()));
    s.push('\n');
    for c in a.contrasts.iter().filter(|c| c.primary) {
        let _ = write!(s, "| {} |", c.name);
        for t in &a.templates {
            match c.per_template.iter().find(|(name, _, _)| name == t) {
                Some((_, n, d)) => {
                    let _ = write!(s, " {d:+.2} ({n}) |");
                }
                None => s.push_str(" – |"),
            }
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(arm: &str, level: Option<u8>, problem: &str, template: &str, rescued: bool) -> RescueLine {
        RescueLine { template: Some(template.into()), ..RescueLine::bare(problem, arm, level, rescued) }
    }

    /// Four problems of two templates: the mentor rescues p1, p2, p3; the twin p3 and p4.
    /// d per problem: +1, +1, 0, −1 → mean 1/4. Discordant: 2 only-mentor, 1 only-twin, so the
    /// exact p is 2·P[X ≤ 1 | X ~ Bin(3, ½)] = 2·(1 + 3)/8 = 1. Per template: A (p1, p2) +1,
    /// B (p3, p4) −1/2.
    #[test]
    fn a_contrast_by_hand() {
        let mut lines = Vec::new();
        for (p, tpl, m, t) in [
            ("p1", "A", true, false),
            ("p2", "A", true, false),
            ("p3", "B", true, true),
            ("p4", "B", false, true),
        ] {
            lines.push(line("mentor_no_wrong_op", Some(1), p, tpl, m));
            lines.push(line("random_step", Some(1), p, tpl, t));
        }
        let a = analyse(lines, 200, 1);
        let c = &a.contrasts[0];
        assert_eq!((c.n, c.discordant), (4, [2, 1]));
        assert!((c.by_problem.unwrap()[0] - 0.25).abs() < 1e-12);
        assert!((c.p.unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(c.per_template, vec![("A".to_string(), 2, 1.0), ("B".to_string(), 2, -0.5)]);
        // Two templates: the template-level bootstrap can only draw A twice (d = 1), B twice
        // (−½) or one of each (¼): its interval lies within [−½, 1].
        let [_, lo, hi] = c.by_template.unwrap();
        assert!(lo >= -0.5 - 1e-12 && hi <= 1.0 + 1e-12, "{lo} {hi}");
        assert_eq!(c.p_holm, Some(1.0));
        assert_eq!(a.problems, 4);
        let m = a.arms.iter().find(|r| r.arm == "mentor_no_wrong_op").unwrap();
        assert_eq!((m.rescued, m.problems), (3, 4));
        assert!(markdown(&a).contains("operator hint vs random step (L1)"));
    }

    #[test]
    fn the_text_union_is_rescued_when_any_control_is() {
        let mut lines = Vec::new();
        for (arm, r) in [("static_hints", false), ("wrong_answers", true), ("where_only", false)] {
            lines.push(line(arm, None, "p1", "A", r));
            lines.push(line(arm, None, "p2", "A", false));
        }
        lines.push(line("mentor", None, "p1", "A", false));
        lines.push(line("mentor", None, "p2", "A", true));
        let a = analyse(lines, 100, 2);
        let u = a.arms.iter().find(|r| r.arm == UNION_TEXT).unwrap();
        assert_eq!((u.rescued, u.problems), (1, 2));
        let c = a.contrasts.iter().find(|c| c.name == "best of 3 levels vs text union").unwrap();
        assert_eq!((c.n, c.discordant), (2, [1, 1]));
    }
}
