use mentor_agents::GuardOutcome;
use mentor_core::{Hint, HintLevel, HintSource, Task};
use proptest::prelude::*;

use crate::guard;

/// Ways a hint can state a value `p/q`.
fn renderings(p: i64, q: i64) -> Vec<String> {
    let mut v =
        vec![format!("\\frac{{{p}}}{{{q}}}"), format!("{p}/{q}"), format!("\\boxed{{\\frac{{{p}}}{{{q}}}}}")];
    if q == 1 {
        v.extend([format!("{p}"), format!("\\boxed{{{p}}}"), format!("${p}$"), format!("{p}.0")]);
    }
    if 100 % q == 0 || q == 8 {
        let d = p as f64 / q as f64;
        v.push(format!("{d}"));
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// No hint that passes the guard contains the answer in any form the math checker accepts.
    #[test]
    fn no_accepted_hint_leaks(p in -500i64..500, q in prop::sample::select(vec![1i64, 2, 3, 4, 5, 8]), form in 0usize..8,
                              before in "[a-z ]{0,20}", after in "[a-z ]{0,20}", other in 0i64..1000) {
        let gold = if q == 1 { format!("{p}") } else { format!("\\frac{{{p}}}{{{q}}}") };
        let forms = renderings(p, q);
        let stated = &forms[form % forms.len()];
        let text = format!("{before} so x = {stated} {after}, and step {other} matters");
        let task = Task::math("t", "q", gold.clone());
        let hint = Hint { level: HintLevel::PLAN, text, solution_prefix: Some(format!("we get {stated}")), source: HintSource::Mentor };
        let cfg = mentor_verify_math::Config::default();
        match guard().check(&task, hint) {
            GuardOutcome::Accepted(h) | GuardOutcome::Redacted { hint: h, .. } => {
                for t in [h.text.as_str(), h.solution_prefix.as_deref().unwrap_or("")] {
                    prop_assert!(!mentor_verify_math::check(&gold, t, &cfg).passed(), "{t}");
                    for token in t.split_whitespace() {
                        prop_assert!(!mentor_verify_math::equivalent(&gold, token, &cfg), "`{token}` in {t}");
                    }
                }
            }
            GuardOutcome::Rejected(_) => {}
        }
    }
}
