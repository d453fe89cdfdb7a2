//! Fused CPU kernels **with a backward pass**, for the differentiable (training) forward.
//!
//! candle-nn's fused RMSNorm, softmax and RoPE have no backward, so a trainable forward has to
//! spell them with primitive ops, each a separate pass over memory with a fresh allocation
//! (and as many again in the backward). The ops here are candle custom ops whose forward is
//! one pass over contiguous rows and whose backward is itself one fused pass:
//!
//! - the masked softmax `softmax(scale * scores + mask)` over the last dim, the mask shared
//!   by all heads; backward `dscores = scale * y * (g - sum(g * y))` ([`softmax_grad`]). The
//!   model runs it fused with the product of queries and keys ([`crate::probs`]), whose
//!   forward and backward share its row kernel ([`masked_softmax_row`]) and gradient; as a
//!   node of its own it is the tests' reference (built for tests only).
//! - [`rms_norm`]: `x / sqrt(mean(x²) + eps) * w`; backward with respect to `x` and `w`.
//! - [`rope`]: rotate-half rotary embedding of `[B, H, T, hd]` (any strides) by per-row
//!   `cos`/`sin` `[B, T, hd/2]`; the backward is the rotation by `-θ`.
//! - [`swiglu`]: `silu(gate) * up`; backward with respect to both.
//!
//! The targets' log-probs (`log_softmax(logits)[target]` per row, backward
//! `g * (onehot - softmax)`) are one node with the LM head, in mentor-policy; its forward is
//! [`token_logprobs_fwd`].
//!
//! They compute the same function as the composite ops (same operation order, so the
//! results differ by float rounding only; see the tests, which also compare gradients with
//! candle's autograd of the composite ops). Only CPU tensors in `f32` or `f64` are supported
//! ([`supported`]); other dtypes and devices get an error, and the model falls back to the
//! composite ops for them. Gradients flow to the arguments named above only (not to the
//! mask, `cos`/`sin` or targets), and the backward itself is not differentiable again.

use candle_core::backend::BackendStorage;
use candle_core::{
    bail, CpuStorage, CustomOp1, CustomOp2, CustomOp3, DType, Layout, Shape, Tensor, WithDType,
};
use rayon::prelude::*;

/// Rows handed to one rayon task at least (small rows are too cheap to split finer).
const MIN_ROWS: usize = 16;

/// Whether the kernels of this module run on `t` (a CPU tensor in `f32` or `f64`).
pub fn supported(t: &Tensor) -> bool {
    t.device().is_cpu() && matches!(t.dtype(), DType::F32 | DType::F64)
}

/// The float types the kernels compute in (`f32` and `f64`).
pub trait Real: WithDType + std::ops::Neg<Output = Self> {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// `exp(x)` rounds to exactly 0 for every `x` below this.
    const EXP_ZERO_BELOW: Self;
    /// `e^self` (f32: [`crate::vexp::exp_scalar`], the same bits on every CPU).
    fn exp(self) -> Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// The natural logarithm (f32: [`crate::vexp::ln`], libm-free).
    fn ln(self) -> Self;
    /// `x = exp_or_zero(x)` for every element (f32: [`crate::vexp`], 8 lanes at a time).
    fn exp_slice(xs: &mut [Self]) {
        for x in xs {
            *x = exp_or_zero(*x);
        }
    }
    /// `Σ exp_or_zero(x - shift)` over `xs`.
    fn sum_exp_minus(xs: &[Self], shift: Self) -> Self {
        let mut sum = Self::ZERO;
        for &x in xs {
            sum += exp_or_zero(x - shift);
        }
        sum
    }
}

impl Real for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    // Below 2^-150 = e^-103.97, half the smallest subnormal.
    const EXP_ZERO_BELOW: Self = -104.0;
    // The vector path's arithmetic on one lane, and a libm-free `ln` (`crate::vexp`): the same
    // bits on every CPU and C library.
    fn exp(self) -> Self {
        crate::vexp::exp_scalar(self)
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn ln(self) -> Self {
        crate::vexp::ln(self)
    }
    // 8 lanes at a time; 0 below -87.33 rather than `EXP_ZERO_BELOW` (it drops subnormals,
    // under 1e-38 of the sums of at least 1 these enter).
    fn exp_slice(xs: &mut [Self]) {
        crate::vexp::exp_in_place(xs)
    }
    fn sum_exp_minus(xs: &[Self], shift: Self) -> Self {
        crate::vexp::sum_exp_minus(xs, shift)
    }
}

impl Real for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    // Below 2^-1075 = e^-745.13, half the smallest subnormal.
    const EXP_ZERO_BELOW: Self = -746.0;
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
}

/// Calls `$f::<T>($args)` for the dtype of `$s`, `T` being `f32` or `f64`; errors otherwise.
macro_rules! by_dtype {
    ($name:expr, $s:expr, $f:ident($($arg:expr),*)) => {
        match $s.dtype() {
            DType::F32 => $f::<f32>($($arg),*),
            DType::F64 => $f::<f64>($($arg),*),
            d => bail!("{}: only f32 and f64 are supported, not {d:?}", $name),
        }
    };
}

/// The elements of a contiguous `layout` of `s` (an error naming `op` for another dtype or a
/// strided layout).
pub fn contiguous<'a, T: WithDType>(
    s: &'a CpuStorage,
    layout: &Layout,
    op: &str,
) -> candle_core::Result<&'a [T]> {
    let all = T::cpu_storage_as_slice(s)?;
    match layout.contiguous_offsets() {
        Some((a, b)) => Ok(&all[a..b]),
        None => bail!("{op}: input must be contiguous"),
    }
}

/// `exp(x)` that returns 0 without calling `exp` where it is exactly 0 anyway (blocked
/// entries sit ~1e9 below the row maximum, where libm's `exp` takes a slow underflow path).
fn exp_or_zero<T: Real>(x: T) -> T {
    if x < T::EXP_ZERO_BELOW {
        T::ZERO
    } else {
        x.exp()
    }
}

/// One row of the masked softmax: `d = softmax(scale * s + m)`, in this order: scaled and
/// masked, the maximum subtracted, exponentials ([`Real::exp_slice`]), divided by their sum
/// taken in order. mentor-policy's decode attention shares it, so the two round alike.
pub fn masked_softmax_row<T: Real>(d: &mut [T], s: &[T], m: &[T], scale: T) {
    let mut max = T::from_f64(f64::NEG_INFINITY);
    for ((d, &s), &m) in d.iter_mut().zip(s).zip(m) {
        *d = s * scale + m;
        if *d > max {
            max = *d;
        }
    }
    for d in d.iter_mut() {
        *d -= max;
    }
    T::exp_slice(d);
    let mut sum = T::ZERO;
    for d in d.iter() {
        sum += *d;
    }
    for d in d.iter_mut() {
        *d /= sum;
    }
}

/// The gradient of the masked softmax's input from its output `y` and the output's gradient
/// `g`: `scale * y * (g - sum(g * y))` per last-dim row (outside the graph).
pub fn softmax_grad(y: &Tensor, g: &Tensor, scale: f64) -> candle_core::Result<Tensor> {
    y.apply_op2_no_bwd(&g.contiguous()?, &SoftmaxBwd { scale })
}

/// `scale * y * (g - sum(g * y))` per last-dim row, from the softmax output `y` and its
/// gradient `g`.
struct SoftmaxBwd {
    scale: f64,
}

fn softmax_bwd<T: Real>(
    y: &CpuStorage,
    ly: &Layout,
    g: &CpuStorage,
    lg: &Layout,
    scale: f64,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let y = contiguous::<T>(y, ly, "masked_softmax backward")?;
    let g = contiguous::<T>(g, lg, "masked_softmax backward")?;
    let tk = ly.dims().last().copied().unwrap_or(1).max(1);
    let scale = T::from_f64(scale);
    let mut dst = vec![T::ZERO; y.len()];
    dst.par_chunks_mut(tk).with_min_len(MIN_ROWS).enumerate().for_each(|(row, d)| {
        let y = &y[row * tk..(row + 1) * tk];
        let g = &g[row * tk..(row + 1) * tk];
        let mut dot = T::ZERO;
        for (&y, &g) in y.iter().zip(g) {
            dot += y * g;
        }
        for ((d, &y), &g) in d.iter_mut().zip(y).zip(g) {
            *d = y * (g - dot) * scale;
        }
    });
    Ok((T::to_cpu_storage_owned(dst), ly.shape().clone()))
}

impl CustomOp2 for SoftmaxBwd {
    fn name(&self) -> &'static str {
        "masked-softmax-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        by_dtype!(self.name(), s1, softmax_bwd(s1, l1, s2, l2, self.scale))
    }
}

/// RMSNorm over the last dim, `x / sqrt(mean(x²) + eps) * w` (candle-nn's `rms_norm_slow`,
/// with its `eps` as an `f32`). `w` is `[hidden]`. Differentiable in `x` and `w`.
pub fn rms_norm(x: &Tensor, w: &Tensor, eps: f32) -> candle_core::Result<Tensor> {
    let d = x.dims().last().copied().unwrap_or(0);
    if w.dims() != [d] || d == 0 {
        bail!("rms_norm: weight {:?} does not match the last dim of {:?}", w.dims(), x.dims());
    }
    x.contiguous()?.apply_op2(&w.contiguous()?, RmsNorm { eps })
}

struct RmsNorm {
    eps: f32,
}

/// `sqrt(mean(x²) + eps)` of one row.
fn rms<T: Real>(x: &[T], eps: T) -> T {
    let mut sq = T::ZERO;
    for &v in x {
        sq += v * v;
    }
    (sq / T::from_f64(x.len() as f64) + eps).sqrt()
}

fn rms_norm_fwd<T: Real>(
    x: &CpuStorage,
    lx: &Layout,
    w: &CpuStorage,
    lw: &Layout,
    eps: f32,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let x = contiguous::<T>(x, lx, "rms_norm")?;
    let w = contiguous::<T>(w, lw, "rms_norm")?;
    let d = w.len();
    let eps = T::from_f64(eps as f64);
    let mut dst = vec![T::ZERO; x.len()];
    dst.par_chunks_mut(d).with_min_len(MIN_ROWS).enumerate().for_each(|(row, dst)| {
        let x = &x[row * d..(row + 1) * d];
        let r = rms(x, eps);
        for ((o, &x), &w) in dst.iter_mut().zip(x).zip(w) {
            *o = x / r * w;
        }
    });
    Ok((T::to_cpu_storage_owned(dst), lx.shape().clone()))
}

impl CustomOp2 for RmsNorm {
    fn name(&self) -> &'static str {
        "rms-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        by_dtype!(self.name(), s1, rms_norm_fwd(s1, l1, s2, l2, self.eps))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let d = w.elem_count();
        let n = x.elem_count() / d;
        // One pass writes `[n + 1, d]`: the `n` rows of dx, then dw.
        let both = x.contiguous()?.apply_op3_no_bwd(w, &grad.contiguous()?, &RmsNormBwd { eps: self.eps })?;
        let dx = both.narrow(0, 0, n)?.reshape(x.shape())?;
        let dw = both.narrow(0, n, 1)?.reshape(w.shape())?;
        Ok((Some(dx), Some(dw)))
    }
}

/// With `r = sqrt(mean(x²) + eps)`, `n = x / r` and `gw = g * w`:
/// `dx = (gw - n * mean(gw * n)) / r` and `dw = sum over rows of g * n`.
struct RmsNormBwd {
    eps: f32,
}

fn rms_norm_bwd<T: Real>(
    x: &CpuStorage,
    lx: &Layout,
    w: &CpuStorage,
    lw: &Layout,
    g: &CpuStorage,
    lg: &Layout,
    eps: f32,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let x = contiguous::<T>(x, lx, "rms_norm backward")?;
    let w = contiguous::<T>(w, lw, "rms_norm backward")?;
    let g = contiguous::<T>(g, lg, "rms_norm backward")?;
    let d = w.len();
    let n = x.len() / d;
    let eps = T::from_f64(eps as f64);
    let inv_d = T::from_f64(1.0 / d as f64);
    let mut dst = vec![T::ZERO; x.len() + d];
    let (dx, dw) = dst.split_at_mut(x.len());
    let mut r = vec![T::ZERO; n];
    dx.par_chunks_mut(d).with_min_len(MIN_ROWS).zip(r.par_iter_mut()).enumerate().for_each(
        |(row, (dx, r))| {
            let x = &x[row * d..(row + 1) * d];
            let g = &g[row * d..(row + 1) * d];
            *r = rms(x, eps);
            let mut dot = T::ZERO;
            for ((&x, &g), &w) in x.iter().zip(g).zip(w) {
                dot += g * w * (x / *r);
            }
            let mean = dot * inv_d;
            for (((o, &x), &g), &w) in dx.iter_mut().zip(x).zip(g).zip(w) {
                *o = (g * w - x / *r * mean) / *r;
            }
        },
    );
    for (row, &r) in r.iter().enumerate() {
        let x = &x[row * d..(row + 1) * d];
        let g = &g[row * d..(row + 1) * d];
        for ((o, &x), &g) in dw.iter_mut().zip(x).zip(g) {
            *o += g * (x / r);
        }
    }
    Ok((T::to_cpu_storage_owned(dst), Shape::from((n + 1, d))))
}

impl CustomOp3 for RmsNormBwd {
    fn name(&self) -> &'static str {
        "rms-norm-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        by_dtype!(self.name(), s1, rms_norm_bwd(s1, l1, s2, l2, s3, l3, self.eps))
    }
}

/// Rotate-half RoPE (HF layout): `x` is `[B, H, T, hd]` with any strides (e.g. a transposed
/// projection), `cos`/`sin` are `[B, T, hd/2]` (per-row positions). With `x = [x1, x2]`
/// halves: `[x1 cos - x2 sin, x2 cos + x1 sin]`. Returns a contiguous tensor; differentiable
/// in `x`.
pub fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> candle_core::Result<Tensor> {
    let (b, _h, t, hd) = x.dims4()?;
    if hd % 2 != 0 || cos.dims() != [b, t, hd / 2] || sin.dims() != cos.dims() {
        bail!(
            "rope: x {:?} needs cos/sin [{b}, {t}, {}], got {:?} and {:?}",
            x.dims(),
            hd / 2,
            cos.dims(),
            sin.dims()
        );
    }
    x.apply_op3(&cos.contiguous()?, &sin.contiguous()?, Rope { inverse: false })
}

/// The rotation by `θ` (or by `-θ` when `inverse`: the backward of the rotation by `θ`).
struct Rope {
    inverse: bool,
}

fn rope_fwd<T: Real>(
    x: &CpuStorage,
    lx: &Layout,
    c: &CpuStorage,
    lc: &Layout,
    s: &CpuStorage,
    ls: &Layout,
    inverse: bool,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let all = T::cpu_storage_as_slice(x)?;
    let cos = contiguous::<T>(c, lc, "rope")?;
    let sin = contiguous::<T>(s, ls, "rope")?;
    let (dims, st, start) = (lx.dims(), lx.stride(), lx.start_offset());
    if dims.len() != 4 || st.len() != 4 {
        bail!("rope: x must have 4 dims, got {dims:?}");
    }
    let (h, t, hd) = (dims[1], dims[2], dims[3]);
    let half = hd / 2;
    let mut dst = vec![T::ZERO; lx.shape().elem_count()];
    if hd == 0 {
        return Ok((T::to_cpu_storage_owned(dst), lx.shape().clone()));
    }
    dst.par_chunks_mut(hd).with_min_len(MIN_ROWS).enumerate().for_each(|(row, d)| {
        let (bi, hi, ti) = (row / (h * t), (row / t) % h, row % t);
        let base = start + bi * st[0] + hi * st[1] + ti * st[2];
        let cs = (bi * t + ti) * half;
        let (cos, sin) = (&cos[cs..cs + half], &sin[cs..cs + half]);
        let (d1, d2) = d.split_at_mut(half);
        for j in 0..half {
            let x1 = all[base + j * st[3]];
            let x2 = all[base + (j + half) * st[3]];
            let s = if inverse { -sin[j] } else { sin[j] };
            d1[j] = x1 * cos[j] - x2 * s;
            d2[j] = x2 * cos[j] + x1 * s;
        }
    });
    Ok((T::to_cpu_storage_owned(dst), lx.shape().clone()))
}

impl CustomOp3 for Rope {
    fn name(&self) -> &'static str {
        "rope-rotate-half"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        by_dtype!(self.name(), s1, rope_fwd(s1, l1, s2, l2, s3, l3, self.inverse))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let dx = grad.apply_op3_no_bwd(cos, sin, &Rope { inverse: !self.inverse })?;
        Ok((Some(dx), None, None))
    }
}

/// The gradient of [`rope`]'s input from its output's gradient `grad` (the rotation by `-θ`,
/// outside the graph).
pub fn rope_grad(grad: &Tensor, cos: &Tensor, sin: &Tensor) -> candle_core::Result<Tensor> {
    grad.apply_op3_no_bwd(&cos.contiguous()?, &sin.contiguous()?, &Rope { inverse: true })
}

/// SwiGLU's `silu(gate) * up` (`silu(a) = a / (1 + exp(-a))`), both of one shape.
/// Differentiable in `gate` and `up`.
pub fn swiglu(gate: &Tensor, up: &Tensor) -> candle_core::Result<Tensor> {
    if gate.dims() != up.dims() {
        bail!("swiglu: gate {:?} and up {:?} differ in shape", gate.dims(), up.dims());
    }
    gate.contiguous()?.apply_op2(&up.contiguous()?, SwiGlu)
}

struct SwiGlu;

/// Rows of this many elements are one rayon task at least.
const ELEMENTWISE_CHUNK: usize = 4096;

/// The storage of [`swiglu`]`(a, b)` for contiguous CPU storages of one shape, as its op
/// computes it. For ops that fuse it with what follows.
pub fn swiglu_fwd<T: Real>(
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let a = contiguous::<T>(a, la, "swiglu")?;
    let b = contiguous::<T>(b, lb, "swiglu")?;
    let mut dst = vec![T::ZERO; a.len()];
    dst.par_chunks_mut(ELEMENTWISE_CHUNK).enumerate().for_each(|(i, d)| {
        let o = i * ELEMENTWISE_CHUNK;
        for (d, &a) in d.iter_mut().zip(&a[o..]) {
            *d = -a;
        }
        T::exp_slice(d);
        for ((d, &a), &b) in d.iter_mut().zip(&a[o..]).zip(&b[o..]) {
            *d = a / (T::ONE + *d) * b;
        }
    });
    Ok((T::to_cpu_storage_owned(dst), la.shape().clone()))
}

impl CustomOp2 for SwiGlu {
    fn name(&self) -> &'static str {
        "swiglu"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        by_dtype!(self.name(), s1, swiglu_fwd(s1, l1, s2, l2))
    }

    fn bwd(
        &self,
        gate: &Tensor,
        up: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (da, db) = swiglu_grads(gate, up, grad)?;
        Ok((Some(da), Some(db)))
    }
}

/// The gradients of [`swiglu`]`(gate, up)` given the output's gradient `grad` (outside the
/// graph): `d gate`, `d up`.
pub fn swiglu_grads(gate: &Tensor, up: &Tensor, grad: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
    // One pass writes `[2, n]`: d gate, then d up.
    let both = gate.apply_op3_no_bwd(up, &grad.contiguous()?, &SwiGluBwd)?;
    let da = both.narrow(0, 0, 1)?.reshape(gate.shape())?;
    let db = both.narrow(0, 1, 1)?.reshape(up.shape())?;
    Ok((da, db))
}

/// With `σ = sigmoid(a)`: `d gate = g * up * σ * (1 + a * (1 - σ))`, `d up = g * silu(a)`.
struct SwiGluBwd;

fn swiglu_bwd<T: Real>(
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
    g: &CpuStorage,
    lg: &Layout,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let a = contiguous::<T>(a, la, "swiglu backward")?;
    let b = contiguous::<T>(b, lb, "swiglu backward")?;
    let g = contiguous::<T>(g, lg, "swiglu backward")?;
    let n = a.len();
    let mut dst = vec![T::ZERO; 2 * n];
    let (da, db) = dst.split_at_mut(n);
    da.par_chunks_mut(ELEMENTWISE_CHUNK).zip(db.par_chunks_mut(ELEMENTWISE_CHUNK)).enumerate().for_each(
        |(i, (da, db))| {
            let o = i * ELEMENTWISE_CHUNK;
            // `db` first holds exp(-a).
            for (e, &a) in db.iter_mut().zip(&a[o..]) {
                *e = -a;
            }
            T::exp_slice(db);
            let it = da.iter_mut().zip(db.iter_mut()).zip(&a[o..]).zip(&b[o..]).zip(&g[o..]);
            for ((((da, db), &a), &b), &g) in it {
                let sig = T::ONE / (T::ONE + *db);
                let silu = a * sig;
                *da = g * b * sig * (T::ONE + a * (T::ONE - sig));
                *db = g * silu;
            }
        },
    );
    Ok((T::to_cpu_storage_owned(dst), Shape::from((2, n))))
}

impl CustomOp3 for SwiGluBwd {
    fn name(&self) -> &'static str {
        "swiglu-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        by_dtype!(self.name(), s1, swiglu_bwd(s1, l1, s2, l2, s3, l3))
    }
}

/// Row maximum and `sum(exp(x - max))` of one row.
pub fn max_sum_exp<T: Real>(x: &[T]) -> (T, T) {
    let mut max = T::from_f64(f64::NEG_INFINITY);
    for &v in x {
        if v > max {
            max = v;
        }
    }
    (max, T::sum_exp_minus(x, max))
}

/// `log_softmax(x)[target]` per row of `x` `[.., V]` (`targets` `[..]` `u32`, each `< V`):
/// the log-probs of the targets without the `[.., V]` log-prob tensor (the forward of
/// mentor-policy's head node).
pub fn token_logprobs_fwd<T: Real>(
    x: &CpuStorage,
    lx: &Layout,
    t: &CpuStorage,
    lt: &Layout,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let x = contiguous::<T>(x, lx, "token_logprobs")?;
    let targets = contiguous::<u32>(t, lt, "token_logprobs")?;
    let v = lx.dims().last().copied().unwrap_or(0);
    if let Some(bad) = targets.iter().find(|&&t| t as usize >= v) {
        bail!("token_logprobs: target {bad} out of range for {v} classes");
    }
    let mut dst = vec![T::ZERO; targets.len()];
    dst.par_iter_mut().with_min_len(MIN_ROWS).enumerate().for_each(|(row, d)| {
        let x = &x[row * v..(row + 1) * v];
        let (max, sum) = max_sum_exp(x);
        *d = (x[targets[row] as usize] - max) - sum.ln();
    });
    Ok((T::to_cpu_storage_owned(dst), lt.shape().clone()))
}

/// Entropy of `softmax(logits)` per row: `logits` is `[.., V]`, the result `[..]`, computed
/// in one pass per row as `ln Σe − Σ(e·(x − max))/Σe` with `e = exp(x − max)`, without the
/// `[.., V]` probability tensor candle-nn's ops would allocate. A metric: not differentiable
/// (the input is detached).
pub fn token_entropy(logits: &Tensor) -> candle_core::Result<Tensor> {
    if logits.dims().is_empty() {
        bail!("token_entropy: logits need a class dimension");
    }
    logits.detach().contiguous()?.apply_op1_no_bwd(&TokenEntropy)
}

struct TokenEntropy;

fn token_entropy_fwd<T: Real>(x: &CpuStorage, lx: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
    let x = contiguous::<T>(x, lx, "token_entropy")?;
    let dims = lx.dims();
    let v = dims.last().copied().unwrap_or(1).max(1);
    let mut dst = vec![T::ZERO; x.len() / v];
    dst.par_iter_mut().with_min_len(MIN_ROWS).enumerate().for_each(|(row, d)| {
        let x = &x[row * v..(row + 1) * v];
        let (max, sum) = max_sum_exp(x);
        let mut weighted = T::ZERO;
        for &xi in x {
            let z = xi - max;
            weighted += exp_or_zero(z) * z;
        }
        *d = sum.ln() - weighted / sum;
    });
    Ok((T::to_cpu_storage_owned(dst), Shape::from(&dims[..dims.len() - 1])))
}

impl CustomOp1 for TokenEntropy {
    fn name(&self) -> &'static str {
        "token-entropy"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        by_dtype!(self.name(), s1, token_entropy_fwd(s1, l1))
    }
}

#[cfg(test)]
pub(crate) mod reference;

#[cfg(test)]
mod tests;
