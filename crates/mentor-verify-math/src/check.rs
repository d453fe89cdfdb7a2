//! One check end to end: extract, parse, compare, and turn the result into feedback.

use mentor_core::{AnswerSource, Feedback, MathFeedback, MathOutcome, Verdict};

use crate::ast::Node;
use crate::compare::{self, Cmp};
use crate::config::Config;
use crate::extract::{self, Extracted};
use crate::parser::{self, ParseError};
use crate::qualifiers::{self, Qualifier, QualifierKind, Scope};
use crate::region;
use crate::words::Lexicon;

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
        if distinct.len() > 1 && (source != AnswerSource::WholeText || offered_as_alternatives(&text)) {
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

/// Whether the last two choice letters of `text` are offered side by side, joined only by
/// punctuation and `or`/`and`/`either` (`(A) or (B)`): a hedge between choices, not a choice.
fn offered_as_alternatives(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let at: Vec<usize> = (0..chars.len())
        .filter(|&k| {
            let isolated = |x: Option<&char>| x.is_none_or(|x| !x.is_alphanumeric() && *x != '\\');
            ('A'..='E').contains(&chars[k])
                && isolated(k.checked_sub(1).and_then(|j| chars.get(j)))
                && isolated(chars.get(k + 1))
        })
        .collect();
    let [.., a, b] = at[..] else { return false };
    let between: String = chars[a + 1..b].iter().collect();
    between
        .split(|c: char| !c.is_alphanumeric())
        .all(|w| w.is_empty() || matches!(w.to_ascii_lowercase().as_str(), "or" | "and" | "either"))
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

/// Whether `question` may ask for a percentage (`%`, "percent", "percentage"); without the
/// question the checker cannot tell, and `X\%` may equal `X` as before.
fn asks_percent(question: Option<&str>) -> bool {
    question.is_none_or(|q| q.contains('%') || q.to_ascii_lowercase().contains("percent"))
}

/// Checks `completion` against `gold`, returning the full feedback. `question`, when given,
/// supplies the words an answer may use to name what it counts ("42 pencils").
pub(crate) fn check_feedback(
    gold: &str,
    completion: &str,
    question: Option<&str>,
    cfg: &Config,
) -> MathFeedback {
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
    if let Some(q) = hedge(completion, span.clone(), &ext, &gold_text, false, cfg) {
        return hedged(f, &q);
    }
    // The whole region must be read: words around the answer, characters touching it. A text
    // gold is compared word for word instead.
    let text_gold = matches!(g, Node::Text(_));
    let unit_letters = !text_gold && g.symbols().is_empty();
    let lexicon = Lexicon::new(&gold_text, question, unit_letters);
    if !text_gold && ext.text.len() <= cfg.max_answer_bytes {
        if let Some(u) = region::check(completion, &ext, &span, &lexicon) {
            f.outcome = MathOutcome::NoAnswer;
            f.detail = Some(u.reason());
            return f;
        }
    }
    // `\boxed{10}\%`: the percent sign touching the box is read with it.
    let text = if region::percent_after(completion, &ext, &span) {
        format!("{}\\%", ext.text)
    } else {
        ext.text.clone()
    };
    let parsed = match parser::parse_answer(&text, cfg.max_depth, cfg.max_answer_bytes, unit_letters) {
        Ok(p) => p,
        Err(ParseError::Syntax(_))
            if g.is_scalar() && number_words(&parser::normalise_text(&text)).is_some() =>
        {
            parser::Parsed {
                node: Node::Text(parser::normalise_text(&text)),
                words_before_math: false,
                has_words: true,
                words: Vec::new(),
                stray: Vec::new(),
            }
        }
        Err(ParseError::SideBySide(why)) if !text_gold => {
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
    let p = parsed.node;
    // Every word and mark of the answer itself is read too (a text answer is judged as text).
    if !text_gold && !matches!(p, Node::Text(_)) {
        let unread = parsed.stray.first().map(|m| format!("`{m}`")).or_else(|| {
            let words: Vec<&str> = parsed.words.iter().map(String::as_str).collect();
            (0..words.len())
                .find(|&k| !lexicon.reads_at(&words, k))
                .map(|k| format!("the word `{}`", words[k]))
        });
        if let Some(what) = unread {
            f.outcome = MathOutcome::NoAnswer;
            f.detail = Some(region::Unread(what).reason());
            return f;
        }
    }
    // Number words ("seven", "negative three") where a number is expected.
    let p = match (&p, g.is_scalar()) {
        (Node::Text(t), true) => number_words(t).map_or(p, Node::num),
        _ => p,
    };
    f.parsed = Some(compare::pretty(&p, cfg));
    // A false equation (`2+2 = 3`) states no value.
    if let Some(why) = compare::false_chain(&p, cfg) {
        f.outcome = MathOutcome::WrongValue;
        f.detail = Some(why);
        return f;
    }
    let result = match (&g, &p) {
        // A text gold against something that parsed as math: compare the words.
        (Node::Text(gt), q) if !matches!(q, Node::Text(_)) => {
            if &parser::normalise_text(&text) == gt {
                Cmp::Equal
            } else {
                Cmp::WrongType("text", q.kind())
            }
        }
        _ => compare::compare_in(&g, &p, cfg, asks_percent(question)),
    };
    match result {
        Cmp::Equal => {
            // A second, different answer after this one (a retraction, a box then "Final
            // Answer: 4") leaves no single final answer.
            let end = region::end(completion, &ext, &span);
            if let Some(later) = region::later_answer(completion, &ext, end) {
                let later_node =
                    parser::parse_answer(&later, cfg.max_depth, cfg.max_answer_bytes, unit_letters)
                        .ok()
                        .map(|l| l.node)
                        .filter(|n| !matches!(n, Node::Text(_)));
                if let Some(l) = later_node {
                    if !matches!(compare::compare(&p, &l, cfg), Cmp::Equal) {
                        f.outcome = MathOutcome::MultipleAnswers;
                        f.detail = Some(format!(
                            "a different answer (`{later}`) is stated after the final answer: no single final answer"
                        ));
                        return f;
                    }
                }
            }
            f.outcome = MathOutcome::Correct;
        }
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
pub(crate) fn check(gold: &str, completion: &str, question: Option<&str>, cfg: &Config) -> Verdict {
    verdict(check_feedback(gold, completion, question, cfg))
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
        check_feedback(gold, completion, None, &Config::default())
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
