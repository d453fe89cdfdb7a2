//! Markdown + SVG reports over MENTOR training-run directories.
//!
//! [`load_run`] reads one run directory; [`write_report`] turns a set of runs into `report.md`
//! plus SVG plots (`reward.svg`, `zrf.svg`, `interventions.svg`, `eval_level_<L>.svg`) in an
//! output directory. Every file is written atomically (temp file in the same directory, then
//! rename).

mod load;
mod markdown;
mod plot;
mod stats;

use std::fs;
use std::path::{Path, PathBuf};

pub use load::{load_run, load_runs_under, EvalRow, RunData, StepRow, EVAL_FILE, METRICS_FILE, RUN_FILE};
pub use plot::{arm_color, SMOOTH_WINDOW};
pub use stats::{aggregate, arm_order, arm_table, run_stats, Agg, ArmRow, FinalEval, RunStats, KNOWN_ARMS};

/// Name of the Markdown file written by [`write_report`].
pub const REPORT_FILE: &str = "report.md";

/// Errors raised while loading runs or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading or writing a file failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON / JSONL file contained a malformed or invalid line.
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The offending file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// [`write_report`] was called with no runs.
    #[error("no runs to report on")]
    NoRuns,
    /// Rendering a plot failed.
    #[error("plotting failed: {0}")]
    Plot(String),
}

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
}

/// Writes `report.md` and the SVG plots for `runs` into `out_dir` (created if needed).
pub fn write_report(runs: &[RunData], out_dir: &Path, title: &str) -> Result<ReportSummary, ReportError> {
    if runs.is_empty() {
        return Err(ReportError::NoRuns);
    }
    fs::create_dir_all(out_dir).map_err(|source| ReportError::Io { path: out_dir.to_path_buf(), source })?;
    let mut ordered: Vec<&RunData> = runs.iter().collect();
    ordered.sort_by_key(|r| stats::run_order(r));
    let per_run: Vec<RunStats> = ordered.iter().map(|r| run_stats(r)).collect();
    let table = arm_table(&per_run);

    let mut plots = Vec::new();
    let mut links = Vec::new();
    for chart in plot::all_charts(&ordered) {
        let path = out_dir.join(&chart.file_name);
        write_atomic(&path, plot::render_svg(&chart)?.as_bytes())?;
        links.push(markdown::PlotLink { file_name: chart.file_name.clone(), caption: chart.title.clone() });
        plots.push(path);
    }
    let markdown_path = out_dir.join(REPORT_FILE);
    let text = markdown::render(title, &per_run, &table, &links);
    write_atomic(&markdown_path, text.as_bytes())?;
    Ok(ReportSummary { markdown: markdown_path, plots, runs: runs.len(), table })
}

/// Writes `bytes` to `path` atomically ([`crate::jsonl::write_atomic`]: a temp file in the
/// same directory, fsync, rename), with the report's error type.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    crate::jsonl::write_atomic(path, bytes).map_err(|e| match e {
        crate::Error::Io { path, source } => ReportError::Io { path, source },
        other => {
            ReportError::Io { path: path.to_path_buf(), source: std::io::Error::other(other.to_string()) }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(step: u64, reward: f64, zrf: f64, intervened: u64, rescued: u64) -> StepRow {
        StepRow {
            step,
            level: Some(2),
            reward,
            zrf,
            groups: 8,
            collapsed: intervened,
            intervened,
            rescued,
            extra_rollouts: 0,
            guard_rejections: 0,
            loss: 0.0,
            grad_norm: 0.0,
            seconds: 1.0,
            levels_used: Default::default(),
        }
    }

    fn eval(step: u64, level: u32, pass1: f64, passk: f64) -> EvalRow {
        EvalRow { step, level, n: 100, pass1, k: Some(4), passk }
    }

    fn run(arm: &str, seed: u64, rewards: &[f64], evals: Vec<EvalRow>) -> RunData {
        RunData {
            dir: PathBuf::from(format!("/runs/{arm}-s{seed}")),
            name: format!("{arm}-s{seed}"),
            arm: arm.to_string(),
            seed,
            preset: None,
            jump_step: Some(2),
            hard_level: Some(4),
            steps: rewards.iter().enumerate().map(|(i, r)| step(i as u64, *r, 1.0 - r, 2, 1)).collect(),
            evals,
        }
    }

    fn write_run_dir(root: &Path, arm: &str, seed: u64, rewards: &[f64], pass1: f64) -> PathBuf {
        let dir = root.join(format!("{arm}-s{seed}"));
        fs::create_dir_all(&dir).unwrap();
        let meta = format!(
            r#"{{"name":"{arm}-s{seed}","arm":"{arm}","seed":{seed},"preset":"demo","jump_step":2,"hard_level":4}}"#
        );
        fs::write(dir.join(RUN_FILE), meta).unwrap();
        let mut metrics = String::new();
        for (i, r) in rewards.iter().enumerate() {
            metrics.push_str(&format!(
                "{{\"step\":{i},\"level\":4,\"reward\":{r},\"zrf\":0.5,\"groups\":8,\"collapsed\":4,\"intervened\":4,\"rescued\":{seed_plus},\"extra\":true}}\n",
                seed_plus = seed + 1
            ));
        }
        metrics.push_str("{\"step\":99,\"rew"); // crashed mid-write
        fs::write(dir.join(METRICS_FILE), metrics).unwrap();
        let eval = format!(
            "{{\"step\":0,\"level\":4,\"n\":50,\"pass1\":0.0,\"k\":4,\"passk\":0.0}}\n\
             {{\"step\":3,\"level\":2,\"n\":50,\"pass1\":0.9,\"k\":4,\"passk\":1.0}}\n\
             {{\"step\":3,\"level\":4,\"n\":50,\"pass1\":{pass1},\"k\":4,\"passk\":0.5}}\n"
        );
        fs::write(dir.join(EVAL_FILE), eval).unwrap();
        dir
    }

    #[test]
    fn a_run_without_metrics_does_not_sink_the_report() {
        let root = tempfile::tempdir().unwrap();
        write_run_dir(root.path(), "mentor", 0, &[0.9, 0.9, 0.2, 0.4], 0.1);
        // Started, not one step done: run.json only.
        let young = write_run_dir(root.path(), "vanilla", 0, &[], 0.0);
        fs::remove_file(young.join(METRICS_FILE)).unwrap();
        fs::remove_file(young.join(EVAL_FILE)).unwrap();
        let runs = load_runs_under(root.path()).unwrap();
        assert_eq!(runs.iter().map(|r| r.steps.len()).collect::<Vec<_>>(), [4, 0]);
        let summary = write_report(&runs, &root.path().join("report"), "partial").unwrap();
        assert_eq!(summary.runs, 2);
        let md = fs::read_to_string(&summary.markdown).unwrap();
        assert!(md.contains("vanilla-s0") && md.contains("mentor-s0"), "{md}");
    }

    #[test]
    fn end_to_end_from_run_dirs() {
        let root = tempfile::tempdir().unwrap();
        // Post-jump (steps 2,3) rewards: seed 0 → (0.2+0.4)/2 = 0.3, seed 1 → (0.6+0.8)/2 = 0.7.
        write_run_dir(root.path(), "mentor", 0, &[0.9, 0.9, 0.2, 0.4], 0.1);
        write_run_dir(root.path(), "mentor", 1, &[0.0, 0.0, 0.6, 0.8], 0.3);
        let runs = load_runs_under(root.path()).unwrap();
        assert_eq!(runs.iter().map(|r| r.steps.len()).collect::<Vec<_>>(), [4, 4]);
        let out = root.path().join("report");
        let summary = write_report(&runs, &out, "E2E").unwrap();
        let md = fs::read_to_string(&summary.markdown).unwrap();
        // seed 0: 16 interventions, 4 rescues → 0.25; seed 1: 16, 8 → 0.5.
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
    fn empty_input_is_no_runs() {
        let out = tempfile::tempdir().unwrap();
        assert!(matches!(write_report(&[], out.path(), "t"), Err(ReportError::NoRuns)));
    }

    #[test]
    fn writes_report_plots_and_no_temp_files() {
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("nested/report");
        let runs = vec![
            run("mentor", 0, &[0.0, 0.1, 0.2, 0.4], vec![eval(2, 4, 0.1, 0.2), eval(3, 4, 0.3, 0.5)]),
            run("mentor", 1, &[0.0, 0.1, 0.6, 0.8], vec![eval(3, 4, 0.5, 0.7), eval(3, 2, 0.9, 0.9)]),
            run("vanilla", 0, &[0.0, 0.0, 0.0], vec![eval(3, 4, 0.0, 0.1)]),
        ];
        let summary = write_report(&runs, &target, "Demo").unwrap();
        assert_eq!(summary.runs, 3);
        assert_eq!(summary.markdown, target.join(REPORT_FILE));
        let names: Vec<String> =
            summary.plots.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(
            names,
            ["reward.svg", "zrf.svg", "interventions.svg", "eval_level_2.svg", "eval_level_4.svg"]
        );
        for p in summary.plots.iter().chain([&summary.markdown]) {
            assert!(fs::metadata(p).unwrap().len() > 0, "{}", p.display());
        }
        let md = fs::read_to_string(&summary.markdown).unwrap();
        for name in &names {
            assert!(md.contains(&format!("]({name})")), "missing link to {name}");
        }
        let mut entries: Vec<String> = fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        entries.sort();
        let mut expected: Vec<String> = names.clone();
        expected.push(REPORT_FILE.to_string());
        expected.sort();
        assert_eq!(entries, expected, "unexpected (temp?) files in output dir");
        // Arms ordered canonically: vanilla before mentor.
        assert_eq!(summary.table.iter().map(|a| a.arm.as_str()).collect::<Vec<_>>(), ["vanilla", "mentor"]);
    }

    #[test]
    fn zero_step_runs_do_not_break_the_report() {
        let out = tempfile::tempdir().unwrap();
        let runs = vec![run("mentor", 0, &[], vec![]), run("odd-arm", 3, &[f64::NAN], vec![])];
        let summary = write_report(&runs, out.path(), "Empty").unwrap();
        let md = fs::read_to_string(&summary.markdown).unwrap();
        assert!(md.contains("| mentor-s0 | mentor | 0 | 0 | – | – |"), "{md}");
        assert_eq!(summary.plots.len(), 3, "no eval levels → only the three training plots");
    }

    #[test]
    fn write_atomic_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        let missing_dir = dir.path().join("nope/b.txt");
        assert!(matches!(write_atomic(&missing_dir, b"x"), Err(ReportError::Io { .. })));
    }
}
