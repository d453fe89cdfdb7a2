//! AIME 2024 and AMC 2023 in the Qwen2.5-Math evaluation layout
//! (`{"id", "problem", "answer", ...}`).

use std::path::Path;

use super::{fields, jsonl_records, Loc};
use crate::numbers::format_number;
use crate::{DatasetError, MathPayload, Message, Payload, Task, TaskMeta};

/// Loads AIME 2024. `answer` is a string of digits that may have leading zeros (`"025"`); the
/// gold answer is stored as the integer it denotes (`25`), since AIME answers compare as
/// integers. Ids are `aime2024/<id>`.
pub fn load_aime(path: &Path) -> Result<Vec<Task>, DatasetError> {
    jsonl_records(path)?
        .into_iter()
        .map(|(line, obj)| {
            let loc = Loc { path, line };
            let id = fields::integer(&loc, &obj, "id")?;
            let problem = fields::non_empty(&loc, &obj, "problem")?;
            let raw = fields::non_empty(&loc, &obj, "answer")?;
            let value: u32 = raw.trim().parse().ok().filter(|v| *v <= 999).ok_or_else(|| {
                fields::invalid(&loc, "answer", format!("`{raw}` is not an AIME answer (an integer 0–999)"))
            })?;
            let solution = fields::opt_string(&loc, &obj, "solution")?;
            Ok(Task {
                id: format!("aime2024/{id}"),
                prompt: vec![Message::user(problem)],
                payload: Payload::Math(MathPayload { answer: value.to_string(), solution }),
                meta: TaskMeta { source: "aime2024".into(), level: None, subject: None },
            })
        })
        .collect()
}

/// Loads AMC 2023. `answer` is a JSON number (`27.0`); integral values are written as integers
/// (`27`), others in Rust's shortest round-trip form. Ids are `amc2023/<id>`.
pub fn load_amc(path: &Path) -> Result<Vec<Task>, DatasetError> {
    jsonl_records(path)?
        .into_iter()
        .map(|(line, obj)| {
            let loc = Loc { path, line };
            let id = fields::integer(&loc, &obj, "id")?;
            let problem = fields::non_empty(&loc, &obj, "problem")?;
            let value = fields::number(&loc, &obj, "answer")?;
            Ok(Task {
                id: format!("amc2023/{id}"),
                prompt: vec![Message::user(problem)],
                payload: Payload::Math(MathPayload { answer: format_number(value), solution: None }),
                meta: TaskMeta { source: "amc2023".into(), level: None, subject: None },
            })
        })
        .collect()
}
