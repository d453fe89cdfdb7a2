//! Hedges around an answer: words or symbols that negate, bound, approximate or retract it.
//!
//! `\boxed{\text{not } 3}`, `The answer is at least 3`, `\boxed{3 \text{ or more}}`,
//! `#### about 5`, `x \geq \boxed{3}`, `\boxed{3} is wrong` do not state the value 3, though
//! the parser, which drops words like units, would read 3 from each. [`find`] looks for such
//! a qualifier in and around the extracted answer; the checker then gives `no_answer` with the
//! reason ([`Qualifier::reason`]), or `multiple_answers` for `3 or \boxed{4}`.
//!
//! # Scope
//!
//! The answer's *core* is the stretch of its text from its first math token (number,
//! variable, command, choice letter) to its last (see [`crate::prose`] for the tokens). An
//! answer with no math (`\text{no solution}`, `odd`) is a text answer and is not checked.
//! Then, in order:
//!
//! - **Inside the core**: words between its math tokens (`x = \text{about } 3`). Relations
//!   there are the answer's own (`x \geq 3` is judged as an inequality; `x \approx 3` is read
//!   like `x = 3`, see below).
//! - **Inside the answer, before the core**: any qualifier at all (`\text{at least } 3`,
//!   `\geq 3`, "The answer is not 3").
//! - **Inside the answer, after the core**: for a box or math span, which is all answer, any
//!   qualifier (`3 \text{ is wrong}`); for prose sources (answer phrase, `####` line, whole
//!   text, last number), only the words right after it, as below.
//! - **Just before the answer**: the words and relation symbols directly before it, back to the
//!   nearest clause break (`,` `;` `:` `?` `!`, a sentence-ending `.`, a line break, an arrow)
//!   or math token, at most [`BEFORE_WORDS`] of them. A qualifier counts only if it *ends* that
//!   run, after dropping linking words (`to`, `be`, `equal`, `exactly`, `=`): "is not equal to
//!   3", "cannot be 3", "close to 3", "at least 3" are caught; "there are no more questions,
//!   so it is 3" (a break) and "the number left over is 3" (the run ends in `is`) are not.
//! - **Just after the answer**: the words directly after it, to the nearest clause break or math
//!   token, at most [`AFTER_WORDS`]. A qualifier counts only if it *starts* that run, after
//!   dropping a copula (`is`, `was`, `would be`, `must`, `probably`...): "3 or more", "3 is
//!   wrong", "3 isn't right", "3 at most". Bounds and approximations may also follow one other
//!   word, a unit: "3 apples or more", "5 cm approximately". "3 left, no more questions" (a
//!   break) and "12 points of intersection" are not qualifiers.
//! - **Alternatives**: `or` between the answer and another math token right before or after it
//!   (`3 or \boxed{4}`, `\boxed{3} or 4`).
//!
//! `\approx` (`≈`, `\sim`) qualifies only as a prefix of the value (`\boxed{\approx 3}`,
//! "is ≈ 3"). Between two expressions it is a relation like `=`: in `24000 \cdot 1.01^{30}
//! \approx \boxed{32348}` the box states the rounded value a rounding question asks for (a
//! MATH-500 reference solution reads so). Bound relations are not relaxed that way:
//! `x \geq \boxed{3}` bounds the value.
//!
//! A qualifier that the gold answer itself contains (a gold of `\text{at least } 3`) is not a
//! hedge. The words are a fixed list, [`PHRASES`] plus negative contractions (`isn't`, `can't`);
//! epistemic words (`probably 3`) are not qualifiers: the value is still stated. Left out on
//! purpose because legitimate answers use them: "other than" ("no solution other than 3"),
//! "minimum"/"maximum" after a value ("3 minimum moves"), `~` (a LaTeX no-break space).
//!
//! Known cost: an answer to an extremum question worded as a bound ("Zach can have at most
//! $\boxed{2}$ pencils left over", one of the 1 849 reference solutions of the dataset test)
//! and a rounding answer worded "approximately 3.14" are refused; the checker does not see the
//! question, and read alone these are the hedges this module exists to refuse.

use std::ops::Range;

use crate::prose::{self, Kind, Token};

/// How many words (or relation symbols) before the answer are read.
pub(crate) const BEFORE_WORDS: usize = 4;
/// How many words after the answer are read.
pub(crate) const AFTER_WORDS: usize = 4;
/// How many bytes on each side of the answer are scanned (enough for the words above).
const CONTEXT_BYTES: usize = 256;

/// What a qualifier does to the value it is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QualifierKind {
    /// `not 3`, `3 isn't`, `\neq 3`.
    Negation,
    /// `at least 3`, `3 or more`, `\geq 3`, `over 3`.
    Bound,
    /// `about 3`, `approximately 3`, `\approx 3`, `3 or so`.
    Approximation,
    /// `3 is wrong`, `incorrect: 3`.
    Retraction,
    /// `3 or \boxed{4}`.
    Alternative,
}

/// A qualifier found around an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Qualifier {
    /// What it does.
    pub(crate) kind: QualifierKind,
    /// The words or symbol, as matched (`at least`, `≥`, `isn't`).
    pub(crate) phrase: String,
}

impl Qualifier {
    /// The feedback line: what qualified the answer and why that is not an answer.
    pub(crate) fn reason(&self) -> String {
        let p = &self.phrase;
        match self.kind {
            QualifierKind::Negation => {
                format!("the answer is negated by '{p}': a value stated as not the answer is not an answer")
            }
            QualifierKind::Bound => format!("the answer is qualified by '{p}': a bound is not a value"),
            QualifierKind::Approximation => {
                format!("the answer is qualified by '{p}': an approximation is not a value")
            }
            QualifierKind::Retraction => {
                format!("the answer is disowned by '{p}': a value called wrong is not an answer")
            }
            QualifierKind::Alternative => {
                format!("the answer is offered with an alternative ('{p}'): a hedge between values is not one answer")
            }
        }
    }
}

/// How much of the extracted span is the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A box or a math span: everything in it is the answer.
    Markup,
    /// An answer phrase, `####` line, whole text or last number: prose may follow the value.
    Prose,
}

const BEFORE: u8 = 1;
const AFTER: u8 = 2;
const BOTH: u8 = BEFORE | AFTER;

/// One qualifier: its words (lower case) or symbol, what it does, and on which side of the
/// value it qualifies (`BEFORE`: "at least 3"; `AFTER`: "3 or more"). Inside an answer, both
/// sides count.
pub(crate) struct Phrase {
    words: &'static [&'static str],
    kind: QualifierKind,
    place: u8,
}

const fn ph(words: &'static [&'static str], kind: QualifierKind, place: u8) -> Phrase {
    Phrase { words, kind, place }
}

use QualifierKind::{Approximation as Appr, Bound, Negation as Neg, Retraction as Retr};

/// The qualifiers, besides negative contractions (`isn't`, `can't`, see [`negative_contraction`]).
pub(crate) const PHRASES: &[Phrase] = &[
    // Negation.
    ph(&["not"], Neg, BOTH),
    ph(&["no"], Neg, BEFORE),
    ph(&["never"], Neg, BOTH),
    ph(&["cannot"], Neg, BOTH),
    ph(&["nor"], Neg, BEFORE),
    ph(&["neither"], Neg, BEFORE),
    ph(&["rather", "than"], Neg, BEFORE),
    ph(&["instead", "of"], Neg, BEFORE),
    ph(&["except"], Neg, BEFORE),
    ph(&["excluding"], Neg, BEFORE),
    ph(&["≠"], Neg, BOTH),
    // Bounds.
    ph(&["at", "least"], Bound, BOTH),
    ph(&["at", "most"], Bound, BOTH),
    ph(&["at", "the", "least"], Bound, BOTH),
    ph(&["at", "the", "most"], Bound, BOTH),
    ph(&["more", "than"], Bound, BEFORE),
    ph(&["less", "than"], Bound, BEFORE),
    ph(&["fewer", "than"], Bound, BEFORE),
    ph(&["greater", "than"], Bound, BEFORE),
    ph(&["bigger", "than"], Bound, BEFORE),
    ph(&["larger", "than"], Bound, BEFORE),
    ph(&["smaller", "than"], Bound, BEFORE),
    ph(&["higher", "than"], Bound, BEFORE),
    ph(&["lower", "than"], Bound, BEFORE),
    ph(&["or", "equal"], Bound, BEFORE),
    ph(&["over"], Bound, BEFORE),
    ph(&["under"], Bound, BEFORE),
    ph(&["exceeds"], Bound, BEFORE),
    ph(&["exceed"], Bound, BEFORE),
    ph(&["exceeding"], Bound, BEFORE),
    ph(&["beyond"], Bound, BEFORE),
    ph(&["up", "to"], Bound, BEFORE),
    ph(&["upto"], Bound, BEFORE),
    ph(&["≥"], Bound, BEFORE),
    ph(&["≤"], Bound, BEFORE),
    ph(&[">"], Bound, BEFORE),
    ph(&["<"], Bound, BEFORE),
    ph(&["or", "more"], Bound, AFTER),
    ph(&["or", "less"], Bound, AFTER),
    ph(&["or", "fewer"], Bound, AFTER),
    ph(&["or", "greater"], Bound, AFTER),
    ph(&["or", "higher"], Bound, AFTER),
    ph(&["or", "lower"], Bound, AFTER),
    ph(&["or", "larger"], Bound, AFTER),
    ph(&["or", "smaller"], Bound, AFTER),
    ph(&["or", "bigger"], Bound, AFTER),
    ph(&["or", "above"], Bound, AFTER),
    ph(&["or", "below"], Bound, AFTER),
    ph(&["or", "over"], Bound, AFTER),
    ph(&["or", "under"], Bound, AFTER),
    ph(&["or", "up"], Bound, AFTER),
    ph(&["or", "beyond"], Bound, AFTER),
    ph(&["and", "up"], Bound, AFTER),
    ph(&["and", "above"], Bound, AFTER),
    ph(&["and", "below"], Bound, AFTER),
    ph(&["and", "over"], Bound, AFTER),
    ph(&["and", "under"], Bound, AFTER),
    ph(&["and", "more"], Bound, AFTER),
    ph(&["and", "beyond"], Bound, AFTER),
    ph(&["and", "higher"], Bound, AFTER),
    // Approximations.
    ph(&["about"], Appr, BEFORE),
    ph(&["approximately"], Appr, BOTH),
    ph(&["approx"], Appr, BOTH),
    ph(&["around"], Appr, BEFORE),
    ph(&["roughly"], Appr, BOTH),
    ph(&["nearly"], Appr, BEFORE),
    ph(&["almost"], Appr, BEFORE),
    ph(&["circa"], Appr, BEFORE),
    ph(&["ca"], Appr, BEFORE),
    ph(&["close"], Appr, BEFORE),
    ph(&["near"], Appr, BEFORE),
    ph(&["≈"], Appr, BOTH),
    ph(&["more", "or", "less"], Appr, BOTH),
    ph(&["give", "or", "take"], Appr, AFTER),
    ph(&["or", "so"], Appr, AFTER),
    ph(&["or", "thereabouts"], Appr, AFTER),
    ph(&["ish"], Appr, AFTER),
    // Retractions.
    ph(&["wrong"], Retr, BOTH),
    ph(&["incorrect"], Retr, BOTH),
    ph(&["false"], Retr, AFTER),
    ph(&["invalid"], Retr, AFTER),
    ph(&["mistaken"], Retr, AFTER),
    ph(&["erroneous"], Retr, AFTER),
];

/// Words that only link a qualifier to the value before it: "not *equal to* 3", "cannot *be* 3".
const LINKING: &[&str] = &["to", "be", "being", "equal", "equals", "exactly", "quite", "="];

/// Words that only link the value to a qualifier after it: "3 *is* wrong", "3 *would be* wrong".
const COPULAS: &[&str] = &[
    "is",
    "was",
    "are",
    "were",
    "be",
    "been",
    "being",
    "seems",
    "seem",
    "looks",
    "look",
    "would",
    "will",
    "must",
    "might",
    "may",
    "could",
    "should",
    "probably",
    "definitely",
    "certainly",
    "clearly",
    "surely",
    "obviously",
    "also",
    "=",
];

/// Before "up to", these make it a total, not a bound ("it adds up to 10").
const UP_TO_TOTALS: &[&str] = &[
    "add",
    "adds",
    "added",
    "adding",
    "sum",
    "sums",
    "summed",
    "summing",
    "come",
    "comes",
    "came",
    "coming",
    "amount",
    "amounts",
    "amounted",
    "total",
    "totals",
    "totaled",
    "totalled",
    "totaling",
    "totalling",
    "round",
    "rounds",
    "rounded",
    "rounding",
    "end",
    "ends",
    "ended",
    "ending",
];

/// Negative contractions and their apostrophe-less spellings: `isn't`, `can't`, `doesnt`.
fn negative_contraction(w: &str) -> bool {
    w.ends_with("n't")
        || matches!(
            w,
            "isnt"
                | "arent"
                | "wasnt"
                | "werent"
                | "cant"
                | "wont"
                | "doesnt"
                | "dont"
                | "didnt"
                | "couldnt"
                | "shouldnt"
                | "wouldnt"
                | "aint"
        )
}

/// The qualifiers (longest first) whose words start at `seq[k]` and whose place is in `mask`:
/// (length in tokens, kind, phrase).
fn phrases_at(seq: &[&Token], k: usize, mask: u8) -> Vec<(usize, QualifierKind, String)> {
    let mut out = Vec::new();
    let Some(first) = seq.get(k) else { return out };
    if first.kind == Kind::Word && negative_contraction(&first.text) {
        out.push((1, Neg, first.text.clone()));
    }
    for p in PHRASES {
        if p.place & mask == 0 || k + p.words.len() > seq.len() {
            continue;
        }
        if !p.words.iter().zip(&seq[k..]).all(|(w, t)| *w == t.text) {
            continue;
        }
        if p.words == ["up", "to"] && k > 0 && UP_TO_TOTALS.contains(&seq[k - 1].text.as_str()) {
            continue;
        }
        out.push((p.words.len(), p.kind, p.words.join(" ")));
    }
    out.sort_by_key(|(len, _, _)| std::cmp::Reverse(*len));
    out
}

fn hit(kind: QualifierKind, phrase: String) -> Qualifier {
    Qualifier { kind, phrase }
}

/// Every qualifier anywhere in `seq`, in order.
fn anywhere(seq: &[&Token]) -> Vec<Qualifier> {
    (0..seq.len())
        .filter_map(|k| phrases_at(seq, k, BOTH).into_iter().next().map(|(_, kind, p)| hit(kind, p)))
        .collect()
}

/// The qualifier that ends `seq` (the words just before a value), trying again with each
/// trailing linking word dropped.
fn ending(seq: &[&Token]) -> Option<Qualifier> {
    let mut end = seq.len();
    loop {
        let s = &seq[..end];
        for k in 0..s.len() {
            if let Some((_, kind, p)) =
                phrases_at(s, k, BEFORE).into_iter().find(|(len, _, _)| k + len == s.len())
            {
                return Some(hit(kind, p));
            }
        }
        if end == 0 || !LINKING.contains(&seq[end - 1].text.as_str()) {
            return None;
        }
        end -= 1;
    }
}

/// The qualifier that starts `seq` (the words just after a value), after any copulas; or a
/// bound or approximation after one other word (a unit: "3 apples or more").
fn starting(seq: &[&Token]) -> Option<Qualifier> {
    let mut start = 0;
    loop {
        if let Some((_, kind, p)) = phrases_at(seq, start, AFTER).into_iter().next() {
            return Some(hit(kind, p));
        }
        if start < seq.len() && COPULAS.contains(&seq[start].text.as_str()) {
            start += 1;
        } else {
            break;
        }
    }
    if seq.first().is_some_and(|t| t.kind == Kind::Word && !COPULAS.contains(&t.text.as_str())) {
        if let Some((_, kind, p)) =
            phrases_at(seq, 1, AFTER).into_iter().find(|(_, kind, _)| matches!(kind, Bound | Appr))
        {
            return Some(hit(kind, p));
        }
    }
    None
}

fn is_prose(t: &Token) -> bool {
    matches!(t.kind, Kind::Word | Kind::Rel)
}

/// The qualifier keys anywhere in a gold answer: those are part of the answer, not hedges.
fn gold_phrases(gold: &str) -> Vec<String> {
    let toks = prose::tokens(gold, 0..gold.len(), &(0..gold.len()), false);
    let seq: Vec<&Token> = toks.iter().filter(|t| is_prose(t)).collect();
    let mut out: Vec<String> = anywhere(&seq).into_iter().map(|q| q.phrase).collect();
    if seq.iter().any(|t| t.text == "or") {
        out.push("or".into());
    }
    out
}

/// The first qualifier of the answer at `span` of `completion` (see the module docs for the
/// scope), ignoring those the `gold` answer contains. `letters_are_answers`: the answer is a
/// multiple-choice letter. `None` for a text answer (no math in it).
pub(crate) fn find(
    completion: &str,
    span: Range<usize>,
    scope: Scope,
    gold: &str,
    letters_are_answers: bool,
) -> Option<Qualifier> {
    let region = span.start.saturating_sub(CONTEXT_BYTES)..span.end.saturating_add(CONTEXT_BYTES);
    let toks = prose::tokens(completion, region, &span, letters_are_answers);
    let inside = |t: &Token| t.at.start >= span.start && t.at.end <= span.end;
    let first_in = toks.iter().position(inside)?;
    let last_in = toks.iter().rposition(inside)?;
    let c0 = (first_in..=last_in).find(|&k| toks[k].kind == Kind::Math && inside(&toks[k]))?;
    let c1 = (first_in..=last_in).rev().find(|&k| toks[k].kind == Kind::Math && inside(&toks[k]))?;

    let mut found: Vec<Qualifier> = Vec::new();

    // Inside the answer, before the core: any qualifier.
    let pre: Vec<&Token> = toks[first_in..c0].iter().filter(|t| is_prose(t)).collect();
    found.extend(anywhere(&pre));
    // Inside the core: words between math tokens.
    let mut run: Vec<&Token> = Vec::new();
    for t in &toks[c0..=c1] {
        match t.kind {
            Kind::Word => run.push(t),
            _ => {
                found.extend(anywhere(&run));
                run.clear();
            }
        }
    }
    found.extend(anywhere(&run));
    // Inside the answer, after the core: all of it for markup; for prose, the run after it.
    let mut after: Vec<&Token> = Vec::new();
    let mut after_stop: Option<&Token> = None;
    let mut open = true;
    for t in &toks[c1 + 1..=last_in.max(c1)] {
        if !inside(t) {
            continue;
        }
        match (scope, is_prose(t)) {
            (Scope::Markup, true) => after.push(t),
            (Scope::Markup, false) => {}
            (Scope::Prose, true) if open => after.push(t),
            (Scope::Prose, _) if open => {
                open = false;
                after_stop = Some(t);
            }
            _ => {}
        }
    }
    if scope == Scope::Markup {
        found.extend(anywhere(&after));
    }
    // Just after the answer: the run of words up to a break or math token.
    if open {
        for (n, t) in toks[last_in + 1..].iter().enumerate() {
            if !is_prose(t) || n == AFTER_WORDS {
                after_stop = Some(t);
                break;
            }
            after.push(t);
        }
    }
    // Just before the answer: the run of words back to a break or math token.
    let mut before: Vec<&Token> = Vec::new();
    let mut before_stop: Option<&Token> = None;
    for t in toks[..first_in].iter().rev() {
        if !is_prose(t) || before.len() == BEFORE_WORDS {
            before_stop = Some(t);
            break;
        }
        before.push(t);
    }
    before.reverse();
    let before_run: Vec<&Token> = before.iter().copied().chain(pre.iter().copied()).collect();
    let math = |t: Option<&Token>| t.is_some_and(|t| t.kind == Kind::Math);
    // `expr \approx \boxed{v}`: a relation between expressions, not a prefix of the value.
    let infix_approx = pre.is_empty() && before.len() == 1 && before[0].text == "≈" && math(before_stop);
    if !infix_approx {
        found.extend(ending(&before_run));
    }
    found.extend(starting(&after));
    // Alternatives: `3 or \boxed{4}`, `\boxed{3} or 4`.
    if pre.is_empty() && before.len() == 1 && before[0].text == "or" && math(before_stop) {
        found.push(hit(QualifierKind::Alternative, "or".into()));
    }
    if after.len() == 1 && after[0].text == "or" && math(after_stop) {
        found.push(hit(QualifierKind::Alternative, "or".into()));
    }

    if found.is_empty() {
        return None;
    }
    let allowed = gold_phrases(gold);
    found.into_iter().find(|q| !allowed.contains(&q.phrase))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The qualifier of the answer `answer` (its last occurrence) in `text`.
    fn q(text: &str, answer: &str, scope: Scope) -> Option<(QualifierKind, String)> {
        let at = text.rfind(answer).expect("answer in text");
        find(text, at..at + answer.len(), scope, "3", false).map(|q| (q.kind, q.phrase))
    }

    /// The qualifier of the boxed answer of `text`, located as the checker locates it.
    fn boxed(text: &str) -> Option<(QualifierKind, String)> {
        let (e, span) = crate::extract::extract_located(text, &crate::Config::default()).expect("an answer");
        assert_eq!(e.source, mentor_core::AnswerSource::Boxed, "{text}");
        find(text, span, Scope::Markup, "3", false).map(|q| (q.kind, q.phrase))
    }

    #[test]
    fn qualifiers_inside_a_box() {
        assert_eq!(boxed(r"\boxed{\text{not } 3}"), Some((Neg, "not".into())));
        assert_eq!(boxed(r"\boxed{3 \text{ or more}}"), Some((Bound, "or more".into())));
        assert_eq!(boxed(r"\boxed{\text{at least } 3}"), Some((Bound, "at least".into())));
        assert_eq!(boxed(r"\boxed{3 \text{ is wrong}}"), Some((Retr, "wrong".into())));
        assert_eq!(boxed(r"\boxed{\geq 3}"), Some((Bound, "≥".into())));
        assert_eq!(boxed(r"\boxed{\approx 3}"), Some((Appr, "≈".into())));
        assert_eq!(boxed(r"\boxed{x \approx 3}"), None);
        assert_eq!(boxed(r"\boxed{x = \mathrm{about}\ 3}"), Some((Appr, "about".into())));
        // Units, relations that are the answer, text answers.
        assert_eq!(boxed(r"\boxed{3 \text{ cm}}"), None);
        assert_eq!(boxed(r"\boxed{3\text{ dollars}}"), None);
        assert_eq!(boxed(r"\boxed{x \geq 3}"), None);
        assert_eq!(boxed(r"\boxed{\text{no solution}}"), None);
    }

    #[test]
    fn qualifiers_around_a_box() {
        assert_eq!(boxed(r"so it is at least $\boxed{3}$."), Some((Bound, "at least".into())));
        assert_eq!(boxed(r"it is not equal to \boxed{3}"), Some((Neg, "not".into())));
        assert_eq!(boxed(r"it can't be \boxed{3}"), Some((Neg, "can't".into())));
        assert_eq!(boxed(r"$x \ge \boxed{3}$"), Some((Bound, "≥".into())));
        assert_eq!(boxed(r"it is $\approx \boxed{3}$"), Some((Appr, "≈".into())));
        // A rounded value at the end of a chain (MATH-500 algebra/2626).
        assert_eq!(boxed(r"$24000 \cdot 1.01^{30} \approx \boxed{32348}$, to the nearest dollar"), None);
        assert_eq!(boxed(r"$7!\times 2!=\boxed{10,\!080}$."), None);
        assert_eq!(boxed(r"\boxed{3} or more"), Some((Bound, "or more".into())));
        assert_eq!(boxed(r"\boxed{3}\text{ or more}"), Some((Bound, "or more".into())));
        assert_eq!(boxed(r"\boxed{3} apples or fewer"), Some((Bound, "or fewer".into())));
        assert_eq!(boxed(r"\boxed{3} would be wrong"), Some((Retr, "wrong".into())));
        assert_eq!(boxed(r"\boxed{3} isn't right"), Some((Neg, "isn't".into())));
        assert_eq!(boxed(r"2 or \boxed{3}"), Some((QualifierKind::Alternative, "or".into())));
        assert_eq!(boxed(r"\boxed{3} or 4"), Some((QualifierKind::Alternative, "or".into())));
        // Ordinary phrasings.
        for ok in [
            r"The answer is \boxed{3}.",
            r"No more questions: \boxed{3}",
            r"There is no solution other than \boxed{3}.",
            r"Not 4, but \boxed{3}.",
            r"The number left over is \boxed{3}.",
            r"In total it adds up to \boxed{3}.",
            r"So the answer is $\boxed{3}$, not 4.",
            r"Hence $\boxed{12}$ points of intersection are indeed possible.",
            r"we get $\boxed{3}$ ways not counting rotations",
            r"There are $\boxed{3}$ or so",
        ] {
            let got = boxed(ok);
            if ok.ends_with("or so") {
                assert_eq!(got, Some((Appr, "or so".into())), "{ok}");
            } else {
                assert_eq!(got, None, "{ok}");
            }
        }
    }

    #[test]
    fn qualifiers_in_prose_answers() {
        assert_eq!(q("The answer is not 3", "not 3", Scope::Prose), Some((Neg, "not".into())));
        assert_eq!(q("#### about 5", "5", Scope::Prose), Some((Appr, "about".into())));
        assert_eq!(q("The answer is 3 or more.", "3 or more", Scope::Prose), Some((Bound, "or more".into())));
        assert_eq!(q("approx. 3", "3", Scope::Prose), Some((Appr, "approx".into())));
        assert_eq!(q("The answer is 3 apples", "3 apples", Scope::Prose), None);
        assert_eq!(q("so there are 3 left, no more questions", "3", Scope::Prose), None);
        assert_eq!(
            q("The answer is 3 because there are no more", "3 because there are no more", Scope::Prose),
            None
        );
        assert_eq!(q("because 40 - 30 = <<40-30=10>>10", "10", Scope::Prose), None);
        assert_eq!(q("The answer is (B)", "(B)", Scope::Prose), None);
    }

    #[test]
    fn choice_letters_and_gold_qualifiers() {
        let text = "The answer is not (B).";
        let at = text.find("not").unwrap_or(0);
        let got = find(text, at..text.len() - 1, Scope::Prose, "B", true);
        assert_eq!(got.map(|q| q.kind), Some(Neg));
        // A qualifier the gold itself has is part of the answer.
        let text = r"\boxed{\text{at least } 3}";
        assert!(find(text, 0..text.len(), Scope::Markup, r"\text{at least } 3", false).is_none());
        assert!(find(text, 0..text.len(), Scope::Markup, "3", false).is_some());
    }

    #[test]
    fn reasons_say_why() {
        let r = Qualifier { kind: Bound, phrase: "at least".into() }.reason();
        assert_eq!(r, "the answer is qualified by 'at least': a bound is not a value");
        assert!(Qualifier { kind: Neg, phrase: "not".into() }.reason().contains("negated by 'not'"));
    }

    #[test]
    fn no_panic_on_odd_spans() {
        let s = "é 3 ≠ \\text{";
        for a in 0..=s.len() {
            for b in a..=s.len() {
                let _ = find(s, a..b, Scope::Prose, "3", false);
                let _ = find(s, a..b, Scope::Markup, "≠", true);
            }
        }
    }
}
