//! MATH-500: `{"problem", "solution", "answer", "subject", "level", "unique_id"}`.

use std::path::Path;

use super::{fields, jsonl_records, Loc};
use crate::{DatasetError, MathPayload, Message, Payload, Task, TaskMeta};

/// Loads a MATH / MATH-500 JSONL file. Ids are the `unique_id`s (`test/precalculus/807.json`);
/// `level` (1–5) and `subject` go into [`TaskMeta`].
pub fn load_math500(path: &Path) -> Result<Vec<Task>, DatasetError> {
    jsonl_records(path)?
        .into_iter()
        .map(|(line, obj)| {
            let loc = Loc { path, line };
            let problem = fields::non_empty(&loc, &obj, "problem")?;
            let answer = fields::non_empty(&loc, &obj, "answer")?;
            let solution = fields::opt_string(&loc, &obj, "solution")?;
            let subject = fields::opt_string(&loc, &obj, "subject")?;
            let id = fields::non_empty(&loc, &obj, "unique_id")?;
            let level = fields::integer(&loc, &obj, "level")?;
            let level = u32::try_from(level)
                .ok()
                .filter(|l| (1..=5).contains(l))
                .ok_or_else(|| fields::invalid(&loc, "level", format!("{level} is not in 1..=5")))?;
            Ok(Task {
                id,
                prompt: vec![Message::user(problem)],
                payload: Payload::Math(MathPayload { answer: answer.trim().to_string(), solution }),
                meta: TaskMeta { source: "math500".into(), level: Some(level), subject },
            })
        })
        .collect()
}
