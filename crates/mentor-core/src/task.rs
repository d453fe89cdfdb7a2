//! Tasks: what the policy is asked to solve, and the privileged data the verifiers and the
//! mentor use to judge and diagnose its attempts.

use serde::{Deserialize, Serialize};

/// Who speaks a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// System instructions.
    System,
    /// The user (the task statement, a hint).
    User,
    /// The model.
    Assistant,
}

/// One chat message. Prompts are lists of messages so that a policy renders them through its
/// own chat template; a plain-text policy (the embedded demo) concatenates the contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: Role::System, content: content.into() }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: Role::User, content: content.into() }
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self { role: Role::Assistant, content: content.into() }
    }
}

/// Where a task came from and how hard it is. Purely descriptive: no verifier reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskMeta {
    /// Dataset or generator name (`gsm8k`, `math500`, `humaneval`, `mbpp`, `aime2024`,
    /// `amc2023`, or a synthetic curriculum's name).
    pub source: String,
    /// Difficulty level when the source has one (MATH levels 1–5, curriculum levels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u32>,
    /// Subject or category when the source has one (MATH subjects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// Privileged data of a math task: the gold answer, and the worked solution when the dataset
/// has one. The learner never sees it; verifiers and the mentor do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MathPayload {
    /// The gold final answer, as the dataset writes it (LaTeX allowed: `\frac{1}{2}`,
    /// `\left( 3, \frac{\pi}{2} \right)`, `025`).
    pub answer: String,
    /// A reference worked solution (GSM8K rationale with `<<a*b=c>>` calculator steps, MATH
    /// solution text), used by the mentor to locate the first wrong step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solution: Option<String>,
}

/// One stdin/stdout test case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoCase {
    /// What the program reads on stdin.
    pub input: String,
    /// What it must print (compared after whitespace normalisation).
    pub output: String,
}

/// How a code completion is assembled into a program and judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CodeHarness {
    /// HumanEval: `prompt + completion + "\n" + test + "\n" + "check(entry_point)"`.
    HumanEval {
        /// The function signature and docstring the completion continues.
        prompt: String,
        /// The test code defining `check(candidate)`.
        test: String,
        /// The function under test.
        entry_point: String,
    },
    /// MBPP: imports, then the solution, then the setup code, then each `assert` line (the
    /// setup code runs after the solution because some tasks' setup uses its classes).
    Mbpp {
        /// `assert ...` lines, each one test.
        tests: Vec<String>,
        /// Code run after the solution and before the tests (`test_setup_code`).
        #[serde(default)]
        setup_code: String,
        /// Import lines run before the solution (`test_imports` of the sanitized set).
        #[serde(default)]
        imports: Vec<String>,
    },
    /// A whole program judged on stdin/stdout cases.
    Stdio {
        /// The cases, each one test.
        cases: Vec<IoCase>,
    },
}

/// Privileged data of a code task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodePayload {
    /// How the completion is run and judged.
    pub harness: CodeHarness,
    /// A reference solution when the dataset has one (never shown to the learner; the guard
    /// rejects hints that reproduce it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_solution: Option<String>,
}

/// The domain-specific, privileged part of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "domain", rename_all = "snake_case")]
pub enum Payload {
    /// A math problem with a checkable final answer.
    Math(MathPayload),
    /// A programming problem with tests.
    Code(CodePayload),
}

/// One problem the policy is asked to solve.
///
/// `prompt` is what the learner sees; `payload` is privileged (gold answer, tests, reference
/// solution) and is only read by verifiers and the mentor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Stable identifier, unique within a dataset (`gsm8k/test/17`, `HumanEval/0`).
    pub id: String,
    /// The prompt as chat messages (usually one user message).
    pub prompt: Vec<Message>,
    /// Gold answer / tests / reference solution.
    pub payload: Payload,
    /// Source, level, subject.
    #[serde(default)]
    pub meta: TaskMeta,
}

impl Task {
    /// A math task with one user message and a gold answer.
    pub fn math(id: impl Into<String>, question: impl Into<String>, answer: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            prompt: vec![Message::user(question)],
            payload: Payload::Math(MathPayload { answer: answer.into(), solution: None }),
            meta: TaskMeta::default(),
        }
    }

    /// The text of the last user message: the problem statement in single-turn prompts.
    pub fn question(&self) -> &str {
        self.prompt.iter().rev().find(|m| m.role == Role::User).map(|m| m.content.as_str()).unwrap_or("")
    }

    /// The gold answer of a math task; `None` for code tasks.
    pub fn reference_answer(&self) -> Option<&str> {
        match &self.payload {
            Payload::Math(m) => Some(&m.answer),
            Payload::Code(_) => None,
        }
    }

    /// The reference worked solution (math) or reference code (code), when present.
    pub fn reference_solution(&self) -> Option<&str> {
        match &self.payload {
            Payload::Math(m) => m.solution.as_deref(),
            Payload::Code(c) => c.reference_solution.as_deref(),
        }
    }

    /// A copy whose reference solution (math) or reference code (code) is `solution`.
    pub fn with_reference_solution(&self, solution: String) -> Task {
        let mut t = self.clone();
        match &mut t.payload {
            Payload::Math(m) => m.solution = Some(solution),
            Payload::Code(c) => c.reference_solution = Some(solution),
        }
        t
    }

    /// Which verifier family judges this task.
    pub fn domain(&self) -> Domain {
        match self.payload {
            Payload::Math(_) => Domain::Math,
            Payload::Code(_) => Domain::Code,
        }
    }
}

/// The verifier family of a task: what its payload holds and what judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// A final answer checked by the math verifier.
    Math,
    /// A program run against tests in the code sandbox.
    Code,
}

impl Domain {
    /// `"math"` or `"code"`, as in prompt files and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Math => "math",
            Domain::Code => "code",
        }
    }
}

impl std::fmt::Display for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_round_trip_keeps_payload_tagged() {
        let task = Task {
            id: "HumanEval/0".into(),
            prompt: vec![Message::user("def f():\n")],
            payload: Payload::Code(CodePayload {
                harness: CodeHarness::HumanEval {
                    prompt: "def f():\n".into(),
                    test: "def check(c): assert c() == 1".into(),
                    entry_point: "f".into(),
                },
                reference_solution: Some("    return 1\n".into()),
            }),
            meta: TaskMeta { source: "humaneval".into(), level: None, subject: None },
        };
        let json = serde_json::to_string(&task).unwrap();
        assert!(json.contains(r#""domain":"code""#), "{json}");
        assert!(json.contains(r#""kind":"human_eval""#), "{json}");
        let back: Task = serde_json::from_str(&json).unwrap();
        assert_eq!(back, task);
        assert_eq!(back.domain(), Domain::Code);
        assert_eq!((Domain::Code.as_str(), Domain::Math.to_string()), ("code", "math".to_string()));
        assert_eq!(serde_json::to_string(&Domain::Math).unwrap(), "\"math\"");
        assert_eq!(back.reference_answer(), None);
        assert_eq!(back.reference_solution(), Some("    return 1\n"));
    }

    #[test]
    fn question_is_last_user_message() {
        let mut t = Task::math("x", "first", "1");
        t.prompt.insert(0, Message::system("sys"));
        t.prompt.push(Message::assistant("a"));
        t.prompt.push(Message::user("second"));
        assert_eq!(t.question(), "second");
    }
}
