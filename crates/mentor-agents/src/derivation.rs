//! Leaks by derivation: a hint that never states the final answer can still give it away when
//! one operation it names, applied to numbers the question or the hint states, yields the
//! answer, or when it states every intermediate result of the reference but one. Also the
//! no-learner baseline: a mechanical solver that reads only the question and the hint.

use serde::Serialize;

use crate::rules::math::{operation_noun, reference_steps};
use crate::rules::numbers::{computations, numbers, same, Found};

/// Why a hint gives the final answer away without stating it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LeakByDerivation {
    /// The hint states all intermediate results of the reference but at most one.
    AllButOne {
        /// How many of the reference's results the hint states.
        stated: usize,
        /// How many results the reference has (results the question states not counted).
        of: usize,
    },
    /// `a op b` is the answer, with `op` named by the hint and `a`, `b` stated by the question
    /// or the hint.
    OneOperation {
        /// The left operand.
        a: f64,
        /// The operator (`+ - * /`).
        op: char,
        /// The right operand.
        b: f64,
    },
}

/// Operation words besides the nouns of the hint templates (`addition`, `subtraction`,
/// `multiplication`, `division`).
const WORDS: [(char, &[&str]); 4] = [
    ('+', &["add", "adds", "plus", "sum"]),
    ('-', &["subtract", "subtracts", "minus", "difference"]),
    ('*', &["multiply", "multiplies", "times", "product"]),
    ('/', &["divide", "divides", "divided", "quotient"]),
];

/// Most numbers of the question and the hint combined that [`leak_by_derivation`] pairs up.
const POOL: usize = 256;

/// The operators (`+ - * /`) a hint names, in order of first appearance, without repeats.
///
/// Named are: the words `addition add adds plus sum` (`+`), `subtraction subtract subtracts
/// minus difference` (`-`), `multiplication multiply multiplies times product` (`*`),
/// `division divide divides divided quotient` (`/`), case-insensitive, and the operators of
/// every written calculation `a op b = c`. A word right after a negation (`not`, `no`,
/// `never`, `cannot`, a word ending in `n't`), optionally with an article between, names the
/// wrong operation (`needs a subtraction, not an addition` is the learner's mistake) and is
/// not counted.
pub fn named_operations(hint: &str) -> Vec<char> {
    let mut named: Vec<(usize, char)> = Vec::new();
    let mut previous: Option<String> = None;
    for (at, word) in words(hint) {
        if matches!(word.as_str(), "a" | "an" | "the") {
            continue;
        }
        let negated = previous.as_deref().is_some_and(|p| {
            matches!(p, "not" | "no" | "never" | "cannot") || p.ends_with("n't") || p.ends_with("n’t")
        });
        if !negated {
            if let Some(op) = word_operation(&word) {
                named.push((at, op));
            }
        }
        previous = Some(word);
    }
    for c in computations(hint) {
        named.extend(c.ops.iter().map(|op| (c.start, *op)));
    }
    named.sort_by_key(|(at, _)| *at); // stable: a calculation's operators keep their order
    let mut out = Vec::new();
    for (_, op) in named {
        if !out.contains(&op) {
            out.push(op);
        }
    }
    out
}

/// Whether the hint gives `answer` away by derivation, given the question and the reference
/// solution. Checks, in this order:
///
/// 1. [`LeakByDerivation::AllButOne`]: of the reference's step results (from
///    [`reference_steps`], the last being the answer; a result the question states proves
///    nothing and is skipped), at least two remain and the hint states all but at most one.
/// 2. [`LeakByDerivation::OneOperation`]: an operator of [`named_operations`], applied to two
///    numbers at distinct positions of the question's numbers followed by the hint's (either
///    order), gives the answer; a division only with a whole-number quotient. Operators are
///    tried in the order the hint names them, the first match is returned.
///
/// Step labels (`Step 2`, `step 2 of 3`) are not numbers the hint states.
pub fn leak_by_derivation(
    question: &str,
    hint: &str,
    reference_solution: &str,
    answer: f64,
) -> Option<LeakByDerivation> {
    let question_numbers: Vec<f64> = numbers(question).into_iter().map(|f| f.value).collect();
    let hint_numbers: Vec<f64> = quantities(hint).into_iter().map(|f| f.value).collect();
    let in_question = |v: f64| question_numbers.iter().any(|q| same(*q, v));

    let results: Vec<f64> = reference_steps(reference_solution)
        .iter()
        .filter_map(|s| s.result)
        .filter(|r| !in_question(*r))
        .collect();
    let stated = results.iter().filter(|r| hint_numbers.iter().any(|h| same(*h, **r))).count();
    if results.len() >= 2 && stated + 1 >= results.len() {
        return Some(LeakByDerivation::AllButOne { stated, of: results.len() });
    }

    // Each value at most twice (`a op a` needs two positions), bounded.
    let mut pool: Vec<f64> = Vec::new();
    for v in question_numbers.iter().chain(&hint_numbers) {
        if pool.len() < POOL && pool.iter().filter(|p| same(**p, *v)).count() < 2 {
            pool.push(*v);
        }
    }
    for op in named_operations(hint) {
        for (i, &a) in pool.iter().enumerate() {
            for (j, &b) in pool.iter().enumerate() {
                let Some(v) = apply(a, op, b).filter(|_| i != j) else { continue };
                let exact = op != '/' || same(v, v.round());
                if exact && same(v, answer) {
                    return Some(LeakByDerivation::OneOperation { a, op, b });
                }
            }
        }
    }
    None
}

/// The answer a mechanical reader gets from the question and the hint alone (the no-learner
/// baseline). The rule:
///
/// 1. A hint with `\boxed{x}` (the first one, holding exactly one number) answers `x`.
/// 2. `op` = the last operator of [`named_operations`]; none: no answer.
/// 3. `v` = the last number the hint states that the question does not (an intermediate
///    result), if any; step labels (`Step 2`) do not count.
/// 4. `q` = the first number of the hint's first quoted span (`"…"` or `“…”`), located in the
///    question when the span is a piece of it; without a quoted number, the last number of
///    the question that differs from `v`; none: no answer.
/// 5. With `v`: `v op q`. Without: `p op q`, `p` the question's first number, or its second
///    when `q` is that first number (same position).
///
/// A division needs a non-zero divisor; a non-finite result is no answer.
pub fn no_learner_answer(question: &str, hint: &str) -> Option<f64> {
    if let Some(x) = boxed(hint) {
        return Some(x);
    }
    let op = *named_operations(hint).last()?;
    let qn = numbers(question);
    let in_question = |v: f64| qn.iter().any(|q| same(q.value, v));
    let v = quantities(hint).into_iter().map(|f| f.value).rfind(|h| !in_question(*h));
    // q with its index among the question's numbers, when it is one of them.
    let quoted = quoted(hint).and_then(|span| {
        let span = span.trim();
        match question.find(span).filter(|_| !span.is_empty()) {
            Some(at) => qn
                .iter()
                .position(|f| f.start >= at && f.end <= at + span.len())
                .map(|i| (qn[i].value, Some(i))),
            None => numbers(span).first().map(|f| (f.value, None)),
        }
    });
    let (q, q_index) = quoted.or_else(|| {
        let i = qn.iter().rposition(|f| v.is_none_or(|v| !same(f.value, v)))?;
        Some((qn[i].value, Some(i)))
    })?;
    let p = match v {
        Some(v) => v,
        None if q_index == Some(0) => qn.get(1)?.value,
        None => qn.first()?.value,
    };
    apply(p, op, q)
}

/// `a op b`, when finite (a division needs a non-zero divisor).
fn apply(a: f64, op: char, b: f64) -> Option<f64> {
    let v = match op {
        '+' => a + b,
        '-' => a - b,
        '*' => a * b,
        '/' if b != 0.0 => a / b,
        _ => return None,
    };
    v.is_finite().then_some(v)
}

/// The operator a (lowercase) word names.
fn word_operation(word: &str) -> Option<char> {
    WORDS.iter().find_map(|(op, list)| {
        let noun = operation_noun(*op).rsplit(' ').next().unwrap_or_default();
        (word == noun || list.contains(&word)).then_some(*op)
    })
}

/// The lowercase words of a text (letters and inner apostrophes) with their byte offsets.
fn words(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, c) in text.char_indices() {
        let inner_apostrophe = matches!(c, '\'' | '’') && current.is_some();
        if c.is_alphabetic() || inner_apostrophe {
            current.get_or_insert_with(|| (i, String::new())).1.extend(c.to_lowercase());
        } else if let Some(w) = current.take() {
            out.push(w);
        }
    }
    out.extend(current);
    out
}

/// The numbers of a hint without step labels: a number right after `step`/`steps`, and the
/// `3` of `step 2 of 3`.
fn quantities(text: &str) -> Vec<Found> {
    let found = numbers(text);
    let mut label = vec![false; found.len()];
    for (k, f) in found.iter().enumerate() {
        let before = text[..f.start].trim_end();
        let last_word = before.rsplit(|c: char| !c.is_alphabetic()).next().unwrap_or_default();
        label[k] = match last_word.to_lowercase().as_str() {
            "step" | "steps" => true,
            "of" => k > 0 && label[k - 1] && text[found[k - 1].end..f.start].trim() == "of",
            _ => false,
        };
    }
    found.into_iter().zip(label).filter(|(_, l)| !l).map(|(f, _)| f).collect()
}

/// The first `\boxed{…}` of a text, when it holds exactly one number.
fn boxed(text: &str) -> Option<f64> {
    let start = text.find("\\boxed{")? + "\\boxed{".len();
    let inner = &text[start..start + text[start..].find('}')?];
    match numbers(inner).as_slice() {
        [one] => Some(one.value),
        _ => None,
    }
}

/// The text of the first quoted span (`"…"` or `“…”`).
fn quoted(text: &str) -> Option<&str> {
    let open = text.find(['"', '“'])?;
    let from = open + text[open..].chars().next()?.len_utf8();
    let close = text[from..].find(['"', '”'])?;
    Some(&text[from..from + close])
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const MIA: &str = "Mia has 7 boxes of pencils with 6 pencils in each. Then she gives away 9 pencils. \
                       How many pencils does Mia have now?";
    const MIA_REF: &str =
        "Mia has 7 * 6 = <<7*6=42>>42 pencils.\nShe has 42 - 9 = <<42-9=33>>33 left.\n#### 33";

    #[test]
    fn pencils_hint_with_the_intermediate_result_leaks_and_is_solved() {
        let hint = "These steps are right: Mia has 7 * 6 = 42 pencils. Step 2 needs a subtraction \
                    (\"Then she gives away 9 pencils.\").";
        assert_eq!(named_operations(hint), vec!['*', '-']);
        // The reference has two results (42, 33): the hint states one, so (b) flags it too.
        assert_eq!(
            leak_by_derivation(MIA, hint, MIA_REF, 33.0),
            Some(LeakByDerivation::AllButOne { stated: 1, of: 2 })
        );
        // Without a reference, the operation check finds 42 - 9.
        assert_eq!(
            leak_by_derivation(MIA, hint, "", 33.0),
            Some(LeakByDerivation::OneOperation { a: 42.0, op: '-', b: 9.0 })
        );
        assert_eq!(no_learner_answer(MIA, hint), Some(33.0));
    }

    #[test]
    fn the_wrong_operation_after_not_is_not_named() {
        let hint = "Step 2 needs a subtraction, not an addition: the question says \"Then she gives away 9 \
                    pencils.\" Redo that step.";
        assert_eq!(named_operations(hint), vec!['-']);
        assert_eq!(named_operations("Don't add them; no multiplication; use the product."), vec!['*']);
        // No two of 7, 6, 9, 9 give 33 by a subtraction (nor by anything else).
        assert_eq!(leak_by_derivation(MIA, hint, MIA_REF, 33.0), None);
        assert_eq!(no_learner_answer(MIA, hint), Some(7.0 - 9.0));
        // 30 + 3 would leak 33; the hint names the addition only as the wrong one.
        let q = "A jar has 30 sweets and 3 more are added. How many sweets?";
        assert_eq!(leak_by_derivation(q, "This needs a subtraction, not an addition.", "", 33.0), None);
        assert!(leak_by_derivation(q, "This needs an addition.", "", 33.0).is_some());
    }

    #[test]
    fn stating_all_results_but_the_answer_leaks() {
        let q = "Tom has 3 bags of 4 marbles. He finds 6 more marbles. He shares them equally among 2 \
                 friends. How many marbles does each friend get?";
        let reference = "3 * 4 = <<3*4=12>>12 marbles.\n12 + 6 = <<12+6=18>>18 marbles.\n\
                         18 / 2 = <<18/2=9>>9 marbles.\n#### 9";
        let hint =
            "These steps are right: 3 * 4 = 12 marbles. 12 + 6 = 18 marbles. Step 3 of 3 needs a division.";
        assert_eq!(
            leak_by_derivation(q, hint, reference, 9.0),
            Some(LeakByDerivation::AllButOne { stated: 2, of: 3 })
        );
        assert_eq!(leak_by_derivation(q, "After the first step you have 12 marbles.", reference, 9.0), None);
    }

    #[test]
    fn a_hint_naming_nothing_and_stating_nothing_does_not_leak() {
        let hint = "Reread the question carefully and check every step of your reasoning.";
        assert_eq!(leak_by_derivation(MIA, hint, MIA_REF, 33.0), None);
        assert_eq!(no_learner_answer(MIA, hint), None);
    }

    #[test]
    fn divisions_count_only_when_exact() {
        let q = "There are 10 cookies shared among 4 children. How much does each child get?";
        assert_eq!(leak_by_derivation(q, "Use a division.", "", 2.5), None);
        let q = "There are 12 cookies shared among 4 children. How many does each child get?";
        assert_eq!(
            leak_by_derivation(q, "Use a division.", "", 3.0),
            Some(LeakByDerivation::OneOperation { a: 12.0, op: '/', b: 4.0 })
        );
        assert_eq!(no_learner_answer(q, "Use a division."), Some(3.0));
        assert_eq!(no_learner_answer("Split 5 among 0 people.", "Divide."), None);
    }

    #[test]
    fn a_boxed_answer_in_the_hint_is_the_answer() {
        assert_eq!(no_learner_answer(MIA, "The answer is \\boxed{33}."), Some(33.0));
        assert_eq!(no_learner_answer(MIA, "\\boxed{"), None);
    }

    #[test]
    fn step_labels_are_not_stated_numbers() {
        let found: Vec<f64> =
            quantities("Step 2 of 3 should be: 4 + 5 = 9. See steps 1.").iter().map(|f| f.value).collect();
        assert_eq!(found, vec![4.0, 5.0, 9.0]);
    }

    proptest! {
        #[test]
        fn a_bare_operation_hint_leaks_only_by_one_question_pair(x in 1u32..30, y in 1u32..30, z in 1u32..30) {
            let (x, y, z) = (f64::from(x), f64::from(y), f64::from(z));
            let question = format!("A has {x} bags of {y} apples. Then A eats {z} apples. How many apples?");
            let answer = x * y - z;
            let reference = format!(
                "A has {x} * {y} = <<{x}*{y}={xy}>>{xy} apples.\nThen A has {xy} - {z} = <<{xy}-{z}={answer}>>{answer} apples.",
                xy = x * y
            );
            let found = leak_by_derivation(&question, "Step 2 needs a subtraction.", &reference, answer);
            let values = [x, y, z];
            let brute = (0..3).any(|i| (0..3).any(|j| i != j && same(values[i] - values[j], answer)));
            let all_but_one = matches!(found, Some(LeakByDerivation::AllButOne { .. }));
            prop_assert!(!all_but_one);
            prop_assert_eq!(found.is_some(), brute);
            if let Some(LeakByDerivation::OneOperation { a, op, b }) = found {
                prop_assert_eq!(op, '-');
                prop_assert!(same(a - b, answer));
            }
        }
    }
}
