//! JSON Lines files of a run (`metrics.jsonl`, `eval.jsonl`): appended one flushed line at a
//! time, and cut back to a checkpoint's step when a run resumes.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};

/// The name of every command's summary file: a training run's, a rescue's and a report's
/// (`mentor demo`'s `report/summary.json`).
pub const SUMMARY_FILE: &str = "summary.json";

/// An append-only JSONL file.
pub struct JsonlWriter {
    path: PathBuf,
    file: File,
}

impl JsonlWriter {
    /// Opens `path` for appending (creating it).
    pub fn append(path: &Path) -> Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(Error::io(path))?;
        Ok(Self { path: path.to_path_buf(), file })
    }

    /// Writes one record as a line and flushes it.
    pub fn write<T: Serialize>(&mut self, record: &T) -> Result<()> {
        let mut line = serde_json::to_string(record).map_err(|e| Error::Jsonl {
            path: self.path.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        line.push('\n');
        self.file.write_all(line.as_bytes()).map_err(Error::io(&self.path))?;
        self.file.flush().map_err(Error::io(&self.path))
    }
}

/// Keeps only the records of `path` whose `step` is below `step` (a resumed run rewrites
/// what follows). A partial last line (a crash mid-write) is dropped; any other unreadable
/// line is an error naming it. The file is replaced atomically. A missing file is fine.
pub fn truncate_to_step(path: &Path, step: usize) -> Result<()> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::Io { path: path.to_path_buf(), source: e }),
    };
    let lines: Vec<String> =
        BufReader::new(file).lines().collect::<std::io::Result<_>>().map_err(Error::io(path))?;
    let mut kept = String::new();
    let last = lines.len();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) if i + 1 == last => break,
            Err(e) => {
                return Err(Error::Jsonl { path: path.to_path_buf(), line: i + 1, message: e.to_string() })
            }
        };
        let s = v.get("step").and_then(serde_json::Value::as_u64).ok_or_else(|| Error::Jsonl {
            path: path.to_path_buf(),
            line: i + 1,
            message: "no `step` field".into(),
        })?;
        if (s as usize) < step {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    write_atomic(path, kept.as_bytes())
}

/// Writes `bytes` to `path` through a temporary sibling and a rename: readers see the old
/// file or the new one, never a mix.
/// ([`mentor_core::fs::write_atomic`] with the trainer's error type.)
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    mentor_core::fs::write_atomic(path, bytes).map_err(Error::io(path))
}

/// [`write_atomic`] of `lines` as a whole JSON Lines file (one compact value per line).
pub fn write_lines<T: Serialize>(path: &Path, lines: &[T]) -> Result<()> {
    let mut text = String::new();
    for l in lines {
        let s = serde_json::to_string(l).map_err(|e| Error::Jsonl {
            path: path.to_path_buf(),
            line: 0,
            message: e.to_string(),
        })?;
        text.push_str(&s);
        text.push('\n');
    }
    write_atomic(path, text.as_bytes())
}

/// [`write_atomic`] of a value as pretty JSON.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Jsonl {
        path: path.to_path_buf(),
        line: 0,
        message: e.to_string(),
    })?;
    write_atomic(path, text.as_bytes())
}

/// Reads a JSON file written by [`write_json`]; a parse error names the file and line.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(Error::io(path))?;
    serde_json::from_str(&text).map_err(|e| Error::Jsonl {
        path: path.to_path_buf(),
        line: e.line(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_earlier_steps_and_drops_a_partial_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.jsonl");
        std::fs::write(&p, "{\"step\":0}\n{\"step\":1}\n{\"step\":2}\n{\"step\":3,\"x\":").unwrap();
        truncate_to_step(&p, 2).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"step\":0}\n{\"step\":1}\n");
        let mut w = JsonlWriter::append(&p).unwrap();
        w.write(&serde_json::json!({"step": 2})).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 3);
    }

    #[test]
    fn a_bad_middle_line_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.jsonl");
        std::fs::write(&p, "{\"step\":0}\nnot json\n{\"step\":2}\n").unwrap();
        let e = truncate_to_step(&p, 5).unwrap_err().to_string();
        assert!(e.contains("m.jsonl:2"), "{e}");
        // Nothing was lost.
        assert!(std::fs::read_to_string(&p).unwrap().contains("not json"));
    }

    #[test]
    fn atomic_writes_leave_no_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        write_json(&p, &serde_json::json!({"a": 1})).unwrap();
        write_json(&p, &serde_json::json!({"a": 2})).unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("x.json")]);
        assert!(std::fs::read_to_string(&p).unwrap().contains('2'));
    }
}
