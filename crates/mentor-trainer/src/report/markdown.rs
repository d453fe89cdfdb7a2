//! Rendering of `report.md`: per-run table, per-arm table, plot notes and SVG links.

use std::fmt::Write;

use super::plot::SMOOTH_WINDOW;
use super::stats::{Agg, ArmRow, RunStats};

/// Placeholder for a missing number.
pub const MISSING: &str = "–";

/// A plot to link from the report.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotLink {
    /// File name relative to the report, e.g. `reward.svg`.
    pub file_name: String,
    /// Alt text / caption.
    pub caption: String,
}

/// Renders the whole report.
pub fn render(title: &str, runs: &[RunStats], arms: &[ArmRow], plots: &[PlotLink]) -> String {
    let mut md = format!("# {}\n\n", title.trim());
    md.push_str(&intro(runs.len()));
    md.push_str(&run_table(runs));
    md.push_str(&arm_section(arms));
    md.push_str(&plot_notes());
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

/// Formats an optional number with 3 decimals, or [`MISSING`].
pub fn num(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.3}"),
        _ => MISSING.to_string(),
    }
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

fn plot_notes() -> String {
    format!(
        "## What the plots show\n\n\
         - Colour encodes the arm (vanilla grey, static_hints orange, mentor blue, dapo green, refinement \
         purple); solid lines are even seeds, dashed lines odd seeds. The vertical dashed grey line marks \
         `jump_step`, where the curriculum jumps to the hard level.\n\
         - `reward.svg`: mean unhinted training reward per step, trailing moving average over \
         {SMOOTH_WINDOW} steps.\n\
         - `zrf.svg`: zero-reward fraction per step (groups where every sample failed, which triggers the \
         mentor), trailing moving average over {SMOOTH_WINDOW} steps.\n\
         - `interventions.svg`: mentor interventions (thick line in the run's solid/dashed style) and \
         rescued groups (thin line: dotted for even seeds, dash-dot for odd seeds) per step, unsmoothed.\n\
         - `eval_level_<L>.svg`: unhinted greedy pass@1 on level L at each evaluation step.\n\n"
    )
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
    use crate::report::stats::FinalEval;

    fn stats(name: &str, arm: &str, seed: u64, reward: Option<f64>, pass1: Option<f64>) -> RunStats {
        RunStats {
            name: name.into(),
            arm: arm.into(),
            seed,
            steps: 40,
            mean_reward: reward,
            mean_zrf: Some(0.125),
            interventions: 12,
            rescues: 3,
            rescue_rate: Some(0.25),
            final_eval: pass1.map(|p| FinalEval {
                step: 39,
                level: 4,
                pass1: Some(p),
                k: Some(4),
                passk: None,
            }),
        }
    }

    #[test]
    fn number_formatting() {
        assert_eq!(num(Some(0.12345)), "0.123");
        assert_eq!(num(None), MISSING);
        assert_eq!(num(Some(f64::NAN)), MISSING);
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
        let md = render("  My report ", &runs, &arms, &links);
        assert!(md.starts_with("# My report\n"));
        assert!(md.contains(
            "| mentor-s0 | mentor | 0 | 40 | 0.300 | 0.125 | 12 | 3 | 0.250 | 39 | 4 | 0.200 | 4 | – |"
        ));
        assert!(md.contains("| we\\|ird | mentor | 1 | 40 | – | 0.125 |"));
        assert!(md.contains(
            "| mentor | 2 (0, 1) | 0.300 (0.300–0.300) | – | 12.0 (12.0–12.0) | 0.250 (0.250–0.250) | – | – |"
        ));
        assert!(md.contains("## What the plots show"));
        assert!(md.contains("![Reward smoothed](reward.svg)"));
    }
}
