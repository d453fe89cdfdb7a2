//! Test harnesses: turn a program plus its tests into [`CodeFeedback`].
//!
//! Assert-based suites (HumanEval, MBPP) run inside the guest's judging harness (`judge` in
//! `runner.wit`), one test at a time, and come back as a JSON report that must echo a per-run
//! secret the candidate never sees; anything else (no report, a wrong secret, an early exit)
//! is [`CodeOutcome::Tampered`]. Stdin/stdout suites run the program once per case in a fresh
//! instance and compare whitespace-normalised output on the host.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use mentor_core::{CodeFeedback, CodeOutcome, ExceptionInfo, FailedTest, IoCase};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::sandbox::{Execution, Exit};
use crate::{Error, Limits, Result, Sandbox};

/// An assert-based test suite.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Suite<'a> {
    /// `check(candidate)` from HumanEval's `test`, called on `entry_point`. The tests' side
    /// also runs the task's `prompt` (its helpers, e.g. HumanEval/38's `encode_cyclic`), never
    /// the completion.
    HumanEval { prompt: &'a str, test: &'a str, entry_point: &'a str },
    /// MBPP's assert lines, one test each.
    Mbpp { tests: &'a [String] },
}

/// A fresh 128-bit secret (hex) per run: OS-seeded hasher keys, the clock and a counter,
/// through sha256. The candidate cannot observe any of them.
pub(crate) fn new_secret() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut h = Sha256::new();
    for k in 0..2u64 {
        h.update(RandomState::new().hash_one((n, k, nanos)).to_le_bytes());
    }
    h.update(n.to_le_bytes());
    h.update(nanos.to_le_bytes());
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, Deserialize)]
struct Report {
    secret: String,
    total: usize,
    passed: usize,
    phase: String,
    tampered: Option<String>,
    harness_error: Option<String>,
    /// Something the tests need that cannot cross between the two instances.
    unsupported: Option<String>,
    failure: Option<ReportFailure>,
    error: Option<ReportError>,
}

#[derive(Debug, Deserialize)]
struct ReportFailure {
    index: usize,
    source: Option<String>,
    input: Option<String>,
    expected: Option<String>,
    actual: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ReportError {
    kind: String,
    message: String,
    line: Option<u32>,
    traceback: Vec<String>,
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn feedback(outcome: CodeOutcome, exec: &Execution, tests_total: usize) -> CodeFeedback {
    CodeFeedback {
        outcome,
        tests_total,
        tests_passed: 0,
        failed_test: None,
        exception: None,
        stdout: text(&exec.stdout),
        stderr: text(&exec.stderr),
        output_truncated: exec.stdout_truncated || exec.stderr_truncated,
        detail: None,
    }
}

/// The tag the guest harness puts before each progress event: the first 128 bits of
/// `sha256(secret \n event)`, in hex. The candidate may call the progress import itself, and may
/// even observe the harness's tagged events, but without the secret it cannot tag an event of
/// its own (a truncated digest cannot be length-extended), so it cannot claim tests it did not
/// pass.
pub(crate) fn progress_tag(secret: &str, event: &str) -> String {
    let mut h = Sha256::new();
    h.update(secret.as_bytes());
    h.update(b"\n");
    h.update(event.as_bytes());
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The progress events of a judged run that carry this run's tag, untagged, in order.
/// Everything else (events the program sent itself) is ignored.
fn authentic_events<'a>(progress: &'a [String], secret: &str) -> Vec<&'a str> {
    progress
        .iter()
        .filter_map(|e| {
            let (tag, event) = e.split_once(' ')?;
            (tag == progress_tag(secret, event)).then_some(event)
        })
        .collect()
}

/// Feedback for an execution that did not return normally (shared by all harnesses).
/// `None` when it did return. `events` are the harness's authenticated progress events (none
/// for stdio runs): they name the test that was running, and the distinct tests that passed.
fn abnormal(
    exec: &Execution,
    limits: &Limits,
    tests_total: usize,
    judged: bool,
    events: &[&str],
) -> Option<CodeFeedback> {
    let (outcome, detail) = match &exec.exit {
        Exit::Code(_) | Exit::Report(_) => return None,
        Exit::Timeout if exec.stdout_truncated || exec.stderr_truncated => (
            CodeOutcome::OutputLimit,
            "the program flooded its output past the cap and was stopped at the time limit".to_string(),
        ),
        Exit::Timeout => (
            CodeOutcome::Timeout,
            format!(
                "time limit hit (CPU {:.1} s / wall {:.1} s)",
                limits.cpu_time.as_secs_f64(),
                limits.wall_time.as_secs_f64()
            ),
        ),
        Exit::MemoryLimit => {
            (CodeOutcome::MemoryLimit, format!("memory limit of {} MiB hit", limits.memory_bytes >> 20))
        }
        Exit::StackOverflow => (
            CodeOutcome::RuntimeError,
            "the wasm stack was exhausted (unbounded native recursion)".to_string(),
        ),
        Exit::ProcessExit(code) if judged => (
            CodeOutcome::Tampered,
            format!("the program ended the process (exit code {code}) before the tests finished"),
        ),
        Exit::ProcessExit(code) => return Some(feedback(exit_outcome(*code), exec, tests_total)),
        Exit::Trap(msg) => (CodeOutcome::RuntimeError, format!("the guest trapped: {msg}")),
    };
    let mut fb = feedback(outcome, exec, tests_total);
    fb.detail = Some(detail);
    if exec.memory_limited && outcome == CodeOutcome::RuntimeError {
        fb.outcome = CodeOutcome::MemoryLimit;
    }
    // Which test was running, from the harness's progress events.
    let mut passed = std::collections::BTreeSet::new();
    for event in events {
        if let Some(rest) = event.strip_prefix("start ") {
            let (index, source) = rest.split_once('\n').unwrap_or((rest, ""));
            if let Ok(index) = index.parse() {
                fb.failed_test = Some(FailedTest {
                    index,
                    source: source.to_string(),
                    input: None,
                    expected: None,
                    actual: None,
                });
            }
        } else if let Some(index) = event.strip_prefix("pass ").and_then(|i| i.parse::<usize>().ok()) {
            if index < tests_total {
                passed.insert(index);
            }
        }
    }
    fb.tests_passed = passed.len();
    Some(fb)
}

fn exit_outcome(code: i32) -> CodeOutcome {
    if code == 0 {
        CodeOutcome::Passed
    } else {
        CodeOutcome::RuntimeError
    }
}

/// Code run around the program in the same namespace: `before` it (imports) and `after` it
/// (MBPP's `test_setup_code`, which may use the program's classes).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Setup<'a> {
    pub before: &'a str,
    pub after: &'a str,
}

/// Runs `program` (inside `setup`) against an assert-based suite inside the guest harness.
pub(crate) async fn run_suite(
    sandbox: &Sandbox,
    task_id: &str,
    program: &str,
    setup: Setup<'_>,
    suite: Suite<'_>,
    limits: &Limits,
) -> Result<CodeFeedback> {
    let secret = new_secret();
    let request = match suite {
        Suite::HumanEval { prompt, test, entry_point } => serde_json::json!({
            "secret": secret, "kind": "humaneval", "program": program, "setup": setup.before,
            "after": setup.after, "prompt": prompt, "test": test, "entry_point": entry_point,
        }),
        Suite::Mbpp { tests } => serde_json::json!({
            "secret": secret, "kind": "mbpp", "program": program, "setup": setup.before,
            "after": setup.after, "tests": tests,
        }),
    };
    let exec = sandbox.judge(&request.to_string(), limits).await?;
    let expected_max = match suite {
        Suite::Mbpp { tests } => Some(tests.len()),
        Suite::HumanEval { .. } => None,
    };
    interpret(task_id, &secret, &exec, limits, expected_max)
}

fn interpret(
    task_id: &str,
    secret: &str,
    exec: &Execution,
    limits: &Limits,
    expected_max: Option<usize>,
) -> Result<CodeFeedback> {
    let events = authentic_events(&exec.progress, secret);
    let announced = events.iter().find_map(|e| e.strip_prefix("program ")).and_then(|n| n.parse().ok());
    let started = events.iter().filter(|e| e.starts_with("start ")).count();
    let total = announced.or(expected_max).unwrap_or(started);
    if let Some(fb) = abnormal(exec, limits, total, true, &events) {
        return Ok(fb);
    }
    let Exit::Report(raw) = &exec.exit else {
        return Err(Error::Protocol("the harness returned an exit code instead of a report".into()));
    };
    let report: Report =
        serde_json::from_str(raw).map_err(|e| Error::Protocol(format!("{e}: {raw:.200}")))?;
    let mut fb = feedback(CodeOutcome::Passed, exec, report.total);
    fb.tests_passed = report.passed.min(report.total);
    if report.secret != secret {
        fb.outcome = CodeOutcome::Tampered;
        fb.detail = Some("the harness report does not carry this run's secret".into());
        fb.tests_passed = 0;
        return Ok(fb);
    }
    if let Some(reason) = report.harness_error {
        return Err(Error::BadTask { task_id: task_id.to_string(), reason });
    }
    if let Some(why) = report.unsupported {
        return Err(Error::BadTask {
            task_id: task_id.to_string(),
            reason: format!("not supported by the two-instance judge: {why}"),
        });
    }
    if let Some(max) = expected_max {
        if report.total > max {
            return Err(Error::Protocol(format!("{} tests reported for {max} given", report.total)));
        }
    }
    fb.failed_test = report.failure.map(|f| FailedTest {
        index: f.index,
        source: f.source.unwrap_or_default(),
        input: f.input,
        expected: f.expected,
        actual: f.actual,
    });
    if let Some(reason) = report.tampered {
        fb.outcome = CodeOutcome::Tampered;
        fb.detail = Some(reason);
        return Ok(fb);
    }
    if let Some(e) = report.error {
        fb.outcome = match (report.phase.as_str(), e.kind.as_str()) {
            ("syntax", _) => CodeOutcome::SyntaxError,
            (_, "MemoryError") => CodeOutcome::MemoryLimit,
            _ => CodeOutcome::RuntimeError,
        };
        if report.phase == "program" {
            fb.detail = Some("the program raised before the tests ran".into());
        }
        fb.exception =
            Some(ExceptionInfo { kind: e.kind, message: e.message, line: e.line, traceback: e.traceback });
        return Ok(fb);
    }
    if fb.failed_test.is_some() {
        fb.outcome = CodeOutcome::WrongAnswer;
        // A failed setup step (a statement without an assert of its own, e.g. one calling a
        // test-defined checker) is not counted as a test, but the run did not pass them all.
        fb.tests_passed = fb.tests_passed.min(report.total.saturating_sub(1));
        return Ok(fb);
    }
    if report.phase != "done" || report.passed != report.total {
        return Err(Error::Protocol(format!("incomplete report without a failure: {raw:.300}")));
    }
    if report.total == 0 {
        return Err(Error::BadTask {
            task_id: task_id.to_string(),
            reason: "the task has no assert tests".into(),
        });
    }
    Ok(fb)
}

/// Whitespace-normalised comparison: the outputs are equal as sequences of
/// whitespace-separated tokens (so trailing spaces, blank lines and line breaks between
/// tokens do not matter).
pub fn outputs_match(actual: &str, expected: &str) -> bool {
    actual.split_whitespace().eq(expected.split_whitespace())
}

/// Parses a CPython traceback on stderr into an [`ExceptionInfo`] (candidate frames only).
pub(crate) fn parse_traceback(stderr: &str) -> Option<ExceptionInfo> {
    let lines: Vec<&str> = stderr.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with("Traceback (most recent call last)"));
    let mut traceback = Vec::new();
    let mut line = None;
    let body = start.map(|s| &lines[s + 1..]).unwrap_or(&lines[..]);
    let mut i = 0;
    while i < body.len() {
        let l = body[i].trim_start();
        if let Some(rest) = l.strip_prefix("File \"<candidate>\", line ") {
            let num: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let n = num.parse::<u32>().ok();
            let code = body.get(i + 1).map(|s| s.trim()).filter(|s| !s.starts_with("File ")).unwrap_or("");
            traceback
                .push(format!("<candidate> line {}: {code}", n.map(|n| n.to_string()).unwrap_or_default()));
            line = n.or(line);
        }
        i += 1;
    }
    let last = lines.iter().rev().find(|l| {
        let t = l.trim();
        !t.is_empty() && !l.starts_with(' ') && !t.starts_with('^') && !t.starts_with("~")
    })?;
    let (kind, message) = match last.split_once(": ") {
        Some((k, m)) if is_exception_name(k) => (k, m),
        _ if is_exception_name(last.trim()) => (last.trim(), ""),
        _ => return None,
    };
    let kind = kind.rsplit('.').next().unwrap_or(kind).to_string();
    Some(ExceptionInfo { kind, message: message.to_string(), line, traceback })
}

fn is_exception_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.')
}

/// Runs `program` once per case with the case's stdin.
pub(crate) async fn run_stdio(
    sandbox: &Sandbox,
    program: &str,
    cases: &[IoCase],
    limits: &Limits,
) -> Result<CodeFeedback> {
    let total = cases.len();
    let mut passed = 0;
    let mut first_wrong: Option<(FailedTest, Execution)> = None;
    let mut last: Option<Execution> = None;
    for (index, case) in cases.iter().enumerate() {
        let exec = sandbox.run_with(program, case.input.as_bytes(), limits).await?;
        let failed = |actual: Option<String>| FailedTest {
            index,
            source: format!("stdin case {index}"),
            input: Some(case.input.clone()),
            expected: Some(case.output.clone()),
            actual,
        };
        if let Some(mut fb) = abnormal(&exec, limits, total, false, &[]) {
            if fb.outcome != CodeOutcome::Passed {
                fb.tests_passed = passed;
                fb.failed_test = Some(failed(Some(text(&exec.stdout))));
                return Ok(fb);
            }
        }
        let code = match exec.exit {
            Exit::Code(c) | Exit::ProcessExit(c) => c,
            _ => 1,
        };
        let stderr = text(&exec.stderr);
        if code != 0 {
            let exception = parse_traceback(&stderr);
            let syntax = exception
                .as_ref()
                .is_some_and(|e| matches!(e.kind.as_str(), "SyntaxError" | "IndentationError" | "TabError"));
            let mut fb = feedback(
                if syntax { CodeOutcome::SyntaxError } else { CodeOutcome::RuntimeError },
                &exec,
                total,
            );
            if exec.memory_limited || exception.as_ref().is_some_and(|e| e.kind == "MemoryError") {
                fb.outcome = CodeOutcome::MemoryLimit;
            }
            fb.tests_passed = passed;
            fb.exception = exception;
            fb.failed_test = Some(failed(Some(text(&exec.stdout))));
            fb.detail = Some(format!("exit code {code}"));
            return Ok(fb);
        }
        // A cut output is never compared: what was dropped could contradict what was kept.
        if exec.stdout_truncated {
            let mut fb = feedback(CodeOutcome::OutputLimit, &exec, total);
            fb.tests_passed = passed;
            fb.failed_test = Some(failed(None));
            fb.detail = Some(format!(
                "stdout was cut at {} bytes (its cap), so it cannot be judged",
                limits.stdout_bytes
            ));
            return Ok(fb);
        }
        let actual = text(&exec.stdout);
        if outputs_match(&actual, &case.output) {
            passed += 1;
        } else if first_wrong.is_none() {
            first_wrong = Some((failed(Some(actual)), exec.clone()));
        }
        last = Some(exec);
    }
    let Some(last) = last else {
        return Err(Error::Config("a stdio task needs at least one case".into()));
    };
    match first_wrong {
        Some((test, exec)) => {
            let mut fb = feedback(CodeOutcome::WrongAnswer, &exec, total);
            fb.tests_passed = passed;
            fb.failed_test = Some(test);
            Ok(fb)
        }
        None => {
            let mut fb = feedback(CodeOutcome::Passed, &last, total);
            fb.tests_passed = passed;
            Ok(fb)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_fresh_and_long() {
        let a = new_secret();
        let b = new_secret();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    #[test]
    fn only_events_tagged_with_the_secret_count() {
        let secret = "0123456789abcdef0123456789abcdef";
        let tag = |e: &str| format!("{} {e}", progress_tag(secret, e));
        let progress = vec![
            tag("program 3"),
            tag("start 0\nassert f(1) == 1"),
            tag("pass 0"),
            "pass 1".to_string(),
            format!("{} pass 2", progress_tag("another secret", "pass 2")),
            format!("{} pass 2", progress_tag(secret, "pass 1")),
            tag("pass 0"),
        ];
        let exec = Execution {
            exit: Exit::StackOverflow,
            stdout: Vec::new(),
            stderr: Vec::new(),
            stdout_truncated: false,
            stderr_truncated: false,
            memory_limited: false,
            progress,
            elapsed: std::time::Duration::ZERO,
        };
        let events = authentic_events(&exec.progress, secret);
        assert_eq!(events, ["program 3", "start 0\nassert f(1) == 1", "pass 0", "pass 0"]);
        // A replayed event counts once.
        let fb = abnormal(&exec, &Limits::default(), 3, true, &events).expect("abnormal");
        assert_eq!(fb.tests_passed, 1);
        assert_eq!(fb.failed_test.map(|t| t.index), Some(0));
    }

    #[test]
    fn whitespace_normalised_comparison() {
        assert!(outputs_match("1 2\n3  \n\n", "1 2 3"));
        assert!(!outputs_match("1 2", "1 2 3"));
        assert!(!outputs_match("12", "1 2"));
        assert!(outputs_match("", "\n"));
    }

    #[test]
    fn traceback_parsing() {
        let err = "Traceback (most recent call last):\n  File \"<harness>\", line 3, in run\n  File \"<candidate>\", line 2, in <module>\n    x = 1 / 0\n        ~~^~~\nZeroDivisionError: division by zero\n";
        let e = parse_traceback(err).unwrap();
        assert_eq!(e.kind, "ZeroDivisionError");
        assert_eq!(e.message, "division by zero");
        assert_eq!(e.line, Some(2));
        assert_eq!(e.traceback, vec!["<candidate> line 2: x = 1 / 0".to_string()]);
        let syn = "  File \"<candidate>\", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax\n";
        let e = parse_traceback(syn).unwrap();
        assert_eq!((e.kind.as_str(), e.line), ("SyntaxError", Some(1)));
        assert!(parse_traceback("hello world\n").is_none());
    }
}
