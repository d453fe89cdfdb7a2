use mentor_integration::{
    Assembly, Credit, EventState, InterventionConfig, MonitorConfig, Plugin, Strategy, Trigger,
};
use mentor_verify_math::MathVerifier;

use crate::{advantage_of, groups, level, task, LevelMentor, Scripted, Tasks};

fn mentor_arm(config: InterventionConfig) -> Plugin {
    Plugin::new(Strategy::Intervene { mentor: Box::new(LevelMentor), config }, MonitorConfig::default())
}

fn cfg(assembly: Assembly, credit: Credit) -> InterventionConfig {
    InterventionConfig { hinted_samples: 4, assembly, credit, ..InterventionConfig::default() }
}

#[test]
fn collapse_is_detected_and_the_hint_escalates_to_the_rescuing_level() {
    let mut policy = Scripted::new(&[("a", 3), ("b", 0)]);
    let tasks = [task("a", "12"), task("b", "7")];
    let gs = groups(&mut policy, &tasks, 4);
    let mut plugin = mentor_arm(cfg(Assembly::Replace, Credit::Prefix));
    let out = plugin.process(gs, &mut policy, &MathVerifier::default(), None).unwrap();
    let m = &out.metrics;
    assert_eq!((m.groups, m.collapsed, m.zrf), (2, 1, 0.5));
    assert_eq!((m.intervened, m.rescued, m.extra_rollouts), (1, 1, 12));
    assert_eq!(m.levels_used.get("1"), Some(&1));
    assert_eq!(m.levels_used.get("3"), Some(&1));
    let rec = &out.interventions[0];
    assert_eq!(rec.hints.iter().map(|h| h.level.get()).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(rec.rescued);
    // The level-3 attempt was sampled with the hint's steps forced as the answer's start.
    let hinted_calls: Vec<_> = policy.calls.iter().filter(|c| c.1.is_some()).collect();
    assert_eq!(hinted_calls.len(), 3);
    assert!(hinted_calls[2].2 && !hinted_calls[0].2);
    assert_eq!(plugin.memory().level("a"), Some(level(3)));
    // What the help cost: three hints shown, each its text (characters: the default token
    // count) plus, at level 3, the steps forced as the answer's start.
    let shown: usize = rec.hints.iter().map(|h| h.text.chars().count()).sum::<usize>()
        + rec.hints[2].solution_prefix.as_deref().map_or(0, str::len);
    assert_eq!((m.hints, m.hint_tokens), (3, shown));
    // The rescued group's rows: the forced steps are trained but not the learner's own.
    let a: Vec<_> = out.rows.iter().filter(|r| r.task_id == "a").collect();
    let trained: usize = a.iter().map(|r| r.completion_ids.len()).sum();
    let given: usize = a.iter().map(|r| r.given_tokens).sum();
    assert!(given > 0 && given < trained, "{given} of {trained}");
    assert_eq!((m.rescued_tokens, m.rescued_own_tokens), (trained, trained - given));
}

/// The compute-matched control: a collapsed group gets fresh attempts of its plain prompt, in
/// as many rounds and under the same budgets as a mentor's hinted ones, and nothing is shown.
#[test]
fn the_retry_control_resamples_the_plain_prompt_as_often_as_a_mentor_would() {
    let tasks = [task("a", "12"), task("b", "7")];
    let run = |mentor: Box<dyn mentor_core::Mentor>| {
        let mut policy = Scripted::new(&[("a", 4), ("b", 0)]);
        let gs = groups(&mut policy, &tasks, 4);
        let config = cfg(Assembly::Replace, Credit::Prefix);
        let mut plugin = Plugin::new(Strategy::Intervene { mentor, config }, MonitorConfig::default());
        let out = plugin.process(gs, &mut policy, &MathVerifier::default(), None).unwrap();
        (out, policy.calls)
    };
    let (mentor, _) = run(Box::new(LevelMentor));
    let (retry, calls) = run(Box::new(mentor_agents::Retry));
    assert_eq!(retry.metrics.extra_rollouts, mentor.metrics.extra_rollouts);
    assert_eq!((retry.metrics.intervened, retry.metrics.extra_rollouts), (1, 12), "three rounds of 4");
    assert_eq!(retry.metrics.hint_tokens, 0);
    // Every call saw the plain prompt: no level shown, nothing forced.
    assert!(calls.iter().all(|(_, shown, forced)| shown.is_none() && !forced), "{calls:?}");
    assert_eq!(calls.iter().filter(|(id, _, _)| id == "a").count(), 1 + 3);
}

#[test]
fn budgets_are_respected() {
    let mut policy = Scripted::new(&[("a", 3), ("b", 3), ("c", 3)]);
    let tasks = [task("a", "1"), task("b", "2"), task("c", "3")];
    let gs = groups(&mut policy, &tasks, 4);
    let mut c = cfg(Assembly::Replace, Credit::Prefix);
    c.max_extra_rollouts_per_step = 8;
    let mut plugin = mentor_arm(c);
    let out = plugin.process(gs, &mut policy, &MathVerifier::default(), None).unwrap();
    assert_eq!(out.metrics.extra_rollouts, 8, "two hinted attempts of 4 fit the budget");
    assert_eq!(out.metrics.rescued, 0);
    // The budget is reserved in group order within a round: a and b get their level-1
    // attempt in round 1, c none, and round 2 has no room left.
    assert_eq!(out.metrics.intervened, 2);
    let hints: Vec<(&str, usize)> =
        out.interventions.iter().map(|r| (r.task_id.as_str(), r.hints.len())).collect();
    assert_eq!(hints, vec![("a", 1), ("b", 1)]);
    assert_eq!(out.rows.len(), 12, "unrescued groups stay as they were");

    let gs = groups(&mut policy, &tasks, 4);
    let mut c = cfg(Assembly::Replace, Credit::Prefix);
    c.max_interventions_per_step = 1;
    c.start_level = level(3);
    let out = mentor_arm(c).process(gs, &mut policy, &MathVerifier::default(), None).unwrap();
    assert_eq!((out.metrics.intervened, out.metrics.rescued), (1, 1));
}

#[test]
fn memory_starts_at_the_rescuing_level_and_fades() {
    let mut policy = Scripted::new(&[("a", 2)]);
    let tasks = [task("a", "5")];
    let mut plugin = mentor_arm(cfg(Assembly::Replace, Credit::Prefix));
    let v = MathVerifier::default();
    let out = plugin.process(groups(&mut policy, &tasks, 4), &mut policy, &v, None).unwrap();
    assert_eq!(out.interventions[0].hints.len(), 2, "levels 1 then 2");
    let out = plugin.process(groups(&mut policy, &tasks, 4), &mut policy, &v, None).unwrap();
    assert_eq!(out.interventions[0].hints[0].level, level(2), "starts at the remembered level");
    // The task becomes solvable without hints: the memory fades.
    policy.needs.insert("a".into(), 0);
    let out = plugin.process(groups(&mut policy, &tasks, 4), &mut policy, &v, None).unwrap();
    assert_eq!(out.metrics.intervened, 0);
    assert_eq!(plugin.memory().level("a"), Some(level(1)));
}

#[test]
fn each_assembly_and_credit_mode_produces_the_right_rows() {
    let v = MathVerifier::default();
    let tasks = [task("a", "12"), task("b", "7")];
    for assembly in [Assembly::Replace, Assembly::Augment, Assembly::Nurl { keep_unhinted: 1 }] {
        for credit in [Credit::InContext, Credit::StrippedIs, Credit::Stripped, Credit::Prefix] {
            let mut policy = Scripted::new(&[("a", 3), ("b", 0)]);
            let gs = groups(&mut policy, &tasks, 4);
            let mut c = cfg(assembly, credit);
            c.start_level = level(3);
            let out = mentor_arm(c).process(gs, &mut policy, &v, None).unwrap();
            let rows = &out.rows;
            let expected = match assembly {
                Assembly::Augment => 12,
                _ => 8,
            };
            assert_eq!(rows.len(), expected, "{assembly:?} {credit:?}");
            let hinted: Vec<_> = rows.iter().filter(|r| r.hint_level.is_some()).collect();
            let want_hinted = if matches!(assembly, Assembly::Nurl { .. }) { 3 } else { 4 };
            assert_eq!(hinted.len(), want_hinted, "{assembly:?} {credit:?}");
            for r in &hinted {
                let prompt = &r.prompt.last().unwrap().content;
                match credit {
                    Credit::InContext => assert!(prompt.contains("Hint: [L3]"), "{prompt}"),
                    _ => assert_eq!(prompt, "Problem a", "{credit:?}"),
                }
                assert_eq!(r.behaviour_logprobs.is_some(), credit == Credit::StrippedIs);
                if let Some(b) = &r.behaviour_logprobs {
                    assert_eq!(b.len(), r.completion_ids.len());
                }
                let starts_with_steps =
                    r.completion_ids.starts_with(&"Step one. ".bytes().map(u32::from).collect::<Vec<_>>());
                assert_eq!(starts_with_steps, credit == Credit::Prefix, "{credit:?}");
                if credit == Credit::Prefix {
                    assert_eq!(
                        advantage_of(rows, r),
                        r.reward,
                        "A = r − 0 against the collapsed group's baseline"
                    );
                }
            }
            if credit != Credit::Prefix {
                // Group-relative advantages sum to zero in every group.
                for g in 0..=rows.iter().map(|r| r.group).max().unwrap() {
                    let s: f64 = rows.iter().filter(|r| r.group == g).map(|r| advantage_of(rows, r)).sum();
                    assert!(s.abs() < 1e-9, "{assembly:?} {credit:?} group {g}: {s}");
                }
            }
            if let Assembly::Nurl { .. } = assembly {
                let group_a: Vec<_> = rows.iter().filter(|r| r.task_id == "a").collect();
                assert_eq!(group_a.len(), 4);
                assert!(group_a[0].hint_level.is_none() && group_a[1].hint_level.is_some());
            }
        }
    }
}

#[test]
fn prefix_credit_can_also_train_the_hinted_group_in_its_own_context() {
    let v = MathVerifier::default();
    let tasks = [task("a", "12"), task("b", "7")];
    let steps: Vec<u32> = "Step one. ".bytes().map(u32::from).collect();
    for assembly in [Assembly::Replace, Assembly::Augment, Assembly::Nurl { keep_unhinted: 1 }] {
        let mut policy = Scripted::new(&[("a", 3), ("b", 0)]);
        let gs = groups(&mut policy, &tasks, 4);
        let mut c = cfg(assembly, Credit::Prefix);
        c.start_level = level(3);
        c.hinted_in_context = true;
        let out = mentor_arm(c).process(gs, &mut policy, &v, None).unwrap();
        let rows = &out.rows;
        // The in-context copy is one extra group after all others.
        let last = rows.iter().map(|r| r.group).max().unwrap();
        let copy: Vec<_> = rows.iter().filter(|r| r.group == last).collect();
        assert_eq!(copy.len(), 4, "{assembly:?}");
        for r in &copy {
            assert!(r.prompt.last().unwrap().content.contains("Hint: [L3]"));
            assert_eq!(r.context_ids, steps, "the hint's steps are context, not loss");
            assert!(!r.completion_ids.starts_with(&steps));
        }
        let sum: f64 = copy.iter().map(|r| advantage_of(rows, r)).sum();
        assert!(sum.abs() < 1e-9, "group-relative advantages: {sum}");
        // The prefix rows are as without the option.
        let prefix_rows: Vec<_> = rows.iter().filter(|r| r.group != last && r.hint_level.is_some()).collect();
        assert!(!prefix_rows.is_empty());
        for r in prefix_rows {
            assert!(r.completion_ids.starts_with(&steps) && r.context_ids.is_empty());
            assert_eq!(advantage_of(rows, r), r.reward);
        }
    }
}

#[test]
fn collapse_events_gate_the_on_event_trigger() {
    let v = MathVerifier::default();
    let mut policy = Scripted::new(&[("a", 1), ("b", 0), ("c", 0), ("d", 0)]);
    let tasks = [task("a", "1"), task("b", "2"), task("c", "3"), task("d", "4")];
    let mut c = cfg(Assembly::Replace, Credit::Prefix);
    c.trigger = Trigger::OnCollapseEvent;
    let mut plugin = Plugin::new(
        Strategy::Intervene { mentor: Box::new(LevelMentor), config: c },
        MonitorConfig { window: 2, raise_above: 0.5, clear_below: 0.3 },
    );
    let out = plugin.process(groups(&mut policy, &tasks, 2), &mut policy, &v, None).unwrap();
    assert_eq!(
        (out.metrics.event, out.metrics.intervened),
        (Some(EventState::Quiet), 0),
        "ZRF 0.25: no event"
    );
    for t in ["b", "c", "d"] {
        policy.needs.insert(t.into(), 1);
    }
    let out = plugin.process(groups(&mut policy, &tasks, 2), &mut policy, &v, None).unwrap();
    assert_eq!(out.metrics.event, Some(EventState::Started), "window mean (0.25 + 1) / 2 > 0.5");
    assert_eq!(out.metrics.intervened, 4);
    for t in ["a", "b", "c", "d"] {
        policy.needs.insert(t.into(), 0);
    }
    plugin.process(groups(&mut policy, &tasks, 2), &mut policy, &v, None).unwrap();
    let out = plugin.process(groups(&mut policy, &tasks, 2), &mut policy, &v, None).unwrap();
    assert_eq!(out.metrics.event, Some(EventState::Cleared));
}

#[test]
fn vanilla_keeps_collapsed_groups_with_zero_advantage() {
    let mut policy = Scripted::new(&[("a", 4), ("b", 0)]);
    let tasks = [task("a", "1"), task("b", "2")];
    let mut plugin = Plugin::new(Strategy::Vanilla, MonitorConfig::default());
    let out =
        plugin.process(groups(&mut policy, &tasks, 4), &mut policy, &MathVerifier::default(), None).unwrap();
    assert_eq!(out.rows.len(), 8);
    assert!(out.rows.iter().filter(|r| r.task_id == "a").all(|r| advantage_of(&out.rows, r) == 0.0));
    assert_eq!((out.metrics.collapsed, out.metrics.extra_rollouts), (1, 0));
}

#[test]
fn dapo_drops_constant_groups_and_refills() {
    // "a" always fails (all-0), "b" half right (kept), "c" never sampled unless refilled.
    let mut policy = Scripted::new(&[("a", 4), ("b", 0), ("c", 0), ("d", 4)]);
    let tasks = [task("a", "1"), task("b", "2")];
    let mut plugin = Plugin::new(Strategy::Dapo { max_refill_groups: 3 }, MonitorConfig::default());
    let mut source = Tasks(vec![task("d", "4"), task("c", "3")]);
    let out = plugin
        .process(groups(&mut policy, &tasks, 4), &mut policy, &MathVerifier::default(), Some(&mut source))
        .unwrap();
    assert_eq!(out.metrics.dapo_dropped, 1);
    assert_eq!(out.metrics.dapo_refilled, 1, "d is all-0 too and is skipped; c is kept");
    let ids: Vec<&str> = out.rows.iter().map(|r| r.task_id.as_str()).collect();
    assert_eq!(ids, vec!["b", "b", "b", "b", "c", "c", "c", "c"]);
}

/// A verifier whose machinery fails on everything it is asked (here: the hinted attempts).
struct Broken;

impl mentor_core::Verifier for Broken {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn verify(
        &self,
        _: &mentor_core::Task,
        _: &str,
    ) -> Result<mentor_core::Verdict, mentor_core::VerifierError> {
        Err(mentor_core::VerifierError::Internal { verifier: "broken", message: "sandbox crashed".into() })
    }
}

#[test]
fn a_verifier_error_scores_zero_and_the_step_goes_on() {
    let mut policy = Scripted::new(&[("a", 1), ("b", 0)]);
    let tasks = [task("a", "12"), task("b", "7")];
    let mut gs = groups(&mut policy, &tasks, 4);
    // One first-rollout completion the trainer's verifier failed on (Verifier::judge_batch).
    let err = mentor_core::VerifierError::Internal { verifier: "x", message: "boom".into() };
    gs[1].samples[0].verdict = mentor_core::Verdict::verifier_error(&err);
    let mut plugin = mentor_arm(cfg(Assembly::Replace, Credit::Prefix));
    let out = plugin.process(gs, &mut policy, &Broken, None).expect("a verifier error must not end the step");
    let m = &out.metrics;
    assert_eq!(m.intervened, 1);
    assert_eq!(m.verifier_errors, 1 + m.extra_rollouts, "the first-rollout error and every hinted attempt");
    assert_eq!(m.rescued, 0, "an attempt that could not be verified rescues nothing");
    assert_eq!(out.interventions[0].hinted_rewards.iter().sum::<f64>(), 0.0);
    assert_eq!(out.rows.len(), 8);
    let v = mentor_core::Verdict::verifier_error(&err);
    assert!(v.is_verifier_error() && !v.passed() && v.reward() == 0.0);
    assert!(
        matches!(v.feedback(), mentor_core::Feedback::VerifierError { message } if message.contains("boom"))
    );
    let judged = mentor_core::Verifier::judge_batch(&Broken, &[(&tasks[0], "x"), (&tasks[1], "y")]);
    assert!(judged.iter().all(mentor_core::Verdict::is_verifier_error));
}

#[test]
fn full_solution_swaps_the_reference_into_collapsed_groups_only() {
    let v = MathVerifier::default();
    let with_reference = |id: &str, gold: &str| {
        let mut t = task(id, gold);
        t.payload = mentor_core::Payload::Math(mentor_core::MathPayload {
            answer: gold.into(),
            solution: Some(format!("Add them up: \\boxed{{{gold}}}")),
        });
        t
    };
    // a and c collapse, b is solved; c has no reference solution; the budget allows two.
    let mut policy = Scripted::new(&[("a", 4), ("b", 0), ("c", 4)]);
    let tasks = [with_reference("a", "12"), with_reference("b", "7"), task("c", "3")];
    let gs = groups(&mut policy, &tasks, 4);
    let mut plugin =
        Plugin::new(Strategy::FullSolution { max_groups: 2, rewrite: None }, MonitorConfig::default());
    assert_eq!(plugin.name(), "full_solution");
    let out = plugin.process(gs, &mut policy, &v, None).unwrap();
    let m = &out.metrics;
    assert_eq!((m.collapsed, m.intervened, m.rescued, m.extra_rollouts), (2, 1, 1, 0));
    assert_eq!(out.rows.len(), 12, "groups keep their size");
    let a: Vec<_> = out.rows.iter().filter(|r| r.task_id == "a").collect();
    // Three failed samples, then the reference as the last row, under the plain prompt.
    assert_eq!(a.iter().map(|r| r.reward).collect::<Vec<_>>(), vec![0.0, 0.0, 0.0, 1.0]);
    let reference = "Add them up: \\boxed{12}";
    assert_eq!(a[3].completion_ids, reference.bytes().map(u32::from).collect::<Vec<_>>());
    assert_eq!(a[3].prompt, tasks[0].prompt);
    assert!(a[3].behaviour_logprobs.is_none(), "no importance ratio on the off-policy row");
    // Group-normalised: the reference pushed up, the failures down, summing to zero.
    assert!(advantage_of(&out.rows, a[3]) > 0.0 && a[..3].iter().all(|r| advantage_of(&out.rows, r) < 0.0));
    assert!(a.iter().map(|r| advantage_of(&out.rows, r)).sum::<f64>().abs() < 1e-9);
    // c (no reference) stays collapsed with zero advantages.
    assert!(out.rows.iter().filter(|r| r.task_id == "c").all(|r| advantage_of(&out.rows, r) == 0.0));
    let rec = &out.interventions[0];
    assert_eq!((rec.task_id.as_str(), rec.rescued), ("a", true));
    assert_eq!(rec.hints[0].source, mentor_core::HintSource::Reference);
    // The reference is all given: a hint of its full length, none of it the learner's.
    assert_eq!((m.hints, m.hint_tokens), (1, reference.len()));
    let own: usize = a[..3].iter().map(|r| r.completion_ids.len()).sum();
    assert_eq!((m.rescued_tokens, m.rescued_own_tokens), (own + reference.len(), own));
    assert_eq!(a[3].given_tokens, reference.len());
}

#[test]
fn full_solution_trains_the_rewritten_reference_when_given_a_rewrite() {
    let v = MathVerifier::default();
    let mut t = task("a", "12");
    t.payload = mentor_core::Payload::Math(mentor_core::MathPayload {
        answer: "12".into(),
        solution: Some("TWELVE: \\boxed{12}".into()),
    });
    let mut policy = Scripted::new(&[("a", 4)]);
    let gs = groups(&mut policy, std::slice::from_ref(&t), 4);
    let lower: mentor_core::ReferenceRewrite = std::sync::Arc::new(|s: &str| Some(s.to_lowercase()));
    let mut plugin =
        Plugin::new(Strategy::FullSolution { max_groups: 8, rewrite: Some(lower) }, MonitorConfig::default());
    let out = plugin.process(gs, &mut policy, &v, None).unwrap();
    assert_eq!(out.metrics.rescued, 1);
    let last = out.rows.last().unwrap();
    assert_eq!(last.completion_ids, "twelve: \\boxed{12}".bytes().map(u32::from).collect::<Vec<_>>());
}

#[test]
fn full_solution_skips_a_reference_the_verifier_rejects() {
    let v = MathVerifier::default();
    let mut t = task("a", "12");
    t.payload = mentor_core::Payload::Math(mentor_core::MathPayload {
        answer: "12".into(),
        solution: Some("so \\boxed{13}".into()),
    });
    let mut policy = Scripted::new(&[("a", 4)]);
    let gs = groups(&mut policy, std::slice::from_ref(&t), 4);
    let mut plugin =
        Plugin::new(Strategy::FullSolution { max_groups: 8, rewrite: None }, MonitorConfig::default());
    let out = plugin.process(gs, &mut policy, &v, None).unwrap();
    assert_eq!((out.metrics.intervened, out.metrics.rescued), (1, 0));
    assert!(!out.interventions[0].rescued);
    assert!(out.rows.iter().all(|r| r.reward == 0.0 && advantage_of(&out.rows, r) == 0.0));
}
