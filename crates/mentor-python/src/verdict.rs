//! `Verdict`: a [`mentor_core::Verdict`] seen from Python.

use mentor_core::{Feedback, Verdict};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert;

/// The judgement of one completion: `correct`, `reward` in [0, 1], the `extracted` answer and
/// the verifier's structured `feedback`.
#[pyclass(name = "Verdict", module = "mentor_rl", frozen)]
#[derive(Debug, Clone)]
pub struct PyVerdict {
    pub(crate) inner: Verdict,
}

impl PyVerdict {
    pub(crate) fn new(inner: Verdict) -> Self {
        Self { inner }
    }
}

/// The `feedback` object the CLI prints: `mentor verify math` prints the math feedback as it
/// is, `mentor verify code` the tagged feedback (`"domain": "code"`).
pub(crate) fn cli_feedback(verdict: &Verdict) -> serde_json::Result<serde_json::Value> {
    match verdict.feedback() {
        Feedback::Math(m) => serde_json::to_value(m),
        other => serde_json::to_value(other),
    }
}

#[pymethods]
impl PyVerdict {
    /// Whether the completion fully solved the task (reward 1).
    #[getter]
    fn correct(&self) -> bool {
        self.inner.passed()
    }

    /// The reward, finite and in [0, 1].
    #[getter]
    fn reward(&self) -> f64 {
        self.inner.reward()
    }

    /// The extracted final answer (math), or None.
    #[getter]
    fn extracted(&self) -> Option<String> {
        match self.inner.feedback() {
            Feedback::Math(m) => m.extracted.clone(),
            _ => None,
        }
    }

    /// The outcome name (`correct`, `wrong_value`, `passed`, `timeout`, ...; `verifier_error`
    /// when the verifier itself failed).
    #[getter]
    fn outcome(&self) -> String {
        let value = match self.inner.feedback() {
            Feedback::Math(m) => serde_json::to_value(m.outcome).ok(),
            Feedback::Code(c) => serde_json::to_value(c.outcome).ok(),
            Feedback::VerifierError { .. } => None,
        };
        value.and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_else(|| "verifier_error".into())
    }

    /// The verifier's evidence as a dict: the `feedback` object of `mentor verify math` /
    /// `mentor verify code` output lines.
    #[getter]
    fn feedback<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = cli_feedback(&self.inner)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("feedback: {e}")))?;
        convert::to_py(py, &value)
    }

    /// The whole verdict as a dict (`reward`, `passed`, `feedback` tagged with its `domain`),
    /// the form `Verdict.from_dict` reads back.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::ser_to_py(py, &self.inner)
    }

    /// A verdict from the dict `to_dict` returns (the invariants are checked: reward in
    /// [0, 1], passed only with reward 1).
    #[staticmethod]
    fn from_dict(data: &Bound<'_, PyDict>) -> PyResult<Self> {
        convert::de_from_py::<Verdict>(data.as_any(), "data").map(Self::new)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyVerdict>().is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "Verdict(correct={}, reward={}, outcome={:?}, extracted={:?})",
            if self.inner.passed() { "True" } else { "False" },
            self.inner.reward(),
            self.outcome(),
            self.extracted()
        )
    }
}
