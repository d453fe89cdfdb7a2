//! [`CodeVerifier`]: the [`mentor_core::Verifier`] for code tasks.

use mentor_core::{
    CodeFeedback, CodeHarness, CodeOutcome, Feedback, Payload, Task, Verdict, Verifier, VerifierError,
};

use crate::extract::{extract_code, humaneval_program};
use crate::harness::{run_stdio, run_suite, Setup, Suite};
use crate::sandbox::block_on;
use crate::{Error, Limits, Result, Sandbox};

/// How a verdict's reward is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RewardMode {
    /// 1 when every test passed, else 0 (the default; `tests_passed` is still reported in the
    /// feedback). Binary rewards cannot be farmed by passing the easy half of a suite.
    #[default]
    Binary,
    /// The fraction of tests passed (`Verdict::partial`), 1 and `passed` only when all pass.
    /// Tampering, syntax errors and limits always give 0.
    FractionPassed,
}

/// Configuration of a [`CodeVerifier`].
#[derive(Debug, Clone, Default)]
pub struct VerifierConfig {
    /// Limits of each execution (`None`: the sandbox's defaults).
    pub limits: Option<Limits>,
    /// Binary or partial credit.
    pub reward: RewardMode,
}

/// Judges code completions of [`Payload::Code`] tasks in a [`Sandbox`].
#[derive(Debug)]
pub struct CodeVerifier<'s> {
    sandbox: &'s Sandbox,
    limits: Limits,
    reward: RewardMode,
}

const NAME: &str = "code";

impl<'s> CodeVerifier<'s> {
    /// A verifier running in `sandbox`.
    pub fn new(sandbox: &'s Sandbox, config: VerifierConfig) -> Self {
        let limits = config.limits.unwrap_or_else(|| sandbox.limits().clone());
        Self { sandbox, limits, reward: config.reward }
    }

    /// Judges one completion (async).
    pub async fn verify_async(&self, task: &Task, completion: &str) -> Result<Verdict> {
        let Payload::Code(code) = &task.payload else {
            return Err(Error::BadTask { task_id: task.id.clone(), reason: "not a code task".into() });
        };
        let prefer = match &code.harness {
            CodeHarness::HumanEval { entry_point, .. } => Some(entry_point.as_str()),
            _ => None,
        };
        let tests_total = match &code.harness {
            CodeHarness::Mbpp { tests, .. } => tests.len(),
            CodeHarness::Stdio { cases } => cases.len(),
            CodeHarness::HumanEval { .. } => 0,
        };
        let Some(extracted) = extract_code(completion, prefer) else {
            return Ok(Verdict::fail(Feedback::Code(CodeFeedback {
                outcome: CodeOutcome::NoCode,
                tests_total,
                tests_passed: 0,
                failed_test: None,
                exception: None,
                stdout: String::new(),
                stderr: String::new(),
                output_truncated: false,
                detail: Some("no code found in the completion".into()),
            })));
        };
        let fb = match &code.harness {
            CodeHarness::HumanEval { prompt, test, entry_point } => {
                let program = humaneval_program(prompt, &extracted.code, entry_point);
                let suite = Suite::HumanEval { prompt, test, entry_point };
                run_suite(self.sandbox, &task.id, &program, Setup::default(), suite, &self.limits).await?
            }
            CodeHarness::Mbpp { tests, setup_code, imports } => {
                let before = imports.join("\n");
                let setup = Setup { before: &before, after: setup_code };
                run_suite(self.sandbox, &task.id, &extracted.code, setup, Suite::Mbpp { tests }, &self.limits)
                    .await?
            }
            CodeHarness::Stdio { cases } => {
                run_stdio(self.sandbox, &extracted.code, cases, &self.limits).await?
            }
        };
        self.verdict(fb)
    }

    fn verdict(&self, fb: CodeFeedback) -> Result<Verdict> {
        if fb.outcome == CodeOutcome::Passed {
            return Ok(Verdict::pass(Feedback::Code(fb)));
        }
        let partial = matches!(fb.outcome, CodeOutcome::WrongAnswer | CodeOutcome::RuntimeError);
        match self.reward {
            RewardMode::FractionPassed if partial && fb.tests_total > 0 => {
                let r = fb.tests_passed.min(fb.tests_total) as f64 / fb.tests_total as f64;
                Verdict::partial(r, Feedback::Code(fb))
                    .map_err(|e| Error::Protocol(format!("partial reward out of range: {e}")))
            }
            _ => Ok(Verdict::fail(Feedback::Code(fb))),
        }
    }
}

fn to_verifier_error(e: Error) -> VerifierError {
    match e {
        Error::BadTask { task_id, reason } => VerifierError::Unsupported { verifier: NAME, task_id, reason },
        other => VerifierError::Internal { verifier: NAME, message: other.to_string() },
    }
}

impl Verifier for CodeVerifier<'_> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn verify(&self, task: &Task, completion: &str) -> Result<Verdict, VerifierError> {
        block_on(self.verify_async(task, completion)).and_then(|r| r).map_err(to_verifier_error)
    }

    fn verify_batch(&self, items: &[(&Task, &str)]) -> Vec<Result<Verdict, VerifierError>> {
        match self
            .sandbox
            .parallel(items, |rt, (task, completion)| rt.block_on(self.verify_async(task, completion)))
        {
            Ok(results) => results.into_iter().map(|r| r.map_err(to_verifier_error)).collect(),
            Err(e) => {
                let msg = e.to_string();
                items
                    .iter()
                    .map(|_| Err(VerifierError::Internal { verifier: NAME, message: msg.clone() }))
                    .collect()
            }
        }
    }
}
