//! The step: monitor → strategy (DAPO filter, or interventions) → assembly → rows.

use std::collections::BTreeMap;
use std::time::Instant;

use mentor_core::{Hint, HintLevel, MentorRequest, Message, Task, Verifier};
use mentor_grpo::dynamic_sampling_filter;
use serde::{Deserialize, Serialize};

use crate::assembly::{finish, row, PendingGroup, TrainRow};
use crate::config::Strategy;
use crate::memory::HintMemory;
use crate::monitor::{CollapseMonitor, EventState, MonitorConfig};
use crate::rollout::{Group, Rollout, SampleRequest, Scored, TaskSource};
use crate::step::{
    FailedAttempt, InterventionRecord, MentorStep, Need, Outcome, PlanRow, RowPrompt, RowSource, StepGroup,
    StepPlan,
};
use crate::{Error, Result};

/// Everything observable about one step of the plug-in. Reads back from its JSON; a field
/// missing there (a line written before the field existed) reads as its default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepMetrics {
    /// Unhinted groups in the step.
    pub groups: usize,
    /// Collapsed groups (no attempt passed: [`crate::is_collapsed`]).
    pub collapsed: usize,
    /// Zero-reward-group fraction (the share of collapsed groups).
    pub zrf: f64,
    /// Zero-std-group fraction (TRL's `frac_reward_zero_std`).
    pub zero_std_frac: f64,
    /// Mean unhinted reward.
    pub mean_reward: f64,
    /// Mean ZRF over the monitor's window.
    pub window_zrf: f64,
    /// Collapse event state.
    pub event: Option<EventState>,
    /// Groups intervened on.
    pub intervened: usize,
    /// Intervened groups with at least one hinted attempt that passed.
    pub rescued: usize,
    /// Hinted attempts per level (`"1"`, `"2"`, `"3"`).
    pub levels_used: BTreeMap<String, usize>,
    /// Hints the guard rejected.
    pub guard_rejections: usize,
    /// Completions sampled beyond the unhinted groups.
    pub extra_rollouts: usize,
    /// DAPO: groups dropped (all-0 or all-1).
    pub dapo_dropped: usize,
    /// DAPO: replacement groups sampled.
    pub dapo_refilled: usize,
    /// Seconds spent in the mentor.
    pub mentor_seconds: f64,
    /// Seconds spent sampling extra completions (hinted attempts and DAPO refills).
    pub rollout_seconds: f64,
    /// Seconds spent verifying extra completions (hinted attempts and DAPO refills).
    pub verify_seconds: f64,
    /// Rows handed to GRPO.
    pub rows: usize,
    /// Completions (first or extra) the verifier failed on, scored 0 ([`mentor_core::Verdict::verifier_error`]).
    pub verifier_errors: usize,
    /// Hints the learner was shown (every escalation level counts; `full_solution`: each
    /// reference trained on).
    pub hints: usize,
    /// Their size in the policy's tokens ([`Rollout::token_count`]): a hint's text plus the
    /// worked lines forced as the start of the answer; `full_solution`: the whole reference.
    pub hint_tokens: usize,
    /// Completion tokens trained on in rescued groups (the groups whose rows replace or join
    /// a collapsed one: hinted rows, kept unhinted rows, the reference row).
    pub rescued_tokens: usize,
    /// Of [`Self::rescued_tokens`], those the policy sampled itself (not a forced prefix
    /// credited as its own, not a reference it did not write).
    pub rescued_own_tokens: usize,
}

/// Adds the trained and self-written tokens of a rescued group's rows to `metrics`.
fn count_rescued<'a>(rows: impl IntoIterator<Item = &'a TrainRow>, metrics: &mut StepMetrics) {
    for r in rows {
        metrics.rescued_tokens += r.completion_ids.len();
        metrics.rescued_own_tokens += r.completion_ids.len().saturating_sub(r.given_tokens);
    }
}

/// What a step hands to GRPO and to the logs.
#[derive(Debug, Clone)]
pub struct StepOutput {
    /// The assembled rows, groups contiguous.
    pub rows: Vec<TrainRow>,
    /// Metrics.
    pub metrics: StepMetrics,
    /// One record per intervened group.
    pub interventions: Vec<InterventionRecord>,
}

/// What a resumed run needs to continue exactly: the monitor's window and the hint memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginState {
    /// The collapse monitor.
    pub monitor: crate::monitor::MonitorState,
    /// The per-task hint memory.
    pub memory: std::collections::BTreeMap<String, crate::memory::Entry>,
}

/// The plug-in, holding the arm, the monitor and the per-task memory across steps.
pub struct Plugin {
    strategy: Strategy,
    monitor: CollapseMonitor,
    memory: HintMemory,
}

impl Plugin {
    /// A plug-in for `strategy`.
    pub fn new(strategy: Strategy, monitor: MonitorConfig) -> Self {
        let fade = match &strategy {
            Strategy::Intervene { config, .. } => config.memory_fade_after,
            _ => 1,
        };
        Self { strategy, monitor: CollapseMonitor::new(monitor), memory: HintMemory::new(fade) }
    }

    /// The arm's name.
    pub fn name(&self) -> String {
        self.strategy.name()
    }

    /// The per-task hint memory.
    pub fn memory(&self) -> &HintMemory {
        &self.memory
    }

    /// The resumable state.
    pub fn state(&self) -> PluginState {
        PluginState { monitor: self.monitor.state(), memory: self.memory.state() }
    }

    /// Continues from a state saved by [`Plugin::state`].
    pub fn restore(&mut self, state: PluginState) {
        self.monitor.restore(state.monitor);
        self.memory.restore(state.memory);
    }

    /// Processes one step's unhinted groups (every group non-empty, all of size G).
    /// `rollout` samples extra completions from the current policy, one
    /// [`Rollout::sample_batch`] call per escalation round (all intervened groups' hinted
    /// prompts together) or per DAPO refill round; `tasks` refills DAPO. Interventions come out
    /// in group order.
    pub fn process(
        &mut self,
        groups: Vec<Group>,
        rollout: &mut dyn Rollout,
        verifier: &dyn Verifier,
        tasks: Option<&mut dyn TaskSource>,
    ) -> Result<StepOutput> {
        let g = groups.first().map_or(0, |x| x.samples.len());
        if groups.iter().any(|x| x.samples.is_empty() || x.samples.len() != g) {
            return Err(Error::Invalid("every group needs the same, non-zero number of samples".into()));
        }
        let report = self.monitor.observe(&groups);
        let mut metrics = StepMetrics {
            groups: groups.len(),
            collapsed: report.collapsed.len(),
            zrf: report.zrf,
            zero_std_frac: report.zero_std_frac,
            mean_reward: report.mean_reward,
            window_zrf: report.window_zrf,
            event: Some(report.event),
            verifier_errors: groups.iter().map(|g| verifier_errors(&g.samples)).sum(),
            ..Default::default()
        };
        for grp in &groups {
            if !grp.is_collapsed() {
                self.memory.solved_unhinted(&grp.task.id);
            }
        }
        let mut interventions = Vec::new();
        let rows = match &self.strategy {
            Strategy::Vanilla => finish(groups.iter().map(plain).collect()),
            Strategy::Dapo { max_refill_groups } => {
                finish(dapo(groups, *max_refill_groups, g, rollout, verifier, tasks, &mut metrics)?)
            }
            Strategy::FullSolution { max_groups, rewrite } => finish(full_solution(
                &groups,
                &report.collapsed,
                *max_groups,
                rewrite.as_ref(),
                rollout,
                verifier,
                &mut metrics,
                &mut interventions,
            )?),
            Strategy::Intervene { mentor, config } => {
                let step = MentorStep::new(
                    config.clone(),
                    groups.iter().map(StepGroup::of).collect(),
                    &report.collapsed,
                    report.event.active(),
                    &self.memory,
                    HintLevel::MAX,
                )?;
                let (plan, attempts) =
                    drive(step, mentor.as_ref(), &groups, rollout, verifier, &mut metrics)?;
                metrics.intervened = plan.counts.intervened;
                metrics.rescued = plan.counts.rescued;
                for r in &plan.rescues {
                    self.memory.rescued(&groups[r.group].task.id, r.hint.level);
                }
                interventions = plan.interventions;
                let rows =
                    plan.rows.iter().map(|r| train_row(r, &groups, &attempts)).collect::<Result<Vec<_>>>()?;
                count_rescued(
                    plan.rows.iter().zip(&rows).filter(|(p, _)| p.rescued).map(|(_, r)| r),
                    &mut metrics,
                );
                rows
            }
        };
        metrics.rows = rows.len();
        Ok(StepOutput { rows, metrics, interventions })
    }
}

/// The `full_solution` arm: the collapsed groups (up to `max_groups`, in group order) with
/// their last completion replaced by the verified reference solution; the rest as they are.
#[allow(clippy::too_many_arguments)]
fn full_solution(
    groups: &[Group],
    collapsed: &[usize],
    max_groups: usize,
    rewrite: Option<&mentor_core::ReferenceRewrite>,
    rollout: &mut dyn Rollout,
    verifier: &dyn Verifier,
    metrics: &mut StepMetrics,
    records: &mut Vec<InterventionRecord>,
) -> Result<Vec<PendingGroup>> {
    let mut out = Vec::with_capacity(groups.len());
    for (i, grp) in groups.iter().enumerate() {
        let reference = grp
            .task
            .reference_solution()
            .filter(|_| collapsed.contains(&i) && metrics.intervened < max_groups)
            .map(|r| rewrite.and_then(|f| f(r)).unwrap_or_else(|| r.to_string()));
        let Some(reference) = reference.as_deref() else {
            out.push(plain(grp));
            continue;
        };
        metrics.intervened += 1;
        let t0 = Instant::now();
        let verdict = verifier.judge_batch(&[(&grp.task, reference)]).pop().ok_or_else(|| {
            Error::Invalid("the verifier returned no verdict for the reference solution".into())
        })?;
        metrics.verify_seconds += t0.elapsed().as_secs_f64();
        let passed = verdict.passed();
        let hint = Hint {
            level: HintLevel::PARTIAL_SOLUTION,
            text: "the reference solution".into(),
            solution_prefix: Some(reference.to_string()),
            source: mentor_core::HintSource::Reference,
        };
        records.push(InterventionRecord {
            task_id: grp.task.id.clone(),
            failed: grp.samples.iter().map(|s| FailedAttempt::of(s.verdict.feedback())).collect(),
            diagnosis: None,
            hints: vec![hint],
            hinted_rewards: vec![verdict.reward()],
            rescued: passed,
            rejections: Vec::new(),
            redactions: Vec::new(),
        });
        // A reference the verifier rejects is not a success to imitate.
        if !passed {
            out.push(plain(grp));
            continue;
        }
        // Only a verified reference is tokenized.
        let t0 = Instant::now();
        let sample = rollout.off_policy(&grp.task, reference).map_err(Error::Rollout)?;
        metrics.rollout_seconds += t0.elapsed().as_secs_f64();
        metrics.rescued += 1;
        *metrics.levels_used.entry(HintLevel::PARTIAL_SOLUTION.get().to_string()).or_default() += 1;
        metrics.hints += 1;
        metrics.hint_tokens += sample.ids.len();
        let mut rows = plain(grp).rows;
        rows.pop();
        let scored = Scored { sample, verdict };
        let mut reference_row = row(
            &grp.task.id,
            grp.task.prompt.clone(),
            &scored,
            false,
            false,
            Some(HintLevel::PARTIAL_SOLUTION),
        );
        reference_row.given_tokens = reference_row.completion_ids.len();
        rows.push(reference_row);
        count_rescued(&rows, metrics);
        out.push(PendingGroup { rows, baseline: None });
    }
    Ok(out)
}

/// An unhinted group as rows.
fn plain(grp: &Group) -> PendingGroup {
    PendingGroup {
        rows: grp
            .samples
            .iter()
            .map(|s| row(&grp.task.id, grp.task.prompt.clone(), s, false, false, None))
            .collect(),
        baseline: None,
    }
}

/// Samples `requests` in one [`Rollout::sample_batch`] call and verifies every completion
/// (after its request's assistant prefix) in one [`Verifier::judge_batch`] call; returns the
/// scored samples per request and counts time, extra rollouts and verifier errors.
fn sample_and_verify(
    rollout: &mut dyn Rollout,
    verifier: &dyn Verifier,
    requests: &[SampleRequest<'_>],
    metrics: &mut StepMetrics,
) -> Result<Vec<Vec<Scored>>> {
    let t0 = Instant::now();
    let sampled = rollout.sample_batch(requests).map_err(Error::Rollout)?;
    metrics.rollout_seconds += t0.elapsed().as_secs_f64();
    if sampled.len() != requests.len() {
        return Err(Error::Invalid(format!(
            "sample_batch returned {} sample lists for {} requests",
            sampled.len(),
            requests.len()
        )));
    }
    if let Some((i, (r, ss))) = requests.iter().zip(&sampled).enumerate().find(|(_, (r, ss))| ss.len() != r.n)
    {
        return Err(Error::Invalid(format!(
            "sample_batch returned {} samples for request {i} (task `{}`), which asked for {}",
            ss.len(),
            r.task.id,
            r.n
        )));
    }
    metrics.extra_rollouts += sampled.iter().map(Vec::len).sum::<usize>();
    let texts: Vec<Vec<String>> = requests
        .iter()
        .zip(&sampled)
        .map(|(r, ss)| {
            ss.iter().map(|s| format!("{}{}", r.assistant_prefix.unwrap_or(""), s.completion.text)).collect()
        })
        .collect();
    let items: Vec<(&Task, &str)> = requests
        .iter()
        .zip(&texts)
        .flat_map(|(r, ts)| ts.iter().map(move |t| (r.task, t.as_str())))
        .collect();
    let t0 = Instant::now();
    let verdicts = verifier.judge_batch(&items);
    metrics.verify_seconds += t0.elapsed().as_secs_f64();
    if verdicts.len() != items.len() {
        return Err(Error::Invalid(format!(
            "the verifier returned {} verdicts for {} completions",
            verdicts.len(),
            items.len()
        )));
    }
    let mut verdicts = verdicts.into_iter();
    let scored: Vec<Vec<Scored>> = sampled
        .into_iter()
        .map(|ss| {
            ss.into_iter()
                .zip(verdicts.by_ref())
                .map(|(sample, verdict)| Scored { sample, verdict })
                .collect()
        })
        .collect();
    metrics.verifier_errors += scored.iter().map(|s| verifier_errors(s)).sum::<usize>();
    Ok(scored)
}

/// Verdicts in `scored` that record a verifier failure.
fn verifier_errors(scored: &[Scored]) -> usize {
    scored.iter().filter(|s| s.verdict.is_verifier_error()).count()
}

/// A sampled hinted attempt, as the driver keeps it: its group, hinted prompt and scored samples.
struct Attempted {
    group: usize,
    prompt: Vec<Message>,
    scored: Vec<Scored>,
}

/// Drives `step` to its end: each ask batch through `mentor` (in order), each round's hinted
/// prompts through one [`Rollout::sample_batch`] call and one judge batch. Returns the plan and
/// the scored hinted attempts, by attempt index.
fn drive(
    mut step: MentorStep,
    mentor: &dyn mentor_core::Mentor,
    groups: &[Group],
    rollout: &mut dyn Rollout,
    verifier: &dyn Verifier,
    metrics: &mut StepMetrics,
) -> Result<(StepPlan, Vec<Attempted>)> {
    let mut attempts: Vec<Attempted> = Vec::new();
    loop {
        match step.need() {
            Need::Hints(asks) => {
                let mut answers = Vec::with_capacity(asks.len());
                for a in asks {
                    let sg =
                        step.group(a.group).ok_or_else(|| Error::Invalid(format!("no group {}", a.group)))?;
                    let t0 = Instant::now();
                    let answer = mentor.intervene(&MentorRequest {
                        task: &sg.task,
                        attempts: &sg.attempts,
                        level: a.level,
                        previous_hints: &a.previous_hints,
                    })?;
                    metrics.mentor_seconds += t0.elapsed().as_secs_f64();
                    answers.push(Some(answer));
                }
                step.answer(answers)?;
            }
            Need::Samples(hinted) => {
                let requests: Vec<SampleRequest<'_>> = hinted
                    .iter()
                    .map(|r| SampleRequest {
                        task: &groups[r.group].task,
                        prompt: &r.prompt,
                        assistant_prefix: r.assistant_prefix.as_deref(),
                        n: r.n,
                    })
                    .collect();
                let scored = sample_and_verify(rollout, verifier, &requests, metrics)?;
                let mut outcomes = Vec::with_capacity(scored.len());
                for (r, scored) in hinted.iter().zip(scored) {
                    // What the learner was shown: the text, and the lines forced as its answer's start.
                    let given = scored.first().map_or(0, |s| s.sample.prefix_ids.len());
                    metrics.hints += 1;
                    metrics.hint_tokens += rollout.token_count(&r.hint.text) + given;
                    outcomes.push(
                        scored
                            .iter()
                            .map(|s| Outcome { reward: s.verdict.reward(), passed: s.verdict.passed() })
                            .collect(),
                    );
                    attempts.push(Attempted { group: r.group, prompt: r.prompt.clone(), scored });
                }
                step.feed(outcomes)?;
            }
            Need::Done => break,
        }
    }
    let plan = step.finish()?;
    metrics.guard_rejections += plan.counts.guard_rejections;
    for (level, n) in &plan.counts.levels_used {
        *metrics.levels_used.entry(level.clone()).or_default() += n;
    }
    Ok((plan, attempts))
}

/// The training row a [`PlanRow`] names.
fn train_row(p: &PlanRow, groups: &[Group], attempts: &[Attempted]) -> Result<TrainRow> {
    let missing = || Error::Invalid(format!("the step's plan names a row that does not exist: {p:?}"));
    let (group, scored) = match p.completion {
        RowSource::Unhinted { group, sample } => {
            (group, groups.get(group).and_then(|g| g.samples.get(sample)))
        }
        RowSource::Hinted { attempt, sample } => match attempts.get(attempt) {
            Some(a) => (a.group, a.scored.get(sample)),
            None => return Err(missing()),
        },
    };
    let (Some(grp), Some(scored)) = (groups.get(group), scored) else { return Err(missing()) };
    let prompt = match p.prompt {
        RowPrompt::Original { group } => groups.get(group).ok_or_else(missing)?.task.prompt.clone(),
        RowPrompt::Hinted { attempt } => attempts.get(attempt).ok_or_else(missing)?.prompt.clone(),
    };
    let mut r = row(&grp.task.id, prompt, scored, p.prefix_in_loss, p.behaviour, p.hint_level);
    r.group = p.group;
    r.baseline = p.baseline;
    Ok(r)
}

/// DAPO: drop all-0 / all-1 groups, refill with fresh tasks. Each refill round draws as many
/// tasks as groups are missing (at most what is left of `max_refill`), samples them in one
/// [`Rollout::sample_batch`] call and keeps, in draw order, those whose rewards vary; rounds go
/// on while groups are missing, the refill budget lasts and the source has tasks. The tasks
/// drawn are the ones a one-at-a-time refill would draw.
fn dapo(
    groups: Vec<Group>,
    max_refill: usize,
    g: usize,
    rollout: &mut dyn Rollout,
    verifier: &dyn Verifier,
    mut tasks: Option<&mut dyn TaskSource>,
    metrics: &mut StepMetrics,
) -> Result<Vec<PendingGroup>> {
    let rewards: Vec<f64> = groups.iter().flat_map(Group::rewards).collect();
    let ids: Vec<usize> =
        groups.iter().enumerate().flat_map(|(i, grp)| std::iter::repeat_n(i, grp.samples.len())).collect();
    let filter = if rewards.is_empty() { None } else { Some(dynamic_sampling_filter(&rewards, &ids)?) };
    let keep: std::collections::BTreeSet<usize> =
        filter.as_ref().map(|f| f.keep_rows.iter().map(|&r| ids[r]).collect()).unwrap_or_default();
    metrics.dapo_dropped = groups.len() - keep.len();
    let mut out: Vec<PendingGroup> =
        groups.iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, grp)| plain(grp)).collect();
    let mut sampled = 0;
    while sampled < max_refill && out.len() < groups.len() {
        let Some(src) = tasks.as_deref_mut() else { break };
        let want = (groups.len() - out.len()).min(max_refill - sampled);
        let mut drawn = Vec::with_capacity(want);
        while drawn.len() < want {
            match src.next_task() {
                Some(task) => drawn.push(task),
                None => break,
            }
        }
        let exhausted = drawn.len() < want;
        if drawn.is_empty() {
            break;
        }
        sampled += drawn.len();
        let requests: Vec<SampleRequest<'_>> = drawn
            .iter()
            .map(|task| SampleRequest { task, prompt: &task.prompt, assistant_prefix: None, n: g })
            .collect();
        let scored = sample_and_verify(rollout, verifier, &requests, metrics)?;
        for (task, samples) in drawn.into_iter().zip(scored) {
            let grp = Group { task, samples };
            let r = grp.rewards();
            if r.windows(2).any(|w| w[0] != w[1]) {
                out.push(plain(&grp));
                metrics.dapo_refilled += 1;
            }
        }
        if exhausted {
            break;
        }
    }
    Ok(out)
}
