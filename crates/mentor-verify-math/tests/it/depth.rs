//! Input-controlled depth (issue 17, item 2): chains of postfix and prefix operators, towers,
//! and nestings of every bracket and command come back as `too_complex` verdicts, never as a
//! stack overflow. Every check here runs on a thread with a small stack (256 KiB, an eighth
//! of a rayon worker's), so a regression aborts this test binary instead of passing by luck
//! on the main thread's 8 MiB.

use mentor_core::{Feedback, MathFeedback, MathOutcome, Verdict};
use mentor_verify_math::{check, check_batch, equivalent, Config};
use proptest::prelude::*;

/// Stack of the threads the checks run on.
const SMALL_STACK: usize = 256 << 10;

/// Runs `f` on a fresh thread with a [`SMALL_STACK`] stack and returns its result.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .name("small-stack".into())
        .stack_size(SMALL_STACK)
        .spawn(f)
        .expect("spawn a checking thread")
        .join()
        .expect("the check returned without panicking")
}

fn math(v: Verdict) -> MathFeedback {
    match v.into_feedback() {
        Feedback::Math(m) => m,
        other => panic!("math feedback expected, got {other:?}"),
    }
}

/// Checks `completion` against `gold` on a small stack.
fn small_check(gold: String, completion: String) -> (bool, MathFeedback) {
    on_small_stack(move || {
        let v = check(&gold, &completion, &Config::default());
        (v.passed(), math(v))
    })
}

/// The input is refused as too complex on both sides: as the completion's boxed answer and as
/// the gold; and `equivalent` says no.
fn assert_refused(name: &str, answer: &str) {
    let (passed, f) = small_check("1".into(), format!("so \\boxed{{{answer}}}"));
    assert!(!passed, "{name}: a refused answer earns nothing");
    assert_eq!(f.outcome, MathOutcome::TooComplex, "{name} (completion): {:?}", f.detail);
    assert!(f.detail.is_some(), "{name}: a refusal says why");
    let (passed, f) = small_check(answer.into(), "\\boxed{1}".into());
    assert!(!passed, "{name}: a refused gold earns nothing");
    assert_eq!(f.outcome, MathOutcome::TooComplex, "{name} (gold): {:?}", f.detail);
    let a = answer.to_string();
    assert!(!on_small_stack(move || equivalent(&a, &a, &Config::default())), "{name}: equivalent");
}

/// The input is judged without crashing on both sides, whatever the verdict.
fn assert_survives(name: &str, answer: &str) {
    let _ = small_check("1".into(), format!("so \\boxed{{{answer}}}"));
    let _ = small_check("1".into(), answer.into());
    let _ = small_check(answer.into(), "\\boxed{1}".into());
    let a = answer.to_string();
    let _ = on_small_stack(move || equivalent(&a, &a, &Config::default()));
    eprintln!("{name}: judged");
}

#[test]
fn postfix_chains_are_refused_not_overflowed() {
    // The repro of issue 17: 1 500 factorials in a box aborted `mentor verify math`.
    assert_refused("3!x1500", &format!("3{}", "!".repeat(1_500)));
    assert_refused("3!x100000", &format!("3{}", "!".repeat(100_000)));
    assert_refused("1%x1500", &format!("1{}", "%".repeat(1_500)));
    assert_refused("1\\%x1500", &format!("1{}", "\\%".repeat(1_500)));
    assert_refused("mixed !%", &format!("2{}", "!%".repeat(1_000)));
    assert_refused("2!^2!^2!", &vec!["2!"; 1_000].join("^"));
    // Unboxed: a completion that is only the chain, and a gold that is.
    let bangs = format!("1{}", "%".repeat(3_000));
    // (Unboxed, the last number `1%` is taken: wrong for 2, and no crash.)
    let (passed, _) = small_check("2".into(), bangs.clone());
    assert!(!passed);
    let (passed, f) = small_check(bangs, "1".into());
    assert!(!passed);
    assert_eq!(f.outcome, MathOutcome::TooComplex, "{:?}", f.detail);
}

#[test]
fn short_postfix_chains_still_work() {
    let (passed, f) = small_check("720".into(), "\\boxed{3!!}".into());
    assert!(passed, "{f:?}");
    let (passed, f) = small_check("24".into(), "\\boxed{4!}".into());
    assert!(passed, "{f:?}");
    let (passed, f) = small_check("0.25".into(), "\\boxed{25\\%}".into());
    assert!(passed, "{f:?}");
}

#[test]
fn prefix_chains_and_towers_are_refused() {
    assert_refused("----1", &format!("{}1", "-".repeat(3_000)));
    assert_refused("+-+-1", &format!("{}1", "+-".repeat(1_500)));
    assert_survives("\\pm chain", &format!("{}1", "\\pm".repeat(1_000)));
    assert_refused("2^2^2", &vec!["2"; 1_500].join("^"));
    assert_refused("2^{2^{..}}", &format!("{}2{}", "2^{".repeat(1_000), "}".repeat(1_000)));
    assert_refused("2^-2^-2", &vec!["2"; 1_000].join("^-"));
    assert_refused("\\sin\\sin", &format!("{}x", "\\sin ".repeat(1_000)));
    assert_refused("\\sin^2\\sin^2", &format!("{}x", "\\sin^2 ".repeat(800)));
    assert_refused("\\log_2\\log_2", &format!("{}x", "\\log_2 ".repeat(800)));
    assert_refused("\\sqrt\\sqrt", &format!("{}2", "\\sqrt".repeat(1_000)));
    assert_refused("x_x_x", &vec!["x"; 1_500].join("_"));
}

#[test]
fn nestings_are_refused() {
    let nest = |open: &str, inner: &str, close: &str, n: usize| {
        format!("{}{inner}{}", open.repeat(n), close.repeat(n))
    };
    // Over the answer-size bound (refused before parsing) and under it (refused by depth).
    for n in [100_000, 1_000] {
        assert_refused("parens", &nest("(", "1", ")", n));
        assert_refused("braces", &nest("{", "1", "}", n));
    }
    assert_refused("brackets", &nest("[", "1", "]", 1_000));
    assert_refused("\\left(", &nest("\\left(", "1", "\\right)", 300));
    assert_refused("\\frac", &nest("\\frac{1}{", "2", "}", 400));
    assert_refused("\\frac numerators", &nest("\\frac{", "2", "}{3}", 400));
    assert_refused("\\dfrac12", &format!("{}2", "\\dfrac1".repeat(500)));
    assert_refused("\\sqrt{", &nest("\\sqrt{", "2", "}", 500));
    assert_refused("\\sqrt[", &nest("\\sqrt[", "2", "]{2}", 500));
    assert_refused("\\binom", &nest("\\binom{", "2", "}{1}", 400));
    assert_refused("sets", &nest("\\{", "1", "\\}", 800));
    assert_refused("tuples", &nest("(1,", "2", ")", 800));
    assert_refused("intervals", &nest("[0,", "1", ")", 800));
    assert_refused("abs", &nest("|", "1", "|", 1_000));
    // Formatting groups are lexed in place (iteratively): deep but flat, so judged normally.
    assert_survives("\\text", &nest("\\text{", "1", "}", 500));
    assert_survives("\\textbf", &nest("\\textbf{", "1", "}", 500));
    assert_survives("\\mathrm x", &nest("\\mathrm{", "x", "}", 500));
    assert_survives("\\boxed in a box", &nest("\\boxed{", "1", "}", 500));
    assert_refused("\\sin(", &nest("\\sin(", "x", ")", 600));
    assert_refused("\\ln{", &nest("\\ln{", "x", "}", 600));
    assert_refused("implicit products", &nest("2(", "x", ")", 1_000));
    assert_refused("x_{", &nest("x_{", "1", "}", 800));
    assert_refused("1011_{", &nest("1_{", "2", "}", 800));
    assert_refused("pmatrix", &nest("\\begin{pmatrix}", "1", "\\end{pmatrix}", 200));
    assert_refused("mixed", &format!("{}1{}", "(-\\frac{\\sqrt{2^{|{".repeat(100), "}|}}}".repeat(100)));
    assert_survives("mixed, unclosed", &"(-\\frac{\\sqrt{2^{|{".repeat(100));
}

/// Nestings of every kind, for the deepest-accepted test: (opening, innermost, closing).
const SHAPES: [(&str, &str, &str); 16] = [
    ("(", "1", ")"),
    ("{", "1", "}"),
    ("-", "1", ""),
    ("\\frac{1}{", "2", "}"),
    ("\\frac{", "x", "}{3}"),
    ("\\sqrt{", "x", "}"),
    ("\\sqrt[", "3", "]{x}"),
    ("1^{", "x", "}"),
    ("\\sin(", "x", ")"),
    ("\\sin ", "x", ""),
    ("\\{(", "1", ")\\}"),
    ("(1,", "x", ")"),
    ("|", "x", "|"),
    ("x_{", "1", "}"),
    ("-(\\frac{1}{\\sqrt{x^{", "2", "}}})"),
    ("(", "1", "!)"),
];

#[test]
fn deepest_accepted_answers_are_judged_on_a_small_stack() {
    // At the depth bound itself (the last depth not refused), with the default budget and with
    // the largest one honoured (a larger `max_depth` is clamped): judged on a small stack, equal
    // to itself, and compared by value against a different answer of the same depth.
    let configs = [
        Config::default(),
        Config { max_depth: 64, ..Config::default() },
        Config { max_depth: 1 << 20, ..Config::default() },
    ];
    for cfg in configs {
        for (open, inner, close) in SHAPES {
            let nest = |n: usize, inner: &str| format!("{}{inner}{}", open.repeat(n), close.repeat(n));
            let accepted = (1..400)
                .take_while(|n| {
                    let f = mentor_verify_math::check_feedback(&nest(*n, inner), "\\boxed{0}", &cfg);
                    f.outcome != MathOutcome::TooComplex
                })
                .last()
                .unwrap_or(0);
            assert!(accepted >= 1, "{open}: not even one level accepted");
            assert!(accepted < 400, "{open}: no depth bound");
            let (s, t) = (nest(accepted, inner), nest(accepted, &format!("{inner}+1")));
            let c = cfg.clone();
            let (passed, f) = on_small_stack(move || {
                let _ = check(&t, &format!("\\boxed{{{s}}}"), &c);
                let _ = check(&s, &format!("\\boxed{{{t}}}"), &c);
                let _ = equivalent(&s, &t, &c);
                let v = check(&s, &format!("\\boxed{{{s}}}"), &c);
                (v.passed(), math(v))
            });
            assert!(passed, "{open} x{accepted} is equal to itself: {f:?}");
        }
    }
}

#[test]
fn one_bomb_does_not_lose_the_batch() {
    let bomb = format!("\\boxed{{3{}}}", "!".repeat(1_500));
    let items: Vec<(&str, &str)> = vec![("5", "\\boxed{5}"), ("1", bomb.as_str()), ("7", "#### 7")];
    // `check_batch` runs on rayon's workers (2 MiB stacks).
    let v = check_batch(&items, &Config::default());
    assert_eq!(v.len(), 3);
    assert!(v[0].passed() && !v[1].passed() && v[2].passed());
    assert_eq!(math(v[1].clone()).outcome, MathOutcome::TooComplex);
}

/// One piece of a generated operator chain or nesting.
fn piece() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        // prefix
        Just("-"),
        Just("+"),
        Just("\\pm"),
        Just("\\sqrt"),
        Just("\\sqrt{"),
        Just("\\sqrt["),
        Just("\\frac"),
        Just("\\frac{"),
        Just("\\dfrac12"),
        Just("\\binom{"),
        Just("\\sin"),
        Just("\\ln("),
        Just("\\log_"),
        Just("\\log_{"),
        Just("\\sin^"),
        Just("\\left("),
        Just("\\text{"),
        Just("\\textbf{"),
        Just("\\boxed{"),
        Just("\\{"),
        Just("|"),
        // postfix and infix
        Just("!"),
        Just("%"),
        Just("\\%"),
        Just("^"),
        Just("^{"),
        Just("_"),
        Just("_{"),
        Just("^\\circ"),
        Just("\\cdot"),
        Just("/"),
        Just("="),
        Just(","),
        Just("\\cup"),
        // brackets
        Just("("),
        Just(")"),
        Just("["),
        Just("]"),
        Just("{"),
        Just("}"),
        Just("\\}"),
        Just("\\right)"),
        Just("\\begin{pmatrix}"),
        Just("\\end{pmatrix}"),
        Just("&"),
        // operands
        Just("2"),
        Just("x"),
        Just("\\pi"),
        Just("10"),
        Just("0.5"),
    ]
}

/// How many times an operator or bracket is repeated: short, around the bound, far past it.
fn reps() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..60, 60usize..600, 600usize..3_000]
}

fn operand() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("2"), Just("x"), Just("\\pi"), Just("10"), Just("0.5"), Just("1"), Just("")]
}

/// Operators that wrap what precedes them.
fn postfix_op() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("!"), Just("%"), Just("\\%"), Just("^\\circ"), Just("'"), Just("^2")]
}

/// Operators that wrap what follows them.
fn prefix_op() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("-"),
        Just("+"),
        Just("\\pm"),
        Just("\\sqrt"),
        Just("\\sin"),
        Just("\\sin "),
        Just("\\sin^2 "),
        Just("\\log_2 "),
        Just("\\ln "),
        Just("\\frac1"),
        Just("\\binom1"),
        Just("2^"),
        Just("2^-"),
        Just("x_"),
        Just("\\left|"),
    ]
}

/// Operators between operands.
fn infix_op() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("^"),
        Just("^-"),
        Just("_"),
        Just("\\cdot"),
        Just("/"),
        Just("="),
        Just(","),
        Just("\\cup"),
        Just("+"),
        Just("-"),
        Just(""),
    ]
}

/// Brackets and commands that enclose an answer: (opening, closing).
fn enclosure() -> impl Strategy<Value = (&'static str, &'static str)> {
    prop_oneof![
        Just(("(", ")")),
        Just(("{", "}")),
        Just(("[", "]")),
        Just(("\\left(", "\\right)")),
        Just(("\\frac{1}{", "}")),
        Just(("\\frac{", "}{2}")),
        Just(("\\sqrt{", "}")),
        Just(("\\sqrt[", "]{2}")),
        Just(("\\binom{", "}{1}")),
        Just(("\\{", "\\}")),
        Just(("|", "|")),
        Just(("\\sin(", ")")),
        Just(("\\ln{", "}")),
        Just(("2^{", "}")),
        Just(("x_{", "}")),
        Just(("1_{", "}")),
        Just(("\\text{", "}")),
        Just(("\\textbf{", "}")),
        Just(("\\boxed{", "}")),
        Just(("(1,", ")")),
        Just(("[0,", ")")),
        Just(("\\begin{pmatrix}", "\\end{pmatrix}")),
        Just(("2(", ")")),
        Just(("\\operatorname{", "}")),
    ]
}

/// One segment without nesting: a postfix chain, a prefix chain, an infix chain, or soup.
fn flat_segment() -> impl Strategy<Value = String> {
    prop_oneof![
        (operand(), proptest::collection::vec(postfix_op(), 1..4), reps()).prop_map(|(o, ops, n)| {
            let mut s = o.to_string();
            (0..n).for_each(|k| s.push_str(ops[k % ops.len()]));
            s
        }),
        (proptest::collection::vec(prefix_op(), 1..4), reps(), operand()).prop_map(|(ops, n, o)| {
            let mut s = String::new();
            (0..n).for_each(|k| s.push_str(ops[k % ops.len()]));
            s + o
        }),
        (operand(), infix_op(), reps()).prop_map(|(o, op, n)| {
            let o = if o.is_empty() { "2" } else { o };
            vec![o; n + 1].join(op)
        }),
        proptest::collection::vec(piece(), 0..200).prop_map(|v| v.concat()),
    ]
}

/// A segment, possibly enclosed many times over (`((..(3!!!)..))`).
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        flat_segment(),
        (enclosure(), reps(), flat_segment()).prop_map(|((open, close), n, inner)| format!(
            "{}{inner}{}",
            open.repeat(n),
            close.repeat(n)
        )),
    ]
}

/// A generated answer: up to three segments, side by side or each inside the next.
fn chain() -> impl Strategy<Value = String> {
    (proptest::collection::vec(segment(), 1..4), any::<bool>(), enclosure()).prop_map(
        |(segs, nested, (open, close))| {
            if nested {
                segs.iter().fold(String::new(), |acc, s| format!("{s}{open}{acc}{close}"))
            } else {
                segs.concat()
            }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn generated_chains_and_nestings_never_crash(
        a in chain(),
        b in chain(),
        mix in proptest::collection::vec(piece(), 0..3_000),
    ) {
        let mixed: String = mix.concat();
        on_small_stack(move || {
            let cfg = Config::default();
            for s in [&a, &b, &mixed] {
                for (gold, completion) in [
                    ("2".to_string(), format!("so \\boxed{{{s}}}")),
                    ("2".to_string(), s.to_string()),
                    (s.to_string(), "\\boxed{2}".to_string()),
                    (s.to_string(), format!("The answer is ${s}$.")),
                ] {
                    let v = check(&gold, &completion, &cfg);
                    assert!((0.0..=1.0).contains(&v.reward()));
                }
                let _ = equivalent(s, s, &cfg);
            }
            let _ = equivalent(&a, &b, &cfg);
        });
    }
}
