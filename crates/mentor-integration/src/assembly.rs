//! Batch assembly and credit assignment: turning unhinted and hinted groups into the rows the
//! GRPO loss consumes.

use mentor_core::{HintLevel, Message};
use mentor_grpo::{advantages_with_baselines, ScaleRewards};
use serde::{Deserialize, Serialize};

use crate::rollout::Scored;
use crate::Result;

/// Which prompt a hinted completion's log-probs are taken under, and how its advantage is set
/// (where this sits in a training step: `docs/ARCHITECTURE.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Credit {
    /// Log-probs given the hinted prompt: on-policy with respect to what was sampled.
    InContext,
    /// Log-probs given the original prompt, with the hinted sampling log-probs as the
    /// behaviour ("old") log-probs, so GRPO's clipped importance ratio corrects for the hint
    /// (Guide-GRPO). The ratio is clipped by the GRPO config's `epsilon`/`epsilon_high`.
    StrippedIs,
    /// Log-probs given the original prompt, no ratio (self-distillation).
    Stripped,
    /// The hint's worked steps move into the completion under the original prompt (steps +
    /// sampled continuation, all in the loss); the advantage is taken against the failed
    /// unhinted group's baseline (`A = r − mean(unhinted rewards)`), not re-normalised inside
    /// the hinted group, where the shared hint tokens' gradients would cancel.
    Prefix,
}

/// One row of the GRPO batch: everything the loss needs, nothing model-specific.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainRow {
    /// The task.
    pub task_id: String,
    /// The row's group in the assembled batch (rows of a group are contiguous).
    pub group: usize,
    /// The messages the loss's log-probs condition on.
    pub prompt: Vec<Message>,
    /// Tokens forced after the rendered prompt, part of the context but not of the loss (the
    /// hint's worked steps of an in-context row sampled with `prefix` credit; usually empty).
    pub context_ids: Vec<u32>,
    /// The completion tokens in the loss (for `prefix` credit: the hint's steps, then the
    /// sampled continuation).
    pub completion_ids: Vec<u32>,
    /// How many of `completion_ids` the policy did not sample itself: a forced prefix credited
    /// as the completion (`prefix` credit), or all of an off-policy reference (`full_solution`).
    pub given_tokens: usize,
    /// Behaviour log-probs aligned with `completion_ids`, when an importance ratio applies
    /// (`stripped_is`); `None`: on-policy (ratio 1 at the first iteration).
    pub behaviour_logprobs: Option<Vec<f32>>,
    /// The reward.
    pub reward: f64,
    /// The fixed baseline of the row's advantage (`reward − baseline`), for `prefix` credit's
    /// hinted rows (the failed unhinted group's mean reward); `None`: group-relative. The
    /// advantages themselves are computed by mentor-grpo, with the GRPO config's
    /// `scale_rewards` ([`advantages`] gives them outside a GRPO update).
    pub baseline: Option<f64>,
    /// Whether generation was cut by the length budget.
    pub truncated: bool,
    /// The hint level this row was sampled with (`None`: unhinted).
    pub hint_level: Option<HintLevel>,
}

/// A group being assembled: rows plus how their advantages are set.
pub(crate) struct PendingGroup {
    pub rows: Vec<TrainRow>,
    /// `Some(baseline)`: advantages are `reward − baseline` (prefix credit); `None`: normal
    /// group-relative advantages.
    pub baseline: Option<f64>,
}

/// A row from a scored sample.
pub(crate) fn row(
    task_id: &str,
    prompt: Vec<Message>,
    s: &Scored,
    with_prefix: bool,
    behaviour: bool,
    hint_level: Option<HintLevel>,
) -> TrainRow {
    // A forced prefix is either credited as part of the completion or stays in the context.
    let (mut ids, context_ids) = if with_prefix {
        (s.sample.prefix_ids.clone(), Vec::new())
    } else {
        (Vec::new(), s.sample.prefix_ids.clone())
    };
    let given_tokens = if with_prefix { ids.len() } else { 0 };
    ids.extend_from_slice(&s.sample.ids);
    TrainRow {
        task_id: task_id.to_string(),
        group: 0,
        prompt,
        context_ids,
        completion_ids: ids,
        given_tokens,
        behaviour_logprobs: behaviour.then(|| s.sample.logprobs.clone()),
        reward: s.verdict.reward(),
        baseline: None,
        truncated: s.sample.completion.is_truncated(),
        hint_level,
    }
}

/// Numbers the groups, sets their rows' baselines, and flattens to rows.
pub(crate) fn finish(groups: Vec<PendingGroup>) -> Vec<TrainRow> {
    let mut out = Vec::with_capacity(groups.iter().map(|g| g.rows.len()).sum());
    for (g, pg) in groups.into_iter().enumerate() {
        for mut r in pg.rows {
            r.group = g;
            r.baseline = pg.baseline;
            out.push(r);
        }
    }
    out
}

/// The advantage of each row, as a GRPO update with `scale` (the config's `scale_rewards`)
/// computes it: [`mentor_grpo::advantages_with_baselines`] over the rows' rewards, groups and
/// baselines.
pub fn advantages(rows: &[TrainRow], scale: ScaleRewards) -> Result<Vec<f64>> {
    let rewards: Vec<f64> = rows.iter().map(|r| r.reward).collect();
    let groups: Vec<usize> = rows.iter().map(|r| r.group).collect();
    let baselines: Vec<Option<f64>> = rows.iter().map(|r| r.baseline).collect();
    Ok(advantages_with_baselines(&rewards, &groups, &baselines, scale)?)
}
