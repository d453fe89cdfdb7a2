//! One check end to end: extract, parse, compare, and turn the result into feedback.

use mentor_core::{AnswerSource, Feedback, MathFeedback, MathOutcome, Verdict};

use crate::ast::Node;
use crate::compare::{self, Cmp};
use crate::config::Config;
use crate::extract::{self, Extracted};
use crate::parser::{self, ParseError};
use crate::qualifiers::{self, Qualifier, QualifierKind, Scope};

fn feedback(outcome: MathOutcome, gold: &str) -> MathFeedback {
    let mut f = MathFeedback::no_answer(gold);
    f.outcome = outcome;
    f
}

fn verdict(f: MathFeedback) -> Verdict {
    if f.outcome == MathOutcome::Correct {
        Verdict::pass(Feedback::Math(f))
    } else {
        Verdict::fail(Feedback::Math(f))
    }
}

/// The choice letter of a multiple-choice gold (`B`, `(B)`, `\text{(B)}`).
fn choice_letter(gold: &str) -> Option<char> {
    let core: String = gold
        .replace("\\text", "")
        .chars()
        .filter(|c| !matches!(c, '(' | ')' | '{' | '}' | '$' | ' '))
        .collect();
    let mut cs = core.chars();
    match (cs.next(), cs.next()) {
        (Some(c @ 'A'..='E'), None) => Some(c),
        _ => None,
    }
}

/// Standalone capital letters A-E in `s` (not part of a word).
fn standalone_letters(s: &str) -> Vec<char> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    for (k, &c) in chars.iter().enumerate() {
        if !('A'..='E').contains(&c) {
            continue;
        }
        let before = k.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(k + 1).copied();
        let isolated = |x: Option<char>| x.is_none_or(|x| !x.is_alphanumeric() && x != '\\');
        if isolated(before) && isolated(after) {
            out.push(c);
        }
    }
    out
}

/// Whether the answer read from `span` of `completion` is hedged (see [`qualifiers`]); answers
/// longer than the answer bound are left to the parser, which refuses them.
fn hedge(
    completion: &str,
    span: std::ops::Range<usize>,
    ext: &Extracted,
    gold_text: &str,
    letters: bool,
    cfg: &Config,
) -> Option<Qualifier> {
    if ext.text.len() > cfg.max_answer_bytes {
        return None;
    }
    let scope = match ext.source {
        AnswerSource::Boxed | AnswerSource::LatexDelimiters => Scope::Markup,
        _ => Scope::Prose,
    };
    qualifiers::find(completion, span, scope, gold_text, letters)
}

/// Feedback `f` turned into the verdict on a hedged answer: `multiple_answers` for an
/// alternative (`3 or \boxed{4}`), else `no_answer`, with the reason.
fn hedged(mut f: MathFeedback, q: &Qualifier) -> MathFeedback {
    f.outcome = if q.kind == QualifierKind::Alternative {
        MathOutcome::MultipleAnswers
    } else {
        MathOutcome::NoAnswer
    };
    f.detail = Some(q.reason());
    f
}

fn check_choice(letter: char, gold: &str, gold_text: &str, completion: &str, cfg: &Config) -> MathFeedback {
    let ext = extract::extract_located(completion, cfg);
    let (text, source) = match &ext {
        Some((e, _))
            if matches!(
                e.source,
                AnswerSource::Boxed | AnswerSource::AnswerPhrase | AnswerSource::Hashes
            ) =>
        {
            (e.text.clone(), e.source)
        }
        _ => (completion.trim().to_string(), AnswerSource::WholeText),
    };
    let mut f = feedback(MathOutcome::NoAnswer, gold);
    f.source = Some(source);
    f.extracted = Some(text.clone());
    // "The answer is not (B)": a hedged letter is no answer. The whole text (prose that names
    // letters) is not read for hedges.
    if let Some((e, span)) = ext.filter(|(e, _)| e.source != AnswerSource::WholeText && e.source == source) {
        if let Some(q) = hedge(completion, span, &e, gold_text, true, cfg) {
            return hedged(f, &q);
        }
    }
    let bare: String = text
        .replace("\\text", "")
        .chars()
        .filter(|c| !matches!(c, '(' | ')' | '{' | '}' | '$' | ' ' | '.' | ':' | '*'))
        .collect();
    let found = if bare.len() == 1 && bare.chars().all(|c| c.is_ascii_alphabetic()) {
        bare.chars().next().map(|c| c.to_ascii_uppercase())
    } else {
        let letters = standalone_letters(&text);
        let mut distinct = letters.clone();
        distinct.sort();
        distinct.dedup();
        if source != AnswerSource::WholeText && distinct.len() > 1 {
            f.outcome = MathOutcome::MultipleAnswers;
            f.detail = Some(format!("several choices given: {distinct:?}"));
            return f;
        }
        letters.last().copied()
    };
    match found {
        None => {
            f.extracted = None;
            f.source = None;
            f.detail = Some("no choice letter found".into());
        }
        Some(c) => {
            f.extracted = Some(c.to_string());
            f.parsed = Some(c.to_string());
            f.outcome = if c == letter { MathOutcome::Correct } else { MathOutcome::WrongValue };
        }
    }
    f
}

/// An integer written in English words, from -999 to 999 ("negative forty-two").
fn number_words(text: &str) -> Option<num_rational::BigRational> {
    use mentor_core::number_words::{TENS, UNITS};
    let mut words = text.split(|c: char| c.is_whitespace() || c == '-').filter(|w| !w.is_empty()).peekable();
    let neg = matches!(words.peek(), Some(&("negative" | "minus")));
    if neg {
        words.next();
    }
    let (mut total, mut any) = (0i64, false);
    for w in words {
        if let Some(u) = UNITS.iter().position(|x| *x == w) {
            total += u as i64;
        } else if let Some(t) = TENS.iter().position(|x| *x == w) {
            total += 20 + 10 * t as i64;
        } else if w == "hundred" && (1..10).contains(&total) {
            total *= 100;
        } else if w != "and" {
            return None;
        }
        any = true;
    }
    any.then(|| num_rational::BigRational::from_integer((if neg { -total } else { total }).into()))
}

/// Parses a gold answer; a gold that is not math is a text answer.
pub(crate) fn parse_gold(gold_text: &str, cfg: &Config) -> Result<Node, ParseError> {
    match parser::parse(gold_text, cfg.max_depth, cfg.max_answer_bytes) {
        Ok(p) => Ok(p.node),
        Err(ParseError::Syntax(_) | ParseError::SideBySide(_)) => {
            Ok(Node::Text(parser::normalise_text(gold_text)))
        }
        Err(e) => Err(e),
    }
}

fn refused(e: &ParseError, cfg: &Config) -> String {
    match e {
        ParseError::TooDeep => format!(
            "nested or chained more than {} levels deep",
            cfg.max_depth.min(parser::MAX_DEPTH_CEILING)
        ),
        ParseError::TooLong => format!("longer than {} bytes", cfg.max_answer_bytes),
        ParseError::Syntax(s) | ParseError::SideBySide(s) => s.clone(),
    }
}

/// Checks `completion` against `gold`, returning the full feedback.
pub(crate) fn check_feedback(gold: &str, completion: &str, cfg: &Config) -> MathFeedback {
    if completion.len() > cfg.max_completion_bytes {
        let mut f = feedback(MathOutcome::TooComplex, gold);
        f.detail = Some(format!(
            "completion of {} bytes exceeds the {}-byte bound",
            completion.len(),
            cfg.max_completion_bytes
        ));
        return f;
    }
    let gold_text = extract::gold_text(gold);
    if let Some(letter) = choice_letter(&gold_text) {
        return check_choice(letter, gold, &gold_text, completion, cfg);
    }
    let g = match parse_gold(&gold_text, cfg) {
        Ok(g) => g,
        Err(e) => {
            let mut f = feedback(MathOutcome::TooComplex, gold);
            f.detail = Some(format!("gold answer refused: {}", refused(&e, cfg)));
            return f;
        }
    };
    let Some((ext, span)) = extract::extract_located(completion, cfg) else {
        let mut f = feedback(MathOutcome::NoAnswer, gold);
        f.detail = Some("no boxed answer, answer phrase, math span or number found".into());
        return f;
    };
    let mut f = feedback(MathOutcome::Unparseable, gold);
    f.extracted = Some(ext.text.clone());
    f.source = Some(ext.source);
    // A negated, bounded, approximate or retracted value is not an answer.
    if let Some(q) = hedge(completion, span, &ext, &gold_text, false, cfg) {
        return hedged(f, &q);
    }
    let text = ext.text;
    let p = match parser::parse(&text, cfg.max_depth, cfg.max_answer_bytes) {
        Ok(p) => p.node,
        Err(ParseError::Syntax(_))
            if g.is_scalar() && number_words(&parser::normalise_text(&text)).is_some() =>
        {
            Node::Text(parser::normalise_text(&text))
        }
        Err(ParseError::SideBySide(why)) if !matches!(g, Node::Text(_)) => {
            f.outcome = MathOutcome::NoAnswer;
            f.detail = Some(why);
            return f;
        }
        Err(ParseError::Syntax(msg) | ParseError::SideBySide(msg)) => {
            if let Node::Text(gt) = &g {
                let pt = parser::normalise_text(&text);
                f.parsed = Some(pt.clone());
                f.outcome = if &pt == gt { MathOutcome::Correct } else { MathOutcome::WrongValue };
            } else {
                f.detail = Some(format!("could not parse the answer: {msg}"));
            }
            return f;
        }
        Err(e) => {
            f.outcome = MathOutcome::TooComplex;
            f.detail = Some(format!("answer refused: {}", refused(&e, cfg)));
            return f;
        }
    };
    // Number words ("seven", "negative three") where a number is expected.
    let p = match (&p, g.is_scalar()) {
        (Node::Text(t), true) => number_words(t).map_or(p, Node::num),
        _ => p,
    };
    f.parsed = Some(compare::pretty(&p, cfg));
    let result = match (&g, &p) {
        // A text gold against something that parsed as math: compare the words.
        (Node::Text(gt), q) if !matches!(q, Node::Text(_)) => {
            if &parser::normalise_text(&text) == gt {
                Cmp::Equal
            } else {
                Cmp::WrongType("text", q.kind())
            }
        }
        _ => compare::compare(&g, &p, cfg),
    };
    match result {
        Cmp::Equal => f.outcome = MathOutcome::Correct,
        Cmp::NotEqual(rel) => {
            f.outcome = MathOutcome::WrongValue;
            f.relation = rel;
        }
        Cmp::WrongType(gk, pk) => {
            f.outcome = MathOutcome::WrongType;
            f.detail = Some(format!("expected a {gk}, got a {pk}"));
        }
        Cmp::Multiple => {
            f.outcome = MathOutcome::MultipleAnswers;
            f.detail = Some("several candidate answers given where one is expected".into());
        }
        Cmp::TooComplex(why) => {
            f.outcome = MathOutcome::TooComplex;
            f.detail = Some(format!("refused to evaluate {why}"));
        }
    }
    f
}

/// Checks `completion` against `gold` and returns the verdict.
pub(crate) fn check(gold: &str, completion: &str, cfg: &Config) -> Verdict {
    verdict(check_feedback(gold, completion, cfg))
}

/// Whether two answer strings are equivalent.
pub(crate) fn equivalent(a: &str, b: &str, cfg: &Config) -> bool {
    let (ta, tb) = (extract::gold_text(a), extract::gold_text(b));
    if choice_letter(&ta).is_some() || choice_letter(&tb).is_some() {
        return choice_letter(&ta) == choice_letter(&tb);
    }
    let (Ok(na), Ok(nb)) = (parse_gold(&ta, cfg), parse_gold(&tb, cfg)) else {
        return false;
    };
    matches!(compare::compare(&na, &nb, cfg), Cmp::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mentor_core::MathRelation;

    fn fb(gold: &str, completion: &str) -> MathFeedback {
        check_feedback(gold, completion, &Config::default())
    }

    #[test]
    fn outcomes_and_evidence() {
        let f = fb("\\frac{14}{3}", "so \\boxed{4\\frac{2}{3}}");
        assert_eq!(f.outcome, MathOutcome::Correct);
        assert_eq!(
            (f.extracted.as_deref(), f.source, f.parsed.as_deref()),
            (Some("4\\frac{2}{3}"), Some(AnswerSource::Boxed), Some("14/3"))
        );
        let f = fb("42", "I have no idea.");
        assert_eq!((f.outcome, f.extracted), (MathOutcome::NoAnswer, None));
        let f = fb("42", "\\boxed{\\frac{1}{\\unknowncmd}}");
        assert_eq!(f.outcome, MathOutcome::Unparseable);
        assert!(f.detail.as_deref().is_some_and(|d| d.contains("unknowncmd")), "{f:?}");
        let f = fb("\\{1, 2\\}", "\\boxed{2}");
        assert_eq!(f.outcome, MathOutcome::WrongType);
        let f = fb("5", "\\boxed{4} or \\boxed{5}");
        assert_eq!(f.outcome, MathOutcome::MultipleAnswers);
    }

    #[test]
    fn relations_for_wrong_numbers() {
        let rel = |g: &str, c: &str| fb(g, c).relation;
        assert_eq!(rel("12", "\\boxed{-12}"), Some(MathRelation::SignFlipped));
        assert_eq!(rel("0.4", "\\boxed{40}"), Some(MathRelation::PowerOfTen { exponent: 2 }));
        assert_eq!(rel("40\\%", "\\boxed{4000}"), Some(MathRelation::Percentage));
        assert_eq!(rel("\\frac{2}{3}", "\\boxed{0.67}"), Some(MathRelation::Rounded { decimals: 2 }));
        assert_eq!(rel("\\frac{2}{3}", "\\boxed{\\frac{3}{2}}"), Some(MathRelation::Reciprocal));
        assert_eq!(rel("12", "\\boxed{13}"), None);
    }

    #[test]
    fn choices_text_and_number_words() {
        assert_eq!(fb("\\text{(B)}", "The answer is (B).").outcome, MathOutcome::Correct);
        assert_eq!(fb("B", "A looks right, but it is D.").outcome, MathOutcome::WrongValue);
        assert_eq!(fb("B", "\\boxed{B, C}").outcome, MathOutcome::MultipleAnswers);
        assert_eq!(
            fb("\\text{even}", "so the function is $\\boxed{\\text{even}}$").outcome,
            MathOutcome::Correct
        );
        assert_eq!(fb("\\text{even}", "\\boxed{\\text{odd}}").outcome, MathOutcome::WrongValue);
        assert_eq!(fb("-3", "The answer is negative three.").outcome, MathOutcome::Correct);
    }

    #[test]
    fn equivalence_is_answer_level() {
        let cfg = Config::default();
        assert!(equivalent("\\boxed{\\frac12}", "0.5", &cfg));
        assert!(equivalent("#### 1,000", "1000", &cfg));
        assert!(!equivalent("5", "4, 5", &cfg));
        assert!(!equivalent("5", "\\frac{", &cfg));
    }
}
