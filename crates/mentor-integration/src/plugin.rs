//! The step: monitor → strategy (DAPO filter, or interventions) → assembly → rows.

use std::collections::BTreeMap;
use std::time::Instant;

use mentor_core::{Attempt, Diagnosis, GuardRejection, Hint, MentorRequest, Task, Verifier};
use mentor_grpo::{dynamic_sampling_filter, ScaleRewards};
use serde::Serialize;

use crate::assembly::{finish, row, Credit, PendingGroup, TrainRow};
use crate::config::{Assembly, InterventionConfig, Strategy, Trigger};
use crate::memory::HintMemory;
use crate::monitor::{CollapseMonitor, EventState, MonitorConfig};
use crate::rollout::{Group, Rollout, SampleRequest, Scored, TaskSource};
use crate::{Error, Result};

/// Everything observable about one step of the plug-in.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StepMetrics {
    /// Unhinted groups in the step.
    pub groups: usize,
    /// Collapsed groups (all rewards zero).
    pub collapsed: usize,
    /// Zero-reward-group fraction.
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
    /// Intervened groups with at least one hinted success.
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
    /// Seconds spent sampling extra completions.
    pub rollout_seconds: f64,
    /// Seconds spent verifying extra completions.
    pub verify_seconds: f64,
    /// Rows handed to GRPO.
    pub rows: usize,
    /// Completions (first or extra) the verifier failed on, scored 0 ([`mentor_core::Verdict::verifier_error`]).
    pub verifier_errors: usize,
}

/// What the verifier said of one failed attempt of an intervened group, in short.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    fn of(feedback: &mentor_core::Feedback) -> Self {
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// Whether a hinted attempt succeeded.
    pub rescued: bool,
    /// Guard rejections on the way.
    pub rejections: Vec<GuardRejection>,
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
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
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
    scale: ScaleRewards,
}

impl Plugin {
    /// A plug-in for `strategy`; `scale` must match the GRPO config's `scale_rewards`.
    pub fn new(strategy: Strategy, monitor: MonitorConfig, scale: ScaleRewards) -> Self {
        let fade = match &strategy {
            Strategy::Intervene { config, .. } => config.memory_fade_after,
            _ => 1,
        };
        Self { strategy, monitor: CollapseMonitor::new(monitor), memory: HintMemory::new(fade), scale }
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
    /// `rollout` samples extra completions from the current policy; `tasks` refills DAPO.
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
            if grp.samples.iter().any(|s| s.verdict.passed()) {
                self.memory.solved_unhinted(&grp.task.id);
            }
        }
        let mut interventions = Vec::new();
        let pending = match &self.strategy {
            Strategy::Vanilla => groups.iter().map(plain).collect(),
            Strategy::Dapo { max_refill_groups } => {
                dapo(groups, *max_refill_groups, g, rollout, verifier, tasks, &mut metrics)?
            }
            Strategy::Intervene { mentor, config } => {
                let allowed = match config.trigger {
                    Trigger::PerGroup => true,
                    Trigger::OnCollapseEvent => report.event.active(),
                };
                let mut out = Vec::new();
                let mut extra = Vec::new();
                for (i, grp) in groups.iter().enumerate() {
                    let eligible = allowed
                        && report.collapsed.contains(&i)
                        && metrics.intervened < config.max_interventions_per_step
                        && metrics.extra_rollouts + config.hinted_samples
                            <= config.max_extra_rollouts_per_step;
                    if !eligible {
                        out.push(plain(grp));
                        continue;
                    }
                    let (rec, hinted) = intervene(
                        mentor.as_ref(),
                        config,
                        &mut self.memory,
                        grp,
                        rollout,
                        verifier,
                        &mut metrics,
                    )?;
                    metrics.intervened += 1;
                    match hinted {
                        Some((hint, samples)) => {
                            metrics.rescued += 1;
                            let (keep, add) = assemble(config, grp, &hint, &samples);
                            out.push(keep);
                            extra.extend(add);
                        }
                        None => out.push(plain(grp)),
                    }
                    interventions.push(rec);
                }
                out.extend(extra);
                out
            }
        };
        let rows = finish(pending, self.scale)?;
        metrics.rows = rows.len();
        Ok(StepOutput { rows, metrics, interventions })
    }
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

fn verify_samples(
    verifier: &dyn Verifier,
    task: &Task,
    prefix: Option<&str>,
    samples: Vec<crate::rollout::Sample>,
) -> Vec<Scored> {
    let texts: Vec<String> =
        samples.iter().map(|s| format!("{}{}", prefix.unwrap_or(""), s.completion.text)).collect();
    let items: Vec<(&Task, &str)> = texts.iter().map(|t| (task, t.as_str())).collect();
    let verdicts = verifier.judge_batch(&items);
    samples.into_iter().zip(verdicts).map(|(sample, verdict)| Scored { sample, verdict }).collect()
}

/// Verdicts in `scored` that record a verifier failure.
fn verifier_errors(scored: &[Scored]) -> usize {
    scored.iter().filter(|s| s.verdict.is_verifier_error()).count()
}

/// The hint that rescued a group, with the hinted group's scored samples.
type Rescue = (Hint, Vec<Scored>);

/// Asks the mentor, samples on the hinted prompt, escalates while all-fail and budget lasts.
/// Returns the record and, when rescued, the winning hint with its scored samples.
fn intervene(
    mentor: &dyn mentor_core::Mentor,
    config: &InterventionConfig,
    memory: &mut HintMemory,
    grp: &Group,
    rollout: &mut dyn Rollout,
    verifier: &dyn Verifier,
    metrics: &mut StepMetrics,
) -> Result<(InterventionRecord, Option<Rescue>)> {
    let task = &grp.task;
    let attempts: Vec<Attempt> = grp
        .samples
        .iter()
        .map(|s| Attempt { completion: s.sample.completion.clone(), verdict: s.verdict.clone() })
        .collect();
    let mut rec = InterventionRecord {
        task_id: task.id.clone(),
        failed: grp.samples.iter().map(|s| FailedAttempt::of(s.verdict.feedback())).collect(),
        diagnosis: None,
        hints: Vec::new(),
        hinted_rewards: Vec::new(),
        rescued: false,
        rejections: Vec::new(),
    };
    let mut level = memory.start_level(&task.id, config.start_level);
    loop {
        if metrics.extra_rollouts + config.hinted_samples > config.max_extra_rollouts_per_step {
            break;
        }
        let t0 = Instant::now();
        let answer = mentor.intervene(&MentorRequest {
            task,
            attempts: &attempts,
            level,
            previous_hints: &rec.hints,
        })?;
        metrics.mentor_seconds += t0.elapsed().as_secs_f64();
        metrics.guard_rejections += answer.rejections.len();
        rec.rejections.extend(answer.rejections);
        rec.diagnosis = answer.diagnosis.or(rec.diagnosis.take());
        if let Some(hint) = answer.hint {
            let prompt = config.hint_format.apply(task, &hint);
            let prefix = match config.credit {
                Credit::Prefix => hint.solution_prefix.as_deref(),
                _ => None,
            };
            let t0 = Instant::now();
            let samples = rollout
                .sample(&SampleRequest {
                    task,
                    prompt: &prompt,
                    assistant_prefix: prefix,
                    n: config.hinted_samples,
                })
                .map_err(Error::Rollout)?;
            metrics.rollout_seconds += t0.elapsed().as_secs_f64();
            metrics.extra_rollouts += samples.len();
            *metrics.levels_used.entry(hint.level.get().to_string()).or_default() += 1;
            let t0 = Instant::now();
            let scored = verify_samples(verifier, task, prefix, samples);
            metrics.verify_seconds += t0.elapsed().as_secs_f64();
            metrics.verifier_errors += verifier_errors(&scored);
            rec.hinted_rewards = scored.iter().map(|s| s.verdict.reward()).collect();
            rec.hints.push(hint.clone());
            if scored.iter().any(|s| s.verdict.reward() > 0.0) {
                rec.rescued = true;
                memory.rescued(&task.id, hint.level);
                return Ok((rec, Some((hint, scored))));
            }
        }
        match (config.escalate, level.escalate()) {
            (true, Some(next)) => level = next,
            _ => break,
        }
    }
    Ok((rec, None))
}

/// Builds the rows of a rescued group: what replaces (or joins) the collapsed group, and
/// what is added after all groups (`augment`).
fn assemble(
    config: &InterventionConfig,
    grp: &Group,
    hint: &Hint,
    hinted: &[Scored],
) -> (PendingGroup, Vec<PendingGroup>) {
    let task = &grp.task;
    let level = Some(hint.level);
    let hinted_rows = |samples: &[Scored]| -> Vec<TrainRow> {
        samples
            .iter()
            .map(|s| match config.credit {
                Credit::InContext => {
                    row(&task.id, config.hint_format.apply(task, hint), s, false, false, level)
                }
                Credit::StrippedIs => row(&task.id, task.prompt.clone(), s, false, true, level),
                Credit::Stripped => row(&task.id, task.prompt.clone(), s, false, false, level),
                Credit::Prefix => row(&task.id, task.prompt.clone(), s, true, false, level),
            })
            .collect()
    };
    // The failed unhinted group's mean reward (0 for a collapsed group).
    let unhinted_mean = grp.rewards().iter().sum::<f64>() / grp.samples.len().max(1) as f64;
    let baseline = (config.credit == Credit::Prefix).then_some(unhinted_mean);
    // `prefix` + `hinted_in_context`: the hinted group again, in its own context.
    let mut extra = Vec::new();
    if config.credit == Credit::Prefix && config.hinted_in_context {
        let prompt = config.hint_format.apply(task, hint);
        let rows = hinted.iter().map(|s| row(&task.id, prompt.clone(), s, false, false, level)).collect();
        extra.push(PendingGroup { rows, baseline: None });
    }
    match config.assembly {
        Assembly::Replace => (PendingGroup { rows: hinted_rows(hinted), baseline }, extra),
        Assembly::Augment => {
            extra.insert(0, PendingGroup { rows: hinted_rows(hinted), baseline });
            (plain(grp), extra)
        }
        Assembly::Nurl { keep_unhinted } => {
            let g = grp.samples.len();
            let k = keep_unhinted.min(g);
            let mut rows: Vec<TrainRow> = plain(grp).rows.into_iter().take(k).collect();
            let take = (g - k).min(hinted.len());
            rows.extend(hinted_rows(&hinted[..take]));
            (PendingGroup { rows, baseline }, extra)
        }
    }
}

/// DAPO: drop all-0 / all-1 groups, refill with fresh tasks.
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
        let Some(task) = src.next_task() else { break };
        sampled += 1;
        let t0 = Instant::now();
        let samples = rollout
            .sample(&SampleRequest { task: &task, prompt: &task.prompt, assistant_prefix: None, n: g })
            .map_err(Error::Rollout)?;
        metrics.rollout_seconds += t0.elapsed().as_secs_f64();
        metrics.extra_rollouts += samples.len();
        let scored = verify_samples(verifier, &task, None, samples);
        metrics.verifier_errors += verifier_errors(&scored);
        let grp = Group { task, samples: scored };
        let r = grp.rewards();
        if r.windows(2).any(|w| w[0] != w[1]) {
            out.push(plain(&grp));
            metrics.dapo_refilled += 1;
        }
    }
    Ok(out)
}
