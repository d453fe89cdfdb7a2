//! Tokens of one answer written in LaTeX or plain text.
//!
//! The lexer does the normalisation that is easier on characters than on trees: unicode
//! operators, spacing commands, `\left`/`\right`, thousands separators (`1,000`, `1\,000`,
//! `3{,}600`, `1~000`; see [`crate::digit_groups`]: digits after a separator that are not a
//! thousands group stay a separate number, which the parser refuses), repeating decimals (`0.\overline{3}`), scientific notation (`1.5e-3`), degree
//! marks, dollar signs, and `\text{..}` (words become [`Tok::Word`], anything else is lexed as
//! math). It never recurses, so its stack use does not depend on the input.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Zero};

use crate::{digit_groups, words};

/// A function applied to one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Sin,
    Cos,
    Tan,
    Sec,
    Csc,
    Cot,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Ln,
    Log,
    Exp,
    Sqrt,
    Abs,
}

impl Func {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Func::Sin => "sin",
            Func::Cos => "cos",
            Func::Tan => "tan",
            Func::Sec => "sec",
            Func::Csc => "csc",
            Func::Cot => "cot",
            Func::Asin => "asin",
            Func::Acos => "acos",
            Func::Atan => "atan",
            Func::Sinh => "sinh",
            Func::Cosh => "cosh",
            Func::Tanh => "tanh",
            Func::Ln => "ln",
            Func::Log => "log",
            Func::Exp => "exp",
            Func::Sqrt => "sqrt",
            Func::Abs => "abs",
        }
    }

    fn from_name(s: &str) -> Option<Func> {
        Some(match s {
            "sin" => Func::Sin,
            "cos" => Func::Cos,
            "tan" => Func::Tan,
            "sec" => Func::Sec,
            "csc" => Func::Csc,
            "cot" => Func::Cot,
            "arcsin" | "asin" => Func::Asin,
            "arccos" | "acos" => Func::Acos,
            "arctan" | "atan" => Func::Atan,
            "sinh" => Func::Sinh,
            "cosh" => Func::Cosh,
            "tanh" => Func::Tanh,
            "ln" => Func::Ln,
            "log" | "lg" => Func::Log,
            "exp" => Func::Exp,
            "sqrt" => Func::Sqrt,
            "abs" => Func::Abs,
            _ => return None,
        })
    }
}

/// A relation symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rel {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Rel {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            Rel::Eq => "=",
            Rel::Ne => "!=",
            Rel::Lt => "<",
            Rel::Le => "<=",
            Rel::Gt => ">",
            Rel::Ge => ">=",
        }
    }
}

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// A number literal; `decimals` is the number of digits written after the point.
    Num {
        value: BigRational,
        decimals: u32,
        integer: bool,
    },
    /// A variable: one letter or a Greek letter name.
    Sym(String),
    Pi,
    E,
    I,
    Inf,
    EmptySet,
    Func(Func),
    Frac,
    Sqrt,
    Binom,
    Plus,
    Minus,
    Star,
    Slash,
    Caret,
    Under,
    Bang,
    Percent,
    Comma,
    PlusMinus,
    MinusPlus,
    Rel(Rel),
    LParen,
    RParen,
    LBrack,
    RBrack,
    LBrace,
    RBrace,
    LSet,
    RSet,
    Bar,
    Amp,
    RowSep,
    Cup,
    Begin(String),
    End(String),
    /// Prose or a unit (`cm`, `\text{ of the pie}`); dropped next to math, an answer on its own.
    Word(String),
}

/// Why an answer could not be lexed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LexError {
    Unknown(String),
}

/// Two-letter English words that are prose, not a product of two variables.
const ENGLISH_2: &[&str] = &[
    "is", "am", "an", "at", "to", "of", "it", "be", "we", "as", "so", "if", "on", "by", "my", "no", "do",
    "he", "me", "us",
];

const UNIT_WORDS_2: &[&str] = &[
    "cm", "mm", "km", "ft", "in", "yd", "kg", "lb", "oz", "mi", "hr", "ml", "mg", "kw", "mb", "gb", "pm",
    "am",
];

fn is_greek(name: &str) -> bool {
    matches!(
        name,
        "alpha"
            | "beta"
            | "gamma"
            | "delta"
            | "epsilon"
            | "varepsilon"
            | "zeta"
            | "eta"
            | "theta"
            | "vartheta"
            | "iota"
            | "kappa"
            | "lambda"
            | "mu"
            | "nu"
            | "xi"
            | "rho"
            | "sigma"
            | "tau"
            | "upsilon"
            | "phi"
            | "varphi"
            | "chi"
            | "psi"
            | "omega"
            | "Gamma"
            | "Delta"
            | "Theta"
            | "Lambda"
            | "Sigma"
            | "Phi"
            | "Psi"
            | "Omega"
    )
}

/// Replaces unicode math characters by their ASCII/LaTeX spelling.
pub(crate) fn normalise_unicode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\u{2212}' | '\u{2013}' | '\u{2014}' | '\u{2012}' => out.push('-'),
            '\u{00d7}' | '\u{22c5}' | '\u{00b7}' | '\u{2219}' => out.push('*'),
            '\u{00f7}' => out.push('/'),
            '\u{03c0}' => out.push_str("\\pi "),
            '\u{221e}' => out.push_str("\\infty "),
            '\u{221a}' => out.push_str("\\sqrt "),
            '\u{2264}' => out.push_str("\\le "),
            '\u{2265}' => out.push_str("\\ge "),
            '\u{2260}' => out.push_str("\\ne "),
            '\u{00b1}' => out.push_str("\\pm "),
            '\u{222a}' => out.push_str("\\cup "),
            '\u{2205}' => out.push_str("\\emptyset "),
            '\u{00b0}' => out.push(' '),
            // No-break, figure, punctuation, thin, hair and narrow no-break spaces.
            '\u{00a0}' | '\u{2007}' | '\u{2008}' | '\u{2009}' | '\u{200a}' | '\u{202f}' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
    out: Vec<Tok>,
    /// Marks the lexer skips but cannot read as part of a value: `?`, a `~` before a number.
    stray: Vec<String>,
    /// Closing braces of `\textbf{..}`-like groups that must not become tokens, by depth.
    skip_close: Vec<usize>,
    brace_depth: usize,
}

/// Lexes one answer. The input is expected to have gone through [`normalise_unicode`].
#[cfg(test)]
pub(crate) fn lex(src: &str) -> Result<Vec<Tok>, LexError> {
    lex_marked(src).map(|(toks, _)| toks)
}

/// [`lex`], with the stray marks it skipped: `?` and a `~` right before a number (`3?`, `~3`),
/// which belong to no value and make the answer unread.
pub(crate) fn lex_marked(src: &str) -> Result<(Vec<Tok>, Vec<String>), LexError> {
    let mut lx = Lexer {
        s: src.as_bytes(),
        i: 0,
        out: Vec::new(),
        stray: Vec::new(),
        skip_close: Vec::new(),
        brace_depth: 0,
    };
    lx.run()?;
    Ok((lx.out, lx.stray))
}

/// Whether `t` ends a value a multiplier word can scale (`3 thousand`, `(2+1) dozen`).
fn ends_value(t: Option<&Tok>) -> bool {
    matches!(t, Some(Tok::Num { .. } | Tok::RParen | Tok::RBrace | Tok::RBrack))
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<u8> {
        self.s.get(self.i + k).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn rest(&self) -> &[u8] {
        &self.s[self.i.min(self.s.len())..]
    }

    /// Reads a balanced `{..}` group starting at `self.i` (which must be `{`), iteratively.
    fn read_group(&mut self) -> Option<String> {
        if self.peek() != Some(b'{') {
            return None;
        }
        let start = self.i + 1;
        let mut depth = 0usize;
        let mut j = self.i;
        while j < self.s.len() {
            match self.s[j] {
                b'\\' => j += 1,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.i = j + 1;
                        return Some(String::from_utf8_lossy(&self.s[start..j]).into_owned());
                    }
                }
                _ => {}
            }
            j += 1;
        }
        None
    }

    fn run(&mut self) -> Result<(), LexError> {
        while let Some(c) = self.peek() {
            match c {
                b'~' => {
                    // A no-break space, but `~3` (not a digit group: the number lexer takes
                    // those) is the tilde of an approximation.
                    let prev_digit = self.i > 0 && self.s[self.i - 1].is_ascii_digit();
                    let next = self.peek_at(1);
                    let next_num = next.is_some_and(|b| b.is_ascii_digit())
                        || (matches!(next, Some(b'.' | b'-' | b'+'))
                            && self.peek_at(2).is_some_and(|b| b.is_ascii_digit()));
                    if next_num && !prev_digit {
                        self.stray.push("~".into());
                    }
                    self.i += 1;
                }
                b' ' | b'\t' | b'\n' | b'\r' | b'$' => self.i += 1,
                b'0'..=b'9' => self.number()?,
                b'.' if matches!(self.peek_at(1), Some(b'0'..=b'9')) => self.number()?,
                // A period that does not start a decimal is punctuation (`\boxed{104.}`).
                b'.' => self.i += 1,
                b'a'..=b'z' | b'A'..=b'Z' => self.letters(),
                b'\\' => self.command()?,
                b'{' => {
                    // `{,}` is a thousands separator in `3{,}600`.
                    if self.rest().starts_with(b"{,}") {
                        self.i += 3;
                        continue;
                    }
                    self.brace_depth += 1;
                    self.i += 1;
                    self.out.push(Tok::LBrace);
                }
                b'}' => {
                    self.i += 1;
                    if self.skip_close.last() == Some(&self.brace_depth) {
                        self.skip_close.pop();
                    } else {
                        self.out.push(Tok::RBrace);
                    }
                    self.brace_depth = self.brace_depth.saturating_sub(1);
                }
                _ => {
                    self.i += 1;
                    let t = match c {
                        b'+' => Tok::Plus,
                        b'-' => Tok::Minus,
                        b'*' => Tok::Star,
                        b'/' | b':' => Tok::Slash,
                        b'^' => {
                            if self.degree_mark() {
                                continue;
                            }
                            Tok::Caret
                        }
                        b'_' => Tok::Under,
                        b'!' => {
                            if self.peek() == Some(b'=') {
                                self.i += 1;
                                Tok::Rel(Rel::Ne)
                            } else {
                                Tok::Bang
                            }
                        }
                        b'%' => Tok::Percent,
                        b',' => Tok::Comma,
                        b';' => Tok::Comma,
                        b'=' => Tok::Rel(Rel::Eq),
                        b'<' => {
                            if self.peek() == Some(b'=') {
                                self.i += 1;
                                Tok::Rel(Rel::Le)
                            } else {
                                Tok::Rel(Rel::Lt)
                            }
                        }
                        b'>' => {
                            if self.peek() == Some(b'=') {
                                self.i += 1;
                                Tok::Rel(Rel::Ge)
                            } else {
                                Tok::Rel(Rel::Gt)
                            }
                        }
                        b'(' => Tok::LParen,
                        b')' => Tok::RParen,
                        b'[' => Tok::LBrack,
                        b']' => Tok::RBrack,
                        b'|' => Tok::Bar,
                        b'&' => Tok::Amp,
                        b'?' => {
                            self.stray.push("?".into());
                            continue;
                        }
                        b'\'' | b'"' | b'`' => continue,
                        _ => {
                            // Non-ASCII letters and symbols we do not know.
                            let ch = String::from_utf8_lossy(&self.s[self.i - 1..self.i]).into_owned();
                            return Err(LexError::Unknown(ch));
                        }
                    };
                    self.out.push(t);
                }
            }
        }
        Ok(())
    }

    /// After a `^`: consumes `\circ` / `{\circ}` (a degree mark) and says whether it did.
    fn degree_mark(&mut self) -> bool {
        let save = self.i;
        self.skip_ws();
        for pat in [&b"{\\circ}"[..], b"\\circ", b"{ \\circ }", b"{\\circ }", b"\\degree"] {
            if self.rest().starts_with(pat) {
                self.i += pat.len();
                return true;
            }
        }
        self.i = save;
        false
    }

    fn digits(&mut self) -> String {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    fn number(&mut self) -> Result<(), LexError> {
        let mut int = self.digits();
        // `1\!2`: a negative thin space between digits only closes a gap.
        while self.rest().starts_with(b"\\!") && self.s.get(self.i + 2).is_some_and(u8::is_ascii_digit) {
            self.i += 2;
            int.push_str(&self.digits());
        }
        // Thousands separators: `1,000,000`, `1 000 000`, `1\,000`, `1{,}000`, `1~000` (see
        // `digit_groups`). Digits after a separator that do not form a group are left as the
        // next number, which the parser refuses as side by side (`2 3`, `1\,000\,1`).
        if !int.is_empty() && int.len() <= 3 {
            while let Some(sep) = digit_groups::separator_len(self.rest()) {
                if !digit_groups::group_at(&self.rest()[sep..]) {
                    break;
                }
                self.i += sep;
                int.push_str(&self.digits());
            }
        }
        let mut frac = String::new();
        let mut point = false;
        if self.peek() == Some(b'.') && matches!(self.peek_at(1), Some(b'0'..=b'9')) {
            self.i += 1;
            point = true;
            frac = self.digits();
        } else if self.peek() == Some(b'.') && self.rest()[1..].starts_with(b"\\overline") {
            self.i += 1;
            point = true;
        }
        let mut value = decimal_value(&int, &frac);
        let mut decimals = frac.len() as u32;
        // A repeating block: `0.\overline{3}`, `0.1\overline{6}`.
        if point && self.rest().starts_with(b"\\overline") {
            let save = self.i;
            self.i += "\\overline".len();
            self.skip_ws();
            match self.read_group() {
                Some(rep)
                    if !rep.is_empty() && rep.len() <= 50 && rep.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    // x = int.frac + rep / (10^len(frac) * (10^len(rep) - 1))
                    let rep_v = BigRational::from_integer(rep.parse::<BigInt>().unwrap_or_default());
                    let scale = BigInt::from(10u32).pow(frac.len() as u32)
                        * (BigInt::from(10u32).pow(rep.len() as u32) - BigInt::one());
                    value += rep_v / BigRational::from_integer(scale);
                    decimals = u32::MAX;
                }
                _ => self.i = save,
            }
        }
        // Scientific notation `1.5e-3`, `2E5` (not `2e` alone, which is 2 times e).
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let save = self.i;
            self.i += 1;
            let neg = match self.peek() {
                Some(b'-') => {
                    self.i += 1;
                    true
                }
                Some(b'+') => {
                    self.i += 1;
                    false
                }
                _ => false,
            };
            let exp = self.digits();
            let followed_by_letter = self.peek().is_some_and(|c| c.is_ascii_alphabetic());
            match exp.parse::<u32>() {
                Ok(e) if !exp.is_empty() && e <= 400 && !followed_by_letter => {
                    let p = BigRational::from_integer(BigInt::from(10u32).pow(e));
                    value = if neg { value / p } else { value * p };
                    decimals = 0;
                }
                _ => self.i = save,
            }
        }
        self.out.push(Tok::Num { value, decimals, integer: !point });
        Ok(())
    }

    fn letters(&mut self) {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.i += 1;
        }
        let word = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        let lower = word.to_ascii_lowercase();
        if let Some(f) = Func::from_name(&lower) {
            self.out.push(Tok::Func(f));
            return;
        }
        if lower == "and" && ends_value(self.out.last()) {
            if let Some((len, n, d)) = self.and_fraction() {
                self.i += len;
                self.out.push(Tok::Plus);
                self.out.push(fraction(n, d));
                return;
            }
        }
        match lower.as_str() {
            "pi" => return self.out.push(Tok::Pi),
            "inf" | "infty" | "infinity" => return self.out.push(Tok::Inf),
            "and" | "or" => return self.out.push(Tok::Comma),
            _ => {}
        }
        if word.len() >= 3
            || (word.len() == 2
                && (UNIT_WORDS_2.contains(&lower.as_str()) || ENGLISH_2.contains(&lower.as_str())))
        {
            return self.push_word(word);
        }
        for ch in word.chars() {
            self.out.push(match ch {
                'e' => Tok::E,
                'i' => Tok::I,
                _ => Tok::Sym(ch.to_string()),
            });
        }
    }

    /// After `and`: the bytes of ` a half` (` one quarter`, ...) and the fraction they add.
    fn and_fraction(&self) -> Option<(usize, u32, u32)> {
        let rest = std::str::from_utf8(self.rest()).ok()?;
        words::AND_FRACTIONS.iter().find_map(|(ws, n, d)| {
            let mut r = rest;
            for w in *ws {
                let t = r.trim_start();
                let head = t.get(..w.len())?;
                if t.len() == r.len() || !head.eq_ignore_ascii_case(w) {
                    return None;
                }
                r = &t[w.len()..];
            }
            let ends = !r.starts_with(|c: char| c.is_ascii_alphabetic());
            ends.then_some((rest.len() - r.len(), *n, *d))
        })
    }

    /// Pushes prose words; a multiplier right after a value scales it (`3 thousand`), and
    /// `and a half` after a value adds to it.
    fn push_word(&mut self, word: String) {
        let parts: Vec<&str> = word.split_whitespace().collect();
        let mut k = 0;
        while k < parts.len() {
            let w = parts[k];
            if ends_value(self.out.last()) {
                if let Some(m) = words::multiplier(w) {
                    self.out.push(Tok::Star);
                    self.out.push(Tok::Num {
                        value: BigRational::from_integer(BigInt::from(m)),
                        decimals: 0,
                        integer: true,
                    });
                    k += 1;
                    continue;
                }
                if w.eq_ignore_ascii_case("and") {
                    let hit = words::AND_FRACTIONS.iter().find(|(ws, _, _)| {
                        ws.len() + k < parts.len()
                            && ws.iter().zip(&parts[k + 1..]).all(|(a, b)| a.eq_ignore_ascii_case(b))
                    });
                    if let Some((ws, n, d)) = hit {
                        self.out.push(Tok::Plus);
                        self.out.push(fraction(*n, *d));
                        k += 1 + ws.len();
                        continue;
                    }
                }
            }
            if let Some(Tok::Word(prev)) = self.out.last_mut() {
                prev.push(' ');
                prev.push_str(w);
            } else {
                self.out.push(Tok::Word(w.to_string()));
            }
            k += 1;
        }
    }

    fn command(&mut self) -> Result<(), LexError> {
        self.i += 1;
        let Some(c) = self.peek() else { return Ok(()) };
        if !c.is_ascii_alphabetic() {
            self.i += 1;
            let t = match c {
                b'{' => Tok::LSet,
                b'}' => Tok::RSet,
                b'\\' => Tok::RowSep,
                b'%' => Tok::Percent,
                b'|' => Tok::Bar,
                b',' | b';' | b':' | b'!' | b' ' | b'$' | b'>' => return Ok(()),
                b'(' | b')' | b'[' | b']' => return Ok(()), // stray delimiters of a math span
                _ => return Err(LexError::Unknown(format!("\\{}", c as char))),
            };
            self.out.push(t);
            return Ok(());
        }
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.i += 1;
        }
        let name = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        if name == "sqrt" {
            self.out.push(Tok::Sqrt);
            return Ok(());
        }
        if let Some(f) = Func::from_name(&name) {
            self.out.push(Tok::Func(f));
            return Ok(());
        }
        if is_greek(&name) {
            self.out.push(Tok::Sym(name));
            return Ok(());
        }
        let t = match name.as_str() {
            "frac" | "dfrac" | "tfrac" | "cfrac" => Tok::Frac,
            "sqrt" => Tok::Sqrt,
            "binom" | "dbinom" | "tbinom" | "choose" => Tok::Binom,
            "pi" => Tok::Pi,
            "infty" | "infin" => Tok::Inf,
            "emptyset" | "varnothing" => Tok::EmptySet,
            "cdot" | "times" | "ast" => Tok::Star,
            "div" => Tok::Slash,
            "pm" => Tok::PlusMinus,
            "mp" => Tok::MinusPlus,
            "le" | "leq" | "leqslant" => Tok::Rel(Rel::Le),
            "ge" | "geq" | "geqslant" => Tok::Rel(Rel::Ge),
            "lt" => Tok::Rel(Rel::Lt),
            "gt" => Tok::Rel(Rel::Gt),
            "ne" | "neq" => Tok::Rel(Rel::Ne),
            // `x \in [2, 5)` reads like `x = [2, 5)`: the answer is the right-hand side.
            "approx" | "equiv" | "in" => Tok::Rel(Rel::Eq),
            "cup" => Tok::Cup,
            "lbrace" => Tok::LSet,
            "rbrace" => Tok::RSet,
            "langle" => Tok::LParen,
            "rangle" => Tok::RParen,
            "lvert" | "rvert" | "vert" | "mid" => Tok::Bar,
            "lfloor" | "rfloor" | "lceil" | "rceil" => {
                return Err(LexError::Unknown(format!("\\{name}")));
            }
            "left" | "right" | "big" | "Big" | "bigg" | "Bigg" | "bigl" | "bigr" | "Bigl" | "Bigr"
            | "middle" => {
                // `\left.` is an invisible delimiter.
                if self.peek() == Some(b'.') {
                    self.i += 1;
                }
                return Ok(());
            }
            "quad" | "qquad" | "displaystyle" | "textstyle" | "circ" | "degree" | "dollar" | "limits"
            | "nolimits" | "hfill" | "hspace" | "medspace" | "thinspace" | "negthinspace" | "enspace" => {
                if name == "hspace" {
                    self.skip_ws();
                    let _ = self.read_group();
                }
                return Ok(());
            }
            "text" | "textbf" | "textit" | "textrm" | "textnormal" | "mathrm" | "mathbf" | "mathit"
            | "mbox" | "hbox" | "boldsymbol" | "bm" | "mathsf" | "texttt" | "operatorname" | "emph"
            | "underline" | "boxed" | "fbox" | "mathbb" | "mathcal" => {
                return self.text_like(&name);
            }
            "begin" | "end" => {
                self.skip_ws();
                let env = self.read_group().unwrap_or_default();
                let env = env.trim().trim_end_matches('*').to_string();
                if name == "begin" {
                    // `\begin{array}{cc}`: skip the column spec.
                    if env == "array" {
                        self.skip_ws();
                        let _ = self.read_group();
                    }
                    Tok::Begin(env)
                } else {
                    Tok::End(env)
                }
            }
            "percent" => Tok::Percent,
            "cap" | "setminus" | "notin" | "subset" | "forall" | "exists" | "to" | "rightarrow"
            | "Rightarrow" | "implies" | "iff" | "dots" | "ldots" | "cdots" | "overline" | "hat" | "vec"
            | "angle" | "triangle" | "perp" | "parallel" | "int" | "sum" | "prod" | "lim" | "partial" => {
                return Err(LexError::Unknown(format!("\\{name}")));
            }
            _ => return Err(LexError::Unknown(format!("\\{name}"))),
        };
        self.out.push(t);
        Ok(())
    }

    /// `\text{..}` and friends: words become a [`Tok::Word`]; math content is lexed in place.
    fn text_like(&mut self, name: &str) -> Result<(), LexError> {
        self.skip_ws();
        if self.peek() != Some(b'{') {
            return Ok(());
        }
        let save = self.i;
        let Some(content) = self.read_group() else {
            self.i = save + 1;
            return Ok(());
        };
        let trimmed = content.trim();
        if name == "operatorname" {
            if let Some(f) = Func::from_name(trimmed) {
                self.out.push(Tok::Func(f));
                return Ok(());
            }
        }
        let wordy = !trimmed.is_empty()
            && trimmed.chars().any(|c| c.is_alphabetic())
            && trimmed.chars().all(|c| c.is_alphabetic() || matches!(c, ' ' | '.' | '-' | '\'' | ','));
        let single_letter = trimmed.len() == 1;
        if trimmed.is_empty() {
            return Ok(());
        }
        if wordy && !single_letter && name != "boxed" && name != "fbox" {
            let w = trimmed.trim_end_matches(['.', ',']).to_string();
            if w.eq_ignore_ascii_case("and") || w.eq_ignore_ascii_case("or") {
                self.out.push(Tok::Comma);
            } else {
                self.push_word(w);
            }
            return Ok(());
        }
        // Math inside a formatting command: lex it in place, dropping the closing brace.
        self.i = save + 1;
        self.brace_depth += 1;
        self.skip_close.push(self.brace_depth);
        Ok(())
    }
}

/// The literal `n/d` (a fraction word's value).
fn fraction(n: u32, d: u32) -> Tok {
    Tok::Num { value: BigRational::new(BigInt::from(n), BigInt::from(d)), decimals: u32::MAX, integer: false }
}

/// The exact value of a decimal literal `int.frac`.
pub(crate) fn decimal_value(int: &str, frac: &str) -> BigRational {
    let digits = format!("{int}{frac}");
    let n = if digits.is_empty() { BigInt::zero() } else { digits.parse::<BigInt>().unwrap_or_default() };
    let d = BigInt::from(10u32).pow(frac.len() as u32);
    BigRational::new(n, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(t: &Tok) -> String {
        match t {
            Tok::Num { value, .. } => value.to_string(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn thousands_separators_join_groups() {
        for s in ["1,000,000", "1 000 000", "1\\,000\\,000", "1{,}000{,}000", "1\\!000\\!000"] {
            let toks = lex(s).unwrap();
            assert_eq!(toks.len(), 1, "{s}: {toks:?}");
            assert_eq!(num(&toks[0]), "1000000");
        }
        for s in ["1~000", "1\\ 000", "1\\;000", "1 000.5"] {
            let toks = lex(s).unwrap();
            assert_eq!(toks.len(), 1, "{s}: {toks:?}");
        }
        // Not a thousands group: a list, or two numbers (refused by the parser).
        assert_eq!(lex("3,5").unwrap().len(), 3);
        assert_eq!(lex("1,2345").unwrap().len(), 3);
        for s in ["2 3", "5\\,1", "1\\,000\\,1", "1 000 1", "1234 567", "1 0000"] {
            let toks = lex(s).unwrap();
            assert_eq!(toks.len(), 2, "{s}: {toks:?}");
        }
    }

    #[test]
    fn repeating_decimal_and_scientific() {
        assert_eq!(num(&lex("0.\\overline{3}").unwrap()[0]), "1/3");
        assert_eq!(num(&lex("0.1\\overline{6}").unwrap()[0]), "1/6");
        assert_eq!(num(&lex("1.5e-3").unwrap()[0]), "3/2000");
        assert_eq!(
            lex("2e").unwrap(),
            vec![Tok::Num { value: BigRational::from_integer(2.into()), decimals: 0, integer: true }, Tok::E]
        );
    }

    #[test]
    fn text_words_and_math() {
        assert_eq!(lex("\\text{ cm}").unwrap(), vec![Tok::Word("cm".into())]);
        let t = lex("\\textbf{3}").unwrap();
        assert_eq!(t.len(), 1, "{t:?}");
        assert!(lex("\\unknowncommand").is_err());
        assert_eq!(lex("90^\\circ").unwrap().len(), 1);
    }
}
