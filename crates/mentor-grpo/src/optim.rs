//! The optimizer step: gradient accumulation over micro-batches, global L2 grad-norm clipping
//! and AdamW (decoupled weight decay, the same update as PyTorch's and candle-nn's `AdamW`)
//! driven by an [`LrSchedule`]. The moments are ours rather than candle-nn's so that they can
//! be saved and restored ([`Optimizer::state`], [`Optimizer::restore`]): a resumed run continues
//! bit for bit.
//!
//! Works on any `Vec<Var>` (for example `candle_nn::VarMap::all_vars()`), on gradients from
//! `Tensor::backward` ([`GradStore`]). Variables that received no gradient are left untouched,
//! as in PyTorch.

use candle_core::backprop::GradStore;
use candle_core::{DType, Tensor, Var};
use mentor_kernels::on_pool;

use crate::config::OptimizerConfig;
use crate::error::{Error, Result};
use crate::inplace;
use crate::schedule::LrSchedule;
use crate::staged::StagedBackward;

/// PyTorch's `clip_grad_norm_` epsilon: `coef = max_norm / (total_norm + 1e-6)`.
const CLIP_EPSILON: f64 = 1e-6;

/// Global L2 norm of the gradients of `vars` (those without a gradient count as zero).
///
/// Each variable's sum of squares is taken in `f64` where its gradient lies (in parallel over
/// the variables, each sum left to right), then the sums are added in the variables' order:
/// the bits of summing `g.to_dtype(F64)?.sqr()?.sum_all()` variable by variable, without the
/// two widened copies of every gradient that took.
pub fn grad_norm(vars: &[Var], grads: &GradStore) -> Result<f64> {
    use rayon::prelude::*;
    let present: Vec<&Tensor> = vars.iter().filter_map(|v| grads.get(v.as_tensor())).collect();
    let sums =
        present.par_iter().map(|g| inplace::sum_squares(g)).collect::<candle_core::Result<Vec<_>>>()?;
    let mut sq = 0.0f64;
    for (g, sum) in present.iter().zip(sums) {
        sq += match sum {
            Some(s) => s,
            None => g.to_dtype(DType::F64)?.sqr()?.sum_all()?.to_scalar::<f64>()?,
        };
    }
    Ok(sq.sqrt())
}

/// The factor PyTorch's `clip_grad_norm_` scales the gradients by, `max_norm / (norm +
/// 1e-6)`, where it scales them: a finite `norm` above it, `max_norm > 0`.
fn clip_coefficient(norm: f64, max_norm: f64) -> Option<f64> {
    if max_norm > 0.0 && norm.is_finite() {
        let coef = max_norm / (norm + CLIP_EPSILON);
        if coef < 1.0 {
            return Some(coef);
        }
    }
    None
}

/// PyTorch `clip_grad_norm_`: when the global norm exceeds `max_norm`, scale every gradient by
/// `max_norm / (norm + 1e-6)`. Returns the norm **before** clipping (what TRL logs as
/// `grad_norm`). `max_norm <= 0` only measures. A non-finite norm is returned unchanged and
/// the gradients are left alone (the caller decides whether to skip the step).
///
/// As PyTorch's, the scaling is in place where it can be (contiguous f32 or f64 on the CPU;
/// the bits of `g * coef`): a clone of a gradient taken before sees the scaled values.
pub fn clip_grad_norm(vars: &[Var], grads: &mut GradStore, max_norm: f64) -> Result<f64> {
    let norm = grad_norm(vars, grads)?;
    if let Some(coef) = clip_coefficient(norm, max_norm) {
        for v in vars {
            scale_grad(grads, v, coef)?;
        }
    }
    Ok(norm)
}

/// `g = g * coef` for `v`'s gradient in `grads`: in place where it can be, else a new tensor
/// in its place (the same bits).
fn scale_grad(grads: &mut GradStore, v: &Var, coef: f64) -> Result<()> {
    match grads.get(v.as_tensor()) {
        Some(g) if inplace::steppable(g) => inplace::scale(g, coef)?,
        Some(_) => {
            if let Some(g) = grads.remove(v.as_tensor()) {
                grads.insert(v.as_tensor(), (g * coef)?);
            }
        }
        None => {}
    }
    Ok(())
}

/// Sums the gradients of a fixed set of variables over several backward passes, keeping only
/// those (a `GradStore` from `backward` also holds every intermediate tensor's gradient).
///
/// On the CPU the sums are added in place ([`crate::inplace`]: the same bits as `s + g`), and
/// the buffers of an earlier step handed back with [`GradAccumulator::recycle`] are written
/// over instead of allocated again.
#[derive(Debug)]
pub struct GradAccumulator {
    vars: Vec<Var>,
    /// Per variable: this step's sum (`holds`), a buffer to overwrite, or nothing.
    sums: Vec<Option<Tensor>>,
    /// Whether `sums[i]` holds this step's sum (false: nothing yet, or a recycled buffer).
    holds: Vec<bool>,
}

impl GradAccumulator {
    /// An empty accumulator for `vars`.
    pub fn new(vars: Vec<Var>) -> Self {
        let sums = vec![None; vars.len()];
        let holds = vec![false; vars.len()];
        Self { vars, sums, holds }
    }

    /// Add the variables' gradients from one backward pass.
    pub fn add(&mut self, grads: &GradStore) -> Result<()> {
        for i in 0..self.vars.len() {
            if let Some(g) = grads.get(self.vars[i].as_tensor()) {
                self.add_one(i, g)?;
            }
        }
        Ok(())
    }

    /// Adds `g` to variable `i`'s sum.
    fn add_one(&mut self, i: usize, g: &Tensor) -> Result<()> {
        let (sum, holds) = (&mut self.sums[i], &mut self.holds[i]);
        match sum {
            Some(s) if inplace::writable_from(s, g) => {
                if *holds {
                    inplace::add_into(s, g)?
                } else {
                    inplace::copy_into(s, g)?
                }
            }
            Some(s) if *holds => *sum = Some((&*s + g)?.detach()),
            // A copy, not the store's tensor: the sum is written in place later.
            _ => *sum = Some(g.detach().copy()?),
        }
        *holds = true;
        Ok(())
    }

    /// Add a zero gradient for every variable (a backward pass through a loss that is
    /// identically zero), so the optimizer steps every variable.
    pub fn add_zeros(&mut self) -> Result<()> {
        let slots = self.sums.iter_mut().zip(self.holds.iter_mut());
        for (v, (sum, holds)) in self.vars.iter().zip(slots) {
            if *holds {
                continue;
            }
            match sum {
                Some(s) if inplace::writable_from(s, v.as_tensor()) => s.zero_set()?,
                _ => *sum = Some(v.as_tensor().zeros_like()?),
            }
            *holds = true;
        }
        Ok(())
    }

    /// Allocates a buffer for every variable that has none (zeros of its shape), for the sums
    /// to be written into. The buffers live as long as the accumulator (handed back with
    /// [`GradAccumulator::recycle`] after each step): allocated here, before a step's
    /// activations, rather than by its first backward among them, they do not split the
    /// memory the activations of every later step reuse.
    pub fn reserve(&mut self) -> Result<()> {
        for (v, sum) in self.vars.iter().zip(self.sums.iter_mut()) {
            if sum.is_none() {
                *sum = Some(v.as_tensor().zeros_like()?);
            }
        }
        Ok(())
    }

    /// Hands back the gradients [`GradAccumulator::take`] gave, once the optimizer is done
    /// with them: their tensors become the buffers the next step's sums are written into.
    /// Nothing else may hold those tensors (clones of them would see the next step's sums).
    pub fn recycle(&mut self, mut grads: GradStore) {
        let slots = self.sums.iter_mut().zip(&self.holds);
        for (v, (sum, &holds)) in self.vars.iter().zip(slots) {
            if let Some(g) = grads.remove(v.as_tensor()) {
                if !holds {
                    *sum = Some(g);
                }
            }
        }
    }

    /// Backward `loss` and add the variables' gradients.
    pub fn backward(&mut self, loss: &Tensor) -> Result<()> {
        self.backward_staged(loss.clone(), None)
    }

    /// Backward `loss`, add the variables' gradients, then run `rest` (a policy pass cut
    /// into stages) and add each stage's as it comes. `loss` is dropped before `rest` runs:
    /// with nothing else holding the graph, each stage's activations are freed once its
    /// gradients are added, and the running sums and one stage's gradients are all the
    /// gradients held at once.
    pub fn backward_staged(&mut self, loss: Tensor, rest: Option<Box<dyn StagedBackward>>) -> Result<()> {
        on_pool(|| {
            let top = loss.backward()?;
            drop(loss);
            self.add(&top)?;
            match rest {
                Some(rest) => rest.finish(top, &mut |g| self.add(g)),
                None => Ok(()),
            }
        })
    }

    /// The accumulated gradients as a [`GradStore`], resetting the accumulator.
    pub fn take(&mut self) -> GradStore {
        let mut store = GradStore::default();
        let slots = self.sums.iter_mut().zip(self.holds.iter_mut());
        for (v, (sum, holds)) in self.vars.iter().zip(slots) {
            if *holds {
                if let Some(g) = sum.take() {
                    store.insert(v.as_tensor(), g);
                }
            }
            *holds = false;
        }
        store
    }
}

/// What one optimizer step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepReport {
    /// Global gradient norm before clipping.
    pub grad_norm: f64,
    /// Learning rate used for this step.
    pub learning_rate: f64,
    /// Whether the parameters were updated (false when the gradient norm was not finite).
    pub applied: bool,
}

/// The optimizer's resumable state: the step count and AdamW's first and second moments, one
/// pair per variable in [`Optimizer::vars`] order.
#[derive(Debug, Clone)]
pub struct OptimizerState {
    /// Optimizer steps applied so far.
    pub step: usize,
    /// First moments (same shapes as the variables).
    pub first_moments: Vec<Tensor>,
    /// Second moments.
    pub second_moments: Vec<Tensor>,
}

/// AdamW hyper-parameters.
#[derive(Debug, Clone, Copy)]
struct AdamParams {
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
}

/// AdamW + LR schedule + grad-norm clipping over a set of variables.
#[derive(Debug)]
pub struct Optimizer {
    vars: Vec<Var>,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
    params: AdamParams,
    schedule: LrSchedule,
    max_grad_norm: f64,
    step: usize,
}

impl Optimizer {
    /// Optimizer for `vars` with the config's AdamW, clipping and schedule settings, over
    /// `total_steps` optimizer steps (the schedule's horizon).
    pub fn new(vars: Vec<Var>, config: &OptimizerConfig, total_steps: usize) -> Result<Self> {
        config.validate()?;
        if vars.is_empty() {
            return Err(Error::config("vars", "no trainable variables"));
        }
        let schedule = LrSchedule::from_config(config, total_steps)?;
        let params = AdamParams {
            beta1: config.adam_beta1,
            beta2: config.adam_beta2,
            eps: config.adam_epsilon,
            weight_decay: config.weight_decay,
        };
        let zeros = |v: &Var| v.as_tensor().zeros_like();
        let m = vars.iter().map(zeros).collect::<std::result::Result<Vec<_>, _>>()?;
        let v = vars.iter().map(zeros).collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Self { vars, m, v, params, schedule, max_grad_norm: config.max_grad_norm, step: 0 })
    }

    /// The variables being optimized.
    pub fn vars(&self) -> &[Var] {
        &self.vars
    }

    /// Optimizer steps applied so far.
    pub fn steps_taken(&self) -> usize {
        self.step
    }

    /// Learning rate the next step will use.
    pub fn next_learning_rate(&self) -> f64 {
        self.schedule.lr(self.step)
    }

    /// A copy of the resumable state.
    pub fn state(&self) -> Result<OptimizerState> {
        Ok(OptimizerState {
            step: self.step,
            first_moments: self.m.iter().map(Tensor::copy).collect::<std::result::Result<_, _>>()?,
            second_moments: self.v.iter().map(Tensor::copy).collect::<std::result::Result<_, _>>()?,
        })
    }

    /// Restores a state saved by [`Optimizer::state`] for the same variables. Errors when the
    /// number or the shapes of the moments do not match the variables.
    pub fn restore(&mut self, state: OptimizerState) -> Result<()> {
        let n = self.vars.len();
        if state.first_moments.len() != n || state.second_moments.len() != n {
            return Err(Error::config(
                "optimizer state",
                format!(
                    "{} / {} moments for {n} variables",
                    state.first_moments.len(),
                    state.second_moments.len()
                ),
            ));
        }
        for (i, var) in self.vars.iter().enumerate() {
            for t in [&state.first_moments[i], &state.second_moments[i]] {
                if t.dims() != var.dims() {
                    return Err(Error::config(
                        "optimizer state",
                        format!("moment {i} has shape {:?}, its variable {:?}", t.dims(), var.dims()),
                    ));
                }
            }
        }
        let dtype = self.vars[0].dtype();
        let device = self.vars[0].device().clone();
        // Copies: the moments are updated in place, and must not write into the caller's.
        let conv = |t: Tensor| t.to_dtype(dtype).and_then(|t| t.to_device(&device)).and_then(|t| t.copy());
        self.m = state.first_moments.into_iter().map(conv).collect::<std::result::Result<_, _>>()?;
        self.v = state.second_moments.into_iter().map(conv).collect::<std::result::Result<_, _>>()?;
        self.step = state.step;
        Ok(())
    }

    /// Clip `grads` (in place) and apply one AdamW step at the scheduled learning rate. When
    /// the gradient norm is NaN or infinite the parameters are left unchanged, the step is
    /// reported with `applied = false`, and the schedule does not advance.
    pub fn step(&mut self, grads: &mut GradStore) -> Result<StepReport> {
        on_pool(|| self.step_here(grads))
    }

    /// [`Optimizer::step`] on the calling thread.
    fn step_here(&mut self, grads: &mut GradStore) -> Result<StepReport> {
        let grad_norm = grad_norm(&self.vars, grads)?;
        let learning_rate = self.schedule.lr(self.step);
        if !grad_norm.is_finite() {
            return Ok(StepReport { grad_norm, learning_rate, applied: false });
        }
        self.adamw(grads, learning_rate, clip_coefficient(grad_norm, self.max_grad_norm))?;
        self.step += 1;
        Ok(StepReport { grad_norm, learning_rate, applied: true })
    }

    /// Gradient clipping by `clip` (as [`clip_grad_norm`] scales, the gradients left scaled in
    /// `grads`) and one AdamW update (PyTorch's formulation, as candle-nn's):
    /// `m = b1 m + (1-b1) g`, `v = b2 v + (1-b2) g^2`,
    /// `θ = θ (1 - lr wd) - lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)`.
    /// In one pass per variable where every tensor allows it ([`inplace::adamw`], the same
    /// bits), otherwise from candle ops.
    fn adamw(&mut self, grads: &mut GradStore, lr: f64, clip: Option<f64>) -> Result<()> {
        let AdamParams { beta1, beta2, eps, weight_decay } = self.params;
        let t = (self.step + 1) as i32;
        let scale_m = 1.0 / (1.0 - beta1.powi(t));
        let scale_v = 1.0 / (1.0 - beta2.powi(t));
        let k = inplace::AdamStep { beta1, beta2, eps, decay: 1.0 - lr * weight_decay, lr, scale_m, scale_v };
        for (i, var) in self.vars.iter().enumerate() {
            let Some(g) = grads.get(var) else { continue };
            let theta = var.as_tensor();
            let (m, v) = (&self.m[i], &self.v[i]);
            let same = |x: &Tensor| x.dtype() == theta.dtype() && x.dims() == theta.dims();
            if [theta, m, v, g].into_iter().all(|x| inplace::steppable(x) && same(x)) {
                inplace::adamw(theta, m, v, g, k, clip)?;
                continue;
            }
            if let Some(c) = clip {
                scale_grad(grads, var, c)?;
            }
            let Some(g) = grads.get(var) else { continue };
            let m = ((&self.m[i] * beta1)? + (g * (1.0 - beta1))?)?;
            let v = ((&self.v[i] * beta2)? + (g.sqr()? * (1.0 - beta2))?)?;
            let theta = (var.as_tensor() * (1.0 - lr * weight_decay))?;
            let m_hat = (&m * scale_m)?;
            let v_hat = (&v * scale_v)?;
            let next = (theta - ((m_hat / (v_hat.sqrt()? + eps)?)? * lr)?)?;
            var.set(&next)?;
            self.m[i] = m;
            self.v[i] = v;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::*;
    use crate::config::LrSchedulerType;

    fn var(v: &[f64]) -> Var {
        Var::from_slice(v, v.len(), &Device::Cpu).unwrap()
    }

    #[test]
    fn clip_scales_to_max_norm_and_reports_pre_clip_norm() {
        let a = var(&[3.0, 0.0]);
        let b = var(&[0.0, 4.0]);
        let half_sq = |v: &Var| (v.as_tensor().sqr().unwrap().sum_all().unwrap() * 0.5).unwrap();
        let loss = (half_sq(&a) + half_sq(&b)).unwrap();
        let mut grads = loss.backward().unwrap(); // grads = (3, 0), (0, 4): norm 5
        let vars = [a.clone(), b.clone()];
        let norm = clip_grad_norm(&vars, &mut grads, 1.0).unwrap();
        assert!((norm - 5.0).abs() < 1e-12);
        let after = grad_norm(&vars, &grads).unwrap();
        assert!((after - 5.0 / (5.0 + 1e-6)).abs() < 1e-12);
        // Below the threshold nothing changes.
        let norm2 = clip_grad_norm(&vars, &mut grads, 10.0).unwrap();
        assert!((norm2 - after).abs() < 1e-15);
    }

    #[test]
    fn first_adamw_step_moves_each_param_by_lr_against_the_gradient_sign() {
        // Adam's first bias-corrected step is lr * g / (|g| + eps): about lr * sign(g).
        let x = var(&[1.0, -2.0]);
        let cfg = OptimizerConfig {
            learning_rate: 0.1,
            lr_scheduler_type: LrSchedulerType::Constant,
            max_grad_norm: 0.0,
            ..Default::default()
        };
        let mut opt = Optimizer::new(vec![x.clone()], &cfg, 10).unwrap();
        let loss = x.as_tensor().sqr().unwrap().sum_all().unwrap();
        let mut grads = loss.backward().unwrap();
        let report = opt.step(&mut grads).unwrap();
        assert!(report.applied);
        assert!((report.grad_norm - (4.0f64 + 16.0).sqrt()).abs() < 1e-12);
        let v = x.as_tensor().to_vec1::<f64>().unwrap();
        assert!((v[0] - 0.9).abs() < 1e-6 && (v[1] + 1.9).abs() < 1e-6, "{v:?}");
        assert_eq!(opt.steps_taken(), 1);
    }

    #[test]
    fn weight_decay_is_decoupled() {
        // loss = x^2 at x = 2: g = 4 and Adam's first step is ~lr * sign(g) = 0.1. Decoupled
        // decay shrinks p by lr * wd * p = 0.1 first: 2 * 0.95 - 0.1 = 1.8. (L2 decay folded
        // into the gradient would leave the normalised step at 0.1 and give 1.9.)
        let x = var(&[2.0]);
        let cfg = OptimizerConfig {
            learning_rate: 0.1,
            weight_decay: 0.5,
            max_grad_norm: 0.0,
            lr_scheduler_type: LrSchedulerType::Constant,
            ..Default::default()
        };
        let mut opt = Optimizer::new(vec![x.clone()], &cfg, 1).unwrap();
        let mut grads = x.as_tensor().sqr().unwrap().sum_all().unwrap().backward().unwrap();
        opt.step(&mut grads).unwrap();
        let v = x.as_tensor().to_vec1::<f64>().unwrap()[0];
        assert!((v - 1.8).abs() < 1e-8, "{v}");
    }

    #[test]
    fn accumulator_sums_micro_batch_gradients_and_skips_non_finite_steps() {
        let x = var(&[1.0]);
        let mut acc = GradAccumulator::new(vec![x.clone()]);
        acc.backward(&(x.as_tensor() * 2.0).unwrap().sum_all().unwrap()).unwrap();
        acc.backward(&(x.as_tensor() * 3.0).unwrap().sum_all().unwrap()).unwrap();
        let mut grads = acc.take();
        assert_eq!(grads.get(x.as_tensor()).unwrap().to_vec1::<f64>().unwrap(), vec![5.0]);
        assert!(acc.take().get(x.as_tensor()).is_none());

        let cfg = OptimizerConfig { learning_rate: 0.1, ..Default::default() };
        let mut opt = Optimizer::new(vec![x.clone()], &cfg, 1).unwrap();
        grads.insert(x.as_tensor(), Tensor::new(&[f64::NAN], &Device::Cpu).unwrap());
        let r = opt.step(&mut grads).unwrap();
        assert!(!r.applied && r.grad_norm.is_nan());
        assert_eq!(x.as_tensor().to_vec1::<f64>().unwrap(), vec![1.0]);
    }

    /// Runs `n` steps of minimising sum((x - target)^2) from the optimizer's current state.
    fn run(opt: &mut Optimizer, x: &Var, n: usize) {
        for _ in 0..n {
            let target = Tensor::new(&[0.5f64, -1.5, 2.0], &Device::Cpu).unwrap();
            let loss = (x.as_tensor() - target).unwrap().sqr().unwrap().sum_all().unwrap();
            let mut grads = loss.backward().unwrap();
            assert!(opt.step(&mut grads).unwrap().applied);
        }
    }

    #[test]
    fn restored_state_continues_bit_for_bit() {
        let cfg = OptimizerConfig {
            learning_rate: 0.05,
            weight_decay: 0.01,
            lr_scheduler_type: LrSchedulerType::Cosine,
            ..OptimizerConfig::default()
        };
        let straight = var(&[1.0, 2.0, -3.0]);
        let mut a = Optimizer::new(vec![straight.clone()], &cfg, 5).unwrap();
        run(&mut a, &straight, 5);

        let resumed = var(&[1.0, 2.0, -3.0]);
        let mut b = Optimizer::new(vec![resumed.clone()], &cfg, 5).unwrap();
        run(&mut b, &resumed, 2);
        let state = b.state().unwrap();
        let weights = resumed.as_tensor().copy().unwrap();
        // A fresh optimizer over fresh variables, as after a restart.
        let again = Var::from_tensor(&weights).unwrap();
        let mut c = Optimizer::new(vec![again.clone()], &cfg, 5).unwrap();
        c.restore(state).unwrap();
        assert_eq!(c.steps_taken(), 2);
        run(&mut c, &again, 3);
        assert_eq!(
            again.as_tensor().to_vec1::<f64>().unwrap(),
            straight.as_tensor().to_vec1::<f64>().unwrap()
        );
        // Without the moments the continuation differs.
        let cold = Var::from_tensor(&weights).unwrap();
        let mut d = Optimizer::new(vec![cold.clone()], &cfg, 5).unwrap();
        run(&mut d, &cold, 3);
        assert_ne!(
            cold.as_tensor().to_vec1::<f64>().unwrap(),
            straight.as_tensor().to_vec1::<f64>().unwrap()
        );
    }

    #[test]
    fn restore_rejects_mismatched_state() {
        let x = var(&[1.0, 2.0]);
        let mut opt = Optimizer::new(vec![x], &OptimizerConfig::default(), 1).unwrap();
        let bad = OptimizerState {
            step: 1,
            first_moments: vec![Tensor::zeros(3, DType::F64, &Device::Cpu).unwrap()],
            second_moments: vec![Tensor::zeros(3, DType::F64, &Device::Cpu).unwrap()],
        };
        assert!(opt.restore(bad).is_err());
        let short = OptimizerState { step: 1, first_moments: vec![], second_moments: vec![] };
        assert!(opt.restore(short).is_err());
    }

    #[test]
    fn recycled_sums_added_in_place_equal_fresh_ones_bit_for_bit() {
        let a = var(&[1.0, -2.0, 0.5, 3.25]);
        let grad = |k: f64| {
            let loss = (a.as_tensor().sqr().unwrap() * k).unwrap().sum_all().unwrap();
            loss.backward().unwrap()
        };
        let b = var(&[7.0, 8.0]);
        let mut acc = GradAccumulator::new(vec![a.clone(), b.clone()]);
        // Reserved buffers are written over like recycled ones; a variable no pass reached
        // (`b`) gets no gradient from its buffer.
        acc.reserve().unwrap();
        for step in 0..3 {
            let ks = [0.3 + step as f64, 1.7, -0.45];
            // Out of place, as the sums were before: s + g, a new tensor each time.
            let mut want: Option<Tensor> = None;
            for &k in &ks {
                let g = grad(k).get(a.as_tensor()).unwrap().clone();
                want = Some(match want {
                    None => g,
                    Some(s) => (s + g).unwrap(),
                });
                acc.add(&grad(k)).unwrap();
            }
            let got = acc.take();
            let bits =
                |t: &Tensor| t.to_vec1::<f64>().unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(got.get(a.as_tensor()).unwrap()), bits(&want.unwrap()), "step {step}");
            assert!(got.get(b.as_tensor()).is_none(), "an unreached variable's buffer was handed out");
            acc.recycle(got);
        }
        // A recycled buffer is overwritten, never added to: zeros after a zero pass.
        acc.add_zeros().unwrap();
        let got = acc.take();
        assert_eq!(got.get(a.as_tensor()).unwrap().to_vec1::<f64>().unwrap(), vec![0.0; 4]);
        assert_eq!(got.get(b.as_tensor()).unwrap().to_vec1::<f64>().unwrap(), vec![0.0; 2]);
    }
}
