//! One MENTOR step as a plan-then-feed-back state machine: [`MentorStep`].
//!
//! The machine holds the intervention logic of a step (which collapsed groups are intervened
//! on, budgets, escalation rounds, the hinted prompts, rescue, batch assembly and credit) and
//! none of the machinery: it never calls a mentor, a policy or a verifier. Its driver asks
//! [`MentorStep::need`] what to do next and feeds the results back:
//!
//! 1. [`Need::Hints`]: ask the mentor for these groups' hints, in order, and hand the answers to
//!    [`MentorStep::answer`];
//! 2. [`Need::Samples`]: sample (on-policy, from the current weights) and verify these hinted
//!    prompts, and hand one [`Outcome`] per completion to [`MentorStep::feed`];
//! 3. [`Need::Done`]: [`MentorStep::finish`] gives the [`StepPlan`]: which rows the batch holds
//!    (an unhinted completion, or a hinted one by attempt and sample), under which prompt, with
//!    the forced prefix in the loss or in the context, behaviour log-probs or not, and the
//!    baseline of their advantage.
//!
//! [`crate::Plugin::process`] drives it through its [`crate::Rollout`] and
//! [`mentor_core::Verifier`]; the Python trainer (`mentor_rl.MentorGRPOTrainer`) drives the
//! same machine through TRL's generation and reward functions, so both make the same
//! interventions from the same configuration.

use std::collections::BTreeMap;

use mentor_core::{Attempt, Diagnosis, GuardRejection, Hint, HintLevel, Intervention, Message, Task};
use serde::{Deserialize, Serialize};

use crate::assembly::Credit;
use crate::config::{Assembly, InterventionConfig, Trigger};
use crate::memory::HintMemory;
use crate::rollout::Group;
use crate::{Error, Result};

/// What the verifier said of one failed attempt of an intervened group, in short.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "domain", rename_all = "snake_case")]
pub enum FailedAttempt {
    /// A math answer.
    Math {
        /// Why it failed.
        outcome: mentor_core::MathOutcome,
        /// The final answer read from the completion.
        extracted: Option<String>,
    },
    /// A program.
    Code {
        /// Why it failed.
        outcome: mentor_core::CodeOutcome,
        /// The first failing test's source.
        failed_test: Option<String>,
        /// Tests passed of `tests_total`.
        tests_passed: usize,
        /// Tests run.
        tests_total: usize,
    },
    /// The verifier failed on it.
    VerifierError {
        /// What failed.
        message: String,
    },
}

impl FailedAttempt {
    pub(crate) fn of(feedback: &mentor_core::Feedback) -> Self {
        match feedback {
            mentor_core::Feedback::Math(m) => {
                FailedAttempt::Math { outcome: m.outcome, extracted: m.extracted.clone() }
            }
            mentor_core::Feedback::Code(c) => FailedAttempt::Code {
                outcome: c.outcome,
                failed_test: c.failed_test.as_ref().map(|t| t.source.clone()),
                tests_passed: c.tests_passed,
                tests_total: c.tests_total,
            },
            mentor_core::Feedback::VerifierError { message } => {
                FailedAttempt::VerifierError { message: message.clone() }
            }
        }
    }
}

/// One intervention, for logs and reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterventionRecord {
    /// The task.
    pub task_id: String,
    /// The failed attempts the mentor was shown, as the verifier judged them.
    pub failed: Vec<FailedAttempt>,
    /// The diagnosis of the last mentor call.
    pub diagnosis: Option<Diagnosis>,
    /// Hints tried, in order.
    pub hints: Vec<Hint>,
    /// Hinted rewards of the last hinted attempt.
    pub hinted_rewards: Vec<f64>,
    /// Whether a hinted attempt passed (the hinted group is not [`crate::is_collapsed`]).
    pub rescued: bool,
    /// Guard rejections on the way.
    pub rejections: Vec<GuardRejection>,
    /// What the guard redacted from the hints shown (one reason per redaction), in order.
    #[serde(default)]
    pub redactions: Vec<String>,
}

/// One unhinted group of the step, as the machine needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepGroup {
    /// The task; its `prompt` is what a hint is placed into ([`InterventionConfig::hint_format`]).
    pub task: Task,
    /// The group's attempts with their verdicts, as the mentor is shown them (required for a
    /// collapsed group; a group that is not may leave them out).
    pub attempts: Vec<Attempt>,
    /// The reward of each attempt (the baseline of `prefix` credit is their mean).
    pub rewards: Vec<f64>,
}

impl StepGroup {
    /// The machine's view of a scored group.
    pub fn of(group: &Group) -> Self {
        Self {
            task: group.task.clone(),
            attempts: group
                .samples
                .iter()
                .map(|s| Attempt { completion: s.sample.completion.clone(), verdict: s.verdict.clone() })
                .collect(),
            rewards: group.rewards(),
        }
    }
}

/// A request for one hint: ask the mentor about `group`'s failed attempts at `level`.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The intervention it belongs to (the index of its [`InterventionRecord`]).
    pub intervention: usize,
    /// The group in the step.
    pub group: usize,
    /// The level to write the hint at.
    pub level: HintLevel,
    /// The hints this group was already shown this step, in order.
    pub previous_hints: Vec<Hint>,
}

/// A hinted prompt to sample `n` completions of.
#[derive(Debug, Clone, PartialEq)]
pub struct HintedRequest {
    /// The attempt's index among the step's hinted attempts (what [`RowSource::Hinted`] and
    /// [`RowPrompt::Hinted`] refer to).
    pub attempt: usize,
    /// The intervention it belongs to.
    pub intervention: usize,
    /// The group in the step.
    pub group: usize,
    /// The hint.
    pub hint: Hint,
    /// The hinted prompt: the task's prompt with the hint placed by the configured format.
    pub prompt: Vec<Message>,
    /// Text the answer is forced to start with (the hint's worked steps, `prefix` credit only).
    pub assistant_prefix: Option<String>,
    /// Completions to sample.
    pub n: usize,
}

/// What the verifier said of one hinted completion (after its forced prefix).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Its reward.
    pub reward: f64,
    /// Whether it is correct ([`mentor_core::Verdict::passed`]): what rescues a group.
    pub passed: bool,
}

/// What the machine needs next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Need<'a> {
    /// These hints, in order: answer with [`MentorStep::answer`].
    Hints(&'a [Ask]),
    /// These hinted prompts sampled and verified: feed back with [`MentorStep::feed`].
    Samples(&'a [HintedRequest]),
    /// Nothing more: [`MentorStep::finish`].
    Done,
}

/// Where a row's completion comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RowSource {
    /// Sample `sample` of the step's unhinted group `group`.
    Unhinted {
        /// The group.
        group: usize,
        /// The sample in the group.
        sample: usize,
    },
    /// Sample `sample` of hinted attempt `attempt` ([`HintedRequest::attempt`]).
    Hinted {
        /// The attempt.
        attempt: usize,
        /// The sample of the attempt.
        sample: usize,
    },
}

/// The prompt a row's log-probs condition on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RowPrompt {
    /// The task's own prompt (of the step's group `group`).
    Original {
        /// The group.
        group: usize,
    },
    /// The hinted prompt of attempt `attempt` ([`HintedRequest::prompt`]).
    Hinted {
        /// The attempt.
        attempt: usize,
    },
}

/// One row of the assembled batch, by reference: the caller holds the tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRow {
    /// The row's group in the assembled batch (rows of a group are contiguous).
    pub group: usize,
    /// Its completion.
    pub completion: RowSource,
    /// Its prompt.
    pub prompt: RowPrompt,
    /// Whether the sample's forced prefix (the hint's worked steps) is part of the completion,
    /// in the loss and counted as given tokens (`prefix` credit); otherwise it stays in the
    /// context after the prompt, outside the loss. Empty prefixes make no difference.
    pub prefix_in_loss: bool,
    /// Whether the row's behaviour ("old") log-probs are the hinted sampling log-probs
    /// (`stripped_is` credit); otherwise the row is on-policy.
    pub behaviour: bool,
    /// The row's reward.
    pub reward: f64,
    /// The fixed baseline of its advantage (`prefix` credit: the failed unhinted group's mean
    /// reward); `None`: group-relative.
    pub baseline: Option<f64>,
    /// The hint level the completion was sampled with (`None`: unhinted).
    pub hint_level: Option<HintLevel>,
    /// Whether the row belongs to a group that replaces or joins a rescued collapsed group.
    pub rescued: bool,
}

/// A rescued group: the hint whose attempt passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Rescue {
    /// The group in the step.
    pub group: usize,
    /// The rescuing attempt.
    pub attempt: usize,
    /// Its hint.
    pub hint: Hint,
}

/// Counts of a step's interventions (what [`crate::StepMetrics`] reports of them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepCounts {
    /// Groups intervened on.
    pub intervened: usize,
    /// Intervened groups rescued.
    pub rescued: usize,
    /// Hinted attempts per hint level (`"1"`, `"2"`, `"3"`).
    pub levels_used: BTreeMap<String, usize>,
    /// Hints the guard rejected.
    pub guard_rejections: usize,
    /// Hinted completions sampled.
    pub extra_rollouts: usize,
    /// Hints shown (hinted attempts sampled).
    pub hints: usize,
}

/// The result of a step: the assembled rows and what happened.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPlan {
    /// The assembled batch, groups contiguous: the unhinted groups in order (a rescued one
    /// replaced, or joined, by its hinted rows), then the extra groups (`augment`, and
    /// `prefix` credit's `hinted_in_context`).
    pub rows: Vec<PlanRow>,
    /// Groups in the assembled batch.
    pub groups: usize,
    /// One record per intervened group, in group order.
    pub interventions: Vec<InterventionRecord>,
    /// The rescued groups, in group order.
    pub rescues: Vec<Rescue>,
    /// Counts.
    pub counts: StepCounts,
}

/// One intervened group between rounds.
#[derive(Debug, Clone)]
struct Slot {
    group: usize,
    record: InterventionRecord,
    /// The level of its next mentor call.
    level: HintLevel,
    /// Whether it takes part in the rest of this round / the next round.
    open: bool,
    rescue: Option<Rescue>,
}

/// A hinted attempt whose hint came back this round, not yet sampled.
#[derive(Debug, Clone)]
struct Hinted {
    slot: usize,
    hint: Hint,
    prompt: Vec<Message>,
}

/// A sampled hinted attempt.
#[derive(Debug, Clone)]
struct Sampled {
    level: HintLevel,
    outcomes: Vec<Outcome>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Asking,
    Sampling,
    Done,
}

/// The MENTOR step of one batch: collapsed groups in, hinted prompts out, completions and
/// verdicts back, escalation rounds, then the assembled rows and their credit ([`StepPlan`]).
///
/// The rules (those of [`crate::Plugin::process`]): round 1 takes the collapsed groups in group
/// order while `max_interventions_per_step` allows and `max_extra_rollouts_per_step` has room
/// for one more hinted attempt (`hinted_samples` completions reserved per hint given), at the
/// level the hint memory starts the task at. Each later round asks again, one level up, for
/// every intervened group whose hinted attempts all failed (or that got no hint) and that may
/// escalate (`escalate` on, below the machine's top level), in group order while the budget has
/// room; a group that does not fit is done. A group with a hinted attempt that passed (not
/// [`crate::is_collapsed`]) is rescued and done. Hints of a round are asked in group order
/// (in batches: every group of a batch is asked whatever the answers before it, so a
/// one-at-a-time driver sees the same calls), and its hinted prompts are sampled together.
#[derive(Debug, Clone)]
pub struct MentorStep {
    config: InterventionConfig,
    top: HintLevel,
    groups: Vec<StepGroup>,
    /// The collapsed groups the trigger lets through, in group order, with their start levels.
    candidates: Vec<(usize, HintLevel)>,
    slots: Vec<Slot>,
    round: usize,
    /// Round 1: the next candidate; later rounds: the next slot.
    cursor: usize,
    /// Completions reserved by this round's hints, not yet sampled.
    reserved: usize,
    asks: Vec<Ask>,
    hinted: Vec<Hinted>,
    requests: Vec<HintedRequest>,
    sampled: Vec<Sampled>,
    counts: StepCounts,
    phase: Phase,
}

impl MentorStep {
    /// The step over `groups` (every group of the step, in order, all of one non-zero size).
    /// `collapsed` lists the collapsed groups (the [`crate::CollapseMonitor`]'s report);
    /// `event_active` whether a collapse event is in force (for [`Trigger::OnCollapseEvent`]);
    /// `memory` gives each task's starting level; `top` is the highest level escalation
    /// reaches ([`HintLevel::MAX`] in the Rust trainer).
    pub fn new(
        config: InterventionConfig,
        groups: Vec<StepGroup>,
        collapsed: &[usize],
        event_active: bool,
        memory: &HintMemory,
        top: HintLevel,
    ) -> Result<Self> {
        let g = groups.first().map_or(0, |x| x.rewards.len());
        if groups.iter().any(|x| x.rewards.is_empty() || x.rewards.len() != g) {
            return Err(Error::Invalid("every group needs the same, non-zero number of rewards".into()));
        }
        if let Some(&bad) = collapsed.iter().find(|&&i| i >= groups.len()) {
            return Err(Error::Invalid(format!(
                "collapsed group {bad} of a step of {} groups",
                groups.len()
            )));
        }
        if let Some(&bad) = collapsed.iter().find(|&&i| groups[i].attempts.len() != g) {
            return Err(Error::Invalid(format!(
                "collapsed group {bad} needs its {g} attempts with their verdicts (the mentor reads them)"
            )));
        }
        if collapsed.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::Invalid("collapsed groups must be listed once each, in group order".into()));
        }
        let allowed = match config.trigger {
            Trigger::PerGroup => true,
            Trigger::OnCollapseEvent => event_active,
        };
        let candidates = if allowed {
            collapsed
                .iter()
                .map(|&i| (i, memory.start_level(&groups[i].task.id, config.start_level)))
                .collect()
        } else {
            Vec::new()
        };
        let mut step = Self {
            config,
            top,
            groups,
            candidates,
            slots: Vec::new(),
            round: 1,
            cursor: 0,
            reserved: 0,
            asks: Vec::new(),
            hinted: Vec::new(),
            requests: Vec::new(),
            sampled: Vec::new(),
            counts: StepCounts::default(),
            phase: Phase::Asking,
        };
        step.advance();
        Ok(step)
    }

    /// What the machine needs next.
    pub fn need(&self) -> Need<'_> {
        match self.phase {
            Phase::Asking => Need::Hints(&self.asks),
            Phase::Sampling => Need::Samples(&self.requests),
            Phase::Done => Need::Done,
        }
    }

    /// The step's group `i` (as given to [`MentorStep::new`]).
    pub fn group(&self, i: usize) -> Option<&StepGroup> {
        self.groups.get(i)
    }

    /// The escalation round under way (1-based).
    pub fn round(&self) -> usize {
        self.round
    }

    /// The counts so far.
    pub fn counts(&self) -> &StepCounts {
        &self.counts
    }

    /// The mentor's answers to the asks of [`Need::Hints`], in order (`None`: the mentor had
    /// nothing to say, as an answer without a hint).
    pub fn answer(&mut self, answers: Vec<Option<Intervention>>) -> Result<()> {
        if self.phase != Phase::Asking {
            return Err(Error::Invalid("answer: the step is not waiting for hints".into()));
        }
        if answers.len() != self.asks.len() {
            return Err(Error::Invalid(format!(
                "answer: {} answers for {} asks",
                answers.len(),
                self.asks.len()
            )));
        }
        let asks = std::mem::take(&mut self.asks);
        for (ask, answer) in asks.into_iter().zip(answers) {
            let Some(answer) = answer else { continue };
            let slot = &mut self.slots[ask.intervention];
            self.counts.guard_rejections += answer.rejections.len();
            slot.record.rejections.extend(answer.rejections);
            slot.record.redactions.extend(answer.redactions);
            slot.record.diagnosis = answer.diagnosis.or(slot.record.diagnosis.take());
            if let Some(hint) = answer.hint {
                self.reserved += self.config.hinted_samples;
                let prompt = self.config.hint_format.apply(&self.groups[slot.group].task, &hint);
                self.hinted.push(Hinted { slot: ask.intervention, hint, prompt });
            }
        }
        self.advance();
        Ok(())
    }

    /// The outcomes of the requests of [`Need::Samples`]: one list per request, in request
    /// order, one [`Outcome`] per completion.
    pub fn feed(&mut self, outcomes: Vec<Vec<Outcome>>) -> Result<()> {
        if self.phase != Phase::Sampling {
            return Err(Error::Invalid("feed: the step is not waiting for samples".into()));
        }
        if outcomes.len() != self.requests.len() {
            return Err(Error::Invalid(format!(
                "feed: {} outcome lists for {} requests",
                outcomes.len(),
                self.requests.len()
            )));
        }
        if let Some((r, o)) = self.requests.iter().zip(&outcomes).find(|(r, o)| o.len() != r.n) {
            return Err(Error::Invalid(format!(
                "feed: {} outcomes for attempt {}, which asked for {}",
                o.len(),
                r.attempt,
                r.n
            )));
        }
        self.counts.extra_rollouts += outcomes.iter().map(Vec::len).sum::<usize>();
        let requests = std::mem::take(&mut self.requests);
        self.hinted.clear();
        for (r, outs) in requests.into_iter().zip(outcomes) {
            *self.counts.levels_used.entry(r.hint.level.get().to_string()).or_default() += 1;
            self.counts.hints += 1;
            let slot = &mut self.slots[r.intervention];
            slot.record.hinted_rewards = outs.iter().map(|o| o.reward).collect();
            slot.record.hints.push(r.hint.clone());
            // Rescued: the hinted group is no longer collapsed (an attempt passed; partial
            // credit does not rescue, as it does not hide a collapse).
            if !crate::is_collapsed(outs.iter().map(|o| o.passed)) {
                slot.record.rescued = true;
                slot.open = false;
                slot.rescue = Some(Rescue { group: r.group, attempt: r.attempt, hint: r.hint.clone() });
            }
            self.sampled.push(Sampled { level: r.hint.level, outcomes: outs });
        }
        self.end_round();
        Ok(())
    }

    /// Whether another hinted attempt fits the step's rollout budget with `reserved` reserved.
    fn room(&self, reserved: usize) -> bool {
        self.counts.extra_rollouts.saturating_add(reserved).saturating_add(self.config.hinted_samples)
            <= self.config.max_extra_rollouts_per_step
    }

    /// Moves to the next batch of asks, the round's samples, or the next round.
    fn advance(&mut self) {
        loop {
            let mut worst = self.reserved;
            let mut batch = Vec::new();
            if self.round == 1 {
                while self.cursor < self.candidates.len()
                    && self.slots.len() < self.config.max_interventions_per_step
                    && self.room(worst)
                {
                    let (group, level) = self.candidates[self.cursor];
                    let grp = &self.groups[group];
                    self.slots.push(Slot {
                        group,
                        record: InterventionRecord {
                            task_id: grp.task.id.clone(),
                            failed: grp
                                .attempts
                                .iter()
                                .map(|a| FailedAttempt::of(a.verdict.feedback()))
                                .collect(),
                            diagnosis: None,
                            hints: Vec::new(),
                            hinted_rewards: Vec::new(),
                            rescued: false,
                            rejections: Vec::new(),
                            redactions: Vec::new(),
                        },
                        level,
                        open: true,
                        rescue: None,
                    });
                    batch.push(self.slots.len() - 1);
                    worst += self.config.hinted_samples;
                    self.cursor += 1;
                }
                if batch.is_empty() {
                    // The next candidate does not fit (or none is left): round 1 asks no more.
                    self.cursor = self.candidates.len();
                }
            } else {
                while self.cursor < self.slots.len() {
                    if self.slots[self.cursor].open {
                        if !self.room(worst) {
                            break;
                        }
                        batch.push(self.cursor);
                        worst += self.config.hinted_samples;
                    }
                    self.cursor += 1;
                }
                if batch.is_empty() {
                    // The next open group does not fit, nor any after it: they are done.
                    for s in &mut self.slots[self.cursor..] {
                        s.open = false;
                    }
                    self.cursor = self.slots.len();
                }
            }
            if !batch.is_empty() {
                self.asks = batch
                    .into_iter()
                    .map(|k| {
                        let s = &self.slots[k];
                        Ask {
                            intervention: k,
                            group: s.group,
                            level: s.level,
                            previous_hints: s.record.hints.clone(),
                        }
                    })
                    .collect();
                self.phase = Phase::Asking;
                return;
            }
            if !self.hinted.is_empty() {
                let first = self.sampled.len();
                self.requests = self
                    .hinted
                    .iter()
                    .enumerate()
                    .map(|(j, h)| HintedRequest {
                        attempt: first + j,
                        intervention: h.slot,
                        group: self.slots[h.slot].group,
                        hint: h.hint.clone(),
                        prompt: h.prompt.clone(),
                        assistant_prefix: match self.config.credit {
                            Credit::Prefix => h.hint.solution_prefix.clone(),
                            _ => None,
                        },
                        n: self.config.hinted_samples,
                    })
                    .collect();
                self.phase = Phase::Sampling;
                return;
            }
            if !self.escalate() {
                self.phase = Phase::Done;
                return;
            }
        }
    }

    /// After a round's samples: escalates, and asks on or finishes.
    fn end_round(&mut self) {
        if self.escalate() {
            self.advance();
        } else {
            self.phase = Phase::Done;
        }
    }

    /// Whoever took part and is still all-failing (or got no hint) goes one level up, if it
    /// may; returns whether a next round starts.
    fn escalate(&mut self) -> bool {
        let (escalate, top) = (self.config.escalate, self.top);
        for s in self.slots.iter_mut().filter(|s| s.open) {
            match s.level.escalate().filter(|next| escalate && *next <= top) {
                Some(next) => s.level = next,
                None => s.open = false,
            }
        }
        if !self.slots.iter().any(|s| s.open) {
            return false;
        }
        self.round += 1;
        self.cursor = 0;
        self.reserved = 0;
        self.hinted.clear();
        true
    }

    /// The assembled rows and the records (after [`Need::Done`]).
    pub fn finish(self) -> Result<StepPlan> {
        if self.phase != Phase::Done {
            return Err(Error::Invalid("finish: the step is not done".into()));
        }
        let mut counts = self.counts;
        counts.intervened = self.slots.len();
        let mut rescues: BTreeMap<usize, Rescue> = BTreeMap::new();
        let mut interventions = Vec::with_capacity(self.slots.len());
        for s in self.slots {
            if let Some(r) = s.rescue {
                counts.rescued += 1;
                rescues.insert(s.group, r);
            }
            interventions.push(s.record);
        }
        let mut out: Vec<Pending> = Vec::new();
        let mut extra: Vec<Pending> = Vec::new();
        for (i, grp) in self.groups.iter().enumerate() {
            match rescues.get(&i) {
                Some(r) => {
                    let (keep, add) = assemble(&self.config, i, grp, &self.sampled[r.attempt], r.attempt);
                    out.push(keep);
                    extra.extend(add);
                }
                None => out.push(plain(i, grp, false)),
            }
        }
        out.extend(extra);
        let groups = out.len();
        let mut rows = Vec::with_capacity(out.iter().map(|p| p.rows.len()).sum());
        for (g, p) in out.into_iter().enumerate() {
            for mut r in p.rows {
                r.group = g;
                r.baseline = p.baseline;
                rows.push(r);
            }
        }
        Ok(StepPlan { rows, groups, interventions, rescues: rescues.into_values().collect(), counts })
    }
}

/// A group being assembled: rows plus the baseline of their advantages.
struct Pending {
    rows: Vec<PlanRow>,
    baseline: Option<f64>,
}

/// An unhinted group as rows.
fn plain(group: usize, grp: &StepGroup, rescued: bool) -> Pending {
    Pending {
        rows: grp
            .rewards
            .iter()
            .enumerate()
            .map(|(sample, &reward)| PlanRow {
                group: 0,
                completion: RowSource::Unhinted { group, sample },
                prompt: RowPrompt::Original { group },
                prefix_in_loss: false,
                behaviour: false,
                reward,
                baseline: None,
                hint_level: None,
                rescued,
            })
            .collect(),
        baseline: None,
    }
}

/// The rows of a rescued group: what replaces (or joins) the collapsed group, and what is added
/// after all groups (`augment`; `prefix` credit's `hinted_in_context`).
fn assemble(
    config: &InterventionConfig,
    group: usize,
    grp: &StepGroup,
    hinted: &Sampled,
    attempt: usize,
) -> (Pending, Vec<Pending>) {
    let level = Some(hinted.level);
    let hinted_row = |sample: usize, credit: Credit| {
        let (prompt, prefix_in_loss, behaviour) = match credit {
            Credit::InContext => (RowPrompt::Hinted { attempt }, false, false),
            Credit::StrippedIs => (RowPrompt::Original { group }, false, true),
            Credit::Stripped => (RowPrompt::Original { group }, false, false),
            Credit::Prefix => (RowPrompt::Original { group }, true, false),
        };
        PlanRow {
            group: 0,
            completion: RowSource::Hinted { attempt, sample },
            prompt,
            prefix_in_loss,
            behaviour,
            reward: hinted.outcomes[sample].reward,
            baseline: None,
            hint_level: level,
            rescued: true,
        }
    };
    let hinted_rows = |n: usize| (0..n).map(|j| hinted_row(j, config.credit)).collect::<Vec<_>>();
    // The failed unhinted group's mean reward (0 for a collapsed group).
    let unhinted_mean = grp.rewards.iter().sum::<f64>() / grp.rewards.len().max(1) as f64;
    let baseline = (config.credit == Credit::Prefix).then_some(unhinted_mean);
    let all = hinted.outcomes.len();
    // `prefix` + `hinted_in_context`: the hinted group again, in its own context.
    let mut extra = Vec::new();
    if config.credit == Credit::Prefix && config.hinted_in_context {
        let rows = (0..all).map(|j| hinted_row(j, Credit::InContext)).collect();
        extra.push(Pending { rows, baseline: None });
    }
    match config.assembly {
        Assembly::Replace => (Pending { rows: hinted_rows(all), baseline }, extra),
        Assembly::Augment => {
            extra.insert(0, Pending { rows: hinted_rows(all), baseline });
            (plain(group, grp, true), extra)
        }
        Assembly::Nurl { keep_unhinted } => {
            let g = grp.rewards.len();
            let k = keep_unhinted.min(g);
            let mut rows: Vec<PlanRow> = plain(group, grp, true).rows.into_iter().take(k).collect();
            rows.extend(hinted_rows((g - k).min(all)));
            (Pending { rows, baseline }, extra)
        }
    }
}
