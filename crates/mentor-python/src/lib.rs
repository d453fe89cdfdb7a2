//! Python bindings of MENTOR, built by maturin into the `mentor-rl` wheel and imported as
//! `mentor_rl` (this crate is its native part, `mentor_rl._native`).
//!
//! Every binding is a thin layer over the library crate that does the work, so Python and the
//! Rust trainer share one implementation:
//!
//! - `verify_math` → [`mentor_verify_math::check_batch`] (GIL released, rayon-parallel);
//! - `CodeSandbox` → [`mentor_verify_code::Sandbox`] and [`mentor_verify_code::CodeVerifier`];
//! - `Mentor`, `StaticHints`, `Refinement` → [`mentor_agents::AgentMentor`] (backends `rules`
//!   and `llm`) and the baselines, with the same guard the trainer builds; `Mentor("self")`
//!   and `MentorSession` → [`mentor_agents::MentorSession`] (the `llm` prompts answered by the
//!   caller's own model);
//! - `CollapseMonitor` → [`mentor_integration::CollapseMonitor`], `is_collapsed` →
//!   [`mentor_integration::is_collapsed`] (collapse = no attempt passed);
//! - `MentorStep` → [`mentor_integration::MentorStep`], the MENTOR step's state machine
//!   (which groups get hints, the hinted prompts, escalation, assembly and credit; the levels
//!   it starts at from a `HintMemory` → [`mentor_integration::HintMemory`]), driven by
//!   `MentorGRPOTrainer` through TRL's generation; `_plugin_process` runs
//!   [`mentor_integration::Plugin::process`] over a scripted rollout (the tests' reference);
//! - `Verdict` wraps [`mentor_core::Verdict`]; its `feedback` is the `feedback` object that
//!   `mentor verify math` / `mentor verify code` print.
//!
//! Errors: bad arguments raise `ValueError` naming the argument; failures of the machinery
//! raise `mentor_rl.SandboxError` / `mentor_rl.MentorError` (both `mentor_rl.MentorRlError`)
//! carrying the Rust message. No code path here panics on user input.
//!
//! The crate depends on the library crates only (never `mentor-trainer`). It is tested from
//! Python: `cargo xtask python` builds the wheel, installs it into a fresh venv and runs
//! `crates/mentor-python/tests/*.py`.
#![deny(missing_docs)]

mod code;
mod convert;
mod math;
mod mentor;
mod monitor;
mod step;
mod verdict;

use pyo3::prelude::*;

pyo3::create_exception!(
    mentor_rl,
    MentorRlError,
    pyo3::exceptions::PyException,
    "Base class of the errors raised by mentor_rl's machinery (not by bad arguments)."
);
pyo3::create_exception!(
    mentor_rl,
    SandboxError,
    MentorRlError,
    "The code sandbox could not run (runtime missing or corrupt, engine failure, unjudgeable task)."
);
pyo3::create_exception!(
    mentor_rl,
    RuntimeMissingError,
    SandboxError,
    "The sandbox's Python runtime component is not installed: run `cargo xtask setup`."
);
pyo3::create_exception!(
    mentor_rl,
    MentorError,
    MentorRlError,
    "The mentor could not run (unreadable prompt templates, backend failure without fallback)."
);

/// The native module `mentor_rl._native`.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MentorRlError", py.get_type::<MentorRlError>())?;
    m.add("SandboxError", py.get_type::<SandboxError>())?;
    m.add("RuntimeMissingError", py.get_type::<RuntimeMissingError>())?;
    m.add("MentorError", py.get_type::<MentorError>())?;
    m.add_class::<verdict::PyVerdict>()?;
    m.add_function(wrap_pyfunction!(math::verify_math, m)?)?;
    m.add_function(wrap_pyfunction!(math::math_equivalent, m)?)?;
    m.add_class::<code::CodeSandbox>()?;
    m.add_class::<mentor::PyMentor>()?;
    m.add_class::<mentor::PyMentorSession>()?;
    m.add_class::<mentor::PyStaticHints>()?;
    m.add_class::<mentor::PyRefinement>()?;
    m.add_class::<monitor::PyCollapseMonitor>()?;
    m.add_function(wrap_pyfunction!(monitor::is_collapsed, m)?)?;
    m.add_class::<step::PyMentorStep>()?;
    m.add_class::<step::PyHintMemory>()?;
    m.add_class::<step::PyAsk>()?;
    m.add_class::<step::PyHintedRequest>()?;
    m.add_class::<step::PyPlanRow>()?;
    m.add_class::<step::PyStepPlan>()?;
    m.add_function(wrap_pyfunction!(step::_plugin_process, m)?)?;
    Ok(())
}
