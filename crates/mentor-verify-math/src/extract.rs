//! Finding the final answer in a free-form completion.
//!
//! Priority: the last `\boxed{..}`/`\fbox{..}` (brace-balanced, iteratively), a GSM8K
//! `#### x` line, the last answer phrase ("The answer is", "Final Answer:"), the last LaTeX
//! math span (`$..$`, `$$..$$`, `\(..\)`, `\[..\]`), the whole text when it is short and
//! parses as math, and finally the last number. Several boxed answers written side by side
//! (`\boxed{2}, \boxed{3}`) are returned together so the checker can treat them as a list.

use std::ops::Range;

use mentor_core::AnswerSource;

use crate::config::Config;

/// What was taken from a completion as its final answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The answer text (several side-by-side boxed answers are joined with `, `).
    pub text: String,
    /// Where it was found.
    pub source: AnswerSource,
    /// How many separate answers were written side by side (boxes); 1 normally.
    pub count: usize,
}

/// The answer phrases, lower case.
pub(crate) const PHRASES: &[&str] = &[
    "the final answer is",
    "final answer is",
    "the answer is",
    "answer is",
    "final answer:",
    "answer:",
    "the correct choice is",
    "the correct option is",
    "the correct answer is",
];

/// Finds all `\\boxed{..}` / `\\fbox{..}` groups as byte ranges (start, end, content start,
/// content end), in order of their end. One pass with a brace stack: linear in the input
/// whatever its nesting, and no content is copied.
fn boxed_spans(s: &str) -> Vec<(usize, usize, usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    // For each open brace: the start of the `\boxed` it opens, if it opens one.
    let mut stack: Vec<Option<usize>> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let name_len = if b[i..].starts_with(b"\\boxed") {
                    6
                } else if b[i..].starts_with(b"\\fbox") {
                    5
                } else {
                    // Skip the escaped character (`\{`, `\}`).
                    i += 2;
                    continue;
                };
                let mut j = i + name_len;
                while j < b.len() && b[j] == b' ' {
                    j += 1;
                }
                if j < b.len() && b[j] == b'{' {
                    stack.push(Some(i));
                    i = j + 1;
                    continue;
                }
                if j > i + name_len {
                    // `\boxed 5`: up to the next space or `$`.
                    let mut k = j;
                    while k < b.len() && !matches!(b[k], b' ' | b'$' | b'\n') {
                        k += 1;
                    }
                    if k > j {
                        out.push((i, k, j, k));
                    }
                    i = k.max(i + 1);
                    continue;
                }
                i += name_len;
                continue;
            }
            b'{' => stack.push(None),
            b'}' => {
                if let Some(Some(start)) = stack.pop() {
                    let open = start + s[start..].find('{').unwrap_or(0);
                    out.push((start, i + 1, open + 1, i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether the text between two boxes only joins them (`, `, ` and `, `$ $`).
fn trivial_gap(gap: &str) -> bool {
    if gap.len() > 40 {
        return false;
    }
    let cleaned = gap
        .replace("\\text{and}", " ")
        .replace("\\text{ and }", " ")
        .replace("\\text{or}", " ")
        .replace("\\quad", " ")
        .replace("\\,", " ")
        .replace("\\\\", " ");
    cleaned.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '$' | '.' | '&')).all(|w| {
        let w = w.to_ascii_lowercase();
        w.is_empty() || w == "and" || w == "or"
    })
}

fn boxed(s: &str) -> Option<(Extracted, Range<usize>)> {
    let spans = boxed_spans(s);
    let last = *spans.last()?;
    let content = |sp: &(usize, usize, usize, usize)| s.get(sp.2..sp.3).unwrap_or("").trim().to_string();
    let mut group = vec![content(&last)];
    let mut start = last.0;
    for sp in spans.iter().rev().skip(1) {
        if sp.1 > start {
            // Nested inside a later box.
            continue;
        }
        if trivial_gap(s.get(sp.1..start).unwrap_or("x")) {
            group.push(content(sp));
            start = sp.0;
        } else {
            break;
        }
    }
    group.reverse();
    group.dedup();
    let count = group.len();
    Some((Extracted { text: group.join(", "), source: AnswerSource::Boxed, count }, start..last.1))
}

/// Whether a line reads as prose (a word of four or more letters that is not a LaTeX command).
fn prose_like(line: &str) -> bool {
    let b = line.as_bytes();
    let mut run = 0;
    let mut command = false;
    for (k, &c) in b.iter().enumerate() {
        if c.is_ascii_alphabetic() {
            if run == 0 {
                command = k > 0 && b[k - 1] == b'\\';
            }
            run += 1;
            if run >= 4 && !command {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// How many `####` markers with something after them are examined, from the last one back.
const MAX_HASH_MARKERS: usize = 64;
/// How much of the line after a `####` marker is read (an answer is at most a few KiB).
const MAX_HASH_LINE: usize = 64 << 10;

/// The last GSM8K `#### x` line; markdown headings (`#### Step 2: add`) are not answers.
///
/// Linear: each marker reads at most [`MAX_HASH_LINE`] bytes, a run of `#` with nothing after
/// it is skipped in one step, and at most [`MAX_HASH_MARKERS`] others are examined (each used
/// to read the rest of its line: a megabyte of `####` took minutes).
fn hashes(s: &str) -> Option<(Extracted, Range<usize>)> {
    let mut end = s.len();
    let mut examined = 0;
    while let Some(at) = s[..end].rfind("####") {
        let mut stop = (at + 4 + MAX_HASH_LINE).min(s.len());
        while !s.is_char_boundary(stop) {
            stop -= 1;
        }
        let rest = s[at + 4..stop].lines().next().unwrap_or("").trim().trim_start_matches('#').trim();
        if rest.is_empty() {
            // Only `#` up to the end of the line: so is every marker in this run of `#`.
            end = s[..at].trim_end_matches('#').len();
            continue;
        }
        end = at;
        if rest.starts_with(|c: char| c.is_alphabetic()) || prose_like(rest) {
            examined += 1;
            if examined == MAX_HASH_MARKERS {
                return None;
            }
            continue;
        }
        let at = offset_in(s, rest);
        return Some((
            Extracted { text: rest.to_string(), source: AnswerSource::Hashes, count: 1 },
            at..at + rest.len(),
        ));
    }
    None
}

/// Whether `rest` (after a `,` or `;`) goes on with a list item: math, or `and`/`or` then math.
fn list_goes_on(rest: &str) -> bool {
    let r = rest.trim_start();
    let r = ["and ", "or "].iter().find_map(|w| r.strip_prefix(w)).map_or(r, str::trim_start);
    r.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '$' | '\\' | '(' | '[' | '{'))
        || (r.starts_with(['-', '.']) && r[1..].starts_with(|c: char| c.is_ascii_digit()))
}

/// The end of a sentence-like answer after a phrase: newline, `. `, `;`, or a `, ` that does not
/// go on with a list item (a prose list `3, 5, and 7` is read whole).
fn sentence_end(rest: &str) -> usize {
    let b = rest.as_bytes();
    let mut depth = 0i32;
    for (k, &c) in b.iter().enumerate() {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'\n' => return k,
            b'.' | b'?' | b'!' => {
                let next = b.get(k + 1).copied();
                if next.is_none() || next.is_some_and(|n| n.is_ascii_whitespace()) {
                    return k;
                }
            }
            b',' | b';' if depth <= 0 && b.get(k + 1) == Some(&b' ') && !list_goes_on(&rest[k + 1..]) => {
                return k
            }
            _ => {}
        }
    }
    b.len()
}

fn phrase(s: &str) -> Option<(Extracted, Range<usize>)> {
    let lower = s.to_ascii_lowercase();
    let mut best: Option<(usize, usize)> = None;
    for p in PHRASES {
        if let Some(at) = lower.rfind(p) {
            let end = at + p.len();
            if best.is_none_or(|(_, e)| end > e) {
                best = Some((at, end));
            }
        }
    }
    let (_, end) = best?;
    // Markdown emphasis around the phrase or the answer: `**Final Answer:** 42`, `is **42**.`
    let rest = s[end..].trim_start_matches([' ', ':', '\t', '*', '_']);
    // A math span right after the phrase is the answer.
    if let Some(span) = span_at_start(rest) {
        let at = offset_in(s, rest);
        return Some((
            Extracted { text: span.2, source: AnswerSource::AnswerPhrase, count: 1 },
            at..at + span.1,
        ));
    }
    let text = rest[..sentence_end(rest)].trim().trim_matches(['*', '_']).trim();
    if text.is_empty() || text.len() > 200 {
        return None;
    }
    let at = offset_in(s, text);
    Some((
        Extracted { text: text.to_string(), source: AnswerSource::AnswerPhrase, count: 1 },
        at..at + text.len(),
    ))
}

/// Math spans (start, end, content). A `$` directly followed by a digit whose "span" ends in
/// a space is a currency sign, not a delimiter (`$18 - $3 = $15`).
fn latex_spans(s: &str) -> Vec<(usize, usize, String)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // Once a closer is not found, no later opener of that kind can close: stop searching
    // (keeps the scan linear on inputs like a megabyte of `\(`).
    let (mut no_paren, mut no_brack, mut no_dollar) = (false, false, false);
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() && (b[i + 1] == b'(' || b[i + 1] == b'[') => {
                let paren = b[i + 1] == b'(';
                let close = if paren { "\\)" } else { "\\]" };
                let found =
                    if (paren && no_paren) || (!paren && no_brack) { None } else { s[i + 2..].find(close) };
                if found.is_none() {
                    if paren {
                        no_paren = true;
                    } else {
                        no_brack = true;
                    }
                }
                if let Some(rel) = found {
                    let e = i + 2 + rel;
                    out.push((i, e + 2, s[i + 2..e].to_string()));
                    i = e + 2;
                } else {
                    i += 2;
                }
            }
            b'\\' => i += 2,
            b'$' if no_dollar => i += 1,
            b'$' => {
                let double = b.get(i + 1) == Some(&b'$');
                let open = if double { 2 } else { 1 };
                let delim = if double { "$$" } else { "$" };
                let mut search = i + open;
                let mut found = None;
                while let Some(rel) = s.get(search..).and_then(|r| r.find(delim)) {
                    let e = search + rel;
                    if e > 0 && b[e - 1] == b'\\' {
                        search = e + 1;
                        continue;
                    }
                    found = Some(e);
                    break;
                }
                match found {
                    Some(e) => {
                        let content = &s[i + open..e];
                        let currency = !double
                            && content.starts_with(|c: char| c.is_ascii_digit())
                            && (content.ends_with(char::is_whitespace) || content.contains(". "));
                        if currency || content.trim().is_empty() {
                            i += 1;
                        } else {
                            out.push((i, e + open, content.to_string()));
                            i = e + open;
                        }
                    }
                    None => {
                        if !double {
                            no_dollar = true;
                        }
                        i += open;
                    }
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// Byte ranges of `s` that may state an answer in math notation: the contents of `$..$`,
/// `$$..$$`, `\(..\)` and `\[..\]` spans (as [`extract`] reads them: a `$` before a
/// number that ends in a space is a currency sign), `\boxed{..}` / `\fbox{..}` groups and
/// their contents, and `\frac{..}{..}` (`\dfrac`, `\tfrac`) and `\sqrt{..}` groups. Sorted,
/// without duplicates; linear in `s` up to a bounded brace search per fraction or root.
pub(crate) fn answer_spans(s: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for (start, end, content) in latex_spans(s) {
        // Symmetric delimiters: `$`, `$$`, `\(`, `\[` and their closers.
        let open = (end - start - content.len()) / 2;
        out.push(start + open..end - open);
    }
    for (start, end, inner_start, inner_end) in boxed_spans(s) {
        out.push(start..end);
        out.push(inner_start..inner_end);
    }
    let b = s.as_bytes();
    for cmd in ["\\frac{", "\\dfrac{", "\\tfrac{", "\\sqrt{"] {
        let groups = if cmd.contains("frac") { 2 } else { 1 };
        let mut from = 0;
        while let Some(start) = s[from..].find(cmd).map(|i| i + from) {
            let mut end = start + cmd.len();
            let mut ok = true;
            for g in 0..groups {
                if g > 0 {
                    if b.get(end) != Some(&b'{') {
                        ok = false;
                        break;
                    }
                    end += 1;
                }
                match matching_brace(b, end) {
                    Some(close) => end = close + 1,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                out.push(start..end);
            }
            from = start + cmd.len();
        }
    }
    out.retain(|r| r.start < r.end && s.is_char_boundary(r.start) && s.is_char_boundary(r.end));
    out.sort_unstable_by_key(|r| (r.start, r.end));
    out.dedup();
    out
}

/// Index of the `}` closing the group whose content starts at `start` (after its `{`), looking
/// at most 10,000 bytes ahead.
fn matching_brace(b: &[u8], start: usize) -> Option<usize> {
    let mut depth = 1usize;
    for (i, &c) in b.iter().enumerate().skip(start).take(10_000) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The math span that `s` starts with, if any (searching a bounded prefix only).
fn span_at_start(s: &str) -> Option<(usize, usize, String)> {
    if !(s.starts_with('$') || s.starts_with("\\(") || s.starts_with("\\[")) {
        return None;
    }
    let mut end = s.len().min(4096);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    latex_spans(&s[..end]).into_iter().next().filter(|(a, _, _)| *a == 0)
}

fn last_number(s: &str) -> Option<(Extracted, Range<usize>)> {
    let b = s.as_bytes();
    let mut k = b.len();
    // Scan backwards for the last digit, then widen to the whole literal.
    while k > 0 && !b[k - 1].is_ascii_digit() {
        k -= 1;
    }
    if k == 0 {
        return None;
    }
    let end = k;
    let mut start = end;
    while start > 0 {
        let c = b[start - 1];
        let digit_before = start >= 2 && b[start - 2].is_ascii_digit();
        if c.is_ascii_digit() || ((c == b'.' || c == b',') && digit_before) {
            start -= 1;
        } else {
            break;
        }
    }
    if start > 0 && b[start - 1] == b'-' {
        start -= 1;
    }
    // A percent sign right after the number belongs to it (`50%`, `50\%`).
    let after = &s[end..];
    let end = if after.starts_with('%') {
        end + 1
    } else if after.starts_with("\\%") {
        end + 2
    } else {
        end
    };
    let text = &s[start..end];
    Some((Extracted { text: text.to_string(), source: AnswerSource::LastNumber, count: 1 }, start..end))
}

/// The text of the last number in `s` (see [`extract`]'s last-number fallback).
pub(crate) fn last_number_text(s: &str) -> Option<String> {
    last_number(s).map(|(e, _)| e.text)
}

/// The text of the last `####` line or answer phrase in `s`.
pub(crate) fn statement_text(s: &str) -> Option<String> {
    hashes(s).or_else(|| phrase(s)).map(|(e, _)| e.text)
}

/// Whether a short completion is itself the answer (`x = 12`, `2/3.`, `12 cm`).
fn whole_text(s: &str, cfg: &Config) -> Option<(Extracted, Range<usize>)> {
    let t = s.trim().trim_end_matches(['.', ',', ';']).trim();
    if t.is_empty() || t.len() > 120 || t.contains('\n') {
        return None;
    }
    // Prose around a math span: the span is the answer, not the whole text.
    if let Some(sp) = latex_spans(t).first() {
        if sp.0 != 0 || sp.1 != t.len() {
            return None;
        }
    }
    let whole = || {
        let at = offset_in(s, t);
        Some((Extracted { text: t.to_string(), source: AnswerSource::WholeText, count: 1 }, at..at + t.len()))
    };
    match crate::parser::parse(t, cfg.max_depth, cfg.max_answer_bytes) {
        // Prose with a letter in it ("I am not sure") is not an answer; units after a number are.
        Ok(p)
            if !p.words_before_math
                && (matches!(&p.node, crate::ast::Node::Text(w) if w.split(' ').count() <= 3)
                    || !p.has_words
                    || t.bytes().any(|b| b.is_ascii_digit())) =>
        {
            whole()
        }
        // Numbers side by side (`3 4`, `x = 3 4`, `2 \text{ hours } 3`) are the answer, a
        // malformed one: taking the last number instead would pay `3 4` as 4. Prose that
        // mentions numbers ("We need 3 boxes of 6, so 18") still falls through to the last number.
        Err(crate::parser::ParseError::SideBySide(_))
            if !prose_like(t) || ["\\text", "\\mbox", "\\mathrm"].iter().any(|m| t.contains(m)) =>
        {
            whole()
        }
        _ => None,
    }
}

/// Finds the final answer of a completion. `None` when there is none.
pub fn extract(completion: &str, cfg: &Config) -> Option<Extracted> {
    extract_located(completion, cfg).map(|(e, _)| e)
}

/// [`extract`], with the byte range of `completion` the answer was read from: the boxes with
/// their `\boxed{..}` (first to last when side by side), the math span with its delimiters, or
/// the answer text itself. What the qualifier check reads the words around.
pub(crate) fn extract_located(completion: &str, cfg: &Config) -> Option<(Extracted, Range<usize>)> {
    let s = completion;
    if let Some(e) = boxed(s) {
        return Some(e);
    }
    if let Some(e) = hashes(s) {
        return Some(e);
    }
    if let Some(e) = phrase(s) {
        return Some(e);
    }
    if let Some(w) = whole_text(s, cfg) {
        // A completion that is a single math span is handled the same way.
        return Some(w);
    }
    if let Some((start, end, text)) = latex_spans(s).pop() {
        return Some((Extracted { text, source: AnswerSource::LatexDelimiters, count: 1 }, start..end));
    }
    if cfg.last_number_fallback {
        return last_number(s);
    }
    None
}

/// Where `inner`, a slice of `outer`, starts in it (0 if it is not one).
fn offset_in(outer: &str, inner: &str) -> usize {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    match i.checked_sub(o) {
        Some(d) if d + inner.len() <= outer.len() => d,
        _ => 0,
    }
}

/// The answer part of a gold string: the boxed content or `####` line if present, else all.
pub(crate) fn gold_text(gold: &str) -> String {
    if let Some((e, _)) = boxed(gold) {
        return e.text;
    }
    if let Some((e, _)) = hashes(gold) {
        return e.text;
    }
    gold.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(s: &str) -> Option<(String, AnswerSource, usize)> {
        extract(s, &Config::default()).map(|e| (e.text, e.source, e.count))
    }

    #[test]
    fn boxed_nested_and_last() {
        let e = ex("so $x = \\boxed{\\frac{1}{\\sqrt{2}}}$.").unwrap();
        assert_eq!(e, ("\\frac{1}{\\sqrt{2}}".into(), AnswerSource::Boxed, 1));
        let e = ex("first \\boxed{4}, but correcting it gives \\boxed{5}.").unwrap();
        assert_eq!(e.0, "5");
        let e = ex("the roots are \\boxed{2} and \\boxed{3}").unwrap();
        assert_eq!((e.0.as_str(), e.2), ("2, 3", 2));
        assert_eq!(ex("\\fbox{10}").unwrap().0, "10");
    }

    #[test]
    fn other_sources() {
        assert_eq!(ex("blah\n#### 1,234").unwrap(), ("1,234".into(), AnswerSource::Hashes, 1));
        assert_eq!(ex("#### Step 1: add\n3 + 4 = 7\n#### 7\n#### Check the result").unwrap().0, "7");
        assert_eq!(ex("#### Step 2\nThe answer is 9.").unwrap().1, AnswerSource::AnswerPhrase);
        assert_eq!(ex("The answer is 42, which is 6 times 7.").unwrap().0, "42");
        assert_eq!(ex("Final Answer: The final answer is $42$. I hope it is correct.").unwrap().0, "42");
        assert_eq!(ex("We need 3 boxes of 6, so 18.").unwrap(), ("18".into(), AnswerSource::LastNumber, 1));
        assert_eq!(ex("She pays $18 - $3 = $15 in total.").unwrap().0, "15");
        assert_eq!(ex("The probability is about 50% here.").unwrap().0, "50%");
        assert_eq!(ex("x = 12").unwrap(), ("x = 12".into(), AnswerSource::WholeText, 1));
        assert_eq!(ex("so we get \\(\\frac{1}{2}\\) in the end").unwrap().1, AnswerSource::LatexDelimiters);
        assert_eq!(ex("I don't know."), None);
        // Numbers side by side are a (malformed) whole answer, not a last number to fall back on.
        for s in ["3 4", "x = 3 4", "2 \\text{ hours } 3", "1 000 1"] {
            assert_eq!(ex(s).unwrap(), (s.into(), AnswerSource::WholeText, 1), "{s}");
        }
        assert_eq!(ex("We need 3 boxes of 6 so 18").unwrap().1, AnswerSource::LastNumber);
    }

    #[test]
    fn answer_spans_cover_latex_forms() {
        let text = r"so $x = \frac{1}{2}$ and \boxed{0.5}, i.e. 50%";
        let s: Vec<&str> = answer_spans(text).into_iter().map(|r| &text[r]).collect();
        for want in [r"\frac{1}{2}", "0.5", r"\boxed{0.5}", r"x = \frac{1}{2}"] {
            assert!(s.contains(&want), "{want} not in {s:?}");
        }
        let text = r"\(\sqrt{2}\) or \[\dfrac{3}{4}\] or $$7$$, not $18 - $3";
        let s: Vec<&str> = answer_spans(text).into_iter().map(|r| &text[r]).collect();
        // A root inside `\(..\)` is one range; `$18 - $` is a currency sign, not a span.
        assert_eq!(s, [r"\sqrt{2}", r"\dfrac{3}{4}", "7"]);
    }

    #[test]
    fn ten_thousand_nested_braces_do_not_overflow() {
        let s = format!("\\boxed{{{}1{}}}", "{".repeat(10_000), "}".repeat(10_000));
        let e = ex(&s).unwrap();
        assert_eq!(e.1, AnswerSource::Boxed);
    }
}
