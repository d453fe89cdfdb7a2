//! The guard: no hint reaches the learner if it leaks the final answer, reproduces the
//! reference code, is empty, or is too long.
//!
//! Answer leaks are found by asking an injected [`AnswerEquivalence`] (normally the math
//! verifier) about every answer-like span of the hint — numbers, fractions, percentages, LaTeX
//! spans, `\boxed{}` contents, right-hand sides of `=` — and about the whole hint. Leaking
//! spans are redacted (replaced by `…`); a hint that still leaks after redaction is rejected.

use std::sync::Arc;

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

    fn equal(&self, gold: &str, candidate: &str) -> bool {
        let candidate = candidate.trim();
        if candidate.is_empty() {
            return false;
        }
        match &self.equivalence {
            Some(eq) => eq.equivalent(gold, candidate),
            None => {
                // Without a checker, only a bare number (optionally with `$` or `%`) can match.
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

    /// Whether any answer-like span of `text`, or the text as a whole, equals the gold.
    fn leaks(&self, gold: &str, text: &str) -> bool {
        self.equal(gold, text) || spans(text).iter().any(|(s, e)| self.equal(gold, &text[*s..*e]))
    }

    /// Replaces every leaking span by `…`; returns the new text and what was removed.
    fn redact(&self, gold: &str, text: &str) -> (String, Vec<String>) {
        let mut hits: Vec<(usize, usize)> =
            spans(text).into_iter().filter(|(s, e)| self.equal(gold, &text[*s..*e])).collect();
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

/// Byte spans of `text` that could state an answer: numbers (with a following `%`, and
/// `a/b` fractions), `$..$` / `\(..\)` / `\[..\]` spans, `\boxed{..}` and `\frac{..}{..}`
/// groups, and right-hand sides of `=` up to punctuation.
fn spans(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
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
    for (open, close) in [("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")] {
        let mut from = 0;
        while let Some(s) = text[from..].find(open).map(|i| i + from) {
            let inner = s + open.len();
            let Some(e) = text[inner..].find(close).map(|i| i + inner) else { break };
            out.push((inner, e));
            from = e + close.len();
            if out.len() > 4_000 {
                break;
            }
        }
    }
    for cmd in ["\\boxed{", "\\fbox{", "\\frac{", "\\dfrac{", "\\tfrac{", "\\sqrt{"] {
        let mut from = 0;
        while let Some(s) = text[from..].find(cmd).map(|i| i + from) {
            let mut end = s + cmd.len();
            // One brace group for boxes and roots, two for fractions.
            let groups = if cmd.contains("frac") { 2 } else { 1 };
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
                let inner_start = s + cmd.len();
                out.push((s, end));
                if cmd == "\\boxed{" || cmd == "\\fbox{" {
                    out.push((inner_start, end - 1));
                }
            }
            from = s + cmd.len();
        }
    }
    // Every whitespace-separated token, without trailing punctuation: catches expressions
    // such as `$5000*(2.5/100)` that the checker evaluates to the answer.
    let mut pos = 0;
    for token in text.split_inclusive(char::is_whitespace) {
        let start = pos;
        pos += token.len();
        let t = token.trim_end().trim_end_matches(['.', ',', ';', ':', '?', '!']);
        if !t.is_empty() {
            out.push((start, start + t.len()));
        }
        if out.len() > 12_000 {
            break;
        }
    }
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
    out
}

/// Index of the `}` closing the group whose content starts at `start` (after its `{`).
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

/// Share of the reference's non-trivial lines (≥ 8 characters after normalising spaces) that
/// appear in `shown`.
fn reference_overlap(reference: &str, shown: &str) -> f64 {
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
    fn spans_cover_latex_forms() {
        let text = r"so $x = \frac{1}{2}$ and \boxed{0.5}, i.e. 50%";
        let s: Vec<&str> = spans(text).iter().map(|(a, b)| &text[*a..*b]).collect();
        for want in [r"\frac{1}{2}", "0.5", r"\boxed{0.5}", "50%", r"x = \frac{1}{2}"] {
            assert!(s.contains(&want), "{want} not in {s:?}");
        }
    }
}
