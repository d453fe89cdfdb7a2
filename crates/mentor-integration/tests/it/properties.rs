use mentor_integration::{Assembly, Credit, InterventionConfig, MonitorConfig, Plugin, Strategy as Arm};
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
