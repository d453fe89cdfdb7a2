//! GSM8K: `{"question", "answer"}`, the answer ending in a `#### <number>` line.

use std::path::Path;

use super::{fields, jsonl_records, stem, Loc};
use crate::{DatasetError, MathPayload, Message, Payload, Task, TaskMeta};

/// Loads a GSM8K JSONL file. Ids are `gsm8k/<file stem>/<0-based index>`; the gold answer is
/// the text after the last `#### ` (thousands separators kept: the math checker handles them);
/// the rationale before it is kept as the privileged reference solution.
pub fn load_gsm8k(path: &Path) -> Result<Vec<Task>, DatasetError> {
    let split = stem(path);
    jsonl_records(path)?
        .into_iter()
        .enumerate()
        .map(|(index, (line, obj))| {
            let loc = Loc { path, line };
            let question = fields::non_empty(&loc, &obj, "question")?;
            let answer = fields::non_empty(&loc, &obj, "answer")?;
            let Some(pos) = answer.rfind("####") else {
                return Err(fields::invalid(&loc, "answer", "has no `#### <answer>` line"));
            };
            let gold = answer[pos + 4..].trim().to_string();
            if gold.is_empty() {
                return Err(fields::invalid(&loc, "answer", "the `####` line is empty"));
            }
            let solution = answer[..pos].trim_end().to_string();
            Ok(Task {
                id: format!("gsm8k/{split}/{index}"),
                prompt: vec![Message::user(question)],
                payload: Payload::Math(MathPayload {
                    answer: gold,
                    solution: (!solution.is_empty()).then_some(solution),
                }),
                meta: TaskMeta { source: "gsm8k".into(), level: None, subject: None },
            })
        })
        .collect()
}
