//! The MLP's gated activation and down projection as one node of the graph ([`swiglu_down`]).
//!
//! As two nodes (the crate's fused SwiGLU, then the down projection), a training pass holds
//! `m = silu(gate) · up`, an `[.., intermediate]` tensor, until its backward: the projection
//! keeps its input for its weight's gradient. This node keeps only `gate` and `up` (which the
//! SwiGLU's backward reads anyway) and computes `m` again in its backward, an element-wise pass
//! beside the two products that read it. At SmolLM2-135M that is 1,536 floats per token and
//! layer, a quarter of a layer's activations. Forward and backward are the two nodes', value
//! for value: the same SwiGLU kernel, the same product kernel, the same gradients.

use candle_core::backend::BackendStorage;
use candle_core::{bail, CpuStorage, CustomOp3, DType, Layout, Shape, Tensor};

use mentor_kernels::matmul;
use mentor_kernels::ops::{self, swiglu_fwd};

/// `(silu(gate) · up) · wᵀ` for `gate`, `up` `[.., I]` and `w` `[H, I]`: `[.., H]`, as
/// [`ops::swiglu`] then [`matmul::linear`] compute it. Differentiable in all three.
/// CPU `f32`/`f64` ([`ops::supported`]).
pub(crate) fn swiglu_down(gate: &Tensor, up: &Tensor, w: &Tensor) -> candle_core::Result<Tensor> {
    let (_, i) = w.dims2()?;
    if gate.dims() != up.dims() || gate.dims().last() != Some(&i) {
        bail!("swiglu_down: gate {:?}, up {:?} and w {:?} do not match", gate.dims(), up.dims(), w.dims());
    }
    if !ops::supported(gate) || gate.dtype() != up.dtype() || gate.dtype() != w.dtype() {
        bail!("swiglu_down: CPU f32 or f64 only, one dtype");
    }
    gate.contiguous()?.apply_op3(&up.contiguous()?, &w.contiguous()?, SwiGluDown)
}

struct SwiGluDown;

impl CustomOp3 for SwiGluDown {
    fn name(&self) -> &'static str {
        "swiglu-down"
    }

    fn cpu_fwd(
        &self,
        sg: &CpuStorage,
        lg: &Layout,
        su: &CpuStorage,
        lu: &Layout,
        sw: &CpuStorage,
        lw: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (m, shape) = match sg.dtype() {
            DType::F32 => swiglu_fwd::<f32>(sg, lg, su, lu)?,
            DType::F64 => swiglu_fwd::<f64>(sg, lg, su, lu)?,
            d => bail!("{}: {d:?}", self.name()),
        };
        matmul::linear_storage(&m, &Layout::contiguous(shape), sw, lw)
    }

    fn bwd(
        &self,
        gate: &Tensor,
        up: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (gate, up) = (gate.detach(), up.detach());
        // `m` again, by the forward's kernel: the same bits.
        let m = ops::swiglu(&gate, &up)?;
        let dm = matmul::linear_input_grad(&m, w, grad)?;
        let dw = matmul::linear_weight_grad(&m, w, grad)?;
        drop(m);
        let (dgate, dup) = ops::swiglu_grads(&gate, &up, &dm)?;
        Ok((Some(dgate), Some(dup), Some(dw)))
    }
}

#[cfg(test)]
mod tests {
    use candle_core::Var;

    use super::*;
    use mentor_kernels::test_util::{bits, tensor};

    /// `(y, dgate, dup, dw)` of `sum(y · r)` by `f`, on `rows` rows.
    fn run(dtype: DType, rows: usize, f: impl Fn(&Tensor, &Tensor, &Tensor) -> Tensor) -> Vec<Tensor> {
        let (i, h) = (24, 10);
        let gate = Var::from_tensor(&tensor(&[1, rows, i], 1, 3.0, dtype)).unwrap();
        let up = Var::from_tensor(&tensor(&[1, rows, i], 2, 2.0, dtype)).unwrap();
        let w = Var::from_tensor(&tensor(&[h, i], 3, 0.5, dtype)).unwrap();
        let y = f(gate.as_tensor(), up.as_tensor(), w.as_tensor());
        let r = tensor(y.dims(), 4, 1.0, dtype);
        let g = (&y * r).unwrap().sum_all().unwrap().backward().unwrap();
        let mut out = vec![y];
        for v in [&gate, &up, &w] {
            out.push(g.get(v.as_tensor()).unwrap().clone());
        }
        out
    }

    /// The same bits as the SwiGLU node then the linear node, forward and backward, for the
    /// small-batch kernel's row counts and gemm's (more than `SMALL_M` rows), in both dtypes.
    #[test]
    fn equals_the_swiglu_then_the_projection_bit_for_bit() {
        for dtype in [DType::F32, DType::F64] {
            for rows in [7, matmul::SMALL_M + 9] {
                let ours = run(dtype, rows, |g, u, w| swiglu_down(g, u, w).unwrap());
                let theirs =
                    run(dtype, rows, |g, u, w| matmul::linear(&ops::swiglu(g, u).unwrap(), w, None).unwrap());
                for (name, a, b) in
                    ["y", "dgate", "dup", "dw"].iter().zip(&ours).zip(&theirs).map(|((n, a), b)| (n, a, b))
                {
                    assert_eq!(bits(a), bits(b), "{name} {dtype:?} {rows} rows");
                }
            }
        }
    }

    #[test]
    fn mismatched_shapes_and_dtypes_are_errors() {
        let g = tensor(&[2, 6], 5, 1.0, DType::F32);
        let w = tensor(&[3, 6], 6, 1.0, DType::F32);
        assert_eq!(swiglu_down(&g, &g, &w).unwrap().dims(), [2, 3]);
        assert!(swiglu_down(&g, &tensor(&[2, 5], 5, 1.0, DType::F32), &w).is_err());
        assert!(swiglu_down(&g, &g, &tensor(&[3, 5], 6, 1.0, DType::F32)).is_err());
        let h = |t: &Tensor| t.to_dtype(DType::BF16).unwrap();
        assert!(swiglu_down(&h(&g), &h(&g), &h(&w)).is_err());
    }
}
