//! Properties: reflexivity on generated expressions, invariance under formatting (boxing,
//! spacing, `$..$`), perturbed values detected, arbitrary strings never panic.

use mentor_verify_math::{check, equivalent, Config};
use proptest::prelude::*;

/// Expressions as token lists (so they can be re-spaced), over integers, `x`, `\pi`, roots.
fn expr() -> impl Strategy<Value = Vec<String>> {
    expr_from(true)
}

/// Expressions whose value is exact given `x` and `\pi` (no roots).
fn exact_expr() -> impl Strategy<Value = Vec<String>> {
    expr_from(false)
}

fn expr_from(roots: bool) -> impl Strategy<Value = Vec<String>> {
    let root_or_int = if roots {
        (2u32..30).prop_map(|n| vec![format!("\\sqrt{{{n}}}")]).boxed()
    } else {
        (0u32..1000).prop_map(|n| vec![n.to_string()]).boxed()
    };
    let leaf = prop_oneof![
        (0u32..1000).prop_map(|n| vec![n.to_string()]),
        (1u32..50, 1u32..50).prop_map(|(a, b)| vec![format!("\\frac{{{a}}}{{{b}}}")]),
        Just(vec!["x".to_string()]),
        Just(vec!["\\pi".to_string()]),
        root_or_int,
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), prop_oneof![Just("+"), Just("-"), Just("\\cdot ")], inner.clone()).prop_map(
                |(a, op, b)| {
                    let mut v = vec!["(".to_string()];
                    v.extend(a);
                    v.push(op.to_string());
                    v.extend(b);
                    v.push(")".to_string());
                    v
                }
            ),
            (inner.clone(), 0u32..4).prop_map(|(a, k)| {
                let mut v = vec!["(".to_string()];
                v.extend(a);
                v.extend([")".to_string(), "^".to_string(), format!("{{{k}}}")]);
                v
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn equivalence_is_reflexive(e in expr()) {
        let s = e.concat();
        prop_assert!(equivalent(&s, &s, &Config::default()), "{s}");
    }

    #[test]
    fn formatting_does_not_change_the_verdict(e in expr(), wrap in 0usize..4) {
        let cfg = Config::default();
        let tight = e.concat();
        let spaced = e.join(" ");
        let completion = match wrap {
            0 => format!("so the result is $\\boxed{{{spaced}}}$."),
            1 => format!("$ {spaced} $"),
            2 => format!("The final answer is ${spaced}$. I hope it is correct."),
            _ => format!("\\[ \\boxed{{ {spaced} }} \\]"),
        };
        let v = check(&tight, &completion, &cfg);
        prop_assert!(v.passed(), "{tight} vs {completion}: {:?}", v.feedback());
    }

    #[test]
    fn perturbed_values_are_detected(e in exact_expr(), d in 1u32..100) {
        // Exact given x and pi: any shift is detected, however large the value.
        let s = e.concat();
        let perturbed = format!("({s}) + {d}");
        prop_assert!(!equivalent(&s, &perturbed, &Config::default()), "{s} vs {perturbed}");
    }

    #[test]
    fn relative_perturbations_beyond_tolerance_are_detected(e in expr(), d in 1u32..100) {
        // With roots the comparison is numeric: a relative change of at least 1% is detected.
        let s = format!("({})^{{2}} + 1", e.concat());
        let perturbed = format!("\\frac{{{}}}{{100}}\\cdot ({s})", 100 + d);
        prop_assert!(!equivalent(&s, &perturbed, &Config::default()), "{s} vs {perturbed}");
    }

    #[test]
    fn perturbed_numbers_are_detected(n in -100_000i64..100_000, d in 1i64..1000, commas in any::<bool>()) {
        let m = n + d;
        let shown = if commas && m.abs() >= 1000 {
            let s = m.abs().to_string();
            let mut out = String::new();
            for (k, ch) in s.chars().enumerate() {
                if k > 0 && (s.len() - k) % 3 == 0 { out.push(','); }
                out.push(ch);
            }
            if m < 0 { format!("-{out}") } else { out }
        } else {
            m.to_string()
        };
        let cfg = Config::default();
        let completion = format!("The answer is {shown}.");
        prop_assert!(!check(&n.to_string(), &completion, &cfg).passed());
        prop_assert!(check(&m.to_string(), &completion, &cfg).passed(), "{} vs {}", m, completion);
    }

    #[test]
    fn arbitrary_strings_never_panic(s in ".{0,300}", gold in ".{0,40}") {
        let cfg = Config::default();
        let v = check(&gold, &s, &cfg);
        prop_assert!((0.0..=1.0).contains(&v.reward()));
        let _ = equivalent(&gold, &s, &cfg);
    }

    #[test]
    fn latex_soup_never_panics(parts in proptest::collection::vec(prop_oneof![
        Just("\\frac"), Just("{"), Just("}"), Just("\\sqrt"), Just("^"), Just("_"), Just("\\boxed{"),
        Just("$"), Just("\\left("), Just("\\right)"), Just("["), Just("]"), Just(","), Just("\\pm"),
        Just("x"), Just("1"), Just("0"), Just("."), Just("-"), Just("\\begin{pmatrix}"), Just("&"),
        Just("\\\\"), Just("\\end{pmatrix}"), Just("%"), Just("!"), Just("\\infty"), Just("\\cup"),
        Just("\\text{"), Just("="), Just("9^{9^{9}}"), Just("\\log_"), Just("|"), Just("\\overline{")
    ], 0..60)) {
        let s = parts.concat();
        let cfg = Config::default();
        let _ = check("1", &s, &cfg);
        let _ = check(&s, "\\boxed{1}", &cfg);
        let _ = equivalent(&s, &s, &cfg);
    }
}
