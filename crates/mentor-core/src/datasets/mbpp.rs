//! MBPP: the original `mbpp.jsonl` (`text`, `code`, `test_list`, `test_setup_code`) and the
//! sanitized `sanitized-mbpp.json` array (`prompt`, `code`, `test_list`, `test_imports`).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{fields, json_array_records, jsonl_records, read, Loc};
use crate::{CodeHarness, CodePayload, DatasetError, Message, Payload, Task, TaskMeta};

/// The conventional MBPP splits by `task_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MbppSplit {
    /// Task ids 1–10 (few-shot prompt examples).
    Prompt,
    /// Task ids 11–510, the standard test split (the default).
    Test,
    /// Task ids 511–600.
    Validation,
    /// Task ids 601–974.
    Train,
    /// Every record.
    All,
}

impl MbppSplit {
    /// The name of the split `task_id` belongs to (`prompt`, `test`, `validation`, `train`,
    /// or `other` outside 1–974): the middle part of the task's id, `mbpp/test/11`.
    pub fn name_of(task_id: i64) -> &'static str {
        match task_id {
            1..=10 => "prompt",
            11..=510 => "test",
            511..=600 => "validation",
            601..=974 => "train",
            _ => "other",
        }
    }

    /// Whether `task_id` belongs to this split.
    pub fn contains(self, task_id: i64) -> bool {
        match self {
            MbppSplit::Prompt => (1..=10).contains(&task_id),
            MbppSplit::Test => (11..=510).contains(&task_id),
            MbppSplit::Validation => (511..=600).contains(&task_id),
            MbppSplit::Train => (601..=974).contains(&task_id),
            MbppSplit::All => true,
        }
    }
}

/// Loads MBPP from either file format (a file whose first non-blank byte is `[` is read as the
/// sanitized JSON array), keeping the records of `split`. Ids are `mbpp/<split>/<task_id>`.
pub fn load_mbpp(path: &Path, split: MbppSplit) -> Result<Vec<Task>, DatasetError> {
    let bytes = read(path)?;
    let is_array = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    let records = if is_array { json_array_records(path)? } else { jsonl_records(path)? };
    let mut tasks = Vec::new();
    for (line, obj) in records {
        let loc = Loc { path, line };
        let task_id = fields::integer(&loc, &obj, "task_id")?;
        if !split.contains(task_id) {
            continue;
        }
        let text = if is_array {
            fields::non_empty(&loc, &obj, "prompt")?
        } else {
            fields::non_empty(&loc, &obj, "text")?
        };
        let code = fields::opt_string(&loc, &obj, "code")?;
        let tests = fields::strings(&loc, &obj, "test_list", true)?;
        if tests.is_empty() {
            return Err(fields::invalid(&loc, "test_list", "is empty"));
        }
        let setup_code = fields::opt_string(&loc, &obj, "test_setup_code")?.unwrap_or_default();
        let imports = fields::strings(&loc, &obj, "test_imports", false)?;
        let prompt = format!(
            "You are an expert Python programmer, and here is your task: {}\nYour code should pass these tests:\n\n{}\n\nReply with the code in a ```python code block.",
            text.trim(),
            tests.join("\n")
        );
        tasks.push(Task {
            id: format!("mbpp/{}/{task_id}", MbppSplit::name_of(task_id)),
            prompt: vec![Message::user(prompt)],
            payload: Payload::Code(CodePayload {
                harness: CodeHarness::Mbpp { tests, setup_code, imports },
                reference_solution: code,
            }),
            meta: TaskMeta { source: "mbpp".into(), level: None, subject: None },
        });
    }
    Ok(tasks)
}
