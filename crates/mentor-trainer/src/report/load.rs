//! Reading training-run directories (`run.json`, `metrics.jsonl`, `eval.jsonl`) into [`RunData`].
//!
//! JSONL files are parsed line by line. A final line without a trailing newline that does not
//! parse (a run that crashed mid-write) is silently dropped; any other malformed line is a
//! [`ReportError::Parse`] naming the file and 1-based line number. Bare `NaN` / `Infinity`
//! tokens (as written by Python's `json` module) and `null` floats are read as `NaN`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use super::ReportError;

/// File name of the run metadata inside a run directory.
pub const RUN_FILE: &str = "run.json";
/// File name of the per-step training metrics inside a run directory.
pub const METRICS_FILE: &str = "metrics.jsonl";
/// File name of the evaluation results inside a run directory.
pub const EVAL_FILE: &str = "eval.jsonl";

/// One training step from `metrics.jsonl`. Float fields that are `null`, `NaN` or absent are `NaN`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StepRow {
    /// 0-based training step.
    pub step: u64,
    /// Curriculum level trained at this step, if recorded.
    #[serde(default)]
    pub level: Option<u32>,
    /// Mean unhinted reward over the step's samples.
    #[serde(default = "nan", deserialize_with = "nullable_f64")]
    pub reward: f64,
    /// Zero-reward fraction: share of groups in which every sample failed.
    #[serde(default = "nan", deserialize_with = "nullable_f64")]
    pub zrf: f64,
    /// Number of groups at this step.
    #[serde(default)]
    pub groups: u64,
    /// Groups that collapsed to all-zero reward.
    #[serde(default)]
    pub collapsed: u64,
    /// Collapsed groups on which the mentor intervened with a hint.
    #[serde(default)]
    pub intervened: u64,
    /// Intervened groups in which the hinted resample produced a non-zero reward.
    #[serde(default)]
    pub rescued: u64,
    /// Extra rollouts spent on interventions.
    #[serde(default)]
    pub extra_rollouts: u64,
    /// Hints rejected by the leakage guard.
    #[serde(default)]
    pub guard_rejections: u64,
    /// Training loss.
    #[serde(default = "nan", deserialize_with = "nullable_f64")]
    pub loss: f64,
    /// Gradient norm.
    #[serde(default = "nan", deserialize_with = "nullable_f64")]
    pub grad_norm: f64,
    /// Wall-clock seconds spent on the step.
    #[serde(default = "nan", deserialize_with = "nullable_f64")]
    pub seconds: f64,
    /// Hint levels used at this step and how often (keys are levels as strings).
    #[serde(default)]
    pub levels_used: BTreeMap<String, u64>,
}

/// One (evaluation step, level) row from `eval.jsonl`. Evaluation is unhinted; pass@1 is greedy.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EvalRow {
    /// Training step at which the evaluation ran.
    pub step: u64,
    /// Curriculum level evaluated.
    pub level: u32,
    /// Number of evaluation problems.
    #[serde(default)]
    pub n: u64,
    /// Greedy unhinted pass@1 (`NaN` when missing).
    #[serde(default = "nan", deserialize_with = "nullable_f64")]
    pub pass1: f64,
    /// `k` of pass@k, if recorded.
    #[serde(default)]
    pub k: Option<u32>,
    /// Unhinted pass@k (`NaN` when missing).
    #[serde(default = "nan", deserialize_with = "nullable_f64")]
    pub passk: f64,
}

/// Everything the report needs from one run directory.
#[derive(Debug, Clone, PartialEq)]
pub struct RunData {
    /// The run directory.
    pub dir: PathBuf,
    /// Run name, e.g. `mentor-s0`.
    pub name: String,
    /// Experiment arm, e.g. `mentor`, `vanilla`.
    pub arm: String,
    /// Seed of the run.
    pub seed: u64,
    /// Preset name, if recorded.
    pub preset: Option<String>,
    /// Step at which the curriculum jumps to the hard level (curriculum runs only).
    pub jump_step: Option<u64>,
    /// Level trained after the jump (curriculum runs only).
    pub hard_level: Option<u32>,
    /// Training steps, strictly increasing in `step`.
    pub steps: Vec<StepRow>,
    /// Evaluation rows in file order.
    pub evals: Vec<EvalRow>,
}

#[derive(Deserialize)]
struct RunMeta {
    name: String,
    arm: String,
    seed: u64,
    #[serde(default)]
    preset: Option<String>,
    #[serde(default)]
    jump_step: Option<u64>,
    #[serde(default)]
    hard_level: Option<u32>,
}

fn nan() -> f64 {
    f64::NAN
}

fn nullable_f64<'de, D: Deserializer<'de>>(de: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(de)?.unwrap_or(f64::NAN))
}

/// Loads one run directory. `run.json` and `metrics.jsonl` are required; a missing
/// `eval.jsonl` (run interrupted before its first evaluation) yields no eval rows.
pub fn load_run(dir: &Path) -> Result<RunData, ReportError> {
    let meta = load_meta(&dir.join(RUN_FILE))?;
    // A run that has not finished its first step yet has no metrics (nor evaluations): it is
    // a run with no rows, not an error that would sink the report of every other run.
    let metrics_path = dir.join(METRICS_FILE);
    let steps = read_jsonl_if_present::<StepRow>(&metrics_path)?;
    check_increasing(&metrics_path, &steps)?;
    let evals = read_jsonl_if_present::<EvalRow>(&dir.join(EVAL_FILE))?;
    Ok(RunData {
        dir: dir.to_path_buf(),
        name: meta.name,
        arm: meta.arm,
        seed: meta.seed,
        preset: meta.preset,
        jump_step: meta.jump_step,
        hard_level: meta.hard_level,
        steps: steps.into_iter().map(|(_, row)| row).collect(),
        evals: evals.into_iter().map(|(_, row)| row).collect(),
    })
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

fn load_meta(path: &Path) -> Result<RunMeta, ReportError> {
    let bytes = fs::read(path).map_err(|source| ReportError::Io { path: path.to_path_buf(), source })?;
    let text = String::from_utf8_lossy(&bytes);
    serde_json::from_str(&sanitize_non_finite(&text)).map_err(|e| ReportError::Parse {
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
    serde_json::from_str(&sanitize_non_finite(text)).map(Some).map_err(|e| e.to_string())
}

fn check_increasing(path: &Path, steps: &[(usize, StepRow)]) -> Result<(), ReportError> {
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

/// Replaces bare `NaN`, `Infinity` and `-Infinity` tokens outside JSON strings with `null`.
fn sanitize_non_finite(text: &str) -> Cow<'_, str> {
    if !text.contains("NaN") && !text.contains("Infinity") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut copied, mut i) = (false, false, 0, 0);
    let bytes = text.as_bytes();
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if let Some(token) =
            ["-Infinity", "Infinity", "NaN"].iter().find(|t| text[i..].starts_with(**t))
        {
            out.push_str(&text[copied..i]);
            out.push_str("null");
            i += token.len();
            copied = i;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = r#"{"name": "mentor-s0", "arm": "mentor", "seed": 0, "preset": "demo", "jump_step": 20, "hard_level": 4}"#;

    fn step_line(step: u64, reward: f64) -> String {
        format!(
            r#"{{"step":{step},"level":2,"reward":{reward},"zrf":0.25,"groups":8,"collapsed":2,"intervened":2,"rescued":1,"extra_rollouts":16,"guard_rejections":0,"loss":0.01,"grad_norm":0.3,"seconds":0.9,"levels_used":{{"3":2}},"future_field":[1,2]}}"#
        )
    }

    fn write_dir(run: &str, metrics: &str, eval: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(RUN_FILE), run).unwrap();
        fs::write(dir.path().join(METRICS_FILE), metrics).unwrap();
        if let Some(eval) = eval {
            fs::write(dir.path().join(EVAL_FILE), eval).unwrap();
        }
        dir
    }

    #[test]
    fn loads_good_dir_and_ignores_unknown_fields() {
        let metrics = format!("{}\n{}\n", step_line(0, 0.41), step_line(1, 0.5));
        let eval = "{\"step\":20,\"level\":4,\"n\":200,\"pass1\":0.05,\"k\":4,\"passk\":0.12,\"x\":1}\n";
        let dir = write_dir(RUN, &metrics, Some(eval));
        let run = load_run(dir.path()).unwrap();
        assert_eq!((run.name.as_str(), run.arm.as_str(), run.seed), ("mentor-s0", "mentor", 0));
        assert_eq!((run.jump_step, run.hard_level, run.preset.as_deref()), (Some(20), Some(4), Some("demo")));
        assert_eq!(run.steps.len(), 2);
        assert_eq!(run.steps[1].step, 1);
        assert_eq!(run.steps[0].reward, 0.41);
        assert_eq!(run.steps[0].intervened, 2);
        assert_eq!(run.steps[0].levels_used.get("3"), Some(&2));
        assert_eq!(run.evals.len(), 1);
        assert_eq!((run.evals[0].level, run.evals[0].k, run.evals[0].passk), (4, Some(4), 0.12));
    }

    #[test]
    fn null_curriculum_fields_and_missing_eval_file() {
        let run_json = r#"{"name": "v-s1", "arm": "vanilla", "seed": 1, "jump_step": null}"#;
        let dir = write_dir(run_json, "", None);
        let run = load_run(dir.path()).unwrap();
        assert_eq!((run.jump_step, run.hard_level), (None, None));
        assert!(run.steps.is_empty() && run.evals.is_empty());
    }

    #[test]
    fn trailing_partial_line_is_ignored() {
        let metrics = format!("{}\n{}\n{{\"step\":2,\"lev", step_line(0, 0.1), step_line(1, 0.2));
        let dir = write_dir(RUN, &metrics, Some("{\"step\":0,\"level\":1,\"pa"));
        let run = load_run(dir.path()).unwrap();
        assert_eq!(run.steps.len(), 2);
        assert!(run.evals.is_empty());
    }

    #[test]
    fn complete_final_line_without_newline_is_kept() {
        let metrics = format!("{}\n{}", step_line(0, 0.1), step_line(1, 0.2));
        let dir = write_dir(RUN, &metrics, None);
        assert_eq!(load_run(dir.path()).unwrap().steps.len(), 2);
    }

    #[test]
    fn bad_middle_line_names_file_and_line() {
        let metrics = format!("{}\n\n{{not json}}\n{}\n", step_line(0, 0.1), step_line(1, 0.2));
        let dir = write_dir(RUN, &metrics, None);
        match load_run(dir.path()) {
            Err(ReportError::Parse { path, line, .. }) => {
                assert_eq!(path, dir.path().join(METRICS_FILE));
                assert_eq!(line, 3);
            }
            other => panic!("expected parse error, got {other:?}"),
        }
        let err = load_run(dir.path()).unwrap_err().to_string();
        assert!(err.contains("metrics.jsonl") && err.contains(":3"), "{err}");
    }

    #[test]
    fn partial_line_followed_by_newline_is_an_error() {
        let metrics = format!("{}\n{{\"step\":1,\"lev\n", step_line(0, 0.1));
        let dir = write_dir(RUN, &metrics, None);
        assert!(matches!(load_run(dir.path()), Err(ReportError::Parse { line: 2, .. })));
    }

    #[test]
    fn non_increasing_steps_are_an_error() {
        let metrics = format!("{}\n{}\n", step_line(3, 0.1), step_line(3, 0.2));
        let dir = write_dir(RUN, &metrics, None);
        assert!(matches!(load_run(dir.path()), Err(ReportError::Parse { line: 2, .. })));
    }

    #[test]
    fn nan_tokens_and_nulls_become_nan() {
        let metrics = "{\"step\":0,\"reward\":NaN,\"zrf\":null,\"loss\":-Infinity,\"note\":\"NaN\"}\n";
        let dir = write_dir(RUN, metrics, None);
        let row = &load_run(dir.path()).unwrap().steps[0];
        assert!(row.reward.is_nan() && row.zrf.is_nan() && row.loss.is_nan() && row.grad_norm.is_nan());
        assert_eq!(sanitize_non_finite(r#"{"a":"NaN \" NaN","b":NaN}"#), r#"{"a":"NaN \" NaN","b":null}"#);
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
        for (sub, seed) in [("b", 1), ("a", 0)] {
            let d = root.path().join(sub);
            fs::create_dir(&d).unwrap();
            let meta = format!(r#"{{"name":"m-s{seed}","arm":"mentor","seed":{seed}}}"#);
            fs::write(d.join(RUN_FILE), meta).unwrap();
            fs::write(d.join(METRICS_FILE), step_line(0, 0.5)).unwrap();
        }
        fs::create_dir(root.path().join("not-a-run")).unwrap();
        let runs = load_runs_under(root.path()).unwrap();
        assert_eq!(runs.iter().map(|r| r.seed).collect::<Vec<_>>(), vec![0, 1]);
    }
}
