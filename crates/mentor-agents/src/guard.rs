//! The guard: no hint reaches the learner if it leaks the final answer, reproduces the
//! reference code, is empty, or is too long.
//!
//! Answer leaks are found by asking an injected [`AnswerEquivalence`] (normally the math
//! verifier) about every answer-like span of the hint — numbers, fractions, percentages, LaTeX
//! spans, `\boxed{}` contents, right-hand sides of `=`, runs of up to eight words
//! (`3 / 4`, `1 234`, `x^2 - 1`), what follows a label glued to it (`Answer:√2`, `**18**`),
//! numbers written in words (`negative twelve`) — and about the whole hint. Leaking spans are
//! redacted (replaced by `…`); a hint that still leaks after redaction is rejected.

use std::sync::Arc;

use mentor_core::number_words::{TENS, UNITS};
use mentor_core::{AnswerEquivalence, GuardRejection, Hint, Payload, Task};

use crate::rules::numbers::numbers;

/// Limits of the guard.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardConfig {
    /// Longest hint accepted, in characters (text plus solution prefix).
    pub max_chars: usize,
    /// Largest share of the reference code's non-trivial lines a code hint may contain.
    pub max_reference_overlap: f64,
    /// Whether leaking spans are redacted (`true`) or the whole hint rejected (`false`).
    pub redact: bool,
}

impl Default for GuardConfig {
    fn default() -> Self {
        Self { max_chars: 2000, max_reference_overlap: 0.5, redact: true }
    }
}

/// What the guard decided.
#[derive(Debug, Clone, PartialEq)]
pub enum GuardOutcome {
    /// The hint is safe as written.
    Accepted(Hint),
    /// Leaking spans were replaced by `…`; the reasons say what was removed.
    Redacted {
        /// The redacted hint.
        hint: Hint,
        /// What was redacted and why.
        reasons: Vec<String>,
    },
    /// The hint must not be shown.
    Rejected(GuardRejection),
}

/// Checks hints against a task's privileged data.
#[derive(Clone)]
pub struct Guard {
    config: GuardConfig,
    equivalence: Option<Arc<dyn AnswerEquivalence>>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("config", &self.config)
            .field("equivalence", &self.equivalence.is_some())
            .finish()
    }
}

impl Guard {
    /// A guard that checks math answers with `equivalence`.
    pub fn new(config: GuardConfig, equivalence: Arc<dyn AnswerEquivalence>) -> Self {
        Self { config, equivalence: Some(equivalence) }
    }

    /// A guard without an answer checker: math hints are compared with the gold answer as
    /// plain numbers only. Prefer [`Guard::new`] with the math verifier.
    pub fn numeric_only(config: GuardConfig) -> Self {
        Self { config, equivalence: None }
    }

    /// Checks (and possibly redacts) `hint` for `task`.
    pub fn check(&self, task: &Task, hint: Hint) -> GuardOutcome {
        let reject = |hint: &Hint, reason: String| {
            GuardOutcome::Rejected(GuardRejection { text: hint.text.clone(), reason })
        };
        if hint.text.trim().is_empty() {
            return reject(&hint, "empty hint".into());
        }
        let len =
            hint.text.chars().count() + hint.solution_prefix.as_deref().map_or(0, |p| p.chars().count());
        if len > self.config.max_chars {
            return reject(&hint, format!("too long: {len} characters (limit {})", self.config.max_chars));
        }
        match &task.payload {
            Payload::Math(m) => self.check_math(&m.answer, hint),
            Payload::Code(c) => match &c.reference_solution {
                Some(reference) => {
                    let shown = format!("{}\n{}", hint.text, hint.solution_prefix.as_deref().unwrap_or(""));
                    let overlap = reference_overlap(reference, &shown);
                    if overlap > self.config.max_reference_overlap {
                        reject(
                            &hint,
                            format!(
                                "reproduces the reference solution ({:.0}% of its lines, limit {:.0}%)",
                                overlap * 100.0,
                                self.config.max_reference_overlap * 100.0
                            ),
                        )
                    } else {
                        GuardOutcome::Accepted(hint)
                    }
                }
                None => GuardOutcome::Accepted(hint),
            },
        }
    }

    fn check_math(&self, gold: &str, mut hint: Hint) -> GuardOutcome {
        let gold = &Gold::new(gold);
        let mut reasons = Vec::new();
        for _ in 0..4 {
            let (text, r1) = self.redact(gold, &hint.text);
            let (prefix, r2) = match &hint.solution_prefix {
                Some(p) => {
                    let (p, r) = self.redact(gold, p);
                    (Some(p), r)
                }
                None => (None, Vec::new()),
            };
            if r1.is_empty() && r2.is_empty() {
                break;
            }
            if !self.config.redact {
                let reason = format!(
                    "leaks the final answer: {}",
                    r1.into_iter().chain(r2).collect::<Vec<_>>().join("; ")
                );
                return GuardOutcome::Rejected(GuardRejection { text: hint.text, reason });
            }
            reasons.extend(r1.into_iter().chain(r2));
            hint.text = text;
            hint.solution_prefix = prefix;
        }
        let still = self.leaks(gold, &hint.text)
            || hint.solution_prefix.as_deref().is_some_and(|p| self.leaks(gold, p));
        if still {
            return GuardOutcome::Rejected(GuardRejection {
                text: hint.text,
                reason: "leaks the final answer even after redaction".into(),
            });
        }
        if hint.text.chars().all(|c| c == '…' || !c.is_alphanumeric()) {
            return GuardOutcome::Rejected(GuardRejection {
                text: hint.text,
                reason: "nothing left after redaction".into(),
            });
        }
        if reasons.is_empty() {
            GuardOutcome::Accepted(hint)
        } else {
            GuardOutcome::Redacted { hint, reasons }
        }
    }

    fn equal(&self, gold: &Gold, candidate: &str) -> bool {
        let candidate = candidate.trim();
        if candidate.is_empty() {
            return false;
        }
        // A number in words is also asked about in digits: the checker reads `negative twelve`
        // as -12 in an answer, but its answer-to-answer equivalence does not.
        let spelled = spelled_number(candidate);
        let gold = gold.text;
        match &self.equivalence {
            Some(eq) => eq.equivalent(gold, candidate) || spelled.is_some_and(|n| eq.equivalent(gold, &n)),
            None => {
                // Without a checker, only a bare number (optionally with `$` or `%`) can match.
                let candidate = spelled.as_deref().unwrap_or(candidate);
                let bare = candidate.trim_matches(|c: char| c == '$' || c == '%' || c.is_whitespace());
                let g = numbers(gold);
                let c = numbers(bare);
                g.len() == 1
                    && c.len() == 1
                    && c[0].start == 0
                    && c[0].end == bare.len()
                    && crate::rules::numbers::same(g[0].value, c[0].value)
            }
        }
    }

    /// The answer-like spans of `text` (see [`spans`]), with the checker's notation.
    fn spans(&self, gold: &Gold, text: &str) -> Vec<(usize, usize)> {
        let notation = self.equivalence.as_ref().map(|eq| eq.answer_spans(text)).unwrap_or_default();
        spans(text, gold.words, notation)
    }

    /// Whether any answer-like span of `text`, or the text as a whole, equals the gold.
    fn leaks(&self, gold: &Gold, text: &str) -> bool {
        self.equal(gold, text) || self.spans(gold, text).iter().any(|(s, e)| self.equal(gold, &text[*s..*e]))
    }

    /// Replaces every leaking span by `…`; returns the new text and what was removed.
    fn redact(&self, gold: &Gold, text: &str) -> (String, Vec<String>) {
        let mut hits: Vec<(usize, usize)> =
            self.spans(gold, text).into_iter().filter(|(s, e)| self.equal(gold, &text[*s..*e])).collect();
        if hits.is_empty() && self.equal(gold, text) {
            hits.push((0, text.len()));
        }
        if hits.is_empty() {
            return (text.to_string(), Vec::new());
        }
        // Narrowest first, then skip spans overlapping one already taken: `= 18 dollars`
        // loses `18`, not the words around it. Wider forms (`\frac{1}{2}`) are taken when no
        // narrower span inside them leaks; the caller re-checks after redaction.
        hits.sort_by_key(|&(s, e)| (e - s, s));
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (s, e) in hits {
            if !merged.iter().any(|&(ms, me)| s < me && ms < e) {
                merged.push((s, e));
            }
        }
        merged.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut reasons = Vec::new();
        let mut pos = 0;
        for (s, e) in merged {
            out.push_str(&text[pos..s]);
            out.push('…');
            reasons.push(format!("redacted `{}` (equals the final answer)", &text[s..e]));
            pos = e;
        }
        out.push_str(&text[pos..]);
        (out, reasons)
    }
}

/// The gold answer, with what the span search needs to know about it.
struct Gold<'a> {
    text: &'a str,
    /// Whether the gold contains words (`\text{no solution}`): then runs of words may state it
    /// and windows may start and end on any word (see [`windows`]).
    words: bool,
}

impl<'a> Gold<'a> {
    fn new(text: &'a str) -> Self {
        let b = text.as_bytes();
        // A run of three or more letters that is not a LaTeX command (`\frac`, `\sqrt`).
        let mut words = false;
        let mut k = 0;
        while k < b.len() {
            if b[k].is_ascii_alphabetic() {
                let start = k;
                while k < b.len() && b[k].is_ascii_alphabetic() {
                    k += 1;
                }
                if k - start >= 3 && (start == 0 || b[start - 1] != b'\\') {
                    words = true;
                }
            } else {
                k += 1;
            }
        }
        Self { text, words }
    }
}

/// Byte spans of `text` that could state an answer: numbers (with a following `%`, and
/// `a/b` fractions), right-hand sides of `=` up to punctuation, [`windows`] of words, and the
/// answer checker's own spans `notation` (for math: LaTeX spans, `\boxed{..}`, fractions and
/// roots, from [`AnswerEquivalence::answer_spans`]). `words`: the gold contains words (see
/// [`Gold`]).
fn spans(text: &str, words: bool, notation: Vec<std::ops::Range<usize>>) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out: Vec<(usize, usize)> = notation.into_iter().map(|r| (r.start, r.end)).collect();
    let nums = numbers(text);
    for (i, n) in nums.iter().enumerate() {
        let mut end = n.end;
        if b.get(end) == Some(&b'%') {
            end += 1;
        } else if text[end..].starts_with("\\%") {
            end += 2;
        }
        out.push((n.start, end));
        // a/b fraction
        if b.get(n.end) == Some(&b'/') {
            if let Some(next) = nums.get(i + 1) {
                if next.start == n.end + 1 {
                    out.push((n.start, next.end));
                }
            }
        }
    }
    windows(text, words, &mut out);
    let mut from = 0;
    while let Some(eq) = text[from..].find('=').map(|i| i + from) {
        let rest = &text[eq + 1..];
        let stop = rest.find(['\n', ',', ';', '?', '!']).unwrap_or(rest.len());
        let stop = rest[..stop].find(". ").unwrap_or(stop);
        let rhs = rest[..stop].trim_end_matches('.');
        out.push((eq + 1, eq + 1 + rhs.len()));
        from = eq + 1;
        if out.len() > 8_000 {
            break;
        }
    }
    out.retain(|(s, e)| s < e && text.is_char_boundary(*s) && text.is_char_boundary(*e));
    out.sort_unstable();
    out.dedup();
    out
}

/// Most whitespace-separated tokens in one window of [`windows`]: enough for the spaced forms
/// a hint writes an answer in (`1.234 \times 10^3`, `(x - 1)(x + 1)`, `2 \sqrt{2} + 3`).
const WINDOW_TOKENS: usize = 8;

/// Characters that glue a label to the answer after it (`Answer:18`, `x=18`, `x≈√2`).
const LABEL: [char; 4] = [':', '=', '≈', '~'];
/// Characters that wrap an answer (`**18**`, `` `18` ``, `"18"`, `(B)`).
const WRAP_OPEN: [char; 7] = ['*', '_', '`', '"', '\'', '(', '['];
const WRAP_CLOSE: [char; 7] = ['*', '_', '`', '"', '\'', ')', ']'];
/// Sentence punctuation after an answer.
const PUNCT: [char; 6] = ['.', ',', ';', ':', '?', '!'];

/// Spans over runs of 1 to [`WINDOW_TOKENS`] whitespace-separated tokens: single tokens catch
/// expressions written without spaces (`$5000*(2.5/100)`), longer runs the same with spaces
/// (`3 / 4`, `1 234`, `- 12`, `x^2 - 1`, `negative twelve`). A run may start at its first
/// token, after a wrapping `*`/`` ` ``/`"`/`(`, or after a label glued to the answer
/// (`Answer:√2`, `x≈√2`), and end at its last token with or without trailing punctuation and
/// wrapping. A run of two or more tokens must start and end on a token that could be part of
/// an answer — not a word of two or more letters, unless it is a number word or one of
/// [`MATH_WORDS`] — except when the gold itself has words (`words`).
fn windows(text: &str, words: bool, out: &mut Vec<(usize, usize)>) {
    let mut tokens = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                tokens.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    // Where a token's answer may start: at the token, after each of its first few wrapping
    // characters, and the same after each of its first few labels (`Answer:3:4` is read from
    // `3:4` as well as from `4`).
    let starts = |(s, e): (usize, usize)| {
        let mut v = Vec::new();
        let labels = text[s..e].match_indices(LABEL).take(4).map(|(at, l)| s + at + l.len());
        for from in std::iter::once(s).chain(labels) {
            let mut p = from;
            v.push(p);
            for c in text[from..e].chars().take_while(|c| WRAP_OPEN.contains(c)).take(4) {
                p += c.len_utf8();
                v.push(p);
            }
        }
        v.retain(|&p| p < e);
        v.sort_unstable();
        v.dedup();
        v
    };
    // Where it may end: at the token's end and before each of its last few punctuation or
    // wrapping characters (`**sqrt(2)**.` ends after `)`, `(B).` after `B`).
    let ends = |(s, e): (usize, usize)| {
        let mut v = vec![e];
        let mut p = e;
        for c in text[s..e].chars().rev().take_while(|c| PUNCT.contains(c) || WRAP_CLOSE.contains(c)).take(6)
        {
            p -= c.len_utf8();
            v.push(p);
        }
        v.retain(|&p| p > s);
        v
    };
    let answer_edge: Vec<bool> = tokens
        .iter()
        .map(|&(s, e)| {
            let core = text[s..e]
                .trim_start_matches(|c| WRAP_OPEN.contains(&c) || LABEL.contains(&c))
                .trim_end_matches(|c| PUNCT.contains(&c) || WRAP_CLOSE.contains(&c))
                .to_ascii_lowercase();
            words
                || core.chars().count() < 2
                || !core.chars().all(|c| c.is_ascii_alphabetic())
                || is_number_word(&core)
                || MATH_WORDS.contains(&core.as_str())
        })
        .collect();
    for i in 0..tokens.len() {
        let firsts = starts(tokens[i]);
        for j in i..tokens.len().min(i + WINDOW_TOKENS) {
            if j > i && !(answer_edge[i] && answer_edge[j]) {
                continue;
            }
            for &e in &ends(tokens[j]) {
                out.extend(firsts.iter().filter(|&&s| s < e).map(|&s| (s, e)));
            }
        }
        if out.len() > 60_000 {
            break;
        }
    }
}

/// Words that may begin or end a spaced answer besides single letters and number words
/// (`25 percent`, `2 pi`, `sin x`).
const MATH_WORDS: &[&str] = &[
    "percent", "cent", "pi", "ln", "sin", "cos", "tan", "cot", "sec", "csc", "log", "exp", "sqrt", "arcsin",
    "arccos", "arctan", "sinh", "cosh", "tanh", "infinity", "inf",
];

/// Whether `w` (lower case) is a word a spelled number is made of.
fn is_number_word(w: &str) -> bool {
    w.split('-').all(|p| {
        UNITS.contains(&p)
            || TENS.contains(&p)
            || matches!(p, "hundred" | "thousand" | "million" | "negative" | "minus")
    })
}

/// A number written in words (`negative forty-two`, `two hundred and five`, `one million`,
/// `twenty-five percent`), in digits (`-42`, `205`, `1000000`, `25\%`); `None` for anything
/// else. Case-insensitive; integers below a billion.
fn spelled_number(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let mut words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == '-')
        .map(|w| w.trim_matches(|c| PUNCT.contains(&c)))
        .filter(|w| !w.is_empty())
        .collect();
    if words.len() > 16 {
        return None;
    }
    let percent = match words.as_slice() {
        [.., "per", "cent"] => {
            words.truncate(words.len() - 2);
            true
        }
        [.., "percent"] => {
            words.pop();
            true
        }
        _ => false,
    };
    let neg = matches!(words.first(), Some(&("negative" | "minus")));
    if neg {
        words.remove(0);
    }
    let (mut total, mut current, mut any) = (0i64, 0i64, false);
    for w in words {
        if let Some(u) = UNITS.iter().position(|x| *x == w) {
            current += u as i64;
        } else if let Some(t) = TENS.iter().position(|x| *x == w) {
            current += 20 + 10 * t as i64;
        } else if w == "hundred" {
            current = current.max(1) * 100;
        } else if w == "thousand" || w == "million" {
            let scale = if w == "thousand" { 1_000 } else { 1_000_000 };
            total += current.max(1) * scale;
            current = 0;
        } else if w != "and" || !any {
            return None;
        }
        any = true;
        if total + current >= 1_000_000_000 {
            return None;
        }
    }
    if !any {
        return None;
    }
    let n = total + current;
    let n = if neg { -n } else { n };
    Some(if percent { format!("{n}\\%") } else { n.to_string() })
}

/// Share of the reference's non-trivial lines (≥ 8 characters after normalising spaces, not
/// comments) that appear as lines in `shown`: the measure [`GuardConfig::max_reference_overlap`]
/// bounds.
pub fn reference_overlap(reference: &str, shown: &str) -> f64 {
    let norm = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown_lines: std::collections::HashSet<String> = shown.lines().map(norm).collect();
    let lines: Vec<String> =
        reference.lines().map(norm).filter(|l| l.len() >= 8 && !l.starts_with('#')).collect();
    if lines.is_empty() {
        return 0.0;
    }
    lines.iter().filter(|l| shown_lines.contains(*l)).count() as f64 / lines.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use mentor_core::{CodeHarness, CodePayload, HintLevel, HintSource, TaskMeta};

    fn hint(text: &str) -> Hint {
        Hint { level: HintLevel::NUDGE, text: text.into(), solution_prefix: None, source: HintSource::Mentor }
    }

    #[test]
    fn rejects_empty_and_long() {
        let g = Guard::numeric_only(GuardConfig { max_chars: 10, ..Default::default() });
        let t = Task::math("t", "q", "7");
        assert!(matches!(g.check(&t, hint("  ")), GuardOutcome::Rejected(r) if r.reason == "empty hint"));
        assert!(
            matches!(g.check(&t, hint("a very long hint")), GuardOutcome::Rejected(r) if r.reason.starts_with("too long"))
        );
    }

    #[test]
    fn redacts_numeric_leaks() {
        let g = Guard::numeric_only(GuardConfig::default());
        let t = Task::math("t", "q", "18");
        let out = g.check(&t, hint("She makes 9 * 2 = 18 dollars; check step 2."));
        let GuardOutcome::Redacted { hint: redacted, reasons } = out else { panic!("{out:?}") };
        assert_eq!(redacted.text, "She makes 9 * 2 = … dollars; check step 2.");
        assert_eq!(reasons.len(), 1);
        assert!(matches!(g.check(&t, hint("Check each step.")), GuardOutcome::Accepted(_)));
        assert!(matches!(g.check(&t, hint("18")), GuardOutcome::Rejected(_)));
    }

    #[test]
    fn code_hints_may_not_reproduce_the_reference() {
        let reference = "    total = 0\n    for x in xs:\n        total += x * x\n    return total\n";
        let t = Task {
            id: "c".into(),
            prompt: vec![],
            payload: Payload::Code(CodePayload {
                harness: CodeHarness::Mbpp { tests: vec![], setup_code: String::new(), imports: vec![] },
                reference_solution: Some(reference.into()),
            }),
            meta: TaskMeta::default(),
        };
        let g = Guard::numeric_only(GuardConfig::default());
        let leak = hint(&format!("Try this:\n{reference}"));
        assert!(matches!(g.check(&t, leak), GuardOutcome::Rejected(r) if r.reason.contains("reference")));
        let partial = hint("Start with:\n    total = 0\nthen loop.");
        assert!(matches!(g.check(&t, partial), GuardOutcome::Accepted(_)));
    }

    #[test]
    fn spelled_numbers_read_as_digits() {
        for (words, digits) in [
            ("seven", "7"),
            ("Negative Twelve", "-12"),
            ("minus twelve.", "-12"),
            ("forty-two", "42"),
            ("two hundred and five", "205"),
            ("one thousand two hundred thirty-four", "1234"),
            ("one million", "1000000"),
            ("twenty-five percent", "25\\%"),
            ("five per cent", "5\\%"),
        ] {
            assert_eq!(spelled_number(words).as_deref(), Some(digits), "{words}");
        }
        for not in ["", "negative", "and five", "seven dollars", "seventh", "12", "one or two"] {
            assert_eq!(spelled_number(not), None, "{not}");
        }
    }

    #[test]
    fn windows_span_spaced_and_glued_answers() {
        let text = "Check: x = 3 / 4 so Answer:√2 or **18**. Then (B).";
        let s: Vec<&str> = spans(text, false, Vec::new()).iter().map(|(a, b)| &text[*a..*b]).collect();
        for want in ["3 / 4", "x = 3 / 4", "√2", "18", "**18**", "B", "(B)"] {
            assert!(s.contains(&want), "{want} not in {s:?}");
        }
        // Runs start and end on answer-like tokens only, unless the gold has words.
        assert!(!s.contains(&"so Answer:√2 or"), "{s:?}");
        assert!(!s.contains(&"Then (B)"));
        let w: Vec<&str> = spans(text, true, Vec::new()).iter().map(|(a, b)| &text[*a..*b]).collect();
        assert!(w.contains(&"Then (B)"), "{w:?}");
    }

    #[test]
    fn spans_take_the_checker_notation_besides_numbers() {
        let text = r"so $x = \frac{1}{2}$ and \boxed{0.5}, i.e. 50%";
        let frac = text.find(r"\frac").unwrap();
        let notation: Vec<std::ops::Range<usize>> = std::iter::once(frac..frac + 11).collect();
        let s: Vec<&str> = spans(text, false, notation).iter().map(|(a, b)| &text[*a..*b]).collect();
        for want in [r"\frac{1}{2}", "0.5", "50%"] {
            assert!(s.contains(&want), "{want} not in {s:?}");
        }
        // Out-of-range or split-character spans from a checker are dropped, not sliced.
        let bad: Vec<std::ops::Range<usize>> = [1..2, 0..40].into_iter().collect();
        assert!(spans("é1", false, bad).iter().all(|(a, b)| "é1".get(*a..*b).is_some()));
    }
}
