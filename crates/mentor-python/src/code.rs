//! `CodeSandbox`: [`mentor_verify_code::Sandbox`] and [`CodeVerifier`] from Python.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mentor_core::assets::AssetDir;
use mentor_core::{
    CodeHarness, CodePayload, IoCase, Payload, Task, TaskMeta, Verdict, Verifier, VerifierError,
};
use mentor_verify_code::{
    CodeVerifier, Format, Limits, RecordError, RewardMode, Sandbox, SandboxConfig, TaskRecord, VerifierConfig,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::math::MAX_THREADS;
use crate::verdict::PyVerdict;
use crate::{RuntimeMissingError, SandboxError};

/// The test formats, as `mentor verify code --format` names them.
const FORMATS: &str = "\"humaneval\", \"mbpp\" or \"stdio\"";

/// The Python argument that carries a record field, for error messages.
fn argument(field: &str) -> &str {
    match field {
        "test" | "test_list" => "tests",
        "test_setup_code" => "setup_code",
        "test_imports" => "imports",
        other => other,
    }
}

/// The harness of a code task from the Python arguments of `verify` (`tests` in the shape
/// `format` asks for), through the one [`TaskRecord`] conversion the CLI and `CodeReward` use;
/// errors name the argument.
pub(crate) fn harness(
    tests: &Bound<'_, PyAny>,
    format: &str,
    entry_point: Option<&str>,
    prompt: Option<&str>,
    setup_code: Option<&str>,
    imports: Option<Vec<String>>,
) -> PyResult<CodeHarness> {
    let format: Format = format
        .parse()
        .map_err(|_| PyValueError::new_err(format!("format: unknown format `{format}` (use {FORMATS})")))?;
    let no_str = |what: &str| {
        PyValueError::new_err(format!(
            "tests: for format=\"{}\" pass a list of {what}, not one string",
            format.name()
        ))
    };
    let mut record = TaskRecord {
        prompt: prompt.map(str::to_owned),
        entry_point: entry_point.map(str::to_owned),
        test_setup_code: setup_code.map(str::to_owned),
        test_imports: imports,
        ..TaskRecord::default()
    };
    match format {
        Format::HumanEval => {
            record.test = Some(tests.extract::<String>().map_err(|_| {
                PyValueError::new_err(
                    "tests: for format=\"humaneval\" pass the test code (a str defining check)",
                )
            })?);
        }
        Format::Mbpp => {
            if tests.cast::<PyString>().is_ok() {
                return Err(no_str("assert lines"));
            }
            record.test_list = Some(tests.extract().map_err(|_| {
                PyValueError::new_err("tests: for format=\"mbpp\" pass a list of assert lines (str)")
            })?);
        }
        Format::Stdio => {
            if tests.cast::<PyString>().is_ok() {
                return Err(no_str("cases"));
            }
            let list = tests.extract::<Vec<Bound<'_, PyAny>>>().map_err(|_| {
                PyValueError::new_err(
                    "tests: for format=\"stdio\" pass a list of {\"input\": str, \"output\": str} dicts or \
                     (input, output) pairs",
                )
            })?;
            record.cases = Some(
                list.iter().enumerate().map(|(i, case)| io_case(case, i)).collect::<PyResult<Vec<_>>>()?,
            );
        }
    }
    record.harness(format).map_err(|e| {
        let arg = argument(e.field());
        let why = match &e {
            RecordError::Missing { field: "prompt", .. } => {
                "prompt is required for format=\"humaneval\": the task's prompt (the signature the program \
                 continues and the helper functions its tests call)"
                    .to_string()
            }
            RecordError::Missing { format, .. } => format!("{arg} is required for format=\"{format}\""),
            RecordError::Invalid { reason, .. } => reason.clone(),
        };
        PyValueError::new_err(format!("{arg}: {why}"))
    })
}

fn io_case(case: &Bound<'_, PyAny>, i: usize) -> PyResult<IoCase> {
    let bad = || {
        PyValueError::new_err(format!(
            "tests[{i}]: a case is {{\"input\": str, \"output\": str}} or (input, output)"
        ))
    };
    if let Ok(d) = case.cast::<PyDict>() {
        let get =
            |k: &str| -> PyResult<String> { d.get_item(k)?.ok_or_else(bad)?.extract().map_err(|_| bad()) };
        return Ok(IoCase { input: get("input")?, output: get("output")? });
    }
    if let Ok(t) = case.cast::<PyTuple>() {
        if t.len() == 2 {
            return Ok(IoCase {
                input: t.get_item(0)?.extract().map_err(|_| bad())?,
                output: t.get_item(1)?.extract().map_err(|_| bad())?,
            });
        }
    }
    Err(bad())
}

/// A code task around `harness`.
pub(crate) fn code_task(
    id: String,
    question: String,
    harness: CodeHarness,
    reference: Option<String>,
) -> Task {
    let source = match harness {
        CodeHarness::HumanEval { .. } => "humaneval",
        CodeHarness::Mbpp { .. } => "mbpp",
        CodeHarness::Stdio { .. } => "stdio",
    };
    Task {
        id,
        prompt: if question.is_empty() { Vec::new() } else { vec![mentor_core::Message::user(question)] },
        payload: Payload::Code(CodePayload { harness, reference_solution: reference }),
        meta: TaskMeta { source: source.into(), level: None, subject: None },
    }
}

fn duration(secs: f64, what: &str) -> PyResult<Duration> {
    if !(secs.is_finite() && secs > 0.0) {
        return Err(PyValueError::new_err(format!(
            "{what} must be a positive number of seconds, got {secs}"
        )));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

/// Python's `verify` / `verify_many` error policy.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnError {
    Raise,
    Verdict,
}

fn on_error(errors: &str) -> PyResult<OnError> {
    match errors {
        "raise" => Ok(OnError::Raise),
        "verdict" => Ok(OnError::Verdict),
        other => Err(PyValueError::new_err(format!("errors: `{other}` is not \"raise\" or \"verdict\""))),
    }
}

fn sandbox_err(e: &VerifierError) -> PyErr {
    match e {
        VerifierError::Unsupported { .. } => PyValueError::new_err(format!("tests: {e}")),
        other => SandboxError::new_err(other.to_string()),
    }
}

/// Python in a wasmtime sandbox, judging programs against HumanEval, MBPP or stdin/stdout
/// tests, as `mentor verify code` does.
#[pyclass(name = "CodeSandbox", module = "mentor_rl", frozen)]
pub struct CodeSandbox {
    sandbox: Arc<Sandbox>,
    limits: Limits,
    reward: RewardMode,
    runtime: PathBuf,
}

impl CodeSandbox {
    fn verifier(&self) -> CodeVerifier<'_> {
        CodeVerifier::new(
            &self.sandbox,
            VerifierConfig { limits: Some(self.limits.clone()), reward: self.reward },
        )
    }
}

#[pymethods]
impl CodeSandbox {
    #[new]
    #[pyo3(signature = (
        *,
        assets = None,
        runtime = None,
        cache_dir = None,
        concurrency = 0,
        cpu_time = None,
        wall_time = None,
        memory_bytes = 256 << 20,
        stdout_bytes = 64 << 10,
        stderr_bytes = 64 << 10,
        max_memory_bytes = 1 << 30,
        reward = "binary",
    ))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        assets: Option<PathBuf>,
        runtime: Option<PathBuf>,
        cache_dir: Option<PathBuf>,
        concurrency: usize,
        cpu_time: Option<f64>,
        wall_time: Option<f64>,
        memory_bytes: usize,
        stdout_bytes: usize,
        stderr_bytes: usize,
        max_memory_bytes: usize,
        reward: &str,
    ) -> PyResult<Self> {
        let reward = match reward {
            "binary" => RewardMode::Binary,
            "fraction_passed" => RewardMode::FractionPassed,
            other => {
                return Err(PyValueError::new_err(format!(
                    "reward: `{other}` is not \"binary\" or \"fraction_passed\""
                )))
            }
        };
        // The defaults are the crate's: a CPU limit scaled from a native budget by the
        // sandbox's recorded slowdown (`mentor_verify_code::SANDBOX_SLOWDOWN`).
        let default = Limits::default();
        let limits = Limits {
            cpu_time: cpu_time.map_or(Ok(default.cpu_time), |s| duration(s, "cpu_time"))?,
            wall_time: wall_time.map_or(Ok(default.wall_time), |s| duration(s, "wall_time"))?,
            memory_bytes,
            stdout_bytes,
            stderr_bytes,
        };
        if concurrency > MAX_THREADS {
            return Err(PyValueError::new_err(format!(
                "concurrency must be at most {MAX_THREADS} (0: all cores), got {concurrency}"
            )));
        }
        if memory_bytes > max_memory_bytes {
            return Err(PyValueError::new_err(format!(
                "memory_bytes ({memory_bytes}) exceeds max_memory_bytes ({max_memory_bytes})"
            )));
        }
        // The CLI's discovery: MENTOR_HOME, else XDG_CACHE_HOME/mentor, else ~/.cache/mentor.
        let dir = match assets {
            Some(root) => Some(AssetDir::at(root)),
            None => AssetDir::resolve(|k| std::env::var(k).ok()),
        };
        let cache = cache_dir.or_else(|| dir.as_ref().map(AssetDir::compile_cache));
        let runtime = match (runtime, &dir) {
            (Some(rt), _) => rt,
            (None, Some(d)) => d.python_runtime(),
            (None, None) => {
                return Err(RuntimeMissingError::new_err(
                    "cannot locate the asset directory (MENTOR_HOME, XDG_CACHE_HOME and HOME are \
                     unset): pass assets= or runtime=, and run `cargo xtask setup`",
                ))
            }
        };
        let config = SandboxConfig {
            concurrency,
            limits: limits.clone(),
            max_memory_bytes,
            ..SandboxConfig::new(runtime, cache)
        };
        if !config.runtime.is_file() {
            return Err(RuntimeMissingError::new_err(format!(
                "the Python runtime component is missing at {}\nhint: run `cargo xtask setup` (or pass \
                 assets= / runtime=)",
                config.runtime.display()
            )));
        }
        let runtime = config.runtime.clone();
        let sandbox = py.detach(|| Sandbox::new(&config)).map_err(|e| match e {
            mentor_verify_code::Error::RuntimeMissing { .. } => RuntimeMissingError::new_err(e.to_string()),
            mentor_verify_code::Error::Config(_) => PyValueError::new_err(e.to_string()),
            other => SandboxError::new_err(format!(
                "cannot start the code sandbox from {}: {other}\nhint: run `cargo xtask setup` to \
                 rebuild the Python runtime",
                runtime.display()
            )),
        })?;
        Ok(Self { sandbox: Arc::new(sandbox), limits, reward, runtime })
    }

    /// The runtime component in use.
    #[getter]
    fn runtime(&self) -> PathBuf {
        self.runtime.clone()
    }

    /// How many programs run at once in `verify_many`.
    #[getter]
    fn concurrency(&self) -> usize {
        self.sandbox.concurrency()
    }

    /// Judges one program (a completion: code, or a markdown answer with a ```python block)
    /// against `tests` in `format`.
    #[pyo3(signature = (
        program,
        *,
        tests,
        format = "humaneval",
        entry_point = None,
        prompt = None,
        setup_code = None,
        imports = None,
        errors = "raise",
    ))]
    #[allow(clippy::too_many_arguments)]
    fn verify(
        &self,
        py: Python<'_>,
        program: String,
        tests: &Bound<'_, PyAny>,
        format: &str,
        entry_point: Option<&str>,
        prompt: Option<&str>,
        setup_code: Option<&str>,
        imports: Option<Vec<String>>,
        errors: &str,
    ) -> PyResult<PyVerdict> {
        let policy = on_error(errors)?;
        let h = harness(tests, format, entry_point, prompt, setup_code, imports)?;
        let task = code_task("python/0".into(), String::new(), h, None);
        let result = py.detach(|| self.verifier().verify(&task, &program));
        match result {
            Ok(v) => Ok(PyVerdict::new(v)),
            Err(e) if policy == OnError::Verdict => Ok(PyVerdict::new(Verdict::verifier_error(&e))),
            Err(e) => Err(sandbox_err(&e)),
        }
    }

    /// Judges many programs in parallel: `tests[i]` (and `entry_points[i]`, `prompts[i]`,
    /// `setup_codes[i]`, `imports[i]`) go with `programs[i]`; verdicts in input order.
    #[pyo3(signature = (
        programs,
        *,
        tests,
        format = "humaneval",
        entry_points = None,
        prompts = None,
        setup_codes = None,
        imports = None,
        errors = "raise",
    ))]
    #[allow(clippy::too_many_arguments)]
    fn verify_many(
        &self,
        py: Python<'_>,
        programs: Vec<String>,
        tests: Vec<Bound<'_, PyAny>>,
        format: &str,
        entry_points: Option<Vec<Option<String>>>,
        prompts: Option<Vec<Option<String>>>,
        setup_codes: Option<Vec<Option<String>>>,
        imports: Option<Vec<Option<Vec<String>>>>,
        errors: &str,
    ) -> PyResult<Vec<PyVerdict>> {
        let policy = on_error(errors)?;
        let n = programs.len();
        if tests.len() != n {
            return Err(PyValueError::new_err(format!(
                "tests must hold one entry per program ({} tests, {n} programs)",
                tests.len()
            )));
        }
        let per_program = |name: &str, len: Option<usize>| -> PyResult<()> {
            match len {
                Some(len) if len != n => Err(PyValueError::new_err(format!(
                    "{name} must hold one entry per program ({len} {}, {n} programs)",
                    name.replace('_', " ")
                ))),
                _ => Ok(()),
            }
        };
        per_program("entry_points", entry_points.as_ref().map(Vec::len))?;
        per_program("prompts", prompts.as_ref().map(Vec::len))?;
        per_program("setup_codes", setup_codes.as_ref().map(Vec::len))?;
        per_program("imports", imports.as_ref().map(Vec::len))?;
        let mut tasks = Vec::with_capacity(n);
        for (i, t) in tests.iter().enumerate() {
            let ep = entry_points.as_ref().and_then(|e| e[i].as_deref());
            let prompt = prompts.as_ref().and_then(|p| p[i].as_deref());
            let setup = setup_codes.as_ref().and_then(|s| s[i].as_deref());
            let imp = imports.as_ref().and_then(|m| m[i].clone());
            let h = harness(t, format, ep, prompt, setup, imp)
                .map_err(|e| PyValueError::new_err(format!("item {i}: {}", e.value(py))))?;
            tasks.push(code_task(format!("python/{i}"), String::new(), h, None));
        }
        let results = py.detach(|| {
            let items: Vec<(&Task, &str)> = tasks.iter().zip(programs.iter().map(String::as_str)).collect();
            self.verifier().verify_batch(&items)
        });
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| match r {
                Ok(v) => Ok(PyVerdict::new(v)),
                Err(e) if policy == OnError::Verdict => Ok(PyVerdict::new(Verdict::verifier_error(&e))),
                Err(e) => {
                    let err = sandbox_err(&e);
                    Err(PyErr::from_type(err.get_type(py), format!("item {i}: {}", err.value(py))))
                }
            })
            .collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "CodeSandbox(runtime={:?}, concurrency={}, cpu_time={}, wall_time={}, memory_bytes={})",
            self.runtime.display().to_string(),
            self.sandbox.concurrency(),
            self.limits.cpu_time.as_secs_f64(),
            self.limits.wall_time.as_secs_f64(),
            self.limits.memory_bytes
        )
    }
}
