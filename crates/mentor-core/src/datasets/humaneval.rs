//! HumanEval: `{"task_id", "prompt", "canonical_solution", "test", "entry_point"}`.

use std::path::Path;

use super::{fields, jsonl_records, Loc};
use crate::{CodeHarness, CodePayload, DatasetError, Message, Payload, Task, TaskMeta};

/// Loads HumanEval. The user message asks to complete the function and shows its signature and
/// docstring; the harness keeps the raw prompt so the completion (a body or a whole function)
/// can be assembled as `prompt + completion + test + check(entry_point)`.
pub fn load_humaneval(path: &Path) -> Result<Vec<Task>, DatasetError> {
    jsonl_records(path)?
        .into_iter()
        .map(|(line, obj)| {
            let loc = Loc { path, line };
            let id = fields::non_empty(&loc, &obj, "task_id")?;
            let prompt = fields::non_empty(&loc, &obj, "prompt")?;
            let test = fields::non_empty(&loc, &obj, "test")?;
            let entry_point = fields::non_empty(&loc, &obj, "entry_point")?;
            if !entry_point.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return Err(fields::invalid(&loc, "entry_point", format!("`{entry_point}` is not a Python identifier")));
            }
            let solution = fields::opt_string(&loc, &obj, "canonical_solution")?;
            Ok(Task {
                id,
                prompt: vec![Message::user(format!(
                    "Complete the following Python function. Reply with the complete function in a ```python code block.\n\n```python\n{prompt}```"
                ))],
                payload: Payload::Code(CodePayload {
                    harness: CodeHarness::HumanEval { prompt, test, entry_point },
                    reference_solution: solution,
                }),
                meta: TaskMeta { source: "humaneval".into(), level: None, subject: None },
            })
        })
        .collect()
}
