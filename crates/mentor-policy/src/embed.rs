//! The token embedding's lookup in a staged pass, its gradient left to the stages
//! ([`embed_rows`]).
//!
//! candle's backward of `W.index_select(ids)` gives `W` a zeroed `[vocab, hidden]` buffer,
//! then a new tensor for every lookup it adds in (`index_add` is not in place), and the store's
//! sum with what `W` had before: at SmolLM2-135M three or four 113 MiB tensors at the end of
//! every micro-batch's backward, the largest allocations of the step, each a chance for the
//! allocator to take fresh memory. This node keeps its rows' gradients for the stages, which
//! add them into one zeroed buffer in place, in the order candle would have, and hand that on:
//! the same values, one allocation.

use std::sync::{Arc, Mutex};

use candle_core::backend::BackendStorage;
use candle_core::backprop::GradStore;
use candle_core::{bail, CpuStorage, CustomOp2, DType, Layout, Shape, Tensor, WithDType};

use mentor_kernels::ops::contiguous;

/// What a staged pass's lookups leave for [`crate::Stages::backward`]: per lookup, the
/// embedding, the ids and the rows' gradient `[ids, hidden]`, in the order the backward
/// reached them.
pub(crate) type EmbedGrads = Arc<Mutex<Vec<(Tensor, Vec<u32>, Tensor)>>>;

/// The rows `ids` (`[n]` `u32`) of `w` (`[vocab, hidden]`, CPU `f32`/`f64`): `[n, hidden]`, as
/// `w.index_select(ids, 0)`. Differentiable in `w`, whose gradient goes to `slot`
/// ([`dense_grads`] makes it whole).
pub(crate) fn embed_rows(w: &Tensor, ids: &Tensor, slot: EmbedGrads) -> candle_core::Result<Tensor> {
    let (_, h) = w.dims2()?;
    if ids.rank() != 1 || ids.dtype() != DType::U32 || h == 0 {
        bail!("embed_rows: ids {:?} {:?} for w {:?}", ids.dims(), ids.dtype(), w.dims());
    }
    if !w.device().is_cpu() || !matches!(w.dtype(), DType::F32 | DType::F64) {
        bail!("embed_rows: CPU f32 or f64 only");
    }
    w.contiguous()?.apply_op2(&ids.contiguous()?, EmbedRows { slot })
}

struct EmbedRows {
    slot: EmbedGrads,
}

fn gather<T: WithDType>(w: &[T], ids: &[u32], h: usize) -> candle_core::Result<Vec<T>> {
    let vocab = w.len() / h;
    let mut out = Vec::with_capacity(ids.len() * h);
    for &id in ids {
        let id = id as usize;
        if id >= vocab {
            bail!("embed_rows: id {id} out of range for {vocab} rows");
        }
        out.extend_from_slice(&w[id * h..(id + 1) * h]);
    }
    Ok(out)
}

impl CustomOp2 for EmbedRows {
    fn name(&self) -> &'static str {
        "embed-rows"
    }

    fn cpu_fwd(
        &self,
        sw: &CpuStorage,
        lw: &Layout,
        si: &CpuStorage,
        li: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let h = lw.dims().last().copied().unwrap_or(0).max(1);
        let ids = contiguous::<u32>(si, li, self.name())?;
        let out = match sw.dtype() {
            DType::F32 => CpuStorage::F32(gather(contiguous::<f32>(sw, lw, self.name())?, ids, h)?),
            DType::F64 => CpuStorage::F64(gather(contiguous::<f64>(sw, lw, self.name())?, ids, h)?),
            d => bail!("{}: {d:?}", self.name()),
        };
        Ok((out, Shape::from((ids.len(), h))))
    }

    fn bwd(
        &self,
        w: &Tensor,
        ids: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let entry = (w.clone(), ids.to_vec1::<u32>()?, grad.detach().contiguous()?);
        match self.slot.lock() {
            Ok(mut s) => s.push(entry),
            Err(_) => bail!("embed-rows: a thread panicked holding the gradient slot"),
        }
        Ok((None, None))
    }
}

/// The embeddings' gradients from the lookups in `entries`: per embedding, zeros with each
/// lookup's rows added in place, in order (`dst[id] += row`, as candle's `index_add` adds
/// them into its zeroed buffer).
pub(crate) fn dense_grads(entries: Vec<(Tensor, Vec<u32>, Tensor)>) -> candle_core::Result<GradStore> {
    let mut sums: Vec<(Tensor, CpuStorage)> = Vec::new();
    for (w, ids, g) in entries {
        let (vocab, h) = w.dims2()?;
        let at = match sums.iter().position(|(t, _)| t.id() == w.id()) {
            Some(i) => i,
            None => {
                let zeros = match w.dtype() {
                    DType::F32 => CpuStorage::F32(vec![0.0; vocab * h]),
                    DType::F64 => CpuStorage::F64(vec![0.0; vocab * h]),
                    d => bail!("embed-rows backward: {d:?}"),
                };
                sums.push((w.clone(), zeros));
                sums.len() - 1
            }
        };
        let (gs, gl) = g.storage_and_layout();
        let candle_core::Storage::Cpu(gs) = &*gs else { bail!("embed-rows backward: not on the CPU") };
        match (&mut sums[at].1, gs) {
            (CpuStorage::F32(d), CpuStorage::F32(_)) => {
                add_rows(d, contiguous::<f32>(gs, gl, "embed-rows")?, &ids, h)?
            }
            (CpuStorage::F64(d), CpuStorage::F64(_)) => {
                add_rows(d, contiguous::<f64>(gs, gl, "embed-rows")?, &ids, h)?
            }
            (d, s) => bail!("embed-rows backward: {:?} rows into {:?}", s.dtype(), d.dtype()),
        }
    }
    let mut store = GradStore::default();
    for (w, sum) in sums {
        let shape = w.shape().clone();
        let t = match sum {
            CpuStorage::F32(v) => Tensor::from_vec(v, shape, w.device())?,
            CpuStorage::F64(v) => Tensor::from_vec(v, shape, w.device())?,
            s => bail!("embed-rows backward: {:?}", s.dtype()),
        };
        store.insert(&w, t);
    }
    Ok(store)
}

fn add_rows<T: WithDType>(dst: &mut [T], rows: &[T], ids: &[u32], h: usize) -> candle_core::Result<()> {
    if rows.len() != ids.len() * h {
        bail!("embed-rows backward: {} values for {} rows of {h}", rows.len(), ids.len());
    }
    for (j, &id) in ids.iter().enumerate() {
        let at = id as usize * h;
        let Some(d) = dst.get_mut(at..at + h) else { bail!("embed-rows backward: id {id} out of range") };
        for (d, &s) in d.iter_mut().zip(&rows[j * h..(j + 1) * h]) {
            *d += s;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Var};

    use super::*;
    use mentor_kernels::test_util::bits;

    /// Two lookups of one embedding (repeated ids included), as a staged pass makes them: the
    /// rows and the gradient candle's `index_select` gives, bit for bit.
    #[test]
    fn rows_and_gradient_equal_index_selects() {
        for dtype in [DType::F32, DType::F64] {
            let vals: Vec<f64> = (0..7 * 3).map(|i| (i as f64 * 0.7).sin()).collect();
            let w = Var::from_tensor(
                &Tensor::from_vec(vals, (7, 3), &Device::Cpu).unwrap().to_dtype(dtype).unwrap(),
            )
            .unwrap();
            let a = Tensor::new(&[1u32, 4, 1, 6], &Device::Cpu).unwrap();
            let b = Tensor::new(&[4u32, 0, 4], &Device::Cpu).unwrap();
            let r = |n: usize, s: f64| {
                let v: Vec<f64> = (0..n * 3).map(|i| (i as f64 * s).cos() * 1.3).collect();
                Tensor::from_vec(v, (n, 3), &Device::Cpu).unwrap().to_dtype(dtype).unwrap()
            };
            let loss = |x: &Tensor, y: &Tensor| {
                ((x * r(4, 0.3)).unwrap().sum_all().unwrap() + (y * r(3, 0.9)).unwrap().sum_all().unwrap())
                    .unwrap()
            };
            let (x, y) =
                (w.as_tensor().index_select(&a, 0).unwrap(), w.as_tensor().index_select(&b, 0).unwrap());
            let want = loss(&x, &y).backward().unwrap();
            let slot = EmbedGrads::default();
            let ours_x = embed_rows(w.as_tensor(), &a, slot.clone()).unwrap();
            let ours_y = embed_rows(w.as_tensor(), &b, slot.clone()).unwrap();
            assert_eq!(bits(&ours_x), bits(&x));
            assert_eq!(bits(&ours_y), bits(&y));
            let top = loss(&ours_x, &ours_y).backward().unwrap();
            assert!(top.get(w.as_tensor()).is_none(), "the embedding's gradient went to the store");
            let got = dense_grads(std::mem::take(&mut *slot.lock().unwrap())).unwrap();
            assert_eq!(
                bits(got.get(w.as_tensor()).unwrap()),
                bits(want.get(w.as_tensor()).unwrap()),
                "{dtype:?}"
            );
        }
        let w = Tensor::zeros((3, 2), DType::F32, &Device::Cpu).unwrap();
        let bad = Tensor::new(&[3u32], &Device::Cpu).unwrap();
        assert!(embed_rows(&w, &bad, EmbedGrads::default()).is_err());
    }
}
