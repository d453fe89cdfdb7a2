//! `Mentor`, `StaticHints`, `Refinement`: [`mentor_agents`] behind one Python call,
//! `intervene(task, attempts, verdicts, *, level=None, previous_hints=None)`; and
//! `MentorSession`, the `self` backend's intervention driven by a caller that writes the
//! mentor's replies with its own model ([`mentor_agents::MentorSession`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mentor_agents::llm::{FallbackCounter, LlmConfig};
use mentor_agents::{AgentMentor, Guard, GuardConfig, MentorSession, Prompts, Refinement, StaticHints};
use mentor_core::{
    Attempt, Completion, Hint, HintLevel, Intervention, MathPayload, Mentor, MentorRequest, Message, Payload,
    Task, TaskMeta,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::json;

use crate::convert;
use crate::verdict::PyVerdict;
use crate::MentorError;
use mentor_verify_math::MathEquivalence;

fn guard(max_hint_chars: usize, max_code_overlap: f64, redact: bool) -> PyResult<Guard> {
    if max_hint_chars == 0 {
        return Err(PyValueError::new_err("max_hint_chars must be at least 1"));
    }
    if !(0.0..=1.0).contains(&max_code_overlap) {
        return Err(PyValueError::new_err(format!(
            "max_code_overlap must be in [0, 1], got {max_code_overlap}"
        )));
    }
    Ok(Guard::new(
        GuardConfig { max_chars: max_hint_chars, max_reference_overlap: max_code_overlap, redact },
        Arc::new(MathEquivalence::default()),
    ))
}

fn prompts(dir: Option<PathBuf>) -> PyResult<Prompts> {
    match dir {
        None => Ok(Prompts::default()),
        // The crate keeps the embedded default for a missing file; a missing folder is a typo.
        Some(d) if !d.is_dir() => {
            Err(PyValueError::new_err(format!("prompts: {} is not a directory", d.display())))
        }
        Some(d) => Prompts::load_dir(&d).map_err(|e| PyValueError::new_err(format!("prompts: {e}"))),
    }
}

fn get_str(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<String>> {
    match d.get_item(key)? {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => v
            .extract::<String>()
            .map(Some)
            .map_err(|_| PyValueError::new_err(format!("task[{key:?}] must be a str"))),
    }
}

/// A task from Python: a full task dict (with `payload`, as the Rust `Task` serialises), a
/// math dict `{"question", "answer", "solution"?, "id"?}` (a GSM8K answer with its `####` line
/// is split into rationale and gold, as the GSM8K loader does), or a code dict
/// `{"question"?, "tests", "format"?, "entry_point"?, "prompt"?, "setup_code"?, "imports"?,
/// "reference_solution"?, "id"?}` (the fields of `CodeSandbox.verify`; HumanEval needs `prompt`).
pub(crate) fn task_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Task> {
    let d = obj.cast::<PyDict>().map_err(|_| PyValueError::new_err("task must be a dict"))?;
    if d.contains("payload")? {
        return convert::de_from_py(obj, "task");
    }
    let id = get_str(d, "id")?.unwrap_or_else(|| "python/task".into());
    let question = get_str(d, "question")?.unwrap_or_default();
    if let Some(tests) = d.get_item("tests")? {
        let format = get_str(d, "format")?.unwrap_or_else(|| "humaneval".into());
        let entry_point = get_str(d, "entry_point")?;
        let prompt = get_str(d, "prompt")?;
        let setup_code = get_str(d, "setup_code")?;
        let imports: Option<Vec<String>> = match d.get_item("imports")? {
            Some(v) if !v.is_none() => Some(
                v.extract().map_err(|_| PyValueError::new_err("task[\"imports\"] must be a list of str"))?,
            ),
            _ => None,
        };
        let harness = crate::code::harness(
            &tests,
            &format,
            entry_point.as_deref(),
            prompt.as_deref(),
            setup_code.as_deref(),
            imports,
        )
        .map_err(|e| PyValueError::new_err(format!("task: {}", e.value(obj.py()))))?;
        let question = if question.is_empty() { prompt.unwrap_or_default() } else { question };
        return Ok(crate::code::code_task(id, question, harness, get_str(d, "reference_solution")?));
    }
    let Some(answer) = get_str(d, "answer")? else {
        return Err(PyValueError::new_err(
            "task needs an \"answer\" (math), \"tests\" (code) or a \"payload\" (a serialised task)",
        ));
    };
    let mut solution = get_str(d, "solution")?;
    let gold = match answer.rfind("####") {
        Some(pos) => {
            if solution.is_none() {
                solution = Some(answer[..pos].trim_end().to_owned()).filter(|s| !s.is_empty());
            }
            answer[pos + 4..].trim().to_owned()
        }
        None => answer.trim().to_owned(),
    };
    if gold.is_empty() {
        return Err(PyValueError::new_err("task[\"answer\"] is empty"));
    }
    Ok(Task {
        id,
        prompt: vec![Message::user(question)],
        payload: Payload::Math(MathPayload { answer: gold, solution }),
        meta: TaskMeta { source: "python".into(), level: None, subject: None },
    })
}

/// What one `intervene` call asks about: the task, the failed group, the level and the hints
/// already given.
struct Asked {
    task: Task,
    group: Vec<Attempt>,
    level: HintLevel,
    previous: Vec<Hint>,
}

/// Checks `intervene`'s arguments; None when an attempt passed (nothing to intervene on).
fn asked(
    task: &Bound<'_, PyAny>,
    attempts: Vec<String>,
    verdicts: Vec<Bound<'_, PyAny>>,
    level: Option<u8>,
    previous_hints: Option<Vec<Bound<'_, PyAny>>>,
) -> PyResult<Option<Asked>> {
    let task = task_from_py(task)?;
    if attempts.is_empty() {
        return Err(PyValueError::new_err("attempts is empty: the mentor reads a group of failed attempts"));
    }
    if attempts.len() != verdicts.len() {
        return Err(PyValueError::new_err(format!(
            "attempts and verdicts differ in length ({} attempts, {} verdicts)",
            attempts.len(),
            verdicts.len()
        )));
    }
    let mut group = Vec::with_capacity(attempts.len());
    for (i, (text, v)) in attempts.into_iter().zip(verdicts.iter()).enumerate() {
        let verdict = match v.cast::<PyVerdict>() {
            Ok(pv) => pv.get().inner.clone(),
            Err(_) => match v.cast::<PyDict>() {
                Ok(d) => convert::de_from_py(d.as_any(), &format!("verdicts[{i}]"))?,
                Err(_) => {
                    return Err(PyValueError::new_err(format!(
                        "verdicts[{i}] must be a Verdict (or the dict Verdict.to_dict returns)"
                    )))
                }
            },
        };
        group.push(Attempt { completion: Completion::new(task.id.clone(), text), verdict });
    }
    let level = match level {
        None => mentor_integration::InterventionConfig::default().start_level,
        Some(l) => HintLevel::try_from(l)
            .map_err(|_| PyValueError::new_err(format!("level must be 1, 2 or 3 (or None), got {l}")))?,
    };
    let previous: Vec<Hint> = match previous_hints {
        None => Vec::new(),
        Some(list) => list
            .iter()
            .enumerate()
            .map(|(i, h)| convert::de_from_py(h, &format!("previous_hints[{i}]")))
            .collect::<PyResult<_>>()?,
    };
    if group.iter().any(|a| a.verdict.passed()) {
        return Ok(None);
    }
    Ok(Some(Asked { task, group, level, previous }))
}

/// One `intervene` call on any mentor: checks the arguments, runs the mentor with the GIL
/// released, and returns the result dict (or None when an attempt passed).
fn intervene<'py>(
    py: Python<'py>,
    mentor: &dyn Mentor,
    task: &Bound<'py, PyAny>,
    attempts: Vec<String>,
    verdicts: Vec<Bound<'py, PyAny>>,
    level: Option<u8>,
    previous_hints: Option<Vec<Bound<'py, PyAny>>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(a) = asked(task, attempts, verdicts, level, previous_hints)? else {
        return Ok(None);
    };
    let request =
        MentorRequest { task: &a.task, attempts: &a.group, level: a.level, previous_hints: &a.previous };
    let result = py.detach(|| mentor.intervene(&request)).map_err(|e| MentorError::new_err(e.to_string()))?;
    convert::to_py(py, &intervention_json(mentor.name(), &result)).map(Some)
}

/// The dict `intervene` returns.
fn intervention_json(name: &str, iv: &Intervention) -> serde_json::Value {
    let outcome = match (&iv.hint, iv.redactions.is_empty()) {
        (None, _) => "rejected",
        (Some(_), true) => "accepted",
        (Some(_), false) => "redacted",
    };
    json!({
        "mentor": name,
        "diagnosis": iv.diagnosis,
        "hint": iv.hint,
        "guard": {"outcome": outcome, "redactions": iv.redactions, "rejections": iv.rejections},
    })
}

/// How a [`PyMentor`] writes its hints.
enum Backend {
    /// `rules` or `llm`: an [`AgentMentor`] (the `llm` one with its fallback counter).
    Agent(Arc<AgentMentor>, Option<Arc<FallbackCounter>>),
    /// `self`: the `llm` role prompts, answered by the caller's model through sessions.
    Learner { prompts: Arc<Prompts>, guard: Guard, fallbacks: Arc<AtomicUsize> },
}

/// The mentor the Rust trainer uses: diagnoser → tutor → guard, on the `rules` backend, an
/// OpenAI-compatible `llm` endpoint (falling back to rules), or `self` (the `llm` prompts
/// answered by the caller's own model, the learner, through [`PyMentorSession`]s).
#[pyclass(name = "Mentor", module = "mentor_rl", frozen)]
pub struct PyMentor {
    inner: Backend,
    backend: String,
}

#[pymethods]
impl PyMentor {
    #[new]
    #[pyo3(signature = (
        backend = "rules",
        *,
        base_url = None,
        model = None,
        api_key_env = None,
        prompts = None,
        max_hint_chars = 2000,
        max_code_overlap = 0.5,
        redact = true,
        timeout = 60.0,
        retries = 2,
        concurrency = 4,
        temperature = None,
        max_tokens = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        backend: &str,
        base_url: Option<String>,
        model: Option<String>,
        api_key_env: Option<String>,
        prompts: Option<PathBuf>,
        max_hint_chars: usize,
        max_code_overlap: f64,
        redact: bool,
        timeout: f64,
        retries: u32,
        concurrency: usize,
        temperature: Option<f32>,
        max_tokens: Option<u32>,
    ) -> PyResult<Self> {
        let guard = guard(max_hint_chars, max_code_overlap, redact)?;
        let templates = self::prompts(prompts)?;
        if backend != "llm" {
            for (name, given) in [
                ("base_url", base_url.is_some()),
                ("model", model.is_some()),
                ("api_key_env", api_key_env.is_some()),
                ("temperature", temperature.is_some()),
                ("max_tokens", max_tokens.is_some()),
            ] {
                if given {
                    return Err(PyValueError::new_err(format!("{name} is only read by backend=\"llm\"")));
                }
            }
        }
        let inner = match backend {
            "rules" => Backend::Agent(Arc::new(AgentMentor::rules_with(templates, guard)), None),
            "self" => Backend::Learner {
                prompts: Arc::new(templates),
                guard,
                fallbacks: Arc::new(AtomicUsize::new(0)),
            },
            "llm" => {
                let base_url = base_url.ok_or_else(|| {
                    PyValueError::new_err(
                        "base_url is required for backend=\"llm\" (e.g. \"http://127.0.0.1:8080/v1\")",
                    )
                })?;
                if !(timeout.is_finite() && timeout > 0.0) {
                    return Err(PyValueError::new_err(format!(
                        "timeout must be a positive number of seconds, got {timeout}"
                    )));
                }
                if concurrency == 0 {
                    return Err(PyValueError::new_err("concurrency must be at least 1"));
                }
                let api_key = match &api_key_env {
                    None => None,
                    Some(var) => Some(std::env::var(var).map_err(|_| {
                        PyValueError::new_err(format!(
                            "api_key_env: the environment variable {var} is not set"
                        ))
                    })?),
                };
                let defaults = LlmConfig::default();
                let config = LlmConfig {
                    base_url,
                    model: model.unwrap_or(defaults.model.clone()),
                    api_key,
                    timeout: Duration::try_from_secs_f64(timeout)
                        .map_err(|e| PyValueError::new_err(format!("timeout: {e}")))?,
                    retries,
                    max_concurrency: concurrency,
                    temperature: temperature.unwrap_or(defaults.temperature),
                    max_tokens: max_tokens.unwrap_or(defaults.max_tokens),
                    ..defaults
                };
                let (inner, fallbacks) = mentor_agents::llm::mentor(config, templates, guard);
                Backend::Agent(Arc::new(inner), Some(fallbacks))
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "backend: `{other}` is not \"rules\", \"llm\" or \"self\""
                )))
            }
        };
        Ok(Self { inner, backend: backend.to_owned() })
    }

    /// The backend (`rules`, `llm` or `self`).
    #[getter]
    fn backend(&self) -> String {
        self.backend.clone()
    }

    /// Whether the hints are written by the caller's own model (`self`): a trainer drives
    /// such a mentor through `begin` instead of `intervene`.
    #[getter]
    fn writes_with_learner(&self) -> bool {
        matches!(self.inner, Backend::Learner { .. })
    }

    /// How many diagnoser/tutor steps fell back to rules: the `llm` endpoint failed, or (for
    /// `self`) a reply could not be parsed. Always 0 for `rules`.
    #[getter]
    fn fallbacks(&self) -> usize {
        match &self.inner {
            Backend::Agent(_, f) => f.as_ref().map_or(0, |f| f.get()),
            Backend::Learner { fallbacks, .. } => fallbacks.load(Ordering::Relaxed),
        }
    }

    /// Diagnoses a failed group and writes a guarded hint; see the stub for the result. The
    /// `self` backend needs `generate` (messages → reply text), called once per model turn.
    #[pyo3(signature = (task, attempts, verdicts, *, level = None, previous_hints = None, generate = None))]
    #[allow(clippy::too_many_arguments)]
    fn intervene<'py>(
        &self,
        py: Python<'py>,
        task: &Bound<'py, PyAny>,
        attempts: Vec<String>,
        verdicts: Vec<Bound<'py, PyAny>>,
        level: Option<u8>,
        previous_hints: Option<Vec<Bound<'py, PyAny>>>,
        generate: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        match (&self.inner, generate) {
            (Backend::Agent(m, _), None) => {
                intervene(py, &**m, task, attempts, verdicts, level, previous_hints)
            }
            (Backend::Agent(..), Some(_)) => {
                Err(PyValueError::new_err("generate is only read by backend=\"self\""))
            }
            (Backend::Learner { .. }, None) => Err(PyValueError::new_err(
                "backend=\"self\" writes with the caller's model: pass generate=<a callable from a list of \
                 {\"role\", \"content\"} messages to the reply text>, or drive it with begin() (as \
                 mentor_rl.trl.MentorGRPOTrainer does)",
            )),
            (Backend::Learner { .. }, Some(generate)) => {
                let Some(session) = self.begin(task, attempts, verdicts, level, previous_hints)? else {
                    return Ok(None);
                };
                let mut session = session;
                while let Some(messages) = session.prompt(py)? {
                    let reply = generate.call1((messages,))?;
                    let reply = reply
                        .extract::<String>()
                        .map_err(|_| PyValueError::new_err("generate must return the reply text (a str)"))?;
                    session.answer(&reply)?;
                }
                session.result(py).map(Some)
            }
        }
    }

    /// A session for the `self` backend: the intervention as a sequence of prompts the caller
    /// answers (`prompt`, `answer`, `result`); None when an attempt passed.
    #[pyo3(signature = (task, attempts, verdicts, *, level = None, previous_hints = None))]
    fn begin(
        &self,
        task: &Bound<'_, PyAny>,
        attempts: Vec<String>,
        verdicts: Vec<Bound<'_, PyAny>>,
        level: Option<u8>,
        previous_hints: Option<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<Option<PyMentorSession>> {
        let Backend::Learner { prompts, guard, fallbacks } = &self.inner else {
            return Err(PyValueError::new_err(format!(
                "begin: only backend=\"self\" is driven by sessions; call intervene on backend={:?}",
                self.backend
            )));
        };
        let Some(a) = asked(task, attempts, verdicts, level, previous_hints)? else {
            return Ok(None);
        };
        let inner = MentorSession::new(prompts.clone(), guard.clone(), a.task, a.group, a.level, a.previous)
            .map_err(|e| MentorError::new_err(e.to_string()))?;
        Ok(Some(PyMentorSession { inner, counted: 0, fallbacks: fallbacks.clone() }))
    }

    fn __repr__(&self) -> String {
        format!("Mentor(backend={:?})", self.backend)
    }
}

/// One failed group's intervention by a `self` mentor: answer each `prompt()` with the
/// model's reply until `done`, then read `result()`.
#[pyclass(name = "MentorSession", module = "mentor_rl")]
pub struct PyMentorSession {
    inner: MentorSession,
    /// Fallbacks already added to the mentor's counter.
    counted: usize,
    fallbacks: Arc<AtomicUsize>,
}

#[pymethods]
impl PyMentorSession {
    /// The conversation to answer next (a list of `{"role", "content"}` dicts), or None when
    /// the session is over.
    fn prompt<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.inner.prompt() {
            None => Ok(None),
            Some(messages) => convert::to_py(py, &json!(messages)).map(Some),
        }
    }

    /// Takes the model's reply to `prompt()`. A reply without a usable JSON object is replaced
    /// by the rules agent's step (counted in `fallbacks`); MentorError after the session ended.
    fn answer(&mut self, reply: &str) -> PyResult<()> {
        let out = self.inner.answer(reply).map_err(|e| MentorError::new_err(e.to_string()));
        let new = self.inner.fallbacks() - self.counted;
        self.fallbacks.fetch_add(new, Ordering::Relaxed);
        self.counted = self.inner.fallbacks();
        out
    }

    /// Whether the session is over.
    #[getter]
    fn done(&self) -> bool {
        self.inner.is_done()
    }

    /// Replies taken so far.
    #[getter]
    fn turns(&self) -> usize {
        self.inner.turns()
    }

    /// Replies replaced by the rules agent's step.
    #[getter]
    fn fallbacks(&self) -> usize {
        self.inner.fallbacks()
    }

    /// The dict `Mentor.intervene` returns (`"mentor": "self"`); MentorError before the
    /// session is over.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let iv = self.inner.result().ok_or_else(|| {
            MentorError::new_err("result: the session is not over (answer its prompt first)")
        })?;
        convert::to_py(py, &intervention_json("self", iv))
    }

    fn __repr__(&self) -> String {
        format!(
            "MentorSession(task={:?}, turns={}, done={})",
            self.inner.task().id,
            self.inner.turns(),
            self.inner.is_done()
        )
    }
}

impl PyMentor {
    /// The Rust mentor, shared; None for `self` (its hints are written by the caller's model).
    pub(crate) fn shared(&self) -> Option<Arc<dyn Mentor>> {
        match &self.inner {
            Backend::Agent(m, _) => Some(m.clone()),
            Backend::Learner { .. } => None,
        }
    }
}

impl PyStaticHints {
    /// The Rust mentor, shared.
    pub(crate) fn shared(&self) -> Arc<dyn Mentor> {
        self.inner.clone()
    }
}

impl PyRefinement {
    /// The Rust mentor, shared.
    pub(crate) fn shared(&self) -> Arc<dyn Mentor> {
        self.inner.clone()
    }
}

/// The static-hints baseline: a generic hint per domain, drawn without diagnosis.
#[pyclass(name = "StaticHints", module = "mentor_rl", frozen)]
pub struct PyStaticHints {
    inner: Arc<StaticHints>,
}

#[pymethods]
impl PyStaticHints {
    #[new]
    #[pyo3(signature = (seed = 0, *, prompts = None))]
    fn py_new(seed: u64, prompts: Option<PathBuf>) -> PyResult<Self> {
        Ok(Self { inner: Arc::new(StaticHints::with_prompts(self::prompts(prompts)?, seed)) })
    }

    /// Same call and result as `Mentor.intervene` (no diagnosis).
    #[pyo3(signature = (task, attempts, verdicts, *, level = None, previous_hints = None))]
    fn intervene<'py>(
        &self,
        py: Python<'py>,
        task: &Bound<'py, PyAny>,
        attempts: Vec<String>,
        verdicts: Vec<Bound<'py, PyAny>>,
        level: Option<u8>,
        previous_hints: Option<Vec<Bound<'py, PyAny>>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        intervene(py, &*self.inner, task, attempts, verdicts, level, previous_hints)
    }
}

/// The refinement baseline: one failed answer and its feedback shown back, guarded.
#[pyclass(name = "Refinement", module = "mentor_rl", frozen)]
pub struct PyRefinement {
    inner: Arc<Refinement>,
}

#[pymethods]
impl PyRefinement {
    #[new]
    #[pyo3(signature = (*, quote_chars = 200, max_hint_chars = 2000, max_code_overlap = 0.5, redact = true))]
    fn py_new(
        quote_chars: usize,
        max_hint_chars: usize,
        max_code_overlap: f64,
        redact: bool,
    ) -> PyResult<Self> {
        Ok(Self {
            inner: Arc::new(Refinement::new(guard(max_hint_chars, max_code_overlap, redact)?, quote_chars)),
        })
    }

    /// Same call and result as `Mentor.intervene` (no diagnosis).
    #[pyo3(signature = (task, attempts, verdicts, *, level = None, previous_hints = None))]
    fn intervene<'py>(
        &self,
        py: Python<'py>,
        task: &Bound<'py, PyAny>,
        attempts: Vec<String>,
        verdicts: Vec<Bound<'py, PyAny>>,
        level: Option<u8>,
        previous_hints: Option<Vec<Bound<'py, PyAny>>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        intervene(py, &*self.inner, task, attempts, verdicts, level, previous_hints)
    }
}
