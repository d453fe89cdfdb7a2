//! Equivalence of two parsed answers: containers by shape, scalars by value.
//!
//! Scalars without variables are evaluated once (exactly when rational). Scalars with
//! variables are compared at several pseudo-random rational points drawn from a fixed seed,
//! so results are deterministic. Identical canonical forms are equal without evaluating,
//! which keeps `2^{100000} = 2^{100000}` true even though evaluating it is refused.

use std::cell::Cell;
use std::collections::HashMap;

use mentor_core::MathRelation;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, ToPrimitive, Zero};

use crate::ast::Node;
use crate::config::Config;
use crate::eval::{self, Ctx, EvalError, Val};
use crate::lexer::Rel;

/// The result of comparing a prediction with the gold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cmp {
    Equal,
    /// Same kind of answer, different value; with a relation when a simple one holds.
    NotEqual(Option<MathRelation>),
    /// A different kind of answer (a set for a number, ...); the two kinds.
    WrongType(&'static str, &'static str),
    /// Several candidate answers where the gold is one.
    Multiple,
    /// Evaluation was refused; why.
    TooComplex(String),
}

/// Work units one evaluation may spend (a node visited is one; exact values cost more by
/// size, factorials and binomials by their number of steps; see `eval::eval`).
const EVAL_BUDGET: usize = 50_000;
/// Work units one whole comparison may spend: every evaluation at every sample point, and
/// every pair of items tried while matching (nested sets and lists multiply), draw on it.
/// Calibrated to about a second of the slowest work per check.
const WORK_BUDGET: usize = 1_000_000;
/// Units charged for one pairwise comparison, besides its evaluations and text.
const COMPARE_COST: usize = 16;
/// Units charged for setting up one evaluation, besides the nodes it visits.
const EVAL_CALL_COST: usize = 16;

/// One comparison's settings and the work budget all its parts share.
pub(crate) struct Cx<'a> {
    cfg: &'a Config,
    /// Whether `X\%` may equal `X` (the gold or the question is about a percentage); else a
    /// percentage is only its value, `X / 100`.
    percent: bool,
    /// Work units left.
    work: Cell<usize>,
    /// Whether some part was refused for lack of work units.
    exhausted: Cell<bool>,
}

impl<'a> Cx<'a> {
    fn new(cfg: &'a Config, percent: bool) -> Self {
        Cx { cfg, percent, work: Cell::new(WORK_BUDGET), exhausted: Cell::new(false) }
    }

    /// Takes `units` from the budget; `false` (and the budget marked exhausted) if short.
    fn charge(&self, units: usize) -> bool {
        match self.work.get().checked_sub(units) {
            Some(left) => {
                self.work.set(left);
                true
            }
            None => {
                self.work.set(0);
                self.exhausted.set(true);
                false
            }
        }
    }
}
/// Longest list, set or union matched without order (matching is quadratic).
const MAX_ITEMS: usize = 100;

/// Deterministic pseudo-random generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Removes `\pm` by expanding into a list; strips a lone `x =` prefix; unwraps one-element lists.
pub(crate) fn normalise(n: Node, other_is_relation: bool) -> Node {
    let n = expand_pm(n);
    match n {
        Node::Rel(mut items, rels)
            if !other_is_relation && rels.iter().all(|r| *r == Rel::Eq) && items.len() >= 2 =>
        {
            // `x = 5` against `5`: the value after the last `=`. `x = 1, 2`? handled by List below.
            let last = items.pop().unwrap_or(Node::Text(String::new()));
            if matches!(items.first(), Some(Node::Sym(_)))
                || items.len() >= 2
                || is_evaluable_number(&items[0])
            {
                normalise(last, other_is_relation)
            } else {
                Node::Rel(
                    {
                        items.push(last);
                        items
                    },
                    rels,
                )
            }
        }
        Node::List(items) => {
            let mut v: Vec<Node> = Vec::new();
            for it in items {
                match normalise(it, other_is_relation) {
                    Node::List(inner) => v.extend(inner),
                    other => v.push(other),
                }
            }
            if v.len() == 1 {
                v.pop().unwrap_or(Node::List(Vec::new()))
            } else {
                Node::List(v)
            }
        }
        other => other,
    }
}

fn is_evaluable_number(n: &Node) -> bool {
    n.symbols().is_empty() && n.is_scalar()
}

fn expand_pm(n: Node) -> Node {
    match n {
        Node::PlusMinus(a, b, mp) => {
            let a = a.map(|a| *a);
            let plus = match &a {
                Some(a) => Node::Add(vec![a.clone(), (*b).clone()]),
                None => (*b).clone(),
            };
            let minus = match a {
                Some(a) => Node::Add(vec![a, Node::Neg(b)]),
                None => Node::Neg(b),
            };
            if mp {
                Node::List(vec![minus, plus])
            } else {
                Node::List(vec![plus, minus])
            }
        }
        Node::List(v) => Node::List(v.into_iter().map(expand_pm).collect()),
        other => other,
    }
}

/// Compares prediction `p` against gold `g`, within [`WORK_BUDGET`] units of work; `X\%`
/// may equal `X` (as when the question is about a percentage, see [`compare_in`]).
pub(crate) fn compare(g: &Node, p: &Node, cfg: &Config) -> Cmp {
    compare_in(g, p, cfg, true)
}

/// [`compare`]; `percent`: whether `X\%` may equal `X` (the question asks for a percentage
/// or the gold is one). Otherwise a percentage is only its value (`25\%` is `0.25`).
pub(crate) fn compare_in(g: &Node, p: &Node, cfg: &Config, percent: bool) -> Cmp {
    let g_rel = matches!(g, Node::Rel(..));
    let p_rel = matches!(p, Node::Rel(..));
    let g = normalise(g.clone(), p_rel);
    let p = normalise(p.clone(), g_rel);
    let cx = Cx::new(cfg, percent || has_percent(&g));
    let result = compare_norm(&g, &p, &cx);
    // Past the budget, comparisons answer `TooComplex` and matchings built on them may have
    // read that as "different": only the refusal is reliable.
    if cx.exhausted.get() {
        return Cmp::TooComplex(format!("a comparison needing more than {WORK_BUDGET} units of work"));
    }
    result
}

/// An inequality in one variable as the interval it describes: `x \le 3` is `(-oo, 3]`,
/// `1 \le x < 4` is `[1, 4)`. Both ends open gives a two-element tuple, as the parser does.
fn rel_to_interval(items: &[Node], rels: &[Rel]) -> Option<Node> {
    let interval = |lo: Node, hi: Node, lo_closed: bool, hi_closed: bool| {
        if !lo_closed && !hi_closed {
            Node::Tuple(vec![lo, hi])
        } else {
            Node::Interval { lo: Box::new(lo), hi: Box::new(hi), lo_closed, hi_closed }
        }
    };
    let neg_inf = || Node::Neg(Box::new(Node::Inf));
    let is_var = |n: &Node| matches!(n, Node::Sym(_));
    match (items, rels) {
        ([x, a], [r]) if is_var(x) && !is_var(a) => Some(match r {
            Rel::Lt => interval(neg_inf(), a.clone(), false, false),
            Rel::Le => interval(neg_inf(), a.clone(), false, true),
            Rel::Gt => interval(a.clone(), Node::Inf, false, false),
            Rel::Ge => interval(a.clone(), Node::Inf, true, false),
            _ => return None,
        }),
        ([a, x], [r]) if is_var(x) && !is_var(a) => rel_to_interval(&[x.clone(), a.clone()], &[flip(*r)]),
        ([a, x, b], [r1, r2]) if is_var(x) => match (r1, r2) {
            (Rel::Lt | Rel::Le, Rel::Lt | Rel::Le) => {
                Some(interval(a.clone(), b.clone(), *r1 == Rel::Le, *r2 == Rel::Le))
            }
            (Rel::Gt | Rel::Ge, Rel::Gt | Rel::Ge) => {
                Some(interval(b.clone(), a.clone(), *r2 == Rel::Ge, *r1 == Rel::Ge))
            }
            _ => None,
        },
        _ => None,
    }
}

fn compare_norm(g: &Node, p: &Node, cx: &Cx<'_>) -> Cmp {
    if !cx.charge(COMPARE_COST) {
        return Cmp::TooComplex("too many comparisons".into());
    }
    if g == p {
        return Cmp::Equal;
    }
    let (gs, ps) = (g.to_string(), p.to_string());
    if !cx.charge((gs.len() + ps.len()) / 32) {
        return Cmp::TooComplex("too many comparisons".into());
    }
    if gs == ps {
        return Cmp::Equal;
    }
    // An inequality against an interval answer: compare the interval it describes.
    let interval_like = |n: &Node| matches!(n, Node::Interval { .. } | Node::Tuple(_) | Node::Union(_));
    match (g, p) {
        (Node::Rel(items, rels), other) if interval_like(other) => {
            if let Some(iv) = rel_to_interval(items, rels) {
                return compare_norm(&iv, other, cx);
            }
        }
        (other, Node::Rel(items, rels)) if interval_like(other) => {
            if let Some(iv) = rel_to_interval(items, rels) {
                return compare_norm(other, &iv, cx);
            }
        }
        _ => {}
    }
    match (g, p) {
        (Node::Text(a), Node::Text(b)) => {
            if a == b {
                Cmp::Equal
            } else {
                Cmp::NotEqual(None)
            }
        }
        (Node::Text(_), other) | (other, Node::Text(_)) if !matches!(other, Node::Text(_)) => {
            Cmp::WrongType(g.kind(), p.kind())
        }
        (g, Node::List(items)) if g.is_scalar() => {
            // Anti-hacking: several candidates for one answer is wrong even if one matches.
            let Some(first) = items.first() else { return Cmp::WrongType(g.kind(), p.kind()) };
            let distinct = items.iter().skip(1).any(|x| !matches!(compare_norm(first, x, cx), Cmp::Equal));
            if distinct {
                Cmp::Multiple
            } else {
                compare_norm(g, first, cx)
            }
        }
        (g, p) if g.is_scalar() && p.is_scalar() => scalar_eq(g, p, cx),
        (Node::List(a), Node::List(b) | Node::Set(b))
        | (Node::Set(a), Node::List(b) | Node::Set(b))
        | (Node::List(a), Node::Tuple(b)) => unordered(a, b, cx, matches!(g, Node::Set(_))),
        (Node::Tuple(a), Node::Tuple(b) | Node::List(b)) => ordered(a, b, cx),
        (Node::Matrix(rows), Node::Tuple(b)) | (Node::Tuple(b), Node::Matrix(rows))
            if rows.iter().all(|r| r.len() == 1) =>
        {
            let col: Vec<Node> = rows.iter().map(|r| r[0].clone()).collect();
            ordered(&col, b, cx)
        }
        (Node::Matrix(a), Node::Matrix(b)) => {
            if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.len() != y.len()) {
                return Cmp::NotEqual(None);
            }
            let fa: Vec<Node> = a.iter().flatten().cloned().collect();
            let fb: Vec<Node> = b.iter().flatten().cloned().collect();
            ordered(&fa, &fb, cx)
        }
        (
            Node::Interval { lo: l1, hi: h1, lo_closed: a1, hi_closed: b1 },
            Node::Interval { lo: l2, hi: h2, lo_closed: a2, hi_closed: b2 },
        ) => {
            if a1 != a2 || b1 != b2 {
                return Cmp::NotEqual(None);
            }
            all_equal(&[(l1, l2), (h1, h2)], cx)
        }
        (Node::Interval { .. }, Node::Tuple(v)) | (Node::Tuple(v), Node::Interval { .. }) if v.len() == 2 => {
            Cmp::NotEqual(None)
        }
        (Node::Union(a), Node::Union(b)) => unordered(a, b, cx, true),
        (Node::Rel(ga, gr), Node::Rel(pa, pr)) => relation_eq(ga, gr, pa, pr, cx),
        (g, p) => Cmp::WrongType(g.kind(), p.kind()),
    }
}

fn all_equal(pairs: &[(&Node, &Node)], cx: &Cx<'_>) -> Cmp {
    for (a, b) in pairs {
        match compare_norm(a, b, cx) {
            Cmp::Equal => {}
            Cmp::TooComplex(d) => return Cmp::TooComplex(d),
            _ => return Cmp::NotEqual(None),
        }
    }
    Cmp::Equal
}

fn ordered(a: &[Node], b: &[Node], cx: &Cx<'_>) -> Cmp {
    if a.len() != b.len() {
        return Cmp::NotEqual(None);
    }
    let pairs: Vec<(&Node, &Node)> = a.iter().zip(b).collect();
    all_equal(&pairs, cx)
}

/// Multiset (or set, when `dedup`) equality by greedy matching.
fn unordered(a: &[Node], b: &[Node], cx: &Cx<'_>, dedup: bool) -> Cmp {
    if a.len() > MAX_ITEMS || b.len() > MAX_ITEMS {
        return Cmp::TooComplex(format!("a list of more than {MAX_ITEMS} items"));
    }
    let dd = |v: &[Node]| -> Vec<Node> {
        let mut out: Vec<Node> = Vec::new();
        for x in v {
            if !dedup || !out.iter().any(|y| compare_norm(y, x, cx) == Cmp::Equal) {
                out.push(x.clone());
            }
        }
        out
    };
    let (a, b) = (dd(a), dd(b));
    if a.len() != b.len() {
        return Cmp::NotEqual(None);
    }
    let mut used = vec![false; b.len()];
    for x in &a {
        let mut hit = false;
        for (k, y) in b.iter().enumerate() {
            if used[k] {
                continue;
            }
            match compare_norm(x, y, cx) {
                Cmp::Equal => {
                    used[k] = true;
                    hit = true;
                    break;
                }
                Cmp::TooComplex(d) => return Cmp::TooComplex(d),
                _ => {}
            }
        }
        if !hit {
            return Cmp::NotEqual(None);
        }
    }
    Cmp::Equal
}

fn flip(r: Rel) -> Rel {
    match r {
        Rel::Lt => Rel::Gt,
        Rel::Gt => Rel::Lt,
        Rel::Le => Rel::Ge,
        Rel::Ge => Rel::Le,
        other => other,
    }
}

fn relation_eq(ga: &[Node], gr: &[Rel], pa: &[Node], pr: &[Rel], cx: &Cx<'_>) -> Cmp {
    if ga.len() != pa.len() {
        return Cmp::NotEqual(None);
    }
    if gr.len() == 1 && pr.len() == 1 && matches!(gr[0], Rel::Eq | Rel::Ne) && gr[0] == pr[0] {
        // Equations are equal when lhs - rhs are proportional: y = 2x + 3 vs 2x - y + 3 = 0.
        let dg = Node::Add(vec![ga[0].clone(), Node::Neg(Box::new(ga[1].clone()))]);
        let dp = Node::Add(vec![pa[0].clone(), Node::Neg(Box::new(pa[1].clone()))]);
        return proportional(&dg, &dp, cx);
    }
    if gr == pr {
        let pairs: Vec<(&Node, &Node)> = ga.iter().zip(pa).collect();
        return all_equal(&pairs, cx);
    }
    let flipped: Vec<Rel> = pr.iter().rev().map(|r| flip(*r)).collect();
    if gr == flipped.as_slice() {
        let pairs: Vec<(&Node, &Node)> = ga.iter().zip(pa.iter().rev()).collect();
        return all_equal(&pairs, cx);
    }
    Cmp::NotEqual(None)
}

/// `count` points for `symbols`, from a fixed seed: rationals of both signs and of varied size
/// (whole numbers 1-97 at odd points, numerators 1-97 over denominators 1-12 at even ones),
/// drawn independently per variable so that their
/// order varies from point to point. The first point is all positive and the second all
/// negative; with `positive`, every value is positive (for `\pi` and `e` taken as unknowns).
fn sample_points(symbols: &[String], count: usize, positive: bool) -> Vec<HashMap<String, Val>> {
    let mut rng = Rng(0x6d65_6e74_6f72);
    (0..count)
        .map(|k| {
            symbols
                .iter()
                .map(|s| {
                    let num = (rng.next() % 97 + 1) as i64;
                    // Whole numbers at odd points (up to 97 either way), fractions at even ones.
                    let den = if k % 2 == 1 { 1 } else { (rng.next() % 12 + 1) as i64 };
                    let negative = !positive && (k == 1 || (k > 1 && rng.next() % 2 == 1));
                    let num = if negative { -num } else { num };
                    (s.clone(), Val::real(BigRational::new(BigInt::from(num), BigInt::from(den))))
                })
                .collect()
        })
        .collect()
}

/// Whether `n` mentions the imaginary unit (its values may be non-real on purpose).
fn has_imaginary(n: &Node) -> bool {
    let mut found = false;
    visit(n, &mut |x| found |= matches!(x, Node::I));
    found
}

/// Whether a percentage appears in `n` (at its top, or in a container's items).
fn has_percent(n: &Node) -> bool {
    let mut found = false;
    let mut stack = vec![n];
    while let Some(x) = stack.pop() {
        found |= matches!(x, Node::Percent(_));
        x.for_each_child(|c| stack.push(c));
    }
    found
}

/// The values of `g` and `p` at the sample points where both are defined. Where neither
/// mentions `i`, a point outside the real domain of either side (a non-real value on the way:
/// `\log x` or `\sqrt{x}` at a negative `x`) is skipped too, and positive points are added
/// while fewer than a quarter of the points (at least two) are left; if still too few,
/// non-real values count as well. `Err(TooComplex)` for a
/// refusal, `Err(NotEqual)` for a value that is not a number.
fn values_at_points(g: &Node, p: &Node, syms: &[String], cx: &Cx<'_>) -> Result<Vec<(Val, Val)>, Cmp> {
    let n = cx.cfg.sample_points.max(2);
    let mut all = Vec::with_capacity(n);
    let mut real = Vec::with_capacity(n);
    for pt in sample_points(syms, n, false) {
        match (eval_real_at(g, &pt, cx), eval_real_at(p, &pt, cx)) {
            (Ok((a, ra)), Ok((b, rb))) => {
                if ra && rb {
                    real.push((a.clone(), b.clone()));
                }
                all.push((a, b));
            }
            (Err(EvalError::TooBig(d)), _) | (_, Err(EvalError::TooBig(d))) => {
                return Err(Cmp::TooComplex(d))
            }
            (Err(EvalError::NotScalar), _) | (_, Err(EvalError::NotScalar)) => {
                return Err(Cmp::NotEqual(None))
            }
            // Undefined on either side (a division by zero, a domain error): skipped.
            _ => {}
        }
    }
    if has_imaginary(g) || has_imaginary(p) {
        return Ok(all);
    }
    // Too few points in the real domain of both sides (`\sqrt{x}\sqrt{y}` needs both
    // positive): top up with positive points.
    let enough = (n / 4).max(2);
    if real.len() < enough {
        for pt in sample_points(syms, n, true) {
            if real.len() >= enough {
                break;
            }
            if let (Ok((a, true)), Ok((b, true))) = (eval_real_at(g, &pt, cx), eval_real_at(p, &pt, cx)) {
                real.push((a, b));
            }
        }
    }
    Ok(if real.len() >= enough { real } else { all })
}

/// Evaluates `n` at `vars`, drawing on the comparison's work budget.
fn eval_at(n: &Node, vars: &HashMap<String, Val>, cx: &Cx<'_>) -> Result<Val, EvalError> {
    eval_real_at(n, vars, cx).map(|(v, _)| v)
}

/// [`eval_at`], and whether every value computed on the way was real (the point is in the
/// real domain of `n`).
fn eval_real_at(n: &Node, vars: &HashMap<String, Val>, cx: &Cx<'_>) -> Result<(Val, bool), EvalError> {
    if !cx.charge(EVAL_CALL_COST) {
        return Err(EvalError::TooBig("too many operations".into()));
    }
    let left = cx.work.get();
    let budget = left.min(EVAL_BUDGET);
    let mut ctx = Ctx { vars, max_bits: cx.cfg.max_bits, budget, nonreal: false };
    let result = eval::eval(n, &mut ctx).map(|v| (v, !ctx.nonreal));
    cx.work.set(left - (budget - ctx.budget));
    if ctx.budget == 0 && budget == left {
        // Stopped by the comparison's budget, not by this evaluation's own.
        cx.exhausted.set(true);
    }
    result
}

fn union_symbols(a: &Node, b: &Node) -> Vec<String> {
    let mut s = a.symbols();
    s.extend(b.symbols());
    s.sort();
    s.dedup();
    s
}

/// `dg / dp` is a non-zero constant at every sample point.
fn proportional(dg: &Node, dp: &Node, cx: &Cx<'_>) -> Cmp {
    let syms = union_symbols(dg, dp);
    let mut ratio: Option<Val> = None;
    let mut compared = 0;
    for pt in sample_points(&syms, cx.cfg.sample_points.max(2), false) {
        let (a, b) = match (eval_at(dg, &pt, cx), eval_at(dp, &pt, cx)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(EvalError::TooBig(d)), _) | (_, Err(EvalError::TooBig(d))) => return Cmp::TooComplex(d),
            (Err(EvalError::NotScalar), _) | (_, Err(EvalError::NotScalar)) => return Cmp::NotEqual(None),
            _ => continue,
        };
        let zero = Val::real(BigRational::zero());
        let (az, bz) = (
            eval::values_equal(&a, &zero, cx.cfg.rel_tolerance),
            eval::values_equal(&b, &zero, cx.cfg.rel_tolerance),
        );
        if az || bz {
            if az != bz {
                return Cmp::NotEqual(None);
            }
            continue;
        }
        let r = match eval::recip(&b) {
            Ok(rb) => eval::mul(&a, &rb),
            Err(_) => continue,
        };
        match &ratio {
            None => ratio = Some(r),
            Some(r0) if eval::values_equal(r0, &r, cx.cfg.rel_tolerance) => {}
            Some(_) => return Cmp::NotEqual(None),
        }
        compared += 1;
    }
    if compared >= 1 {
        Cmp::Equal
    } else {
        Cmp::NotEqual(None)
    }
}

/// Value equality of two scalars, with the percentage rule and relation detection.
fn scalar_eq(g: &Node, p: &Node, cx: &Cx<'_>) -> Cmp {
    if g.to_string() == p.to_string() {
        return Cmp::Equal;
    }
    // `25%` vs `25` (always) or `0.25` (when configured); both percentages compare inside.
    match (g, p) {
        (Node::Percent(a), Node::Percent(b)) => return scalar_eq(a, b, cx),
        (Node::Percent(a), other) | (other, Node::Percent(a)) => {
            let direct = match scalar_eq(a, other, cx) {
                // Off by exactly 100 next to a percent sign: read as a percentage or not.
                Cmp::NotEqual(Some(MathRelation::PowerOfTen { exponent: 2 | -2 })) => {
                    Cmp::NotEqual(Some(MathRelation::Percentage))
                }
                d => d,
            };
            // `X\%` is `X` only where a percentage is asked for; else it is `X / 100`.
            let direct = match direct {
                Cmp::Equal if !cx.percent => Cmp::NotEqual(Some(MathRelation::Percentage)),
                d => d,
            };
            if direct == Cmp::Equal || !cx.cfg.percent_as_fraction {
                return direct;
            }
            let as_frac = Node::Mul(vec![
                (**a).clone(),
                Node::Recip(Box::new(Node::num(BigRational::from_integer(100.into())))),
            ]);
            return match scalar_eq(&as_frac, other, cx) {
                Cmp::Equal => Cmp::Equal,
                _ => direct,
            };
        }
        _ => {}
    }
    // Both sides use pi or e: compare them as identities in those constants first. Since pi
    // and e are transcendental, two rational expressions in them are equal exactly when they
    // are equal as functions, which exact evaluation at rational points decides without any
    // tolerance. Only used when every evaluation stays exact.
    if has_constant(g) && has_constant(p) {
        if let Some(decided) = constants_as_symbols(g, p, cx) {
            return decided;
        }
    }
    let syms = union_symbols(g, p);
    if syms.is_empty() {
        let empty = HashMap::new();
        return match (eval_at(g, &empty, cx), eval_at(p, &empty, cx)) {
            (Ok(a), Ok(b)) => {
                if eval::values_equal(&a, &b, cx.cfg.rel_tolerance) {
                    Cmp::Equal
                } else {
                    Cmp::NotEqual(relation(&a, &b, p, cx))
                }
            }
            (Err(EvalError::TooBig(d)), _) | (_, Err(EvalError::TooBig(d))) => Cmp::TooComplex(d),
            _ => Cmp::NotEqual(None),
        };
    }
    let values = match values_at_points(g, p, &syms, cx) {
        Ok(v) => v,
        Err(c) => return c,
    };
    for (a, b) in &values {
        if !eval::values_equal(a, b, cx.cfg.rel_tolerance) {
            return Cmp::NotEqual(symbolic_sign_flip(g, p, &syms, cx));
        }
    }
    if values.is_empty() {
        Cmp::NotEqual(None)
    } else {
        Cmp::Equal
    }
}

/// The canonical text of an answer for feedback: exact values as reduced fractions
/// (`4\frac{2}{3}` gives `14/3`), containers element by element, the rest as parsed. Within
/// its own [`WORK_BUDGET`]; what is not evaluated in it is shown as parsed.
pub(crate) fn pretty(n: &Node, cfg: &Config) -> String {
    pretty_in(n, &Cx::new(cfg, true))
}

fn pretty_in(n: &Node, cx: &Cx<'_>) -> String {
    let pretty = pretty_in;
    let items = |v: &[Node]| v.iter().map(|x| pretty(x, cx)).collect::<Vec<_>>().join(", ");
    match n {
        Node::Percent(a) => format!("{}%", pretty(a, cx)),
        Node::List(v) => items(v),
        Node::Tuple(v) => format!("({})", items(v)),
        Node::Set(v) => format!("{{{}}}", items(v)),
        Node::Interval { lo, hi, lo_closed, hi_closed } => format!(
            "{}{}, {}{}",
            if *lo_closed { "[" } else { "(" },
            pretty(lo, cx),
            pretty(hi, cx),
            if *hi_closed { "]" } else { ")" }
        ),
        s if s.is_scalar() && s.symbols().is_empty() => match eval_at(s, &HashMap::new(), cx) {
            Ok(Val::Exact(a, b)) if b.is_zero() => a.to_string(),
            Ok(Val::Exact(a, b)) => format!("{a} + {b}*i"),
            _ => s.to_string(),
        },
        other => other.to_string(),
    }
}

fn has_constant(n: &Node) -> bool {
    let mut found = false;
    visit(n, &mut |x| found |= matches!(x, Node::Pi | Node::E));
    found
}

/// Calls `f` on every node of a scalar expression (depth bounded by the parser).
fn visit(n: &Node, f: &mut dyn FnMut(&Node)) {
    f(n);
    match n {
        Node::Neg(a) | Node::Recip(a) | Node::Func(_, a) | Node::Fact(a) | Node::Percent(a) => visit(a, f),
        Node::Pow(a, b) | Node::LogBase(a, b) | Node::Root(a, b) | Node::Binom(a, b) => {
            visit(a, f);
            visit(b, f);
        }
        Node::Add(v) | Node::Mul(v) => v.iter().for_each(|x| visit(x, f)),
        _ => {}
    }
}

fn substitute_constants(n: &Node) -> Node {
    let sub = |b: &Node| Box::new(substitute_constants(b));
    match n {
        Node::Pi => Node::Sym("\\pi".into()),
        Node::E => Node::Sym("\\e".into()),
        Node::Neg(a) => Node::Neg(sub(a)),
        Node::Recip(a) => Node::Recip(sub(a)),
        Node::Func(f, a) => Node::Func(*f, sub(a)),
        Node::Fact(a) => Node::Fact(sub(a)),
        Node::Percent(a) => Node::Percent(sub(a)),
        Node::Pow(a, b) => Node::Pow(sub(a), sub(b)),
        Node::LogBase(a, b) => Node::LogBase(sub(a), sub(b)),
        Node::Root(a, b) => Node::Root(sub(a), sub(b)),
        Node::Binom(a, b) => Node::Binom(sub(a), sub(b)),
        Node::Add(v) => Node::Add(v.iter().map(substitute_constants).collect()),
        Node::Mul(v) => Node::Mul(v.iter().map(substitute_constants).collect()),
        other => other.clone(),
    }
}

/// Exact comparison with pi and e as unknowns; `None` when some evaluation is inexact.
fn constants_as_symbols(g: &Node, p: &Node, cx: &Cx<'_>) -> Option<Cmp> {
    let (g2, p2) = (substitute_constants(g), substitute_constants(p));
    let syms = union_symbols(&g2, &p2);
    let mut verdict = Cmp::Equal;
    let mut compared = 0;
    for pt in sample_points(&syms, cx.cfg.sample_points.max(2), true) {
        match (eval_at(&g2, &pt, cx), eval_at(&p2, &pt, cx)) {
            (Ok(a), Ok(b)) if a.exact_real().is_some() && b.exact_real().is_some() => {
                compared += 1;
                if a != b {
                    verdict = Cmp::NotEqual(None);
                }
            }
            (Err(EvalError::Undefined), Err(EvalError::Undefined)) => {}
            _ => return None,
        }
    }
    (compared > 0).then_some(verdict)
}

/// `p = -g` as functions (`6 - 3x` for `3x - 6`), checked at the sample points.
fn symbolic_sign_flip(g: &Node, p: &Node, syms: &[String], cx: &Cx<'_>) -> Option<MathRelation> {
    let mut compared = 0;
    for pt in sample_points(syms, cx.cfg.sample_points.max(2), false) {
        match (eval_at(g, &pt, cx), eval_at(p, &pt, cx)) {
            (Ok(a), Ok(b)) => {
                let zero = Val::real(BigRational::zero());
                if eval::values_equal(&a, &zero, cx.cfg.rel_tolerance)
                    || !eval::values_equal(&eval::neg(&a), &b, cx.cfg.rel_tolerance)
                {
                    return None;
                }
                compared += 1;
            }
            (Err(EvalError::Undefined), Err(EvalError::Undefined)) => {}
            _ => return None,
        }
    }
    (compared > 0).then_some(MathRelation::SignFlipped)
}

fn decimals_of(p: &Node) -> Option<u32> {
    match p {
        Node::Num { decimals, .. } if *decimals != u32::MAX => Some(*decimals),
        Node::Neg(a) => decimals_of(a),
        _ => None,
    }
}

/// How a wrong prediction `b` relates to gold `a`.
fn relation(a: &Val, b: &Val, p: &Node, cx: &Cx<'_>) -> Option<MathRelation> {
    let tol = cx.cfg.rel_tolerance;
    if !eval::values_equal(a, &Val::real(BigRational::zero()), tol)
        && eval::values_equal(&eval::neg(a), b, tol)
    {
        return Some(MathRelation::SignFlipped);
    }
    // Ratio b / a = 10^k.
    if let (Some(x), Some(y)) = (a.exact_real(), b.exact_real()) {
        if !x.is_zero() && !y.is_zero() {
            let r = y / x;
            let exponent = if r.denom().is_one() {
                power_of_ten(r.numer())
            } else if r.numer().is_one() {
                power_of_ten(r.denom()).map(|k| -k)
            } else {
                None
            };
            if let Some(exponent) = exponent {
                return Some(if exponent.abs() == 2 && percent_involved(p) {
                    MathRelation::Percentage
                } else {
                    MathRelation::PowerOfTen { exponent }
                });
            }
            if (x * y).is_one() {
                return Some(MathRelation::Reciprocal);
            }
        }
    } else {
        let ((x, _), (y, _)) = (a.approx(), b.approx());
        if x != 0.0 && y != 0.0 && x.is_finite() && y.is_finite() {
            let l = (y / x).abs().log10();
            let k = l.round();
            if k != 0.0 && (l - k).abs() < 1e-9 && (y / x) > 0.0 && k.abs() <= 12.0 {
                return Some(MathRelation::PowerOfTen { exponent: k as i32 });
            }
            if ((x * y) - 1.0).abs() < 1e-9 {
                return Some(MathRelation::Reciprocal);
            }
        }
    }
    // Rounding: b has d decimals and |b - a| <= 0.5 * 10^-d.
    if let Some(d) = decimals_of(p) {
        let ((x, _), (y, _)) = (a.approx(), b.approx());
        if d <= 15 && x.is_finite() && (x - y).abs() <= 0.5 * 10f64.powi(-(d as i32)) * (1.0 + 1e-9) {
            return Some(MathRelation::Rounded { decimals: d });
        }
    }
    None
}

/// Why `p`, a chain of `=` (or `\approx`), is false: its items without variables must all have
/// one value (a decimal literal may round the value before it: `\pi = 3.14`). `None` for a
/// true chain, or anything else. `\boxed{2+2 = 3}` states a falsehood, not the value 3.
pub(crate) fn false_chain(p: &Node, cfg: &Config) -> Option<String> {
    let Node::Rel(items, rels) = p else { return None };
    if !rels.iter().all(|r| *r == Rel::Eq) {
        return None;
    }
    let cx = Cx::new(cfg, true);
    let empty = HashMap::new();
    let mut prev: Option<(&Node, Val)> = None;
    for item in items {
        if !item.is_scalar() || !item.symbols().is_empty() {
            continue;
        }
        let Ok(v) = eval_at(item, &empty, &cx) else { return None };
        if let Some((pn, pv)) = &prev {
            let rounds = |lit: &Node, exact: &Val, approx: &Val| {
                decimals_of(lit).is_some_and(|d| {
                    let ((x, _), (y, _)) = (exact.approx(), approx.approx());
                    d <= 15 && (x - y).abs() <= 0.5 * 10f64.powi(-(d as i32)) * (1.0 + 1e-9)
                })
            };
            let same = eval::values_equal(pv, &v, cfg.rel_tolerance)
                || (decimals_of(item).is_some_and(|d| d > 0) && rounds(item, pv, &v))
                || (decimals_of(pn).is_some_and(|d| d > 0) && rounds(pn, &v, pv));
            if !same {
                return Some(format!("the answer states a false equation: `{pn}` is not `{item}`"));
            }
        }
        prev = Some((item, v));
    }
    None
}

/// `k` when `n` is `10^k` for `k` in 1..=12 (cheap: no big powers are built).
fn power_of_ten(n: &BigInt) -> Option<i32> {
    let mut v = n.to_u64()?;
    let mut k = 0;
    while v >= 10 && v % 10 == 0 {
        v /= 10;
        k += 1;
    }
    (v == 1 && (1..=12).contains(&k)).then_some(k)
}

fn percent_involved(p: &Node) -> bool {
    matches!(p, Node::Percent(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse;

    fn cmp(g: &str, p: &str) -> Cmp {
        let cfg = Config::default();
        let g = parse(g, 48, 4096).unwrap().node;
        let p = parse(p, 48, 4096).unwrap().node;
        compare(&g, &p, &cfg)
    }

    #[test]
    fn scalars_and_symbols() {
        assert_eq!(cmp("\\frac{1}{2}", "0.5"), Cmp::Equal);
        assert_eq!(cmp("2\\sqrt{2}", "\\sqrt{8}"), Cmp::Equal);
        assert_eq!(cmp("x^2-1", "(x-1)(x+1)"), Cmp::Equal);
        assert_eq!(cmp("x^2+1", "(x+1)^2"), Cmp::NotEqual(None));
        assert_eq!(cmp("y = 2x + 3", "y=3+2x"), Cmp::Equal);
        assert_eq!(cmp("y = 2x + 3", "y=2x-3"), Cmp::NotEqual(None));
        assert_eq!(cmp("5", "x = 5"), Cmp::Equal);
    }

    #[test]
    fn relations_are_reported() {
        assert_eq!(cmp("5", "-5"), Cmp::NotEqual(Some(MathRelation::SignFlipped)));
        assert_eq!(cmp("3x - 6", "6 - 3x"), Cmp::NotEqual(Some(MathRelation::SignFlipped)));
        assert_eq!(cmp("3x - 6", "6 - 2x"), Cmp::NotEqual(None));
        assert_eq!(cmp("3600", "360"), Cmp::NotEqual(Some(MathRelation::PowerOfTen { exponent: -1 })));
        assert_eq!(cmp("\\frac{1}{3}", "0.33"), Cmp::NotEqual(Some(MathRelation::Rounded { decimals: 2 })));
        assert_eq!(cmp("\\frac{3}{4}", "\\frac{4}{3}"), Cmp::NotEqual(Some(MathRelation::Reciprocal)));
        assert_eq!(cmp("0.15", "15%"), Cmp::Equal);
    }

    #[test]
    fn containers() {
        assert_eq!(cmp("\\{1,2,3\\}", "\\{3,2,1\\}"), Cmp::Equal);
        assert_eq!(cmp("(1,2)", "(2,1)"), Cmp::NotEqual(None));
        assert_eq!(cmp("[2,5)", "[2,5]"), Cmp::NotEqual(None));
        assert_eq!(cmp("5", "4, 5"), Cmp::Multiple);
        assert_eq!(cmp("\\pm 2", "2, -2"), Cmp::Equal);
        assert_eq!(cmp("(-\\infty, 3]", "x \\le 3"), Cmp::Equal);
        assert_eq!(cmp("(-\\infty, 3]", "x < 3"), Cmp::NotEqual(None));
        assert_eq!(cmp("(0, \\infty)", "0 < x"), Cmp::Equal);
        assert_eq!(cmp("[1, 4)", "4 > x \\ge 1"), Cmp::Equal);
        assert!(matches!(cmp("\\{1,2\\}", "3"), Cmp::WrongType(..)));
    }
}
