//! `MentorStep`: [`mentor_integration::MentorStep`], the MENTOR step's state machine, driven
//! from Python (by `MentorGRPOTrainer`); and `_plugin_process`, [`mentor_integration::Plugin`]'s
//! own step over a scripted rollout, for the test that both paths make the same batch.

use std::sync::Arc;

use mentor_core::{
    Completion, FinishReason, Hint, HintLevel, Intervention, MathPayload, Mentor, Message, Payload, Role,
    Task, TaskMeta, Verifier,
};
use mentor_integration::{
    Ask, HintedRequest, InterventionConfig, MentorStep, MonitorConfig, Need, Outcome, PlanRow, Plugin,
    Rollout, RowPrompt, RowSource, Sample, SampleRequest, Scored, StepGroup, StepPlan, Strategy,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::json;

use crate::convert;
use crate::mentor::{task_from_py, PyMentor, PyRefinement, PyStaticHints};
use crate::verdict::PyVerdict;

/// Where a group's prompt came from in Python, to give the hinted prompt back in its shape.
enum Shape {
    /// A plain string (one user message to the hint format).
    Text,
    /// Chat messages ending with a user message whose content is a string.
    LastUser(Py<PyAny>),
    /// Chat messages ending otherwise (the hint comes as a new user message).
    Append(Py<PyAny>),
}

/// A Python prompt as the messages the hint format reads: only the last message matters to
/// [`mentor_integration::HintFormat::apply`] (it changes the last user message or appends
/// one), so it stands in for the whole list.
fn stand_in(prompt: &Bound<'_, PyAny>) -> PyResult<(Vec<Message>, Shape)> {
    if let Ok(s) = prompt.cast::<PyString>() {
        return Ok((vec![Message::user(s.to_cow()?.into_owned())], Shape::Text));
    }
    let list = prompt
        .cast::<PyList>()
        .map_err(|_| PyValueError::new_err("prompt: expected a str or a list of messages"))?;
    let last = match list.len() {
        0 => None,
        n => Some(list.get_item(n - 1)?),
    };
    if let Some(last) = last.as_ref().and_then(|m| m.cast::<PyDict>().ok()) {
        let role = last.get_item("role")?;
        let content = last.get_item("content")?;
        if let (Some(role), Some(content)) = (role, content) {
            if role.extract::<String>().ok().as_deref() == Some("user") {
                if let Ok(text) = content.extract::<String>() {
                    return Ok((vec![Message::user(text)], Shape::LastUser(prompt.clone().unbind())));
                }
            }
        }
    }
    Ok((vec![Message::system(String::new())], Shape::Append(prompt.clone().unbind())))
}

/// The hinted messages `hinted` (from `stand_in`'s messages) back in the prompt's shape.
fn shaped<'py>(py: Python<'py>, shape: &Shape, hinted: &[Message]) -> PyResult<Bound<'py, PyAny>> {
    let last = hinted.last().map(|m| m.content.clone()).unwrap_or_default();
    match shape {
        Shape::Text => Ok(PyString::new(py, &last).into_any()),
        Shape::LastUser(orig) => {
            let orig = orig.bind(py).cast::<PyList>()?.clone();
            let out = PyList::empty(py);
            let n = orig.len();
            for (i, m) in orig.iter().enumerate() {
                if i + 1 == n {
                    let copy = m.cast::<PyDict>()?.copy()?;
                    copy.set_item("content", &last)?;
                    out.append(copy)?;
                } else {
                    out.append(m)?;
                }
            }
            Ok(out.into_any())
        }
        Shape::Append(orig) => {
            let out = PyList::empty(py);
            for m in orig.bind(py).cast::<PyList>()?.iter() {
                out.append(m)?;
            }
            // A blank hint leaves the prompt as it is: nothing appended.
            if hinted.len() > 1 && hinted.last().is_some_and(|m| m.role == Role::User) {
                let msg = PyDict::new(py);
                msg.set_item("role", "user")?;
                msg.set_item("content", &last)?;
                out.append(msg)?;
            }
            Ok(out.into_any())
        }
    }
}

/// A `ValueError` from the state machine's error.
fn invalid(e: mentor_integration::Error) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The intervention settings: the JSON of the Rust trainer's `[strategy.intervention]`.
fn config_from_py(obj: &Bound<'_, PyAny>) -> PyResult<InterventionConfig> {
    convert::de_from_py(obj, "intervention")
}

fn level_from(l: u8, what: &str) -> PyResult<HintLevel> {
    HintLevel::try_from(l).map_err(|_| PyValueError::new_err(format!("{what} must be 1, 2 or 3, got {l}")))
}

/// The mentor's verdicts of a group, as `Verdict`s or their dicts.
fn verdicts_from_py(list: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<mentor_core::Verdict>> {
    let mut out = Vec::new();
    for (i, v) in list.try_iter()?.enumerate() {
        let v = v?;
        let verdict = match v.cast::<PyVerdict>() {
            Ok(pv) => pv.get().inner.clone(),
            Err(_) => convert::de_from_py(&v, &format!("{what}[{i}]"))?,
        };
        out.push(verdict);
    }
    Ok(out)
}

fn get<'py>(d: &Bound<'py, PyDict>, key: &str, what: &str) -> PyResult<Bound<'py, PyAny>> {
    d.get_item(key)?.ok_or_else(|| PyValueError::new_err(format!("{what}: missing {key:?}")))
}

/// One group of `MentorStep(groups=...)`.
fn group_from_py(k: usize, obj: &Bound<'_, PyAny>) -> PyResult<(StepGroup, Shape)> {
    let what = format!("groups[{k}]");
    let d = obj.cast::<PyDict>().map_err(|_| PyValueError::new_err(format!("{what}: expected a dict")))?;
    let (prompt, shape) = stand_in(&get(d, "prompt", &what)?)
        .map_err(|e| PyValueError::new_err(format!("{what}: {}", e.value(obj.py()))))?;
    let rewards: Vec<f64> = get(d, "rewards", &what)?
        .extract()
        .map_err(|_| PyValueError::new_err(format!("{what}: rewards must be a list of numbers")))?;
    let mut task = match d.get_item("task")? {
        Some(t) if !t.is_none() => task_from_py(&t)?,
        _ => Task {
            id: format!("python/group-{k}"),
            prompt: Vec::new(),
            payload: Payload::Math(MathPayload { answer: String::new(), solution: None }),
            meta: TaskMeta::default(),
        },
    };
    task.prompt = prompt;
    let attempts = match (d.get_item("attempts")?, d.get_item("verdicts")?) {
        (Some(a), Some(v)) if !a.is_none() && !v.is_none() => {
            let texts: Vec<String> = a
                .extract()
                .map_err(|_| PyValueError::new_err(format!("{what}: attempts must be a list of str")))?;
            let verdicts = verdicts_from_py(&v, &format!("{what}.verdicts"))?;
            if texts.len() != verdicts.len() {
                return Err(PyValueError::new_err(format!(
                    "{what}: {} attempts and {} verdicts",
                    texts.len(),
                    verdicts.len()
                )));
            }
            texts
                .into_iter()
                .zip(verdicts)
                .map(|(text, verdict)| mentor_core::Attempt {
                    completion: Completion::new(task.id.clone(), text),
                    verdict,
                })
                .collect()
        }
        _ => Vec::new(),
    };
    Ok((StepGroup { task, attempts, rewards }, shape))
}

/// One hint request of `MentorStep.asks()`: ask the mentor about group `group`'s failed
/// attempts at `level`, with the hints it was already shown (`previous_hints`, dicts).
#[pyclass(name = "StepAsk", module = "mentor_rl", frozen, get_all)]
pub struct PyAsk {
    /// The intervention (the index of its record).
    intervention: usize,
    /// The group in the step.
    group: usize,
    /// The hint level to ask for.
    level: u8,
    /// The hints shown before, as dicts (what `Mentor.intervene(previous_hints=...)` takes).
    previous_hints: Py<PyAny>,
}

/// One hinted prompt of `MentorStep.requests()`: sample `n` completions of `prompt` (the
/// group's prompt with the hint placed, in the prompt's own shape: str or messages), each
/// forced to start with `assistant_prefix` when there is one.
#[pyclass(name = "HintedRequest", module = "mentor_rl", frozen, get_all)]
pub struct PyHintedRequest {
    /// The attempt's index among the step's hinted attempts.
    attempt: usize,
    /// The intervention it belongs to.
    intervention: usize,
    /// The group in the step.
    group: usize,
    /// The hint's level.
    level: u8,
    /// The hint, as a dict.
    hint: Py<PyAny>,
    /// The hinted prompt.
    prompt: Py<PyAny>,
    /// The forced start of the answer (`prefix` credit), or None.
    assistant_prefix: Option<String>,
    /// Completions to sample.
    n: usize,
}

/// One row of the assembled batch, by reference (`MentorStep.finish().rows`).
#[pyclass(name = "PlanRow", module = "mentor_rl", frozen, get_all)]
pub struct PyPlanRow {
    /// The row's group in the batch.
    group: usize,
    /// The step's group it stands for (an unhinted row's group, or the hinted attempt's).
    source_group: usize,
    /// The hinted attempt its completion comes from; None: the unhinted group's sample.
    attempt: Option<usize>,
    /// The sample (of the unhinted group, or of the attempt).
    sample: usize,
    /// Whether its prompt is the attempt's hinted prompt (else the group's own prompt).
    hinted_prompt: bool,
    /// Whether the forced prefix (the hint's worked steps) is part of the completion, in the
    /// loss; else it stays in the context after the prompt.
    prefix_in_loss: bool,
    /// Whether the behaviour log-probs are the hinted sampling log-probs (`stripped_is`).
    behaviour: bool,
    /// The row's reward.
    reward: f64,
    /// The fixed baseline of its advantage (`prefix` credit), or None (group-relative).
    baseline: Option<f64>,
    /// The hint level it was sampled with, or None.
    hint_level: Option<u8>,
    /// Whether the row belongs to a group that replaces or joins a rescued one.
    rescued: bool,
}

impl PyPlanRow {
    fn of(r: &PlanRow, requests: &[(usize, usize)]) -> Self {
        let (source_group, attempt, sample) = match r.completion {
            RowSource::Unhinted { group, sample } => (group, None, sample),
            RowSource::Hinted { attempt, sample } => {
                (requests.get(attempt).map_or(usize::MAX, |a| a.1), Some(attempt), sample)
            }
        };
        Self {
            group: r.group,
            source_group,
            attempt,
            sample,
            hinted_prompt: matches!(r.prompt, RowPrompt::Hinted { .. }),
            prefix_in_loss: r.prefix_in_loss,
            behaviour: r.behaviour,
            reward: r.reward,
            baseline: r.baseline,
            hint_level: r.hint_level.map(HintLevel::get),
            rescued: r.rescued,
        }
    }
}

/// What `MentorStep.finish()` returns: the rows, the number of groups, one record per
/// intervened group (dicts, as the Rust trainer logs them) and the counts (a dict).
#[pyclass(name = "StepPlan", module = "mentor_rl", frozen, get_all)]
pub struct PyStepPlan {
    /// The rows, groups contiguous.
    rows: Py<PyAny>,
    /// Groups in the batch.
    groups: usize,
    /// One record per intervened group.
    interventions: Py<PyAny>,
    /// The rescued groups' indices in the step, in order.
    rescued_groups: Vec<usize>,
    /// `intervened`, `rescued`, `levels_used`, `guard_rejections`, `extra_rollouts`, `hints`.
    counts: Py<PyAny>,
}

/// The per-task hint memory the Rust trainer keeps (`mentor_integration::HintMemory`): the
/// level that last rescued each task, where its next intervention starts, dropping by one after
/// `fade_after` steps in which the task's group had a correct attempt. Pass one object to every
/// step's `MentorStep(memory=...)`; the step reads its starting levels and records its rescues
/// and the tasks solved unhinted, as the Rust plugin does.
#[pyclass(name = "HintMemory", module = "mentor_rl")]
pub struct PyHintMemory {
    inner: mentor_integration::HintMemory,
}

#[pymethods]
impl PyHintMemory {
    #[new]
    #[pyo3(signature = (fade_after = 1))]
    fn py_new(fade_after: u32) -> Self {
        Self { inner: mentor_integration::HintMemory::new(fade_after) }
    }

    /// The level remembered for `task_id` (1-3), or None.
    fn level(&self, task_id: &str) -> Option<u8> {
        self.inner.level(task_id).map(HintLevel::get)
    }

    /// The resumable state: `{task_id: entry}` dicts, as the Rust checkpoint keeps them.
    fn state(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(convert::ser_to_py(py, &self.inner.state())?.unbind())
    }

    /// Continues from a saved `state()`.
    fn restore(&mut self, state: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.restore(convert::de_from_py(state, "state")?);
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!("HintMemory({} tasks)", self.inner.len())
    }
}

/// The MENTOR step of one batch, as the Rust trainer takes it (`mentor_integration::MentorStep`):
/// the collapsed groups in; the hints to ask for; the hinted prompts to sample; their outcomes
/// back; escalation rounds; then the assembled rows and their credit.
///
/// `intervention` is the Rust trainer's `[strategy.intervention]` as a dict;
/// `groups` one dict per group of the batch: `prompt` (a str or chat messages), `rewards`,
/// and for a collapsed group `attempts` (texts), `verdicts` and `task` (a mentor task dict);
/// `collapsed` the collapsed groups' indices (the monitor's), `event_active` the collapse
/// event, `max_level` the top escalation level. With `memory` (a `HintMemory`), every group
/// not collapsed counts as its task solved unhinted, each task's first level is the memory's,
/// and `finish()` records the rescues: then give every group a `task` with its `id`, since the
/// memory is keyed by it.
#[pyclass(name = "MentorStep", module = "mentor_rl")]
pub struct PyMentorStep {
    inner: Option<MentorStep>,
    shapes: Vec<Shape>,
    /// Every request handed out: (attempt, group).
    requests: Vec<(usize, usize)>,
    /// The hint memory the step reads and records into, and each group's task id.
    memory: Option<(Py<PyHintMemory>, Vec<String>)>,
}

impl PyMentorStep {
    fn machine(&self) -> PyResult<&MentorStep> {
        self.inner.as_ref().ok_or_else(|| PyValueError::new_err("MentorStep: already finished"))
    }
    fn machine_mut(&mut self) -> PyResult<&mut MentorStep> {
        self.inner.as_mut().ok_or_else(|| PyValueError::new_err("MentorStep: already finished"))
    }
}

#[pymethods]
impl PyMentorStep {
    #[new]
    #[pyo3(signature = (intervention, groups, collapsed, *, event_active = false, max_level = 3, memory = None))]
    fn py_new(
        intervention: &Bound<'_, PyAny>,
        groups: Vec<Bound<'_, PyAny>>,
        collapsed: Vec<usize>,
        event_active: bool,
        max_level: u8,
        memory: Option<Bound<'_, PyHintMemory>>,
    ) -> PyResult<Self> {
        let config = config_from_py(intervention)?;
        let top = level_from(max_level, "max_level")?;
        let mut step_groups = Vec::with_capacity(groups.len());
        let mut shapes = Vec::with_capacity(groups.len());
        for (k, g) in groups.iter().enumerate() {
            let (sg, shape) = group_from_py(k, g)?;
            step_groups.push(sg);
            shapes.push(shape);
        }
        let ids: Vec<String> = step_groups.iter().map(|g| g.task.id.clone()).collect();
        let inner = match &memory {
            Some(m) => {
                let mut m = m.borrow_mut();
                // As `Plugin::process`: a group with a correct attempt is its task solved
                // unhinted, before any start level is read.
                for (k, id) in ids.iter().enumerate() {
                    if !collapsed.contains(&k) {
                        m.inner.solved_unhinted(id);
                    }
                }
                MentorStep::new(config, step_groups, &collapsed, event_active, &m.inner, top)
            }
            None => {
                let fresh = mentor_integration::HintMemory::new(config.memory_fade_after);
                MentorStep::new(config, step_groups, &collapsed, event_active, &fresh, top)
            }
        }
        .map_err(invalid)?;
        Ok(Self {
            inner: Some(inner),
            shapes,
            requests: Vec::new(),
            memory: memory.map(|m| (m.unbind(), ids)),
        })
    }

    /// What the step needs: `"hints"`, `"samples"` or `"done"`.
    #[getter]
    fn need(&self) -> PyResult<&'static str> {
        Ok(match self.machine()?.need() {
            Need::Hints(_) => "hints",
            Need::Samples(_) => "samples",
            Need::Done => "done",
        })
    }

    /// The escalation round under way (1-based).
    #[getter]
    fn round(&self) -> PyResult<usize> {
        Ok(self.machine()?.round())
    }

    /// The hints to ask for now (empty unless `need == "hints"`), in order.
    fn asks(&self, py: Python<'_>) -> PyResult<Vec<PyAsk>> {
        let Need::Hints(asks) = self.machine()?.need() else { return Ok(Vec::new()) };
        asks.iter()
            .map(|a: &Ask| {
                Ok(PyAsk {
                    intervention: a.intervention,
                    group: a.group,
                    level: a.level.get(),
                    previous_hints: convert::ser_to_py(py, &a.previous_hints)?.unbind(),
                })
            })
            .collect()
    }

    /// The mentor's results for `asks()`, in order: the dicts `Mentor.intervene` returns (or
    /// a `MentorSession.result()`), or None when the mentor had nothing to say.
    fn answer(&mut self, answers: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        let mut out = Vec::with_capacity(answers.len());
        for (i, a) in answers.iter().enumerate() {
            if a.is_none() {
                out.push(None);
                continue;
            }
            let what = format!("answers[{i}]");
            let d = a
                .cast::<PyDict>()
                .map_err(|_| PyValueError::new_err(format!("{what}: expected a dict or None")))?;
            let field = |key: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
                Ok(d.get_item(key)?.filter(|v| !v.is_none()))
            };
            let guard = field("guard")?;
            let guard = guard
                .as_ref()
                .map(|g| g.cast::<PyDict>())
                .transpose()
                .map_err(|_| PyValueError::new_err(format!("{what}[\"guard\"]: expected a dict")))?;
            let from_guard = |key: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
                match guard {
                    Some(g) => Ok(g.get_item(key)?.filter(|v| !v.is_none())),
                    None => Ok(None),
                }
            };
            out.push(Some(Intervention {
                diagnosis: field("diagnosis")?
                    .map(|v| convert::de_from_py(&v, &format!("{what}[\"diagnosis\"]")))
                    .transpose()?,
                hint: field("hint")?
                    .map(|v| convert::de_from_py::<Hint>(&v, &format!("{what}[\"hint\"]")))
                    .transpose()?,
                rejections: from_guard("rejections")?
                    .map(|v| convert::de_from_py(&v, &format!("{what}[\"guard\"][\"rejections\"]")))
                    .transpose()?
                    .unwrap_or_default(),
                redactions: from_guard("redactions")?
                    .map(|v| convert::de_from_py(&v, &format!("{what}[\"guard\"][\"redactions\"]")))
                    .transpose()?
                    .unwrap_or_default(),
            }));
        }
        self.machine_mut()?.answer(out).map_err(invalid)
    }

    /// The hinted prompts to sample now (empty unless `need == "samples"`), in order.
    fn requests(&mut self, py: Python<'_>) -> PyResult<Vec<PyHintedRequest>> {
        let Need::Samples(reqs) = self.machine()?.need() else { return Ok(Vec::new()) };
        let mut out = Vec::with_capacity(reqs.len());
        let mut seen = Vec::with_capacity(reqs.len());
        for r in reqs {
            let r: &HintedRequest = r;
            let shape = self.shapes.get(r.group).ok_or_else(|| PyValueError::new_err("no such group"))?;
            out.push(PyHintedRequest {
                attempt: r.attempt,
                intervention: r.intervention,
                group: r.group,
                level: r.hint.level.get(),
                hint: convert::ser_to_py(py, &r.hint)?.unbind(),
                prompt: shaped(py, shape, &r.prompt)?.unbind(),
                assistant_prefix: r.assistant_prefix.clone(),
                n: r.n,
            });
            seen.push((r.attempt, r.group));
        }
        for s in seen {
            if s.0 == self.requests.len() {
                self.requests.push(s);
            }
        }
        Ok(out)
    }

    /// The outcomes of `requests()`: per request, each completion's reward and whether it is
    /// correct (what rescues a group).
    fn feed(&mut self, rewards: Vec<Vec<f64>>, passed: Vec<Vec<bool>>) -> PyResult<()> {
        if rewards.len() != passed.len() || rewards.iter().zip(&passed).any(|(r, p)| r.len() != p.len()) {
            return Err(PyValueError::new_err("feed: rewards and passed differ in shape"));
        }
        let outcomes = rewards
            .into_iter()
            .zip(passed)
            .map(|(r, p)| r.into_iter().zip(p).map(|(reward, passed)| Outcome { reward, passed }).collect())
            .collect();
        self.machine_mut()?.feed(outcomes).map_err(invalid)
    }

    /// The assembled batch (after `need == "done"`); the step cannot be used after.
    fn finish(&mut self, py: Python<'_>) -> PyResult<PyStepPlan> {
        let step = self.inner.take().ok_or_else(|| PyValueError::new_err("MentorStep: already finished"))?;
        let plan: StepPlan = match step.finish() {
            Ok(p) => p,
            Err(e) => return Err(invalid(e)),
        };
        if let Some((memory, ids)) = &self.memory {
            let mut memory = memory.borrow_mut(py);
            for r in &plan.rescues {
                if let Some(id) = ids.get(r.group) {
                    memory.inner.rescued(id, r.hint.level);
                }
            }
        }
        let rows = PyList::empty(py);
        for r in &plan.rows {
            rows.append(Py::new(py, PyPlanRow::of(r, &self.requests))?)?;
        }
        Ok(PyStepPlan {
            rows: rows.into_any().unbind(),
            groups: plan.groups,
            interventions: convert::ser_to_py(py, &plan.interventions)?.unbind(),
            rescued_groups: plan.rescues.iter().map(|r| r.group).collect(),
            counts: convert::ser_to_py(py, &plan.counts)?.unbind(),
        })
    }

    fn __repr__(&self) -> String {
        match &self.inner {
            None => "MentorStep(finished)".into(),
            Some(s) => format!("MentorStep(round={}, need={:?})", s.round(), self.need().unwrap_or("?")),
        }
    }
}

/// The Rust mentor behind a Python mentor object.
fn rust_mentor(obj: &Bound<'_, PyAny>) -> PyResult<Arc<dyn Mentor>> {
    if let Ok(m) = obj.cast::<PyMentor>() {
        return m.get().shared().ok_or_else(|| {
            PyValueError::new_err("mentor: Mentor(\"self\") writes with a model; this entry runs no model")
        });
    }
    if let Ok(m) = obj.cast::<PyStaticHints>() {
        return Ok(m.get().shared());
    }
    if let Ok(m) = obj.cast::<PyRefinement>() {
        return Ok(m.get().shared());
    }
    Err(PyValueError::new_err("mentor: expected a Mentor, StaticHints or Refinement"))
}

/// A rollout that answers from a Python policy, as the fake TRL's generation does:
/// `policy(rows) -> completions`, one text per row, each row the prompt's last message with
/// the forced prefix after it; tokens are characters (as the fake TRL's tokenizer).
struct Script<'py> {
    policy: Bound<'py, PyAny>,
    /// Every request sampled: (prompt text, assistant prefix, n).
    seen: Vec<(String, Option<String>, usize)>,
}

fn char_ids(text: &str) -> Vec<u32> {
    text.chars().map(u32::from).collect()
}

impl Rollout for Script<'_> {
    fn sample(&mut self, req: &SampleRequest<'_>) -> Result<Vec<Sample>, mentor_integration::RolloutError> {
        let key = req.prompt.last().map(|m| m.content.clone()).unwrap_or_default();
        self.seen.push((key.clone(), req.assistant_prefix.map(str::to_owned), req.n));
        let prefix = req.assistant_prefix.unwrap_or("");
        let rows = vec![format!("{key}{prefix}"); req.n];
        let texts: Vec<String> =
            self.policy.call1((rows,)).and_then(|out| out.extract()).map_err(|e| format!("policy: {e}"))?;
        if texts.len() != req.n {
            return Err(format!("policy: {} completions for {} rows", texts.len(), req.n).into());
        }
        Ok(texts
            .into_iter()
            .map(|text| Sample {
                completion: Completion {
                    task_id: req.task.id.clone(),
                    text: text.clone(),
                    finish_reason: FinishReason::Stop,
                },
                prefix_ids: char_ids(prefix),
                ids: char_ids(&text),
                logprobs: vec![0.0; text.chars().count()],
            })
            .collect())
    }
}

fn text_of(ids: &[u32]) -> String {
    ids.iter().filter_map(|&i| char::from_u32(i)).collect()
}

/// The Rust trainer's own step (`Plugin::process`, a fresh plug-in with the `intervention`
/// settings) over scripted completions, judged by the math verifier: the reference the
/// Python trainer's step is tested against. `groups`: one dict per group, `task` (a math task
/// dict) and `completions` (its unhinted texts); `policy(rows) -> texts` answers the hinted
/// prompts (each row: the hinted prompt's last message, then the forced prefix). Returns the rows (`prompt` messages,
/// `context` and `completion` texts, `given_tokens`, `behaviour`, `reward`, `baseline`,
/// `group`, `hint_level`), the sampled requests and the intervention records. With `steps`
/// above 1 the same plug-in processes the same groups that many times (its hint memory and
/// collapse monitor carry over), and what is returned is the last step's.
#[pyfunction]
#[pyo3(signature = (mentor, intervention, groups, policy, *, monitor = None, steps = 1))]
#[allow(clippy::too_many_arguments)]
pub fn _plugin_process<'py>(
    py: Python<'py>,
    mentor: &Bound<'py, PyAny>,
    intervention: &Bound<'py, PyAny>,
    groups: Vec<Bound<'py, PyAny>>,
    policy: Bound<'py, PyAny>,
    monitor: Option<(usize, f64, f64)>,
    steps: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let config = config_from_py(intervention)?;
    let verifier = mentor_verify_math::MathVerifier::default();
    let mut tasks = Vec::with_capacity(groups.len());
    let mut texts = Vec::with_capacity(groups.len());
    for (k, g) in groups.iter().enumerate() {
        let d =
            g.cast::<PyDict>().map_err(|_| PyValueError::new_err(format!("groups[{k}]: expected a dict")))?;
        tasks.push(task_from_py(&get(d, "task", &format!("groups[{k}]"))?)?);
        let t: Vec<String> = get(d, "completions", &format!("groups[{k}]"))?.extract()?;
        texts.push(t);
    }
    let mut input = Vec::with_capacity(tasks.len());
    for (task, ts) in tasks.iter().zip(&texts) {
        let samples = ts
            .iter()
            .map(|t| {
                let verdict = verifier.verify(task, t).map_err(|e| PyValueError::new_err(e.to_string()))?;
                let sample = Sample {
                    completion: Completion {
                        task_id: task.id.clone(),
                        text: t.clone(),
                        finish_reason: FinishReason::Stop,
                    },
                    prefix_ids: Vec::new(),
                    ids: char_ids(t),
                    logprobs: vec![0.0; t.chars().count()],
                };
                Ok(Scored { sample, verdict })
            })
            .collect::<PyResult<Vec<_>>>()?;
        input.push(mentor_integration::Group { task: task.clone(), samples });
    }
    let monitor = match monitor {
        Some((window, raise_above, clear_below)) => MonitorConfig { window, raise_above, clear_below },
        None => MonitorConfig::default(),
    };
    let mentor = rust_mentor(mentor)?;
    let mut plugin = Plugin::new(Strategy::Intervene { mentor: Box::new(Shared(mentor)), config }, monitor);
    let mut rollout = Script { policy, seen: Vec::new() };
    for _ in 1..steps.max(1) {
        plugin
            .process(input.clone(), &mut rollout, &verifier, None)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    let before = rollout.seen.len();
    let out = plugin
        .process(input, &mut rollout, &verifier, None)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let rows: Vec<serde_json::Value> = out
        .rows
        .iter()
        .map(|r| {
            json!({
                "task_id": r.task_id,
                "group": r.group,
                "prompt": r.prompt,
                "context": text_of(&r.context_ids),
                "completion": text_of(&r.completion_ids),
                "given_tokens": r.given_tokens,
                "behaviour": r.behaviour_logprobs.is_some(),
                "reward": r.reward,
                "baseline": r.baseline,
                "hint_level": r.hint_level.map(HintLevel::get),
            })
        })
        .collect();
    let requests: Vec<serde_json::Value> = rollout.seen[before..]
        .iter()
        .map(|(p, prefix, n)| json!({"prompt": p, "assistant_prefix": prefix, "n": n}))
        .collect();
    convert::to_py(
        py,
        &json!({
            "rows": rows,
            "requests": requests,
            "interventions": out.interventions,
            "metrics": out.metrics,
        }),
    )
}

/// A shared mentor, boxed for [`Strategy::Intervene`].
struct Shared(Arc<dyn Mentor>);

impl Mentor for Shared {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn intervene(
        &self,
        request: &mentor_core::MentorRequest<'_>,
    ) -> Result<mentor_core::Intervention, mentor_core::MentorError> {
        self.0.intervene(request)
    }
}
