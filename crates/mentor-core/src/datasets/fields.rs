//! Typed access to JSON record fields with located errors.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::DatasetError;

/// Context for located errors.
pub(crate) struct Loc<'a> {
    pub path: &'a Path,
    pub line: usize,
}

impl Loc<'_> {
    pub fn path_buf(&self) -> PathBuf {
        self.path.to_path_buf()
    }
}

pub(crate) fn parse_object(
    path: &Path,
    line: usize,
    bytes: &[u8],
) -> Result<Map<String, Value>, DatasetError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| DatasetError::Syntax {
        path: path.to_path_buf(),
        line,
        message: e.to_string(),
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(DatasetError::Syntax {
            path: path.to_path_buf(),
            line,
            message: format!("found {}", kind(&other)),
        }),
    }
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn get<'m>(
    loc: &Loc<'_>,
    obj: &'m Map<String, Value>,
    field: &'static str,
) -> Result<&'m Value, DatasetError> {
    obj.get(field).ok_or(DatasetError::MissingField { path: loc.path_buf(), line: loc.line, field })
}

fn bad(loc: &Loc<'_>, field: &'static str, message: String) -> DatasetError {
    DatasetError::BadField { path: loc.path_buf(), line: loc.line, field, message }
}

/// A required string field.
pub(crate) fn string(
    loc: &Loc<'_>,
    obj: &Map<String, Value>,
    field: &'static str,
) -> Result<String, DatasetError> {
    match get(loc, obj, field)? {
        Value::String(s) => Ok(s.clone()),
        other => Err(bad(loc, field, format!("expected a string, found {}", kind(other)))),
    }
}

/// A required non-empty string field.
pub(crate) fn non_empty(
    loc: &Loc<'_>,
    obj: &Map<String, Value>,
    field: &'static str,
) -> Result<String, DatasetError> {
    let s = string(loc, obj, field)?;
    if s.trim().is_empty() {
        return Err(bad(loc, field, "is empty".into()));
    }
    Ok(s)
}

/// An optional string field (absent or null is `None`).
pub(crate) fn opt_string(
    loc: &Loc<'_>,
    obj: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, DatasetError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(bad(loc, field, format!("expected a string, found {}", kind(other)))),
    }
}

/// A required integer field.
pub(crate) fn integer(
    loc: &Loc<'_>,
    obj: &Map<String, Value>,
    field: &'static str,
) -> Result<i64, DatasetError> {
    match get(loc, obj, field)? {
        Value::Number(n) => {
            n.as_i64().ok_or_else(|| bad(loc, field, format!("expected an integer, found {n}")))
        }
        other => Err(bad(loc, field, format!("expected an integer, found {}", kind(other)))),
    }
}

/// A required finite number field.
pub(crate) fn number(
    loc: &Loc<'_>,
    obj: &Map<String, Value>,
    field: &'static str,
) -> Result<f64, DatasetError> {
    match get(loc, obj, field)? {
        Value::Number(n) => n
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| bad(loc, field, format!("expected a finite number, found {n}"))),
        other => Err(bad(loc, field, format!("expected a number, found {}", kind(other)))),
    }
}

/// A list of strings; `required` decides whether absence is an error.
pub(crate) fn strings(
    loc: &Loc<'_>,
    obj: &Map<String, Value>,
    field: &'static str,
    required: bool,
) -> Result<Vec<String>, DatasetError> {
    let v = match obj.get(field) {
        None | Some(Value::Null) if !required => return Ok(Vec::new()),
        _ => get(loc, obj, field)?,
    };
    let Value::Array(items) = v else {
        return Err(bad(loc, field, format!("expected an array of strings, found {}", kind(v))));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(s.clone()),
            other => Err(bad(loc, field, format!("element {i} is {}, not a string", kind(other)))),
        })
        .collect()
}

/// Reports an unusable value of a field that parsed.
pub(crate) fn invalid(loc: &Loc<'_>, field: &'static str, message: impl Into<String>) -> DatasetError {
    bad(loc, field, message.into())
}
