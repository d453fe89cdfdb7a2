use mentor_core::{Attempt, Completion, Hint, HintLevel, HintSource, Intervention};
use mentor_integration::{
    Assembly, Credit, HintMemory, InterventionConfig, MentorStep, MonitorConfig, Need, Outcome, Plugin,
    RowSource, StepGroup, Strategy as Arm,
};
use mentor_verify_math::MathVerifier;
use proptest::prelude::*;

use crate::{advantage_of, groups, task, LevelMentor, Scripted};

fn assembly() -> impl Strategy<Value = Assembly> {
    prop_oneof![
        Just(Assembly::Replace),
        Just(Assembly::Augment),
        (0usize..5).prop_map(|k| Assembly::Nurl { keep_unhinted: k })
    ]
}

fn credit() -> impl Strategy<Value = Credit> {
    prop_oneof![
        Just(Credit::InContext),
        Just(Credit::StrippedIs),
        Just(Credit::Stripped),
        Just(Credit::Prefix)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// No row lost, groups contiguous and numbered in order, masks consistent, advantages finite.
    #[test]
    fn assembly_invariants(needs in proptest::collection::vec(0u8..5, 1..5), g in 1usize..5, hinted in 1usize..6,
                           assembly in assembly(), credit in credit(), budget in 0usize..30) {
        let tasks: Vec<_> = (0..needs.len()).map(|i| task(&format!("t{i}"), &format!("{}", i + 1))).collect();
        let pairs: Vec<(String, u8)> = tasks.iter().zip(&needs).map(|(t, n)| (t.id.clone(), *n)).collect();
        let mut policy = Scripted::new(&pairs.iter().map(|(k, v)| (k.as_str(), *v)).collect::<Vec<_>>());
        let gs = groups(&mut policy, &tasks, g);
        let config = InterventionConfig { hinted_samples: hinted, assembly, credit, max_extra_rollouts_per_step: budget, ..InterventionConfig::default() };
        let mut plugin = Plugin::new(Arm::Intervene { mentor: Box::new(LevelMentor), config }, MonitorConfig::default());
        let out = plugin.process(gs, &mut policy, &MathVerifier::default(), None).unwrap();
        let m = &out.metrics;
        prop_assert!(m.extra_rollouts <= budget);
        // Expected row count: every group keeps G rows, except augment adds the hinted rows and
        // nurl/replace swap in min(G, hinted) / hinted rows for rescued groups.
        let rescued = out.interventions.iter().filter(|r| r.rescued).count();
        let expected = match assembly {
            Assembly::Augment => tasks.len() * g + rescued * hinted,
            Assembly::Replace => (tasks.len() - rescued) * g + rescued * hinted,
            Assembly::Nurl { keep_unhinted } => {
                let k = keep_unhinted.min(g);
                (tasks.len() - rescued) * g + rescued * (k + (g - k).min(hinted))
            }
        };
        prop_assert_eq!(out.rows.len(), expected);
        let mut last = 0;
        let mut seen = std::collections::BTreeSet::new();
        for r in &out.rows {
            prop_assert!(r.group == last || (r.group == last + 1 && !seen.contains(&r.group)), "contiguous");
            seen.insert(r.group);
            last = r.group;
            prop_assert!(advantage_of(&out.rows, r).is_finite());
            prop_assert!(!r.completion_ids.is_empty());
            if let Some(b) = &r.behaviour_logprobs { prop_assert_eq!(b.len(), r.completion_ids.len()); }
            prop_assert_eq!(r.behaviour_logprobs.is_some(), credit == Credit::StrippedIs && r.hint_level.is_some());
        }
        prop_assert_eq!(m.rows, out.rows.len());
    }
}

/// A step's groups for the state machine: `n` groups of `g`, those in `collapsed` all-failing.
fn step_groups(n: usize, g: usize, collapsed: &[usize]) -> Vec<StepGroup> {
    let v = MathVerifier::default();
    (0..n)
        .map(|i| {
            let t = task(&format!("t{i}"), "7");
            let text = if collapsed.contains(&i) { "\\boxed{1}" } else { "\\boxed{7}" };
            let verdict = mentor_core::Verifier::verify(&v, &t, text).unwrap();
            let attempts = (0..g)
                .map(|_| Attempt {
                    completion: Completion::new(t.id.clone(), text),
                    verdict: verdict.clone(),
                })
                .collect();
            StepGroup { task: t, attempts, rewards: vec![if collapsed.contains(&i) { 0.0 } else { 1.0 }; g] }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The state machine ends, keeps its budgets, escalates one level per round, asks each
    /// open group once a round, rescues exactly the groups with a passing hinted attempt, and
    /// its plan keeps every row of a group that was not rescued.
    #[test]
    fn step_machine_invariants(n in 1usize..6, g in 1usize..5, hinted in 1usize..5, mask in 0u32..64,
                               budget in 0usize..40, max_iv in 0usize..5, escalate: bool,
                               script in proptest::collection::vec((any::<bool>(), 0u8..4), 64),
                               assembly in assembly(), credit in credit()) {
        let collapsed: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
        let config = InterventionConfig {
            hinted_samples: hinted, assembly, credit, escalate, max_extra_rollouts_per_step: budget,
            max_interventions_per_step: max_iv, ..InterventionConfig::default()
        };
        let mut step = MentorStep::new(config, step_groups(n, g, &collapsed), &collapsed, false,
                                       &HintMemory::new(1), HintLevel::MAX).unwrap();
        let mut draws = script.into_iter().cycle();
        let mut asked: std::collections::BTreeMap<usize, Vec<(usize, HintLevel)>> = Default::default();
        let mut passed_groups = std::collections::BTreeSet::new();
        let mut sampled = 0;
        for _ in 0..100 {
            match step.need() {
                Need::Hints(asks) => {
                    let round = step.round();
                    let answers = asks.iter().map(|a| {
                        asked.entry(a.intervention).or_default().push((round, a.level));
                        let (give, _) = draws.next().unwrap();
                        give.then(|| Intervention {
                            diagnosis: None,
                            hint: Some(Hint { level: a.level, text: "h".into(), solution_prefix: Some("s".into()), source: HintSource::Mentor }),
                            rejections: Vec::new(),
                            redactions: Vec::new(),
                        })
                    }).collect();
                    step.answer(answers).unwrap();
                }
                Need::Samples(reqs) => {
                    let outcomes: Vec<Vec<Outcome>> = reqs.iter().map(|r| {
                        prop_assert_eq!(r.n, hinted);
                        prop_assert_eq!(r.assistant_prefix.is_some(), credit == Credit::Prefix);
                        let (_, k) = draws.next().unwrap();
                        let outs: Vec<Outcome> = (0..r.n).map(|j| Outcome { reward: 0.5, passed: k == 3 && j == 0 }).collect();
                        if k == 3 { passed_groups.insert(r.group); }
                        sampled += r.n;
                        Ok(outs)
                    }).collect::<Result<_, TestCaseError>>()?;
                    step.feed(outcomes).unwrap();
                }
                Need::Done => break,
            }
        }
        prop_assert!(matches!(step.need(), Need::Done), "the step ends");
        let plan = step.finish().unwrap();
        prop_assert!(sampled <= budget);
        prop_assert_eq!(plan.counts.extra_rollouts, sampled);
        prop_assert!(plan.counts.intervened <= max_iv.min(collapsed.len()));
        for calls in asked.values() {
            for w in calls.windows(2) {
                prop_assert_eq!(w[1].0, w[0].0 + 1, "one ask per round");
                prop_assert_eq!(w[1].1.get(), w[0].1.get() + 1, "one level up per round");
            }
            prop_assert!(escalate || calls.len() == 1);
        }
        let rescued: std::collections::BTreeSet<usize> = plan.rescues.iter().map(|r| r.group).collect();
        prop_assert_eq!(&rescued, &passed_groups);
        for i in (0..n).filter(|i| !rescued.contains(i)) {
            let rows: Vec<usize> = plan.rows.iter().filter_map(|r| match r.completion {
                RowSource::Unhinted { group, sample } if group == i => Some(sample),
                _ => None,
            }).collect();
            prop_assert_eq!(rows, (0..g).collect::<Vec<_>>());
        }
        let mut last = 0;
        for r in &plan.rows {
            prop_assert!(r.group == last || r.group == last + 1, "contiguous");
            last = r.group;
        }
        prop_assert_eq!(plan.groups, plan.rows.last().map_or(0, |r| r.group + 1));
    }
}
