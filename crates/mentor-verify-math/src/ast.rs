//! The parsed form of an answer: scalar expressions and the containers around them
//! (lists, tuples, sets, intervals, matrices, relations, text), with a canonical text form.

use std::fmt;

use num_rational::BigRational;

use crate::lexer::{Func, Rel};

/// One parsed answer or sub-expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// A literal; `decimals` counts the digits written after the point (`u32::MAX` for a
    /// repeating decimal), used to spot rounding.
    Num {
        value: BigRational,
        decimals: u32,
    },
    Sym(String),
    Pi,
    E,
    I,
    Inf,
    Neg(Box<Node>),
    /// `1 / x`.
    Recip(Box<Node>),
    /// A sum; chains are flat so that the tree depth follows bracket nesting only.
    Add(Vec<Node>),
    /// A product (explicit, implicit or a division as a reciprocal factor).
    Mul(Vec<Node>),
    Pow(Box<Node>, Box<Node>),
    Func(Func, Box<Node>),
    /// `\log_b x`.
    LogBase(Box<Node>, Box<Node>),
    /// `\sqrt[n]{x}`: index, radicand.
    Root(Box<Node>, Box<Node>),
    Fact(Box<Node>),
    Binom(Box<Node>, Box<Node>),
    Percent(Box<Node>),
    /// `a \pm b` (`a` absent for a leading `\pm`); `minus_first` for `\mp`.
    PlusMinus(Option<Box<Node>>, Box<Node>, bool),
    /// A chain `a = b`, `1 \le x < 4`.
    Rel(Vec<Node>, Vec<Rel>),
    /// Comma-separated values without brackets: an unordered list of answers.
    List(Vec<Node>),
    /// `(a, b, ..)`: ordered. A two-element tuple is also the open interval `(a, b)`.
    Tuple(Vec<Node>),
    /// An interval with at least one closed end.
    Interval {
        lo: Box<Node>,
        hi: Box<Node>,
        lo_closed: bool,
        hi_closed: bool,
    },
    /// `\{a, b\}`, `\emptyset`.
    Set(Vec<Node>),
    /// `A \cup B`.
    Union(Vec<Node>),
    Matrix(Vec<Vec<Node>>),
    /// A plain text answer (`\text{even}`), lower-cased and trimmed.
    Text(String),
}

impl Node {
    pub(crate) fn num(value: BigRational) -> Node {
        Node::Num { value, decimals: 0 }
    }

    /// Whether this is a single value (not a container, relation or text).
    pub(crate) fn is_scalar(&self) -> bool {
        !matches!(
            self,
            Node::Rel(..)
                | Node::List(_)
                | Node::Tuple(_)
                | Node::Interval { .. }
                | Node::Set(_)
                | Node::Union(_)
                | Node::Matrix(_)
                | Node::Text(_)
                | Node::PlusMinus(..)
        )
    }

    /// A short name of the kind of answer, for feedback.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Node::Rel(..) => "relation",
            Node::List(_) => "list",
            Node::Tuple(_) => "tuple",
            Node::Interval { .. } => "interval",
            Node::Set(_) => "set",
            Node::Union(_) => "union of intervals",
            Node::Matrix(_) => "matrix",
            Node::Text(_) => "text",
            Node::PlusMinus(..) => "plus-minus pair",
            _ => "number or expression",
        }
    }

    /// Calls `f` on each direct child, in order. Not recursive.
    pub(crate) fn for_each_child<'a>(&'a self, mut f: impl FnMut(&'a Node)) {
        match self {
            Node::Num { .. } | Node::Sym(_) | Node::Pi | Node::E | Node::I | Node::Inf | Node::Text(_) => {}
            Node::Neg(a) | Node::Recip(a) | Node::Func(_, a) | Node::Fact(a) | Node::Percent(a) => f(a),
            Node::Pow(a, b) | Node::LogBase(a, b) | Node::Root(a, b) | Node::Binom(a, b) => {
                f(a);
                f(b);
            }
            Node::PlusMinus(a, b, _) => {
                if let Some(a) = a {
                    f(a);
                }
                f(b);
            }
            Node::Interval { lo, hi, .. } => {
                f(lo);
                f(hi);
            }
            Node::Add(v)
            | Node::Mul(v)
            | Node::Rel(v, _)
            | Node::List(v)
            | Node::Tuple(v)
            | Node::Set(v)
            | Node::Union(v) => v.iter().for_each(f),
            Node::Matrix(rows) => rows.iter().flatten().for_each(f),
        }
    }

    /// Whether the tree is more than `limit` nodes deep (a leaf is one deep). Iterative, with an
    /// explicit stack, so it is safe on a tree of any depth; stops at the first path too long.
    pub(crate) fn deeper_than(&self, limit: usize) -> bool {
        let mut stack: Vec<(&Node, usize)> = vec![(self, 1)];
        while let Some((n, d)) = stack.pop() {
            if d > limit {
                return true;
            }
            n.for_each_child(|c| stack.push((c, d + 1)));
        }
        false
    }

    /// Free variables, sorted and deduplicated. Iterative.
    pub(crate) fn symbols(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(n) = stack.pop() {
            match n {
                Node::Sym(s) => out.push(s.clone()),
                n => n.for_each_child(|c| stack.push(c)),
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// Displays a node, bracketed unless it is a single symbol, a non-negative literal or a sum
/// (which brackets itself).
struct Atom<'a>(&'a Node);

impl fmt::Display for Atom<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            n @ (Node::Num { .. }
            | Node::Sym(_)
            | Node::Pi
            | Node::E
            | Node::I
            | Node::Inf
            | Node::Add(_)) => {
                let s = n.to_string();
                if s.contains('/') && !matches!(n, Node::Add(_)) {
                    write!(f, "({s})")
                } else {
                    f.write_str(&s)
                }
            }
            Node::Func(..) | Node::LogBase(..) | Node::Root(..) | Node::Binom(..) => write!(f, "{}", self.0),
            n => write!(f, "({n})"),
        }
    }
}

fn join(f: &mut fmt::Formatter<'_>, items: &[Node], sep: &str) -> fmt::Result {
    for (k, n) in items.iter().enumerate() {
        if k > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{n}")?;
    }
    Ok(())
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Num { value, .. } => write!(f, "{value}"),
            Node::Sym(s) => f.write_str(s),
            Node::Pi => f.write_str("pi"),
            Node::E => f.write_str("e"),
            Node::I => f.write_str("i"),
            Node::Inf => f.write_str("oo"),
            Node::Neg(a) => write!(f, "-{}", Atom(a)),
            Node::Recip(a) => write!(f, "1/{}", Atom(a)),
            Node::Add(v) => {
                f.write_str("(")?;
                for (k, t) in v.iter().enumerate() {
                    match t {
                        Node::Neg(x) if k > 0 => write!(f, " - {x}")?,
                        t if k > 0 => write!(f, " + {t}")?,
                        t => write!(f, "{t}")?,
                    }
                }
                f.write_str(")")
            }
            Node::Mul(v) => {
                for (k, t) in v.iter().enumerate() {
                    match t {
                        Node::Recip(x) if k > 0 => write!(f, "/{}", Atom(x))?,
                        Node::Recip(x) => write!(f, "1/{}", Atom(x))?,
                        t if k > 0 => write!(f, "*{}", Atom(t))?,
                        t => write!(f, "{}", Atom(t))?,
                    }
                }
                Ok(())
            }
            Node::Pow(a, b) => write!(f, "{}^{}", Atom(a), Atom(b)),
            Node::Func(func, a) => write!(f, "{}({a})", func.name()),
            Node::LogBase(b, a) => write!(f, "log_({b})({a})"),
            Node::Root(n, a) => write!(f, "root({n}, {a})"),
            Node::Fact(a) => write!(f, "({a})!"),
            Node::Binom(a, b) => write!(f, "binom({a}, {b})"),
            Node::Percent(a) => write!(f, "{a}%"),
            Node::PlusMinus(a, b, mp) => {
                let op = if *mp { "-+" } else { "+-" };
                match a {
                    Some(a) => write!(f, "{a} {op} {b}"),
                    None => write!(f, "{op}{b}"),
                }
            }
            Node::Rel(items, rels) => {
                for (k, n) in items.iter().enumerate() {
                    if k > 0 {
                        write!(f, " {} ", rels.get(k - 1).map_or("?", |r| r.symbol()))?;
                    }
                    write!(f, "{n}")?;
                }
                Ok(())
            }
            Node::List(v) => join(f, v, ", "),
            Node::Tuple(v) => {
                f.write_str("(")?;
                join(f, v, ", ")?;
                f.write_str(")")
            }
            Node::Interval { lo, hi, lo_closed, hi_closed } => {
                let l = if *lo_closed { "[" } else { "(" };
                let r = if *hi_closed { "]" } else { ")" };
                write!(f, "{l}{lo}, {hi}{r}")
            }
            Node::Set(v) => {
                f.write_str("{")?;
                join(f, v, ", ")?;
                f.write_str("}")
            }
            Node::Union(v) => join(f, v, " U "),
            Node::Matrix(rows) => {
                f.write_str("[")?;
                for (k, r) in rows.iter().enumerate() {
                    if k > 0 {
                        f.write_str("; ")?;
                    }
                    join(f, r, ", ")?;
                }
                f.write_str("]")
            }
            Node::Text(t) => write!(f, "\"{t}\""),
        }
    }
}
