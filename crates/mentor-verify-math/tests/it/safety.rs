//! Resource bounds: hostile inputs come back as verdicts (usually `TooComplex`), never as a
//! panic, a stack overflow or a hang. No timing is asserted; the test finishing is the check.

use mentor_core::{Feedback, MathFeedback, MathOutcome};
use mentor_verify_math::{check, check_batch, check_feedback, equivalent, extract, Config};

fn outcome(gold: &str, completion: &str) -> MathOutcome {
    check_feedback(gold, completion, &Config::default()).outcome
}

fn fb(gold: &str, completion: &str) -> MathFeedback {
    match check(gold, completion, &Config::default()).into_feedback() {
        Feedback::Math(m) => m,
        other => panic!("math feedback expected, got {other:?}"),
    }
}

#[test]
fn towers_of_powers_are_refused() {
    for bomb in ["10^{10^{10}}", "9^{9^{9^{9}}}", "2^{2^{2^{2^{2^{2}}}}}", "(10^{10^{10}})!", "100000!"] {
        let f = fb("5", &format!("\\boxed{{{bomb}}}"));
        assert_eq!(f.outcome, MathOutcome::TooComplex, "{bomb}: {f:?}");
        assert!(f.detail.is_some(), "a refusal says why: {f:?}");
    }
    // ... but an identical huge gold and prediction still compare equal structurally.
    assert_eq!(outcome("10^{10^{10}}", "\\boxed{10^{10^{10}}}"), MathOutcome::Correct);
}

#[test]
fn deep_nesting_is_refused_without_stack_overflow() {
    let braces = format!("\\boxed{{{}1{}}}", "{".repeat(10_000), "}".repeat(10_000));
    assert_eq!(outcome("1", &braces), MathOutcome::TooComplex);
    let parens = format!("${}1{}$", "(".repeat(2_000), ")".repeat(2_000));
    assert_eq!(outcome("1", &parens), MathOutcome::TooComplex);
    let fracs = format!("\\boxed{{{}1{}}}", "\\frac{1}{".repeat(400), "}".repeat(400));
    assert_eq!(outcome("1", &fracs), MathOutcome::TooComplex);
    let minus = format!("\\boxed{{{}1}}", "-".repeat(3_000));
    assert_eq!(outcome("1", &minus), MathOutcome::TooComplex);
    let unclosed = "\\boxed{".repeat(100_000);
    assert_eq!(outcome("1", &unclosed), MathOutcome::NoAnswer);
}

#[test]
fn megabyte_inputs_are_handled() {
    let cfg = Config::default();
    let mb = 1 << 20;
    let prose = "The cat sat on the mat and thought about numbers. ".repeat(mb / 50) + "The answer is 42.";
    assert_eq!(outcome("42", &prose), MathOutcome::Correct);
    for unit in [
        "\\(",
        "\\[",
        "$",
        "{",
        "}",
        "\\",
        "\\boxed{",
        "1,",
        "\\frac{",
        "((",
        "$1 $",
        "####",
        "#### a",
        "#### 1 abcd",
        "#",
        "$$\\$",
    ] {
        let s = unit.repeat(mb / unit.len());
        let _ = check("1", &s, &cfg);
        let _ = extract(&s, &cfg);
        let _ = equivalent("1", &s, &cfg);
    }
    let too_big = "1".repeat(cfg.max_completion_bytes + 1);
    assert_eq!(outcome("1", &too_big), MathOutcome::TooComplex);
    let long_answer = format!("\\boxed{{{}}}", "1+".repeat(5_000) + "1");
    assert_eq!(outcome("1", &long_answer), MathOutcome::TooComplex);
}

#[test]
fn long_lists_are_refused_not_matched_quadratically() {
    let list: Vec<String> = (0..1000).map(|k| k.to_string()).collect();
    let s = format!("\\boxed{{\\{{{}\\}}}}", list.join(","));
    let f = fb(&format!("\\{{{}\\}}", list.join(",")), &s);
    // Identical text compares equal without matching; a reordered one is refused.
    assert_eq!(f.outcome, MathOutcome::Correct);
    let mut rev = list.clone();
    rev.reverse();
    let f = fb(&format!("\\{{{}\\}}", list.join(",")), &format!("\\boxed{{\\{{{}\\}}}}", rev.join(",")));
    assert_eq!(f.outcome, MathOutcome::TooComplex);
}

#[test]
fn results_are_deterministic() {
    let cfg = Config::default();
    let a = check("x^3 - 3x^2 + 3x - 1", "\\boxed{(x-1)^3}", &cfg);
    for _ in 0..5 {
        assert_eq!(check("x^3 - 3x^2 + 3x - 1", "\\boxed{(x-1)^3}", &cfg), a);
    }
}

#[test]
fn batch_results_equal_one_by_one_results_in_order() {
    let text = std::fs::read_to_string(crate::data("cases.jsonl")).expect("case table present");
    let cases: Vec<(String, String)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("valid case line");
            (v["gold"].as_str().unwrap_or("").to_string(), v["completion"].as_str().unwrap_or("").to_string())
        })
        .collect();
    let pairs: Vec<(&str, &str)> = cases.iter().map(|(g, c)| (g.as_str(), c.as_str())).collect();
    let cfg = Config::default();
    let one_by_one: Vec<_> = pairs.iter().map(|(g, c)| check(g, c, &cfg)).collect();
    assert_eq!(check_batch(&pairs, &cfg), one_by_one);
}

#[test]
fn one_work_budget_bounds_a_whole_comparison() {
    // Nested sets matched without order multiply their pairings, and each evaluation at each
    // sample point costs: 12 reordered sets of 100 items took 34 s before the comparison had
    // one budget for all of its parts; now refused in well under a second.
    let inner = |k: usize, rev: bool| {
        let mut v: Vec<String> = (0..100).map(|i| (i + k).to_string()).collect();
        if rev {
            v.reverse();
        }
        format!("\\{{{}\\}}", v.join(","))
    };
    let set = |rev: bool| {
        let mut ks: Vec<usize> = (0..12).collect();
        if rev {
            ks.reverse();
        }
        format!("\\{{{}\\}}", ks.iter().map(|k| inner(*k, rev)).collect::<Vec<_>>().join(","))
    };
    let f = fb(&set(false), &format!("\\boxed{{{}}}", set(true)));
    assert_eq!(f.outcome, MathOutcome::TooComplex, "{f:?}");
    assert!(f.detail.as_deref().is_some_and(|d| d.contains("units of work")), "{f:?}");
    // Factorials and binomials cost by their steps: hundreds of them are refused, not computed.
    let binoms = vec!["\\binom{99999}{2000}"; 200].join("+");
    assert_eq!(outcome("x", &format!("\\boxed{{x+{binoms}}}")), MathOutcome::TooComplex);
    let facts = vec!["1000!"; 680].join("+");
    assert_eq!(outcome("7", &format!("\\boxed{{{facts}}}")), MathOutcome::TooComplex);
    // Ordinary answers are far from the budget: 100 items in reverse order still match.
    let f = fb(&inner(0, false), &format!("\\boxed{{{}}}", inner(0, true)));
    assert_eq!(f.outcome, MathOutcome::Correct, "{f:?}");
    let f = fb(&inner(0, false), &format!("\\boxed{{{}}}", inner(1, true)));
    assert_eq!(f.outcome, MathOutcome::WrongValue, "{f:?}");
    assert_eq!(outcome("120", "\\boxed{5!}"), MathOutcome::Correct);
    assert_eq!(outcome("4950", "\\boxed{\\binom{100}{2}}"), MathOutcome::Correct);
}
