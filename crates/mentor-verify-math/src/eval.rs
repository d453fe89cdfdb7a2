//! Evaluation of scalar expressions to exact complex rationals when possible, floating-point
//! complex numbers otherwise, under a size bound.
//!
//! Rational arithmetic stays exact (`0.1 + 0.2 == 3/10`); roots of perfect powers stay exact
//! (`\sqrt{8}/\sqrt{2} == 2` is approximate, `\sqrt{16} == 4` exact). A value that would need
//! more than `max_bits` bits falls back to `f64`, and one that does not fit an `f64` either is
//! refused with [`EvalError::TooBig`]: `10^{10^{10}}` is refused before anything is allocated.

use std::collections::HashMap;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use crate::ast::Node;
use crate::lexer::Func;

/// A complex value, exact or approximate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Exact(BigRational, BigRational),
    Approx(f64, f64),
}

/// Why a value could not be computed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EvalError {
    /// Division by zero, log of zero, a domain error: the expression has no value here.
    Undefined,
    /// The value is too large to compute within the bounds.
    TooBig(String),
    /// Not a number (a set, a relation, a free variable without a value).
    NotScalar,
}

type R = Result<Val, EvalError>;

/// Evaluation context: variable values and bounds.
pub(crate) struct Ctx<'a> {
    pub(crate) vars: &'a HashMap<String, Val>,
    pub(crate) max_bits: u64,
    /// Remaining work budget: every node visited costs one unit, an exact value a number of
    /// units growing with the square of its size (big-rational arithmetic reduces by a gcd,
    /// quadratic in the number of limbs), a factorial or binomial one unit per step.
    pub(crate) budget: usize,
    /// Set when some value computed on the way was not real (`\sqrt{x}` at a negative `x`):
    /// the point is outside the real domain of the expression, even if its value is real
    /// (`\sqrt{x}\sqrt{y}` at two negatives).
    pub(crate) nonreal: bool,
}

impl Ctx<'_> {
    /// Takes `units` from the budget, or refuses with [`EvalError::TooBig`] (the budget is then
    /// spent).
    fn spend(&mut self, units: usize) -> Result<(), EvalError> {
        match self.budget.checked_sub(units) {
            Some(left) => {
                self.budget = left;
                Ok(())
            }
            None => {
                self.budget = 0;
                Err(EvalError::TooBig("too many operations".into()))
            }
        }
    }
}

/// Work units of having computed `v` (see [`Ctx::budget`]): limbs squared over 64, so 64 for
/// a value of 4096 bits, 1024 for 16384 bits; nothing under 512 bits or for floating point.
fn size_cost(v: &Val) -> usize {
    match v {
        Val::Exact(a, b) => {
            let limbs = ((bits(a) + bits(b)) / 64) as usize;
            limbs * limbs / 64
        }
        Val::Approx(..) => 0,
    }
}

fn bits(q: &BigRational) -> u64 {
    q.numer().bits() + q.denom().bits()
}

fn q(n: i64) -> BigRational {
    BigRational::from_integer(BigInt::from(n))
}

fn qf(x: &BigRational) -> f64 {
    x.to_f64().unwrap_or(f64::NAN)
}

impl Val {
    pub(crate) fn real(x: BigRational) -> Val {
        Val::Exact(x, BigRational::zero())
    }

    /// The value as `f64` real and imaginary parts.
    pub(crate) fn approx(&self) -> (f64, f64) {
        match self {
            Val::Exact(a, b) => (qf(a), qf(b)),
            Val::Approx(a, b) => (*a, *b),
        }
    }

    /// The exact real value, if this is an exact real.
    pub(crate) fn exact_real(&self) -> Option<&BigRational> {
        match self {
            Val::Exact(a, b) if b.is_zero() => Some(a),
            _ => None,
        }
    }

    fn is_zero(&self) -> bool {
        match self {
            Val::Exact(a, b) => a.is_zero() && b.is_zero(),
            Val::Approx(a, b) => *a == 0.0 && *b == 0.0,
        }
    }
}

fn check_size(v: Val, max_bits: u64) -> R {
    match v {
        Val::Exact(a, b) if bits(&a) + bits(&b) > max_bits => {
            let (x, y) = (qf(&a), qf(&b));
            if x.is_finite() && y.is_finite() {
                Ok(Val::Approx(x, y))
            } else {
                Err(EvalError::TooBig(format!("a number with more than {max_bits} bits")))
            }
        }
        Val::Approx(x, y) if x.is_nan() || y.is_nan() => Err(EvalError::Undefined),
        v => Ok(v),
    }
}

pub(crate) fn add(a: &Val, b: &Val) -> Val {
    match (a, b) {
        (Val::Exact(a1, b1), Val::Exact(a2, b2)) => Val::Exact(a1 + a2, b1 + b2),
        _ => {
            let ((x1, y1), (x2, y2)) = (a.approx(), b.approx());
            Val::Approx(x1 + x2, y1 + y2)
        }
    }
}

pub(crate) fn neg(a: &Val) -> Val {
    match a {
        Val::Exact(x, y) => Val::Exact(-x, -y),
        Val::Approx(x, y) => Val::Approx(-x, -y),
    }
}

pub(crate) fn mul(a: &Val, b: &Val) -> Val {
    match (a, b) {
        (Val::Exact(a1, b1), Val::Exact(a2, b2)) => {
            if b1.is_zero() && b2.is_zero() {
                Val::Exact(a1 * a2, BigRational::zero())
            } else {
                Val::Exact(a1 * a2 - b1 * b2, a1 * b2 + b1 * a2)
            }
        }
        _ => {
            let ((x1, y1), (x2, y2)) = (a.approx(), b.approx());
            if y1 == 0.0 && y2 == 0.0 {
                Val::Approx(x1 * x2, 0.0)
            } else {
                Val::Approx(x1 * x2 - y1 * y2, x1 * y2 + y1 * x2)
            }
        }
    }
}

pub(crate) fn recip(a: &Val) -> R {
    if a.is_zero() {
        return Err(EvalError::Undefined);
    }
    Ok(match a {
        Val::Exact(x, y) => {
            if y.is_zero() {
                Val::Exact(x.recip(), BigRational::zero())
            } else {
                let d = x * x + y * y;
                Val::Exact(x / &d, -y / &d)
            }
        }
        Val::Approx(x, y) => {
            if *y == 0.0 {
                Val::Approx(1.0 / x, 0.0)
            } else {
                let d = x * x + y * y;
                Val::Approx(x / d, -y / d)
            }
        }
    })
}

// Small complex f64 helpers.
fn c_ln(x: f64, y: f64) -> (f64, f64) {
    ((x * x + y * y).sqrt().ln(), y.atan2(x))
}
fn c_exp(x: f64, y: f64) -> (f64, f64) {
    let m = x.exp();
    if y == 0.0 {
        (m, 0.0)
    } else {
        (m * y.cos(), m * y.sin())
    }
}
fn c_mul(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

fn approx_pow(b: (f64, f64), e: (f64, f64)) -> R {
    if b.1 == 0.0 && e.1 == 0.0 && (b.0 >= 0.0 || e.0.fract() == 0.0) {
        let r = b.0.powf(e.0);
        return finite(r, 0.0);
    }
    if b == (0.0, 0.0) {
        return if e.0 > 0.0 { Ok(Val::Approx(0.0, 0.0)) } else { Err(EvalError::Undefined) };
    }
    let l = c_ln(b.0, b.1);
    let (x, y) = c_exp(c_mul(l, e).0, c_mul(l, e).1);
    finite(x, y)
}

fn finite(x: f64, y: f64) -> R {
    if x.is_nan() || y.is_nan() {
        Err(EvalError::Undefined)
    } else if x.is_infinite() || y.is_infinite() {
        Err(EvalError::TooBig("a power too large for floating point".into()))
    } else {
        Ok(Val::Approx(x, y))
    }
}

/// Exact `n`-th root of a non-negative integer, if it is a perfect power.
fn exact_root(x: &BigInt, n: u32) -> Option<BigInt> {
    if x.is_negative() {
        return None;
    }
    let r = x.nth_root(n);
    if r.pow(n) == *x {
        Some(r)
    } else {
        None
    }
}

fn pow(base: &Val, exp: &Val, max_bits: u64) -> R {
    if let Some(e) = exp.exact_real() {
        if e.is_integer() {
            let n = e.to_integer();
            if let Val::Exact(a, b) = base {
                if a.is_zero() && b.is_zero() {
                    return if n.is_positive() {
                        Ok(Val::real(BigRational::zero()))
                    } else if n.is_zero() {
                        Ok(Val::real(BigRational::one()))
                    } else {
                        Err(EvalError::Undefined)
                    };
                }
                let base_bits = bits(a) + bits(b);
                let n_abs = n.abs();
                let fits = n_abs.to_u64().is_some_and(|k| {
                    // |1| and |-1| never grow.
                    (b.is_zero() && a.abs().is_one()) || k.saturating_mul(base_bits) <= max_bits
                });
                if fits {
                    let k = n_abs.to_u64().unwrap_or(0);
                    let mut result = Val::real(BigRational::one());
                    let mut sq = base.clone();
                    let mut k_left = if b.is_zero() && a.abs().is_one() { k % 2 } else { k };
                    while k_left > 0 {
                        if k_left & 1 == 1 {
                            result = mul(&result, &sq);
                        }
                        k_left >>= 1;
                        if k_left > 0 {
                            sq = mul(&sq, &sq);
                        }
                    }
                    return if n.is_negative() { recip(&result) } else { Ok(result) };
                }
                // Too big to be exact: try floating point, refuse if that overflows too.
                let nf = n.to_f64().unwrap_or(f64::INFINITY);
                return approx_pow(base.approx(), (nf, 0.0));
            }
        } else if let Val::Exact(a, b) = base {
            // Rational exponent p/q on a non-negative rational: exact if a perfect power.
            let den = e.denom().to_u32().filter(|d| *d <= 64);
            if let (Some(d), true, true) = (den, b.is_zero(), !a.is_negative()) {
                if let (Some(rn), Some(rd)) = (exact_root(a.numer(), d), exact_root(a.denom(), d)) {
                    let root = Val::real(BigRational::new(rn, rd));
                    return pow(&root, &Val::real(BigRational::from_integer(e.numer().clone())), max_bits);
                }
            }
        }
    }
    approx_pow(base.approx(), exp.approx())
}

fn real_fn(v: &Val, f: fn(f64) -> f64) -> R {
    let (x, y) = v.approx();
    if y.abs() > 1e-12 * x.abs().max(1.0) {
        return Err(EvalError::Undefined);
    }
    let r = f(x);
    if r.is_finite() {
        Ok(Val::Approx(r, 0.0))
    } else {
        Err(EvalError::Undefined)
    }
}

fn func(f: Func, v: &Val, max_bits: u64) -> R {
    match f {
        Func::Sqrt => {
            if let Some(a) = v.exact_real() {
                if a.is_negative() {
                    // sqrt(-a) = i sqrt(a)
                    let r = pow(&Val::real(-a), &Val::real(BigRational::new(1.into(), 2.into())), max_bits)?;
                    return Ok(mul(&r, &Val::Exact(BigRational::zero(), BigRational::one())));
                }
            }
            pow(v, &Val::real(BigRational::new(1.into(), 2.into())), max_bits)
        }
        Func::Abs => match v {
            Val::Exact(a, b) if b.is_zero() => Ok(Val::real(a.abs())),
            _ => {
                let (x, y) = v.approx();
                Ok(Val::Approx(x.hypot(y), 0.0))
            }
        },
        Func::Exp => {
            if v.is_zero() {
                return Ok(Val::real(BigRational::one()));
            }
            let (x, y) = v.approx();
            let (a, b) = c_exp(x, y);
            finite(a, b)
        }
        Func::Ln | Func::Log => {
            if let Some(a) = v.exact_real() {
                if a.is_one() {
                    return Ok(Val::real(BigRational::zero()));
                }
            }
            let (x, y) = v.approx();
            if x == 0.0 && y == 0.0 {
                return Err(EvalError::Undefined);
            }
            let (a, b) = c_ln(x, y);
            finite(a, b)
        }
        Func::Sin => real_fn(v, f64::sin),
        Func::Cos => real_fn(v, f64::cos),
        Func::Tan => real_fn(v, f64::tan),
        Func::Sec => real_fn(v, |x| 1.0 / x.cos()),
        Func::Csc => real_fn(v, |x| 1.0 / x.sin()),
        Func::Cot => real_fn(v, |x| 1.0 / x.tan()),
        Func::Asin => real_fn(v, f64::asin),
        Func::Acos => real_fn(v, f64::acos),
        Func::Atan => real_fn(v, f64::atan),
        Func::Sinh => real_fn(v, f64::sinh),
        Func::Cosh => real_fn(v, f64::cosh),
        Func::Tanh => real_fn(v, f64::tanh),
    }
}

/// `log_b x`, exact when `x` is an integer power of `b`.
fn log_base(b: &Val, x: &Val, max_bits: u64) -> R {
    if let (Some(bq), Some(xq)) = (b.exact_real(), x.exact_real()) {
        if bq.is_positive() && xq.is_positive() && !bq.is_one() {
            let k = (qf(xq).ln() / qf(bq).ln()).round();
            if k.is_finite() && k.abs() <= 4096.0 {
                let kq = Val::real(q(k as i64));
                if let Ok(p) = pow(&Val::real(bq.clone()), &kq, max_bits) {
                    if p.exact_real() == Some(xq) {
                        return Ok(kq);
                    }
                }
            }
        }
    }
    let (lx, lb) = (func(Func::Ln, x, max_bits)?, func(Func::Ln, b, max_bits)?);
    let r = recip(&lb)?;
    Ok(mul(&lx, &r))
}

fn nonneg_small_int(v: &Val, limit: u64) -> Option<u64> {
    let a = v.exact_real()?;
    if !a.is_integer() || a.is_negative() {
        return None;
    }
    a.to_integer().to_u64().filter(|n| *n <= limit)
}

/// Evaluates a scalar expression.
pub(crate) fn eval(n: &Node, ctx: &mut Ctx<'_>) -> R {
    ctx.spend(1)?;
    let max_bits = ctx.max_bits;
    let v = match n {
        Node::Num { value, .. } => Val::real(value.clone()),
        Node::Sym(s) => ctx.vars.get(s).cloned().ok_or(EvalError::NotScalar)?,
        Node::Pi => Val::Approx(std::f64::consts::PI, 0.0),
        Node::E => Val::Approx(std::f64::consts::E, 0.0),
        Node::I => Val::Exact(BigRational::zero(), BigRational::one()),
        Node::Inf => Val::Approx(f64::INFINITY, 0.0),
        Node::Neg(a) => neg(&eval(a, ctx)?),
        Node::Recip(a) => recip(&eval(a, ctx)?)?,
        Node::Add(v) => {
            let mut acc = Val::real(BigRational::zero());
            for t in v {
                acc = check_size(add(&acc, &eval(t, ctx)?), max_bits)?;
                ctx.spend(size_cost(&acc))?;
            }
            acc
        }
        Node::Mul(v) => {
            let mut acc = Val::real(BigRational::one());
            for t in v {
                acc = check_size(mul(&acc, &eval(t, ctx)?), max_bits)?;
                ctx.spend(size_cost(&acc))?;
            }
            acc
        }
        Node::Pow(b, e) => {
            let bv = eval(b, ctx)?;
            let ev = eval(e, ctx)?;
            pow(&bv, &ev, max_bits)?
        }
        Node::Func(f, a) => func(*f, &eval(a, ctx)?, max_bits)?,
        Node::LogBase(b, x) => {
            let bv = eval(b, ctx)?;
            let xv = eval(x, ctx)?;
            log_base(&bv, &xv, max_bits)?
        }
        Node::Root(idx, x) => {
            let iv = eval(idx, ctx)?;
            let xv = eval(x, ctx)?;
            let k = nonneg_small_int(&iv, 64).filter(|k| *k >= 1).ok_or(EvalError::Undefined)?;
            // Odd roots of negative reals are real.
            match xv.exact_real().map(|a| a.is_negative()) {
                Some(true) if k % 2 == 1 => {
                    let r =
                        pow(&neg(&xv), &Val::real(BigRational::new(1.into(), BigInt::from(k))), max_bits)?;
                    neg(&r)
                }
                _ => {
                    let (x, y) = xv.approx();
                    if y == 0.0 && x < 0.0 && k % 2 == 1 {
                        Val::Approx(-(-x).powf(1.0 / k as f64), 0.0)
                    } else {
                        pow(&xv, &Val::real(BigRational::new(1.into(), BigInt::from(k))), max_bits)?
                    }
                }
            }
        }
        Node::Fact(a) => {
            let av = eval(a, ctx)?;
            let k = nonneg_small_int(&av, 1000).ok_or_else(|| {
                if av.exact_real().is_some_and(|x| x.is_integer() && x.is_positive()) {
                    EvalError::TooBig("a factorial of more than 1000".into())
                } else {
                    EvalError::Undefined
                }
            })?;
            ctx.spend(k as usize)?;
            let mut acc = BigInt::one();
            for i in 2..=k {
                acc *= i;
            }
            Val::real(BigRational::from_integer(acc))
        }
        Node::Binom(a, b) => {
            let (av, bv) = (eval(a, ctx)?, eval(b, ctx)?);
            let nn = nonneg_small_int(&av, 100_000).ok_or(EvalError::Undefined)?;
            let kk = nonneg_small_int(&bv, 100_000).ok_or(EvalError::Undefined)?;
            if kk > nn {
                Val::real(BigRational::zero())
            } else {
                let kk = kk.min(nn - kk);
                if kk > 2000 {
                    return Err(EvalError::TooBig("a binomial coefficient that large".into()));
                }
                ctx.spend(kk as usize)?;
                let mut acc = BigInt::one();
                for i in 0..kk {
                    acc = acc * (nn - i) / (i + 1);
                }
                Val::real(BigRational::from_integer(acc))
            }
        }
        Node::Percent(a) => mul(&eval(a, ctx)?, &Val::real(BigRational::new(1.into(), 100.into()))),
        Node::PlusMinus(..)
        | Node::Rel(..)
        | Node::List(_)
        | Node::Tuple(_)
        | Node::Interval { .. }
        | Node::Set(_)
        | Node::Union(_)
        | Node::Matrix(_)
        | Node::Text(_) => return Err(EvalError::NotScalar),
    };
    let v = check_size(v, max_bits)?;
    ctx.spend(size_cost(&v))?;
    ctx.nonreal |= match &v {
        Val::Exact(_, b) => !b.is_zero(),
        Val::Approx(_, b) => *b != 0.0,
    };
    Ok(v)
}

/// Whether two values are equal: exactly when both are exact, else within `rel_tol`.
pub(crate) fn values_equal(a: &Val, b: &Val, rel_tol: f64) -> bool {
    if let (Val::Exact(a1, b1), Val::Exact(a2, b2)) = (a, b) {
        return a1 == a2 && b1 == b2;
    }
    let ((x1, y1), (x2, y2)) = (a.approx(), b.approx());
    close(x1, x2, rel_tol) && close(y1, y2, rel_tol.max(1e-12))
}

fn close(x: f64, y: f64, rel_tol: f64) -> bool {
    if x.is_infinite() || y.is_infinite() {
        return x == y;
    }
    let d = (x - y).abs();
    d <= rel_tol * x.abs().max(y.abs()) || d <= 1e-12
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse;

    fn ev(s: &str) -> R {
        let vars = HashMap::new();
        let mut ctx = Ctx { vars: &vars, max_bits: 16384, budget: 10_000, nonreal: false };
        eval(&parse(s, 48, 4096).unwrap().node, &mut ctx)
    }

    #[test]
    fn exact_where_possible() {
        assert_eq!(ev("0.1+0.2").unwrap(), Val::real(BigRational::new(3.into(), 10.into())));
        assert_eq!(ev("\\sqrt{16}").unwrap(), Val::real(q(4)));
        assert_eq!(ev("8^{2/3}").unwrap(), Val::real(q(4)));
        assert_eq!(ev("\\log_2 8").unwrap(), Val::real(q(3)));
        assert_eq!(ev("\\sqrt[3]{-8}").unwrap(), Val::real(q(-2)));
        assert_eq!(ev("(1+i)(1-i)").unwrap(), Val::real(q(2)));
        assert_eq!(ev("5!").unwrap(), Val::real(q(120)));
        assert_eq!(ev("\\binom{5}{2}").unwrap(), Val::real(q(10)));
        assert!(matches!(ev("\\sqrt{2}").unwrap(), Val::Approx(..)));
    }

    #[test]
    fn huge_values_are_refused_not_computed() {
        assert!(matches!(ev("10^{10^{10}}"), Err(EvalError::TooBig(_))));
        assert!(matches!(ev("2^{2^{2^{2^{2}}}}"), Err(EvalError::TooBig(_))));
        assert!(matches!(ev("100000!"), Err(EvalError::TooBig(_))));
        assert_eq!(ev("1/0"), Err(EvalError::Undefined));
        assert_eq!(ev("(-1)^{10^{12}}").unwrap(), Val::real(q(1)));
    }
}
