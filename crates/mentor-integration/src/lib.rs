//! The MENTOR plug-in: it sits between rollout and the GRPO update and changes nothing else.
//!
//! Given the scored groups of a step, the [`Plugin`]:
//! 1. runs the [`CollapseMonitor`]: per-group collapse (no attempt passed, [`is_collapsed`],
//!    whatever partial credit the rewards give), zero-reward-group fraction (ZRF), zero-std
//!    fraction, and a moving window that raises and clears *collapse events*;
//! 2. applies the arm's [`Strategy`]: `vanilla` (nothing), `dapo` (drop all-0/all-1 groups and
//!    refill from a [`TaskSource`]), `full_solution` (the verified reference solution, from
//!    [`Rollout::off_policy`], in place of one failed completion of each collapsed group), or
//!    an intervention by any [`mentor_core::Mentor`] — the MENTOR agents, the static-hint
//!    library or post-hoc refinement;
//! 3. for an intervention: asks the mentor for a guarded hint, re-samples `G'` completions from
//!    the *current* policy on the hinted prompt (through the [`Rollout`] trait), verifies them
//!    (through [`mentor_core::Verifier`]), and escalates the level while the group still fails
//!    and the step's budget lasts (a hinted group is rescued when it is no longer collapsed:
//!    an attempt passed); a per-task [`HintMemory`] remembers the level that last
//!    rescued a task and fades it as the task is solved without hints. The collapsed groups
//!    of a step go through this together, in escalation rounds: each round's hinted prompts
//!    are sampled in one [`Rollout::sample_batch`] call and verified in one judge batch (DAPO's
//!    refills likewise, one batch per refill round);
//! 4. assembles the batch ([`Assembly`]: `replace`, `nurl`, `augment`) and assigns credit
//!    ([`Credit`]: `in_context`, `stripped_is`, `stripped`, `prefix`), producing [`TrainRow`]s
//!    with exactly what the GRPO loss needs: the prompt to condition on, the completion token
//!    ids, behaviour log-probs where an importance ratio applies, and the advantage.
//!
//! It knows no model and no verifier: only the [`Rollout`] and `Verifier` traits.
#![deny(missing_docs)]

mod assembly;
mod collapse;
mod config;
mod error;
mod hint_format;
mod memory;
mod monitor;
mod plugin;
mod rollout;
mod step;

pub use assembly::{advantages, Credit, TrainRow};
pub use collapse::is_collapsed;
pub use config::{Assembly, InterventionConfig, Strategy, Trigger};
pub use error::{Error, Result};
pub use hint_format::{hinted_prompt, BadHintFormat, HintFormat};
pub use memory::{Entry as MemoryEntry, HintMemory};
pub use monitor::{CollapseMonitor, CollapseReport, EventState, GroupOutcome, MonitorConfig, MonitorState};
pub use plugin::{Plugin, PluginState, StepMetrics, StepOutput};
pub use rollout::{Group, Rollout, RolloutError, Sample, SampleRequest, Scored, TaskSource};
pub use step::{
    Ask, FailedAttempt, HintedRequest, InterventionRecord, MentorStep, Need, Outcome, PlanRow, Rescue,
    RowPrompt, RowSource, StepCounts, StepGroup, StepPlan,
};
