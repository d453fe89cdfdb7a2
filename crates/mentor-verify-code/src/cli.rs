//! The `mentor verify code` command as a library function: JSONL records in, one JSON verdict
//! line per record out, in input order.
//!
//! Input lines are a dataset's record plus a `completion` field:
//! * `humaneval`: `{"task_id", "prompt", "test", "entry_point", "completion", ...}`
//! * `mbpp`: `{"task_id", "test_list", "completion", "test_setup_code"?, "test_imports"?, ...}`
//!
//! The task fields are read by [`crate::TaskRecord`], as the Python bindings read them.
//! * `stdio`: `{"id", "completion", "tests": [{"input", "output"}]}`
//!
//! Output lines are `{"id", "passed", "reward", "feedback"}`, where `id` is the record's `id`
//! field when it has one, else its `task_id`. A malformed record (bad JSON, a missing field) or
//! a task that cannot be judged gets `{"id", "passed": false, "reward": 0.0, "error"}` and the
//! run continues. Blank lines are skipped.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use mentor_core::{CodePayload, Feedback, Payload, Task, TaskMeta, Verdict, Verifier};
use serde_json::{json, Map, Value};

use crate::{CodeVerifier, Error, Format, Result, TaskRecord};

/// Counts over a run, for the summary on stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Records read (blank lines excluded).
    pub records: usize,
    /// Records that passed.
    pub passed: usize,
    /// Records judged and not passed.
    pub failed: usize,
    /// Records that could not be judged (malformed, bad task, sandbox failure).
    pub errors: usize,
    /// Judged records per outcome (`wrong_answer`, `timeout`, ...).
    pub outcomes: BTreeMap<String, usize>,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} records: {} passed, {} failed, {} errors",
            self.records, self.passed, self.failed, self.errors
        )?;
        if !self.outcomes.is_empty() {
            let parts: Vec<String> = self.outcomes.iter().map(|(k, v)| format!("{k}={v}")).collect();
            write!(f, " ({})", parts.join(", "))?;
        }
        Ok(())
    }
}

/// A record's id and either its task + completion or why it is malformed.
type Parsed = (Value, std::result::Result<(Task, String), String>);

/// Records verified per parallel batch.
const CHUNK: usize = 64;

/// Reads JSONL records from `reader`, verifies them, writes one JSON line per record to
/// `writer` in input order, and returns the counts. Only I/O failures on the streams are
/// errors; everything about a record is reported on its line.
pub fn run_jsonl(
    reader: impl BufRead,
    mut writer: impl Write,
    format: Format,
    verifier: &CodeVerifier<'_>,
) -> Result<Summary> {
    let mut summary = Summary::default();
    let mut chunk: Vec<(usize, std::result::Result<String, String>)> = Vec::with_capacity(CHUNK);
    for item in mentor_core::input_lines(reader) {
        let (n, line) = item.map_err(Error::Stream)?;
        // A line that is not UTF-8 is reported on its output line; the run goes on.
        let line = line.into_text();
        if line.as_ref().is_ok_and(|l| l.trim().is_empty()) {
            continue;
        }
        chunk.push((n, line));
        if chunk.len() == CHUNK {
            flush(&mut chunk, &mut writer, format, verifier, &mut summary)?;
        }
    }
    flush(&mut chunk, &mut writer, format, verifier, &mut summary)?;
    writer.flush().map_err(Error::Stream)?;
    Ok(summary)
}

fn flush(
    chunk: &mut Vec<(usize, std::result::Result<String, String>)>,
    writer: &mut impl Write,
    format: Format,
    verifier: &CodeVerifier<'_>,
    summary: &mut Summary,
) -> Result<()> {
    let parsed: Vec<Parsed> = chunk
        .drain(..)
        .map(|(n, line)| match line {
            Ok(line) => parse_record(n, &line, format),
            Err(why) => (Value::Null, Err(format!("line {n}: {why}"))),
        })
        .collect();
    let items: Vec<(&Task, &str)> =
        parsed.iter().filter_map(|(_, r)| r.as_ref().ok()).map(|(t, c)| (t, c.as_str())).collect();
    let mut verdicts = verifier.verify_batch(&items).into_iter();
    for (id, record) in &parsed {
        summary.records += 1;
        let out = match record {
            Err(reason) => error_line(id, reason, summary),
            Ok(_) => match verdicts.next() {
                Some(Ok(v)) => verdict_line(id, v, summary),
                Some(Err(e)) => error_line(id, &e.to_string(), summary),
                None => error_line(id, "no verdict was produced", summary),
            },
        };
        writeln!(writer, "{out}").map_err(Error::Stream)?;
    }
    Ok(())
}

fn verdict_line(id: &Value, v: Verdict, summary: &mut Summary) -> Value {
    if v.passed() {
        summary.passed += 1;
    } else {
        summary.failed += 1;
    }
    if let Feedback::Code(c) = v.feedback() {
        let key = serde_json::to_value(c.outcome).ok().and_then(|k| k.as_str().map(str::to_string));
        *summary.outcomes.entry(key.unwrap_or_else(|| "other".into())).or_default() += 1;
    }
    json!({"id": id, "passed": v.passed(), "reward": v.reward(), "feedback": v.feedback()})
}

fn error_line(id: &Value, reason: &str, summary: &mut Summary) -> Value {
    summary.errors += 1;
    json!({"id": id, "passed": false, "reward": 0.0, "error": reason})
}

/// The record's id (`id`, else `task_id`; `null` when neither) and its task + completion.
fn parse_record(line_no: usize, line: &str, format: Format) -> Parsed {
    let obj: Map<String, Value> = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(o)) => o,
        Ok(_) => return (Value::Null, Err(format!("line {line_no}: not a JSON object"))),
        Err(e) => return (Value::Null, Err(format!("line {line_no}: invalid JSON: {e}"))),
    };
    let id = obj.get("id").or_else(|| obj.get("task_id")).cloned().unwrap_or(Value::Null);
    let task = build_task(&obj, &id, format).map_err(|e| format!("line {line_no}: {e}"));
    (id, task)
}

fn build_task(
    obj: &Map<String, Value>,
    id: &Value,
    format: Format,
) -> std::result::Result<(Task, String), String> {
    let completion = match obj.get("completion") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("field `completion` is not a string".into()),
        None => return Err("missing field `completion`".into()),
    };
    let id = match id {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return Err("missing field `id` / `task_id`".into()),
    };
    let harness =
        TaskRecord::from_json(obj, format).and_then(|r| r.harness(format)).map_err(|e| e.to_string())?;
    let task = Task {
        id,
        prompt: Vec::new(),
        payload: Payload::Code(CodePayload { harness, reference_solution: None }),
        meta: TaskMeta { source: format.name().into(), level: None, subject: None },
    };
    Ok((task, completion))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_malformed_records() {
        let (id, r) = parse_record(
            1,
            r#"{"task_id": 11, "test_list": ["assert f() == 1"], "completion": "x"}"#,
            Format::Mbpp,
        );
        assert_eq!(id, json!(11));
        assert_eq!(r.unwrap().0.id, "11");
        let (id, r) =
            parse_record(2, r#"{"id": "a", "task_id": "b", "completion": "x", "tests": []}"#, Format::Stdio);
        assert_eq!(id, json!("a"));
        let e = r.unwrap_err();
        assert!(e.contains("`tests`") && e.contains("empty"), "{e}");
        let (id, r) = parse_record(3, "{not json", Format::HumanEval);
        assert_eq!(id, Value::Null);
        assert!(r.unwrap_err().starts_with("line 3: invalid JSON"));
        let (_, r) = parse_record(
            4,
            r#"{"task_id": "t", "prompt": "p", "test": "t", "entry_point": "a b", "completion": ""}"#,
            Format::HumanEval,
        );
        assert!(r.unwrap_err().contains("not a Python identifier"));
        assert!("nope".parse::<Format>().is_err());
        assert_eq!("stdio".parse::<Format>().unwrap(), Format::Stdio);
    }
}
