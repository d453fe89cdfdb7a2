//! Supervised fine-tuning (SFT): the token-level negative log-likelihood of target tokens, and
//! one step's gradients computed data-parallel.
//!
//! Like the GRPO update, the policy stays outside: the caller passes a function that returns the
//! summed NLL of one piece of the batch (for example `-(logps * target_mask).sum()`, see
//! [`nll_sum`]). [`sharded_gradients`] runs the pieces on scoped threads (small models gain
//! little from splitting each tensor op over threads; splitting the batch does), divides by the
//! batch's target-token count and sums the pieces' gradients in a fixed order, so the result does
//! not depend on timing. An [`crate::Optimizer`] built from an [`crate::OptimizerConfig`] then
//! applies it.

use candle_core::backprop::GradStore;
use candle_core::{Tensor, Var};

use crate::error::{Error, Result};
use crate::optim::GradAccumulator;

/// Summed negative log-likelihood `-(logps * mask).sum()` of the target tokens: `logps` are
/// per-token log-probs `[rows, seq]`, `mask` is 1 on target tokens and 0 elsewhere (prompt
/// positions, padding), in the same shape.
pub fn nll_sum(logps: &Tensor, mask: &Tensor) -> Result<Tensor> {
    if logps.dims() != mask.dims() {
        return Err(Error::shape("mask", logps.dims(), mask.dims()));
    }
    Ok((logps * mask.to_dtype(logps.dtype())?)?.sum_all()?.neg()?)
}

/// `items` in `shards` contiguous pieces of `ceil(len / shards)` items (fewer pieces when there
/// are fewer items; `shards = 0` counts as 1).
pub fn shard<T>(items: Vec<T>, shards: usize) -> Vec<Vec<T>> {
    let size = items.len().div_ceil(shards.max(1)).max(1);
    let mut pieces = Vec::new();
    let mut it = items.into_iter().peekable();
    while it.peek().is_some() {
        pieces.push(it.by_ref().take(size).collect());
    }
    pieces
}

/// The mean NLL of a batch over its `tokens` target tokens and its gradients with respect to
/// `vars`: `nll_for(piece)` returns the summed NLL of one piece (differentiable), each piece
/// on its own thread; each piece's loss is divided by `tokens` (clamped to at least 1) before its
/// backward pass, and the gradients are summed in piece order. Returns `(loss, gradients)`.
pub fn sharded_gradients<T, F, E>(
    pieces: Vec<T>,
    tokens: f64,
    vars: &[Var],
    nll_for: F,
) -> Result<(f64, GradStore)>
where
    T: Send,
    F: Fn(T) -> std::result::Result<Tensor, E> + Sync,
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    if !tokens.is_finite() || tokens < 0.0 {
        return Err(Error::shape("tokens", "finite >= 0", tokens));
    }
    let tokens = tokens.max(1.0);
    let nll_for = &nll_for;
    let results: Vec<Result<(f64, GradStore)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = pieces
            .into_iter()
            .map(|piece| {
                scope.spawn(move || -> Result<(f64, GradStore)> {
                    let sum = nll_for(piece).map_err(|e| Error::LogProbs(e.into()))?;
                    let part = (sum / tokens)?;
                    let grads = part.backward()?;
                    Ok((part.to_dtype(candle_core::DType::F64)?.to_scalar::<f64>()?, grads))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Err(Error::LogProbs("an SFT worker thread panicked".into())))
            })
            .collect()
    });
    let mut acc = GradAccumulator::new(vars.to_vec());
    let mut loss = 0.0;
    for r in results {
        let (l, g) = r?;
        loss += l;
        acc.add(&g)?;
    }
    Ok((loss, acc.take()))
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::*;

    #[test]
    fn shards_are_contiguous_and_cover_every_item() {
        assert_eq!(shard((0..5).collect(), 2), vec![vec![0, 1, 2], vec![3, 4]]);
        assert_eq!(shard((0..2).collect(), 4), vec![vec![0], vec![1]]);
        assert_eq!(shard((0..3).collect(), 0), vec![vec![0, 1, 2]]);
        assert!(shard(Vec::<u8>::new(), 3).is_empty());
    }

    /// Data-parallel gradients equal one piece's: the loss of `w * x` summed over pieces.
    #[test]
    fn sharded_gradients_equal_the_whole_batch() {
        let w = Var::from_slice(&[0.5f64, -1.0], 2, &Device::Cpu).unwrap();
        let xs: Vec<[f64; 2]> = vec![[1.0, 2.0], [3.0, -1.0], [0.5, 0.5], [-2.0, 1.0], [1.0, 1.0]];
        let nll = |piece: Vec<[f64; 2]>| -> candle_core::Result<Tensor> {
            let flat: Vec<f64> = piece.iter().flatten().copied().collect();
            let x = Tensor::from_vec(flat, (piece.len(), 2), &Device::Cpu)?;
            x.broadcast_mul(w.as_tensor())?.sum_all()
        };
        let (one_loss, one) =
            sharded_gradients(shard(xs.clone(), 1), 7.0, std::slice::from_ref(&w), nll).unwrap();
        let (loss, many) = sharded_gradients(shard(xs, 3), 7.0, std::slice::from_ref(&w), nll).unwrap();
        assert!((one_loss - loss).abs() < 1e-12);
        // d/dw of sum(w * x) / 7 = (sum of x) / 7.
        let g = many.get(w.as_tensor()).unwrap().to_vec1::<f64>().unwrap();
        let g1 = one.get(w.as_tensor()).unwrap().to_vec1::<f64>().unwrap();
        for (k, want) in [3.5 / 7.0, 3.5 / 7.0].into_iter().enumerate() {
            assert!((g[k] - want).abs() < 1e-12 && (g1[k] - want).abs() < 1e-12, "{g:?} {g1:?}");
        }
        let mask = Tensor::from_vec(vec![0.0f64, 1.0, 1.0, 0.0], (2, 2), &Device::Cpu).unwrap();
        let lp = Tensor::from_vec(vec![-9.0f64, -1.0, -2.0, -9.0], (2, 2), &Device::Cpu).unwrap();
        assert_eq!(nll_sum(&lp, &mask).unwrap().to_scalar::<f64>().unwrap(), 3.0);
        assert!(nll_sum(&lp, &mask.narrow(1, 0, 1).unwrap()).is_err());
    }
}
