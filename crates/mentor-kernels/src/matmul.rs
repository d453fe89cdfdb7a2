//! `x · Wᵀ` with the weight `W` read as stored (`[N, K]`, row-major), no packing.
//!
//! A linear layer multiplies activations `x` `[M, K]` by the transpose of its weight. candle's
//! CPU matmul (the `gemm` crate) packs the transposed weight into its own panel layout on every
//! call; at the small `M` of batched decoding (one row per sequence) that packing costs about
//! as much as the product itself, and it is a full extra pass over the weights, which decoding
//! is bound by. Both operands of `x · Wᵀ` are row-major in `K`, so every output is a dot
//! product of two contiguous rows: [`matmul_t`] computes tiles of 4 rows of `x` × 3 rows of `W`
//! (12 AVX2 accumulators of 8 lanes). On a CPU with AVX-512 (F and DQ) whole groups of 8 rows
//! take a tile of 8 rows × 4 weight rows instead: `x` is packed by row pairs (a copy of
//! `M × K` floats per call into a buffer each thread keeps, aligned to a cache line; the
//! weight is not copied), and each 16-lane accumulator holds two
//! outputs' 8 AVX2 lanes, so the outputs keep their bits and the FMA count per output halves.
//! When `x` fits in L1 (a few rows), one tile of weight rows at a time meets all of `x`;
//! otherwise an L2-sized block of weight rows meets one tile's rows of `x` at a time, which
//! stay in L1. Either way each weight row is read from memory once, by the first tile that
//! meets it, which prefetches the next tiles' rows; with blocks, the later row groups' tiles
//! also prefetch the next block into L2 while they compute. The weight is never copied or cached, so
//! an optimizer that updates it in place is seen at once. Within the kernel each output's sum
//! runs in the same order whatever `M` and the row's place in the batch (more than
//! [`SMALL_M`] rows go to candle's gemm inside the same op, whose rounding differs).
//!
//! The fast path runs on x86-64 CPUs with AVX2 and FMA (detected at run time) for contiguous
//! `f32` CPU tensors ([`supported`]); everything else (other dtypes, devices, CPUs) goes
//! through candle's matmul. The op is differentiable: its backward uses candle's matmuls
//! (`dx = g · W`, `dW = gᵀ · x`). Results equal candle's up to float rounding (the sums are
//! taken in another order; see the tests).

use candle_core::backend::BackendStorage;
use candle_core::{bail, CpuStorage, CustomOp2, DType, Layout, Module, Shape, Tensor};

use crate::ops::contiguous;

/// Whether [`matmul_t`] takes its own kernel for `x` and `w` (else candle's matmul): CPU
/// `f32` tensors, on an AVX2 + FMA CPU or in the fixed-order mode ([`crate::paths`]), where
/// the portable kernel runs on every CPU.
pub fn supported(x: &Tensor, w: &Tensor) -> bool {
    x.device().is_cpu()
        && x.dtype() == DType::F32
        && w.dtype() == DType::F32
        && (simd::available() || crate::paths::deterministic())
}

/// Rows of `x` up to which [`matmul_t`] runs its own kernel: beyond, candle's packed gemm is
/// as fast or faster (measured on AVX2 at K = 576 and 1536), the packing being amortised. One
/// row stays here too: run from the thread pool (`crate::on_pool`), this kernel decodes
/// SmolLM2-135M at batch 1 faster than gemm's matrix-vector path (64 tokens at 2 threads:
/// 1.56 against 1.93-2.12 s on a 2-vCPU AVX-512 EPYC, 1.22 against 1.60 s on a Xeon), and a
/// decoded row then has the same bits alone as in a batch.
pub const SMALL_M: usize = 256;

/// A linear layer `x · wᵀ (+ b)` for `x` `[.., K]`, `w` `[N, K]`, `b` `[N]`: [`matmul_t`] when
/// the kernel is [`supported`], else candle's matmul (as `candle_nn::Linear`). Differentiable
/// either way.
pub fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> candle_core::Result<Tensor> {
    if supported(x, w) {
        let y = matmul_t(x, w)?;
        match b {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    } else {
        candle_nn::Linear::new(w.clone(), b.cloned()).forward(x)
    }
}

/// `x · wᵀ` for `x` `[.., K]` and `w` `[N, K]`: `[.., N]`. Differentiable in both.
///
/// On the fast path this is one node of the autograd graph whatever the rank of `x` (no
/// reshapes, no transposed view of `w`): candle's backward gives every node's input a zeroed
/// gradient buffer and adds into it, so each node saved is a pass over an activation or a
/// weight saved in training.
pub fn matmul_t(x: &Tensor, w: &Tensor) -> candle_core::Result<Tensor> {
    let (n, k) = w.dims2()?;
    let dims = x.dims();
    if dims.last() != Some(&k) {
        bail!("matmul_t: x {dims:?} does not end in K = {k} of w [{n}, {k}]");
    }
    if !supported(x, w) {
        let m = x.elem_count() / k.max(1);
        return x.reshape((m, k))?.matmul(&w.t()?)?.reshape(out_dims(dims, n));
    }
    x.contiguous()?.apply_op2(&w.contiguous()?, MatmulT)
}

/// The dims of `x · wᵀ`: those of `x` with the last (`K`) replaced by `n`.
fn out_dims(dims: &[usize], n: usize) -> Vec<usize> {
    let mut out = dims.to_vec();
    if let Some(last) = out.last_mut() {
        *last = n;
    }
    out
}

/// `a · bᵀ` for `a` `[.., M, K]` and `b` `[.., N, K]` with the same leading dims:
/// `[.., M, N]`. Differentiable in both. In the fixed-order mode ([`crate::paths`]) and for CPU
/// `f32` tensors this is the crate's kernel, batch by batch (each output the same fixed-order
/// sum as [`matmul_t`]'s); otherwise candle's batched matmul.
pub fn bmm_t(a: &Tensor, b: &Tensor) -> candle_core::Result<Tensor> {
    let (ad, bd) = (a.dims(), b.dims());
    if ad.len() < 2
        || bd.len() != ad.len()
        || ad[..ad.len() - 2] != bd[..bd.len() - 2]
        || ad.last() != bd.last()
    {
        bail!("bmm_t: a {ad:?} and b {bd:?} are not [.., M, K] and [.., N, K]");
    }
    let fixed = crate::paths::deterministic()
        && a.device().is_cpu()
        && a.dtype() == DType::F32
        && b.dtype() == DType::F32;
    if !fixed {
        return a.matmul(&b.t()?);
    }
    a.contiguous()?.apply_op2(&b.contiguous()?, BmmT)
}

/// The storage of [`linear`]`(x, w, None)` for CPU storages `x` `[.., K]` (contiguous) and `w`
/// `[N, K]`: [`matmul_t`]'s op where [`supported`] (the same bits), candle's matmul of `x` and
/// the transposed view of `w` otherwise. For ops that fuse the product with what precedes it.
pub fn linear_storage(
    s1: &CpuStorage,
    l1: &Layout,
    s2: &CpuStorage,
    l2: &Layout,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let ours = s1.dtype() == DType::F32
        && s2.dtype() == DType::F32
        && (simd::available() || crate::paths::deterministic());
    if ours {
        return MatmulT.cpu_fwd(s1, l1, s2, l2);
    }
    let (n, k) = l2.shape().dims2()?;
    let dims = l1.dims();
    if dims.last() != Some(&k) || !l1.is_contiguous() {
        bail!("linear: x {dims:?} (contiguous) and w [{n}, {k}] differ in K");
    }
    let m = l1.shape().elem_count() / k.max(1);
    let xl = Layout::contiguous_with_offset((m, k), l1.start_offset());
    let wl = l2.transpose(0, 1)?;
    Ok((s1.matmul(s2, (1, m, n, k), &xl, &wl)?, Shape::from(out_dims(dims, n))))
}

/// The storage of [`bmm_t`]`(a, b)` for contiguous CPU storages `a` `[.., M, K]` and `b`
/// `[.., N, K]` (same leading dims), computed as [`bmm_t`] computes it: the crate's kernel in
/// the fixed-order mode for `f32`, candle's batched matmul of `a` and the transposed view of
/// `b` otherwise. For ops that fuse the product with what follows it.
pub(crate) fn bmm_t_storage(
    s1: &CpuStorage,
    l1: &Layout,
    s2: &CpuStorage,
    l2: &Layout,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let (batches, m, k, n, out) = bmm_dims(l1, l2)?;
    if crate::paths::deterministic() && s1.dtype() == DType::F32 && s2.dtype() == DType::F32 {
        return BmmT.cpu_fwd(s1, l1, s2, l2);
    }
    if m * n * batches == 0 || k == 0 {
        let zeros = match s1.dtype() {
            DType::F64 => CpuStorage::F64(vec![0.0; m * n * batches]),
            _ => CpuStorage::F32(vec![0.0; m * n * batches]),
        };
        return Ok((zeros, Shape::from(out)));
    }
    let r = out.len();
    let bt = l2.transpose(r - 2, r - 1)?;
    Ok((s1.matmul(s2, (batches, m, n, k), l1, &bt)?, Shape::from(out)))
}

/// `(batches, M, K, N, dims of the product)` of `a · bᵀ` for `a` `[.., M, K]` and `b`
/// `[.., N, K]`, or an error naming both shapes.
fn bmm_dims(l1: &Layout, l2: &Layout) -> candle_core::Result<(usize, usize, usize, usize, Vec<usize>)> {
    let (ad, bd) = (l1.dims(), l2.dims());
    let r = ad.len();
    if r < 2 || bd.len() != r || ad[..r - 2] != bd[..r - 2] || ad.last() != bd.last() {
        bail!("bmm_t: a {ad:?} and b {bd:?} are not [.., M, K] and [.., N, K]");
    }
    let (m, k, n) = (ad[r - 2], ad[r - 1], bd[r - 2]);
    let mut out = ad.to_vec();
    out[r - 1] = n;
    Ok((ad[..r - 2].iter().product(), m, k, n, out))
}

/// The gradients of [`bmm_t`]`(a, b)` given `grad` `[.., M, N]`, as its backward computes
/// them: `da = g · b` and `db = gᵀ · a` (a transposed view of `aᵀ · g` outside the fixed-order
/// mode, as candle's matmul backward leaves it). Neither records a graph.
pub(crate) fn bmm_t_grads(a: &Tensor, b: &Tensor, grad: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
    let (a, b, g) = (a.detach(), b.detach(), grad.detach());
    let fixed = crate::paths::deterministic() && a.dtype() == DType::F32 && b.dtype() == DType::F32;
    if fixed && a.device().is_cpu() {
        // As `BmmT`'s backward: `da = g · b = g · (bᵀ)ᵀ`, `db = gᵀ · a = gᵀ · (aᵀ)ᵀ`.
        let da = g.contiguous()?.apply_op2(&transposed(&b)?, BmmT)?;
        let db = transposed(&g)?.apply_op2(&transposed(&a)?, BmmT)?;
        return Ok((da, db));
    }
    let r = a.rank();
    // As candle's backward of `a.matmul(&b.t())`: `g · (bᵀ)ᵀ` and `(aᵀ · g)ᵀ`.
    let da = g.matmul(&b.t()?.t()?)?;
    let db = a.t()?.matmul(&g)?.transpose(r - 2, r - 1)?;
    Ok((da, db))
}

/// `t` `[.., R, C]` (f32) with its last two dims swapped, contiguous: a blocked copy (candle's
/// strided copy of a transposed view goes element by element, and was a fifth of a
/// fixed-order training step).
fn transposed(t: &Tensor) -> candle_core::Result<Tensor> {
    let dims = t.dims();
    let r = dims.len();
    if r < 2 || t.dtype() != DType::F32 || !t.device().is_cpu() {
        return t.transpose(r.saturating_sub(2), r.saturating_sub(1))?.contiguous();
    }
    let (rows, cols) = (dims[r - 2], dims[r - 1]);
    // Read in place (no copy out of the tensor first): the storage of a contiguous `t`.
    let t = t.contiguous()?;
    let (storage, layout) = t.storage_and_layout();
    let candle_core::Storage::Cpu(cpu) = &*storage else {
        bail!("transposed: a CPU tensor has no CPU storage")
    };
    let src = contiguous::<f32>(cpu, layout, "transposed")?;
    let mut dst = vec![0f32; src.len()];
    const B: usize = 16;
    let plane = (rows * cols).max(1);
    for (s, d) in src.chunks(plane).zip(dst.chunks_mut(plane)) {
        for i0 in (0..rows).step_by(B) {
            for j0 in (0..cols).step_by(B) {
                for i in i0..(i0 + B).min(rows) {
                    for j in j0..(j0 + B).min(cols) {
                        d[j * rows + i] = s[i * cols + j];
                    }
                }
            }
        }
    }
    drop(storage);
    let mut out = dims.to_vec();
    out.swap(r - 2, r - 1);
    Tensor::from_vec(dst, out, t.device())
}

/// The custom op of [`bmm_t`].
struct BmmT;

impl CustomOp2 for BmmT {
    fn name(&self) -> &'static str {
        "bmm_t"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (batches, m, k, n, out) = bmm_dims(l1, l2)?;
        let a = contiguous::<f32>(s1, l1, "bmm_t")?;
        let b = contiguous::<f32>(s2, l2, "bmm_t")?;
        let mut dst = vec![0f32; batches * m * n];
        simd::batched(a, b, &mut dst, batches, m, n, k)?;
        Ok((CpuStorage::F32(dst), Shape::from(out)))
    }

    fn bwd(
        &self,
        a: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (a, b) = (a.detach(), b.detach());
        // `da = g · b = g · (bᵀ)ᵀ`, `db = gᵀ · a = gᵀ · (aᵀ)ᵀ`.
        let da = grad.contiguous()?.apply_op2(&transposed(&b)?, BmmT)?;
        let db = transposed(grad)?.apply_op2(&transposed(&a)?, BmmT)?;
        Ok((Some(da), Some(db)))
    }
}

/// The custom op over `[.., K]` (`M` rows) and `[N, K]`.
struct MatmulT;

impl CustomOp2 for MatmulT {
    fn name(&self) -> &'static str {
        "matmul_t"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (n, k) = l2.shape().dims2()?;
        let dims = l1.dims();
        if dims.last() != Some(&k) {
            bail!("matmul_t: x {dims:?} and w [{n}, {k}] differ in K");
        }
        let m = l1.shape().elem_count() / k.max(1);
        let out = out_dims(dims, n);
        // Every caller hands this op f32 CPU storages (`supported`, `linear_storage`).
        let x = contiguous::<f32>(s1, l1, "matmul_t")?;
        let w = contiguous::<f32>(s2, l2, "matmul_t")?;
        let dst = if !crate::paths::deterministic() && m > SMALL_M {
            // candle's gemm call on the same buffers: `x` `[m, k]` row-major, `wᵀ` `[k, n]`
            // read through `w`'s rows.
            unzeroed::gemm(unzeroed::View::new(x, k, 1), unzeroed::View::new(w, 1, k), m, n, k)?
        } else {
            simd::matmul_t_vec(x, w, m, n, k)?
        };
        Ok((CpuStorage::F32(dst), Shape::from(out)))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (dx, dw) = linear_grads(x, w, grad)?;
        Ok((Some(dx), Some(dw)))
    }
}

/// The gradients of `y = x · wᵀ` (`x` `[.., K]`, `w` `[N, K]`) given `grad` `[.., N]`:
/// `dx = g · w` (shaped as `x`) and `dw = gᵀ · x` `[N, K]`, as [`matmul_t`]'s backward
/// computes them (the fixed-order kernel in the fixed-order mode where it runs, candle's
/// matmul otherwise). Neither records a graph.
pub(crate) fn linear_grads(x: &Tensor, w: &Tensor, grad: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
    Ok((linear_input_grad(x, w, grad)?, linear_weight_grad(x, w, grad)?))
}

/// `dx = g · w` of [`linear_grads`], shaped as `x`.
pub fn linear_input_grad(x: &Tensor, w: &Tensor, grad: &Tensor) -> candle_core::Result<Tensor> {
    let (n, k) = w.dims2()?;
    let m = x.elem_count() / k.max(1);
    // Detached operands: the gradients must not record a graph of their own, which would
    // keep `grad` alive as long as they are.
    let (w, g) = (w.detach(), grad.detach().reshape((m, n))?);
    if crate::paths::deterministic() && supported(x, &w) {
        // The same fixed-order kernel: `dx = g · w = g · (wᵀ)ᵀ`.
        return g.apply_op2(&transposed(&w)?, MatmulT)?.reshape(x.dims());
    }
    if let Some(dx) = unzeroed::product(&g, false, &w, (m, k, n))? {
        return dx.reshape(x.dims());
    }
    g.matmul(&w)?.reshape(x.dims())
}

/// `dw = gᵀ · x` `[N, K]` of [`linear_grads`].
pub fn linear_weight_grad(x: &Tensor, w: &Tensor, grad: &Tensor) -> candle_core::Result<Tensor> {
    let (n, k) = w.dims2()?;
    let m = x.elem_count() / k.max(1);
    let (x, g) = (x.detach().reshape((m, k))?, grad.detach().reshape((m, n))?);
    if crate::paths::deterministic() && supported(&x, w) {
        // The same fixed-order kernel: `dw = gᵀ · x = gᵀ · (xᵀ)ᵀ`.
        return transposed(&g)?.apply_op2(&transposed(&x)?, MatmulT);
    }
    if let Some(dw) = unzeroed::product(&g, true, &x, (n, k, m))? {
        return Ok(dw);
    }
    g.t()?.matmul(&x)
}

/// candle's CPU matmul of one product in f32, as candle calls gemm for it (the same
/// arguments, so the same bits), into a buffer that is not zeroed first. candle zeroes its
/// output before gemm overwrites it: a pass over the whole output on the calling thread while
/// the pool waits (4.7% of a 32 × 128 prefill's samples on an AVX-512 Xeon, and part of the
/// update's 4%).
// gemm is called through raw pointers; every unsafe block states why its contract holds.
#[allow(unsafe_code)]
mod unzeroed {
    use candle_core::{bail, CpuStorage, Tensor};

    use crate::ops::contiguous;

    /// One operand of `[m, k] · [k, n]` as gemm reads it: element `(i, j)` at
    /// `data[i * rs + j * cs]`.
    #[derive(Clone, Copy)]
    pub(super) struct View<'a> {
        data: &'a [f32],
        rs: usize,
        cs: usize,
    }

    impl<'a> View<'a> {
        pub(super) fn new(data: &'a [f32], rs: usize, cs: usize) -> Self {
            Self { data, rs, cs }
        }

        /// Whether a `rows × cols` operand lies inside `data`.
        fn holds(&self, rows: usize, cols: usize) -> bool {
            rows == 0
                || cols == 0
                || (rows - 1)
                    .checked_mul(self.rs)
                    .zip((cols - 1).checked_mul(self.cs))
                    .and_then(|(a, b)| a.checked_add(b))
                    .is_some_and(|last| last < self.data.len())
        }
    }

    /// `lhs · rhs` (`[m, k]` · `[k, n]`), row-major `[m, n]`: candle's `Tensor::matmul` of these
    /// operands, bit for bit.
    pub(super) fn gemm(lhs: View, rhs: View, m: usize, n: usize, k: usize) -> candle_core::Result<Vec<f32>> {
        if !lhs.holds(m, k) || !rhs.holds(k, n) {
            bail!("matmul: operands do not hold [{m}, {k}] and [{k}, {n}]");
        }
        let len = m * n;
        if len == 0 || k == 0 {
            // candle's `matmul` returns zeros for an empty inner dimension.
            return Ok(vec![0f32; len]);
        }
        let threads = candle_core::utils::get_num_threads();
        let parallelism =
            if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
        let mut dst: Vec<f32> = Vec::with_capacity(len);
        // SAFETY: both operands lie inside their slices (checked above) and `dst` has room for
        // `m * n` row-major outputs. With `read_dst` false gemm sets alpha to zero and writes
        // every output without reading it (the zeroed buffer candle passes is never read
        // either), so `dst` is initialised before `set_len`; were gemm to unwind, `dst` would
        // be dropped empty.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                1,
                n as isize,
                false,
                lhs.data.as_ptr(),
                lhs.cs as isize,
                lhs.rs as isize,
                rhs.data.as_ptr(),
                rhs.cs as isize,
                rhs.rs as isize,
                0f32,
                1f32,
                false,
                false,
                false,
                parallelism,
            );
            dst.set_len(len);
        }
        Ok(dst)
    }

    /// `aᵀ · b` (`a_t`) or `a · b` for contiguous f32 CPU matrices `a` and `b`, `(m, n, k)` the
    /// product's, through [`gemm`] with the strides candle's `matmul` passes for the same
    /// views: `None` where the operands are not such matrices (candle then computes it).
    pub(super) fn product(
        a: &Tensor,
        a_t: bool,
        b: &Tensor,
        (m, n, k): (usize, usize, usize),
    ) -> candle_core::Result<Option<Tensor>> {
        let plain =
            |t: &Tensor| t.device().is_cpu() && t.dtype() == candle_core::DType::F32 && t.is_contiguous();
        let a_dims = if a_t { [k, m] } else { [m, k] };
        if !(plain(a) && plain(b)) || a.dims() != a_dims || b.dims() != [k, n] {
            return Ok(None);
        }
        let (a_storage, a_layout) = a.storage_and_layout();
        let (b_storage, b_layout) = b.storage_and_layout();
        let (
            candle_core::Storage::Cpu(sa @ CpuStorage::F32(_)),
            candle_core::Storage::Cpu(sb @ CpuStorage::F32(_)),
        ) = (&*a_storage, &*b_storage)
        else {
            return Ok(None);
        };
        let (ad, bd) =
            (contiguous::<f32>(sa, a_layout, "matmul")?, contiguous::<f32>(sb, b_layout, "matmul")?);
        // `a` is `[k, m]` when transposed (read column by column), else `[m, k]`.
        let lhs = if a_t { View::new(ad, 1, m) } else { View::new(ad, k, 1) };
        let out = gemm(lhs, View::new(bd, n, 1), m, n, k)?;
        Ok(Some(Tensor::from_vec(out, (m, n), a.device())?))
    }
}

/// The kernel, with a run-time check for AVX2 and FMA.
// SIMD intrinsics and the raw-pointer tiles need `unsafe`; every unsafe fn states its contract
// and every block why it holds (`// SAFETY:` comments).
#[allow(unsafe_code)]
mod simd;

/// The portable kernel: the AVX2 tile's arithmetic on plain lanes, so that both give the same
/// bits. Each output: 8 lane sums over `K` by fused multiply-add (lane `l` takes elements
/// `l, l + 8, ..`), the lanes summed in [`crate::lanes::hsum`]'s order, then the tail of `K`
/// (beyond the last multiple of 8) added one product at a time, each rounded.
#[allow(unsafe_code)]
pub(crate) mod portable;

#[cfg(test)]
mod tests {
    use candle_core::{Device, Var};

    use super::*;

    fn data(len: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    /// Exact reference in f64.
    fn reference(x: &[f32], w: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
        let mut out = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k).map(|p| x[i * k + p] as f64 * w[j * k + p] as f64).sum();
            }
        }
        out
    }

    #[test]
    fn equals_the_f64_product_for_ragged_shapes() {
        let dev = Device::Cpu;
        for &(m, n, k) in &[
            (1, 1, 1),
            (1, 7, 13),
            (5, 4, 8),
            (9, 11, 37),
            (33, 50, 64),
            (4, 3, 576),
            (70, 200, 20),
            (300, 9, 20),
        ] {
            let (xv, wv) = (data(m * k, 1 + m as u64), data(n * k, 2 + n as u64));
            let x = Tensor::from_vec(xv.clone(), (m, k), &dev).unwrap();
            let w = Tensor::from_vec(wv.clone(), (n, k), &dev).unwrap();
            let y: Vec<f32> = matmul_t(&x, &w).unwrap().flatten_all().unwrap().to_vec1().unwrap();
            let r = reference(&xv, &wv, m, n, k);
            let tol = 1e-6 * (k as f64).sqrt() + 1e-7;
            for (a, b) in y.iter().zip(&r) {
                assert!((*a as f64 - b).abs() <= tol, "[{m}, {n}, {k}]: {a} vs {b}");
            }
        }
    }

    #[test]
    fn matches_candle_matmul_on_batched_input_and_strided_weight() {
        let dev = Device::Cpu;
        let x = Tensor::from_vec(data(2 * 3 * 40, 3), (2, 3, 40), &dev).unwrap();
        // A transposed view: not contiguous, so it is copied first.
        let w = Tensor::from_vec(data(40 * 17, 4), (40, 17), &dev).unwrap().t().unwrap();
        let a = matmul_t(&x, &w).unwrap();
        let b = x.broadcast_matmul(&w.t().unwrap()).unwrap();
        assert_eq!(a.dims(), [2, 3, 17]);
        let d: f32 = (a - b).unwrap().abs().unwrap().max_all().unwrap().to_scalar().unwrap();
        assert!(d < 1e-5, "{d}");
    }

    #[test]
    fn gradients_equal_candle_matmul_gradients() {
        let dev = Device::Cpu;
        let x = Var::from_tensor(&Tensor::from_vec(data(6 * 19, 5), (2, 3, 19), &dev).unwrap()).unwrap();
        let w = Var::from_tensor(&Tensor::from_vec(data(10 * 19, 6), (10, 19), &dev).unwrap()).unwrap();
        let r = Tensor::from_vec(data(60, 7), (2, 3, 10), &dev).unwrap();
        let ga = (matmul_t(&x, &w).unwrap() * &r).unwrap().sum_all().unwrap().backward().unwrap();
        let gb = (x.broadcast_matmul(&w.t().unwrap()).unwrap() * &r)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        for v in [&x, &w] {
            let (a, b) = (ga.get(v.as_tensor()).unwrap(), gb.get(v.as_tensor()).unwrap());
            let d: f32 = (a - b).unwrap().abs().unwrap().max_all().unwrap().to_scalar().unwrap();
            assert!(d < 1e-5, "{d}");
        }
    }

    /// The portable kernel, the AVX2 kernel and the AVX-512 tile give the same bits, and a
    /// row's outputs do not depend on the rows around it, on `M` or on the thread count.
    #[test]
    fn portable_and_avx2_agree_bit_for_bit_whatever_the_batch() {
        let shapes =
            [(1, 1, 1), (1, 7, 13), (8, 4, 8), (9, 11, 37), (16, 13, 29), (33, 50, 64), (64, 97, 576)];
        let wide =
            [(300, 9, 700), (5, 3, 4100), (40, 61, 1536), (27, 200, 576), (13, 100, 1536), (203, 40, 1536)];
        for &(m, n, k) in shapes.iter().chain(&wide) {
            let (x, w) = (data(m * k, 11 + k as u64), data(n * k, 12 + n as u64));
            let mut portable = vec![0f32; m * n];
            for (i, row) in portable.chunks_mut(n).enumerate() {
                super::portable::rows_plain(&x[i * k..(i + 1) * k], &w, row, k);
            }
            let mut fma = vec![0f32; m * n];
            for (i, row) in fma.chunks_mut(n).enumerate() {
                super::portable::rows(&x[i * k..(i + 1) * k], &w, row, k);
            }
            assert_eq!(bits(&portable), bits(&fma), "[{m}, {n}, {k}]: plain vs FMA-compiled portable");
            if !simd::available() {
                continue;
            }
            // NaN-filled outputs: an output no tile writes would keep its NaN (the op's buffer,
            // below, is not initialised at all).
            let mut avx2 = vec![f32::NAN; m * n];
            simd::matmul_t_on(&x, &w, &mut avx2, m, n, k, false).unwrap();
            assert_eq!(bits(&portable), bits(&avx2), "[{m}, {n}, {k}]: portable vs AVX2");
            if crate::paths::detected_avx512() {
                let mut avx512 = vec![f32::NAN; m * n];
                simd::matmul_t_on(&x, &w, &mut avx512, m, n, k, true).unwrap();
                assert_eq!(bits(&portable), bits(&avx512), "[{m}, {n}, {k}]: portable vs AVX-512");
            } else {
                eprintln!("this CPU lacks AVX-512 F/DQ: the AVX-512 tile is not compared");
            }
            // Into a new buffer that is not zeroed first, as the op computes.
            let fresh = simd::matmul_t_vec(&x, &w, m, n, k).unwrap();
            assert_eq!(bits(&portable), bits(&fresh), "[{m}, {n}, {k}]: into a new buffer");
            // The last row alone, and the whole product on one thread.
            let mut last = vec![0f32; n];
            simd::matmul_t(&x[(m - 1) * k..], &w, &mut last, 1, n, k).unwrap();
            assert_eq!(bits(&last), bits(&avx2[(m - 1) * n..]), "[{m}, {n}, {k}]: a row alone");
            let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let mut single = vec![0f32; m * n];
            one.install(|| simd::matmul_t(&x, &w, &mut single, m, n, k)).unwrap();
            assert_eq!(bits(&single), bits(&avx2), "[{m}, {n}, {k}]: one thread");
            // Batched: each batch the same bits as the product alone.
            let mut two = vec![0f32; 2 * m * n];
            let (xx, ww) = ([x.clone(), x.clone()].concat(), [w.clone(), w.clone()].concat());
            simd::batched(&xx, &ww, &mut two, 2, m, n, k).unwrap();
            assert_eq!(bits(&two[m * n..]), bits(&avx2), "[{m}, {n}, {k}]: batched");
        }
    }

    /// Where candle's gemm computes (more than [`SMALL_M`] rows forward; the gradients at any
    /// count), the op writes gemm's output into a buffer it does not zero first: the bits of
    /// candle's `matmul` of the same views, for ragged shapes, a `K` of one, and one row.
    #[test]
    fn gemm_into_an_unzeroed_buffer_has_candles_bits() {
        let dev = Device::Cpu;
        let t = |len: usize, seed: u64, dims: (usize, usize)| {
            Tensor::from_vec(data(len, seed), dims, &dev).unwrap()
        };
        let tbits = |t: &Tensor| bits(&t.flatten_all().unwrap().to_vec1::<f32>().unwrap());
        for (m, n, k) in [(SMALL_M + 1, 9, 70), (300, 40, 33), (SMALL_M + 7, 64, 1), (1, 5, 3), (40, 7, 19)] {
            let (x, w, g) = (t(m * k, 21, (m, k)), t(n * k, 22, (n, k)), t(m * n, 23, (m, n)));
            if m > SMALL_M {
                let ours = matmul_t(&x, &w).unwrap();
                assert_eq!(
                    tbits(&ours),
                    tbits(&x.matmul(&w.t().unwrap()).unwrap()),
                    "[{m}, {n}, {k}] forward"
                );
            }
            let dx = linear_input_grad(&x, &w, &g).unwrap();
            assert_eq!(tbits(&dx), tbits(&g.matmul(&w).unwrap()), "[{m}, {n}, {k}] dx");
            let dw = linear_weight_grad(&x, &w, &g).unwrap();
            assert_eq!(tbits(&dw), tbits(&g.t().unwrap().matmul(&x).unwrap()), "[{m}, {n}, {k}] dw");
            // gemm with `read_dst` false never reads its output: a NaN-filled one comes back
            // with candle's bits (a fresh allocation may hold zeros, which would hide a read).
            let (xs, ws) = (data(m * k, 21), data(n * k, 22));
            let mut out = vec![f32::NAN; m * n];
            // SAFETY: `xs` `[m, k]` and `ws` `[n, k]` row-major are read as `x` and `wᵀ`;
            // `out` holds `m * n` row-major outputs.
            #[allow(unsafe_code)]
            unsafe {
                gemm::gemm(
                    m,
                    n,
                    k,
                    out.as_mut_ptr(),
                    1,
                    n as isize,
                    false,
                    xs.as_ptr(),
                    1,
                    k as isize,
                    ws.as_ptr(),
                    k as isize,
                    1,
                    0f32,
                    1f32,
                    false,
                    false,
                    false,
                    gemm::Parallelism::Rayon(2),
                )
            };
            assert_eq!(bits(&out), tbits(&x.matmul(&w.t().unwrap()).unwrap()), "[{m}, {n}, {k}] NaN-filled");
        }
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Through the op (not the kernel alone): a row multiplied on its own, as batch-1 decoding
    /// does, has the same bits as that row in a batch of up to [`SMALL_M`] rows. One row is not
    /// handed to gemm, whose sums run in another order.
    #[test]
    fn one_row_through_the_op_has_its_bits_in_a_batch() {
        if !supported(
            &Tensor::zeros(1, DType::F32, &Device::Cpu).unwrap(),
            &Tensor::zeros(1, DType::F32, &Device::Cpu).unwrap(),
        ) {
            eprintln!("the kernel does not run on this CPU: nothing to compare");
            return;
        }
        let dev = Device::Cpu;
        for &(m, n, k) in &[(5, 49, 576), (32, 61, 1536), (SMALL_M, 9, 64)] {
            let x = Tensor::from_vec(data(m * k, 21 + k as u64), (m, k), &dev).unwrap();
            let w = Tensor::from_vec(data(n * k, 22 + n as u64), (n, k), &dev).unwrap();
            let all: Vec<f32> = matmul_t(&x, &w).unwrap().flatten_all().unwrap().to_vec1().unwrap();
            for r in [0, m / 2, m - 1] {
                let row = x.narrow(0, r, 1).unwrap().contiguous().unwrap();
                let one: Vec<f32> = matmul_t(&row, &w).unwrap().flatten_all().unwrap().to_vec1().unwrap();
                assert_eq!(bits(&one), bits(&all[r * n..(r + 1) * n]), "[{m}, {n}, {k}]: row {r}");
            }
        }
    }

    #[test]
    fn bmm_t_gradients_equal_candle_matmul_gradients() {
        let dev = Device::Cpu;
        let a = Var::from_tensor(&Tensor::from_vec(data(2 * 3 * 5 * 19, 21), (2, 3, 5, 19), &dev).unwrap())
            .unwrap();
        let b = Var::from_tensor(&Tensor::from_vec(data(2 * 3 * 7 * 19, 22), (2, 3, 7, 19), &dev).unwrap())
            .unwrap();
        let r = Tensor::from_vec(data(2 * 3 * 5 * 7, 23), (2, 3, 5, 7), &dev).unwrap();
        let ours = a
            .as_tensor()
            .contiguous()
            .unwrap()
            .apply_op2(&b.as_tensor().contiguous().unwrap(), BmmT)
            .unwrap();
        let theirs = a.matmul(&b.t().unwrap()).unwrap();
        let d: f32 = (&ours - &theirs).unwrap().abs().unwrap().max_all().unwrap().to_scalar().unwrap();
        assert!(d < 1e-5, "forward {d}");
        let ga = (ours * &r).unwrap().sum_all().unwrap().backward().unwrap();
        let gb = (theirs * &r).unwrap().sum_all().unwrap().backward().unwrap();
        for v in [&a, &b] {
            let (x, y) = (ga.get(v.as_tensor()).unwrap(), gb.get(v.as_tensor()).unwrap());
            let d: f32 = (x - y).unwrap().abs().unwrap().max_all().unwrap().to_scalar().unwrap();
            assert!(d < 1e-5, "{d}");
        }
    }

    #[test]
    fn other_dtypes_take_candles_matmul() {
        let dev = Device::Cpu;
        let x = Tensor::from_vec(vec![1f64, 2., 3., 4.], (2, 2), &dev).unwrap();
        let w = Tensor::from_vec(vec![1f64, 0., 1., 1.], (2, 2), &dev).unwrap();
        assert!(!supported(&x, &w));
        let y: Vec<Vec<f64>> = matmul_t(&x, &w).unwrap().to_vec2().unwrap();
        assert_eq!(y, vec![vec![1., 3.], vec![3., 7.]]);
    }
}
