//! JSON values between Rust (`serde_json::Value`) and Python (dict, list, str, int, float,
//! bool, None), so serde types cross the boundary as the same JSON the CLI prints.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;
use serde_json::{Map, Number, Value};

/// Deepest nesting accepted from Python (a self-referencing list would otherwise recurse
/// without end).
const MAX_DEPTH: usize = 64;

/// A JSON value as a Python object.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_bound_py_any(py)?,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_bound_py_any(py)?
            } else if let Some(u) = n.as_u64() {
                u.into_bound_py_any(py)?
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py)?
            }
        }
        Value::String(s) => s.into_bound_py_any(py)?,
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// A serde value as a Python object, through its JSON form.
pub fn ser_to_py<'py, T: serde::Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value)
        .map_err(|e| PyValueError::new_err(format!("cannot convert to a Python value: {e}")))?;
    to_py(py, &json)
}

/// A Python object (nested dicts with str keys, lists, tuples, str, int, float, bool, None)
/// as a JSON value; `what` names the argument in the `ValueError`.
pub fn from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    from_py_at(obj, what, 0)
}

fn from_py_at(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!("{what}: nested deeper than {MAX_DEPTH} levels")));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    // bool before int: Python's bool is an int.
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.cast::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(PyValueError::new_err(format!("{what}: integer {obj} does not fit in 64 bits")));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        return Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err(format!("{what}: {v} is not a finite number")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return list.iter().map(|item| from_py_at(&item, what, depth + 1)).collect::<PyResult<_>>();
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return tuple.iter().map(|item| from_py_at(&item, what, depth + 1)).collect::<PyResult<_>>();
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in dict.iter() {
            let key = k
                .cast::<PyString>()
                .map_err(|_| PyValueError::new_err(format!("{what}: dictionary key {k} is not a string")))?;
            map.insert(key.to_cow()?.into_owned(), from_py_at(&v, what, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    let kind = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    Err(PyValueError::new_err(format!(
        "{what}: a value of type {kind} cannot be read (use dict, list, str, int, float, bool or None)"
    )))
}

/// A Python object read as a serde type through its JSON form; `what` names the argument.
pub fn de_from_py<T: serde::de::DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let value = from_py(obj, what)?;
    serde_json::from_value(value).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}
