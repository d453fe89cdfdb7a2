//! The plug-in samples all hinted attempts of an escalation round, and all DAPO refills of a
//! refill round, in one `Rollout::sample_batch` call. The expected records and rows are worked
//! out by hand from the `Scripted` policy: a task needing level `L` is solved (rewards
//! `[1, 0, 1, 0]`) from a level-`L` hint on, and fails (`[0, 0, 0, 0]`) below it.

use mentor_core::{
    Diagnosis, FailureCategory, GuardRejection, Intervention, Mentor, MentorError, MentorRequest, Task,
};
use mentor_integration::{
    Assembly, Credit, FailedAttempt, InterventionConfig, InterventionRecord, MonitorConfig, Plugin, Rollout,
    Sample, SampleRequest, StepMetrics, StepOutput, Strategy, TrainRow,
};
use mentor_verify_math::MathVerifier;

use crate::{advantage_of, groups, level, shown_level, task, LevelMentor, Scripted, Tasks};

/// One request as the policy double saw it: task, hint level shown, forced prefix, n.
type Seen = (String, Option<u8>, Option<String>, usize);

/// A policy double that batches: it records every `sample_batch` call's requests and counts
/// direct `sample` calls, and answers as [`Scripted`].
struct Counting {
    inner: Scripted,
    batches: Vec<Vec<Seen>>,
    singles: usize,
}

impl Counting {
    fn new(needs: &[(&str, u8)]) -> Self {
        Self { inner: Scripted::new(needs), batches: Vec::new(), singles: 0 }
    }
}

impl Rollout for Counting {
    fn sample(&mut self, req: &SampleRequest<'_>) -> Result<Vec<Sample>, mentor_integration::RolloutError> {
        self.singles += 1;
        self.inner.sample(req)
    }

    fn sample_batch(
        &mut self,
        reqs: &[SampleRequest<'_>],
    ) -> Result<Vec<Vec<Sample>>, mentor_integration::RolloutError> {
        self.batches.push(
            reqs.iter()
                .map(|r| (r.task.id.clone(), shown_level(r), r.assistant_prefix.map(str::to_string), r.n))
                .collect(),
        );
        reqs.iter().map(|r| self.inner.sample(r)).collect()
    }
}

/// a needs level 2, b level 3, c is never solved, d is solved without hints.
const NEEDS: [(&str, u8); 4] = [("a", 2), ("b", 3), ("c", 4), ("d", 0)];

fn tasks() -> Vec<Task> {
    vec![task("a", "12"), task("b", "7"), task("c", "5"), task("d", "9")]
}

fn cfg(assembly: Assembly) -> InterventionConfig {
    InterventionConfig {
        hinted_samples: 4,
        assembly,
        credit: Credit::Prefix,
        ..InterventionConfig::default()
    }
}

/// One step of a fresh plug-in with `mentor` and `config` on [`NEEDS`]' groups of 4.
fn step(mentor: Box<dyn Mentor>, config: InterventionConfig) -> (StepOutput, Counting, Plugin) {
    let first = groups(&mut Scripted::new(&NEEDS), &tasks(), 4);
    let mut plugin = Plugin::new(Strategy::Intervene { mentor, config }, MonitorConfig::default());
    let mut policy = Counting::new(&NEEDS);
    let out = plugin.process(first, &mut policy, &MathVerifier::default(), None).unwrap();
    (out, policy, plugin)
}

fn seen(task: &str, level: u8, prefix: bool) -> Seen {
    (task.into(), Some(level), prefix.then(|| "Step one. ".to_string()), 4)
}

/// `(task id, hint levels tried, hinted rewards of the last attempt, rescued)` per record.
fn summary(recs: &[InterventionRecord]) -> Vec<(&str, Vec<u8>, Vec<f64>, bool)> {
    recs.iter()
        .map(|r| {
            (
                r.task_id.as_str(),
                r.hints.iter().map(|h| h.level.get()).collect(),
                r.hinted_rewards.clone(),
                r.rescued,
            )
        })
        .collect()
}

/// `(task id, hint level)` per row.
fn row_kinds(rows: &[TrainRow]) -> Vec<(&str, Option<u8>)> {
    rows.iter().map(|r| (r.task_id.as_str(), r.hint_level.map(|l| l.get()))).collect()
}

fn repeat<T: Clone>(x: T, n: usize) -> Vec<T> {
    vec![x; n]
}

const RESCUED: [f64; 4] = [1.0, 0.0, 1.0, 0.0];
const FAILED: [f64; 4] = [0.0; 4];

#[test]
fn one_sample_batch_per_escalation_round_and_records_in_group_order() {
    let (out, policy, plugin) = step(Box::new(LevelMentor), cfg(Assembly::Replace));
    // Round 1: a, b, c at level 1. Round 2: all three at level 2 (a is rescued). Round 3: b
    // and c at level 3, with the hint's steps forced (prefix credit); b is rescued, c can
    // escalate no further.
    assert_eq!(
        policy.batches,
        vec![
            vec![seen("a", 1, false), seen("b", 1, false), seen("c", 1, false)],
            vec![seen("a", 2, false), seen("b", 2, false), seen("c", 2, false)],
            vec![seen("b", 3, true), seen("c", 3, true)],
        ]
    );
    assert_eq!(policy.singles, 0, "nothing is sampled one request at a time");
    assert_eq!(
        summary(&out.interventions),
        vec![
            ("a", vec![1, 2], RESCUED.to_vec(), true),
            ("b", vec![1, 2, 3], RESCUED.to_vec(), true),
            ("c", vec![1, 2, 3], FAILED.to_vec(), false),
        ]
    );
    for r in &out.interventions {
        assert_eq!(r.failed.len(), 4);
        assert!(r.failed.iter().all(|f| matches!(f, FailedAttempt::Math { .. })), "{:?}", r.failed);
        assert!(r.rejections.is_empty() && r.diagnosis.is_none());
    }
    let m = &out.metrics;
    assert_eq!((m.groups, m.collapsed, m.intervened, m.rescued), (4, 3, 3, 2));
    assert_eq!(m.extra_rollouts, 8 * 4, "eight hinted attempts of 4");
    let levels: Vec<(&str, usize)> = m.levels_used.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(levels, vec![("1", 3), ("2", 3), ("3", 2)]);
    assert_eq!((m.guard_rejections, m.verifier_errors, m.rows), (0, 0, 16));
    // Replace: the rescued hinted groups stand where a and b were, in group order.
    let mut want: Vec<(&str, Option<u8>)> = repeat(("a", Some(2)), 4);
    want.extend(repeat(("b", Some(3)), 4));
    want.extend(repeat(("c", None), 4));
    want.extend(repeat(("d", None), 4));
    assert_eq!(row_kinds(&out.rows), want);
    let steps: Vec<u32> = "Step one. ".bytes().map(u32::from).collect();
    for r in &out.rows[..8] {
        // Prefix credit: A = r − 0 against the collapsed group; only level 3 forced the steps.
        assert_eq!(advantage_of(&out.rows, r), r.reward);
        assert_eq!(r.completion_ids.starts_with(&steps), r.task_id == "b");
    }
    let rewards: Vec<f64> = out.rows[..8].iter().map(|r| r.reward).collect();
    assert_eq!(rewards, [RESCUED, RESCUED].concat());
    assert_eq!(plugin.memory().level("a"), Some(level(2)));
    assert_eq!(plugin.memory().level("b"), Some(level(3)));
    assert_eq!(plugin.memory().level("c"), None);

    // The same inputs give the same outputs.
    let (again, policy2, _) = step(Box::new(LevelMentor), cfg(Assembly::Replace));
    assert_eq!(again.rows, out.rows);
    assert_eq!(again.interventions, out.interventions);
    assert_eq!(policy2.batches, policy.batches);
    let timeless = |m: &StepMetrics| StepMetrics {
        mentor_seconds: 0.0,
        rollout_seconds: 0.0,
        verify_seconds: 0.0,
        ..m.clone()
    };
    assert_eq!(timeless(&again.metrics), timeless(&out.metrics));
}

#[test]
fn augmented_hinted_groups_come_after_all_groups_in_group_order() {
    let (out, policy, _) = step(Box::new(LevelMentor), cfg(Assembly::Augment));
    assert_eq!(policy.batches.len(), 3);
    let mut want: Vec<(&str, Option<u8>)> = Vec::new();
    for t in ["a", "b", "c", "d"] {
        want.extend(repeat((t, None), 4));
    }
    want.extend(repeat(("a", Some(2)), 4));
    want.extend(repeat(("b", Some(3)), 4));
    assert_eq!(row_kinds(&out.rows), want);
}

#[test]
fn the_budget_is_reserved_in_group_order_and_can_run_out_mid_round() {
    // 20 completions: round 1 takes 12 (a, b, c), round 2 has room for a and b only; c is done
    // after its level-1 attempt, and round 3 (b at level 3) does not fit.
    let mut c = cfg(Assembly::Replace);
    c.max_extra_rollouts_per_step = 20;
    let (out, policy, _) = step(Box::new(LevelMentor), c);
    assert_eq!(
        policy.batches,
        vec![
            vec![seen("a", 1, false), seen("b", 1, false), seen("c", 1, false)],
            vec![seen("a", 2, false), seen("b", 2, false)],
        ]
    );
    assert_eq!(
        summary(&out.interventions),
        vec![
            ("a", vec![1, 2], RESCUED.to_vec(), true),
            ("b", vec![1, 2], FAILED.to_vec(), false),
            ("c", vec![1], FAILED.to_vec(), false),
        ]
    );
    assert_eq!((out.metrics.intervened, out.metrics.rescued, out.metrics.extra_rollouts), (3, 1, 20));
    let mut want: Vec<(&str, Option<u8>)> = repeat(("a", Some(2)), 4);
    for t in ["b", "c", "d"] {
        want.extend(repeat((t, None), 4));
    }
    assert_eq!(row_kinds(&out.rows), want);

    // 8 completions: round 1 has room for a and b; c is not intervened on at all.
    let mut c = cfg(Assembly::Replace);
    c.max_extra_rollouts_per_step = 8;
    let (out, policy, _) = step(Box::new(LevelMentor), c);
    assert_eq!(policy.batches, vec![vec![seen("a", 1, false), seen("b", 1, false)]]);
    assert_eq!(
        summary(&out.interventions),
        vec![("a", vec![1], FAILED.to_vec(), false), ("b", vec![1], FAILED.to_vec(), false)]
    );
    assert_eq!((out.metrics.intervened, out.metrics.extra_rollouts), (2, 8));

    // Two interventions at most: a and b escalate, c stays as it was.
    let mut c = cfg(Assembly::Replace);
    c.max_interventions_per_step = 2;
    let (out, policy, _) = step(Box::new(LevelMentor), c);
    assert_eq!(
        policy.batches,
        vec![
            vec![seen("a", 1, false), seen("b", 1, false)],
            vec![seen("a", 2, false), seen("b", 2, false)],
            vec![seen("b", 3, true)],
        ]
    );
    assert_eq!((out.metrics.intervened, out.metrics.rescued), (2, 2));

    // Without escalation there is one round.
    let mut c = cfg(Assembly::Replace);
    c.escalate = false;
    let (out, policy, _) = step(Box::new(LevelMentor), c);
    assert_eq!(policy.batches.len(), 1);
    assert_eq!((out.metrics.intervened, out.metrics.rescued, out.metrics.extra_rollouts), (3, 0, 12));
}

/// [`LevelMentor`], except that for task b at level 1 every hint is rejected (no hint, one
/// rejection, a diagnosis).
struct Picky;

impl Mentor for Picky {
    fn name(&self) -> &str {
        "picky"
    }
    fn intervene(&self, r: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        if r.task.id == "b" && r.level.get() == 1 {
            return Ok(Intervention {
                diagnosis: Some(diagnosis()),
                hint: None,
                rejections: vec![GuardRejection {
                    text: "it is 7".into(),
                    reason: "leaks the answer".into(),
                }],
                redactions: Vec::new(),
            });
        }
        LevelMentor.intervene(r)
    }
}

fn diagnosis() -> Diagnosis {
    Diagnosis {
        category: FailureCategory::ArithmeticSlip,
        shared_mode: "adds instead of multiplying".into(),
        evidence: vec![],
        first_wrong_step: Some(1),
        confidence: 0.5,
    }
}

#[test]
fn a_group_without_a_hint_sits_a_round_out_and_escalates() {
    let (out, policy, _) = step(Box::new(Picky), cfg(Assembly::Replace));
    // b gets no hint in round 1: not sampled, no budget used, asked again at level 2.
    assert_eq!(
        policy.batches,
        vec![
            vec![seen("a", 1, false), seen("c", 1, false)],
            vec![seen("a", 2, false), seen("b", 2, false), seen("c", 2, false)],
            vec![seen("b", 3, true), seen("c", 3, true)],
        ]
    );
    assert_eq!(
        summary(&out.interventions),
        vec![
            ("a", vec![1, 2], RESCUED.to_vec(), true),
            ("b", vec![2, 3], RESCUED.to_vec(), true),
            ("c", vec![1, 2, 3], FAILED.to_vec(), false),
        ]
    );
    let b = &out.interventions[1];
    assert_eq!(b.rejections.len(), 1);
    assert_eq!(b.diagnosis, Some(diagnosis()), "the last diagnosis given is kept");
    assert_eq!(out.metrics.guard_rejections, 1);
    assert_eq!(out.metrics.extra_rollouts, 7 * 4);
}

#[test]
fn records_and_metrics_read_back_from_json() {
    let (out, _, _) = step(Box::new(Picky), cfg(Assembly::Replace));
    let json = serde_json::to_string(&out.metrics).unwrap();
    assert_eq!(serde_json::from_str::<StepMetrics>(&json).unwrap(), out.metrics);
    for rec in &out.interventions {
        let json = serde_json::to_string(rec).unwrap();
        assert_eq!(&serde_json::from_str::<InterventionRecord>(&json).unwrap(), rec);
    }
    let code = FailedAttempt::Code {
        outcome: mentor_core::CodeOutcome::WrongAnswer,
        failed_test: Some("assert f(1) == 2".into()),
        tests_passed: 1,
        tests_total: 3,
    };
    let json = serde_json::to_string(&code).unwrap();
    assert_eq!(serde_json::from_str::<FailedAttempt>(&json).unwrap(), code);
    // A metrics line from before a field existed reads with that field at its default.
    let old: StepMetrics = serde_json::from_str(r#"{"groups": 3, "collapsed": 1}"#).unwrap();
    assert_eq!((old.groups, old.collapsed, old.verifier_errors), (3, 1, 0));
}

#[test]
fn dapo_refills_in_one_batch_per_round() {
    // a and c are all-0 and dropped, b is kept. Round 1 draws two tasks (d, e): d is all-0,
    // e kept. Round 2 draws one (f, kept); h is never drawn.
    let needs = [("a", 4), ("b", 0), ("c", 4), ("d", 4), ("e", 0), ("f", 0), ("h", 0)];
    let first = groups(&mut Scripted::new(&needs), &[task("a", "1"), task("b", "2"), task("c", "3")], 4);
    let refills = || Tasks(vec![task("d", "4"), task("e", "5"), task("f", "6"), task("h", "7")]);
    let unhinted = |t: &str| (t.to_string(), None, None, 4);

    let mut plugin = Plugin::new(Strategy::Dapo { max_refill_groups: 3 }, MonitorConfig::default());
    let mut policy = Counting::new(&needs);
    let mut source = refills();
    let out =
        plugin.process(first.clone(), &mut policy, &MathVerifier::default(), Some(&mut source)).unwrap();
    assert_eq!(policy.batches, vec![vec![unhinted("d"), unhinted("e")], vec![unhinted("f")]]);
    assert_eq!(policy.singles, 0);
    let m = &out.metrics;
    assert_eq!((m.dapo_dropped, m.dapo_refilled, m.extra_rollouts), (2, 2, 12));
    let mut want: Vec<(&str, Option<u8>)> = repeat(("b", None), 4);
    want.extend(repeat(("e", None), 4));
    want.extend(repeat(("f", None), 4));
    assert_eq!(row_kinds(&out.rows), want);
    assert_eq!(source.0.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), vec!["h"]);

    // A refill budget of 2 ends after round 1, one group short.
    let mut plugin = Plugin::new(Strategy::Dapo { max_refill_groups: 2 }, MonitorConfig::default());
    let mut policy = Counting::new(&needs);
    let mut source = refills();
    let out = plugin.process(first, &mut policy, &MathVerifier::default(), Some(&mut source)).unwrap();
    assert_eq!(policy.batches, vec![vec![unhinted("d"), unhinted("e")]]);
    assert_eq!(out.metrics.dapo_refilled, 1);
    assert_eq!(source.0.len(), 2);
}

#[test]
fn the_default_sample_batch_samples_each_request_in_order() {
    let mut policy = Scripted::new(&[("a", 0), ("b", 4)]);
    let (a, b) = (task("a", "1"), task("b", "2"));
    let reqs = [
        SampleRequest { task: &a, prompt: &a.prompt, assistant_prefix: None, n: 2 },
        SampleRequest { task: &b, prompt: &b.prompt, assistant_prefix: Some("Step one. "), n: 3 },
    ];
    let out = policy.sample_batch(&reqs).unwrap();
    assert_eq!(out.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 3]);
    assert_eq!(out[0][0].completion.text, "so \\boxed{1}");
    assert!(out[1].iter().all(|s| s.prefix_ids == "Step one. ".bytes().map(u32::from).collect::<Vec<_>>()));
    let calls: Vec<(&str, bool)> = policy.calls.iter().map(|c| (c.0.as_str(), c.2)).collect();
    assert_eq!(calls, vec![("a", false), ("b", true)]);
}

/// A policy double whose batches come back one completion short per request.
struct Short(Counting);

impl Rollout for Short {
    fn sample(&mut self, req: &SampleRequest<'_>) -> Result<Vec<Sample>, mentor_integration::RolloutError> {
        self.0.sample(req)
    }

    fn sample_batch(
        &mut self,
        reqs: &[SampleRequest<'_>],
    ) -> Result<Vec<Vec<Sample>>, mentor_integration::RolloutError> {
        let mut out = self.0.sample_batch(reqs)?;
        for samples in &mut out {
            samples.pop();
        }
        Ok(out)
    }
}

#[test]
fn a_batch_with_fewer_samples_than_asked_is_an_error_not_a_short_group() {
    let first = groups(&mut Scripted::new(&NEEDS), &tasks(), 4);
    let mut plugin = Plugin::new(
        Strategy::Intervene { mentor: Box::new(LevelMentor), config: cfg(Assembly::Replace) },
        MonitorConfig::default(),
    );
    let mut policy = Short(Counting::new(&NEEDS));
    let err = plugin.process(first, &mut policy, &MathVerifier::default(), None).unwrap_err().to_string();
    assert!(err.contains("3 samples") && err.contains("asked for 4"), "{err}");
}
