//! Element-wise writes into an existing CPU tensor's storage (candle's `InplaceOpN`): the
//! gradient sums are added to where they lie instead of being reallocated for every
//! micro-batch, so the update neither holds a sum and its successor at once nor scatters a
//! fresh 0.5 GB across the heap on every backward.
//!
//! The optimizer step works the same way: the gradient norm is summed where the sums lie
//! ([`sum_squares`]), and one pass split over rayon's pool scales each gradient element for
//! clipping and updates its moments and weight ([`adamw`]), instead of a dozen tensor ops
//! that each allocated a whole new copy (and a pass per op); the long-lived state (weights,
//! moments, sums) then stays where it was first allocated, and the update's activations are
//! not fragmented around new copies of it every step.
//!
//! Each element gets the value the out-of-place ops would give, operation by operation in
//! the tensors' dtype (candle's `x * c` is `x * c + 0` and `x + c` is `x * 1 + c`, with the
//! `f64` constants rounded to the dtype as candle rounds them), so the bits are unchanged.

use std::sync::Mutex;

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, DType, Layout, Tensor};
use rayon::prelude::*;

/// Whether `dst` can be written in place from `src` by these ops: both on the CPU, both
/// contiguous, the same float dtype and shape. (candle refuses a `src` that shares `dst`'s
/// storage with an error.)
pub(crate) fn writable_from(dst: &Tensor, src: &Tensor) -> bool {
    dst.device().is_cpu()
        && src.device().is_cpu()
        && matches!(dst.dtype(), DType::F32 | DType::F64 | DType::BF16 | DType::F16)
        && dst.dtype() == src.dtype()
        && dst.shape() == src.shape()
        && dst.is_contiguous()
        && src.is_contiguous()
}

/// Whether [`adamw`] and [`scale`] can run in place on `t` (f32 or f64 on the CPU, contiguous).
pub(crate) fn steppable(t: &Tensor) -> bool {
    t.device().is_cpu() && matches!(t.dtype(), DType::F32 | DType::F64) && t.is_contiguous()
}

/// `t = t * c` in place, as candle's `t * c` (`affine(c, 0)`) computes it.
pub(crate) fn scale(t: &Tensor, c: f64) -> candle_core::Result<()> {
    t.inplace_op1(&Scale(c))
}

/// One AdamW step's constants, as [`crate::Optimizer`] computes them in `f64`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AdamStep {
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    /// `1 - lr * weight_decay`.
    pub decay: f64,
    pub lr: f64,
    /// `1 / (1 - beta1^t)`.
    pub scale_m: f64,
    /// `1 / (1 - beta2^t)`.
    pub scale_v: f64,
}

/// `Σ x²` over `t` in `f64`, read where it lies, with the bits of candle's
/// `t.to_dtype(F64)?.sqr()?.sum_all()` (each element widened and squared, then added left to
/// right from zero, as candle's CPU sum runs): `None` where `t` is not [`steppable`].
pub(crate) fn sum_squares(t: &Tensor) -> candle_core::Result<Option<f64>> {
    if !steppable(t) {
        return Ok(None);
    }
    let (storage, layout) = t.storage_and_layout();
    let candle_core::Storage::Cpu(cpu) = &*storage else { return Ok(None) };
    let n = layout.shape().elem_count();
    Ok(Some(match cpu {
        CpuStorage::F32(x) => slice(x, layout, n, "sum-squares")?.iter().fold(0.0, |s, &x| {
            let x = f64::from(x);
            s + x * x
        }),
        CpuStorage::F64(x) => slice(x, layout, n, "sum-squares")?.iter().fold(0.0, |s, &x| s + x * x),
        _ => return Ok(None),
    }))
}

/// One AdamW step in place, in one pass over the four tensors split over rayon's pool:
/// first, where `clip` is given, the gradient is scaled for clipping (`g = g * c + 0`, written
/// back as [`scale`] writes it), then `m = m b1 + g (1 - b1)`, `v = v b2 + g² (1 - b2)`, and
/// `θ = θ (1 - lr wd) - ((m s_m) / (sqrt(v s_v) + eps)) lr` (all of `theta`, `m`, `v` and `g`
/// [`steppable`], of one dtype and shape, four distinct storages; `theta` is the variable's
/// own tensor). Each element gets the bits of the separate out-of-place ops: the same
/// operations in the same order, and no element depends on another.
pub(crate) fn adamw(
    theta: &Tensor,
    m: &Tensor,
    v: &Tensor,
    g: &Tensor,
    k: AdamStep,
    clip: Option<f64>,
) -> candle_core::Result<()> {
    if theta.elem_count() == 0 && [m, v, g].iter().all(|x| x.elem_count() == 0) {
        // Nothing to write; and empty buffers all share one dangling address, which the
        // check below would take for a storage met twice.
        return Ok(());
    }
    // Each tensor's storage is locked for writing in turn, the next inside the last: a
    // storage met twice would wait on itself.
    let ptrs = [theta, m, v, g].map(|t| {
        let (s, _) = t.storage_and_layout();
        match &*s {
            candle_core::Storage::Cpu(CpuStorage::F32(x)) => x.as_ptr() as usize,
            candle_core::Storage::Cpu(CpuStorage::F64(x)) => x.as_ptr() as usize,
            _ => 0,
        }
    });
    if ptrs.contains(&0) || (1..4).any(|i| ptrs[..i].contains(&ptrs[i])) {
        candle_core::bail!("adamw: theta, m, v and g must be four distinct f32 or f64 CPU storages");
    }
    let step = |slots: Vec<Slot<'_>>| -> candle_core::Result<()> {
        let mut it = slots.into_iter();
        match (it.next(), it.next(), it.next(), it.next()) {
            (Some(Slot::F32(t)), Some(Slot::F32(m)), Some(Slot::F32(v)), Some(Slot::F32(g))) => {
                adamw_slices(t, m, v, g, &k, clip)
            }
            (Some(Slot::F64(t)), Some(Slot::F64(m)), Some(Slot::F64(v)), Some(Slot::F64(g))) => {
                adamw_slices(t, m, v, g, &k, clip)
            }
            _ => candle_core::bail!("adamw: theta, m, v and g differ in dtype"),
        }
    };
    theta.inplace_op1(&Hold { held: Mutex::new(Vec::new()), rest: &[m, v, g], then: &step })
}

/// One tensor's elements, borrowed for writing.
enum Slot<'a> {
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

/// An in-place op that borrows its tensor's elements beside those `held` already, then either
/// runs the same op on the next of `rest` (which borrows its own inside) or, with every
/// tensor borrowed, hands them all to `then`: candle lends one storage per op, and the
/// optimizer's pass writes four.
struct Hold<'a, 'b> {
    held: Mutex<Vec<Slot<'a>>>,
    rest: &'b [&'b Tensor],
    then: &'b dyn Fn(Vec<Slot<'_>>) -> candle_core::Result<()>,
}

impl candle_core::InplaceOp1 for Hold<'_, '_> {
    fn name(&self) -> &'static str {
        "adamw"
    }

    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> candle_core::Result<()> {
        let name = self.name();
        let mut held: Vec<Slot<'_>> = match self.held.lock() {
            Ok(mut h) => std::mem::take(&mut *h),
            Err(_) => candle_core::bail!("{name}: a poisoned lock"),
        };
        held.push(match s {
            CpuStorage::F32(x) => Slot::F32(slice_mut(x, l, name)?),
            CpuStorage::F64(x) => Slot::F64(slice_mut(x, l, name)?),
            s => candle_core::bail!("{name}: {:?}", s.dtype()),
        });
        match self.rest.split_first() {
            Some((next, rest)) => next.inplace_op1(&Hold { held: Mutex::new(held), rest, then: self.then }),
            None => (self.then)(held),
        }
    }
}

/// Elements per task of [`adamw_slices`]: 256 KiB of `f32` per tensor.
const ADAMW_CHUNK: usize = 1 << 16;

/// [`adamw`] on the elements.
fn adamw_slices<T: Real + Send + Sync>(
    theta: &mut [T],
    m: &mut [T],
    v: &mut [T],
    g: &mut [T],
    k: &AdamStep,
    clip: Option<f64>,
) -> candle_core::Result<()> {
    let n = theta.len();
    if m.len() != n || v.len() != n || g.len() != n {
        candle_core::bail!(
            "adamw: {n} weights against {}, {} and {} moments and gradients",
            m.len(),
            v.len(),
            g.len()
        );
    }
    let (m1, m2) = (Moment { decay: k.beta1, square: false }, Moment { decay: k.beta2, square: true });
    let w = Weights(*k);
    let c = clip.map(T::of);
    theta
        .par_chunks_mut(ADAMW_CHUNK)
        .zip(m.par_chunks_mut(ADAMW_CHUNK))
        .zip(v.par_chunks_mut(ADAMW_CHUNK))
        .zip(g.par_chunks_mut(ADAMW_CHUNK))
        .for_each(|(((theta, m), v), g)| {
            if let Some(c) = c {
                scale_slice(g, c);
            }
            m1.apply(m, g);
            m2.apply(v, g);
            w.apply(theta, m, v);
        });
    Ok(())
}

/// The float types the optimizer's in-place ops handle, with candle's rounding of `f64`
/// constants (`as`).
trait Real:
    Copy
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    fn of(x: f64) -> Self;
    fn sqrt(self) -> Self;
}

impl Real for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn of(x: f64) -> Self {
        x as f32
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
}

impl Real for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn of(x: f64) -> Self {
        x
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
}

/// The contiguous elements of a storage, or an error naming the op.
fn slice_mut<'a, T>(s: &'a mut [T], l: &Layout, name: &str) -> candle_core::Result<&'a mut [T]> {
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&mut s[a..b]),
        None => candle_core::bail!("{name}: not contiguous"),
    }
}

fn slice<'a, T>(s: &'a [T], l: &Layout, n: usize, name: &str) -> candle_core::Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((a, b)) if b - a == n => Ok(&s[a..b]),
        Some((a, b)) => candle_core::bail!("{name}: {} elements against {n}", b - a),
        None => candle_core::bail!("{name}: not contiguous"),
    }
}

/// `x * c + 0`: candle's `affine(c, 0)`.
struct Scale(f64);

impl candle_core::InplaceOp1 for Scale {
    fn name(&self) -> &'static str {
        "grad-scale"
    }

    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> candle_core::Result<()> {
        fn go<T: Real>(x: &mut [T], c: f64) {
            scale_slice(x, T::of(c));
        }
        match s {
            CpuStorage::F32(x) => go(slice_mut(x, l, self.name())?, self.0),
            CpuStorage::F64(x) => go(slice_mut(x, l, self.name())?, self.0),
            s => candle_core::bail!("{}: {:?}", self.name(), s.dtype()),
        }
        Ok(())
    }
}

/// `x = x * c + 0` for each element: candle's `affine(c, 0)`, as [`scale`] and [`adamw`]'s
/// clipping apply it.
fn scale_slice<T: Real>(x: &mut [T], c: T) {
    x.iter_mut().for_each(|x| *x = *x * c + T::ZERO);
}

/// A moment's part of [`adamw`]: `m * d + 0 + (g * (1 - d) + 0)` (`g * g` for the second).
struct Moment {
    decay: f64,
    square: bool,
}

impl Moment {
    fn apply<T: Real>(&self, m: &mut [T], g: &[T]) {
        let (decay, keep) = (T::of(self.decay), T::of(1.0 - self.decay));
        for (m, &g) in m.iter_mut().zip(g) {
            let g = if self.square { g * g } else { g };
            *m = (*m * decay + T::ZERO) + (g * keep + T::ZERO);
        }
    }
}

/// The weights' part of [`adamw`]:
/// `θ * (1 - lr wd) + 0 - (((m * s_m + 0) / (sqrt(v * s_v + 0) * 1 + eps)) * lr + 0)`.
struct Weights(AdamStep);

impl Weights {
    fn apply<T: Real>(&self, theta: &mut [T], m: &[T], v: &[T]) {
        let k = &self.0;
        let (decay, sm, sv, eps, lr) =
            (T::of(k.decay), T::of(k.scale_m), T::of(k.scale_v), T::of(k.eps), T::of(k.lr));
        for ((t, &m), &v) in theta.iter_mut().zip(m).zip(v) {
            let m_hat = m * sm + T::ZERO;
            let v_hat = v * sv + T::ZERO;
            let step = (m_hat / (v_hat.sqrt() * T::ONE + eps)) * lr + T::ZERO;
            *t = (*t * decay + T::ZERO) - step;
        }
    }
}

/// `dst += src` in place (see [`writable_from`]).
pub(crate) fn add_into(dst: &Tensor, src: &Tensor) -> candle_core::Result<()> {
    dst.inplace_op2(src, &Elementwise::Add)
}

/// `dst = src` in place (see [`writable_from`]).
pub(crate) fn copy_into(dst: &Tensor, src: &Tensor) -> candle_core::Result<()> {
    dst.inplace_op2(src, &Elementwise::Copy)
}

/// What to write into each element of the destination.
enum Elementwise {
    Add,
    Copy,
}

impl Elementwise {
    fn apply<T: Copy + std::ops::Add<Output = T>>(&self, dst: &mut [T], src: &[T]) {
        match self {
            Elementwise::Add => dst.iter_mut().zip(src).for_each(|(d, &s)| *d = *d + s),
            Elementwise::Copy => dst.copy_from_slice(src),
        }
    }
}

impl candle_core::InplaceOp2 for Elementwise {
    fn name(&self) -> &'static str {
        match self {
            Elementwise::Add => "grad-add-into",
            Elementwise::Copy => "grad-copy-into",
        }
    }

    fn cpu_fwd(
        &self,
        dst: &mut CpuStorage,
        dst_l: &Layout,
        src: &CpuStorage,
        src_l: &Layout,
    ) -> candle_core::Result<()> {
        let name = self.name();
        let n = dst_l.shape().elem_count();
        match (dst, src) {
            (CpuStorage::F32(d), CpuStorage::F32(s)) => {
                self.apply(slice_mut(d, dst_l, name)?, slice(s, src_l, n, name)?)
            }
            (CpuStorage::F64(d), CpuStorage::F64(s)) => {
                self.apply(slice_mut(d, dst_l, name)?, slice(s, src_l, n, name)?)
            }
            (CpuStorage::BF16(d), CpuStorage::BF16(s)) => {
                self.apply(slice_mut(d, dst_l, name)?, slice(s, src_l, n, name)?)
            }
            (CpuStorage::F16(d), CpuStorage::F16(s)) => {
                self.apply(slice_mut(d, dst_l, name)?, slice(s, src_l, n, name)?)
            }
            (d, s) => candle_core::bail!("{name}: {:?} into {:?}", s.dtype(), d.dtype()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::*;

    #[test]
    fn adds_and_copies_in_place_with_the_out_of_place_bits() {
        let dev = Device::Cpu;
        let a: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin() * 1e3).collect();
        let b: Vec<f32> = (0..37).map(|i| (i as f32 * 1.3).cos() * 1e-3).collect();
        let dst = Tensor::from_vec(a.clone(), (37,), &dev).unwrap();
        let src = Tensor::from_vec(b.clone(), (37,), &dev).unwrap();
        let want = (&dst + &src).unwrap().to_vec1::<f32>().unwrap();
        assert!(writable_from(&dst, &src));
        add_into(&dst, &src).unwrap();
        let got = dst.to_vec1::<f32>().unwrap();
        assert_eq!(
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        copy_into(&dst, &src).unwrap();
        assert_eq!(dst.to_vec1::<f32>().unwrap(), b);
    }

    #[test]
    fn refuses_what_it_cannot_write() {
        let dev = Device::Cpu;
        let m = Tensor::arange(0f32, 6., &dev).unwrap().reshape((2, 3)).unwrap();
        let t = m.t().unwrap();
        let n = Tensor::ones((3, 2), DType::F32, &dev).unwrap();
        assert!(!writable_from(&t, &n), "a transposed destination");
        assert!(add_into(&m, &m).is_err(), "the same storage");
        assert!(!writable_from(&m, &n), "another shape");
        assert!(!writable_from(&m, &m.to_dtype(DType::F64).unwrap()), "another dtype");
        let ids = Tensor::new(&[1u32, 2], &dev).unwrap();
        assert!(!writable_from(&ids, &ids.copy().unwrap()), "an integer dtype");
    }

    /// Every element's bits, widened to `f64` (exact).
    fn bits(x: &Tensor) -> Vec<u64> {
        x.to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap().iter().map(|x| x.to_bits()).collect()
    }

    /// AdamW's constants at step `step` (PyTorch's defaults for the betas and eps).
    fn adam_step(step: i32, lr: f64, weight_decay: f64) -> AdamStep {
        AdamStep {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            decay: 1.0 - lr * weight_decay,
            lr,
            scale_m: 1.0 / (1.0 - 0.9f64.powi(step)),
            scale_v: 1.0 / (1.0 - 0.999f64.powi(step)),
        }
    }

    /// The candle-op formula `Optimizer::adamw` falls back to, for the bit comparison.
    fn adamw_by_ops(
        theta: &Tensor,
        m: &Tensor,
        v: &Tensor,
        g: &Tensor,
        k: AdamStep,
    ) -> (Tensor, Tensor, Tensor) {
        let m = ((m * k.beta1).unwrap() + (g * (1.0 - k.beta1)).unwrap()).unwrap();
        let v = ((v * k.beta2).unwrap() + (g.sqr().unwrap() * (1.0 - k.beta2)).unwrap()).unwrap();
        let t = (theta * k.decay).unwrap();
        let m_hat = (&m * k.scale_m).unwrap();
        let v_hat = (&v * k.scale_v).unwrap();
        let step = ((m_hat / (v_hat.sqrt().unwrap() + k.eps).unwrap()).unwrap() * k.lr).unwrap();
        ((t - step).unwrap(), m, v)
    }

    #[test]
    fn clipped_adamw_in_one_pass_has_the_bits_of_scaling_then_the_candle_ops() {
        let dev = Device::Cpu;
        // More elements than one task's chunk, and a ragged last chunk.
        let n = 2 * ADAMW_CHUNK + 1001;
        let wave =
            |a: f64, b: f64| (0..n).map(move |i| ((i as f64 * a).sin() * b) as f32).collect::<Vec<f32>>();
        for dtype in [DType::F32, DType::F64] {
            let t = |v: Vec<f32>| Tensor::from_vec(v, n, &dev).unwrap().to_dtype(dtype).unwrap();
            let (theta, m, v) =
                (t(wave(0.3, 0.5)), t(wave(1.1, 1e-3)), t(wave(0.9, 1e-6).iter().map(|x| x.abs()).collect()));
            let g = t(wave(0.7, 3e-3));
            let k = adam_step(2, 1e-6, 0.1);
            let coef = 1.0 / (1.8374 + 1e-6);
            let scaled = (&g * coef).unwrap();
            let (want_t, want_m, want_v) = adamw_by_ops(&theta, &m, &v, &scaled, k);
            adamw(&theta, &m, &v, &g, k, Some(coef)).unwrap();
            assert_eq!(bits(&g), bits(&scaled), "{dtype:?}: the gradient is left clipped");
            assert_eq!(bits(&m), bits(&want_m), "{dtype:?}: first moment");
            assert_eq!(bits(&v), bits(&want_v), "{dtype:?}: second moment");
            assert_eq!(bits(&theta), bits(&want_t), "{dtype:?}: weights");
        }
    }

    #[test]
    fn adamw_refuses_a_storage_met_twice_and_mixed_dtypes() {
        let dev = Device::Cpu;
        let x = || Tensor::ones(8, DType::F32, &dev).unwrap();
        let (t, m, v) = (x(), x(), x());
        let k = adam_step(1, 1e-3, 0.0);
        assert!(adamw(&t, &m, &v, &m, k, None).is_err(), "g is m");
        assert!(adamw(&t, &t, &v, &x(), k, None).is_err(), "m is theta");
        let g64 = x().to_dtype(DType::F64).unwrap();
        assert!(adamw(&t, &m, &v, &g64, k, None).is_err(), "an f64 gradient for f32 weights");
        assert_eq!(t.to_vec1::<f32>().unwrap(), vec![1.0; 8], "nothing written");
        let e = || Tensor::zeros(0, DType::F32, &dev).unwrap();
        assert!(adamw(&e(), &e(), &e(), &e(), k, Some(0.5)).is_ok(), "an empty variable");
    }

    #[test]
    fn sum_squares_has_the_bits_of_widening_squaring_and_summing() {
        let dev = Device::Cpu;
        let v: Vec<f32> = (0..100_002).map(|i| ((i as f64 * 0.37).sin() * 1e-2) as f32).collect();
        for dtype in [DType::F32, DType::F64] {
            let t = Tensor::from_vec(v.clone(), (2, 50_001), &dev).unwrap().to_dtype(dtype).unwrap();
            let want =
                t.to_dtype(DType::F64).unwrap().sqr().unwrap().sum_all().unwrap().to_scalar::<f64>().unwrap();
            assert_eq!(sum_squares(&t).unwrap().map(f64::to_bits), Some(want.to_bits()), "{dtype:?}");
        }
        let strided = Tensor::from_vec(v[..6].to_vec(), (2, 3), &dev).unwrap().t().unwrap();
        assert_eq!(sum_squares(&strided).unwrap(), None, "not contiguous");
    }

    #[test]
    fn adamw_and_scaling_in_place_have_the_candle_ops_bits() {
        let dev = Device::Cpu;
        let n = 257;
        let wave =
            |a: f64, b: f64| (0..n).map(move |i| ((i as f64 * a).sin() * b) as f32).collect::<Vec<f32>>();
        let mut g0 = wave(0.7, 3e-3);
        g0[3] = 0.0;
        g0[4] = -0.0;
        g0[5] = 1e-30;
        for dtype in [DType::F32, DType::F64] {
            let t = |v: Vec<f32>| Tensor::from_vec(v, n, &dev).unwrap().to_dtype(dtype).unwrap();
            let (theta, m, v) =
                (t(wave(0.3, 0.5)), t(wave(1.1, 1e-3)), t(wave(0.9, 1e-6).iter().map(|x| x.abs()).collect()));
            let (mut want_t, mut want_m, mut want_v) =
                (theta.copy().unwrap(), m.copy().unwrap(), v.copy().unwrap());
            for step in 1..=3 {
                let g = t(g0.iter().map(|x| x * step as f32).collect());
                let k = adam_step(step, 1e-3, 0.01);
                assert!([&theta, &m, &v, &g].iter().all(|x| steppable(x)));
                adamw(&theta, &m, &v, &g, k, None).unwrap();
                (want_t, want_m, want_v) = adamw_by_ops(&want_t, &want_m, &want_v, &g, k);
                assert_eq!(bits(&m), bits(&want_m), "{dtype:?} step {step}: first moment");
                assert_eq!(bits(&v), bits(&want_v), "{dtype:?} step {step}: second moment");
                assert_eq!(bits(&theta), bits(&want_t), "{dtype:?} step {step}: weights");
                let scaled = (&g * 0.3).unwrap();
                scale(&g, 0.3).unwrap();
                assert_eq!(bits(&g), bits(&scaled), "{dtype:?}: clipping's scale");
            }
        }
    }
}
