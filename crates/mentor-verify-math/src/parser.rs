//! Recursive-descent parser from tokens to [`Node`], with a hard nesting bound.
//!
//! One depth budget bounds both the parser's own recursion and the tree it builds:
//!
//! - every recursive rule goes through [`Parser::enter`], which refuses to go deeper than
//!   `max_depth` (clamped to [`MAX_DEPTH_CEILING`]); every cycle of the grammar (brackets,
//!   braces, `\frac`, `\sqrt`, `^` towers, prefix signs, function applications, subscripts,
//!   `|x|`, sets, tuples, intervals, matrices) passes through a rule that charges it;
//! - the one loop that wraps a node in place, a chain of postfix operators (`3!!!`, `1%%`),
//!   charges one level per operator for as long as the chain is being built, so no rule can
//!   return a tree deeper than the budget allows;
//! - sums, products, lists and relations are built flat (n-ary), so long chains of binary
//!   operators do not deepen the tree;
//! - as a last line, a parsed tree deeper than [`tree_depth_limit`] (checked iteratively) is
//!   refused too.
//!
//! So the stack used by the parser and by every later recursive walk (evaluation, comparison,
//! display, clone, drop) is bounded whatever the input; `max_depth` errors are
//! [`ParseError::TooDeep`], reported as `too_complex`.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use crate::ast::Node;
use crate::digit_groups;
use crate::lexer::{self, Func, LexError, Tok};

/// Why an answer could not be parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ParseError {
    /// Deeper than the configured nesting bound.
    TooDeep,
    /// Longer than the configured size bound.
    TooLong,
    /// Not math we understand.
    Syntax(String),
    /// Two numbers written side by side (`2 3`, `5\,1`, `3 \text{ apples } 4`): neither one
    /// number (not thousands groups, see [`crate::digit_groups`]) nor a product. The reason.
    SideBySide(String),
}

/// The parse of one answer, with what the parser noticed on the way.
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    pub(crate) node: Node,
    /// Words (prose, units) appeared before some math: plain prose, not an answer.
    pub(crate) words_before_math: bool,
    /// Words appeared anywhere (a text answer, units).
    pub(crate) has_words: bool,
    /// The words of the answer (prose, units), lower case, each on its own: what the checker
    /// must be able to read ([`crate::words`]).
    pub(crate) words: Vec<String>,
    /// Marks skipped that belong to no value (`?`, a `~` before a number).
    pub(crate) stray: Vec<String>,
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
    max_depth: usize,
}

/// The largest nesting budget honoured, whatever `Config::max_depth` says: at this depth the
/// deepest tree the parser can build is judged within a 256 KiB stack (see `tests/it/depth.rs`),
/// an eighth of a rayon worker's.
pub(crate) const MAX_DEPTH_CEILING: usize = 64;

/// The deepest tree accepted for a nesting budget of `max_depth` (the parser builds at most a
/// few nodes per level it charges; this is a backstop, not the bound callers meet first).
pub(crate) fn tree_depth_limit(max_depth: usize) -> usize {
    4 * max_depth.min(MAX_DEPTH_CEILING) + 8
}

/// Parses one answer string (LaTeX or plain text).
pub(crate) fn parse(src: &str, max_depth: usize, max_len: usize) -> Result<Parsed, ParseError> {
    parse_answer(src, max_depth, max_len, false)
}

/// [`parse`]; with `unit_letters`, a single-letter unit right after a number (`1000 m`,
/// `5 \text{ s}`) is a unit word, not a variable (for golds without variables).
pub(crate) fn parse_answer(
    src: &str,
    max_depth: usize,
    max_len: usize,
    unit_letters: bool,
) -> Result<Parsed, ParseError> {
    if src.len() > max_len {
        return Err(ParseError::TooLong);
    }
    let max_depth = max_depth.min(MAX_DEPTH_CEILING);
    let norm = lexer::normalise_unicode(src);
    let (mut toks, stray) = lexer::lex_marked(&norm)
        .map_err(|LexError::Unknown(u)| ParseError::Syntax(format!("unknown symbol `{u}`")))?;
    if unit_letters {
        units_as_words(&mut toks);
    }
    let words: Vec<String> = toks
        .iter()
        .filter_map(|t| if let Tok::Word(w) = t { Some(w.as_str()) } else { None })
        .flat_map(|w| w.split_whitespace().map(str::to_string))
        .collect();
    // Words alone are a text answer.
    if !toks.is_empty() && toks.iter().all(|t| matches!(t, Tok::Word(_) | Tok::Comma)) {
        let text = toks
            .iter()
            .filter_map(|t| if let Tok::Word(w) = t { Some(w.as_str()) } else { None })
            .collect::<Vec<_>>()
            .join(" ");
        return Ok(Parsed {
            node: Node::Text(normalise_text(&text)),
            words_before_math: false,
            has_words: true,
            words,
            stray,
        });
    }
    let mut words_before_math = false;
    let mut seen_word = false;
    for t in &toks {
        match t {
            Tok::Word(_) => seen_word = true,
            Tok::Comma => {}
            _ if seen_word => words_before_math = true,
            _ => {}
        }
    }
    let mut toks = drop_words(toks);
    // `3, 5, and 7`: the `and` after a comma is the same separator.
    toks.dedup_by(|b, a| *a == Tok::Comma && *b == Tok::Comma);
    let toks = trim_trailing(toks);
    if toks.is_empty() {
        return Err(ParseError::Syntax("empty answer".into()));
    }
    let mut p = Parser { toks, pos: 0, depth: 0, max_depth };
    let node = p.top()?;
    if p.pos < p.toks.len() {
        return Err(ParseError::Syntax(format!("unexpected {:?}", p.toks[p.pos])));
    }
    if node.deeper_than(tree_depth_limit(max_depth)) {
        return Err(ParseError::TooDeep);
    }
    Ok(Parsed { node, words_before_math, has_words: seen_word, words, stray })
}

/// A single-letter unit (`m`, `s`) right after a number and ending the value (before the end,
/// a separator, a relation, a word or a closing bracket) becomes a unit word.
fn units_as_words(toks: &mut [Tok]) {
    for k in 1..toks.len() {
        let Tok::Sym(u) = &toks[k] else { continue };
        if !crate::words::UNIT_LETTERS.contains(&u.as_str()) || !matches!(toks[k - 1], Tok::Num { .. }) {
            continue;
        }
        let ends = matches!(
            toks.get(k + 1),
            None | Some(
                Tok::Comma
                    | Tok::Rel(_)
                    | Tok::Word(_)
                    | Tok::RParen
                    | Tok::RBrace
                    | Tok::RBrack
                    | Tok::Caret
            )
        );
        if ends {
            toks[k] = Tok::Word(u.clone());
        }
    }
}

/// Removes words (prose, units) and the exponent of a unit (`\text{ cm}^2`).
fn drop_words(toks: Vec<Tok>) -> Vec<Tok> {
    let mut out = Vec::with_capacity(toks.len());
    let mut it = toks.into_iter().peekable();
    while let Some(t) = it.next() {
        if !matches!(t, Tok::Word(_)) {
            out.push(t);
            continue;
        }
        if it.peek() == Some(&Tok::Caret) {
            it.next();
            if it.next() == Some(Tok::LBrace) {
                let mut depth = 1usize;
                for t in it.by_ref() {
                    match t {
                        Tok::LBrace => depth += 1,
                        Tok::RBrace => depth -= 1,
                        _ => {}
                    }
                    if depth == 0 {
                        break;
                    }
                }
            }
        }
    }
    out
}

/// Lower-cases and squeezes a text answer.
pub(crate) fn normalise_text(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || matches!(c, '.' | ',' | '(' | ')' | '$' | '{' | '}'))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Drops trailing separators (`5,` `x = 3;`) left by sentence punctuation.
fn trim_trailing(mut toks: Vec<Tok>) -> Vec<Tok> {
    while matches!(toks.last(), Some(Tok::Comma | Tok::Slash)) {
        toks.pop();
    }
    while matches!(toks.first(), Some(Tok::Comma)) {
        toks.remove(0);
    }
    toks
}

/// Reads the decimal digits of `digits` as a numeral in `base` (2..=10).
fn from_base(digits: &BigRational, base: &Node) -> Result<Node, ParseError> {
    let b = match base {
        Node::Num { value, .. } if value.is_integer() => value.to_integer(),
        _ => return Err(ParseError::Syntax("a subscript that is not a base".into())),
    };
    let Some(b) = (2..=10u32).find(|k| BigInt::from(*k) == b) else {
        return Err(ParseError::Syntax(format!("base {b} is not supported")));
    };
    let mut acc = BigInt::from(0u32);
    for ch in digits.to_integer().to_string().chars() {
        let d = ch
            .to_digit(10)
            .filter(|d| *d < b)
            .ok_or_else(|| ParseError::Syntax(format!("digit {ch} in base {b}")))?;
        acc = acc * b + d;
    }
    Ok(Node::num(BigRational::from_integer(acc)))
}

/// A number literal as written back in feedback (`3`, `2.5`, `1/3` for a repeating decimal).
fn show(v: &BigRational) -> String {
    if v.is_integer() {
        return v.to_integer().to_string();
    }
    let d = v.denom();
    // Terminating decimals (denominator 2^a 5^b) are shown as decimals.
    let mut k = d.clone();
    for p in [2u32, 5] {
        while (&k % p).is_zero() {
            k /= p;
        }
    }
    if k.is_one() {
        if let Some(f) = v.to_f64() {
            return f.to_string();
        }
    }
    v.to_string()
}

fn is_int_literal(n: &Node) -> bool {
    matches!(n, Node::Num { value, decimals: 0 } if value.is_integer() && !value.is_negative())
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn bump(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, t: &Tok) -> Result<(), ParseError> {
        if self.eat(t) {
            Ok(())
        } else {
            Err(ParseError::Syntax(format!("expected {t:?}, found {:?}", self.peek())))
        }
    }

    /// Refuses implicit multiplication of a number literal by the number literal right after it
    /// (`2 3`, `1\,000\,1`, or `3 4` once the words between were dropped): bare numbers side
    /// by side are a malformed number, not a product. `2x`, `2\pi`, `3\sqrt{2}`, `2(3)` and
    /// `\frac{1}{2}\sqrt{3}` are untouched: one side is not a bare number.
    fn refuse_side_by_side(&self) -> Result<(), ParseError> {
        let prev = self.pos.checked_sub(1).and_then(|k| self.toks.get(k));
        match (prev, self.peek()) {
            (Some(Tok::Num { value: a, .. }), Some(Tok::Num { value: b, .. })) => {
                Err(ParseError::SideBySide(digit_groups::side_by_side_reason(&show(a), &show(b))))
            }
            _ => Ok(()),
        }
    }

    /// Charges one level of the depth budget; [`ParseError::TooDeep`] past `max_depth`. Every
    /// recursive rule calls it first and [`Parser::leave`] on success (an error ends the parse).
    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            Err(ParseError::TooDeep)
        } else {
            Ok(())
        }
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// answer := union (',' union)*
    fn top(&mut self) -> Result<Node, ParseError> {
        let first = self.union()?;
        if self.peek() != Some(&Tok::Comma) {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(&Tok::Comma) {
            if self.peek().is_none() {
                break;
            }
            items.push(self.union()?);
        }
        Ok(Node::List(items))
    }

    fn union(&mut self) -> Result<Node, ParseError> {
        let first = self.relation()?;
        if self.peek() != Some(&Tok::Cup) {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(&Tok::Cup) {
            items.push(self.relation()?);
        }
        Ok(Node::Union(items))
    }

    fn relation(&mut self) -> Result<Node, ParseError> {
        let first = self.sum()?;
        let mut items = vec![first];
        let mut rels = Vec::new();
        while let Some(Tok::Rel(r)) = self.peek() {
            let r = *r;
            self.pos += 1;
            rels.push(r);
            items.push(self.sum()?);
        }
        if rels.is_empty() {
            Ok(items.pop().unwrap_or(Node::Text(String::new())))
        } else {
            Ok(Node::Rel(items, rels))
        }
    }

    /// sum := ['+'|'-'|'\pm'] term (('+'|'-'|'\pm'|'\mp') term)*
    fn sum(&mut self) -> Result<Node, ParseError> {
        self.enter()?;
        let mut terms = Vec::new();
        let mut pm: Option<(Node, bool)> = None;
        let lead = match self.peek() {
            Some(Tok::PlusMinus) => Some(false),
            Some(Tok::MinusPlus) => Some(true),
            _ => None,
        };
        if let Some(mp) = lead {
            self.pos += 1;
            let t = self.term()?;
            pm = Some((t, mp));
        } else {
            terms.push(self.term()?);
        }
        loop {
            match self.peek() {
                Some(Tok::Plus) => {
                    self.pos += 1;
                    let t = self.term()?;
                    terms.push(t);
                }
                Some(Tok::Minus) => {
                    self.pos += 1;
                    let t = self.term()?;
                    terms.push(Node::Neg(Box::new(t)));
                }
                Some(Tok::PlusMinus | Tok::MinusPlus) => {
                    let mp = self.peek() == Some(&Tok::MinusPlus);
                    self.pos += 1;
                    if pm.is_some() {
                        return Err(ParseError::Syntax("more than one \\pm".into()));
                    }
                    let t = self.term()?;
                    pm = Some((t, mp));
                }
                _ => break,
            }
        }
        self.leave();
        let base = match terms.len() {
            0 => None,
            1 => terms.pop(),
            _ => Some(Node::Add(terms)),
        };
        Ok(match (pm, base) {
            (Some((t, mp)), base) => Node::PlusMinus(base.map(Box::new), Box::new(t), mp),
            (None, Some(b)) => b,
            (None, None) => return Err(ParseError::Syntax("empty sum".into())),
        })
    }

    fn starts_primary(&self) -> bool {
        matches!(
            self.peek(),
            Some(
                Tok::Num { .. }
                    | Tok::Sym(_)
                    | Tok::Pi
                    | Tok::E
                    | Tok::I
                    | Tok::Inf
                    | Tok::Func(_)
                    | Tok::Frac
                    | Tok::Sqrt
                    | Tok::Binom
                    | Tok::LParen
                    | Tok::LBrace
                    | Tok::Begin(_)
            )
        )
    }

    /// term := unary (('*'|'/'|implicit) unary)*, with mixed numbers `2\frac{1}{2}`.
    fn term(&mut self) -> Result<Node, ParseError> {
        self.enter()?;
        let mut factors = vec![self.unary()?];
        loop {
            match self.peek() {
                Some(Tok::Star) => {
                    self.pos += 1;
                    factors.push(self.unary()?);
                }
                Some(Tok::Slash) => {
                    self.pos += 1;
                    let d = self.unary()?;
                    factors.push(Node::Recip(Box::new(d)));
                }
                _ if self.starts_primary() => {
                    self.refuse_side_by_side()?;
                    let start = self.pos;
                    let next = self.power()?;
                    // Mixed number: an integer literal directly followed by \frac{int}{int}.
                    let mixed = factors.len() == 1
                        && self.toks.get(start) == Some(&Tok::Frac)
                        && matches!(&next, Node::Mul(v) if v.len() == 2 && is_int_literal(&v[0])
                            && matches!(&v[1], Node::Recip(d) if is_int_literal(d)));
                    let whole = match &factors[0] {
                        Node::Neg(inner) if is_int_literal(inner) => Some((true, (**inner).clone())),
                        n if is_int_literal(n) => Some((false, n.clone())),
                        _ => None,
                    };
                    match (mixed, whole) {
                        (true, Some((neg, w))) => {
                            let sum = Node::Add(vec![w, next]);
                            factors[0] = if neg { Node::Neg(Box::new(sum)) } else { sum };
                        }
                        _ => factors.push(next),
                    }
                }
                _ => break,
            }
        }
        self.leave();
        Ok(if factors.len() == 1 {
            factors.pop().unwrap_or(Node::Text(String::new()))
        } else {
            Node::Mul(factors)
        })
    }

    /// unary := ('-'|'+') unary | power
    fn unary(&mut self) -> Result<Node, ParseError> {
        self.enter()?;
        let n = match self.peek() {
            Some(Tok::Minus) => {
                self.pos += 1;
                Node::Neg(Box::new(self.unary()?))
            }
            Some(Tok::Plus) => {
                self.pos += 1;
                self.unary()?
            }
            _ => self.power()?,
        };
        self.leave();
        Ok(n)
    }

    /// power := postfix ('^' exponent)?
    fn power(&mut self) -> Result<Node, ParseError> {
        self.enter()?;
        let base = self.postfix()?;
        let n = if self.eat(&Tok::Caret) {
            let exp = self.exponent()?;
            let p = Node::Pow(Box::new(base), Box::new(exp));
            self.postfix_ops(p)?
        } else {
            base
        };
        self.leave();
        Ok(n)
    }

    /// The argument of `^` or `_`: a braced group, or one token (with a sign).
    fn exponent(&mut self) -> Result<Node, ParseError> {
        self.enter()?;
        let n = match self.peek() {
            Some(Tok::LBrace) => {
                self.pos += 1;
                let n = self.top()?;
                self.expect(&Tok::RBrace)?;
                n
            }
            Some(Tok::Minus) => {
                self.pos += 1;
                Node::Neg(Box::new(self.exponent()?))
            }
            _ => self.power()?,
        };
        self.leave();
        Ok(n)
    }

    fn postfix(&mut self) -> Result<Node, ParseError> {
        let p = self.primary()?;
        self.postfix_ops(p)
    }

    /// `x!`, `x%`, `x!%!`: each operator wraps the node once more, so each charges one level of
    /// the depth budget until the chain ends (the tree is as deep as a nesting would be).
    fn postfix_ops(&mut self, mut p: Node) -> Result<Node, ParseError> {
        let mut charged = 0;
        let result = loop {
            let wrap: fn(Box<Node>) -> Node = match self.peek() {
                Some(Tok::Bang) => Node::Fact,
                Some(Tok::Percent) => Node::Percent,
                _ => break Ok(p),
            };
            charged += 1;
            if let Err(e) = self.enter() {
                break Err(e);
            }
            self.pos += 1;
            p = wrap(Box::new(p));
        };
        self.depth -= charged;
        result
    }

    /// A `{..}` group or a single token argument (`\frac12`, `\sqrt2`).
    fn arg(&mut self) -> Result<Node, ParseError> {
        self.enter()?;
        let n = match self.peek() {
            Some(Tok::LBrace) => {
                self.pos += 1;
                let n = self.top()?;
                self.expect(&Tok::RBrace)?;
                n
            }
            Some(Tok::Num { value, decimals: 0, integer: true }) if value.is_integer() => {
                // TeX takes one digit: `\frac12` is 1/2. Split the literal.
                let digits = value.to_integer().to_string();
                let first = digits[..1].parse::<BigInt>().unwrap_or_default();
                let rest = &digits[1..];
                if rest.is_empty() {
                    self.pos += 1;
                } else {
                    let v = rest.parse::<BigInt>().unwrap_or_default();
                    self.toks[self.pos] =
                        Tok::Num { value: BigRational::from_integer(v), decimals: 0, integer: true };
                }
                Node::num(BigRational::from_integer(first))
            }
            _ => self.primary()?,
        };
        self.leave();
        Ok(n)
    }

    fn primary(&mut self) -> Result<Node, ParseError> {
        self.enter()?;
        let Some(t) = self.bump() else {
            return Err(ParseError::Syntax("unexpected end".into()));
        };
        let n = match t {
            Tok::Num { value, decimals, integer } => {
                if integer && self.eat(&Tok::Under) {
                    // A number in another base: `52_8`, `1011_{2}`.
                    let base = self.arg()?;
                    from_base(&value, &base)?
                } else {
                    Node::Num { value, decimals }
                }
            }
            Tok::Sym(s) => {
                // Subscripted variables `x_1`: keep the subscript in the name.
                if self.eat(&Tok::Under) {
                    let sub = self.arg()?;
                    Node::Sym(format!("{s}_{sub}"))
                } else {
                    Node::Sym(s)
                }
            }
            Tok::Pi => Node::Pi,
            Tok::E => Node::E,
            Tok::I => Node::I,
            Tok::Inf => Node::Inf,
            Tok::EmptySet => Node::Set(Vec::new()),
            Tok::Frac => {
                let a = self.arg()?;
                let b = self.arg()?;
                Node::Mul(vec![a, Node::Recip(Box::new(b))])
            }
            Tok::Binom => {
                let a = self.arg()?;
                let b = self.arg()?;
                Node::Binom(Box::new(a), Box::new(b))
            }
            Tok::Sqrt => {
                let index = if self.eat(&Tok::LBrack) {
                    let i = self.top()?;
                    self.expect(&Tok::RBrack)?;
                    Some(i)
                } else {
                    None
                };
                let x = self.arg()?;
                match index {
                    Some(i) => Node::Root(Box::new(i), Box::new(x)),
                    None => Node::Func(Func::Sqrt, Box::new(x)),
                }
            }
            Tok::Func(f) => self.function(f)?,
            Tok::LParen | Tok::LBrack => self.bracketed(t == Tok::LBrack)?,
            Tok::LBrace => {
                let inner = self.top()?;
                self.expect(&Tok::RBrace)?;
                match inner {
                    Node::List(v) => Node::Set(v),
                    other => other,
                }
            }
            Tok::LSet => {
                if self.eat(&Tok::RSet) {
                    Node::Set(Vec::new())
                } else {
                    let inner = self.top()?;
                    self.expect(&Tok::RSet)?;
                    match inner {
                        Node::List(v) => Node::Set(v),
                        other => Node::Set(vec![other]),
                    }
                }
            }
            Tok::Bar => {
                let inner = self.sum()?;
                self.expect(&Tok::Bar)?;
                Node::Func(Func::Abs, Box::new(inner))
            }
            Tok::Begin(env) => self.matrix(&env)?,
            other => return Err(ParseError::Syntax(format!("unexpected {other:?}"))),
        };
        self.leave();
        Ok(n)
    }

    fn function(&mut self, f: Func) -> Result<Node, ParseError> {
        // `\log_2 8`, `\log_{10}(x)`.
        let base = if matches!(f, Func::Log) && self.eat(&Tok::Under) { Some(self.arg()?) } else { None };
        // `\sin^2 x`
        let power = if self.eat(&Tok::Caret) { Some(self.exponent()?) } else { None };
        let x = match self.peek() {
            Some(Tok::LParen | Tok::LBrace) => self.power()?,
            _ => self.unary_no_sum()?,
        };
        let mut n = match base {
            Some(b) => Node::LogBase(Box::new(b), Box::new(x)),
            None => Node::Func(f, Box::new(x)),
        };
        if let Some(p) = power {
            n = Node::Pow(Box::new(n), Box::new(p));
        }
        Ok(n)
    }

    /// The argument of a function written without brackets: `\sin x`, `\ln 2x` (a product).
    fn unary_no_sum(&mut self) -> Result<Node, ParseError> {
        self.enter()?;
        let mut factors = vec![self.power()?];
        while self.starts_primary() && !matches!(self.peek(), Some(Tok::Func(_))) {
            self.refuse_side_by_side()?;
            factors.push(self.power()?);
        }
        self.leave();
        Ok(if factors.len() == 1 {
            factors.pop().unwrap_or(Node::Text(String::new()))
        } else {
            Node::Mul(factors)
        })
    }

    fn bracketed(&mut self, open_closed: bool) -> Result<Node, ParseError> {
        let inner = self.top()?;
        let close_closed = match self.bump() {
            Some(Tok::RParen) => false,
            Some(Tok::RBrack) => true,
            other => return Err(ParseError::Syntax(format!("unclosed bracket, found {other:?}"))),
        };
        Ok(match inner {
            Node::List(mut v) if v.len() == 2 && (open_closed || close_closed) => {
                let hi = v.pop().unwrap_or(Node::Inf);
                let lo = v.pop().unwrap_or(Node::Inf);
                Node::Interval {
                    lo: Box::new(lo),
                    hi: Box::new(hi),
                    lo_closed: open_closed,
                    hi_closed: close_closed,
                }
            }
            Node::List(v) => Node::Tuple(v),
            other => other,
        })
    }

    fn matrix(&mut self, env: &str) -> Result<Node, ParseError> {
        let mut rows: Vec<Vec<Node>> = Vec::new();
        let mut row: Vec<Node> = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::End(e)) => {
                    if e != env {
                        return Err(ParseError::Syntax(format!("\\begin{{{env}}} closed by \\end{{{e}}}")));
                    }
                    self.pos += 1;
                    if !row.is_empty() {
                        rows.push(row);
                    }
                    break;
                }
                Some(Tok::RowSep) => {
                    self.pos += 1;
                    rows.push(std::mem::take(&mut row));
                }
                Some(Tok::Amp) => {
                    self.pos += 1;
                }
                None => return Err(ParseError::Syntax(format!("unclosed \\begin{{{env}}}"))),
                _ => row.push(self.union()?),
            }
        }
        if !matches!(env, "pmatrix" | "bmatrix" | "matrix" | "smallmatrix" | "array" | "Bmatrix") {
            return Err(ParseError::Syntax(format!("environment `{env}` is not an answer")));
        }
        let width = rows.first().map_or(0, Vec::len);
        if width == 0 || rows.iter().any(|r| r.len() != width) {
            return Err(ParseError::Syntax("ragged matrix".into()));
        }
        Ok(Node::Matrix(rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        match parse(s, 48, 4096) {
            Ok(p) => p.node.to_string(),
            Err(e) => format!("ERR {e:?}"),
        }
    }

    #[test]
    fn basic_shapes() {
        assert_eq!(p("\\frac{1}{2}"), "1/2");
        assert_eq!(p("2\\frac{1}{2}"), "(2 + 1/2)");
        assert_eq!(p("-1\\frac12"), "-(1 + 1/2)");
        assert_eq!(p("x^2 - 3x"), "(x^2 - 3*x)");
        assert_eq!(p("(1, 7]"), "(1, 7]");
        assert_eq!(p("(1,2)"), "(1, 2)");
        assert_eq!(p("\\{1,2\\}"), "{1, 2}");
        assert_eq!(p("x = 5"), "x = 5");
        assert_eq!(p("1 \\pm \\sqrt{19}"), "1 +- sqrt(19)");
        assert_eq!(p("\\text{even}"), "\"even\"");
        assert_eq!(p("52_8"), "42");
        assert_eq!(p("5\\text{ cm}^2"), "5");
        assert_eq!(p("5\\text{ cm}^{3} + 1"), "(5 + 1)");
        assert_eq!(p("x \\in [2, 5)"), "x = [2, 5)");
        assert_eq!(p("1011_{2}"), "11");
        assert_eq!(p("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}"), "[1, 2; 3, 4]");
    }

    #[test]
    fn numbers_side_by_side_are_refused_not_multiplied() {
        for s in
            ["2 3", "3 4", "5\\,1", "1\\,000\\,1", "1 000 1", "3 \\text{ apples } 4", "2^3 4", "\\sin 2 3"]
        {
            let e = parse(s, 48, 4096).unwrap_err();
            assert!(matches!(&e, ParseError::SideBySide(why) if why.contains("side by side")), "{s}: {e:?}");
        }
        assert!(
            matches!(parse("2.5 3", 48, 4096), Err(ParseError::SideBySide(w)) if w.contains("`2.5` and `3`"))
        );
        // Implicit multiplication where the notation means it.
        assert_eq!(p("2x"), "2*x");
        assert_eq!(p("2\\pi"), "2*pi");
        assert_eq!(p("3\\sqrt{2}"), "3*sqrt(2)");
        assert_eq!(p("2(3)"), "2*3");
        assert_eq!(p("\\frac{1}{2}\\sqrt{3}"), "(1/2)*sqrt(3)");
        assert_eq!(p("1 000 000"), "1000000");
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}1{}", "{".repeat(10_000), "}".repeat(10_000));
        assert_eq!(parse(&deep, 48, 1 << 20).unwrap_err(), ParseError::TooDeep);
        let minus = format!("{}1", "-".repeat(5000));
        assert_eq!(parse(&minus, 48, 1 << 20).unwrap_err(), ParseError::TooDeep);
        // Long flat chains are fine: they do not deepen the tree.
        let chain = vec!["1"; 1000].join("+");
        assert!(parse(&chain, 48, 1 << 20).is_ok());
    }

    #[test]
    fn postfix_chains_charge_the_depth_budget() {
        for op in ["!", "%", "\\%", "!%"] {
            let chain = format!("3{}", op.repeat(1_500));
            assert_eq!(parse(&chain, 48, 1 << 20).unwrap_err(), ParseError::TooDeep, "{op}");
            // After a power and inside brackets too.
            let chain = format!("(2^3{})", op.repeat(1_500));
            assert_eq!(parse(&chain, 48, 1 << 20).unwrap_err(), ParseError::TooDeep, "{op}");
        }
        assert_eq!(p("3!!"), "((3)!)!");
        assert_eq!(p("5\\%!"), "(5%)!");
        // The budget is given back when a chain ends: many short chains side by side are fine.
        let many = vec!["3!!"; 500].join("+");
        assert!(parse(&many, 48, 1 << 20).is_ok());
    }

    #[test]
    fn accepted_trees_are_within_the_tree_bound_and_the_budget_is_clamped() {
        for s in ["-(-(-(1)))", "3!!!!!", "-(\\frac{1}{\\sqrt{x^{2}}})", "\\{(1, [2, 3))\\}"] {
            let node = parse(s, 48, 4096).unwrap().node;
            assert!(!node.deeper_than(tree_depth_limit(48)), "{s}");
            assert!(node.deeper_than(2), "{s}");
        }
        // A huge configured budget is clamped: the parser's recursion stays bounded.
        let deep = format!("{}1{}", "(".repeat(3_000), ")".repeat(3_000));
        assert_eq!(parse(&deep, usize::MAX, 1 << 20).unwrap_err(), ParseError::TooDeep);
        assert_eq!(tree_depth_limit(usize::MAX), tree_depth_limit(MAX_DEPTH_CEILING));
    }
}
