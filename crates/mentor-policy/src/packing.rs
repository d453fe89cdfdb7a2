//! Packed columns ([`Packing`]): a right-padded batch's real columns, and the moves between
//! them and attention's padded per-head layout.
//!
//! The norms, the linear layers and the MLP of a packed pass run on the `N` real columns
//! only; attention runs on the padded `[B, heads, T, hd]` layout. Each move between the two
//! is one node ([`Packing::pad_heads`], [`Packing::pack_heads`]) that copies every value once:
//! as candle ops they were a concatenation with a zero row, a row gather and a transposed
//! copy, each a tensor a training pass holds until its backward. The two moves are each
//! other's backward (a value's gradient goes back to where the value came from, padding's
//! nowhere), so the gradients are the candle ops' too.

use std::sync::Arc;

use candle_core::backend::BackendStorage;
use candle_core::{
    bail, CpuStorage, CustomOp1, CustomOp3, DType, Device, Layout, Shape, Tensor, WithDType, D,
};

use crate::error::{Error, Result};
use rayon::prelude::*;

use mentor_kernels::ops::{self, contiguous, Real};

/// The real columns of a right-padded `[B, T]` batch, packed into `N` columns: the norms, the
/// linear layers and the MLP run on those only, attention on the padded layout (its padded
/// queries see zero vectors and are never read; its padded keys are masked).
pub(crate) struct Packing {
    /// Rows `B` of the padded batch.
    pub b: usize,
    /// Columns `T` of the padded batch.
    pub t: usize,
    /// Real (packed) columns `N`.
    pub n: usize,
    /// `[N]`: the padded flat index `row * T + column` of each packed column.
    gather: Tensor,
    /// `[B * T]`: the packed index of each padded position, `N` (a zero row) for padding.
    scatter: Tensor,
    /// `scatter`'s values, for the moves' kernels.
    slots: Arc<[u32]>,
    /// `gather`'s values, for the moves' kernels.
    cols: Arc<[u32]>,
}

impl Packing {
    /// `real[row]` real columns (a prefix of each row) of a `[B, T]` batch.
    pub fn new(real: &[usize], t: usize, device: &Device) -> Result<Self> {
        let b = real.len();
        if real.iter().any(|&r| r > t) {
            return Err(Error::InvalidRequest(format!("packing: a row longer than {t} columns")));
        }
        let n: usize = real.iter().sum();
        let mut gather = Vec::with_capacity(n);
        let mut scatter = Vec::with_capacity(b * t);
        for (row, &r) in real.iter().enumerate() {
            for col in 0..t {
                if col < r {
                    scatter.push(gather.len() as u32);
                    gather.push((row * t + col) as u32);
                } else {
                    scatter.push(n as u32);
                }
            }
        }
        let (slots, cols): (Arc<[u32]>, Arc<[u32]>) = (scatter.clone().into(), gather.clone().into());
        Ok(Self {
            b,
            t,
            n,
            gather: Tensor::from_vec(gather, n, device)?,
            scatter: Tensor::from_vec(scatter, b * t, device)?,
            slots,
            cols,
        })
    }

    /// `[1, N, heads * hd]` -> `[B, heads, T, hd]` (contiguous), zeros at padding: one copy on
    /// CPU `f32`/`f64`, candle ops otherwise. Differentiable.
    pub fn pad_heads(&self, y: &Tensor, heads: usize, hd: usize) -> Result<Tensor> {
        self.check_packed(y, heads * hd)?;
        if !ops::supported(y) {
            return Ok(self.pad(y)?.reshape((self.b, self.t, heads, hd))?.transpose(1, 2)?);
        }
        Ok(y.contiguous()?.apply_op1(self.mover(Move::ToHeads, heads, hd))?)
    }

    /// [`Packing::pad_heads`] then the rotary embedding ([`ops::rope`], `cos`/`sin`
    /// `[B, T, hd / 2]`) as one node: the graph holds the rotated heads only, not the padded
    /// copy the rotation read. CPU `f32`/`f64`; the two steps otherwise. Differentiable in `y`.
    pub fn pad_heads_rope(
        &self,
        y: &Tensor,
        heads: usize,
        hd: usize,
        cos: &Tensor,
        sin: &Tensor,
    ) -> Result<Tensor> {
        if !ops::supported(y)
            || !hd.is_multiple_of(2)
            || cos.dims() != [self.b, self.t, hd / 2]
            || sin.dims() != cos.dims()
        {
            return Ok(ops::rope(&self.pad_heads(y, heads, hd)?, cos, sin)?);
        }
        self.check_packed(y, heads * hd)?;
        let op = PadRope(self.mover(Move::ToHeads, heads, hd));
        Ok(y.contiguous()?.apply_op3(&cos.contiguous()?, &sin.contiguous()?, op)?)
    }

    /// `[B, heads, T, hd]` -> `[1, N, heads * hd]`, the real columns: one copy on CPU
    /// `f32`/`f64`, candle ops otherwise. Differentiable.
    pub fn pack_heads(&self, y: &Tensor) -> Result<Tensor> {
        let (b, heads, t, hd) = y.dims4()?;
        if (b, t) != (self.b, self.t) {
            return Err(Error::InvalidRequest(format!("packing: {:?} is not [{b}, .., {t}, ..]", y.dims())));
        }
        if !ops::supported(y) {
            return self.pack(&y.transpose(1, 2)?.reshape((b, t, heads * hd))?);
        }
        Ok(y.contiguous()?.apply_op1(self.mover(Move::FromHeads, heads, hd))?)
    }

    /// An error unless `y` is `[1, N, width]`.
    fn check_packed(&self, y: &Tensor, width: usize) -> Result<()> {
        if y.dims() != [1, self.n, width] {
            return Err(Error::InvalidRequest(format!(
                "packing: {:?} is not [1, {}, {width}]",
                y.dims(),
                self.n
            )));
        }
        Ok(())
    }

    fn mover(&self, dir: Move, heads: usize, hd: usize) -> Mover {
        Mover {
            dir,
            slots: self.slots.clone(),
            cols: self.cols.clone(),
            b: self.b,
            t: self.t,
            n: self.n,
            heads,
            hd,
        }
    }

    /// `[1, N, d]` -> `[B, T, d]`, zeros at padding (candle ops).
    fn pad(&self, y: &Tensor) -> Result<Tensor> {
        let d = y.dim(D::Minus1)?;
        let zero = Tensor::zeros((1, d), y.dtype(), y.device())?;
        let y = Tensor::cat(&[&y.reshape((self.n, d))?, &zero], 0)?;
        Ok(y.index_select(&self.scatter, 0)?.reshape((self.b, self.t, d))?)
    }

    /// `[B, T, d]` -> `[1, N, d]`, the real columns (candle ops).
    fn pack(&self, y: &Tensor) -> Result<Tensor> {
        let d = y.dim(D::Minus1)?;
        Ok(y.reshape((self.b * self.t, d))?.index_select(&self.gather, 0)?.reshape((1, self.n, d))?)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Move {
    /// Packed `[1, N, heads * hd]` to padded `[B, heads, T, hd]`.
    ToHeads,
    /// The reverse.
    FromHeads,
}

/// One move of a [`Packing`]; the other direction is its backward.
struct Mover {
    dir: Move,
    /// Per padded position `b * T + t`: its packed column, `n` at padding.
    slots: Arc<[u32]>,
    /// Per packed column: its padded position.
    cols: Arc<[u32]>,
    b: usize,
    t: usize,
    n: usize,
    heads: usize,
    hd: usize,
}

impl Mover {
    fn run<T: WithDType>(&self, src: &[T]) -> candle_core::Result<(CpuStorage, Shape)> {
        let (b, t, n, heads, hd) = (self.b, self.t, self.n, self.heads, self.hd);
        let width = heads * hd;
        let (want, len, shape) = match self.dir {
            Move::ToHeads => (n * width, b * heads * t * hd, Shape::from((b, heads, t, hd))),
            Move::FromHeads => (b * heads * t * hd, n * width, Shape::from((1, n, width))),
        };
        if src.len() != want || self.slots.len() != b * t || self.cols.len() != n {
            bail!("packing: {} values for a move of {want}", src.len());
        }
        let mut dst = vec![T::zero(); len];
        match self.dir {
            // One padded row's `[heads, T, hd]` block per task.
            Move::ToHeads => dst.par_chunks_mut((heads * t * hd).max(1)).enumerate().for_each(|(bi, d)| {
                for ti in 0..t {
                    let col = self.slots[bi * t + ti] as usize;
                    if col >= n {
                        continue;
                    }
                    for h in 0..heads {
                        let (at, from) = ((h * t + ti) * hd, col * width + h * hd);
                        d[at..at + hd].copy_from_slice(&src[from..from + hd]);
                    }
                }
            }),
            // One packed column per task.
            Move::FromHeads => {
                dst.par_chunks_mut(width.max(1)).with_min_len(16).enumerate().for_each(|(col, d)| {
                    let p = self.cols[col] as usize;
                    let (bi, ti) = (p / t.max(1), p % t.max(1));
                    for h in 0..heads {
                        let from = ((bi * heads + h) * t + ti) * hd;
                        d[h * hd..(h + 1) * hd].copy_from_slice(&src[from..from + hd]);
                    }
                })
            }
        }
        Ok((T::to_cpu_storage_owned(dst), shape))
    }
}

impl CustomOp1 for Mover {
    fn name(&self) -> &'static str {
        match self.dir {
            Move::ToHeads => "packed-to-heads",
            Move::FromHeads => "heads-to-packed",
        }
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        match s.dtype() {
            DType::F32 => self.run(contiguous::<f32>(s, l, self.name())?),
            DType::F64 => self.run(contiguous::<f64>(s, l, self.name())?),
            d => bail!("{}: {d:?}", self.name()),
        }
    }

    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let back = Mover {
            dir: match self.dir {
                Move::ToHeads => Move::FromHeads,
                Move::FromHeads => Move::ToHeads,
            },
            slots: self.slots.clone(),
            cols: self.cols.clone(),
            ..*self
        };
        Ok(Some(grad.contiguous()?.apply_op1_no_bwd(&back)?))
    }
}

/// [`Packing::pad_heads_rope`]'s node: a [`Move::ToHeads`] mover whose copy rotates.
struct PadRope(Mover);

/// Rotates each padded row `(b, head, t)` of the packed `src` by its position's angles (a
/// padding row as zeros), with [`ops::rope`]'s arithmetic.
fn pad_rope<T: Real>(m: &Mover, src: &[T], cos: &[T], sin: &[T]) -> candle_core::Result<(CpuStorage, Shape)> {
    let (b, t, n, heads, hd) = (m.b, m.t, m.n, m.heads, m.hd);
    let (width, half) = (heads * hd, hd / 2);
    if src.len() != n * width || m.slots.len() != b * t || cos.len() != b * t * half || sin.len() != cos.len()
    {
        bail!("pad-rope: {} values, {} angles for [{b}, {heads}, {t}, {hd}]", src.len(), cos.len());
    }
    let mut dst = vec![T::ZERO; b * heads * t * hd];
    let zeros = vec![T::ZERO; hd];
    dst.par_chunks_mut(hd.max(1)).with_min_len(16).enumerate().for_each(|(row, d)| {
        let (bi, hi, ti) = (row / (heads * t), (row / t) % heads, row % t);
        let col = m.slots[bi * t + ti] as usize;
        let x = if col < n { &src[col * width + hi * hd..col * width + (hi + 1) * hd] } else { &zeros[..] };
        let cs = (bi * t + ti) * half;
        let (cos, sin) = (&cos[cs..cs + half], &sin[cs..cs + half]);
        let (d1, d2) = d.split_at_mut(half);
        for j in 0..half {
            let (x1, x2) = (x[j], x[j + half]);
            d1[j] = x1 * cos[j] - x2 * sin[j];
            d2[j] = x2 * cos[j] + x1 * sin[j];
        }
    });
    Ok((T::to_cpu_storage_owned(dst), Shape::from((b, heads, t, hd))))
}

impl CustomOp3 for PadRope {
    fn name(&self) -> &'static str {
        "packed-to-heads-rope"
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
        let name = self.name();
        match s1.dtype() {
            DType::F32 => pad_rope(
                &self.0,
                contiguous::<f32>(s1, l1, name)?,
                contiguous::<f32>(s2, l2, name)?,
                contiguous::<f32>(s3, l3, name)?,
            ),
            DType::F64 => pad_rope(
                &self.0,
                contiguous::<f64>(s1, l1, name)?,
                contiguous::<f64>(s2, l2, name)?,
                contiguous::<f64>(s3, l3, name)?,
            ),
            d => bail!("{name}: {d:?}"),
        }
    }

    fn bwd(
        &self,
        _y: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        // The rotation's backward, then the move's: as the two nodes compute them.
        let rotated = ops::rope_grad(grad, cos, sin)?;
        let back =
            Mover { dir: Move::FromHeads, slots: self.0.slots.clone(), cols: self.0.cols.clone(), ..self.0 };
        Ok((Some(rotated.apply_op1_no_bwd(&back)?), None, None))
    }
}

#[cfg(test)]
mod tests {
    use candle_core::Var;

    use super::*;
    use mentor_kernels::test_util::bits;

    /// The moves give the candle ops' values and gradients, bit for bit, and are each other's
    /// inverse on the real columns.
    #[test]
    fn the_moves_equal_the_candle_ops_and_undo_each_other() {
        let dev = Device::Cpu;
        let (heads, hd, t) = (3, 4, 5);
        let pk = Packing::new(&[5, 2, 0, 3], t, &dev).unwrap();
        for dtype in [DType::F32, DType::F64] {
            let vals: Vec<f64> = (0..10 * heads * hd).map(|i| (i as f64 * 0.37).sin()).collect();
            let y = Var::from_tensor(
                &Tensor::from_vec(vals, (1, 10, heads * hd), &dev).unwrap().to_dtype(dtype).unwrap(),
            )
            .unwrap();
            let ours = pk.pad_heads(y.as_tensor(), heads, hd).unwrap();
            let theirs =
                pk.pad(y.as_tensor()).unwrap().reshape((4, t, heads, hd)).unwrap().transpose(1, 2).unwrap();
            assert_eq!(ours.dims(), [4, heads, t, hd]);
            assert_eq!(bits(&ours), bits(&theirs));
            // Back to packed: the same columns.
            assert_eq!(bits(&pk.pack_heads(&ours).unwrap()), bits(y.as_tensor()));
            let theirs_back =
                pk.pack(&theirs.transpose(1, 2).unwrap().reshape((4, t, heads * hd)).unwrap()).unwrap();
            assert_eq!(bits(&pk.pack_heads(&ours).unwrap()), bits(&theirs_back));
            // Gradients through a weighted sum of the padded layout, padding included.
            let r: Vec<f64> = (0..4 * heads * t * hd).map(|i| (i as f64 * 0.11).cos()).collect();
            let r = Tensor::from_vec(r, (4, heads, t, hd), &dev).unwrap().to_dtype(dtype).unwrap();
            let g1 = (&ours * &r).unwrap().sum_all().unwrap().backward().unwrap();
            let g2 = (&theirs * &r).unwrap().sum_all().unwrap().backward().unwrap();
            assert_eq!(bits(g1.get(y.as_tensor()).unwrap()), bits(g2.get(y.as_tensor()).unwrap()));
            // And from the padded layout: padding's gradient is zero.
            let x = Var::from_tensor(&r).unwrap();
            let w: Vec<f64> = (0..10 * heads * hd).map(|i| i as f64 - 3.5).collect();
            let w = Tensor::from_vec(w, (1, 10, heads * hd), &dev).unwrap().to_dtype(dtype).unwrap();
            let a =
                (pk.pack_heads(x.as_tensor()).unwrap() * &w).unwrap().sum_all().unwrap().backward().unwrap();
            let packed_view = x.as_tensor().transpose(1, 2).unwrap().reshape((4, t, heads * hd)).unwrap();
            let b = (pk.pack(&packed_view).unwrap() * &w).unwrap().sum_all().unwrap().backward().unwrap();
            assert_eq!(bits(a.get(x.as_tensor()).unwrap()), bits(b.get(x.as_tensor()).unwrap()));
        }
        // The rotating move: the two nodes' values and gradients, bit for bit.
        for dtype in [DType::F32, DType::F64] {
            let vals: Vec<f64> = (0..10 * heads * hd).map(|i| (i as f64 * 0.29).cos() * 2.0).collect();
            let y = Var::from_tensor(
                &Tensor::from_vec(vals, (1, 10, heads * hd), &dev).unwrap().to_dtype(dtype).unwrap(),
            )
            .unwrap();
            let ang: Vec<f64> = (0..4 * t * hd / 2).map(|i| i as f64 * 0.7 - 3.0).collect();
            let ang = Tensor::from_vec(ang, (4, t, hd / 2), &dev).unwrap().to_dtype(dtype).unwrap();
            let (cos, sin) = (ang.cos().unwrap(), ang.sin().unwrap());
            let ours = pk.pad_heads_rope(y.as_tensor(), heads, hd, &cos, &sin).unwrap();
            let theirs = ops::rope(&pk.pad_heads(y.as_tensor(), heads, hd).unwrap(), &cos, &sin).unwrap();
            assert_eq!(bits(&ours), bits(&theirs));
            let r: Vec<f64> = (0..4 * heads * t * hd).map(|i| (i as f64 * 0.13).sin()).collect();
            let r = Tensor::from_vec(r, (4, heads, t, hd), &dev).unwrap().to_dtype(dtype).unwrap();
            let g1 = (&ours * &r).unwrap().sum_all().unwrap().backward().unwrap();
            let g2 = (&theirs * &r).unwrap().sum_all().unwrap().backward().unwrap();
            assert_eq!(bits(g1.get(y.as_tensor()).unwrap()), bits(g2.get(y.as_tensor()).unwrap()));
        }
        let y = Tensor::zeros((1, 9, heads * hd), DType::F32, &dev).unwrap();
        assert!(pk.pad_heads(&y, heads, hd).is_err());
        assert!(pk.pack_heads(&Tensor::zeros((4, heads, t + 1, hd), DType::F32, &dev).unwrap()).is_err());
    }
}
