//! One code task record, as every boundary takes it: the `mentor verify code` JSONL records,
//! the Python bindings (`CodeSandbox.verify`, `verify_many`) and the TRL reward (`CodeReward`,
//! from a dataset's columns) all fill a [`TaskRecord`] and turn it into a harness here, so a
//! task means the same thing on every path.
//!
//! A field the format needs and the record lacks is an error that names the field, never a
//! default: a HumanEval task judged without its prompt would run tests that call the prompt's
//! helpers (HumanEval/32, /38, /50) without them and blame the program.

use mentor_core::{CodeHarness, IoCase};
use serde_json::{Map, Value};

/// The record schema of a code task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// HumanEval: `prompt`, `test`, `entry_point`.
    HumanEval,
    /// MBPP: `test_list`, optional `test_setup_code` and `test_imports`.
    Mbpp,
    /// Stdin/stdout: `tests`, a list of `{"input", "output"}` cases.
    Stdio,
}

impl Format {
    /// The format's name, as `--format` and the Python `format=` argument spell it.
    pub fn name(self) -> &'static str {
        match self {
            Format::HumanEval => "humaneval",
            Format::Mbpp => "mbpp",
            Format::Stdio => "stdio",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = RecordError;
    fn from_str(s: &str) -> Result<Self, RecordError> {
        match s {
            "humaneval" => Ok(Format::HumanEval),
            "mbpp" => Ok(Format::Mbpp),
            "stdio" => Ok(Format::Stdio),
            other => Err(RecordError::Invalid {
                field: "format",
                reason: format!("unknown format `{other}` (humaneval, mbpp or stdio)"),
            }),
        }
    }
}

/// Why a record is not a task; `field` is the record's field name (a JSONL key, a dataset
/// column).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The format needs `field` and the record has none.
    #[error("missing field `{field}` (format {format} needs it)")]
    Missing {
        /// The field.
        field: &'static str,
        /// The format that needs it.
        format: &'static str,
    },
    /// `field` is present but not what the format takes.
    #[error("field `{field}`: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

impl RecordError {
    /// The field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            RecordError::Missing { field, .. } | RecordError::Invalid { field, .. } => field,
        }
    }
}

/// The fields of a code task under the datasets' own names. Which are needed depends on the
/// format (see [`Format`]); [`TaskRecord::harness`] checks them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskRecord {
    /// HumanEval: the prompt the program continues (signature, docstring, helper functions
    /// the tests call). Required.
    pub prompt: Option<String>,
    /// HumanEval: the test code defining `check(candidate)`. Required.
    pub test: Option<String>,
    /// HumanEval: the function under test. Required.
    pub entry_point: Option<String>,
    /// MBPP: the `assert` lines, one test each. Required, non-empty.
    pub test_list: Option<Vec<String>>,
    /// MBPP: code run after the program and before the tests (trees of the program's classes).
    pub test_setup_code: Option<String>,
    /// MBPP: import lines run before the program and in the tests' interpreter.
    pub test_imports: Option<Vec<String>>,
    /// Stdio: the cases, one test each. Required, non-empty.
    pub cases: Option<Vec<IoCase>>,
}

impl TaskRecord {
    /// The harness of this record in `format`; errors name the field.
    pub fn harness(self, format: Format) -> Result<CodeHarness, RecordError> {
        let need = |field: &'static str| RecordError::Missing { field, format: format.name() };
        match format {
            Format::HumanEval => {
                let entry_point = self.entry_point.ok_or_else(|| need("entry_point"))?;
                if entry_point.is_empty() || !entry_point.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    return Err(RecordError::Invalid {
                        field: "entry_point",
                        reason: format!("`{entry_point}` is not a Python identifier"),
                    });
                }
                Ok(CodeHarness::HumanEval {
                    prompt: self.prompt.ok_or_else(|| need("prompt"))?,
                    test: self.test.ok_or_else(|| need("test"))?,
                    entry_point,
                })
            }
            Format::Mbpp => {
                let tests = self.test_list.ok_or_else(|| need("test_list"))?;
                if tests.is_empty() {
                    return Err(RecordError::Invalid {
                        field: "test_list",
                        reason: "the list is empty".into(),
                    });
                }
                Ok(CodeHarness::Mbpp {
                    tests,
                    setup_code: self.test_setup_code.unwrap_or_default(),
                    imports: self.test_imports.unwrap_or_default(),
                })
            }
            Format::Stdio => {
                let cases = self.cases.ok_or_else(|| need("tests"))?;
                if cases.is_empty() {
                    return Err(RecordError::Invalid { field: "tests", reason: "the list is empty".into() });
                }
                Ok(CodeHarness::Stdio { cases })
            }
        }
    }

    /// The record held in a JSON object (a `mentor verify code` input line, a dataset row):
    /// the fields `format` reads, under the names above (`tests` for stdio cases). A field that
    /// is `null` counts as absent.
    pub fn from_json(obj: &Map<String, Value>, format: Format) -> Result<Self, RecordError> {
        let mut r = TaskRecord::default();
        match format {
            Format::HumanEval => {
                r.prompt = string(obj, "prompt")?;
                r.test = string(obj, "test")?;
                r.entry_point = string(obj, "entry_point")?;
            }
            Format::Mbpp => {
                r.test_list = strings(obj, "test_list")?;
                r.test_setup_code = string(obj, "test_setup_code")?;
                r.test_imports = strings(obj, "test_imports")?;
            }
            Format::Stdio => {
                r.cases = match obj.get("tests") {
                    None | Some(Value::Null) => None,
                    Some(Value::Array(cases)) => Some(
                        cases.iter().enumerate().map(|(i, c)| case(c, i)).collect::<Result<Vec<_>, _>>()?,
                    ),
                    Some(_) => {
                        return Err(RecordError::Invalid { field: "tests", reason: "not a list".into() })
                    }
                };
            }
        }
        Ok(r)
    }
}

fn string(obj: &Map<String, Value>, field: &'static str) -> Result<Option<String>, RecordError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(RecordError::Invalid { field, reason: "not a string".into() }),
    }
}

fn strings(obj: &Map<String, Value>, field: &'static str) -> Result<Option<Vec<String>>, RecordError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_string).ok_or_else(|| RecordError::Invalid {
                    field,
                    reason: format!("item {i} is not a string"),
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(RecordError::Invalid { field, reason: "not a list".into() }),
    }
}

fn case(c: &Value, i: usize) -> Result<IoCase, RecordError> {
    let bad = || RecordError::Invalid {
        field: "tests",
        reason: format!("case {i} is not {{\"input\": str, \"output\": str}}"),
    };
    let c = c.as_object().ok_or_else(bad)?;
    let get = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string).ok_or_else(bad);
    Ok(IoCase { input: get("input")?, output: get("output")? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("an object")
    }

    #[test]
    fn humaneval_needs_its_prompt_test_and_entry_point() {
        let full = obj(json!({"prompt": "def f():\n", "test": "def check(c): pass", "entry_point": "f"}));
        let h = TaskRecord::from_json(&full, Format::HumanEval).unwrap().harness(Format::HumanEval).unwrap();
        assert!(matches!(h, CodeHarness::HumanEval { ref entry_point, .. } if entry_point == "f"));
        for field in ["prompt", "test", "entry_point"] {
            let mut o = full.clone();
            o.remove(field);
            let e =
                TaskRecord::from_json(&o, Format::HumanEval).unwrap().harness(Format::HumanEval).unwrap_err();
            assert_eq!(e.field(), field);
            assert!(e.to_string().contains(field), "{e}");
        }
        let mut o = full.clone();
        o.insert("entry_point".into(), json!("f; import os"));
        let e = TaskRecord::from_json(&o, Format::HumanEval).unwrap().harness(Format::HumanEval).unwrap_err();
        assert!(e.to_string().contains("not a Python identifier"), "{e}");
    }

    #[test]
    fn mbpp_keeps_setup_and_imports_and_refuses_bad_shapes() {
        let o = obj(json!({"test_list": ["assert f() == 1"], "test_setup_code": "x = 1",
                           "test_imports": ["import math"]}));
        let h = TaskRecord::from_json(&o, Format::Mbpp).unwrap().harness(Format::Mbpp).unwrap();
        assert_eq!(
            h,
            CodeHarness::Mbpp {
                tests: vec!["assert f() == 1".into()],
                setup_code: "x = 1".into(),
                imports: vec!["import math".into()],
            }
        );
        let e = TaskRecord::from_json(&obj(json!({"test_list": "assert 1"})), Format::Mbpp).unwrap_err();
        assert_eq!(e.field(), "test_list");
        let e = TaskRecord::from_json(&obj(json!({"test_list": ["a"], "test_imports": [1]})), Format::Mbpp)
            .unwrap_err();
        assert!(e.to_string().contains("test_imports") && e.to_string().contains("item 0"), "{e}");
        let e = TaskRecord::from_json(&obj(json!({"test_list": []})), Format::Mbpp)
            .unwrap()
            .harness(Format::Mbpp)
            .unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = TaskRecord::default().harness(Format::Mbpp).unwrap_err();
        assert_eq!(e, RecordError::Missing { field: "test_list", format: "mbpp" });
    }

    #[test]
    fn stdio_cases() {
        let o = obj(json!({"tests": [{"input": "1\n", "output": "2"}]}));
        let h = TaskRecord::from_json(&o, Format::Stdio).unwrap().harness(Format::Stdio).unwrap();
        assert_eq!(h, CodeHarness::Stdio { cases: vec![IoCase { input: "1\n".into(), output: "2".into() }] });
        let e = TaskRecord::from_json(&obj(json!({"tests": [{"input": "1"}]})), Format::Stdio).unwrap_err();
        assert!(e.to_string().contains("case 0"), "{e}");
        assert_eq!(TaskRecord::default().harness(Format::Stdio).unwrap_err().field(), "tests");
        assert!("junit".parse::<Format>().is_err());
        assert_eq!("stdio".parse::<Format>().unwrap().name(), "stdio");
    }
}
