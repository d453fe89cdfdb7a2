//! The masked softmax as a node of its own: the tests' reference for the fused ops that share
//! its row kernel ([`super::masked_softmax_row`]) and gradient ([`super::softmax_grad`]).
//! Built only for tests (the model runs the softmax fused with the product, `crate::probs`).

use candle_core::backend::BackendStorage;
use candle_core::{bail, CpuStorage, CustomOp2, DType, Layout, Shape, Tensor};
use rayon::prelude::*;

use super::{contiguous, masked_softmax_row, softmax_grad, Real, MIN_ROWS};

/// `softmax(scale * scores + mask)` over the last dim. `mask` is `[B, 1.., T, Tk]` (shared by
/// all heads; 0 = attend, a large finite negative = blocked); `scores` is `[B, .., Tk]` whose
/// rows, within each batch item, are query positions `0..T` repeated (e.g. `[B, H, T, Tk]`, or
/// grouped-query `[B, kv_heads, n_rep * T, Tk]`, or `[B, kv_heads, n_rep, T, Tk]`), so no
/// broadcast or reshape of the big scores tensor is needed. Differentiable in `scores`.
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

struct MaskedSoftmax {
    scale: f64,
    /// Query positions: row `r` of the scores is query `r % t`.
    t: usize,
}

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
