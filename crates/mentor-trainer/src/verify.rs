//! The verifier a task needs, chosen by its domain: the math checker for math tasks, the
//! code sandbox (when built with the `code` feature and started) for code tasks.

use mentor_core::{Domain, Task, Verdict, Verifier, VerifierError};
use mentor_verify_math::MathVerifier;

/// Dispatches each task to the math or the code verifier.
pub struct DomainVerifier<'a> {
    math: MathVerifier,
    code: Option<&'a dyn Verifier>,
}

impl<'a> DomainVerifier<'a> {
    /// A verifier for math tasks, and for code tasks when `code` is given.
    pub fn new(code: Option<&'a dyn Verifier>) -> Self {
        Self { math: MathVerifier::default(), code }
    }

    fn pick(&self, task: &Task) -> Result<&dyn Verifier, VerifierError> {
        match task.domain() {
            Domain::Code => self.code.ok_or_else(|| VerifierError::Unsupported {
                verifier: "trainer",
                task_id: task.id.clone(),
                reason: "code tasks need the sandbox (a build with the `code` feature)".into(),
            }),
            Domain::Math => Ok(&self.math),
        }
    }
}

impl Verifier for DomainVerifier<'_> {
    fn name(&self) -> &'static str {
        "domain"
    }

    fn verify(&self, task: &Task, completion: &str) -> Result<Verdict, VerifierError> {
        self.pick(task)?.verify(task, completion)
    }

    fn verify_batch(&self, items: &[(&Task, &str)]) -> Vec<Result<Verdict, VerifierError>> {
        // One batch per domain so the code sandbox can run its share in parallel.
        let (code, math): (Vec<usize>, Vec<usize>) =
            (0..items.len()).partition(|&i| items[i].0.domain() == Domain::Code);
        let mut out: Vec<Option<Result<Verdict, VerifierError>>> = (0..items.len()).map(|_| None).collect();
        for idx in [math, code] {
            let Some(&first) = idx.first() else { continue };
            let batch: Vec<(&Task, &str)> = idx.iter().map(|&i| items[i]).collect();
            let results = match self.pick(items[first].0) {
                Ok(v) => v.verify_batch(&batch),
                Err(_) => batch.iter().map(|(t, c)| self.verify(t, c)).collect(),
            };
            for (i, r) in idx.into_iter().zip(results) {
                out[i] = Some(r);
            }
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(VerifierError::Internal { verifier: "trainer", message: "missing verdict".into() })
                })
            })
            .collect()
    }
}
