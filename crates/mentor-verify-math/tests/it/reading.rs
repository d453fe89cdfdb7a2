//! The whole answer region is read (issue 56): every word of it is a number, an expression, a
//! known unit, a neutral phrase or a word of the question; characters touching a box are part
//! of it; multiplier words change the value; equations are checked; a second, different answer
//! after the final one is `multiple_answers`; expressions are compared at points of both signs.
//! The issue's repros per class, the forms that must keep passing, and properties: random new
//! words in the region are never paid, and sign-flipped expressions are wrong.

use mentor_core::{MathFeedback, MathOutcome, Task, Verifier};
use mentor_verify_math::{
    check_feedback_with_question, check_with_question, equivalent, Config, MathVerifier,
};
use proptest::prelude::*;

fn fb(gold: &str, completion: &str, question: Option<&str>) -> MathFeedback {
    check_feedback_with_question(gold, completion, question, &Config::default())
}

const PENCILS: &str = "Mia has 12 pencils and buys 30 more pencils. How many pencils does Mia have now?";
const DOLLARS: &str = "Janet sells eggs for $2 each. How much in dollars does she make every day?";

/// The issue's repros: (gold, completion, question), each not correct, with the outcome.
const REFUSED: &[(&str, &str, Option<&str>, MathOutcome)] = &[
    // Value-changing text.
    ("3", r"\boxed{3 \text{ thousand}}", None, MathOutcome::WrongValue),
    ("3", r"\boxed{3 \text{ hundred}}", None, MathOutcome::WrongValue),
    ("3", r"\boxed{3 \text{ million}}", None, MathOutcome::WrongValue),
    ("3", r"\boxed{3 \text{ dozen}}", None, MathOutcome::WrongValue),
    ("3", r"\boxed{3 \text{ and a half}}", None, MathOutcome::WrongValue),
    ("3", "The answer is 3 thousand.", None, MathOutcome::WrongValue),
    ("3", r"\boxed{3}000", None, MathOutcome::NoAnswer),
    ("3", r"\boxed{3},000", None, MathOutcome::NoAnswer),
    ("3", r"\boxed{3}.5", None, MathOutcome::NoAnswer),
    ("3", r"\boxed{3}^2", None, MathOutcome::NoAnswer),
    ("3", r"-\boxed{3}", None, MathOutcome::NoAnswer),
    ("3", r"1\boxed{3}", None, MathOutcome::NoAnswer),
    ("3", r"\boxed{3}k", None, MathOutcome::NoAnswer),
    ("3", r"$2 \cdot \boxed{3}$", None, MathOutcome::NoAnswer),
    ("0.25", r"\boxed{0.25\%}", Some("What fraction of the cake is left?"), MathOutcome::WrongValue),
    // False statements.
    ("3", r"\boxed{4 = 3}", None, MathOutcome::WrongValue),
    ("3", r"\boxed{2+2 = 3}", None, MathOutcome::WrongValue),
    // Hedges no word list holds.
    ("3", r"\boxed{\text{anything but } 3}", None, MathOutcome::NoAnswer),
    ("3", r"\boxed{\text{nicht } 3}", None, MathOutcome::NoAnswer),
    ("3", "The answer is above 3.", None, MathOutcome::NoAnswer),
    ("3", "The answer is within 3.", None, MathOutcome::NoAnswer),
    ("3", r"\boxed{3 \text{ max}}", None, MathOutcome::NoAnswer),
    ("3", "The answer is 3, nope.", None, MathOutcome::NoAnswer),
    ("3", "The answer is probably 3.", None, MathOutcome::NoAnswer),
    ("3", "I think the answer is 3.", None, MathOutcome::NoAnswer),
    ("3", "The answer is 3, I think.", None, MathOutcome::NoAnswer),
    ("3", r"\boxed{3?}", None, MathOutcome::NoAnswer),
    ("3", "The answer is 3?", None, MathOutcome::NoAnswer),
    ("3", r"\boxed{~3}", None, MathOutcome::NoAnswer),
    ("3", "#### ~3", None, MathOutcome::NoAnswer),
    // Retractions and conflicting answers.
    ("3", "The answer is 3. Wait, no, it's 4.", None, MathOutcome::MultipleAnswers),
    ("3", "So \\boxed{3}.\n\nFinal Answer: 4", None, MathOutcome::MultipleAnswers),
    ("3", "Perhaps 4. Perhaps 3.", None, MathOutcome::NoAnswer),
    ("B", "(A) or (B)", None, MathOutcome::MultipleAnswers),
    // Prose lists are read whole.
    ("3", "The answer is 3, 5, 7", None, MathOutcome::MultipleAnswers),
];

/// Forms that must pass: (gold, completion, question).
const ACCEPTED: &[(&str, &str, Option<&str>)] = &[
    // Plain-number answers with nouns of the question (the arith rescue preset's forms).
    ("42", "Mia has 42 pencils.", Some(PENCILS)),
    ("42", "The answer is 42 pencils", Some(PENCILS)),
    ("42", "The answer is 42 pencils.", Some(PENCILS)),
    ("42", "#### 42", Some(PENCILS)),
    ("42", "The answer is 42.", Some(PENCILS)),
    ("42", "42", Some(PENCILS)),
    ("18", "She makes $18 every day.\n#### 18", Some(DOLLARS)),
    ("18", "18 dollars", Some(DOLLARS)),
    ("18", "The answer is $18.", Some(DOLLARS)),
    ("18", r"She makes $\boxed{18}$ dollars every day.", Some(DOLLARS)),
    // Multipliers read as values.
    ("3000", r"\boxed{3 \text{ thousand}}", None),
    ("3000", "The answer is 3 thousand.", None),
    ("36", r"\boxed{3 \text{ dozen}}", None),
    ("3.5", r"\boxed{3 \text{ and a half}}", None),
    ("3.5", "The answer is 3 and a half.", None),
    // Single-letter units where the gold has no variable.
    ("1000", r"\boxed{1000 \text{ m}}", None),
    ("5", r"\boxed{5 \text{ s}}", None),
    ("5", "5 s", None),
    // True equations, lists read whole, percentages asked for, degrees, bullets.
    ("4", r"\boxed{2+2 = 4}", None),
    ("3, 5, 7", "The answer is 3, 5, 7", None),
    ("3, 5, 7", "The answer is 3, 5, and 7.", None),
    ("25", r"\boxed{25\%}", Some("What percent of the class are girls?")),
    ("10", r"so $r = \boxed{10}\%$.", Some("Find the interest rate in percent.")),
    ("90", r"\boxed{90}^\circ", None),
    ("3", "- \\boxed{3}", None),
    ("42", "The answer is 42, which is 6 times 7.", None),
    ("3", "The answer is 3.\n\nI hope it is correct.", None),
    ("3", r"\boxed{3}. Final Answer: 3", None),
];

#[test]
fn the_issue_repros_are_not_paid() {
    for (gold, completion, question, outcome) in REFUSED {
        let f = fb(gold, completion, *question);
        assert_eq!(f.outcome, *outcome, "{completion} (gold {gold}): {f:?}");
    }
}

#[test]
fn ordinary_forms_still_pass() {
    for (gold, completion, question) in ACCEPTED {
        let f = fb(gold, completion, *question);
        assert_eq!(f.outcome, MathOutcome::Correct, "{completion} (gold {gold}): {f:?}");
    }
}

/// The arith rescue preset's task shape (`mentor-trainer`'s `arith::problem`) and the demo's
/// addition answers (`A:<sum>` after the column lines), through the `Verifier` with the question.
#[test]
fn the_arith_and_demo_forms_keep_their_verdicts() {
    let v = MathVerifier::default();
    let q = "Mia has 6 boxes of pencils with 7 pencils in each. Then she gets 5 more pencils. How many \
             pencils does Mia have now?";
    let t = Task::math("arith/0/2/0", q, "47");
    let solution = "Mia has 6 * 7 = <<6*7=42>>42 pencils.\nAfter getting 5 more, she has 42 + 5 = <<42+5=47>>47 pencils.";
    for (c, want) in [
        (solution, true),
        ("Mia has 47 pencils.", true),
        ("The answer is 47 pencils", true),
        ("The answer is 47.", true),
        ("#### 47", true),
        ("47", true),
        (r"So the answer is \boxed{47}.", true),
        ("Mia has 48 pencils.", false),
        ("The answer is 42 pencils", false),
        ("#### 46", false),
    ] {
        let got = v.verify(&t, c).map(|x| x.passed());
        assert_eq!(got.ok(), Some(want), "{c}");
    }
    let t = Task::math("add/0", "4573+6821=", "11394");
    for (c, want) in [
        ("3+1+0=4\n7+2+0=9\n5+8+0=13\n4+6+1=11\nA:11394", true),
        ("3+1+0=4\n7+2+0=9\nA:94", false),
        ("3+1+0=4\nA:11395", false),
    ] {
        let got = v.verify(&t, c).map(|x| x.passed());
        assert_eq!(got.ok(), Some(want), "{c}");
    }
}

#[test]
fn without_the_question_a_counted_noun_is_unread() {
    let f = fb("42", "The answer is 42 pencils.", None);
    assert_eq!(f.outcome, MathOutcome::NoAnswer, "{f:?}");
    assert!(f.detail.as_deref().is_some_and(|d| d.contains("`pencils`")), "{f:?}");
}

#[test]
fn sign_and_absolute_value_errors_are_caught() {
    let cfg = Config::default();
    for (a, b) in [
        ("|b-a|", "a-b"),
        ("|x|", "x"),
        (r"\sqrt{x^2}", "x"),
        ("-|x|", "-x"),
        ("|x-3|", "x-3"),
        ("(a-b)^2/(a-b)", "b-a"),
    ] {
        assert!(!equivalent(a, b, &cfg), "{a} = {b}");
    }
    // Identities that hold where both sides are real stay equal (no new false negatives).
    for (a, b) in [
        (r"\log(x^2)", r"2\log x"),
        (r"\sqrt{x}\sqrt{y}", r"\sqrt{xy}"),
        (r"\sqrt{x^2}", "|x|"),
        (r"\ln(xy)", r"\ln x + \ln y"),
        (r"\frac{x^2-1}{x-1}", "x+1"),
        (r"\sqrt{x-100}", r"(x-100)^{1/2}"),
    ] {
        assert!(equivalent(a, b, &cfg), "{a} != {b}");
    }
}

/// A word that is in no list of the checker: a consonant cluster no English word starts with,
/// then syllables.
fn new_word() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["zv", "qf", "xk", "vz", "jq", "kz"]),
        proptest::collection::vec(
            (
                prop::sample::select(vec!["b", "d", "l", "m", "r", "t"]),
                prop::sample::select(vec!["a", "e", "o", "u"]),
            ),
            1..4,
        ),
    )
        .prop_map(|(head, syl)| {
            format!("{head}{}", syl.into_iter().map(|(c, v)| format!("{c}{v}")).collect::<String>())
        })
}

/// `n` stated with `w` in its region, by `form`.
fn with_word(n: u32, w: &str, form: usize) -> String {
    match form % 12 {
        0 => format!(r"\boxed{{{n} \text{{ {w}}}}}"),
        1 => format!(r"\boxed{{\text{{{w} }}{n}}}"),
        2 => format!("The answer is {w} {n}."),
        3 => format!("The answer is {n} {w}."),
        4 => format!("#### {n} {w}"),
        5 => format!("#### {w} {n}"),
        6 => format!("{w} the answer is {n}."),
        7 => format!("The answer is {n}, {w}."),
        8 => format!("We add them up. {w} {n}."),
        9 => format!(r"\boxed{{{n}}}\text{{ {w}}}"),
        10 => format!("The final answer is ${n}$ {w}."),
        _ => format!("{n} {w}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// A newly written word in the answer region (in no list) is never paid; the same word in
    /// the question names what is counted and is read.
    #[test]
    fn unread_words_in_the_region_are_never_correct(n in 1u32..100_000, w in new_word(), form in 0usize..12, cap in any::<bool>()) {
        let w = if cap { let mut c = w.chars(); c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or(w) } else { w };
        let cfg = Config::default();
        let gold = n.to_string();
        let completion = with_word(n, &w, form);
        for question in [None, Some("How many are there in all?")] {
            let v = check_with_question(&gold, &completion, question, &cfg);
            prop_assert!(!v.passed(), "{completion:?} judged correct: {:?}", v.feedback());
        }
        let question = format!("How many {w} are there in all?");
        let v = check_with_question(&gold, &completion, Some(&question), &cfg);
        if form % 12 != 8 {
            prop_assert!(v.passed(), "{completion:?} with its word in the question: {:?}", v.feedback());
        }
    }

    /// `-(e)` is never equivalent to `e` unless `e` is zero, and an absolute value or the root
    /// of a square is never equivalent to the signed expression.
    #[test]
    fn sign_flipped_expressions_are_wrong(a in -20i32..20, b in 1i32..9, c in -9i32..9, two in any::<bool>()) {
        let cfg = Config::default();
        let e = if two { format!("{b}x - {c}y + {a}") } else { format!("{b}x^2 + {c}x + {a}") };
        prop_assert!(!equivalent(&e, &format!("-({e})"), &cfg), "{e}");
        prop_assert!(!check_with_question(&e, &format!(r"\boxed{{-({e})}}"), None, &cfg).passed(), "{e}");
        let lin = format!("{b}x + {a}");
        prop_assert!(!equivalent(&format!("|{lin}|"), &lin, &cfg), "|{lin}|");
        prop_assert!(!equivalent(&format!(r"\sqrt{{({lin})^2}}"), &lin, &cfg), "sqrt(({lin})^2)");
        prop_assert!(!equivalent(&format!("-|{lin}|"), &format!("-({lin})"), &cfg), "-|{lin}|");
        prop_assert!(equivalent(&format!(r"\sqrt{{({lin})^2}}"), &format!("|{lin}|"), &cfg), "sqrt = abs");
    }
}
