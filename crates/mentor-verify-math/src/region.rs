//! The answer region: the extracted answer with the text that belongs to it, read whole.
//!
//! The parser reads the extracted answer itself (its words are checked by the caller against
//! [`crate::words`]). This module reads what surrounds it and still belongs to it:
//!
//! - **Touching a box or math span**: characters written against it change its value
//!   (`\boxed{3}000`, `\boxed{3},000`, `\boxed{3}.5`, `\boxed{3}^2`, `-\boxed{3}`, `1\boxed{3}`,
//!   `\boxed{3}k`, `2 \cdot \boxed{3}`), so they make it unread. A `\text{..}` group right
//!   after a box is part of the answer (`\boxed{3}\text{ cm}`): its words must be read.
//! - **An answer phrase**: the clause before "The answer is" (back to a clause break: "I think
//!   the answer is 3") and the rest of the sentence after the answer ("3, I think").
//! - **The last number**: its clause ("Perhaps 3").
//!
//! Every word there must be read ([`Lexicon::reads`]), and a `?` makes the answer a question.
//! [`later_answer`] finds a second, different answer stated after the region (a retraction,
//! or a box followed by "Final Answer: 4").

use std::ops::Range;

use mentor_core::AnswerSource;

use crate::extract::{self, Extracted};
use crate::prose::{self, Kind};
use crate::words::Lexicon;

/// How far back a clause before an answer phrase is read, in bytes.
const CLAUSE_BYTES: usize = 200;

/// Commands that make an arithmetic operation with a box beside them.
const OPERATOR_COMMANDS: &[&str] =
    &["cdot", "times", "div", "pm", "mp", "sqrt", "frac", "dfrac", "tfrac", "ast"];

/// What in the region is not read, for the feedback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unread(pub(crate) String);

impl Unread {
    /// The feedback line.
    pub(crate) fn reason(&self) -> String {
        format!(
            "the answer region contains {}, which is not a number, an expression, a known unit or a neutral \
             phrase: the answer is not read whole",
            self.0
        )
    }
}

fn unread(what: impl Into<String>) -> Option<Unread> {
    Some(Unread(what.into()))
}

/// The first thing in the region of the answer `ext` (read from `span` of `completion`) that is
/// not read, if any.
pub(crate) fn check(completion: &str, ext: &Extracted, span: &Range<usize>, lex: &Lexicon) -> Option<Unread> {
    match ext.source {
        AnswerSource::Boxed => touching(completion, span, true, lex),
        AnswerSource::LatexDelimiters => touching(completion, span, false, lex),
        AnswerSource::AnswerPhrase => {
            let before = clause_before_phrase(completion, span.start);
            let after = span.end..sentence_end(completion, span.end);
            words_in(completion, before, span, lex).or_else(|| words_in(completion, after, span, lex))
        }
        AnswerSource::LastNumber => {
            let start = clause_start(completion, span.start);
            let end = clause_end(completion, span.end);
            adjacent_words(completion, start..end, span, lex)
        }
        _ => None,
    }
}

/// A percent sign written right after a box (`\boxed{10}\%`): part of the answer.
pub(crate) fn percent_after(completion: &str, ext: &Extracted, span: &Range<usize>) -> bool {
    let post = completion.get(span.end..).unwrap_or("");
    ext.source == AnswerSource::Boxed && (post.starts_with("\\%") || post.starts_with('%'))
}

/// The end of the region: where text after the answer no longer belongs to it.
pub(crate) fn end(completion: &str, ext: &Extracted, span: &Range<usize>) -> usize {
    match ext.source {
        AnswerSource::AnswerPhrase => sentence_end(completion, span.end),
        AnswerSource::LastNumber => clause_end(completion, span.end),
        _ => span.end,
    }
}

/// Unread words and `?` in `range` of `completion`, outside the extracted `span`.
fn words_in(completion: &str, range: Range<usize>, span: &Range<usize>, lex: &Lexicon) -> Option<Unread> {
    if range.is_empty() {
        return None;
    }
    let toks: Vec<prose::Token> = prose::tokens(completion, range, span, false)
        .into_iter()
        .filter(|t| !(t.at.start >= span.start && t.at.end <= span.end))
        .collect();
    first_unread(&toks.iter().collect::<Vec<_>>(), lex)
}

/// The first unread word or `?` of `toks`, words read in their sequence ([`Lexicon::reads_at`]).
fn first_unread(toks: &[&prose::Token], lex: &Lexicon) -> Option<Unread> {
    let words: Vec<&str> = toks.iter().filter(|t| t.kind == Kind::Word).map(|t| t.text.as_str()).collect();
    let mut k = 0;
    for t in toks {
        match t.kind {
            Kind::Word => {
                if !lex.reads_at(&words, k) {
                    return unread(format!("the word `{}`", t.text));
                }
                k += 1;
            }
            Kind::Break if t.text == "?" => return unread("`?`"),
            _ => {}
        }
    }
    None
}

/// Unread words and `?` among the words right next to the extracted `span` within `range`: back
/// to the nearest math or relation token before it, on to the nearest one after it ("Perhaps
/// 3", but not "We add 4 and get 3 + 4 = 7").
fn adjacent_words(
    completion: &str,
    range: Range<usize>,
    span: &Range<usize>,
    lex: &Lexicon,
) -> Option<Unread> {
    let toks = prose::tokens(completion, range, span, false);
    let inside = |t: &prose::Token| t.at.start >= span.start && t.at.end <= span.end;
    let first = toks.iter().position(inside)?;
    let last = toks.iter().rposition(inside)?;
    let stop = |t: &&prose::Token| !matches!(t.kind, Kind::Math | Kind::Rel);
    let mut before: Vec<&prose::Token> = toks[..first].iter().rev().take_while(stop).collect();
    before.reverse();
    let after: Vec<&prose::Token> = toks[last + 1..].iter().take_while(stop).collect();
    first_unread(&before, lex).or_else(|| first_unread(&after, lex))
}

fn char_before(s: &str, i: usize) -> Option<char> {
    s.get(..i).and_then(|p| p.chars().next_back())
}

/// Characters touching a box or math span at `span` that change or hedge its value.
fn touching(s: &str, span: &Range<usize>, spaced: bool, lex: &Lexicon) -> Option<Unread> {
    let (Some(pre), Some(post)) = (s.get(..span.start), s.get(span.end..)) else { return None };
    // After.
    let mut c = post.chars();
    match (c.next(), c.next()) {
        (Some(a), _) if a.is_ascii_alphanumeric() => {
            return unread(format!("`{a}` written against the answer"))
        }
        (Some(a @ ('.' | ',')), Some(b)) if b.is_ascii_digit() => {
            return unread(format!("`{a}{b}` written against the answer"))
        }
        (Some(a @ ('_' | '!' | '(' | '[' | '\'')), _) => {
            return unread(format!("`{a}` written against the answer"))
        }
        (Some('^'), _) => {
            let degree =
                ["^\\circ", "^{\\circ}", "^{ \\circ }", "^\\degree"].iter().any(|d| post.starts_with(d));
            if !degree {
                return unread("`^` written against the answer");
            }
        }
        _ => {}
    }
    if spaced {
        let rest = post.trim_start_matches([' ', '\t']);
        let rest =
            rest.trim_start_matches("\\,").trim_start_matches("\\;").trim_start_matches("\\ ").trim_start();
        let degree = ["^\\circ", "^{\\circ}", "^{ \\circ }", "^\\degree"].iter().any(|d| rest.starts_with(d));
        if let Some(op) =
            rest.chars().next().filter(|c| matches!(c, '+' | '*' | '/' | '×' | '·' | '÷' | '^') && !degree)
        {
            return unread(format!("`{op}` after the answer"));
        }
        if let Some(r) = rest.strip_prefix('-') {
            if r.trim_start().starts_with(|c: char| c.is_ascii_digit() || c == '\\' || c == '(') {
                return unread("`-` after the answer");
            }
        }
        if let Some(cmd) = rest.strip_prefix('\\') {
            let name: String = cmd.chars().take_while(char::is_ascii_alphabetic).collect();
            if OPERATOR_COMMANDS.contains(&name.as_str()) {
                return unread(format!("`\\{name}` after the answer"));
            }
            if crate::prose::is_text_command(&name) {
                // `\boxed{3}\text{ cm}`: the group is part of the answer.
                let at = s.len() - cmd.len() - 1;
                let group_end = s[at..].find('}').map_or(s.len(), |k| at + k + 1);
                if let Some(u) = words_in(s, at..group_end, &(0..0), lex) {
                    return Some(u);
                }
            }
        }
    }
    // Before.
    match char_before(pre, pre.len()) {
        Some(a) if a.is_ascii_digit() => return unread(format!("`{a}` written against the answer")),
        Some(a) if a.is_ascii_alphabetic() => {
            let word_start = pre.trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
            let name = &pre[word_start..];
            let command = pre[..word_start].ends_with('\\');
            if !command || OPERATOR_COMMANDS.contains(&name) {
                return unread(format!("`{name}` written against the answer"));
            }
        }
        _ => {}
    }
    if spaced || pre.ends_with('-') {
        let t = pre.trim_end_matches([' ', '\t']);
        match char_before(t, t.len()) {
            Some(op @ ('+' | '*' | '/' | '×' | '·' | '÷' | '^' | '_')) => {
                return unread(format!("`{op}` before the answer"))
            }
            Some('-') => {
                // A bullet (`- \boxed{3}` at the start of a line) is layout; `-\boxed{3}` a sign.
                let line_start = t[..t.len() - 1].rfind('\n').map_or(0, |k| k + 1);
                let bullet = t[line_start..t.len() - 1].trim().is_empty() && t.len() < pre.len();
                if !bullet {
                    return unread("`-` before the answer");
                }
            }
            _ => {}
        }
        if spaced {
            let word_start = t.trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
            if t[..word_start].ends_with('\\') && OPERATOR_COMMANDS.contains(&&t[word_start..]) {
                return unread(format!("`\\{}` before the answer", &t[word_start..]));
            }
        }
    }
    None
}

/// Where the sentence holding byte `from` ends: a line break, or `.` `!` `?` before a space
/// or the end (the `?` itself is kept in the region).
fn sentence_end(s: &str, from: usize) -> usize {
    let b = s.as_bytes();
    let mut k = from.min(b.len());
    while k < b.len() {
        match b[k] {
            b'\n' => return k,
            b'?' => return k + 1,
            b'.' | b'!' if b.get(k + 1).is_none_or(|n| n.is_ascii_whitespace()) => return k,
            _ => {}
        }
        k += 1;
    }
    b.len()
}

fn is_clause_break(c: u8) -> bool {
    matches!(c, b',' | b';' | b':' | b'\n' | b'!' | b'?')
}

/// Where the clause holding `at` starts (after a clause break or a sentence end).
fn clause_start(s: &str, at: usize) -> usize {
    let b = s.as_bytes();
    let floor = at.saturating_sub(CLAUSE_BYTES);
    let mut k = at.min(b.len());
    while k > floor {
        let c = b[k - 1];
        if is_clause_break(c) || (c == b'.' && b.get(k).is_some_and(|n| n.is_ascii_whitespace())) {
            return k;
        }
        k -= 1;
    }
    while !s.is_char_boundary(k) {
        k += 1;
    }
    k
}

/// Where the clause holding `at` ends.
fn clause_end(s: &str, at: usize) -> usize {
    let b = s.as_bytes();
    let mut k = at.min(b.len());
    let ceil = (at + CLAUSE_BYTES).min(b.len());
    while k < ceil {
        let c = b[k];
        if is_clause_break(c) && c != b'?' {
            return k;
        }
        if c == b'?' {
            return k + 1;
        }
        if c == b'.' && b.get(k + 1).is_none_or(|n| n.is_ascii_whitespace()) {
            return k;
        }
        k += 1;
    }
    while !s.is_char_boundary(k) {
        k -= 1;
    }
    k
}

/// The clause before the answer phrase that ends right before `answer_at`: from its start to
/// the phrase.
fn clause_before_phrase(s: &str, answer_at: usize) -> Range<usize> {
    let Some(pre) = s.get(..answer_at) else { return 0..0 };
    let lower = pre.to_ascii_lowercase();
    let trimmed = lower.trim_end_matches([' ', ':', '\t', '*', '_', '$']);
    let Some(p) = extract::PHRASES.iter().filter(|p| trimmed.ends_with(*p)).max_by_key(|p| p.len()) else {
        return 0..0;
    };
    let phrase_at = trimmed.len() - p.len();
    clause_start(s, phrase_at)..phrase_at
}

/// A second answer stated after the region of `ext` (which ends at `region_end`), as text:
/// for prose answers (answer phrase, `####` line) the last number after it; for a box or math
/// span a later answer phrase or `####` line.
pub(crate) fn later_answer(completion: &str, ext: &Extracted, region_end: usize) -> Option<String> {
    let after = completion.get(region_end..)?;
    match ext.source {
        AnswerSource::AnswerPhrase | AnswerSource::Hashes => extract::last_number_text(after),
        AnswerSource::Boxed | AnswerSource::LatexDelimiters => extract::statement_text(after),
        _ => None,
    }
}
