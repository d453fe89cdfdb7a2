//! The LM head and the targets' log-probs as one node of the graph ([`head_logprobs`]).
//!
//! Written as candle ops, the head of a training pass is `logits = x · Wᵀ` (a `[rows, vocab]`
//! tensor, the largest of the pass), then the targets' log-softmax. Its backward allocates the
//! logits' gradient, then a zeroed buffer of the same size that candle adds it into, then the
//! vocabulary weight's gradient `gᵀ · x` and again a zeroed buffer and a sum for it: at
//! SmolLM2-135M's 49,152 columns and 460 rows, about 400 MB at once, at the top of the update's
//! memory. This node keeps the logits it computed (outside the graph) and, in its backward,
//! turns them into their own gradient in place, then takes `dx = g · W` and `dW = gᵀ · x`
//! from them. With a [`HeadGrads`] slot (a staged pass, [`crate::Stages`]) `dW` is not handed
//! to candle's store at all: the slot keeps it, and the stages give it to their caller, who
//! adds it into its running sum where that lies.
//!
//! Each value is the one the candle-op chain computes, operation by operation: the same
//! product kernel ([`matmul::linear`]), the same `logits / temperature`, the same per-row
//! log-softmax and its gradient, the zero candle's store adds a gradient to, and the same
//! products for `dx` and `dW` ([`matmul::linear_input_grad`], [`matmul::linear_weight_grad`]).

use std::sync::{Arc, Mutex};

use candle_core::backend::BackendStorage;
use candle_core::{bail, CpuStorage, CustomOp3, DType, Layout, Shape, Storage, Tensor};
use rayon::prelude::*;

use mentor_kernels::matmul;
use mentor_kernels::ops::{self, contiguous, max_sum_exp, token_logprobs_fwd, Real};

/// Where a staged pass's head leaves the gradient of its vocabulary weight, not yet
/// computed, for [`crate::Stages::backward`].
pub(crate) type HeadGrads = Arc<Mutex<Vec<PendingGrad>>>;

/// A vocabulary weight's gradient `dW = gᵀ · x` to be computed: the logits' gradient `g`
/// `[rows, V]` (the logits' own buffer) and the head's input `x` `[rows, H]`, both outside
/// the graph. Computed late, once the layers' activations above the first are freed, it does
/// not add its `V × H` to the activations' peak.
#[derive(Debug)]
pub(crate) struct PendingGrad {
    w: Tensor,
    x: Tensor,
    g: Tensor,
}

impl PendingGrad {
    /// The weight the gradient is for.
    pub(crate) fn weight(&self) -> &Tensor {
        &self.w
    }

    /// `dW`, as the candle-op chain's backward computes it ([`matmul::linear_weight_grad`]).
    pub(crate) fn compute(self) -> candle_core::Result<Tensor> {
        matmul::linear_weight_grad(&self.x, &self.w, &self.g)
    }
}

/// What [`head_logprobs`] returns: the targets' log-probs (in the graph) and, when asked, the
/// entropy of each row's distribution (a metric, outside the graph).
pub(crate) struct HeadOut {
    pub logprobs: Tensor,
    pub entropy: Option<Tensor>,
}

/// `log_softmax(x · wᵀ / temperature)[target]` per row of `x` `[.., H]` (after the final norm),
/// `w` `[V, H]`, `targets` `[..]` `u32`; the result is shaped as `targets`. Differentiable in
/// `x` and `w`: with `slot`, `w`'s gradient goes there instead of into candle's store (see the
/// module docs). `entropy`: also the entropy of each row's tempered distribution, as
/// [`ops::token_entropy`] computes it. CPU `f32`/`f64` ([`ops::supported`]).
pub(crate) fn head_logprobs(
    x: &Tensor,
    w: &Tensor,
    targets: &Tensor,
    temperature: f64,
    entropy: bool,
    slot: Option<HeadGrads>,
) -> candle_core::Result<HeadOut> {
    let (v, h) = w.dims2()?;
    let m = x.elem_count() / h.max(1);
    let tdims = targets.dims().to_vec();
    if x.dims().last() != Some(&h) || tdims.iter().product::<usize>() != m || targets.dtype() != DType::U32 {
        bail!("head_logprobs: x {:?}, w [{v}, {h}] and targets {tdims:?} do not match", x.dims());
    }
    if !ops::supported(x) || x.dtype() != w.dtype() {
        bail!("head_logprobs: CPU f32 or f64 only, one dtype");
    }
    let x = x.reshape((m, h))?;
    // The logits, outside the graph: this node is their only holder once the caller is done.
    let logits = matmul::linear(&x.detach(), &w.detach(), None)?;
    let logits = if temperature == 1.0 { logits } else { (logits / temperature)? };
    let entropy = if entropy { Some(ops::token_entropy(&logits)?.reshape(tdims.as_slice())?) } else { None };
    let op = HeadLogProbs {
        logits: Mutex::new(Some(logits)),
        mul: (temperature != 1.0).then(|| 1.0 / temperature),
        slot,
    };
    let targets = targets.flatten_all()?.contiguous()?;
    let lp = x.contiguous()?.apply_op3(&w.contiguous()?, &targets, op)?;
    Ok(HeadOut { logprobs: lp.reshape(tdims.as_slice())?, entropy })
}

/// The node: its logits (until its backward takes them), the temperature's `1 / T` when it is
/// not 1, and the slot for `dW`.
struct HeadLogProbs {
    logits: Mutex<Option<Tensor>>,
    mul: Option<f64>,
    slot: Option<HeadGrads>,
}

impl HeadLogProbs {
    fn logits(&self) -> candle_core::Result<Option<Tensor>> {
        match self.logits.lock() {
            Ok(l) => Ok(l.clone()),
            Err(_) => bail!("head-logprobs: a thread panicked holding the logits"),
        }
    }
}

impl CustomOp3 for HeadLogProbs {
    fn name(&self) -> &'static str {
        "head-logprobs"
    }

    fn cpu_fwd(
        &self,
        _x: &CpuStorage,
        _lx: &Layout,
        _w: &CpuStorage,
        _lw: &Layout,
        t: &CpuStorage,
        lt: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let Some(logits) = self.logits()? else { bail!("head-logprobs: run twice") };
        let (storage, layout) = logits.storage_and_layout();
        let Storage::Cpu(s) = &*storage else { bail!("head-logprobs: logits not on the CPU") };
        match s.dtype() {
            DType::F32 => token_logprobs_fwd::<f32>(s, layout, t, lt),
            DType::F64 => token_logprobs_fwd::<f64>(s, layout, t, lt),
            d => bail!("head-logprobs: {d:?}"),
        }
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        targets: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        // Taken: the logits become their gradient, and are freed with this backward.
        let taken = match self.logits.lock() {
            Ok(mut l) => l.take(),
            Err(_) => bail!("head-logprobs: a thread panicked holding the logits"),
        };
        let Some(g) = taken else { bail!("head-logprobs: a second backward through one pass") };
        g.inplace_op3(targets, &grad.contiguous()?, &LogitsGrad { mul: self.mul })?;
        let dx = matmul::linear_input_grad(x, w, &g)?;
        match &self.slot {
            Some(slot) => {
                let pending = PendingGrad { w: w.clone(), x: x.detach(), g };
                match slot.lock() {
                    Ok(mut s) => s.push(pending),
                    Err(_) => bail!("head-logprobs: a thread panicked holding the gradient slot"),
                }
                Ok((Some(dx), None, None))
            }
            None => {
                let dw = matmul::linear_weight_grad(x, w, &g)?;
                Ok((Some(dx), Some(dw), None))
            }
        }
    }
}

/// In place over the logits `[rows, V]`: `g * ([v == target] - softmax(logits)[v])` per row,
/// as [`ops::token_logprobs`]' backward computes it, plus the zero candle's store adds it
/// to, then `· mul + 0` (the temperature's affine backward) when `mul` is given.
struct LogitsGrad {
    mul: Option<f64>,
}

fn logits_grad<T: Real>(
    x: &mut [T],
    v: usize,
    targets: &[u32],
    g: &[T],
    mul: Option<f64>,
) -> candle_core::Result<()> {
    if x.len() != targets.len() * v || g.len() != targets.len() {
        bail!(
            "head-logprobs backward: {} logits for {} targets and {} gradients",
            x.len(),
            targets.len(),
            g.len()
        );
    }
    let mul = mul.map(T::from_f64);
    x.par_chunks_mut(v.max(1)).with_min_len(16).enumerate().for_each(|(row, d)| {
        let (max, sum) = max_sum_exp(d);
        let g = g[row];
        for d in d.iter_mut() {
            *d -= max;
        }
        T::exp_slice(d);
        for d in d.iter_mut() {
            *d = -(g * (*d / sum));
        }
        if let Some(d) = d.get_mut(targets[row] as usize) {
            *d += g;
        }
        for d in d.iter_mut() {
            *d = T::ZERO + *d;
            if let Some(mul) = mul {
                *d = *d * mul + T::ZERO;
            }
        }
    });
    Ok(())
}

impl candle_core::InplaceOp3 for LogitsGrad {
    fn name(&self) -> &'static str {
        "head-logprobs-bwd"
    }

    fn cpu_fwd(
        &self,
        s: &mut CpuStorage,
        l: &Layout,
        t: &CpuStorage,
        lt: &Layout,
        g: &CpuStorage,
        lg: &Layout,
    ) -> candle_core::Result<()> {
        let v = l.dims().last().copied().unwrap_or(1);
        let targets = contiguous::<u32>(t, lt, self.name())?;
        let Some((a, b)) = l.contiguous_offsets() else {
            bail!("{}: logits must be contiguous", self.name())
        };
        match s {
            CpuStorage::F32(x) => {
                logits_grad(&mut x[a..b], v, targets, contiguous::<f32>(g, lg, self.name())?, self.mul)
            }
            CpuStorage::F64(x) => {
                logits_grad(&mut x[a..b], v, targets, contiguous::<f64>(g, lg, self.name())?, self.mul)
            }
            s => bail!("{}: {:?}", self.name(), s.dtype()),
        }
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Var, D};

    use super::*;
    use mentor_kernels::test_util::{bits, tensor};

    fn rel_diff(a: &Tensor, b: &Tensor) -> f64 {
        let (a, b) = (a.to_dtype(DType::F64).unwrap(), b.to_dtype(DType::F64).unwrap());
        let d = (&a - &b).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
        d / b.abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap().max(1e-300)
    }

    const N: usize = 6;
    const H: usize = 8;
    const V: usize = 37;

    fn targets() -> Tensor {
        Tensor::from_vec((0..2 * N).map(|i| (i * 11 % V) as u32).collect::<Vec<_>>(), (2, N), &Device::Cpu)
            .unwrap()
    }

    /// The candle-op chain this node replaces: the head, `/ T`, log-softmax, gather.
    fn chain(x: &Tensor, w: &Tensor, t: f64) -> Tensor {
        let logits = matmul::linear(x, w, None).unwrap();
        let logits = if t == 1.0 { logits } else { (logits / t).unwrap() };
        let lp = candle_nn::ops::log_softmax(&logits, D::Minus1).unwrap();
        let ix = targets().unsqueeze(D::Minus1).unwrap();
        lp.gather(&ix, D::Minus1).unwrap().squeeze(D::Minus1).unwrap()
    }

    /// `(lp, dx, dw)` of `sum(lp * r)` for `lp` computed by `f` from `x` `[2, N, H]` and
    /// `w` `[V, H]` as variables.
    fn run(
        dtype: DType,
        f: impl Fn(&Tensor, &Tensor) -> Tensor,
    ) -> (Tensor, candle_core::backprop::GradStore, Var, Var) {
        let x = Var::from_tensor(&tensor(&[2, N, H], 1, 2.0, dtype)).unwrap();
        let w = Var::from_tensor(&tensor(&[V, H], 2, 1.5, dtype)).unwrap();
        let lp = f(x.as_tensor(), w.as_tensor());
        let r = tensor(&[2, N], 3, 1.0, dtype);
        let g = (&lp * r).unwrap().sum_all().unwrap().backward().unwrap();
        (lp, g, x, w)
    }

    #[test]
    fn equals_the_candle_op_chain_forward_and_backward() {
        for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
            for t in [1.0, 0.7] {
                let (ours, go, xo, wo) =
                    run(dtype, |x, w| head_logprobs(x, w, &targets(), t, false, None).unwrap().logprobs);
                let (theirs, gt, xt, wt) = run(dtype, |x, w| chain(x, w, t));
                assert_eq!(ours.dims(), [2, N]);
                let d = rel_diff(&ours, &theirs);
                assert!(d < tol, "{dtype:?} T={t}: log-probs differ by {d}");
                for (name, a, b) in [
                    ("x", go.get(xo.as_tensor()), gt.get(xt.as_tensor())),
                    ("w", go.get(wo.as_tensor()), gt.get(wt.as_tensor())),
                ] {
                    let (a, b) = (a.unwrap(), b.unwrap());
                    let d = rel_diff(a, b);
                    assert!(d < tol, "{dtype:?} T={t}: d{name} differs by {d}");
                    assert!(
                        b.abs()
                            .unwrap()
                            .sum_all()
                            .unwrap()
                            .to_dtype(DType::F64)
                            .unwrap()
                            .to_scalar::<f64>()
                            .unwrap()
                            > 0.0
                    );
                }
            }
        }
    }

    #[test]
    fn a_slot_takes_the_weights_gradient_with_the_same_bits() {
        for dtype in [DType::F32, DType::F64] {
            let (_, plain, x1, w1) =
                run(dtype, |x, w| head_logprobs(x, w, &targets(), 0.7, false, None).unwrap().logprobs);
            let slot = HeadGrads::default();
            let (_, slotted, x2, w2) = run(dtype, |x, w| {
                head_logprobs(x, w, &targets(), 0.7, false, Some(slot.clone())).unwrap().logprobs
            });
            assert!(slotted.get(w2.as_tensor()).is_none(), "dW went to the store too");
            let mut held = std::mem::take(&mut *slot.lock().unwrap());
            assert_eq!(held.len(), 1);
            let pending = held.remove(0);
            assert_eq!(pending.weight().id(), w2.as_tensor().id());
            let dw = pending.compute().unwrap();
            assert_eq!(bits(&dw), bits(plain.get(w1.as_tensor()).unwrap()), "{dtype:?} dW");
            assert_eq!(bits(slotted.get(x2.as_tensor()).unwrap()), bits(plain.get(x1.as_tensor()).unwrap()));
        }
    }

    #[test]
    fn entropy_is_the_tempered_distributions() {
        let x = tensor(&[2, N, H], 4, 2.0, DType::F64);
        let w = tensor(&[V, H], 5, 1.5, DType::F64);
        let out = head_logprobs(&x, &w, &targets(), 0.5, true, None).unwrap();
        let logp =
            candle_nn::ops::log_softmax(&(matmul::linear(&x, &w, None).unwrap() / 0.5).unwrap(), D::Minus1)
                .unwrap();
        let want = (logp.exp().unwrap() * &logp).unwrap().sum(D::Minus1).unwrap().neg().unwrap();
        let got = out.entropy.unwrap();
        assert_eq!(got.dims(), [2, N]);
        assert!(rel_diff(&got, &want) < 1e-12, "{}", rel_diff(&got, &want));
    }

    #[test]
    fn bad_input_and_a_second_backward_are_errors() {
        let x = tensor(&[2, N, H], 6, 1.0, DType::F32);
        let w = tensor(&[V, H], 7, 1.0, DType::F32);
        let out_of_range = Tensor::from_vec(vec![V as u32; 2 * N], (2, N), &Device::Cpu).unwrap();
        assert!(head_logprobs(&x, &w, &out_of_range, 1.0, false, None).is_err());
        assert!(head_logprobs(&x, &w, &targets().narrow(1, 0, 3).unwrap(), 1.0, false, None).is_err());
        assert!(head_logprobs(&x, &tensor(&[V, H + 1], 7, 1.0, DType::F32), &targets(), 1.0, false, None)
            .is_err());
        let half = (x.to_dtype(DType::BF16).unwrap(), w.to_dtype(DType::BF16).unwrap());
        assert!(head_logprobs(&half.0, &half.1, &targets(), 1.0, false, None).is_err());
        // The logits become their gradient: one backward per pass.
        let xv = Var::from_tensor(&x).unwrap();
        let lp = head_logprobs(xv.as_tensor(), &w, &targets(), 1.0, false, None).unwrap().logprobs;
        let loss = lp.sum_all().unwrap();
        assert!(loss.backward().is_ok());
        assert!(loss.backward().is_err());
    }

    /// Milliseconds of one forward + backward of `op` on `x` and `w` (as trainable variables),
    /// best of 5 rounds of `reps`.
    fn time_op(
        x: &Tensor,
        w: &Tensor,
        reps: usize,
        op: &dyn Fn(&Tensor, &Tensor) -> candle_core::Result<Tensor>,
    ) -> candle_core::Result<f64> {
        let (x, w) = (Var::from_tensor(x)?, Var::from_tensor(w)?);
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            for _ in 0..reps {
                let g = op(x.as_tensor(), w.as_tensor())?.sum_all()?.backward()?;
                std::hint::black_box(&g);
            }
            best = best.min(t.elapsed().as_secs_f64() * 1e3 / reps as f64);
        }
        Ok(best)
    }

    /// The head node against the candle-op chain it replaces, on `benches/train_step.rs`'s
    /// workload (64 rows, 90 completion tokens, hidden 64, vocabulary 32): the row of
    /// mentor-kernels' per-kernel table (`kernel_timing`) that needs the head. A report, not a
    /// check of speed: `cargo test --release -p mentor-policy --lib head_timing -- --ignored
    /// --nocapture`; it also checks that the two agree.
    #[test]
    #[ignore = "a timing report: run with --release -- --ignored --nocapture"]
    fn head_timing_against_composite_ops() {
        let (b, c, hidden, vocab) = (64, 90, 64, 32);
        let dev = Device::Cpu;
        let xh = Tensor::randn(0f32, 1., (b, c, hidden), &dev).unwrap();
        let wv = Tensor::randn(0f32, 0.1, (vocab, hidden), &dev).unwrap();
        let targets =
            Tensor::from_vec((0..b * c).map(|i| (i % vocab) as u32).collect(), (b, c), &dev).unwrap();
        let composite = |x: &Tensor, w: &Tensor| -> candle_core::Result<Tensor> {
            let logits = matmul::linear(x, w, None)?;
            let lp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
            lp.gather(&targets.unsqueeze(D::Minus1)?, D::Minus1)?.squeeze(D::Minus1)
        };
        let fused = |x: &Tensor, w: &Tensor| -> candle_core::Result<Tensor> {
            Ok(head_logprobs(x, w, &targets, 1.0, false, None)?.logprobs)
        };
        let diff = (composite(&xh, &wv).unwrap() - fused(&xh, &wv).unwrap()).unwrap();
        let diff = diff.abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
        assert!(diff < 1e-4, "fused and composite differ by {diff}");
        let a = time_op(&xh, &wv, 3, &composite).unwrap();
        let f = time_op(&xh, &wv, 3, &fused).unwrap();
        println!("kernel (forward + backward)   calls/step   composite ms/step   fused ms/step");
        println!("{:<30}{:>10}{a:>20.1}{f:>16.1}", "head + token logprobs", 1);
    }
}
