//! Every weight gets a gradient, and the gradient is the derivative (finite differences, f64).

use candle_core::{DType, Device, Tensor};
use mentor_policy::RopeScaling;
use mentor_policy::{Kernels, LogProbOptions, Policy};

use crate::{tiny, tiny_with};

/// Two rows of different lengths, so padding and per-row positions are exercised.
fn batch(p: &Policy) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let t = p.tokenizer();
    let prompts = vec![t.encode("12+30=").unwrap(), t.encode("7*8=").unwrap()];
    let completions = vec![t.encode("42").unwrap(), t.encode("56\n").unwrap()];
    (prompts, completions)
}

fn loss(p: &Policy) -> Tensor {
    let (prompts, completions) = batch(p);
    let opts =
        LogProbOptions { entropy: mentor_policy::Entropy::Differentiable, ..LogProbOptions::default() };
    let out = p.logprobs(&prompts, &completions, &opts).unwrap();
    // Weights make every position matter differently; entropy joins the loss.
    let c = out.logprobs.dims()[1];
    let w: Vec<f64> = (0..2 * c).map(|i| 0.3 + 0.17 * i as f64).collect();
    let w = Tensor::from_vec(w, (2, c), &Device::Cpu).unwrap().to_dtype(out.logprobs.dtype()).unwrap();
    let lp = (out.logprobs * w).unwrap().sum_all().unwrap();
    let h = out.entropy.unwrap().sum_all().unwrap();
    (lp + (h * 0.1).unwrap()).unwrap()
}

fn assert_every_weight_gets_a_gradient(p: &Policy) {
    let vars = p.vars();
    assert_eq!(vars.len(), p.config().weight_shapes().len());
    let grads = loss(p).backward().unwrap();
    let mut missing = vec![];
    for (name, var) in &vars {
        let ok = grads
            .get(var.as_tensor())
            .map(|g| {
                g.abs().unwrap().sum_all().unwrap().to_dtype(DType::F64).unwrap().to_scalar::<f64>().unwrap()
                    > 0.0
            })
            .unwrap_or(false);
        if !ok {
            missing.push(name.clone());
        }
    }
    assert!(missing.is_empty(), "{} of {} weights got no gradient: {missing:?}", missing.len(), vars.len());
}

#[test]
fn every_weight_gets_a_gradient_tied_llama() {
    assert_every_weight_gets_a_gradient(&tiny(DType::F32, 1));
}

#[test]
fn every_weight_gets_a_gradient_untied_qwen2_with_rope_scaling() {
    let p = tiny_with(DType::F32, 2, |c| {
        c.model_type = "qwen2".into();
        c.tie_word_embeddings = false;
        c.rope_scaling = Some(RopeScaling {
            rope_type: Some("linear".into()),
            kind: None,
            factor: Some(2.0),
            low_freq_factor: None,
            high_freq_factor: None,
            original_max_position_embeddings: None,
        });
    });
    assert!(p.vars().iter().any(|(n, _)| n.ends_with("q_proj.bias")));
    assert!(p.vars().iter().any(|(n, _)| n == "lm_head.weight"));
    // Biases start at zero; give them values so their gradients are not trivially special.
    for (n, v) in p.vars() {
        if n.ends_with(".bias") {
            let t = (v.as_tensor().ones_like().unwrap() * 0.05).unwrap();
            v.set(&t).unwrap();
        }
    }
    assert_every_weight_gets_a_gradient(&p);
}

#[test]
fn frozen_copy_gets_no_gradient_and_fused_kernels_detach() {
    let p = tiny(DType::F32, 3);
    let frozen = p.frozen_copy().unwrap();
    assert!(frozen.vars().is_empty() && !frozen.is_trainable());
    let (prompts, completions) = batch(&p);
    let out = frozen.logprobs(&prompts, &completions, &LogProbOptions::default()).unwrap();
    let grads = out.logprobs.sum_all().unwrap().backward().unwrap();
    for (_, v) in p.vars() {
        assert!(grads.get(v.as_tensor()).is_none());
    }
    // The reason for the Differentiable kernels: fused ones cut the graph.
    let fused = LogProbOptions { kernels: Kernels::Fused, ..LogProbOptions::default() };
    let out = p.logprobs(&prompts, &completions, &fused).unwrap();
    let grads = out.logprobs.sum_all().unwrap().backward().unwrap();
    let with_grad = p.vars().iter().filter(|(_, v)| grads.get(v.as_tensor()).is_some()).count();
    assert!(with_grad < p.vars().len());
}

#[test]
fn gradient_matches_finite_differences_in_f64() {
    let p = tiny_with(DType::F64, 4, |c| {
        c.model_type = "qwen2".into();
        c.tie_word_embeddings = false;
    });
    let grads = loss(&p).backward().unwrap();
    let eval = |p: &Policy| loss(p).to_scalar::<f64>().unwrap();
    let mut worst: f64 = 0.0;
    let mut checked = 0;
    for (name, var) in p.vars() {
        let g = grads.get(var.as_tensor()).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap();
        let base = var.as_tensor().flatten_all().unwrap().to_vec1::<f64>().unwrap();
        // Three coordinates per tensor, including the largest-gradient one.
        let argmax = (0..g.len()).max_by(|&a, &b| g[a].abs().total_cmp(&g[b].abs())).unwrap();
        for idx in [argmax, base.len() / 3, base.len() - 1] {
            let h = 1e-5;
            let at = |delta: f64| {
                let mut v = base.clone();
                v[idx] += delta;
                var.set(&Tensor::from_vec(v, var.shape(), &Device::Cpu).unwrap()).unwrap();
                eval(&p)
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            var.set(&Tensor::from_vec(base.clone(), var.shape(), &Device::Cpu).unwrap()).unwrap();
            let scale = fd.abs().max(g[idx].abs());
            if scale > 1e-6 {
                let rel = (fd - g[idx]).abs() / scale;
                assert!(rel < 1e-4, "{name}[{idx}]: autograd {} vs finite difference {fd}", g[idx]);
                worst = worst.max(rel);
                checked += 1;
            }
        }
    }
    assert!(checked > 40, "only {checked} coordinates had a measurable gradient");
    eprintln!("finite differences: {checked} coordinates, worst relative error {worst:.2e}");
}

#[test]
fn fused_and_differentiable_kernels_agree() {
    let p = tiny_with(DType::F32, 5, |c| c.tie_word_embeddings = false);
    let (prompts, completions) = batch(&p);
    // With the metric entropy, as a GRPO update asks for it (the trainer's metrics-only pass
    // for rows that carry no gradient uses the fused kernels).
    let diff = LogProbOptions { entropy: mentor_policy::Entropy::Metric, ..LogProbOptions::default() };
    let a = p.logprobs(&prompts, &completions, &diff).unwrap();
    let fused = LogProbOptions { kernels: Kernels::Fused, ..diff };
    let b = p.logprobs(&prompts, &completions, &fused).unwrap();
    let gap = |x: &Tensor, y: &Tensor| {
        (x - y).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap()
    };
    let d = gap(&a.logprobs, &b.logprobs);
    assert!(d < 1e-5, "log-probs: max abs difference {d}");
    let d = gap(a.entropy.as_ref().unwrap(), b.entropy.as_ref().unwrap());
    assert!(d < 1e-5, "entropies: max abs difference {d}");
}

#[test]
fn metric_entropy_equals_the_differentiable_one_outside_the_graph() {
    use mentor_policy::Entropy;
    let p = tiny_with(DType::F64, 4, |_| {});
    let (prompts, completions) = batch(&p);
    let with = |entropy| LogProbOptions { entropy, temperature: 0.7, ..LogProbOptions::default() };
    let metric = p.logprobs(&prompts, &completions, &with(Entropy::Metric)).unwrap();
    let diff = p.logprobs(&prompts, &completions, &with(Entropy::Differentiable)).unwrap();
    let (a, b) = (metric.entropy.unwrap(), diff.entropy.unwrap());
    let gap = (a.clone() - b).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
    assert!(gap < 1e-12, "{gap}");
    assert!(a.sum_all().unwrap().to_scalar::<f64>().unwrap() > 0.0);
    // The log-probs are the same either way; the metric adds nothing to the graph.
    let lp_gap = (metric.logprobs.clone() - diff.logprobs).unwrap().abs().unwrap().max_all().unwrap();
    assert!(lp_gap.to_scalar::<f64>().unwrap() < 1e-12);
    let grads = a.sum_all().unwrap().backward().unwrap();
    assert!(p.vars().iter().all(|(_, v)| grads.get(v.as_tensor()).is_none()));
    assert!(p.logprobs(&prompts, &completions, &with(Entropy::Off)).unwrap().entropy.is_none());
}

/// A GRPO-like batch: two prompts of different lengths, each with several completions of
/// different lengths (one empty, one a single token), rows interleaved.
fn grouped_batch(p: &Policy) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let t = p.tokenizer();
    let (a, b) = (t.encode("12+30=").unwrap(), t.encode("7*8=").unwrap());
    let prompts = vec![a.clone(), b.clone(), a.clone(), b.clone(), a.clone(), b];
    let completions = ["42", "56\n", "4", "", "41\n\n", "5"].iter().map(|c| t.encode(c).unwrap()).collect();
    (prompts, completions)
}

fn max_abs_diff(x: &Tensor, y: &Tensor) -> f64 {
    (x - y)
        .unwrap()
        .abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .to_scalar::<f64>()
        .unwrap()
}

#[test]
fn shared_prompts_equal_the_full_computation_with_gradients() {
    let p = tiny(DType::F64, 3);
    let (prompts, completions) = grouped_batch(&p);
    {
        let kernels = Kernels::Differentiable;
        for entropy in [mentor_policy::Entropy::Off, mentor_policy::Entropy::Differentiable] {
            let run = |share_prompts| {
                let opts = LogProbOptions { kernels, entropy, share_prompts, ..LogProbOptions::default() };
                p.logprobs(&prompts, &completions, &opts).unwrap()
            };
            let (shared, full) = (run(true), run(false));
            assert_eq!(shared.logprobs.dims(), full.logprobs.dims());
            let d = max_abs_diff(&shared.logprobs, &full.logprobs);
            assert!(d < 1e-12, "{kernels:?} {entropy:?}: log-probs differ by {d}");
            assert_eq!(shared.mask.to_vec2::<f64>().unwrap(), full.mask.to_vec2::<f64>().unwrap());
            if let (Some(a), Some(b)) = (&shared.entropy, &full.entropy) {
                assert!(max_abs_diff(a, b) < 1e-12, "entropy differs by {}", max_abs_diff(a, b));
            }
            // The same weighted loss through both: every weight's gradient agrees.
            let loss = |out: &mentor_policy::TokenLogProbs| {
                let (rows, c) = out.logprobs.dims2().unwrap();
                let w: Vec<f64> = (0..rows * c).map(|i| 0.3 + 0.17 * i as f64).collect();
                let w = Tensor::from_vec(w, (rows, c), &Device::Cpu).unwrap();
                let mut l = (&out.logprobs * w).unwrap().sum_all().unwrap();
                if let Some(h) = &out.entropy {
                    l = (l + (h.sum_all().unwrap() * 0.1).unwrap()).unwrap();
                }
                l
            };
            let (ga, gb) = (loss(&shared).backward().unwrap(), loss(&full).backward().unwrap());
            for (name, v) in p.vars() {
                let (x, y) = (ga.get(v.as_tensor()).unwrap(), gb.get(v.as_tensor()).unwrap());
                let scale = y.abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap().max(1e-300);
                let d = max_abs_diff(x, y) / scale;
                assert!(d < 1e-10, "{name}: gradients differ by {d} (relative)");
            }
        }
    }
}

#[test]
fn shared_prompts_in_f32_match_within_rounding() {
    let p = tiny(DType::F32, 4);
    let (prompts, completions) = grouped_batch(&p);
    // The fused (no-grad) kernels have no f64 version, so they are checked here.
    for kernels in [Kernels::Differentiable, Kernels::Fused] {
        let run = |share_prompts| {
            let opts = LogProbOptions { share_prompts, kernels, ..LogProbOptions::default() };
            p.logprobs(&prompts, &completions, &opts).unwrap().logprobs
        };
        let d = max_abs_diff(&run(true), &run(false));
        assert!(d < 1e-5, "{kernels:?}: f32 log-probs differ by {d}");
    }
}

/// A staged pass (`LogProbOptions::staged`): the loss's `backward` reaches only the final norm
/// and the head, and `Stages::backward` carries it down; together they give every weight the
/// gradient of the whole graph (shared prompts or not, with a differentiable entropy or not,
/// on the fused f32 path training runs and the composite f64 one).
#[test]
fn a_staged_backward_gives_the_whole_graphs_gradients() {
    for (dtype, tol) in [(DType::F32, 1e-6), (DType::F64, 1e-12)] {
        let p = tiny(dtype, 5);
        let (prompts, completions) = grouped_batch(&p);
        for share_prompts in [true, false] {
            for entropy in [mentor_policy::Entropy::Metric, mentor_policy::Entropy::Differentiable] {
                let opts = LogProbOptions { entropy, share_prompts, ..LogProbOptions::default() };
                let loss = |out: &mentor_policy::TokenLogProbs| {
                    let (rows, c) = out.logprobs.dims2().unwrap();
                    let w: Vec<f64> = (0..rows * c).map(|i| 0.3 - 0.11 * i as f64).collect();
                    let w = Tensor::from_vec(w, (rows, c), &Device::Cpu).unwrap().to_dtype(dtype).unwrap();
                    let mut l = (&out.logprobs * w).unwrap().sum_all().unwrap();
                    if entropy == mentor_policy::Entropy::Differentiable {
                        let h = out.entropy.as_ref().unwrap().sum_all().unwrap();
                        l = (l + (h * 0.1).unwrap()).unwrap();
                    }
                    l
                };
                let whole = p.logprobs(&prompts, &completions, &opts).unwrap();
                assert!(whole.stages.is_none(), "not staged unless asked");
                let want = loss(&whole).backward().unwrap();

                let staged = LogProbOptions { staged: true, ..opts.clone() };
                let out = p.logprobs(&prompts, &completions, &staged).unwrap();
                let d = max_abs_diff(&out.logprobs, &whole.logprobs);
                assert_eq!(d, 0.0, "staging changed the log-probs by {d}");
                let stages = out.stages.clone().expect("a staged pass has stages");
                assert_eq!(stages.len(), p.model().config().num_hidden_layers);
                let top = loss(&out).backward().unwrap();
                drop(out);
                let mut got: std::collections::HashMap<String, Tensor> = std::collections::HashMap::new();
                let mut take = |g: &candle_core::backprop::GradStore| -> candle_core::Result<()> {
                    for (name, v) in p.vars() {
                        if let Some(t) = g.get(v.as_tensor()) {
                            let sum = match got.remove(&name) {
                                Some(s) => (s + t)?,
                                None => t.clone(),
                            };
                            got.insert(name, sum);
                        }
                    }
                    Ok(())
                };
                take(&top).unwrap();
                // The top alone reaches no layer: the rest must come from the stages.
                let layer0 = p.vars().into_iter().find(|(n, _)| n.contains("layers.0.")).unwrap();
                assert!(top.get(layer0.1.as_tensor()).is_none(), "{} reached from the top", layer0.0);
                stages.backward(top, &mut take).unwrap();
                for (name, v) in p.vars() {
                    let y = want.get(v.as_tensor()).unwrap();
                    let x = got.get(&name).unwrap_or_else(|| panic!("{name}: no staged gradient"));
                    let scale = y.abs().unwrap().max_all().unwrap().to_dtype(DType::F64).unwrap();
                    let scale = scale.to_scalar::<f64>().unwrap().max(1e-300);
                    let d = max_abs_diff(x, y) / scale;
                    assert!(d <= tol, "{dtype:?} shared {share_prompts} {entropy:?} {name}: differs by {d}");
                }
            }
        }
    }
}
