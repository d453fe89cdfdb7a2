//! Hedged and malformed answers (issue 33): a value that is negated, bounded, approximated or
//! retracted by the words around it is not an answer, and bare numbers side by side are neither
//! one number nor a product. Each class through `check`, through the `mentor verify math` JSONL
//! contract, and as properties over generated qualifiers and digit groupings.

use mentor_core::{Feedback, MathFeedback, MathOutcome};
use mentor_verify_math::{check, check_feedback, check_with_question, cli, Config};

/// A question about apples: its nouns may name what an answer counts ("3 apples").
const APPLES: &str = "Sam has some apples and then buys more. How many apples does Sam have now?";
use proptest::prelude::*;
use serde_json::Value;

fn fb(gold: &str, completion: &str) -> MathFeedback {
    check_feedback(gold, completion, &Config::default())
}

/// The issue's repros, one per route, with the outcome and a word of the reason.
const REFUSED: &[(&str, &str, MathOutcome, &str)] = &[
    ("3", r"\boxed{\text{not } 3}", MathOutcome::NoAnswer, "'not'"),
    ("3", "The answer is not 3", MathOutcome::NoAnswer, "'not'"),
    ("3", r"\boxed{3 \text{ or more}}", MathOutcome::NoAnswer, "'or more'"),
    ("3", r"\boxed{\text{at least } 3}", MathOutcome::NoAnswer, "a bound is not a value"),
    ("3", r"\boxed{3 \text{ is wrong}}", MathOutcome::NoAnswer, "'wrong'"),
    ("5", "#### about 5", MathOutcome::NoAnswer, "an approximation is not a value"),
    ("3", r"so it is at most $\boxed{3}$.", MathOutcome::NoAnswer, "'at most'"),
    ("3", r"$x \geq \boxed{3}$", MathOutcome::NoAnswer, "'≥'"),
    ("3", r"\boxed{\neq 3}", MathOutcome::NoAnswer, "negated by '≠'"),
    ("3", r"\boxed{3}\text{ or less}", MathOutcome::NoAnswer, "'or less'"),
    ("3", r"$\boxed{3}$ isn't right", MathOutcome::NoAnswer, "'isn't'"),
    ("3", r"2 or $\boxed{3}$", MathOutcome::MultipleAnswers, "alternative"),
    ("B", "The answer is not (B).", MathOutcome::NoAnswer, "'not'"),
    ("6", r"\boxed{2 3}", MathOutcome::NoAnswer, "side by side"),
    ("12", "The answer is 3 4", MathOutcome::NoAnswer, "side by side"),
    ("5", r"\boxed{5\,1}", MathOutcome::NoAnswer, "thousands groups"),
    ("1000", r"\boxed{1\,000\,1}", MathOutcome::NoAnswer, "`1000` and `1`"),
    ("1000", "#### 1 000 1", MathOutcome::NoAnswer, "side by side"),
    ("4", "3 4", MathOutcome::NoAnswer, "side by side"),
    ("12", r"\boxed{3 \text{ apples } 4}", MathOutcome::NoAnswer, "side by side"),
];

/// Units, plain words, ordinary phrasings, thousands groups and implicit multiplication that
/// must keep working (judged with [`APPLES`] as the question: a counted noun is a word of the
/// question, see `tests/it/reading.rs`).
const ACCEPTED: &[(&str, &str)] = &[
    ("3", r"\boxed{3 \text{ cm}}"),
    ("3", r"\boxed{3\text{ dollars}}"),
    ("3", r"\boxed{\text{3 apples}}"),
    ("3", "The answer is 3 apples"),
    ("3", "The answer is 3."),
    ("3", "so there are 3 left, no more questions"),
    ("3", r"There are no more cases, so the answer is $\boxed{3}$."),
    ("3", r"Not 4, but $\boxed{3}$."),
    ("3", r"The number left over is $\boxed{3}$."),
    ("10", r"In total it adds up to $\boxed{10}$."),
    ("4", r"The answer is $\boxed{4}$, not 5."),
    ("12", r"so $\boxed{12}$ points of intersection are possible"),
    ("32348", r"$24000 \cdot 1.01^{30} \approx \boxed{32348}$, to the nearest dollar."),
    ("x \\geq 3", r"\boxed{x \geq 3}"),
    ("\\text{at least } 3", r"\boxed{\text{at least } 3}"),
    ("\\text{no solution}", r"\boxed{\text{no solution}}"),
    ("B", "The answer is (B)."),
    ("1000000", r"\boxed{1 000 000}"),
    ("1000", r"\boxed{1\,000}"),
    ("1000", r"\boxed{1{,}000}"),
    ("1000", r"\boxed{1~000}"),
    ("1000", r"\boxed{1\ 000}"),
    ("1000", "\\boxed{1\u{2009}000}"),
    ("12345.5", r"\boxed{12\,345.5}"),
    ("2x", r"\boxed{2x}"),
    ("2\\pi", r"\boxed{2\pi}"),
    ("3\\sqrt{2}", r"\boxed{3\sqrt{2}}"),
    ("6", r"\boxed{2(3)}"),
    ("\\frac{\\sqrt{3}}{2}", r"\boxed{\frac{1}{2}\sqrt{3}}"),
    ("18", "We need 3 boxes of 6, so 18."),
];

#[test]
fn hedged_and_malformed_answers_are_refused_with_the_reason() {
    for (gold, completion, outcome, why) in REFUSED {
        let f = fb(gold, completion);
        assert_eq!(f.outcome, *outcome, "{completion}: {f:?}");
        let detail = f.detail.as_deref().unwrap_or("");
        assert!(detail.contains(why), "{completion}: {detail:?} lacks {why:?}");
    }
}

#[test]
fn units_plain_words_groupings_and_products_still_pass() {
    for (gold, completion) in ACCEPTED {
        let v = check_with_question(gold, completion, Some(APPLES), &Config::default());
        assert!(v.passed(), "{completion} vs {gold}: {:?}", v.feedback());
    }
}

#[test]
fn the_jsonl_contract_reports_each_class() {
    let input: String = REFUSED
        .iter()
        .chain(&[
            ("3", r"\boxed{3 \text{ cm}}", MathOutcome::Correct, ""),
            ("1000", "#### 1 000", MathOutcome::Correct, ""),
        ])
        .enumerate()
        .map(|(k, (g, c, _, _))| format!("{}\n", serde_json::json!({"id": k, "gold": g, "completion": c})))
        .collect();
    let mut out = Vec::new();
    let s = cli::run_jsonl(input.as_bytes(), &mut out, std::io::sink(), &Config::default()).expect("runs");
    let lines: Vec<Value> = String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), REFUSED.len() + 2);
    for (line, (_, completion, outcome, why)) in lines.iter().zip(REFUSED) {
        let want = serde_json::to_value(outcome).expect("outcome");
        assert_eq!(line["correct"], false, "{completion}: {line}");
        assert_eq!(line["feedback"]["outcome"], want, "{completion}: {line}");
        assert!(line["feedback"]["detail"].as_str().unwrap_or("").contains(why), "{completion}: {line}");
    }
    assert_eq!(lines[REFUSED.len()]["correct"], true);
    assert_eq!(lines[REFUSED.len() + 1]["correct"], true);
    assert_eq!((s.checked, s.correct), (REFUSED.len() + 2, 2));
}

/// Qualifiers that qualify the value they precede, in words or symbols.
const BEFORE_WORDS: &[&str] = &[
    "not",
    "no",
    "at least",
    "at most",
    "more than",
    "less than",
    "fewer than",
    "greater than",
    "about",
    "approximately",
    "approx.",
    "around",
    "roughly",
    "nearly",
    "almost",
    "over",
    "under",
    "up to",
    "close to",
    "not equal to",
    "isn't",
    "cannot be",
    "never",
    "incorrect",
];
const BEFORE_SYMBOLS: &[&str] =
    &[r"\neq", r"\ne", "≠", r"\geq", r"\leq", r"\ge", r"\le", ">", "<", "≥", "≤", r"\approx", "≈", r"\sim"];
/// Qualifiers that qualify the value they follow.
const AFTER_WORDS: &[&str] = &[
    "or more",
    "or less",
    "or fewer",
    "or greater",
    "or so",
    "at least",
    "at most",
    "is wrong",
    "is incorrect",
    "is not right",
    "isn't correct",
    "approximately",
    "and above",
    "or higher",
];

fn capitalised(s: &str, cap: bool) -> String {
    let mut c = s.chars();
    match (cap, c.next()) {
        (true, Some(f)) => f.to_uppercase().chain(c).collect(),
        _ => s.to_string(),
    }
}

/// A completion stating `n` with qualifier `q` placed by `form`; `q = None` gives the same
/// completion with a neutral word instead (the control, which must pass).
fn qualified(n: u32, q: Option<&str>, before: bool, symbol: bool, form: usize) -> String {
    let w = q.unwrap_or(if before { "then" } else { "apples" });
    let sym = q.unwrap_or("");
    match (before, symbol, form % 4) {
        (true, false, 0) => format!(r"\boxed{{\text{{{w} }}{n}}}"),
        (true, false, 1) => format!("The answer is {w} {n}."),
        (true, false, 2) => format!(r"so it is {w} $\boxed{{{n}}}$."),
        (true, false, _) => format!("Thus:\n#### {w} {n}"),
        (true, true, 0) => format!(r"\boxed{{{sym} {n}}}"),
        (true, true, 1) => format!("The answer is {sym} {n}."),
        (true, true, 2) => format!(r"so it is $ {sym} \boxed{{{n}}}$."),
        (true, true, _) => format!("Thus:\n#### {sym} {n}"),
        (false, _, 0) => format!(r"\boxed{{{n} \text{{ {w}}}}}"),
        (false, _, 1) => format!("The answer is {n} {w}."),
        (false, _, 2) => format!(r"so it is $\boxed{{{n}}}$ {w}."),
        (false, _, _) => format!("Thus:\n#### {n} {w}"),
    }
}

/// `digits` split into groups of the given sizes (the last takes the rest; a zero or a size
/// past the end stops the cutting), joined by `seps[k]`; and whether that is a valid thousands
/// grouping.
fn grouped(digits: &str, cuts: &[usize], seps: &[&str]) -> (String, bool) {
    let mut groups: Vec<&str> = Vec::new();
    let mut rest = digits;
    for &c in cuts {
        if c == 0 || c >= rest.len() {
            break;
        }
        let (a, b) = rest.split_at(c);
        groups.push(a);
        rest = b;
    }
    groups.push(rest);
    // One group is a plain number; several must be thousands groups.
    let valid =
        groups.len() == 1 || ((1..=3).contains(&groups[0].len()) && groups[1..].iter().all(|g| g.len() == 3));
    let mut s = groups[0].to_string();
    for (k, g) in groups[1..].iter().enumerate() {
        s.push_str(seps[k % seps.len()]);
        s.push_str(g);
    }
    (s, valid)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn qualified_correct_answers_are_never_correct(
        n in 1u32..100_000,
        pick in any::<prop::sample::Index>(),
        kind in 0usize..3,
        form in 0usize..4,
        cap in any::<bool>(),
    ) {
        let cfg = Config::default();
        let gold = n.to_string();
        let (list, before, symbol) = match kind {
            0 => (BEFORE_WORDS, true, false),
            1 => (BEFORE_SYMBOLS, true, true),
            _ => (AFTER_WORDS, false, false),
        };
        let q = capitalised(list[pick.index(list.len())], cap && !symbol);
        let control = qualified(n, None, before, symbol, form);
        let v = check_with_question(&gold, &control, Some(APPLES), &cfg);
        prop_assert!(v.passed(), "control {control:?}: {:?}", v.feedback());
        let hedged = qualified(n, Some(&q), before, symbol, form);
        let v = check_with_question(&gold, &hedged, Some(APPLES), &cfg);
        prop_assert!(!v.passed(), "{hedged:?} judged correct: {:?}", v.feedback());
        // The reason is checked by the table test; some forms are cut by extraction first
        // ("The answer is approx. 3." ends at `approx.`), which is not correct either.
        let Feedback::Math(f) = v.feedback() else { unreachable!("math feedback") };
        prop_assert!(f.outcome != MathOutcome::Correct, "{hedged:?}: {f:?}");
    }

    #[test]
    fn digit_groupings_are_correct_exactly_when_thousands_groups(
        n in 1u64..10_000_000_000,
        cuts in proptest::collection::vec(0usize..5, 0..5),
        seps in proptest::collection::vec(
            prop_oneof![Just(" "), Just(r"\,"), Just("{,}"), Just("~"), Just(r"\ "), Just("\u{2009}"),
                Just("\u{202f}"), Just(",")],
            1..3,
        ),
        wrap in 0usize..5,
    ) {
        let digits = n.to_string();
        let (shown, valid) = grouped(&digits, &cuts, &seps);
        let completion = match wrap {
            0 => format!(r"\boxed{{{shown}}}"),
            1 => format!("#### {shown}"),
            2 => format!("The answer is {shown}."),
            3 => format!("so we get ${shown}$"),
            _ => shown.clone(),
        };
        let v = check(&digits, &completion, &Config::default());
        prop_assert_eq!(v.passed(), valid, "{:?} for {}: {:?}", completion, digits, v.feedback());
    }
}
