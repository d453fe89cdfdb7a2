//! `CollapseMonitor`: [`mentor_integration::CollapseMonitor`] from Python.

use mentor_core::{Completion, Feedback, Task, Verdict};
use mentor_integration::{CollapseMonitor, Group, MonitorConfig, Sample, Scored};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;

use crate::convert;

/// Per-step zero-reward fraction (ZRF), zero-std fraction and collapse events over a moving
/// window, as the trainer's monitor computes them.
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

    /// Records one step: `rewards` are the step's unhinted rewards, group after group
    /// (`group_size` completions per prompt, contiguous, as TRL orders them).
    fn observe<'py>(
        &mut self,
        py: Python<'py>,
        rewards: Vec<f64>,
        group_size: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        if group_size == 0 {
            return Err(PyValueError::new_err("group_size must be at least 1"));
        }
        if rewards.is_empty() || !rewards.len().is_multiple_of(group_size) {
            return Err(PyValueError::new_err(format!(
                "rewards: {} values do not make whole groups of group_size {group_size}",
                rewards.len()
            )));
        }
        let mut groups = Vec::with_capacity(rewards.len() / group_size);
        for (g, chunk) in rewards.chunks(group_size).enumerate() {
            let task = Task::math(format!("group/{g}"), "", "0");
            let samples = chunk
                .iter()
                .enumerate()
                .map(|(j, &r)| {
                    let verdict = Verdict::partial(r, Feedback::VerifierError { message: String::new() })
                        .map_err(|_| {
                            PyValueError::new_err(format!(
                                "rewards[{}] = {r} is not a finite number in [0, 1]",
                                g * group_size + j
                            ))
                        })?;
                    Ok(Scored {
                        sample: Sample {
                            completion: Completion::new(task.id.clone(), ""),
                            prefix_ids: Vec::new(),
                            ids: Vec::new(),
                            logprobs: Vec::new(),
                        },
                        verdict,
                    })
                })
                .collect::<PyResult<Vec<_>>>()?;
            groups.push(Group { task, samples });
        }
        let report = self.inner.observe(&groups);
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
