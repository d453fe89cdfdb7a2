//! Markdown + SVG reports over MENTOR training-run directories.
//!
//! [`load_run`] reads one run directory as the trainer's own record types
//! ([`mentor_trainer::train::StepRecord`], [`mentor_trainer::eval::EvalRow`], [`mentor_trainer::train::InterventionEntry`]);
//! [`write_report`] turns a set of runs into `report.md` (per-run and per-arm tables, the
//! `paired` comparison of final accuracy per seed with bootstrap intervals, training
//! dynamics, the hints of each hint-giving arm) plus SVG plots (`reward.svg`, `zrf.svg`,
//! `interventions.svg`, one per recorded training-dynamics number such as `grad_norm.svg`,
//! `eval_level_<L>.svg`) in an output directory. Every file is written atomically (temp file
//! in the same directory, then rename).

mod aggregate;
mod cells;
mod error;
#[cfg(test)]
mod fixtures;
mod hints;
mod load;
mod markdown;
pub mod paired;
mod plot;

use std::fs;
use std::path::{Path, PathBuf};

pub use aggregate::{arm_table, run_stats, Agg, ArmRow, RunStats};
pub use error::ReportError;
pub use hints::{hint_tables, ArmHints};
pub use load::{load_run, load_runs_under, RunData};
pub use paired::{paired_summary, Bootstrap, PairedSummary};
pub use plot::arm_color;
pub(crate) use plot::{curves_chart, render_svg, Curve};

/// Name of the Markdown file written by [`write_report`].
pub const REPORT_FILE: &str = "report.md";

/// What [`write_report`] produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportSummary {
    /// Path of `report.md`.
    pub markdown: PathBuf,
    /// Paths of the SVG plots, in the order they are linked from the report.
    pub plots: Vec<PathBuf>,
    /// Number of runs reported on.
    pub runs: usize,
    /// Per-arm aggregates (same numbers as the report's per-arm table).
    pub table: Vec<ArmRow>,
    /// The hint tables of the arms that recorded interventions (same as the report's).
    pub hints: Vec<ArmHints>,
    /// The paired comparison of final accuracy (the report's paired section; what
    /// `mentor demo` writes as [`mentor_trainer::jsonl::SUMMARY_FILE`]), with the default [`Bootstrap`].
    pub paired: PairedSummary,
}

/// Writes `report.md` and the SVG plots for `runs` into `out_dir` (created if needed).
pub fn write_report(runs: &[RunData], out_dir: &Path, title: &str) -> Result<ReportSummary, ReportError> {
    if runs.is_empty() {
        return Err(ReportError::NoRuns);
    }
    fs::create_dir_all(out_dir).map_err(|source| ReportError::Io { path: out_dir.to_path_buf(), source })?;
    let mut ordered: Vec<&RunData> = runs.iter().collect();
    ordered.sort_by_key(|r| aggregate::run_order(r));
    let per_run: Vec<RunStats> = ordered.iter().map(|r| run_stats(r)).collect();
    let table = arm_table(&per_run);
    let hints = hint_tables(&ordered);
    let paired = paired_summary(&per_run, Bootstrap::default());

    let mut plots = Vec::new();
    let mut links = Vec::new();
    for chart in plot::all_charts(&ordered) {
        let path = out_dir.join(&chart.file_name);
        write_file(&path, plot::render_svg(&chart)?.as_bytes())?;
        links.push(markdown::PlotLink { file_name: chart.file_name.clone(), caption: chart.title.clone() });
        plots.push(path);
    }
    let markdown_path = out_dir.join(REPORT_FILE);
    let text = markdown::render(title, &per_run, &table, &paired, &hints, &links);
    write_file(&markdown_path, text.as_bytes())?;
    Ok(ReportSummary { markdown: markdown_path, plots, runs: runs.len(), table, hints, paired })
}

/// Writes `bytes` to `path` atomically ([`mentor_trainer::jsonl::write_atomic`]: a temp file in the
/// same directory, fsync, rename), with the report's error type.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    mentor_trainer::jsonl::write_atomic(path, bytes).map_err(|e| match e {
        mentor_trainer::Error::Io { path, source } => ReportError::Io { path, source },
        other => {
            ReportError::Io { path: path.to_path_buf(), source: std::io::Error::other(other.to_string()) }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixtures::{eval, eval_outcomes, intervention, mentor, outcomes, run, step, vanilla, write_run_dir};
    use mentor_core::FailureCategory;
    use mentor_trainer::config::Arm;
    use mentor_trainer::train::{StepRecord, EVAL_FILE, INTERVENTIONS_FILE, METRICS_FILE};

    /// A mentor run of 4 steps (jump at 2): rewards as given, ZRF 0.5, 4 interventions per
    /// step of which `seed + 1` rescued; final pass@1 at level 4 `pass1`.
    fn mentor_run(seed: u64, rewards: &[f64], pass1: f64) -> RunData {
        let steps = rewards.iter().enumerate().map(|(i, r)| step(i, *r, 0.5, 4, seed as usize + 1)).collect();
        let evals =
            vec![eval(0, 4, 0.0, Some(0.0)), eval(3, 2, 0.9, Some(1.0)), eval(3, 4, pass1, Some(0.5))];
        run(mentor(), seed, Some(2), steps, evals)
    }

    #[test]
    fn a_run_without_metrics_does_not_sink_the_report() {
        let root = tempfile::tempdir().unwrap();
        write_run_dir(root.path(), &mentor_run(0, &[0.9, 0.9, 0.2, 0.4], 0.1));
        // Started, not one step done: run.json only.
        let young = write_run_dir(root.path(), &run(vanilla(), 0, Some(2), vec![], vec![]));
        fs::remove_file(young.join(METRICS_FILE)).unwrap();
        fs::remove_file(young.join(EVAL_FILE)).unwrap();
        let runs = load_runs_under(root.path()).unwrap();
        assert_eq!(runs.iter().map(|r| r.steps.len()).collect::<Vec<_>>(), [4, 0]);
        let summary = write_report(&runs, &root.path().join("report"), "partial").unwrap();
        assert_eq!(summary.runs, 2);
        let md = fs::read_to_string(&summary.markdown).unwrap();
        assert!(md.contains("vanilla-s0") && md.contains("mentor-s0"), "{md}");
        assert!(!md.contains("## Hints"), "no interventions on record, no hint section: {md}");
    }

    #[test]
    fn end_to_end_from_run_dirs() {
        let root = tempfile::tempdir().unwrap();
        // Post-jump (steps 2,3) rewards: seed 0 → (0.2+0.4)/2 = 0.3, seed 1 → (0.6+0.8)/2 = 0.7.
        let mut s0 = mentor_run(0, &[0.9, 0.9, 0.2, 0.4], 0.1);
        s0.interventions = vec![
            intervention(2, "curriculum/4/17", Some(FailureCategory::ArithmeticSlip), &[1], true),
            intervention(3, "curriculum/4/5", Some(FailureCategory::ArithmeticSlip), &[1, 2], false),
        ];
        let dir0 = write_run_dir(root.path(), &s0);
        // Crashed mid-write: a torn line at the end of metrics.jsonl.
        let mut metrics = fs::OpenOptions::new().append(true).open(dir0.join(METRICS_FILE)).unwrap();
        std::io::Write::write_all(&mut metrics, b"{\"step\":4,\"level\":4,\"gro").unwrap();
        write_run_dir(root.path(), &mentor_run(1, &[0.0, 0.0, 0.6, 0.8], 0.3));
        let runs = load_runs_under(root.path()).unwrap();
        assert_eq!(runs.iter().map(|r| r.steps.len()).collect::<Vec<_>>(), [4, 4]);
        let out = root.path().join("report");
        let summary = write_report(&runs, &out, "E2E").unwrap();
        let md = fs::read_to_string(&summary.markdown).unwrap();
        // seed 0: 16 interventions, 4 rescues → 0.25; seed 1: 16, 8 → 0.5. ZRF 0.5 throughout.
        assert!(
            md.contains(
                "| mentor-s0 | mentor | 0 | 4 | 0.300 | 0.500 | 16 | 4 | 0.250 | 3 | 4 | 0.100 | 4 | 0.500 |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| mentor-s1 | mentor | 1 | 4 | 0.700 | 0.500 | 16 | 8 | 0.500 | 3 | 4 | 0.300 | 4 | 0.500 |"
            ),
            "{md}"
        );
        // Per arm: reward 0.5 (0.3–0.7), rescue rate 0.375 (0.25–0.5), pass@1 0.2 (0.1–0.3).
        assert!(
            md.contains(
                "| mentor | 2 (0, 1) | 0.500 (0.300–0.700) | 0.500 (0.500–0.500) | 16.0 (16.0–16.0) \
             | 0.375 (0.250–0.500) | 0.200 (0.100–0.300) | 0.500 (0.500–0.500) |"
            ),
            "{md}"
        );
        // Dynamics: the fixture's steps all trained, zero-std 0.5, no KL, entropy 1.5, grad norm
        // 0.75, clip ratio 0.125, 20 tokens, no non-finite update, 1 s a step.
        assert!(
            md.contains("| mentor-s0 | 4 / 4 | 0.500 | – | 1.500 | 0.750 | 0.125 | 20.000 | 0 | 1.000 |"),
            "{md}"
        );
        // Hints: seed 0's two interventions; level 1 tried by both, rescued once; level 2 once, not.
        assert_eq!(summary.hints.len(), 1);
        assert!(
            md.contains("2 interventions, 1 rescued (rescue rate 0.500), 2 hints rejected by the guard."),
            "{md}"
        );
        assert!(md.contains("| 1 | `arithmetic_slip` | 2 | 1 | 0.500 |"), "{md}");
        assert!(md.contains("| 2 | `arithmetic_slip` | 1 | 0 | 0.000 |"), "{md}");
        assert!(md.contains("| mentor-s0 | 2 | `curriculum/4/17` | 41; 41; (no answer) |"), "{md}");
        let p1 = summary.table[0].pass1.unwrap();
        assert!((p1.mean - 0.2).abs() < 1e-12 && p1.min == 0.1 && p1.max == 0.3);
        assert!(
            md.contains("![") && md.contains("](eval_level_4.svg)") && md.contains("](eval_level_2.svg)")
        );
        for plot in &summary.plots {
            let svg = fs::read_to_string(plot).unwrap();
            roxmltree::Document::parse(&svg).unwrap();
        }
    }

    #[test]
    fn paired_section_and_summary_json_from_run_dirs() {
        let root = tempfile::tempdir().unwrap();
        // Two seeds, two arms; the arms of a seed are evaluated on the same 20 problems.
        for (seed, right_mentor, right_vanilla) in [(0u64, 12, 8), (1, 14, 6)] {
            for (arm, right) in [(mentor(), right_mentor), (vanilla(), right_vanilla)] {
                let evals = vec![eval(0, 4, 0.0, None), eval_outcomes(3, 4, &outcomes(20, right))];
                write_run_dir(root.path(), &run(arm, seed, Some(2), vec![step(2, 0.5, 0.5, 1, 0)], evals));
            }
        }
        // An old run (no per-problem outcomes) of another arm.
        write_run_dir(root.path(), &run("odd", 0, Some(2), vec![], vec![eval(3, 4, 0.5, None)]));
        let runs = load_runs_under(root.path()).unwrap();
        let out = root.path().join("report");
        let summary = write_report(&runs, &out, "paired").unwrap();
        let p = &summary.paired;
        let arm = |name: &str| p.arms.iter().find(|a| a.arm == name).unwrap();
        // mentor: (0.6 + 0.7) / 2; vanilla: (0.4 + 0.3) / 2; difference -0.3.
        assert!((arm(mentor()).mean_final_accuracy.unwrap() - 0.65).abs() < 1e-12);
        assert!((arm(vanilla()).mean_final_accuracy.unwrap() - 0.35).abs() < 1e-12);
        let (lo, hi) = (arm(mentor()).ci_low.unwrap(), arm(mentor()).ci_high.unwrap());
        assert!(lo < 0.65 && 0.65 < hi, "[{lo}, {hi}]");
        assert_eq!((arm("odd").mean_final_accuracy, arm("odd").ci_low), (Some(0.5), None));
        let d = p.paired.iter().find(|d| d.arm == vanilla()).unwrap();
        assert_eq!((d.versus.as_str(), d.seeds), (mentor(), 2));
        assert!((d.mean_difference.unwrap() + 0.3).abs() < 1e-12);
        assert!(d.ci_low.unwrap() < -0.3 && -0.3 < d.ci_high.unwrap() && d.ci_high.unwrap() < 0.0);
        let md = fs::read_to_string(&summary.markdown).unwrap();
        assert!(md.contains("| seed | vanilla | mentor | odd |"), "{md}");
        assert!(md.contains("| 0 | 0.400 | 0.600 | 0.500 |\n| 1 | 0.300 | 0.700 | – |\n"), "{md}");
        assert!(md.contains("| odd | 1 | -0.100 [–] |"), "{md}");
        // What `mentor demo` writes beside the report.
        let path = out.join(mentor_trainer::jsonl::SUMMARY_FILE);
        mentor_trainer::jsonl::write_json(&path, p).unwrap();
        let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["runs"].as_array().unwrap().len(), 5);
        assert_eq!(json["runs"][0]["arm"], vanilla());
        assert!(json["arms"][2]["ci_low"].is_null() && json["arms"][1]["ci_low"].is_number(), "{json}");
        assert_eq!(json["bootstrap"]["resamples"], 2000);
    }

    #[test]
    fn arms_without_interventions_file_have_no_hint_section() {
        let root = tempfile::tempdir().unwrap();
        let mut m = mentor_run(0, &[0.0, 0.0, 0.0, 0.0], 0.0);
        m.interventions = vec![intervention(1, "t", None, &[2], true)];
        write_run_dir(root.path(), &m);
        let dapo = run(Arm::Dapo.name(), 0, Some(2), vec![step(0, 0.5, 0.5, 0, 0)], vec![]);
        let dapo_dir = write_run_dir(root.path(), &dapo);
        assert!(!dapo_dir.join(INTERVENTIONS_FILE).exists());
        let runs = load_runs_under(root.path()).unwrap();
        let summary = write_report(&runs, &root.path().join("report"), "t").unwrap();
        assert_eq!(summary.hints.iter().map(|h| h.arm.as_str()).collect::<Vec<_>>(), [mentor()]);
        let md = fs::read_to_string(&summary.markdown).unwrap();
        assert!(md.contains("### mentor") && !md.contains("### dapo"), "{md}");
    }

    #[test]
    fn empty_input_is_no_runs() {
        let out = tempfile::tempdir().unwrap();
        assert!(matches!(write_report(&[], out.path(), "t"), Err(ReportError::NoRuns)));
    }

    #[test]
    fn writes_report_plots_and_no_temp_files() {
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("nested/report");
        let steps = |rewards: &[f64]| -> Vec<StepRecord> {
            rewards.iter().enumerate().map(|(i, r)| step(i, *r, 1.0 - r, 2, 1)).collect()
        };
        let runs = vec![
            run(
                mentor(),
                0,
                Some(2),
                steps(&[0.0, 0.1, 0.2, 0.4]),
                vec![eval(2, 4, 0.1, Some(0.2)), eval(3, 4, 0.3, Some(0.5))],
            ),
            run(
                mentor(),
                1,
                Some(2),
                steps(&[0.0, 0.1, 0.6, 0.8]),
                vec![eval(3, 4, 0.5, Some(0.7)), eval(3, 2, 0.9, Some(0.9))],
            ),
            run(vanilla(), 0, Some(2), steps(&[0.0, 0.0, 0.0]), vec![eval(3, 4, 0.0, Some(0.1))]),
        ];
        let summary = write_report(&runs, &target, "Demo").unwrap();
        assert_eq!(summary.runs, 3);
        assert_eq!(summary.markdown, target.join(REPORT_FILE));
        let names: Vec<String> =
            summary.plots.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(
            names,
            [
                "reward.svg",
                "zrf.svg",
                "interventions.svg",
                "zero_std.svg",
                "entropy.svg",
                "grad_norm.svg",
                "clip_ratio.svg",
                "completion_length.svg",
                "eval_level_2.svg",
                "eval_level_4.svg"
            ]
        );
        for p in summary.plots.iter().chain([&summary.markdown]) {
            assert!(fs::metadata(p).unwrap().len() > 0, "{}", p.display());
        }
        let md = fs::read_to_string(&summary.markdown).unwrap();
        for name in &names {
            assert!(md.contains(&format!("]({name})")), "missing link to {name}");
        }
        assert!(
            md.contains("- `grad_norm.svg`: ") && !md.contains("`kl.svg`"),
            "notes for the plots drawn: {md}"
        );
        let mut entries: Vec<String> = fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        entries.sort();
        let mut expected: Vec<String> = names.clone();
        expected.push(REPORT_FILE.to_string());
        expected.sort();
        assert_eq!(entries, expected, "unexpected (temp?) files in output dir");
        // Arms ordered as the enum lists them: vanilla before mentor.
        assert_eq!(summary.table.iter().map(|a| a.arm.as_str()).collect::<Vec<_>>(), [vanilla(), mentor()]);
    }

    #[test]
    fn zero_step_runs_do_not_break_the_report() {
        let out = tempfile::tempdir().unwrap();
        let runs = vec![
            run(mentor(), 0, Some(2), vec![], vec![]),
            run("odd-arm", 3, Some(2), vec![step(0, f64::NAN, f64::NAN, 0, 0)], vec![]),
        ];
        let summary = write_report(&runs, out.path(), "Empty").unwrap();
        let md = fs::read_to_string(&summary.markdown).unwrap();
        assert!(md.contains("| mentor-s0 | mentor | 0 | 0 | – | – |"), "{md}");
        assert!(md.contains("| odd-arm-s3 | odd-arm | 3 | 1 | – | – |"), "{md}");
        assert_eq!(summary.table.iter().map(|a| a.arm.as_str()).collect::<Vec<_>>(), [mentor(), "odd-arm"]);
        assert!(
            summary.plots.iter().all(|p| !p.ends_with("eval_level_4.svg")),
            "no eval levels → no eval plots"
        );
    }

    #[test]
    fn write_atomic_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        write_file(&path, b"one").unwrap();
        write_file(&path, b"two").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        let missing_dir = dir.path().join("nope/b.txt");
        assert!(matches!(write_file(&missing_dir, b"x"), Err(ReportError::Io { .. })));
    }
}
