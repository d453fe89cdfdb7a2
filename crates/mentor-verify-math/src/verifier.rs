//! The [`Verifier`] implementation for math tasks.

use mentor_core::{Payload, Task, Verdict, Verifier, VerifierError};
use rayon::prelude::*;

use crate::config::Config;

/// Judges math tasks ([`Payload::Math`]) by their gold answer, reading the task's question
/// ([`Task::question`]) for the words an answer may use ([`crate::check_with_question`]).
/// Code tasks are refused with
/// [`VerifierError::Unsupported`].
#[derive(Debug, Clone, Default)]
pub struct MathVerifier {
    config: Config,
}

impl MathVerifier {
    /// A verifier with the given settings.
    pub fn new(config: Config) -> Self {
        Self { config }
    }

    /// The settings in use.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

impl Verifier for MathVerifier {
    fn name(&self) -> &'static str {
        "math"
    }

    fn verify(&self, task: &Task, completion: &str) -> Result<Verdict, VerifierError> {
        match &task.payload {
            Payload::Math(m) => {
                // The question's words name what the answer counts ("42 pencils").
                let q = task.question();
                let q = (!q.trim().is_empty()).then_some(q);
                Ok(crate::check_with_question(&m.answer, completion, q, &self.config))
            }
            Payload::Code(_) => Err(VerifierError::Unsupported {
                verifier: "math",
                task_id: task.id.clone(),
                reason: "code tasks are judged by running tests, not by an answer".into(),
            }),
        }
    }

    fn verify_batch(&self, items: &[(&Task, &str)]) -> Vec<Result<Verdict, VerifierError>> {
        items.par_iter().map(|(t, c)| self.verify(t, c)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mentor_core::{CodeHarness, CodePayload, Message, TaskMeta};

    #[test]
    fn math_tasks_are_judged_code_tasks_refused() {
        let v = MathVerifier::default();
        let t = Task::math("t/1", "2+3?", "5");
        assert!(v.verify(&t, "\\boxed{5}").unwrap().passed());
        assert!(!v.verify(&t, "\\boxed{6}").unwrap().passed());
        let code = Task {
            id: "c/1".into(),
            prompt: vec![Message::user("write f")],
            payload: Payload::Code(CodePayload {
                harness: CodeHarness::Mbpp {
                    tests: vec!["assert f() == 1".into()],
                    setup_code: String::new(),
                    imports: vec![],
                },
                reference_solution: None,
            }),
            meta: TaskMeta::default(),
        };
        assert!(matches!(v.verify(&code, "x"), Err(VerifierError::Unsupported { .. })));
        let batch = v.verify_batch(&[(&t, "5"), (&code, "x"), (&t, "#### 4")]);
        assert!(batch[0].as_ref().unwrap().passed());
        assert!(batch[1].is_err());
        assert!(!batch[2].as_ref().unwrap().passed());
    }
}
