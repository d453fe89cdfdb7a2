//! Reading training-run directories (`run.json`, `metrics.jsonl`, `eval.jsonl`,
//! `interventions.jsonl`) into [`RunData`].
//!
//! Every file is read as the type the trainer writes it from: `run.json` as
//! [`RunInfo`], `metrics.jsonl` lines as [`StepRecord`], `eval.jsonl` lines as [`EvalRow`],
//! `interventions.jsonl` lines as [`InterventionEntry`]; a field the trainer gains is read
//! back without a copy here. JSONL files are parsed line by line. A final line without a
//! trailing newline that does not parse (a run that crashed mid-write) is dropped; any other
//! malformed line is a [`ReportError::Parse`] naming the file and 1-based line number.
//! (The trainer writes with `serde_json`, which has no `NaN` tokens; a non-finite float it
//! writes as `null` reads back only where its type is an `Option`.)

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use mentor_trainer::eval::EvalRow;
use mentor_trainer::train::INTERVENTIONS_FILE;
use mentor_trainer::train::{InterventionEntry, RunInfo, StepRecord};

use super::ReportError;

use mentor_trainer::train::{EVAL_FILE, METRICS_FILE, RUN_FILE};

/// Everything the report needs from one run directory.
#[derive(Debug, Clone, PartialEq)]
pub struct RunData {
    /// The run directory.
    pub dir: PathBuf,
    /// What `run.json` says: name, arm (a string, so that runs of arms this build does not
    /// know still load), seed, preset, curriculum jump.
    pub info: RunInfo,
    /// Training steps, strictly increasing in `step`.
    pub steps: Vec<StepRecord>,
    /// Evaluation rows in file order.
    pub evals: Vec<EvalRow>,
    /// Interventions in file order (none for arms that give no hints, or when the run has no
    /// `interventions.jsonl`).
    pub interventions: Vec<InterventionEntry>,
}

/// Loads one run directory. `run.json` is required; a run that has not finished a step yet
/// (no `metrics.jsonl`, no `eval.jsonl`) and an arm that gives no hints (no
/// `interventions.jsonl`) load with no rows of that kind.
pub fn load_run(dir: &Path) -> Result<RunData, ReportError> {
    let info = load_info(&dir.join(RUN_FILE))?;
    // A run that has not finished its first step yet has no metrics (nor evaluations): it is
    // a run with no rows, not an error that would sink the report of every other run.
    let metrics_path = dir.join(METRICS_FILE);
    let steps = read_jsonl_if_present::<StepRecord>(&metrics_path)?;
    check_increasing(&metrics_path, &steps)?;
    Ok(RunData {
        dir: dir.to_path_buf(),
        info,
        steps: rows(steps),
        evals: rows(read_jsonl_if_present::<EvalRow>(&dir.join(EVAL_FILE))?),
        interventions: rows(read_jsonl_if_present::<InterventionEntry>(&dir.join(INTERVENTIONS_FILE))?),
    })
}

fn rows<T>(numbered: Vec<(usize, T)>) -> Vec<T> {
    numbered.into_iter().map(|(_, row)| row).collect()
}

/// Loads every immediate subdirectory of `root` that contains a `run.json`, sorted by path.
pub fn load_runs_under(root: &Path) -> Result<Vec<RunData>, ReportError> {
    let io_err = |source| ReportError::Io { path: root.to_path_buf(), source };
    let mut dirs = Vec::new();
    for entry in fs::read_dir(root).map_err(io_err)? {
        let path = entry.map_err(io_err)?.path();
        if path.join(RUN_FILE).is_file() {
            dirs.push(path);
        }
    }
    dirs.sort();
    dirs.iter().map(|d| load_run(d)).collect()
}

fn load_info(path: &Path) -> Result<RunInfo, ReportError> {
    let bytes = fs::read(path).map_err(|source| ReportError::Io { path: path.to_path_buf(), source })?;
    serde_json::from_slice(&bytes).map_err(|e| ReportError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        message: e.to_string(),
    })
}

/// The rows of `path`, none when the file does not exist.
fn read_jsonl_if_present<T: DeserializeOwned>(path: &Path) -> Result<Vec<(usize, T)>, ReportError> {
    match fs::read(path) {
        Ok(bytes) => parse_jsonl(path, &bytes),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(ReportError::Io { path: path.to_path_buf(), source }),
    }
}

/// Parses JSONL bytes into `(1-based line number, row)` pairs; see the module docs for tolerance.
fn parse_jsonl<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<Vec<(usize, T)>, ReportError> {
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last = lines.len() - 1; // `split` always yields at least one item
    let mut rows = Vec::new();
    for (idx, raw) in lines.iter().enumerate() {
        let unterminated = idx == last; // the final piece never had a '\n' after it
        match parse_line::<T>(raw) {
            Ok(Some(row)) => rows.push((idx + 1, row)),
            Ok(None) => {}
            Err(_) if unterminated => {}
            Err(message) => {
                return Err(ReportError::Parse { path: path.to_path_buf(), line: idx + 1, message })
            }
        }
    }
    Ok(rows)
}

fn parse_line<T: DeserializeOwned>(raw: &[u8]) -> Result<Option<T>, String> {
    let text = std::str::from_utf8(raw).map_err(|e| format!("invalid UTF-8: {e}"))?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text).map(Some).map_err(|e| e.to_string())
}

fn check_increasing(path: &Path, steps: &[(usize, StepRecord)]) -> Result<(), ReportError> {
    for pair in steps.windows(2) {
        let ((_, prev), (line, row)) = (&pair[0], &pair[1]);
        if row.step <= prev.step {
            return Err(ReportError::Parse {
                path: path.to_path_buf(),
                line: *line,
                message: format!("step {} does not increase on previous step {}", row.step, prev.step),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{self, eval, intervention, mentor, metrics_jsonl, step};
    use mentor_core::FailureCategory;

    fn write_dir(info: &RunInfo, metrics: &str, eval: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(RUN_FILE), serde_json::to_string(info).unwrap()).unwrap();
        fs::write(dir.path().join(METRICS_FILE), metrics).unwrap();
        if let Some(eval) = eval {
            fs::write(dir.path().join(EVAL_FILE), eval).unwrap();
        }
        dir
    }

    fn info() -> RunInfo {
        fixtures::info(mentor(), 0, Some(20))
    }

    #[test]
    fn reads_back_what_the_trainer_wrote() {
        let mut untrained = step(1, 0.0, 1.0, 0, 0);
        untrained.update = None; // no rows to train on: no loss, no grad norm
        let steps = vec![step(0, 0.375, 0.25, 2, 1), untrained];
        let evals = vec![eval(20, 4, 0.0625, Some(0.125)), eval(20, 2, 0.5, None)];
        let entries = vec![
            intervention(0, "curriculum/4/17", Some(FailureCategory::ArithmeticSlip), &[1, 2], true),
            intervention(0, "curriculum/4/3", None, &[], false),
        ];
        let dir = write_dir(&info(), &metrics_jsonl(&steps), Some(&fixtures::eval_jsonl(&evals)));
        fs::write(dir.path().join(INTERVENTIONS_FILE), fixtures::interventions_jsonl(&entries)).unwrap();
        let run = load_run(dir.path()).unwrap();
        assert_eq!(run.info, info());
        assert_eq!(run.steps, steps);
        assert_eq!(run.evals, evals);
        assert_eq!(run.interventions, entries);
    }

    #[test]
    fn the_metrics_line_is_the_libraries_structs_flattened() {
        // What a reader of metrics.jsonl (and of this report) relies on: the keys of the
        // plug-in's and GRPO's metric structs at the top level of a line.
        let line: serde_json::Value =
            serde_json::from_str(&metrics_jsonl(&[step(0, 0.5, 0.25, 1, 0)])).unwrap();
        for key in ["step", "level", "mean_reward", "zrf", "zero_std_frac", "intervened", "loss", "grad_norm"]
        {
            assert!(line.get(key).is_some(), "{key} missing from {line}");
        }
        assert!(line.get("reward").is_none(), "the mean unhinted reward is `mean_reward`");
    }

    #[test]
    fn runs_without_evaluations_or_interventions_load_empty() {
        let vanilla = fixtures::info(fixtures::vanilla(), 1, None);
        let dir = write_dir(&vanilla, "", None);
        let run = load_run(dir.path()).unwrap();
        assert_eq!((run.info.jump_step, run.info.hard_level), (None, None));
        assert!(run.steps.is_empty() && run.evals.is_empty() && run.interventions.is_empty());
    }

    #[test]
    fn torn_last_line_is_dropped() {
        let steps = [step(0, 0.125, 0.5, 0, 0), step(1, 0.25, 0.5, 0, 0), step(2, 0.5, 0.5, 0, 0)];
        let whole = metrics_jsonl(&steps);
        // The run crashed while writing step 2's line: a prefix of it, no newline.
        let torn = &whole[..whole.len() - 40];
        let eval_line = fixtures::eval_jsonl(&[eval(0, 1, 0.5, None)]);
        let dir = write_dir(&info(), torn, Some(&eval_line[..eval_line.len() / 2]));
        let entries = fixtures::interventions_jsonl(&[intervention(0, "t", None, &[1], false)]);
        fs::write(dir.path().join(INTERVENTIONS_FILE), &entries[..entries.len() - 10]).unwrap();
        let run = load_run(dir.path()).unwrap();
        assert_eq!(run.steps, steps[..2]);
        assert!(run.evals.is_empty() && run.interventions.is_empty());
    }

    #[test]
    fn complete_final_line_without_newline_is_kept() {
        let metrics = metrics_jsonl(&[step(0, 0.125, 0.5, 0, 0), step(1, 0.25, 0.5, 0, 0)]);
        let dir = write_dir(&info(), metrics.trim_end(), None);
        assert_eq!(load_run(dir.path()).unwrap().steps.len(), 2);
    }

    #[test]
    fn bad_middle_line_names_file_and_line() {
        let [a, b] = [step(0, 0.125, 0.5, 0, 0), step(1, 0.25, 0.5, 0, 0)].map(|s| metrics_jsonl(&[s]));
        let metrics = format!("{a}\n{{not json}}\n{b}");
        let dir = write_dir(&info(), &metrics, None);
        match load_run(dir.path()) {
            Err(ReportError::Parse { path, line, .. }) => {
                assert_eq!(path, dir.path().join(METRICS_FILE));
                assert_eq!(line, 3);
            }
            other => panic!("expected parse error, got {other:?}"),
        }
        let err = load_run(dir.path()).unwrap_err().to_string();
        assert!(err.contains("metrics.jsonl:3:"), "{err}");
    }

    #[test]
    fn a_line_of_another_format_is_an_error_naming_it() {
        // A metrics line of the format before `mean_reward` and the step timings: not read as
        // zeros but refused, with the file, the line and the missing field.
        let old = r#"{"step":0,"level":2,"reward":0.5,"zrf":0.25,"groups":8,"collapsed":2,"intervened":2,"rescued":1,"loss":0.01,"grad_norm":0.3,"seconds":0.9}"#;
        let dir = write_dir(&info(), &format!("{old}\n{old}\n"), None);
        let err = load_run(dir.path()).unwrap_err().to_string();
        assert!(err.contains("metrics.jsonl:1:") && err.contains("sample_seconds"), "{err}");
    }

    #[test]
    fn partial_line_followed_by_newline_is_an_error() {
        let good = metrics_jsonl(&[step(0, 0.125, 0.5, 0, 0)]);
        let metrics = format!("{good}{}\n", &good[..good.len() / 2]);
        let dir = write_dir(&info(), &metrics, None);
        assert!(matches!(load_run(dir.path()), Err(ReportError::Parse { line: 2, .. })));
    }

    #[test]
    fn bad_intervention_line_names_its_file() {
        let dir = write_dir(&info(), "", None);
        let good = fixtures::interventions_jsonl(&[intervention(0, "t", None, &[1], false)]);
        fs::write(dir.path().join(INTERVENTIONS_FILE), format!("{good}{{\"step\":1}}\n{good}")).unwrap();
        let err = load_run(dir.path()).unwrap_err().to_string();
        assert!(err.contains("interventions.jsonl:2:"), "{err}");
    }

    #[test]
    fn non_increasing_steps_are_an_error() {
        let metrics = metrics_jsonl(&[step(3, 0.125, 0.5, 0, 0), step(3, 0.25, 0.5, 0, 0)]);
        let dir = write_dir(&info(), &metrics, None);
        assert!(matches!(load_run(dir.path()), Err(ReportError::Parse { line: 2, .. })));
    }

    #[test]
    fn missing_run_json_is_io_error_with_path() {
        let dir = tempfile::tempdir().unwrap();
        match load_run(dir.path()) {
            Err(ReportError::Io { path, .. }) => assert_eq!(path, dir.path().join(RUN_FILE)),
            other => panic!("expected io error, got {other:?}"),
        }
    }

    #[test]
    fn load_runs_under_finds_run_dirs_sorted() {
        let root = tempfile::tempdir().unwrap();
        for seed in [1, 0] {
            let run = fixtures::run(mentor(), seed, None, vec![step(0, 0.5, 0.5, 0, 0)], vec![]);
            fixtures::write_run_dir(root.path(), &run);
        }
        fs::create_dir(root.path().join("not-a-run")).unwrap();
        let runs = load_runs_under(root.path()).unwrap();
        assert_eq!(runs.iter().map(|r| r.info.seed).collect::<Vec<_>>(), vec![0, 1]);
    }
}
