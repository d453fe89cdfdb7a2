//! Rendering of `report.md`: per-run table, per-arm table, training dynamics, the hint
//! tables, plot notes and SVG links.

use std::fmt::Write;

use super::aggregate::{Agg, ArmRow, RunStats, DYNAMICS, REWARD, ZRF};
use super::cells::{num, small_num, MISSING};
use super::hints::{ArmHints, HintExample, EXAMPLES_PER_CELL, NO_DIAGNOSIS};
use super::paired::{markdown_section, PairedSummary};
use super::plot::{known_arm_color, SMOOTH_WINDOW};
use mentor_trainer::config::Arm;

/// A plot to link from the report.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotLink {
    /// File name relative to the report, e.g. `reward.svg`.
    pub file_name: String,
    /// Alt text / caption.
    pub caption: String,
}

/// Renders the whole report (the paired section only when some run has a final accuracy).
pub fn render(
    title: &str,
    runs: &[RunStats],
    arms: &[ArmRow],
    paired: &PairedSummary,
    hints: &[ArmHints],
    plots: &[PlotLink],
) -> String {
    let mut md = format!("# {}\n\n", title.trim());
    md.push_str(&intro(runs.len()));
    md.push_str(&run_table(runs));
    md.push_str(&arm_section(arms));
    md.push_str(&markdown_section(paired));
    md.push_str(&dynamics_table(runs));
    md.push_str(&hint_section(hints));
    md.push_str(&plot_notes(plots));
    md.push_str(&plot_links(plots));
    md
}

fn intro(n: usize) -> String {
    format!(
        "{n} run(s). Mean reward and mean ZRF (zero-reward fraction: share of groups in which every \
         sample failed) are averaged over the steps from `jump_step` on (all steps for runs without a \
         curriculum jump). Rescue rate = rescued / intervened groups. Final pass@1 / pass@k are the last \
         unhinted evaluation at the hard level (highest evaluated level if the run has none); pass@1 is \
         greedy. Missing values are shown as {MISSING}.\n\n"
    )
}

/// Formats an aggregate as `mean (min–max)`, or [`MISSING`].
pub fn agg(a: Option<Agg>, decimals: usize) -> String {
    match a {
        Some(a) => format!("{:.d$} ({:.d$}–{:.d$})", a.mean, a.min, a.max, d = decimals),
        None => MISSING.to_string(),
    }
}

/// Escapes characters that would break a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Free text (a hint, a quote, a model's answer) for a table cell: whitespace runs become
/// one space, the text is cut to `max_chars` characters (with `…`), and every character
/// Markdown, HTML or GitHub's math would read is backslash-escaped, so it shows as written.
pub fn text_cell(text: &str, max_chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = if flat.chars().count() > max_chars {
        let kept: String = flat.chars().take(max_chars.saturating_sub(1)).collect();
        format!("{}…", kept.trim_end())
    } else {
        flat
    };
    let mut out = String::with_capacity(cut.len());
    for c in cut.chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '$' | '&' | '#' | '!') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A short identifier (task id, category) as inline code, safe in a table cell.
fn code(text: &str, max_chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ").replace('`', "'");
    let cut: String = if flat.chars().count() > max_chars {
        flat.chars().take(max_chars.saturating_sub(1)).collect::<String>() + "…"
    } else {
        flat
    };
    format!("`{}`", cut.replace('|', "\\|"))
}

fn run_table(runs: &[RunStats]) -> String {
    let mut s = String::from("## Runs\n\n");
    s.push_str(
        "| run | arm | seed | steps | mean reward | mean ZRF | interventions | rescues | rescue rate \
         | eval step | eval level | final pass@1 | k | final pass@k |\n",
    );
    s.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in runs {
        let fe = r.final_eval.as_ref();
        let opt = |v: Option<String>| v.unwrap_or_else(|| MISSING.to_string());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&r.name),
            cell(&r.arm),
            r.seed,
            r.steps,
            num(r.mean_reward),
            num(r.mean_zrf),
            r.interventions,
            r.rescues,
            num(r.rescue_rate),
            opt(fe.map(|e| e.step.to_string())),
            opt(fe.map(|e| e.level.to_string())),
            num(fe.and_then(|e| e.pass1)),
            opt(fe.and_then(|e| e.k).map(|k| k.to_string())),
            num(fe.and_then(|e| e.passk)),
        );
    }
    s.push('\n');
    s
}

fn arm_section(arms: &[ArmRow]) -> String {
    let mut s = String::from("## Per arm (mean (min–max) over seeds)\n\n");
    s.push_str("| arm | seeds | mean reward | mean ZRF | interventions | rescue rate | final pass@1 | final pass@k |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for a in arms {
        let seeds: Vec<String> = a.seeds.iter().map(|s| s.to_string()).collect();
        let _ = writeln!(
            s,
            "| {} | {} ({}) | {} | {} | {} | {} | {} | {} |",
            cell(&a.arm),
            a.seeds.len(),
            seeds.join(", "),
            agg(a.mean_reward, 3),
            agg(a.mean_zrf, 3),
            agg(a.interventions, 1),
            agg(a.rescue_rate, 3),
            agg(a.pass1, 3),
            agg(a.passk, 3),
        );
    }
    s.push('\n');
    s
}

fn dynamics_table(runs: &[RunStats]) -> String {
    let mut s = String::from("## Training dynamics (post-jump means)\n\n");
    s.push_str("| run | trained steps |");
    for m in &DYNAMICS {
        let _ = write!(s, " {} |", m.label);
    }
    s.push_str(" non-finite updates | s/step |\n|---|---:|");
    s.push_str(&"---:|".repeat(DYNAMICS.len() + 2));
    s.push('\n');
    for r in runs {
        let _ = write!(s, "| {} | {} / {} |", cell(&r.name), r.trained_steps, r.steps);
        for v in &r.dynamics {
            let _ = write!(s, " {} |", small_num(*v));
        }
        let _ = writeln!(s, " {} | {} |", r.non_finite_updates, num(r.seconds_per_step));
    }
    s.push_str("\nColumns: ");
    let about: Vec<String> = DYNAMICS.iter().map(|m| format!("{}: {}", m.label, m.about)).collect();
    s.push_str(&about.join("; "));
    s.push_str(
        ". Trained steps: steps with rows for a GRPO update. Update numbers (KL, entropy, grad norm, \
         clip ratio, completion length) average over the steps that trained; non-finite updates: \
         trained steps whose update logged a non-finite number (a diverged loss, or a gradient norm \
         that made the optimizer skip), left out of those averages.\n\n",
    );
    s
}

/// Longest hint text shown in an example, in characters.
const HINT_CHARS: usize = 160;
/// Longest evidence shown, in characters.
const EVIDENCE_CHARS: usize = 100;
/// Longest failed answer shown, in characters.
const ANSWER_CHARS: usize = 24;
/// Failed attempts shown per example.
const ANSWERS_SHOWN: usize = 4;

fn hint_section(arms: &[ArmHints]) -> String {
    if arms.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "## Hints\n\n\
         From each run's `interventions.jsonl`. Every hint tried counts once, at its level: an \
         intervention that escalated from level 1 to 2 counts at both, and is rescued (a hinted \
         attempt succeeded) at the level of its last hint. The diagnosis is the intervention's \
         (the last mentor call's); `{NO_DIAGNOSIS}` for arms that do not diagnose. Level {MISSING}: \
         the guard rejected every candidate hint. Examples: up to {EXAMPLES_PER_CELL} per level \
         and diagnosis (a rescued and an unrescued one where there are both), texts shortened.\n\n"
    );
    for a in arms {
        let _ = writeln!(
            s,
            "### {}\n\n{} interventions, {} rescued (rescue rate {}), {} hints rejected by the guard.\n",
            cell(&a.arm),
            a.interventions,
            a.rescued,
            num(a.rescue_rate()),
            a.guard_rejections
        );
        s.push_str("| hint level | diagnosis | interventions | rescued | rescue rate |\n");
        s.push_str("|---:|---|---:|---:|---:|\n");
        for c in &a.cells {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                c.level.map_or(MISSING.to_string(), |l| l.to_string()),
                code(&c.category, 40),
                c.interventions,
                c.rescued,
                num(c.rescue_rate())
            );
        }
        if !a.examples.is_empty() {
            s.push_str(
                "\n| level | diagnosis | run | step | task | failed attempts | evidence | hint | rescued |\n",
            );
            s.push_str("|---:|---|---|---:|---|---|---|---|---|\n");
            for e in &a.examples {
                s.push_str(&example_row(e));
            }
        }
        s.push('\n');
    }
    s
}

fn example_row(e: &HintExample) -> String {
    let mut failed: Vec<String> =
        e.failed.iter().take(ANSWERS_SHOWN).map(|f| text_cell(f, ANSWER_CHARS)).collect();
    if e.failed.len() > ANSWERS_SHOWN {
        failed.push(format!("+{} more", e.failed.len() - ANSWERS_SHOWN));
    }
    let rescued = match (e.rescued, e.hinted_successes) {
        (true, Some((ok, n))) => format!("yes ({ok}/{n})"),
        (false, Some((ok, n))) => format!("no ({ok}/{n})"),
        (true, None) => "yes".to_string(),
        (false, None) => "no (escalated)".to_string(),
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        e.level,
        code(&e.category, 40),
        cell(&e.run),
        e.step,
        code(&e.task_id, 40),
        if failed.is_empty() { MISSING.to_string() } else { failed.join("; ") },
        e.evidence.as_deref().map_or(MISSING.to_string(), |t| text_cell(t, EVIDENCE_CHARS)),
        hint_cell(e),
        rescued
    )
}

/// The hint's text, and a partial solution's worked steps after it.
fn hint_cell(e: &HintExample) -> String {
    match e.solution_prefix.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
        Some(prefix) => format!(
            "{} (solution prefix: {})",
            text_cell(&e.hint, HINT_CHARS / 2),
            text_cell(prefix, HINT_CHARS / 2)
        ),
        None => text_cell(&e.hint, HINT_CHARS),
    }
}

fn plot_notes(plots: &[PlotLink]) -> String {
    let colours: Vec<String> =
        Arm::ALL.iter().map(|a| format!("{} {}", a.name(), known_arm_color(*a).1)).collect();
    let mut s = format!(
        "## What the plots show\n\n\
         - Colour encodes the arm ({}; other arms get colours of their own); solid lines are even \
         seeds, dashed lines odd seeds. The vertical dashed grey line marks `jump_step`, where the \
         curriculum jumps to the hard level. Per-step numbers are drawn as a trailing moving \
         average over {SMOOTH_WINDOW} steps.\n\
         - `{}.svg`: {}.\n\
         - `{}.svg`: {}.\n\
         - `interventions.svg`: mentor interventions (thick line in the run's solid/dashed style) and \
         rescued groups (thin line: dotted for even seeds, dash-dot for odd seeds) per step, unsmoothed.\n",
        colours.join(", "),
        REWARD.key,
        REWARD.about,
        ZRF.key,
        ZRF.about,
    );
    for m in DYNAMICS.iter().filter(|m| plots.iter().any(|p| p.file_name == format!("{}.svg", m.key))) {
        let _ = writeln!(s, "- `{}.svg`: {}.", m.key, m.about);
    }
    s.push_str("- `eval_level_<L>.svg`: unhinted greedy pass@1 on level L (or `data.eval`) at each evaluation step; `eval_<set>.svg`: the same on a named set (`[[eval.sets]]`).\n\n");
    s
}

fn plot_links(plots: &[PlotLink]) -> String {
    let mut s = String::from("## Plots\n\n");
    for p in plots {
        let _ = writeln!(s, "![{}]({})\n", p.caption.replace(['[', ']'], ""), p.file_name);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::aggregate::FinalEval;
    use crate::report::fixtures::{intervention, mentor, run, step};
    use crate::report::hints::hint_tables;
    use crate::report::paired::{paired_summary, Bootstrap};
    use mentor_core::FailureCategory;

    fn stats(name: &str, arm: &str, seed: u64, reward: Option<f64>, pass1: Option<f64>) -> RunStats {
        RunStats {
            name: name.into(),
            arm: arm.into(),
            seed,
            steps: 40,
            trained_steps: 39,
            mean_reward: reward,
            mean_zrf: Some(0.125),
            dynamics: DYNAMICS.iter().map(|_| Some(0.5)).collect(),
            interventions: 12,
            rescues: 3,
            rescue_rate: Some(0.25),
            non_finite_updates: 0,
            seconds_per_step: Some(2.0),
            final_eval: pass1.map(|p| FinalEval {
                step: 39,
                level: 4,
                pass1: Some(p),
                k: Some(4),
                passk: None,
                correct: None,
            }),
            pretrain_seed: None,
            hints: 0,
            hint_tokens: 0,
            rescued_tokens: 0,
            rescued_own_tokens: 0,
        }
    }

    fn empty_paired() -> PairedSummary {
        paired_summary(&[], Bootstrap::default())
    }

    #[test]
    fn number_formatting() {
        assert_eq!(num(Some(0.12345)), "0.123");
        assert_eq!(num(None), MISSING);
        assert_eq!(num(Some(f64::NAN)), MISSING);
        assert_eq!(small_num(Some(0.000_314)), "3.14e-4");
        assert_eq!(small_num(Some(0.0005)), "0.001");
        assert_eq!(
            (small_num(Some(0.0)), small_num(Some(12.5)), small_num(None)),
            ("0.000".into(), "12.500".into(), MISSING.into())
        );
        let a = Agg { mean: 0.5, min: 0.25, max: 0.75, n: 2 };
        assert_eq!(agg(Some(a), 3), "0.500 (0.250–0.750)");
        assert_eq!(agg(None, 3), MISSING);
    }

    #[test]
    fn report_contains_tables_and_links() {
        let runs = vec![
            stats("mentor-s0", "mentor", 0, Some(0.3), Some(0.2)),
            stats("we|ird", "mentor", 1, None, None),
        ];
        let arms = vec![ArmRow {
            arm: "mentor".into(),
            seeds: vec![0, 1],
            mean_reward: Some(Agg { mean: 0.3, min: 0.3, max: 0.3, n: 1 }),
            mean_zrf: None,
            interventions: Some(Agg { mean: 12.0, min: 12.0, max: 12.0, n: 2 }),
            rescue_rate: Some(Agg { mean: 0.25, min: 0.25, max: 0.25, n: 2 }),
            pass1: None,
            passk: None,
        }];
        let links = vec![PlotLink { file_name: "reward.svg".into(), caption: "Reward [smoothed]".into() }];
        let paired = paired_summary(&runs, Bootstrap::default());
        let md = render("  My report ", &runs, &arms, &paired, &[], &links);
        assert!(md.starts_with("# My report\n"));
        assert!(md.contains(
            "| mentor-s0 | mentor | 0 | 40 | 0.300 | 0.125 | 12 | 3 | 0.250 | 39 | 4 | 0.200 | 4 | – |"
        ));
        assert!(md.contains("| we\\|ird | mentor | 1 | 40 | – | 0.125 |"));
        assert!(md.contains(
            "| mentor | 2 (0, 1) | 0.300 (0.300–0.300) | – | 12.0 (12.0–12.0) | 0.250 (0.250–0.250) | – | – |"
        ));
        assert!(md
            .contains("| mentor-s0 | 39 / 40 | 0.500 | 0.500 | 0.500 | 0.500 | 0.500 | 0.500 | 0 | 2.000 |"));
        assert!(md.contains("## What the plots show"));
        assert!(md.contains("![Reward smoothed](reward.svg)"));
        assert!(!md.contains("## Hints"));
        // The paired section: seed 0's accuracy, seed 1 without an evaluation, no interval
        // (the runs recorded no per-problem outcomes).
        assert!(md.contains("## Paired comparison"), "{md}");
        assert!(
            md.contains("| seed | mentor |\n|---:|---:|\n| 0 | 0.200 |\n| mean [95% CI] | 0.200 [–] |"),
            "{md}"
        );
    }

    #[test]
    fn plot_notes_name_every_arms_colour() {
        let md = render("t", &[], &[], &empty_paired(), &[], &[]);
        for arm in Arm::ALL {
            let (_, colour) = known_arm_color(arm);
            assert!(md.contains(&format!("{} {colour}", arm.name())), "{md}");
        }
    }

    #[test]
    fn free_text_is_flattened_cut_and_escaped() {
        assert_eq!(text_cell("a  b\n c", 10), "a b c");
        assert_eq!(
            text_cell("x | y * z_w `q` <b> [l](u) $m$", 100),
            r"x \| y \* z\_w \`q\` \<b\> \[l\](u) \$m\$"
        );
        assert_eq!(text_cell("abcdefghij", 5), "abcd…");
        assert_eq!(text_cell("ab  cdefgh", 4), "ab…", "cut on characters, trailing space dropped");
        assert_eq!(text_cell("ééééé", 3), "éé…", "cut on a character boundary");
        assert_eq!(code("a`b|c", 10), r"`a'b\|c`");
    }

    #[test]
    fn hint_section_counts_levels_and_shows_examples() {
        let mut m = run(mentor(), 0, None, vec![step(0, 0.0, 1.0, 3, 1)], vec![]);
        let slip = Some(FailureCategory::ArithmeticSlip);
        m.interventions = vec![
            intervention(0, "t/1", slip, &[1], true),
            intervention(0, "t/2", slip, &[1, 2, 3], false),
            intervention(0, "t/3", Some(FailureCategory::WrongMethod), &[], false),
        ];
        let mut other = m.clone();
        other.info.name = "mentor-s1".into();
        other.interventions = vec![intervention(5, "t/9", slip, &[2], true)];
        let hints = hint_tables(&[&m, &other]);
        let md = render("t", &[], &[], &empty_paired(), &hints, &[]);
        assert!(!md.contains("## Paired comparison"), "no final evaluation, no paired section: {md}");
        assert!(md.contains("### mentor\n\n4 interventions, 2 rescued (rescue rate 0.500), 4 hints rejected by the guard."), "{md}");
        // Level 1: t/1 (rescued) and t/2 (escalated); level 2: t/2 (escalated) and t/9 (rescued);
        // level 3: t/2 (its last hint, not rescued); t/3: no hint passed the guard.
        let table = [
            "| 1 | `arithmetic_slip` | 2 | 1 | 0.500 |",
            "| 2 | `arithmetic_slip` | 2 | 1 | 0.500 |",
            "| 3 | `arithmetic_slip` | 1 | 0 | 0.000 |",
            "| – | `wrong_method` | 1 | 0 | 0.000 |",
        ];
        let at: Vec<usize> =
            table.iter().map(|row| md.find(row).unwrap_or_else(|| panic!("{row}\n{md}"))).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "levels in order, level-less last: {md}");
        let example = "| 1 | `arithmetic_slip` | mentor-s0 | 0 | `t/1` | 41; 41; (no answer) \
                       | 6 \\* 7 = 41 — the product is off by one \
                       | Level 1: recompute 6 \\* 7 \\| check the \\*product\\* before adding. | yes (2/3) |";
        assert!(md.contains(example), "{md}");
        assert!(
            md.contains(
                "| `t/2` | 41; 41; (no answer) | 6 \\* 7 = 41 — the product is off by one | Level 1:"
            ),
            "{md}"
        );
        assert!(md.contains("before adding. | no (escalated) |"), "{md}");
        assert!(md.contains("before adding. (solution prefix: 6 \\* 7 = 42) | no (0/3) |"), "{md}");
        assert_eq!(hints[0].examples.len(), 5, "two at levels 1 and 2, one at 3, none without a hint");
    }
}
