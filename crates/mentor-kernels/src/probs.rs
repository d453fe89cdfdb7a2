//! Attention probabilities `softmax(scale · q·kᵀ + mask)` as one node of the graph
//! ([`attention_probs`]).
//!
//! As two nodes (the product, then the crate's masked softmax kernel), a training pass holds
//! the scores and the probabilities, the two largest tensors of a layer, until its backward:
//! the softmax node keeps its input alive though its backward reads only its output. This
//! node computes the scores into the buffer that becomes the probabilities, so a layer holds
//! one `[B, kv_heads, n_rep · T, Tk]` tensor instead of two. Its backward is the softmax's,
//! then the product's, each as the two-node graph computes it ([`matmul::bmm_t_grads`]): the
//! same values, the same bits.

use candle_core::backend::BackendStorage;
use candle_core::{bail, CpuStorage, CustomOp3, DType, Layout, Shape, Tensor};
use rayon::prelude::*;

use crate::matmul;
use crate::ops::{self, contiguous, masked_softmax_row, Real};

/// Rows handed to one rayon task at least.
const MIN_ROWS: usize = 16;

/// `softmax(scale · q·kᵀ + mask)` over the last dim, for `q` `[B, kv_heads, R, hd]` (grouped
/// query heads: row `r` of a batch item is query position `r % T`), `k` `[B, kv_heads, Tk, hd]`
/// and `mask` `[B, 1, T, Tk]` (0 = attend, a large finite negative = blocked). The product is
/// [`matmul::bmm_t`]'s and the softmax the crate's masked softmax kernel's, row by row the same
/// arithmetic. Differentiable in `q` and `k`. CPU `f32`/`f64` ([`ops::supported`]).
pub fn attention_probs(q: &Tensor, k: &Tensor, mask: &Tensor, scale: f64) -> candle_core::Result<Tensor> {
    let (b, g, r, hd) = q.dims4()?;
    let (kb, kg, tk, khd) = k.dims4()?;
    let (mb, m1, t, mtk) = mask.dims4()?;
    if (kb, kg, khd) != (b, g, hd) || (mb, m1, mtk) != (b, 1, tk) || t == 0 || r % t != 0 {
        bail!(
            "attention_probs: q {:?}, k {:?} and mask {:?} are not [B, G, R, hd], [B, G, Tk, hd] and [B, 1, T, Tk]",
            q.dims(),
            k.dims(),
            mask.dims()
        );
    }
    if !ops::supported(q) || q.dtype() != k.dtype() || q.dtype() != mask.dtype() {
        bail!("attention_probs: CPU f32 or f64 only, one dtype");
    }
    // The keys as they lie (a cache's strided view) for candle's product, as `bmm_t` passes
    // them; contiguous for the fixed-order kernel, as `bmm_t` makes them.
    let k = if crate::paths::deterministic() { k.contiguous()? } else { k.clone() };
    q.contiguous()?.apply_op3(&k, &mask.contiguous()?, AttentionProbs { scale, t })
}

struct AttentionProbs {
    scale: f64,
    /// Query positions: row `r` of a batch item is query `r % t`.
    t: usize,
}

/// The scaled, masked softmax of the crate's kernel over `x` (the scores, rows of
/// `tk`) in place: each row is copied out and [`masked_softmax_row`] writes it back.
fn softmax_in_place<T: Real>(x: &mut [T], mask: &[T], b: usize, t: usize, tk: usize, scale: f64) {
    if tk == 0 || x.is_empty() {
        return;
    }
    let rows_per_b = x.len() / b.max(1) / tk;
    let scale = T::from_f64(scale);
    x.par_chunks_mut(tk).with_min_len(MIN_ROWS).enumerate().for_each_init(Vec::new, |row_copy, (row, d)| {
        let (bi, qi) = (row / rows_per_b, row % t);
        let m = &mask[(bi * t + qi) * tk..(bi * t + qi + 1) * tk];
        row_copy.clear();
        row_copy.extend_from_slice(d);
        masked_softmax_row(d, row_copy, m, scale);
    });
}

impl CustomOp3 for AttentionProbs {
    fn name(&self) -> &'static str {
        "attention-probs"
    }

    fn cpu_fwd(
        &self,
        sq: &CpuStorage,
        lq: &Layout,
        sk: &CpuStorage,
        lk: &Layout,
        sm: &CpuStorage,
        lm: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (mut scores, shape) = matmul::bmm_t_storage(sq, lq, sk, lk)?;
        let (b, tk) = (lq.dims()[0], lk.dims()[2]);
        match (&mut scores, sm.dtype()) {
            (CpuStorage::F32(x), DType::F32) => {
                softmax_in_place(x, contiguous::<f32>(sm, lm, self.name())?, b, self.t, tk, self.scale)
            }
            (CpuStorage::F64(x), DType::F64) => {
                softmax_in_place(x, contiguous::<f64>(sm, lm, self.name())?, b, self.t, tk, self.scale)
            }
            (x, d) => bail!("{}: scores {:?}, mask {d:?}", self.name(), x.dtype()),
        }
        Ok((scores, shape))
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        _mask: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let ds = ops::softmax_grad(res, grad, self.scale)?;
        let (dq, dk) = matmul::bmm_t_grads(q, k, &ds)?;
        Ok((Some(dq), Some(dk), None))
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Var};

    use super::*;
    use crate::test_util::{bits, tensor};

    /// A causal mask `[B, 1, T, P + T]` after `P` prefix keys, row `b` blocking its first `b`
    /// prefix keys (padding).
    fn mask(b: usize, p: usize, t: usize, dtype: DType) -> Tensor {
        let mut m = vec![0f64; b * t * (p + t)];
        for bi in 0..b {
            for qi in 0..t {
                for ki in 0..p + t {
                    if ki < bi.min(p) || ki > p + qi {
                        m[(bi * t + qi) * (p + t) + ki] = -1e9;
                    }
                }
            }
        }
        Tensor::from_vec(m, (b, 1, t, p + t), &Device::Cpu).unwrap().to_dtype(dtype).unwrap()
    }

    /// `(probs, dq, dk)` of `sum(probs · r)` by `f`.
    fn run(dtype: DType, f: impl Fn(&Tensor, &Tensor, &Tensor) -> Tensor) -> (Tensor, Tensor, Tensor) {
        let (b, g, t, p, hd) = (3, 2, 5, 4, 8);
        let q = Var::from_tensor(&tensor(&[b, g, 3 * t, hd], 1, 1.5, dtype)).unwrap();
        let k = Var::from_tensor(&tensor(&[b, g, p + t, hd], 2, 1.5, dtype)).unwrap();
        let m = mask(b, p, t, dtype);
        let y = f(q.as_tensor(), k.as_tensor(), &m);
        let r = tensor(y.dims(), 3, 1.0, dtype);
        let grads = (&y * r).unwrap().sum_all().unwrap().backward().unwrap();
        let dq = grads.get(q.as_tensor()).unwrap().clone();
        let dk = grads.get(k.as_tensor()).unwrap().clone();
        (y, dq, dk)
    }

    /// The same bits as the two nodes it replaces, forward and backward, in both dtypes. (The
    /// fixed-order mode is a process-wide switch, not flipped among parallel unit tests: the
    /// demo's golden hashes, which run in it, check that path.)
    #[test]
    fn equals_the_product_then_the_masked_softmax_bit_for_bit() {
        let scale = 0.125;
        for dtype in [DType::F32, DType::F64] {
            let ours = run(dtype, |q, k, m| attention_probs(q, k, m, scale).unwrap());
            let theirs = run(dtype, |q, k, m| {
                crate::ops::reference::masked_softmax(&matmul::bmm_t(q, k).unwrap(), m, scale).unwrap()
            });
            for (name, a, b) in
                [("probs", &ours.0, &theirs.0), ("dq", &ours.1, &theirs.1), ("dk", &ours.2, &theirs.2)]
            {
                assert_eq!(bits(a), bits(b), "{name} {dtype:?}");
            }
            let sum = ours.2.abs().unwrap().sum_all().unwrap().to_dtype(DType::F64).unwrap();
            assert!(sum.to_scalar::<f64>().unwrap() > 0.0);
        }
    }

    #[test]
    fn mismatched_shapes_and_dtypes_are_errors() {
        let q = tensor(&[2, 1, 6, 4], 4, 1.0, DType::F32);
        let k = tensor(&[2, 1, 5, 4], 5, 1.0, DType::F32);
        assert!(attention_probs(&q, &k, &mask(2, 2, 3, DType::F32), 1.0).is_ok());
        assert!(attention_probs(&q, &k, &mask(2, 1, 3, DType::F32), 1.0).is_err());
        assert!(attention_probs(&q, &k, &mask(2, 1, 4, DType::F32), 1.0).is_err());
        assert!(attention_probs(
            &q,
            &tensor(&[2, 1, 5, 3], 5, 1.0, DType::F32),
            &mask(2, 2, 3, DType::F32),
            1.0
        )
        .is_err());
        let h = |t: &Tensor| t.to_dtype(DType::BF16).unwrap();
        assert!(attention_probs(&h(&q), &h(&k), &h(&mask(2, 2, 3, DType::F32)), 1.0).is_err());
    }
}
