//! `verify_math` and `math_equivalent`: [`mentor_verify_math`] from Python.

use mentor_verify_math::Config;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::verdict::PyVerdict;

/// The most threads (or sandbox workers) a call may ask for: beyond it the request is a
/// mistake, and starting that many threads could exhaust the machine.
pub(crate) const MAX_THREADS: usize = 1024;

/// Judges `completions[i]` against `golds[i]` on all cores (or `threads`), with the GIL
/// released; verdicts in input order. `questions[i]`, when given, is the question the
/// completion answers: its words may name what the answer counts ("42 pencils"), see
/// [`mentor_verify_math::check_with_question`].
#[pyfunction]
#[pyo3(signature = (golds, completions, *, threads = None, questions = None))]
pub fn verify_math(
    py: Python<'_>,
    golds: Vec<String>,
    completions: Vec<String>,
    threads: Option<usize>,
    questions: Option<Vec<Option<String>>>,
) -> PyResult<Vec<PyVerdict>> {
    if golds.len() != completions.len() {
        return Err(PyValueError::new_err(format!(
            "golds and completions differ in length ({} golds, {} completions)",
            golds.len(),
            completions.len()
        )));
    }
    if let Some(q) = questions.as_ref().filter(|q| q.len() != golds.len()) {
        return Err(PyValueError::new_err(format!(
            "questions and golds differ in length ({} questions, {} golds)",
            q.len(),
            golds.len()
        )));
    }
    if threads.is_some_and(|n| n == 0 || n > MAX_THREADS) {
        return Err(PyValueError::new_err(format!(
            "threads must be between 1 and {MAX_THREADS} (or None for all cores)"
        )));
    }
    let verdicts = py.detach(|| {
        let items: Vec<(&str, &str, Option<&str>)> = golds
            .iter()
            .zip(&completions)
            .enumerate()
            .map(|(k, (g, c))| {
                let q = questions.as_ref().and_then(|q| q[k].as_deref());
                (g.as_str(), c.as_str(), q)
            })
            .collect();
        let cfg = Config::default();
        match threads {
            None => Ok(mentor_verify_math::check_batch_with_questions(&items, &cfg)),
            Some(n) => rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map(|pool| pool.install(|| mentor_verify_math::check_batch_with_questions(&items, &cfg)))
                .map_err(|e| format!("cannot start {n} threads: {e}")),
        }
    });
    let verdicts = verdicts.map_err(crate::MentorRlError::new_err)?;
    Ok(verdicts.into_iter().map(PyVerdict::new).collect())
}

/// Whether two answers (not completions) denote the same value: the check the mentor's
/// guard uses to find leaks (`\frac{1}{2}` and `0.5`).
#[pyfunction]
pub fn math_equivalent(reference: &str, candidate: &str) -> bool {
    mentor_verify_math::equivalent(reference, candidate, &Config::default())
}
