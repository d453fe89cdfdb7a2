//! Fused CPU kernels **with a backward pass**, for the differentiable (training) forward.
//!
//! candle-nn's fused RMSNorm, softmax and RoPE have no backward, so a trainable forward has to
//! spell them with primitive ops, each a separate pass over memory with a fresh allocation
//! (and as many again in the backward). The ops here are candle custom ops whose forward is
//! one pass over contiguous rows and whose backward is itself one fused pass:
//!
//! - `masked_softmax`: `softmax(scale * scores + mask)` over the last dim, the mask shared
//!   by all heads; backward `dscores = scale * y * (g - sum(g * y))` ([`softmax_grad`]). The
//!   model runs it fused with the product of queries and keys (`crate::probs`), whose forward
//!   and backward share its row kernel and gradient; as a node of its own it is the tests'
//!   reference.
//! - [`rms_norm`]: `x / sqrt(mean(x²) + eps) * w`; backward with respect to `x` and `w`.
//! - [`rope`]: rotate-half rotary embedding of `[B, H, T, hd]` (any strides) by per-row
//!   `cos`/`sin` `[B, T, hd/2]`; the backward is the rotation by `-θ`.
//! - [`swiglu`]: `silu(gate) * up`; backward with respect to both.
//!
//! The targets' log-probs (`log_softmax(logits)[target]` per row, backward
//! `g * (onehot - softmax)`) are one node with the LM head: `crate::head`.
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

/// The float types the kernels compute in.
pub(crate) trait Real: WithDType + std::ops::Neg<Output = Self> {
    const ZERO: Self;
    const ONE: Self;
    /// `exp(x)` rounds to exactly 0 for every `x` below this.
    const EXP_ZERO_BELOW: Self;
    fn exp(self) -> Self;
    fn sqrt(self) -> Self;
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
pub(crate) fn contiguous<'a, T: WithDType>(
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

/// `softmax(scale * scores + mask)` over the last dim. `mask` is `[B, 1.., T, Tk]` (shared by
/// all heads; 0 = attend, a large finite negative = blocked); `scores` is `[B, .., Tk]` whose
/// rows, within each batch item, are query positions `0..T` repeated (e.g. `[B, H, T, Tk]`, or
/// grouped-query `[B, kv_heads, n_rep * T, Tk]`, or `[B, kv_heads, n_rep, T, Tk]`), so no
/// broadcast or reshape of the big scores tensor is needed. Differentiable in `scores`.
#[cfg(test)]
pub fn masked_softmax(scores: &Tensor, mask: &Tensor, scale: f64) -> candle_core::Result<Tensor> {
    let dims = scores.dims();
    let mdims = mask.dims();
    let ok = dims.len() >= 2
        && mdims.len() >= 3
        && mdims[0] == dims[0]
        && mdims[mdims.len() - 1] == dims[dims.len() - 1]
        && mask.elem_count() == dims[0] * mdims[mdims.len() - 2] * mdims[mdims.len() - 1]
        && (scores.elem_count() / (dims[0] * dims[dims.len() - 1]).max(1))
            .is_multiple_of(mdims[mdims.len() - 2].max(1));
    if !ok {
        bail!("masked_softmax: mask {mdims:?} [B, 1.., T, Tk] does not fit scores {dims:?} [B, .., Tk]");
    }
    let t = mdims[mdims.len() - 2];
    scores.contiguous()?.apply_op2(&mask.contiguous()?, MaskedSoftmax { scale, t })
}

#[cfg(test)]
struct MaskedSoftmax {
    scale: f64,
    /// Query positions: row `r` of the scores is query `r % t`.
    t: usize,
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

#[cfg(test)]
fn masked_softmax_fwd<T: Real>(
    s: &CpuStorage,
    ls: &Layout,
    m: &CpuStorage,
    lm: &Layout,
    scale: f64,
    t: usize,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let src = contiguous::<T>(s, ls, "masked_softmax")?;
    let mask = contiguous::<T>(m, lm, "masked_softmax")?;
    let dims = ls.dims();
    let tk = dims[dims.len() - 1];
    let mut dst = vec![T::ZERO; src.len()];
    if tk == 0 || t == 0 {
        return Ok((T::to_cpu_storage_owned(dst), ls.shape().clone()));
    }
    let rows_per_b = src.len() / dims[0].max(1) / tk;
    let scale = T::from_f64(scale);
    dst.par_chunks_mut(tk).with_min_len(MIN_ROWS).enumerate().for_each(|(row, d)| {
        let (b, q) = (row / rows_per_b, row % t);
        let s = &src[row * tk..(row + 1) * tk];
        let m = &mask[(b * t + q) * tk..(b * t + q + 1) * tk];
        masked_softmax_row(d, s, m, scale);
    });
    Ok((T::to_cpu_storage_owned(dst), ls.shape().clone()))
}

/// One row of [`masked_softmax`]: `d = softmax(scale * s + m)`, in this order: scaled and
/// masked, the maximum subtracted, exponentials ([`Real::exp_slice`]), divided by their sum
/// taken in order. `attention::decode` shares it, so the two round alike.
pub(crate) fn masked_softmax_row<T: Real>(d: &mut [T], s: &[T], m: &[T], scale: T) {
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

#[cfg(test)]
impl CustomOp2 for MaskedSoftmax {
    fn name(&self) -> &'static str {
        "masked-softmax"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        by_dtype!(self.name(), s1, masked_softmax_fwd(s1, l1, s2, l2, self.scale, self.t))
    }

    fn bwd(
        &self,
        _scores: &Tensor,
        _mask: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((Some(softmax_grad(res, grad, self.scale)?), None))
    }
}

/// The gradient of [`masked_softmax`]'s input from its output `y` and the output's gradient
/// `g`: `scale * y * (g - sum(g * y))` per last-dim row (outside the graph).
pub(crate) fn softmax_grad(y: &Tensor, g: &Tensor, scale: f64) -> candle_core::Result<Tensor> {
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
pub(crate) fn rope_grad(grad: &Tensor, cos: &Tensor, sin: &Tensor) -> candle_core::Result<Tensor> {
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

pub(crate) fn swiglu_fwd<T: Real>(
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
pub(crate) fn swiglu_grads(
    gate: &Tensor,
    up: &Tensor,
    grad: &Tensor,
) -> candle_core::Result<(Tensor, Tensor)> {
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
pub(crate) fn max_sum_exp<T: Real>(x: &[T]) -> (T, T) {
    let mut max = T::from_f64(f64::NEG_INFINITY);
    for &v in x {
        if v > max {
            max = v;
        }
    }
    (max, T::sum_exp_minus(x, max))
}

/// `log_softmax(x)[target]` per row of `x` `[.., V]` (`targets` `[..]` `u32`, each `< V`):
/// the log-probs of the targets without the `[.., V]` log-prob tensor (`crate::head`'s
/// forward).
pub(crate) fn token_logprobs_fwd<T: Real>(
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
mod tests {
    use candle_core::{Device, Var, D};

    use super::*;

    /// Deterministic uniform values in `[-scale, scale)` (SplitMix64).
    fn values(n: usize, seed: u64, scale: f64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                ((z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
            })
            .collect()
    }

    fn tensor(dims: &[usize], seed: u64, scale: f64, dtype: DType) -> Tensor {
        let n = dims.iter().product();
        Tensor::from_vec(values(n, seed, scale), dims, &Device::Cpu).unwrap().to_dtype(dtype).unwrap()
    }

    /// Largest `|a - b|` relative to the largest `|b|` (1 when b is all zeros).
    fn rel_diff(a: &Tensor, b: &Tensor) -> f64 {
        assert_eq!(a.dims(), b.dims());
        let a: Vec<f64> = a.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        let b: Vec<f64> = b.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        let scale = b.iter().fold(0f64, |m, v| m.max(v.abs())).max(1e-300);
        a.iter().zip(&b).fold(0f64, |m, (a, b)| m.max((a - b).abs())) / scale
    }

    /// An additive mask `[B, 1, T, Tk]`: causal, the first `pad[b]` keys of row b blocked
    /// (left padding; whole query rows of padding are then fully blocked), like the model's.
    fn mask(b: usize, t: usize, pad: &[usize], dtype: DType) -> Tensor {
        let mut m = vec![0f64; b * t * t];
        for bi in 0..b {
            for i in 0..t {
                for j in 0..t {
                    if j > i || j < pad[bi] {
                        m[(bi * t + i) * t + j] = crate::batch::MASKED as f64;
                    }
                }
            }
        }
        Tensor::from_vec(m, (b, 1, t, t), &Device::Cpu).unwrap().to_dtype(dtype).unwrap()
    }

    fn composite_softmax(s: &Tensor, mask5: &Tensor, scale: f64) -> Tensor {
        candle_nn::ops::softmax(&(s * scale).unwrap().broadcast_add(mask5).unwrap(), D::Minus1).unwrap()
    }

    fn composite_rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Tensor {
        let half = x.dim(D::Minus1).unwrap() / 2;
        let (cos, sin) = (cos.unsqueeze(1).unwrap(), sin.unsqueeze(1).unwrap());
        let x1 = x.narrow(D::Minus1, 0, half).unwrap();
        let x2 = x.narrow(D::Minus1, half, half).unwrap();
        let r1 = (x1.broadcast_mul(&cos).unwrap() - x2.broadcast_mul(&sin).unwrap()).unwrap();
        let r2 = (x2.broadcast_mul(&cos).unwrap() + x1.broadcast_mul(&sin).unwrap()).unwrap();
        Tensor::cat(&[r1, r2], D::Minus1).unwrap()
    }

    /// `cos`/`sin` `[B, T, hd/2]` of per-row positions (row b starts at `-pad[b]`).
    fn cos_sin(b: usize, t: usize, hd: usize, dtype: DType) -> (Tensor, Tensor) {
        let half = hd / 2;
        let mut f = vec![0f64; b * t * half];
        for bi in 0..b {
            for ti in 0..t {
                for j in 0..half {
                    let inv = 10_000f64.powf(-(2.0 * j as f64) / hd as f64);
                    f[(bi * t + ti) * half + j] = (ti as f64 - 2.0 * bi as f64).max(0.0) * inv;
                }
            }
        }
        let f = Tensor::from_vec(f, (b, t, half), &Device::Cpu).unwrap();
        (f.cos().unwrap().to_dtype(dtype).unwrap(), f.sin().unwrap().to_dtype(dtype).unwrap())
    }

    /// Gradients of `sum(op(args) * r)` with respect to each argument, `r` random.
    fn grads(args: &[Tensor], op: impl Fn(&[Tensor]) -> Tensor, seed: u64) -> Vec<Tensor> {
        let vars: Vec<Var> = args.iter().map(|a| Var::from_tensor(a).unwrap()).collect();
        let ts: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
        let y = op(&ts);
        let r = tensor(y.dims(), seed, 1.0, y.dtype());
        let g = (y * r).unwrap().sum_all().unwrap().backward().unwrap();
        ts.iter().map(|t| g.get(t).expect("a gradient for every argument").clone()).collect()
    }

    const B: usize = 3;
    const T: usize = 7;

    #[test]
    fn masked_softmax_matches_composite_forward_and_backward() {
        let pad = [0, 2, 5];
        for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
            // [B, kv_heads, n_rep, T, Tk] as in grouped-query attention.
            let s = tensor(&[B, 2, 2, T, T], 1, 4.0, dtype);
            let m = mask(B, T, &pad, dtype);
            let m5 = m.reshape((B, 1, 1, T, T)).unwrap();
            let scale = 0.25;
            let ours = masked_softmax(&s, &m5, scale).unwrap();
            let theirs = composite_softmax(&s, &m5, scale);
            assert!(rel_diff(&ours, &theirs) < tol, "{dtype:?}: {}", rel_diff(&ours, &theirs));
            // The grouped-query layout `[B, kv_heads, n_rep * T, Tk]` with the `[B, 1, T, Tk]` mask.
            let flat = masked_softmax(&s.reshape((B, 2, 2 * T, T)).unwrap(), &m, scale).unwrap();
            assert_eq!(rel_diff(&flat.reshape(ours.shape()).unwrap(), &ours), 0.0);
            // Blocked entries of a row with a visible key are exactly 0; a fully blocked
            // (padding) row stays a finite distribution.
            let v: Vec<f64> = ours.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1().unwrap();
            assert_eq!(v[T - 1], 0.0);
            let pad_row = &v[(2 * 4 * T) * T..(2 * 4 * T + 1) * T];
            assert!(pad_row.iter().all(|p| p.is_finite() && *p > 0.0), "{pad_row:?}");
            assert!((pad_row.iter().sum::<f64>() - 1.0).abs() < tol, "{pad_row:?}");
        }
        let s = tensor(&[B, 2, 2, T, T], 2, 4.0, DType::F64);
        let m5 = mask(B, T, &pad, DType::F64).reshape((B, 1, 1, T, T)).unwrap();
        let ours = grads(std::slice::from_ref(&s), |a| masked_softmax(&a[0], &m5, 0.3).unwrap(), 3);
        let theirs = grads(&[s], |a| composite_softmax(&a[0], &m5, 0.3), 3);
        let d = rel_diff(&ours[0], &theirs[0]);
        assert!(d < 1e-12, "gradient differs by {d}");
        assert!(ours[0].abs().unwrap().sum_all().unwrap().to_scalar::<f64>().unwrap() > 0.0);
    }

    #[test]
    fn rms_norm_matches_composite_forward_and_backward() {
        for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
            let x = tensor(&[B, T, 16], 4, 3.0, dtype);
            let w = tensor(&[16], 5, 1.5, dtype);
            let ours = rms_norm(&x, &w, 1e-5).unwrap();
            let theirs = candle_nn::ops::rms_norm_slow(&x, &w, 1e-5).unwrap();
            assert!(rel_diff(&ours, &theirs) < tol, "{dtype:?}: {}", rel_diff(&ours, &theirs));
        }
        // A zero row (eps matters) among random ones, f64 gradients for x and w.
        let x = tensor(&[B, T, 16], 6, 3.0, DType::F64);
        let x = Tensor::cat(&[x, Tensor::zeros((B, 1, 16), DType::F64, &Device::Cpu).unwrap()], 1).unwrap();
        let w = tensor(&[16], 7, 1.5, DType::F64);
        let ours = grads(&[x.clone(), w.clone()], |a| rms_norm(&a[0], &a[1], 1e-5).unwrap(), 8);
        let theirs = grads(&[x, w], |a| candle_nn::ops::rms_norm_slow(&a[0], &a[1], 1e-5).unwrap(), 8);
        for (o, t) in ours.iter().zip(&theirs) {
            assert!(rel_diff(o, t) < 1e-12, "gradient differs by {}", rel_diff(o, t));
        }
    }

    #[test]
    fn rope_matches_composite_on_strided_input_forward_and_backward() {
        let (h, hd) = (4, 8);
        for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
            // [B, T, H, hd] transposed to [B, H, T, hd], as the projections are.
            let x = tensor(&[B, T, h, hd], 9, 2.0, dtype).transpose(1, 2).unwrap();
            assert!(!x.is_contiguous());
            let (cos, sin) = cos_sin(B, T, hd, dtype);
            let ours = rope(&x, &cos, &sin).unwrap();
            let theirs = composite_rope(&x, &cos, &sin);
            assert!(rel_diff(&ours, &theirs) < tol, "{dtype:?}: {}", rel_diff(&ours, &theirs));
        }
        let x = tensor(&[B, T, h, hd], 10, 2.0, DType::F64);
        let (cos, sin) = cos_sin(B, T, hd, DType::F64);
        let ours = grads(
            std::slice::from_ref(&x),
            |a| rope(&a[0].transpose(1, 2).unwrap(), &cos, &sin).unwrap(),
            11,
        );
        let theirs = grads(&[x], |a| composite_rope(&a[0].transpose(1, 2).unwrap(), &cos, &sin), 11);
        assert!(
            rel_diff(&ours[0], &theirs[0]) < 1e-12,
            "gradient differs by {}",
            rel_diff(&ours[0], &theirs[0])
        );
    }

    /// Sampling runs these kernels in place of candle's fused `rms_norm` and `rope` (they are
    /// split over the pool and read strided input): the same bits as candle's (`rope` in both
    /// dtypes, `rms_norm` in f32, the one candle's runs in), at decode's one position per row
    /// (where candle's run on one thread) and at a prompt's several, up to 32 rows and beyond.
    #[test]
    fn rms_norm_and_rope_equal_candles_fused_ops_bit_for_bit() {
        use crate::test_util::bits;
        for dtype in [DType::F32, DType::F64] {
            for (b, t) in [(32, 1), (3, 1), (40, 1), (2, 5)] {
                let x = crate::test_util::tensor(&[b, t, 24], 12, 3.0, dtype);
                let w = crate::test_util::tensor(&[24], 13, 1.5, dtype);
                // candle's fused `rms_norm` has no f64 kernel.
                if dtype == DType::F32 {
                    let ours = rms_norm(&x, &w, 1e-5).unwrap();
                    let theirs = candle_nn::ops::rms_norm(&x, &w, 1e-5).unwrap();
                    assert_eq!(bits(&ours), bits(&theirs), "rms_norm {dtype:?} {b} x {t}");
                }
                let (h, hd) = (3, 8);
                let x = crate::test_util::tensor(&[b, t, h, hd], 14, 2.0, dtype).transpose(1, 2).unwrap();
                let (cos, sin) = cos_sin(b, t, hd, dtype);
                let ours = rope(&x, &cos, &sin).unwrap();
                let theirs = candle_nn::rotary_emb::rope(&x.contiguous().unwrap(), &cos, &sin).unwrap();
                assert_eq!(bits(&ours), bits(&theirs), "rope {dtype:?} {b} x {t}");
            }
        }
    }

    #[test]
    fn swiglu_matches_composite_forward_and_backward() {
        // More elements than one rayon chunk, so chunk offsets are exercised.
        let dims = [3, 50, 70];
        for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
            let a = tensor(&dims, 12, 6.0, dtype);
            let b = tensor(&dims, 13, 2.0, dtype);
            let ours = swiglu(&a, &b).unwrap();
            let theirs = (a.silu().unwrap() * &b).unwrap();
            assert!(rel_diff(&ours, &theirs) < tol, "{dtype:?}: {}", rel_diff(&ours, &theirs));
        }
        let a = tensor(&dims, 14, 6.0, DType::F64);
        let b = tensor(&dims, 15, 2.0, DType::F64);
        let ours = grads(&[a.clone(), b.clone()], |x| swiglu(&x[0], &x[1]).unwrap(), 16);
        let theirs = grads(&[a, b], |x| (x[0].silu().unwrap() * &x[1]).unwrap(), 16);
        for (o, t) in ours.iter().zip(&theirs) {
            assert!(rel_diff(o, t) < 1e-12, "gradient differs by {}", rel_diff(o, t));
        }
    }

    #[test]
    fn other_dtypes_and_bad_shapes_are_errors() {
        let x = tensor(&[2, 4], 17, 1.0, DType::BF16);
        let w = tensor(&[4], 18, 1.0, DType::BF16);
        assert!(!supported(&x));
        assert!(rms_norm(&x, &w, 1e-5).is_err());
        let x = tensor(&[2, 4], 17, 1.0, DType::F32);
        assert!(supported(&x));
        assert!(rms_norm(&x, &tensor(&[3], 18, 1.0, DType::F32), 1e-5).is_err());
        assert!(swiglu(&x, &tensor(&[4, 2], 19, 1.0, DType::F32)).is_err());
        let s = tensor(&[2, 1, 3, 3], 20, 1.0, DType::F32);
        assert!(masked_softmax(&s, &tensor(&[2, 1, 3, 4], 21, 1.0, DType::F32), 1.0).is_err());
        assert!(masked_softmax(&s, &tensor(&[2, 1, 2, 3], 21, 1.0, DType::F32), 1.0).is_err());
        let (cos, sin) = cos_sin(2, 3, 4, DType::F32);
        assert!(rope(&tensor(&[2, 1, 3, 6], 22, 1.0, DType::F32), &cos, &sin).is_err());
    }

    #[test]
    fn token_entropy_matches_the_definition() {
        // Uniform over 4 classes: ln 4. One certain class: 0. A hand case: p = softmax([0, ln 3])
        // = [1/4, 3/4], H = -(1/4 ln 1/4 + 3/4 ln 3/4).
        let rows = [0.0f32, 0.0, 0.0, 0.0, 0.0, -200.0, -200.0, -200.0, 0.0, 3f32.ln(), -1e30, -1e30];
        let logits = Tensor::from_vec(rows.to_vec(), (3, 4), &Device::Cpu).unwrap();
        let h = token_entropy(&logits).unwrap().to_vec1::<f32>().unwrap();
        let hand = -(0.25f64 * 0.25f64.ln() + 0.75 * 0.75f64.ln());
        assert!((h[0] as f64 - 4f64.ln()).abs() < 1e-6, "{h:?}");
        assert!(h[1].abs() < 1e-6, "{h:?}");
        assert!((h[2] as f64 - hand).abs() < 1e-6, "{h:?}");
        // Against candle-nn's softmax on random logits, f64, batched [2, 3, V].
        let x = Tensor::from_vec(values(2 * 3 * 50, 7, 6.0), (2, 3, 50), &Device::Cpu).unwrap();
        let p = candle_nn::ops::softmax_last_dim(&x).unwrap();
        let want = (p.clone() * p.log().unwrap()).unwrap().sum(D::Minus1).unwrap().neg().unwrap();
        let got = token_entropy(&x).unwrap();
        assert_eq!(got.dims(), &[2, 3]);
        let diff = (got - want).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
        assert!(diff < 1e-12, "{diff}");
    }

    // ---------------------------------------------------------------------------------------
    // The per-kernel timing table (a report, not a check of speed: run it with
    // `cargo test --release -p mentor-policy --lib kernel_timing -- --ignored --nocapture`).

    use std::time::Instant;

    use crate::config::Config;
    use crate::kernels;

    /// Milliseconds of one forward + backward of `op` on `args` (as trainable variables), best of 5
    /// rounds of `reps`.
    fn time_op(
        args: &[Tensor],
        reps: usize,
        op: &dyn Fn(&[Tensor]) -> candle_core::Result<Tensor>,
    ) -> candle_core::Result<f64> {
        let vars: Vec<Var> = args.iter().map(Var::from_tensor).collect::<candle_core::Result<_>>()?;
        let ts: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            for _ in 0..reps {
                let g = op(&ts)?.sum_all()?.backward()?;
                std::hint::black_box(&g);
            }
            best = best.min(t.elapsed().as_secs_f64() * 1e3 / reps as f64);
        }
        Ok(best)
    }

    /// Fused kernels against the composite ops they replace, on the shapes of
    /// `examples/train_step.rs`'s workload: each pair must agree (forward), and the table gives
    /// milliseconds of forward + backward per training step.
    fn kernel_table(b: usize, t: usize, c: usize, cfg: &Config) -> candle_core::Result<()> {
        let dev = Device::Cpu;
        let (hidden, heads, hd, inter, vocab) =
            (cfg.hidden_size, cfg.num_attention_heads, cfg.head_dim(), cfg.intermediate_size, cfg.vocab_size);
        let layers = cfg.num_hidden_layers;
        let scores = Tensor::randn(0f32, 1., (b, heads, t, t), &dev)?;
        let mut m = vec![0f32; b * t * t];
        for (i, v) in m.iter_mut().enumerate() {
            if i % t > (i / t) % t {
                *v = -1e9;
            }
        }
        let mask = Tensor::from_vec(m, (b, 1, t, t), &dev)?;
        let x = Tensor::randn(0f32, 1., (b, t, hidden), &dev)?;
        let w = Tensor::randn(1f32, 0.1, hidden, &dev)?;
        let q = Tensor::randn(0f32, 1., (b, t, heads, hd), &dev)?;
        let f = Tensor::randn(0f32, 1., (b, t, hd / 2), &dev)?;
        let (cos, sin) = (f.cos()?, f.sin()?);
        let gate = Tensor::randn(0f32, 1., (b, t, inter), &dev)?;
        let up = Tensor::randn(0f32, 1., (b, t, inter), &dev)?;
        let xh = Tensor::randn(0f32, 1., (b, c, hidden), &dev)?;
        let wv = Tensor::randn(0f32, 0.1, (vocab, hidden), &dev)?;
        let targets = Tensor::from_vec((0..b * c).map(|i| (i % vocab) as u32).collect(), (b, c), &dev)?;
        let scale = 1.0 / (hd as f64).sqrt();
        let mask5 = mask.reshape((b, 1, t, t))?;
        let rope_composite = |x: &Tensor| -> candle_core::Result<Tensor> {
            let half = hd / 2;
            let (cos, sin) = (cos.unsqueeze(1)?, sin.unsqueeze(1)?);
            let x1 = x.narrow(D::Minus1, 0, half)?;
            let x2 = x.narrow(D::Minus1, half, half)?;
            let r1 = (x1.broadcast_mul(&cos)? - x2.broadcast_mul(&sin)?)?;
            let r2 = (x2.broadcast_mul(&cos)? + x1.broadcast_mul(&sin)?)?;
            Tensor::cat(&[r1, r2], D::Minus1)
        };
        type Op<'a> = Box<dyn Fn(&[Tensor]) -> candle_core::Result<Tensor> + 'a>;
        let rows: Vec<(&str, usize, Vec<Tensor>, Op, Op)> = vec![
            (
                "masked softmax",
                layers,
                vec![scores],
                Box::new(|a| candle_nn::ops::softmax(&(&a[0] * scale)?.broadcast_add(&mask5)?, D::Minus1)),
                Box::new(|a| kernels::masked_softmax(&a[0], &mask, scale)),
            ),
            (
                "rms norm",
                2 * layers + 1,
                vec![x, w],
                Box::new(|a| candle_nn::ops::rms_norm_slow(&a[0], &a[1], 1e-5)),
                Box::new(|a| kernels::rms_norm(&a[0], &a[1], 1e-5)),
            ),
            (
                "rope",
                2 * layers,
                vec![q],
                Box::new(|a| rope_composite(&a[0].transpose(1, 2)?)),
                Box::new(|a| kernels::rope(&a[0].transpose(1, 2)?, &cos, &sin)),
            ),
            (
                "swiglu",
                layers,
                vec![gate, up],
                Box::new(|a| a[0].silu()? * &a[1]),
                Box::new(|a| kernels::swiglu(&a[0], &a[1])),
            ),
            (
                "head + token logprobs",
                1,
                vec![xh, wv],
                Box::new(|a| {
                    let logits = crate::matmul::linear(&a[0], &a[1], None)?;
                    let lp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
                    lp.gather(&targets.unsqueeze(D::Minus1)?, D::Minus1)?.squeeze(D::Minus1)
                }),
                Box::new(|a| {
                    Ok(crate::head::head_logprobs(&a[0], &a[1], &targets, 1.0, false, None)?.logprobs)
                }),
            ),
        ];
        println!("kernel (forward + backward)   calls/step   composite ms/step   fused ms/step");
        for (name, calls, args, composite, fused) in rows {
            let diff = (composite(&args)? - fused(&args)?)?.abs()?.max_all()?.to_scalar::<f32>()?;
            assert!(diff < 1e-4, "{name}: fused and composite differ by {diff}");
            let a = time_op(&args, 3, &composite)? * calls as f64;
            let f = time_op(&args, 3, &fused)? * calls as f64;
            println!("{name:<30}{calls:>10}{a:>20.1}{f:>16.1}");
        }
        Ok(())
    }

    #[test]
    #[ignore = "a timing report: run with --release -- --ignored --nocapture"]
    fn kernel_timing_against_composite_ops() {
        // `examples/train_step.rs`'s tiny model and batch: 64 rows, ~80-token completions.
        let mut cfg = Config::tiny(0, 64, 3, 4, 4);
        cfg.intermediate_size = 170;
        cfg.vocab_size = 32;
        kernel_table(64, 91, 90, &cfg).unwrap();
    }
}
