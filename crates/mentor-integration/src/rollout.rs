//! What the plug-in needs from the policy and the data: the [`Rollout`] and [`TaskSource`]
//! traits, and the sample / group types that flow through a step.

use mentor_core::{Completion, Message, Task, Verdict};

/// One sampled completion with what the loss needs from the sampler.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The completion text (without any forced prefix).
    pub completion: Completion,
    /// Token ids of a forced assistant prefix (empty when none was given).
    pub prefix_ids: Vec<u32>,
    /// Token ids the policy sampled.
    pub ids: Vec<u32>,
    /// The sampling (behaviour) log-prob of each sampled id.
    pub logprobs: Vec<f32>,
}

/// A sample with its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The sample.
    pub sample: Sample,
    /// Its judgement.
    pub verdict: Verdict,
}

/// The G scored completions of one task, sampled without hints.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The task.
    pub task: Task,
    /// Its completions.
    pub samples: Vec<Scored>,
}

impl Group {
    /// Rewards in sample order.
    pub fn rewards(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.verdict.reward()).collect()
    }

    /// Whether each sample passed ([`Verdict::passed`]: binary correctness), in sample order.
    pub fn passed(&self) -> Vec<bool> {
        self.samples.iter().map(|s| s.verdict.passed()).collect()
    }

    /// Whether no sample passed (a collapsed group), whatever partial credit the rewards give:
    /// [`crate::is_collapsed`] of the verdicts' `passed`.
    pub fn is_collapsed(&self) -> bool {
        crate::is_collapsed(self.samples.iter().map(|s| s.verdict.passed()))
    }
}

/// What to sample: a prompt, optionally a forced start of the assistant's answer, how many.
#[derive(Debug, Clone, Copy)]
pub struct SampleRequest<'a> {
    /// The task being attempted.
    pub task: &'a Task,
    /// The prompt messages (the task's prompt, plus a hint message for hinted attempts).
    pub prompt: &'a [Message],
    /// Text the assistant's answer is forced to start with; the policy continues after it.
    pub assistant_prefix: Option<&'a str>,
    /// Number of completions.
    pub n: usize,
}

/// What a [`Rollout`] fails with: any error of the implementor's (as mentor-grpo's update
/// closure), kept as the source of [`crate::Error::Rollout`].
pub type RolloutError = Box<dyn std::error::Error + Send + Sync>;

/// The current policy, as the plug-in sees it. Sampling must be on-policy (the weights the
/// next update starts from) with the training sampler (temperature, top-k, top-p), and each
/// [`Sample::logprobs`] the log-probs of the distribution the tokens were drawn from.
///
/// The plug-in asks through [`Rollout::sample_batch`] only: all hinted attempts of a step's
/// escalation round, or all DAPO refills of a refill round, in one call. An implementor that
/// can batch (one generate over every row) overrides it; the default samples each request in
/// turn through [`Rollout::sample`].
pub trait Rollout {
    /// Samples `request.n` completions.
    fn sample(&mut self, request: &SampleRequest<'_>) -> Result<Vec<Sample>, RolloutError>;

    /// Samples every request: one list per request, in request order, each of that request's
    /// `n` completions (prompt, assistant prefix and `n` are per request). The default calls
    /// [`Rollout::sample`] once per request, in order.
    fn sample_batch(&mut self, requests: &[SampleRequest<'_>]) -> Result<Vec<Vec<Sample>>, RolloutError> {
        requests.iter().map(|r| self.sample(r)).collect()
    }

    /// `text` as a completion of `task` that the policy did not sample (the reference solution
    /// of the `full_solution` arm): its token ids ending with the end-of-sequence id, as a
    /// sampled completion that stopped would be. Its [`Sample::logprobs`] are the current
    /// policy's; rows built from it are trained without an importance ratio. A rollout that
    /// cannot tokenize says so (the default), and the arm that needs it fails the step.
    fn off_policy(&mut self, task: &Task, text: &str) -> Result<Sample, RolloutError> {
        let _ = (task, text);
        Err("this rollout cannot encode off-policy completions (the `full_solution` arm needs it)".into())
    }

    /// How many tokens `text` is to the policy (what a hint costs, [`crate::StepMetrics::hint_tokens`]).
    /// The default counts characters; a rollout with a tokenizer counts its tokens.
    fn token_count(&self, text: &str) -> usize {
        text.chars().count()
    }
}

/// More tasks, for DAPO's refill of dropped groups.
pub trait TaskSource {
    /// The next training task, or `None` when exhausted.
    fn next_task(&mut self) -> Option<Task>;
}
