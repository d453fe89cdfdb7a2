//! The guard against the real math checker: no hint the guard lets through (accepted, or
//! redacted and shown) contains a span that `mentor_verify_math::equivalent` equates with the
//! gold answer, and the checker reading the shown hint as a completion does not pass it.
//! The converse is tested too: hints that do not contain the answer pass unchanged, so the
//! leak tests cannot be satisfied by a guard that rejects everything.
//!
//! The guard is built as the trainer builds it: [`Guard::new`] with the math checker's
//! [`MathEquivalence`] (`mentor_verify_math::equivalent` and its answer spans, default config).

use std::sync::{Arc, Mutex};

use mentor_agents::{Guard, GuardConfig, GuardOutcome};
use mentor_core::{AnswerEquivalence, Hint, HintLevel, HintSource, Task};
use mentor_verify_math::{Config, MathEquivalence};
use proptest::prelude::*;

fn guard() -> Guard {
    Guard::new(GuardConfig::default(), Arc::new(MathEquivalence::default()))
}

fn hint(text: &str, prefix: Option<&str>) -> Hint {
    Hint {
        level: HintLevel::PLAN,
        text: text.into(),
        solution_prefix: prefix.map(str::to_string),
        source: HintSource::Mentor,
    }
}

/// What the learner would see: the text and prefix of an accepted or redacted hint.
fn shown(outcome: &GuardOutcome) -> Option<Vec<String>> {
    match outcome {
        GuardOutcome::Accepted(h) | GuardOutcome::Redacted { hint: h, .. } => {
            Some([Some(h.text.clone()), h.solution_prefix.clone()].into_iter().flatten().collect())
        }
        GuardOutcome::Rejected(_) => None,
    }
}

/// Most lexemes / bytes in one candidate span of [`answer_like_spans`].
const MAX_LEXEMES: usize = 16;
const MAX_SPAN_BYTES: usize = 64;

/// Byte ranges of the lexemes of `text`: a number (digits, with `.` or `,` between digits:
/// `1,234.5`; or `.75`), a word (a run of alphabetic characters, any script), a LaTeX command
/// (`\frac`, or `\` and one other character: `\,` `\%` `\{`), a run of whitespace, or any
/// other single character (`$`, `(`, `=`, `−`, `√`, `…`).
fn lexemes(text: &str) -> Vec<(usize, usize, bool)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |k: usize| chars.get(k).map_or(text.len(), |c| c.0);
    let mut out = Vec::new();
    let mut k = 0;
    while k < chars.len() {
        let (start, c) = chars[k];
        let mut j = k + 1;
        let digit_at = |i: usize| chars.get(i).is_some_and(|c| c.1.is_ascii_digit());
        if c.is_ascii_digit() || (c == '.' && digit_at(k + 1)) {
            while j < chars.len()
                && (chars[j].1.is_ascii_digit()
                    || (matches!(chars[j].1, '.' | ',') && digit_at(j - 1) && digit_at(j + 1)))
            {
                j += 1;
            }
        } else if c.is_alphabetic() {
            while j < chars.len() && chars[j].1.is_alphabetic() {
                j += 1;
            }
        } else if c == '\\' && j < chars.len() {
            if chars[j].1.is_ascii_alphabetic() {
                while j < chars.len() && chars[j].1.is_ascii_alphabetic() {
                    j += 1;
                }
            } else {
                j += 1;
            }
        } else if c.is_whitespace() {
            while j < chars.len() && chars[j].1.is_whitespace() {
                j += 1;
            }
        }
        out.push((start, end_of(j), c.is_whitespace()));
        k = j;
    }
    out
}

/// Every answer-like span of `text`, found independently of the guard's own scan.
///
/// Scope: every run of 1 to [`MAX_LEXEMES`] consecutive [`lexemes`] (at most
/// [`MAX_SPAN_BYTES`] bytes) that starts and ends on a non-whitespace lexeme. So it sees
/// `0.75`, `1,234`, `- 12`, `3 / 4`, `\frac 34`, `1.234 \times 10^3`, `x=2, y=3`, `(B)`, the
/// `√2` in `x≈√2`, the `1234` in `Answer:1234`, and whole short sentences; it never cuts
/// inside a number or a word (`10.75` does not yield `.75`, `step` does not yield `p`). It does
/// not see answers longer than the bound, an answer split between text and solution prefix,
/// or number words (the checker's `equivalent` does not read them; the whole-text check in
/// [`leaks`] does).
fn answer_like_spans(text: &str) -> Vec<&str> {
    let lx = lexemes(text);
    let mut out = Vec::new();
    for i in 0..lx.len() {
        if lx[i].2 {
            continue;
        }
        for j in i..lx.len().min(i + MAX_LEXEMES) {
            if lx[j].1 - lx[i].0 > MAX_SPAN_BYTES {
                break;
            }
            if !lx[j].2 {
                out.push(&text[lx[i].0..lx[j].1]);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `gold` is a multiple-choice letter (`B`, `(B)`, `\text{(B)}`).
fn choice_gold(gold: &str) -> bool {
    let bare: String = gold.replace("\\text", "").chars().filter(char::is_ascii_alphanumeric).collect();
    bare.len() == 1 && bare.chars().all(|c| c.is_ascii_uppercase())
}

/// How `text` leaks `gold` according to the math checker: its spans that `equivalent` equates
/// with the gold, and whether `check` (reading `text` as a completion: boxed answer, answer
/// phrase, whole text, math span or last number, number words) passes it. The whole-text
/// check is skipped for choice letters, where `check` takes the last capital letter standing
/// alone anywhere in the text.
fn leaks(gold: &str, text: &str) -> Vec<String> {
    let cfg = Config::default();
    let mut out: Vec<String> = answer_like_spans(text)
        .into_iter()
        .filter(|s| mentor_verify_math::equivalent(gold, s, &cfg))
        .map(|s| format!("`{s}`"))
        .collect();
    if !choice_gold(gold) && mentor_verify_math::check(gold, text, &cfg).passed() {
        out.push("(the checker passes the whole text)".into());
    }
    out
}

/// Checks `text` (or `prefix`) for `gold` and fails with the leak if anything shown leaks.
fn assert_no_shown_leak(gold: &str, text: &str, prefix: Option<&str>) -> Result<(), String> {
    let out = guard().check(&Task::math("t", "q", gold), hint(text, prefix));
    for s in shown(&out).unwrap_or_default() {
        let l = leaks(gold, &s);
        if !l.is_empty() {
            return Err(format!(
                "gold {gold:?}: hint {text:?} / prefix {prefix:?} shown as {s:?}, leaking {l:?}"
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The oracle itself.

#[test]
fn the_span_oracle_sees_the_forms_it_claims() {
    let spans =
        answer_like_spans(r"Answer:1234. So x≈√2, x = - 12 or \frac 34 = 1.234 \times 10^3 in 10.75 (B)");
    for want in ["1234", "√2", "- 12", "-", r"\frac 34", r"1.234 \times 10^3", "10.75", "(B)", "B"] {
        assert!(spans.contains(&want), "{want} not in {spans:?}");
    }
    for never in [".75", "0.75", "23", "nswer", "Answer:1"] {
        assert!(!spans.contains(&never), "{never} in {spans:?}");
    }
    assert_eq!(leaks("0.75", "check the units"), Vec::<String>::new());
    assert!(leaks("0.75", "we get 3/4 here").contains(&"`3/4`".to_string()));
    assert!(!leaks("-3", "The answer is negative three.").is_empty(), "the whole-text check reads words");
}

// ---------------------------------------------------------------------------------------
// Deterministic table of tricky leaks.

/// Hints that state the gold in a form the checker accepts; none may be shown with it.
const TRICKY: &[(&str, &str)] = &[
    // Plain and glued to a label.
    ("1234", "The answer is 1234."),
    ("1234", "Answer:1234"),
    ("1234", "Answer:1,234"),
    ("1234", r"Answer:1{,}234"),
    ("1234", r"Answer:1\,234"),
    ("1234", "answer=1234"),
    ("1234", "**1234**"),
    ("1234", "`1234`"),
    ("1234", "so we get1234."),
    ("1234", "Check: x = 1 234 so recheck step 2."),
    ("1234", r"Check: x = 1.234 \times 10^3 so recheck step 2."),
    ("1234", "Answer:1.234e3"),
    ("1234", "Answer:12.34*100"),
    ("1234", "The total is $1,234 dollars."),
    ("1234", "The total is \\$1234, not 1200."),
    ("1234", "Recheck step 2.\nFinal answer: 1234"),
    ("1234", "x = 1234 so the rest follows; check step 2"),
    ("1,234", "you should reach 1234 at the end"),
    ("1000000", "Check: x = 1 000 000 so recheck step 2."),
    ("1000000", r"Answer:1\,000\,000"),
    ("1000000", "Answer:10^6"),
    ("1000000", "Answer:1e6"),
    // Fractions, decimals, percentages.
    ("0.75", r"Answer:\frac34"),
    ("0.75", "Check: x = 75 % so recheck step 2."),
    ("0.75", "Check: x = 3 / 4 so recheck step 2."),
    ("0.75", "Answer:3÷4"),
    ("0.75", "Answer:3:4"),
    ("0.75", "Answer:1-1/4"),
    ("0.75", "Check: x = 1 - 0.25 so recheck step 2."),
    ("0.75", "Answer:0.5+0.25"),
    ("0.75", r"Check: x = 7.5 \times 10^{-1} so recheck step 2."),
    ("0.75", "Answer:7.5e-1"),
    ("0.75", r"the probability is $\frac{3}{4}$"),
    ("0.75", r"so \boxed{3/4}"),
    ("\\frac{3}{4}", r"Check: x = \frac 34 so recheck step 2."),
    ("\\frac{3}{4}", "Answer:{3}/{4}"),
    ("\\frac{3}{4}", "Answer:3/(4)"),
    ("\\frac{3}{4}", "Answer:(3)/(4)"),
    ("\\frac{3}{4}", "It is 0.75!"),
    ("\\frac{1}{3}", r"Answer:0.\overline{3}"),
    ("\\frac{1}{3}", "Answer:1:3"),
    ("25\\%", "It comes to 25 percent overall."),
    ("25\\%", "so 0.25 of the total"),
    // Negative numbers.
    ("-12", "Answer:−12"),
    ("-12", "Answer:–12"),
    ("-12", "Check: x = - 12 so recheck step 2."),
    ("-12", "Answer:-(12)"),
    ("-12", "Answer:0-12"),
    ("-12", "Answer:−12.0"),
    // Number words.
    ("-12", "negative twelve"),
    ("-12", "The answer is minus twelve."),
    ("3", "Three"),
    ("3", "The answer is three."),
    ("5", "FIVE"),
    ("42", "The answer is forty-two."),
    ("-3", "The answer is negative three."),
    ("250", "the answer is two hundred fifty"),
    // Roots, pi, expressions.
    ("\\sqrt{2}", r"Answer:\sqrt2"),
    ("\\sqrt{2}", "Answer:sqrt(2)"),
    ("\\sqrt{2}", "Answer:2^{1/2}"),
    ("\\sqrt{2}", "Answer:2^(1/2)"),
    ("\\sqrt{2}", r"Answer:\sqrt{8}/2"),
    ("\\sqrt{2}", "Answer:√2"),
    ("\\sqrt{2}", "so x≈√2"),
    ("3", "Answer:2+1"),
    // An expression the checker evaluates to the gold, spaced or not, is the gold: quoting the
    // learner's own slip `9 * 2 = 16` when the gold is 18 shows `9 * 2`.
    (
        "18",
        "Your approach looks right, but check each calculation again: for example, verify \"9 * 2 = 16\".",
    ),
    ("18", "verify \"9*2 = 16\""),
    ("2\\pi", r"Answer:2\pi"),
    ("2\\pi", "Answer:2pi"),
    ("2\\pi", "Answer:2π"),
    ("2\\pi", r"Check: x = 2 \pi so recheck step 2."),
    ("2\\pi", r"Check: x = \pi \cdot 2 so recheck step 2."),
    ("x^2-1", "Answer:x^2-1"),
    ("x^2-1", "Answer:(x-1)(x+1)"),
    ("x^2-1", "Check: y = x^2 - 1 so recheck step 2."),
    ("x^2-1", "Answer:x*x-1"),
    ("x^2-1", "Answer:-1+x^2"),
    // Tuples, sets, choices.
    ("(2,3)", "Answer:(2,3)"),
    ("(2,3)", "Note that = (2, 3) here."),
    ("(2,3)", "Note that = x=2, y=3 here."),
    ("(2,3)", r"Answer:\left(2,3\right)"),
    ("\\{1,2\\}", r"Answer:\{2,1\}"),
    ("\\{1,2\\}", "Note that = 1, 2 here."),
    ("\\{1,2\\}", "Check: x = 1 and 2 so recheck step 2."),
    ("\\{1,2\\}", "Answer:{1,2}"),
    ("B", "Answer:B"),
    ("B", "Answer:(B)"),
    ("B", "**option B**"),
    ("B", r"Answer:\text{(B)}"),
];

#[test]
fn tricky_leaks_are_never_shown() {
    let cfg = Config::default();
    let mut failures = Vec::new();
    for (gold, text) in TRICKY {
        // Each row is a real leak: the checker itself finds the gold in it.
        let found = mentor_verify_math::check(gold, text, &cfg).passed() || !leaks(gold, text).is_empty();
        assert!(found, "table row is not a leak for the checker: {gold:?} {text:?}");
        for prefix in [false, true] {
            let r = if prefix {
                assert_no_shown_leak(gold, "Recheck your second step.", Some(text))
            } else {
                assert_no_shown_leak(gold, text, None)
            };
            failures.extend(r.err());
        }
    }
    assert!(failures.is_empty(), "{} leaks shown:\n{}", failures.len(), failures.join("\n"));
}

/// Redaction keeps the honest rest of a leaking hint: the guard is not just rejecting.
#[test]
fn leaking_spans_are_redacted_and_the_rest_kept() {
    let cases = [
        ("0.75", "Answer:3/4. Check the units of step 2.", "Answer:…. Check the units of step 2."),
        ("1234", "Check: x = 1 234 so recheck step 2.", "Check: x = … so recheck step 2."),
        ("0.75", "Check: x = 3 / 4 so recheck step 2.", "Check: x = … so recheck step 2."),
        ("-12", "It is negative twelve; check the sign in step 2.", "It is …; check the sign in step 2."),
        ("\\sqrt{2}", "so x≈√2, check step 2", "so x≈…, check step 2"),
    ];
    for (gold, text, want) in cases {
        match guard().check(&Task::math("t", "q", gold), hint(text, None)) {
            GuardOutcome::Redacted { hint, reasons } => {
                assert_eq!(hint.text, want, "{gold:?}");
                assert!(!reasons.is_empty());
            }
            other => panic!("{gold:?} {text:?}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The converse: honest hints pass unchanged.

const HONEST: &[(&str, &str)] = &[
    ("18", "Check the units of your second step."),
    ("18", "Janet sells 16 - 3 - 4 = 9 duck eggs a day; what does she earn for each?"),
    ("18", "Re-read what the question asks for: the money, not the eggs."),
    ("0.75", "You divided by 3 where the problem divides by the number of marbles left."),
    ("0.75", r"Write the probability as $\frac{\text{favourable}}{\text{total}}$ first."),
    ("1234", "Add the two subtotals from steps 1 and 2 before rounding."),
    ("-12", "Watch the sign when you move 7 to the other side."),
    ("-12", "The slope is negative; check which point comes first."),
    ("\\frac{3}{4}", "Count the outcomes where both dice are even."),
    ("25\\%", "A percentage compares the change with the original price, 80 dollars."),
    ("\\sqrt{2}", "Use the Pythagorean theorem on the unit square's diagonal."),
    ("2\\pi", "The circumference uses the radius, not the diameter."),
    ("x^2-1", "Multiply the two binomials term by term."),
    ("(2,3)", "Solve the first equation for y and substitute it into the second."),
    ("B", "Eliminate the options whose units do not match."),
    ("5", "Which of the 12 students were counted twice?"),
];

#[test]
fn honest_hints_are_accepted_unchanged() {
    for (gold, text) in HONEST {
        assert_eq!(leaks(gold, text), Vec::<String>::new(), "table row leaks: {gold:?} {text:?}");
        match guard().check(&Task::math("t", "q", *gold), hint(text, Some("First, list what is given."))) {
            GuardOutcome::Accepted(h) => {
                assert_eq!(h.text, *text);
                assert_eq!(h.solution_prefix.as_deref(), Some("First, list what is given."));
            }
            other => panic!("honest hint not accepted for {gold:?}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The guard asks the injected equivalence, and the real checker is what makes it sound.

/// Plain string equality: what a test stub would do.
struct StringEq;

impl AnswerEquivalence for StringEq {
    fn equivalent(&self, gold: &str, candidate: &str) -> bool {
        gold.trim() == candidate.trim()
    }
}

/// The real checker, recording what the guard asks it.
#[derive(Default)]
struct Recording(Mutex<Vec<String>>, MathEquivalence);

impl AnswerEquivalence for Recording {
    fn equivalent(&self, gold: &str, candidate: &str) -> bool {
        self.0.lock().unwrap().push(candidate.to_string());
        self.1.equivalent(gold, candidate)
    }

    fn answer_spans(&self, text: &str) -> Vec<std::ops::Range<usize>> {
        self.1.answer_spans(text)
    }
}

#[test]
fn answer_spans_are_judged_by_the_injected_checker() {
    let task = Task::math("t", "q", "0.75");
    let text = r"So the probability is $\frac{3}{4}$; check step 2.";
    // A string-equality stub sees no leak: the hint would go out with the answer in it.
    let stub = Guard::new(GuardConfig::default(), Arc::new(StringEq));
    let out = stub.check(&task, hint(text, None));
    assert!(matches!(&out, GuardOutcome::Accepted(h) if h.text == text), "{out:?}");
    assert!(!leaks("0.75", text).is_empty());
    // The real checker, injected, finds it; the spans it is asked about include the fraction.
    let rec = Arc::new(Recording::default());
    let out = Guard::new(GuardConfig::default(), rec.clone()).check(&task, hint(text, None));
    let shown = shown(&out).expect("redacted, not rejected");
    assert!(shown.iter().all(|s| leaks("0.75", s).is_empty()), "{shown:?}");
    let asked = rec.0.lock().unwrap();
    assert!(asked.iter().any(|c| c == r"\frac{3}{4}"), "{asked:?}");
}

// ---------------------------------------------------------------------------------------
// Properties.

/// A gold answer and forms of it, each of which the checker equates with it.
#[derive(Debug, Clone)]
struct Gold {
    gold: String,
    forms: Vec<String>,
}

fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

fn words(n: i64) -> Option<String> {
    const UNITS: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 8] = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
    let a = n.unsigned_abs() as usize;
    if a >= 1000 {
        return None;
    }
    let below_100 = |m: usize| -> String {
        if m < 20 {
            UNITS[m].to_string()
        } else if m.is_multiple_of(10) {
            TENS[m / 10 - 2].to_string()
        } else {
            format!("{}-{}", TENS[m / 10 - 2], UNITS[m % 10])
        }
    };
    let body = if a >= 100 {
        if a.is_multiple_of(100) {
            format!("{} hundred", UNITS[a / 100])
        } else {
            format!("{} hundred {}", UNITS[a / 100], below_100(a % 100))
        }
    } else {
        below_100(a)
    };
    Some(if n < 0 { format!("negative {body}") } else { body })
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// The decimal expansion of `p/q` when it terminates within 6 places.
fn decimal(p: i64, q: i64) -> Option<String> {
    let mut scale = 1i64;
    for places in 0..=6 {
        if (p * scale) % q == 0 {
            let v = p * scale / q;
            if places == 0 {
                return Some(v.to_string());
            }
            let sign = if v < 0 { "-" } else { "" };
            let a = v.unsigned_abs();
            let s = scale as u64;
            return Some(format!("{sign}{}.{:0width$}", a / s, a % s, width = places));
        }
        scale *= 10;
    }
    None
}

fn integer_gold(n: i64) -> Gold {
    let a = n.unsigned_abs();
    let mut forms = vec![
        n.to_string(),
        format!("{n}.0"),
        format!("${n}$"),
        format!("\\boxed{{{n}}}"),
        format!("{}/2", 2 * n),
        format!("\\frac{{{}}}{{2}}", 2 * n),
        format!("{n} dollars"),
        format!("{n} cm"),
        format!("\\${n}"),
        format!("{}+{}", n - 1, 1),
        thousands(n),
        format!("\\boxed{{{}}}", thousands(n)),
    ];
    if n < 0 {
        forms.extend([format!("−{a}"), format!("- {a}"), format!("-({a})"), format!("({n})")]);
    }
    if a >= 1000 {
        let d = a.to_string();
        let (hi, lo) = d.split_at(d.len() - 3);
        let sign = if n < 0 { "-" } else { "" };
        forms.extend([
            format!("{sign}{hi}{{,}}{lo}"),
            format!("{sign}{hi}\\,{lo}"),
            format!("{sign}{hi} {lo}"),
        ]);
    }
    forms.extend(words(n));
    Gold { gold: n.to_string(), forms }
}

fn fraction_gold(p: i64, q: i64, latex_gold: bool) -> Gold {
    let (p, q) = (p / gcd(p, q), q / gcd(p, q));
    let dec = decimal(p, q);
    let gold = match (&dec, latex_gold) {
        (Some(d), false) => d.clone(),
        _ if p < 0 => format!("-\\frac{{{}}}{{{q}}}", -p),
        _ => format!("\\frac{{{p}}}{{{q}}}"),
    };
    let mut forms = vec![
        format!("{p}/{q}"),
        format!("\\frac{{{p}}}{{{q}}}"),
        format!("\\dfrac{{{p}}}{{{q}}}"),
        format!("\\tfrac{{{p}}}{{{q}}}"),
        format!("{}/{}", 2 * p, 2 * q),
        format!("{p} / {q}"),
        format!("\\boxed{{{p}/{q}}}"),
        format!("$\\frac{{{p}}}{{{q}}}$"),
    ];
    if p < 0 {
        forms.push(format!("-\\frac{{{}}}{{{q}}}", -p));
    }
    if (0..10).contains(&p) && q < 10 {
        forms.push(format!("\\frac{p}{q}"));
        forms.push(format!("\\frac {p}{q}"));
    }
    if let Some(d) = &dec {
        forms.push(d.clone());
        if let Some(short) = d.strip_prefix("0.") {
            forms.push(format!(".{short}"));
        }
        forms.push(format!("{d}0"));
    }
    if let Some(pc) = decimal(100 * p, q) {
        forms.extend([format!("{pc}%"), format!("{pc}\\%"), format!("{pc} %")]);
    }
    Gold { gold, forms }
}

fn percent_gold(n: i64) -> Gold {
    let mut forms = vec![format!("{n}%"), format!("{n}\\%"), format!("{n}"), format!("{n} percent")];
    forms.extend(decimal(n, 100));
    Gold { gold: format!("{n}\\%"), forms }
}

fn sqrt_gold(n: i64) -> Gold {
    Gold {
        gold: format!("\\sqrt{{{n}}}"),
        forms: vec![
            format!("\\sqrt{{{n}}}"),
            format!("\\sqrt{n}"),
            format!("√{n}"),
            format!("sqrt({n})"),
            format!("{n}^{{1/2}}"),
            format!("\\sqrt{{{}}}/2", 4 * n),
        ],
    }
}

fn gold_strategy() -> impl Strategy<Value = Gold> {
    let non_square = prop::sample::select(vec![2i64, 3, 5, 6, 7, 10, 11, 13]);
    prop_oneof![
        (-50i64..50).prop_map(integer_gold),
        (-5000i64..5000).prop_map(integer_gold),
        (1000i64..100_000).prop_map(integer_gold),
        (-40i64..40, prop::sample::select(vec![2i64, 4, 5, 8, 10, 20, 25]))
            .prop_filter("not whole", |(p, q)| p % q != 0)
            .prop_map(|(p, q)| fraction_gold(p, q, false)),
        (-40i64..40, 2i64..13)
            .prop_filter("not whole", |(p, q)| p % q != 0)
            .prop_map(|(p, q)| fraction_gold(p, q, true)),
        (1i64..100).prop_map(percent_gold),
        non_square.prop_map(sqrt_gold),
    ]
}

/// Ways a hint can carry a form `{}` of the answer.
const TEMPLATES: &[&str] = &[
    "{}",
    "The answer is {}.",
    "the final answer is {}",
    "Answer:{}",
    "answer={}",
    "Note that = {} here.",
    "= {}",
    "x={}",
    "x = {} so the rest follows; check step two",
    "x≈{}",
    "so we get{}.",
    "\\boxed{{}}",
    "$\\boxed{{}}$",
    "Try ${}$ next.",
    "Think: \\({}\\) fits.",
    "\\[{}\\]",
    "#### {}",
    "**{}**",
    "`{}`",
    "\"{}\"",
    "({})",
    "You should get {} in the end",
    "The total should be {}, not what you wrote.",
    "Is it {}? Check.",
    "It is {}!",
    "answer is {}; verify units",
    "Recheck your second step.\nFinal answer: {}",
    "Recheck your second step.\n{}",
    "In total she pays {} for the eggs.",
];

const FILLER: &[&str] =
    &["check", "your", "second", "step", "again", "carefully", "units", "the", "product", "remember", "we"];

fn filler() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FILLER), 0..4).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// No hint the guard lets through carries the gold in a form the checker accepts, wherever
    /// the form sits (text or solution prefix) and whatever surrounds it.
    #[test]
    fn no_shown_hint_carries_a_gold_equivalent_span(
        g in gold_strategy(),
        form in any::<prop::sample::Index>(),
        template in prop::sample::select(TEMPLATES),
        before in filler(),
        after in filler(),
        in_prefix in any::<bool>(),
    ) {
        let cfg = Config::default();
        let forms: Vec<&String> = g.forms.iter()
            .filter(|f| mentor_verify_math::equivalent(&g.gold, f, &cfg)
                || mentor_verify_math::check(&g.gold, f, &cfg).passed())
            .collect();
        prop_assert!(!forms.is_empty(), "no form of {:?} is equivalent: {:?}", g.gold, g.forms);
        let stated = template.replace("{}", form.get(&forms).as_str());
        let text = format!("{before} {stated} {after}").trim().to_string();
        let r = if in_prefix {
            assert_no_shown_leak(&g.gold, "Recheck your second step.", Some(&text))
        } else {
            assert_no_shown_leak(&g.gold, &text, None)
        };
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    /// Integers written in words are caught like digits.
    #[test]
    fn spelled_integers_are_caught(
        n in -999i64..1000,
        template in prop::sample::select(vec![
            "The answer is {}.", "{}", "You should end up with {} here", "It is {}!", "Answer: {}",
        ]),
    ) {
        let gold = n.to_string();
        let w = words(n).unwrap();
        let text = template.replace("{}", &w);
        let r = assert_no_shown_leak(&gold, &text, None);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    /// The converse: a hint with no gold-equivalent span passes unchanged. Numbers in it are
    /// drawn freely; cases where they happen to state the gold are skipped.
    #[test]
    fn hints_without_the_answer_pass_unchanged(
        g in gold_strategy(),
        a in -200i64..2000,
        b in 1i64..50,
        template in prop::sample::select(vec![
            "Check the units of your second step.",
            "In step {a} you multiplied by {b}; the problem asks for a sum.",
            "Recompute the total from step {a}: the {b} boxes are counted twice.",
            "Your fraction {a}/{b} is not in lowest terms yet; simplify it first.",
            "Re-read the question: it asks for the remaining amount after {b} days.",
            "Is {a} the number of pages or the number of chapters?",
            "Compare your value for x with the condition x > {b}.",
            "Write $x + {b} = y$ and substitute it into the second equation.",
        ]),
    ) {
        let text = template.replace("{a}", &a.to_string()).replace("{b}", &b.to_string());
        prop_assume!(leaks(&g.gold, &text).is_empty());
        let out = guard().check(&Task::math("t", "q", g.gold.clone()), hint(&text, None));
        prop_assert!(matches!(&out, GuardOutcome::Accepted(h) if h.text == text), "gold {:?}: {out:?}", g.gold);
    }
}
