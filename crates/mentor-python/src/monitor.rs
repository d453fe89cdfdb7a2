//! `CollapseMonitor` and `is_collapsed`: [`mentor_integration::CollapseMonitor`] and
//! [`mentor_integration::is_collapsed`] from Python.

use mentor_integration::{CollapseMonitor, GroupOutcome, MonitorConfig};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBool;
use serde_json::json;

use crate::convert;

/// The pass flags of `values`: Python bools (or numpy's) only. A number where a flag belongs
/// is most likely the old call `observe(rewards, group_size)`, and a reward must not be read
/// as correctness, so it is refused rather than converted.
fn pass_flags(name: &str, values: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
    let items: Vec<Bound<'_, PyAny>> = values
        .try_iter()
        .map_err(|_| PyValueError::new_err(format!("{name}: expected a sequence of bools")))?
        .collect::<PyResult<_>>()?;
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if let Ok(b) = v.cast::<PyBool>() {
                return Ok(b.is_true());
            }
            let ty = v.get_type();
            let kind = ty.name().map(|n| n.to_string()).unwrap_or_default();
            let module = ty.module().map(|m| m.to_string()).unwrap_or_default();
            if module == "numpy" && (kind == "bool" || kind == "bool_") {
                return v.is_truthy();
            }
            Err(PyValueError::new_err(format!(
                "{name}[{i}]: expected a bool (whether the attempt passed), got {kind}; rewards go in \
                 `rewards=`"
            )))
        })
        .collect()
}

/// Whether a group of attempts collapsed: none of them passed. `passed` holds each attempt's
/// binary correctness (`Verdict.correct`), never a shaped reward. The one predicate the
/// monitor, the trainers' rescue test and `MentorGRPOTrainer` share.
#[pyfunction]
pub fn is_collapsed(passed: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(mentor_integration::is_collapsed(pass_flags("passed", passed)?))
}

/// Per-step zero-reward fraction (ZRF), zero-std fraction and collapse events over a moving
/// window, as the trainer's monitor computes them. A group is collapsed when none of its
/// attempts passed, whatever partial credit its rewards give.
#[pyclass(name = "CollapseMonitor", module = "mentor_rl")]
pub struct PyCollapseMonitor {
    inner: CollapseMonitor,
    config: MonitorConfig,
}

#[pymethods]
impl PyCollapseMonitor {
    #[new]
    #[pyo3(signature = (*, window = 3, raise_above = 0.5, clear_below = 0.25))]
    fn py_new(window: usize, raise_above: f64, clear_below: f64) -> PyResult<Self> {
        if window == 0 {
            return Err(PyValueError::new_err("window must be at least 1"));
        }
        for (name, v) in [("raise_above", raise_above), ("clear_below", clear_below)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(PyValueError::new_err(format!("{name} must be in [0, 1], got {v}")));
            }
        }
        if clear_below > raise_above {
            return Err(PyValueError::new_err(format!(
                "clear_below ({clear_below}) must not exceed raise_above ({raise_above})"
            )));
        }
        let config = MonitorConfig { window, raise_above, clear_below };
        Ok(Self { inner: CollapseMonitor::new(config.clone()), config })
    }

    /// Records one step: `passed` says whether each unhinted attempt passed, group after group
    /// (`group_size` attempts per prompt, contiguous, as TRL orders them); `rewards` (optional,
    /// finite, same length) are their rewards, shaped or not, for `zero_std_frac` and
    /// `mean_reward` (default: 1.0 for a pass, 0.0 otherwise).
    #[pyo3(signature = (passed, group_size, *, rewards = None))]
    fn observe<'py>(
        &mut self,
        py: Python<'py>,
        passed: &Bound<'py, PyAny>,
        group_size: usize,
        rewards: Option<Vec<f64>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if group_size == 0 {
            return Err(PyValueError::new_err("group_size must be at least 1"));
        }
        let passed = pass_flags("passed", passed)?;
        if passed.is_empty() || !passed.len().is_multiple_of(group_size) {
            return Err(PyValueError::new_err(format!(
                "passed: {} values do not make whole groups of group_size {group_size}",
                passed.len()
            )));
        }
        let rewards = match rewards {
            Some(r) if r.len() != passed.len() => {
                return Err(PyValueError::new_err(format!(
                    "rewards: {} values for {} pass flags",
                    r.len(),
                    passed.len()
                )));
            }
            Some(r) => {
                if let Some(i) = r.iter().position(|x| !x.is_finite()) {
                    return Err(PyValueError::new_err(format!("rewards[{i}] = {} is not finite", r[i])));
                }
                r
            }
            None => passed.iter().map(|&p| if p { 1.0 } else { 0.0 }).collect(),
        };
        let groups = passed
            .chunks(group_size)
            .zip(rewards.chunks(group_size))
            .map(|(p, r)| GroupOutcome::new(r.to_vec(), p.to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let report = self.inner.observe_outcomes(&groups);
        let value = json!({
            "collapsed": report.collapsed,
            "zrf": report.zrf,
            "zero_std_frac": report.zero_std_frac,
            "mean_reward": report.mean_reward,
            "window_zrf": report.window_zrf,
            "event": report.event,
            "event_active": report.event.active(),
        });
        convert::to_py(py, &value)
    }

    /// Whether a collapse event is in force.
    #[getter]
    fn in_event(&self) -> bool {
        self.inner.state().in_event
    }

    /// Forgets the history (a fresh monitor with the same settings).
    fn reset(&mut self) {
        self.inner = CollapseMonitor::new(self.config.clone());
    }

    fn __repr__(&self) -> String {
        format!(
            "CollapseMonitor(window={}, raise_above={}, clear_below={})",
            self.config.window, self.config.raise_above, self.config.clear_below
        )
    }
}
