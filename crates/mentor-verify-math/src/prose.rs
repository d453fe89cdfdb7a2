//! The words and symbols of a stretch of completion, for the qualifier check
//! ([`crate::qualifiers`]).
//!
//! A completion mixes prose, markdown and LaTeX. This scanner reduces a byte range of it to a
//! flat list of [`Token`]s: words (of prose or of a `\text{..}`-like group, lower-cased),
//! relation symbols in one canonical spelling (`\geq`, `>=` and `≥` are all `≥`), math (numbers,
//! variables, commands such as `\frac`, operators) and clause breaks (`,` `;` `:` `?` `!`, a
//! sentence-ending `.`, a line break, an arrow). Layout is dropped: spaces, `$`, markdown `*`
//! and `_`, brackets, `\boxed`, `\left`, spacing commands, and `~` (a LaTeX no-break space).
//!
//! It does not recurse and reads each byte a bounded number of times, so its cost is linear
//! in the range (brace matching for `\text{..}` groups shares one fixed byte budget).

use std::ops::Range;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A word, lower-cased (`not`, `isn't`, `cm`).
    Word,
    /// A relation symbol, canonical: `≠`, `≥`, `≤`, `>`, `<`, `≈`, `=`.
    Rel,
    /// Math: a number, a variable, a command (`\frac`, `\pi`), an operator.
    Math,
    /// A clause break.
    Break,
}

/// One token and where it is in the completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// What it is.
    pub(crate) kind: Kind,
    /// Its text: the lower-cased word, the canonical relation, or the source text.
    pub(crate) text: String,
    /// Its byte range in the completion.
    pub(crate) at: Range<usize>,
}

/// `\text{..}`-like commands: their group is prose.
const TEXT_COMMANDS: &[&str] = &[
    "text",
    "textbf",
    "textit",
    "textrm",
    "textsf",
    "texttt",
    "textnormal",
    "textup",
    "textsl",
    "mathrm",
    "mathbf",
    "mathit",
    "mathsf",
    "mathtt",
    "mathnormal",
    "mbox",
    "hbox",
    "emph",
    "underline",
    "boldsymbol",
    "bm",
    "operatorname",
];

/// Whether `\name` is a `\text{..}`-like command (its group is prose).
pub(crate) fn is_text_command(name: &str) -> bool {
    TEXT_COMMANDS.contains(&name)
}

/// Commands that are layout: skipped, their group (if any) read on as usual.
const LAYOUT_COMMANDS: &[&str] = &[
    "boxed",
    "fbox",
    "left",
    "right",
    "big",
    "Big",
    "bigg",
    "Bigg",
    "bigl",
    "bigr",
    "Bigl",
    "Bigr",
    "middle",
    "displaystyle",
    "textstyle",
    "quad",
    "qquad",
    "thinspace",
    "medspace",
    "thickspace",
    "enspace",
    "negthinspace",
    "hfill",
    "circ",
    "degree",
    "noindent",
    "par",
];

/// Commands whose group is skipped with them (`\hspace{1em}`).
const SKIPPED_GROUP_COMMANDS: &[&str] =
    &["hspace", "vspace", "phantom", "hphantom", "vphantom", "label", "tag"];

/// Arrows between statements (`\Rightarrow`, `\implies`): a clause break.
const ARROW_COMMANDS: &[&str] =
    &["to", "rightarrow", "Rightarrow", "implies", "Longrightarrow", "longrightarrow", "therefore", "iff"];

/// Words whose `.` is an abbreviation, not the end of a sentence (`approx. 3`).
const ABBREVIATIONS: &[&str] = &["approx", "ca", "appr", "est", "approx", "c", "apprx"];

/// How many bytes of brace matching one scan may do in all (keeps it linear).
const BRACE_BUDGET: usize = 64 << 10;

/// The canonical relation a command spells, if it is one.
fn relation_command(name: &str) -> Option<&'static str> {
    Some(match name {
        "ne" | "neq" | "not" | "nequiv" => "≠",
        "ge" | "geq" | "geqslant" | "geqq" | "gtrsim" | "gtrapprox" => "≥",
        "le" | "leq" | "leqslant" | "leqq" | "lesssim" | "lessapprox" => "≤",
        "gt" => ">",
        "lt" => "<",
        "approx" | "sim" | "simeq" | "thicksim" | "thickapprox" | "approxeq" | "backsim" | "cong"
        | "doteq" => "≈",
        _ => return None,
    })
}

/// The canonical relation a unicode character is, if it is one.
fn relation_char(c: char) -> Option<&'static str> {
    Some(match c {
        '≠' => "≠",
        '≥' | '⩾' | '≳' => "≥",
        '≤' | '⩽' | '≲' => "≤",
        '≈' | '≃' | '≅' | '∼' | '≊' => "≈",
        _ => return None,
    })
}

struct Scanner<'a> {
    s: &'a str,
    end: usize,
    span: &'a Range<usize>,
    letters_are_answers: bool,
    out: Vec<Token>,
    /// Where the `\text{..}`-like groups we are inside close, innermost last.
    text_close: Vec<usize>,
    brace_budget: usize,
}

/// Scans `region` of `s` into tokens. `span` is where the answer is (single letters inside it
/// are math; outside it `a` and `I` are words); `letters_are_answers` makes a standalone
/// capital `A`-`E` math wherever it is (multiple-choice answers).
pub(crate) fn tokens(
    s: &str,
    region: Range<usize>,
    span: &Range<usize>,
    letters_are_answers: bool,
) -> Vec<Token> {
    let mut start = region.start.min(s.len());
    while !s.is_char_boundary(start) {
        start += 1;
    }
    let mut end = region.end.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut sc = Scanner {
        s,
        end,
        span,
        letters_are_answers,
        out: Vec::new(),
        text_close: Vec::new(),
        brace_budget: BRACE_BUDGET,
    };
    sc.run(start);
    sc.out
}

impl Scanner<'_> {
    fn push(&mut self, kind: Kind, text: impl Into<String>, at: Range<usize>) {
        self.out.push(Token { kind, text: text.into(), at });
    }

    fn char_at(&self, i: usize) -> Option<char> {
        if i >= self.end {
            return None;
        }
        self.s.get(i..self.end).and_then(|r| r.chars().next())
    }

    fn run(&mut self, mut i: usize) {
        while i < self.end {
            if self.text_close.last() == Some(&i) {
                self.text_close.pop();
                i += 1;
                continue;
            }
            let Some(c) = self.char_at(i) else { break };
            let len = c.len_utf8();
            let next = self.char_at(i + len);
            i = match c {
                '\\' => self.command(i),
                c if c.is_alphabetic() => self.word(i),
                '0'..='9' => self.number(i),
                '.' if next.is_some_and(|n| n.is_ascii_digit()) => self.number(i),
                '.' => {
                    let abbreviation = self.out.last().is_some_and(|t| {
                        t.kind == Kind::Word && t.at.end == i && ABBREVIATIONS.contains(&t.text.as_str())
                    });
                    let ends_sentence = next
                        .is_none_or(|n| n.is_whitespace() || matches!(n, '$' | '*' | ')' | '"' | '}' | '\\'));
                    if ends_sentence && !abbreviation {
                        self.push(Kind::Break, ".", i..i + 1);
                    }
                    i + 1
                }
                ',' | ';' | ':' | '?' | '\n' => {
                    self.push(Kind::Break, c.to_string(), i..i + 1);
                    i + 1
                }
                '!' => {
                    // A factorial after a number or bracket (`2!=2`), `!=`, or an exclamation.
                    let factorial =
                        self.s[..i].ends_with(|p: char| p.is_ascii_digit() || matches!(p, ')' | '}'));
                    if !factorial && next == Some('=') {
                        self.push(Kind::Rel, "≠", i..i + 2);
                        i + 2
                    } else {
                        let kind = if factorial { Kind::Math } else { Kind::Break };
                        self.push(kind, "!", i..i + 1);
                        i + 1
                    }
                }
                '<' | '>' => self.angle(i, c, next),
                '=' => match next {
                    // `=>`: an arrow between statements.
                    Some('>') => {
                        self.push(Kind::Break, "=>", i..i + 2);
                        i + 2
                    }
                    Some('=') => {
                        self.push(Kind::Rel, "=", i..i + 2);
                        i + 2
                    }
                    _ => {
                        self.push(Kind::Rel, "=", i..i + 1);
                        i + 1
                    }
                },
                '-' if next == Some('>') => {
                    self.push(Kind::Break, "->", i..i + 2);
                    i + 2
                }
                '-' if next.is_some_and(|n| n.is_ascii_digit() || n == '\\' || n == '.' || n == '(') => {
                    self.push(Kind::Math, "-", i..i + 1);
                    i + 1
                }
                '+' | '/' | '^' | '|' | '%' | '×' | '÷' | '−' | '·' | '√' | '∞' => {
                    self.push(Kind::Math, c.to_string(), i..i + len);
                    i + len
                }
                c => {
                    if let Some(rel) = relation_char(c) {
                        self.push(Kind::Rel, rel, i..i + len);
                    } else if matches!(c, '→' | '⇒' | '⟹' | '∴') {
                        self.push(Kind::Break, c.to_string(), i..i + len);
                    }
                    // Anything else is layout: spaces, `$`, `*`, `_`, brackets, braces, quotes.
                    i + len
                }
            };
        }
    }

    /// `<`, `>`, `<=`, `>=`, and `<<`/`>>` (GSM8K calculator marks `<<2*3=6>>`: math).
    fn angle(&mut self, i: usize, c: char, next: Option<char>) -> usize {
        let (kind, text, len) = match (c, next) {
            ('<', Some('<')) | ('>', Some('>')) => (Kind::Math, if c == '<' { "<<" } else { ">>" }, 2),
            ('<', Some('=')) => (Kind::Rel, "≤", 2),
            ('>', Some('=')) => (Kind::Rel, "≥", 2),
            ('<', Some('-')) | ('<', Some('>')) => (Kind::Break, "<>", 2),
            ('<', _) => (Kind::Rel, "<", 1),
            _ => (Kind::Rel, ">", 1),
        };
        self.push(kind, text, i..i + len);
        i + len
    }

    fn word(&mut self, i: usize) -> usize {
        let mut j = i;
        let mut text = String::new();
        while let Some(c) = self.char_at(j) {
            if c.is_alphabetic() {
                text.extend(c.to_lowercase());
                j += c.len_utf8();
            } else if matches!(c, '\'' | '’')
                && self.char_at(j + c.len_utf8()).is_some_and(char::is_alphabetic)
            {
                text.push('\'');
                j += c.len_utf8();
            } else {
                break;
            }
        }
        let original = &self.s[i..j];
        let single = original.chars().count() == 1;
        let in_text = !self.text_close.is_empty();
        let in_span = i >= self.span.start && j <= self.span.end;
        let kind = if self.letters_are_answers && single && matches!(original, "A" | "B" | "C" | "D" | "E") {
            Kind::Math
        } else if single && !in_text && (in_span || !matches!(original, "a" | "A" | "i" | "I")) {
            // A lone letter in math mode is a variable.
            Kind::Math
        } else {
            Kind::Word
        };
        self.push(kind, text, i..j);
        j
    }

    fn number(&mut self, i: usize) -> usize {
        let b = self.s.as_bytes();
        let mut j = i;
        while j < self.end {
            let c = b[j];
            let joins =
                matches!(c, b'.' | b',') && b.get(j + 1).is_some_and(u8::is_ascii_digit) && j + 1 < self.end;
            if c.is_ascii_digit() || joins {
                j += 1;
            } else {
                break;
            }
        }
        self.push(Kind::Math, &self.s[i..j], i..j);
        j
    }

    /// A command at `i` (a backslash); returns where scanning goes on.
    fn command(&mut self, i: usize) -> usize {
        let b = self.s.as_bytes();
        let Some(c) = self.char_at(i + 1) else { return i + 1 };
        if !c.is_ascii_alphabetic() {
            let after = i + 1 + c.len_utf8();
            match c {
                '\\' => self.push(Kind::Break, "\\\\", i..after),
                '{' | '}' | '%' | '|' => self.push(Kind::Math, c.to_string(), i..after),
                // Spacing (`\,` `\;` `\ `), math delimiters (`\(` `\]`), escaped `$ # & _`.
                _ => {}
            }
            return after;
        }
        let mut j = i + 1;
        while j < self.end && b[j].is_ascii_alphabetic() {
            j += 1;
        }
        let name = &self.s[i + 1..j];
        if TEXT_COMMANDS.contains(&name) {
            let open = self.skip_spaces(j);
            if b.get(open) == Some(&b'{') {
                if let Some(close) = self.matching_brace(open) {
                    self.text_close.push(close);
                    return open + 1;
                }
            }
            return j;
        }
        if SKIPPED_GROUP_COMMANDS.contains(&name) {
            let open = self.skip_spaces(j);
            if b.get(open) == Some(&b'{') {
                if let Some(close) = self.matching_brace(open) {
                    return close + 1;
                }
            }
            return j;
        }
        if LAYOUT_COMMANDS.contains(&name) {
            return j;
        }
        if let Some(rel) = relation_command(name) {
            self.push(Kind::Rel, rel, i..j);
        } else if ARROW_COMMANDS.contains(&name) {
            self.push(Kind::Break, name, i..j);
        } else {
            self.push(Kind::Math, &self.s[i..j], i..j);
        }
        j
    }

    fn skip_spaces(&self, mut j: usize) -> usize {
        let b = self.s.as_bytes();
        while j < self.end && b[j] == b' ' {
            j += 1;
        }
        j
    }

    /// The `}` closing the `{` at `open`, within the scanned range and the brace budget.
    fn matching_brace(&mut self, open: usize) -> Option<usize> {
        let b = self.s.as_bytes();
        let mut depth = 0usize;
        let mut j = open;
        while j < self.end {
            if self.brace_budget == 0 {
                return None;
            }
            self.brace_budget -= 1;
            match b[j] {
                b'\\' => j += 1,
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Some(j);
                    }
                }
                _ => {}
            }
            j += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<(Kind, String)> {
        tokens(s, 0..s.len(), &(0..0), false).into_iter().map(|t| (t.kind, t.text)).collect()
    }

    fn words(s: &str) -> String {
        toks(s)
            .into_iter()
            .map(|(k, t)| match k {
                Kind::Word => t,
                Kind::Rel => format!("<{t}>"),
                Kind::Math => "#".into(),
                Kind::Break => "|".into(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn text_groups_are_words_and_layout_is_dropped() {
        assert_eq!(words(r"\boxed{\text{not } 3}"), "not #");
        assert_eq!(words(r"$\boxed{3 \textbf{ or more}}$."), "# or more |");
        assert_eq!(words(r"**Answer:** isn’t $x$"), "answer | isn't #");
        assert_eq!(words(r"\mathrm{approx.}\ 3"), "approx #");
        assert_eq!(words("about 1,000.5 cm"), "about # cm");
    }

    #[test]
    fn relations_are_canonical() {
        assert_eq!(words(r"x \geq 3, y >= 2, z ≥ 1"), "# <≥> # | # <≥> # | # <≥> #");
        assert_eq!(words(r"\ne \neq != ≠ \not= \approx ≈ \sim"), "<≠> <≠> <≠> <≠> <≠> <=> <≈> <≈> <≈>");
        assert_eq!(words(r"\lt 3 \gt 2 < >"), "<<> # <>> # <<> <>>");
        // GSM8K calculator marks are math, arrows break clauses.
        assert_eq!(words("<<2*3=6>>6"), "# # # <=> # # #");
        assert_eq!(words(r"x \Rightarrow 3 => 4"), "# | # | #");
    }

    #[test]
    fn letters_and_sentences() {
        // A lone letter outside a text group is a variable, except the words `a` and `I`.
        assert_eq!(words("I have a x"), "i have a #");
        assert_eq!(words(r"\text{x}"), "x");
        assert_eq!(words("3! is 6. Then"), "# # is # | then");
        assert_eq!(words("7! \\times 2!=5 and x != 4"), "# # # # # <=> # and # <≠> #");
        assert_eq!(words("e.g. 3"), "# # | #");
        let s = "The answer is not (B).";
        let t: Vec<_> = tokens(s, 0..s.len(), &(0..0), true).into_iter().map(|t| t.kind).collect();
        assert_eq!(t, [Kind::Word, Kind::Word, Kind::Word, Kind::Word, Kind::Math, Kind::Break]);
    }

    #[test]
    fn unclosed_groups_and_odd_bytes_do_not_panic() {
        for s in [r"\text{not ", r"\text", "\\", r"\hspace{", "é\\é", "3.", "<", "!", "\u{2260}"] {
            let _ = toks(s);
            for k in 0..=s.len() {
                let _ = tokens(s, k..s.len(), &(0..k), false);
                let _ = tokens(s, 0..k, &(k..s.len()), true);
            }
        }
    }
}
