//! A differentiable pass cut at its layer boundaries, so that its backward runs one layer at a
//! time ([`Stages`]).
//!
//! candle's `Tensor::backward` returns every variable's gradient at once, and a pass's
//! activations stay alive until its whole graph is dropped, after the backward. Cut into
//! stages, the backward of a training pass holds one layer's gradients at a time, and each
//! layer's activations are freed as soon as its backward has run: the peak is that of the
//! forward (the activations) plus one layer's gradients, not the activations plus every
//! gradient. The gradients are the same: each layer's output is read by the next through a
//! leaf copy, and the gradient that reaches the copy is handed back to the layer as the
//! seed of its own backward (`d/dx Σ x ⊙ g = g`, exactly).

use candle_core::backprop::GradStore;
use candle_core::{Tensor, Var};

use crate::embed::{dense_grads, EmbedGrads};
use crate::head::{HeadGrads, PendingGrad};

/// The layer boundaries of a differentiable pass ([`crate::LogProbOptions::staged`]).
///
/// Each boundary keeps the tensors layers wrote (in the graph below it) and the leaf copies
/// the next layer read instead. The graph above the last boundary (the final norm, the LM
/// head, the log-probs and whatever the caller computes from them) ends at leaves: its
/// `backward` gives the variables of that top part (but the LM head's weight, whose
/// gradient the stages compute late and hand on before the first layer's) and the
/// gradients of those leaves, and [`Stages::backward`] carries them down, a layer at a time. A variable used in more than
/// one stage (a tied embedding: in the head and in the first layer's input) gets a gradient
/// from each; their sum is the whole graph's gradient.
#[derive(Debug, Clone, Default)]
pub struct Stages {
    /// `cuts[l]`: what layer `l` wrote (one entry per pass through the layers: the shared
    /// prompts' pass and the completions'), and the leaves layer `l + 1` (or the head) read.
    cuts: Vec<Vec<Cut>>,
    /// The vocabulary weight's gradient from the head's backward (`crate::head`), which
    /// bypasses the top's store: computed and handed on by [`Stages::backward`] before the
    /// first layer's stage.
    head: HeadGrads,
    /// The token embedding's lookups' row gradients (`crate::embed`), which bypass candle's
    /// store: made whole and handed on by [`Stages::backward`] after the first layer's stage.
    embed: EmbedGrads,
}

/// One tensor a layer wrote, and the leaf copy read in its place above.
#[derive(Debug, Clone)]
struct Cut {
    out: Tensor,
    leaf: Var,
}

impl Stages {
    /// Cuts the graph after layer `layer`: records `x` (that layer's output) and returns a
    /// leaf copy of it, in the graph as a variable, for the layers above to read.
    pub(crate) fn cut(&mut self, layer: usize, x: Tensor) -> candle_core::Result<Tensor> {
        if self.cuts.len() <= layer {
            self.cuts.resize_with(layer + 1, Vec::new);
        }
        let leaf = Var::from_tensor(&x.detach())?;
        let read = leaf.as_tensor().clone();
        self.cuts[layer].push(Cut { out: x, leaf });
        Ok(read)
    }

    /// The slot the head's backward puts its vocabulary weight's gradient in.
    pub(crate) fn head_slot(&self) -> HeadGrads {
        self.head.clone()
    }

    /// The slot the embedding's lookups put their rows' gradients in.
    pub(crate) fn embed_slot(&self) -> EmbedGrads {
        self.embed.clone()
    }

    /// Layer boundaries recorded (the model's layers, once a pass has run through them).
    pub fn len(&self) -> usize {
        self.cuts.len()
    }

    /// Whether no boundary was recorded (a pass through no layers, or not staged).
    pub fn is_empty(&self) -> bool {
        self.cuts.is_empty()
    }

    /// The backward below the top: `top` is what `backward` of a loss over the pass's
    /// log-probs returned (the caller has already taken its variables' gradients from it).
    /// The LM head weight's gradient, which the head's backward keeps out of `top`, is
    /// computed just before the first layer's stage, when the activations above it are freed
    /// (see `crate::head`), and handed to `add` then.
    /// From the top layer down, each layer's backward is seeded with the gradient that
    /// reached its output's leaf, and `add` receives its gradients (the layer's variables,
    /// and leaves the caller can ignore); the token embedding's comes after the first layer's,
    /// made whole from its lookups' rows (see `crate::embed`). Each layer's
    /// graph and gradients are dropped before the next layer's backward.
    ///
    /// Every tensor of the top's graph (the loss, the log-probs) must be dropped before this
    /// is called: what the caller still holds stays alive to the end.
    pub fn backward<E: From<candle_core::Error>>(
        self,
        top: GradStore,
        mut add: impl FnMut(&GradStore) -> Result<(), E>,
    ) -> Result<(), E> {
        // The head's vocabulary weight, whose gradient the top's store does not hold.
        let mut head = std::mem::take(&mut *self.head.lock().unwrap_or_else(|p| p.into_inner()));
        let mut store = top;
        for (layer, cut) in self.cuts.into_iter().enumerate().rev() {
            if layer == 0 {
                // Before the first layer's stage, which gives a tied embedding its other part:
                // the parts are added in the order of an unstaged backward's store.
                add_head(&mut head, &mut add)?;
            }
            let mut seed: Option<Tensor> = None;
            for c in &cut {
                if let Some(g) = store.get(c.leaf.as_tensor()) {
                    // A variable's gradient in candle's store keeps the graph of the ops that
                    // made it (only other nodes' are detached): detached, the seed reaches this
                    // layer's graph alone.
                    let term = (&c.out * g.detach())?.sum_all()?;
                    seed = Some(match seed {
                        None => term,
                        Some(s) => (s + term)?,
                    });
                }
            }
            // The gradients above (already added) and the leaves the layer above read.
            drop(store);
            store = match seed {
                Some(seed) => seed.backward()?,
                None => GradStore::default(),
            };
            // This layer's graph: held by the seed (dropped above) and by the outputs.
            drop(cut);
            add(&store)?;
        }
        drop(store);
        add_head(&mut head, &mut add)?;
        // The embedding's part last, as the first layer's stage would have given it: one
        // buffer, the rows added in the order the backward reached the lookups.
        let embed = std::mem::take(&mut *self.embed.lock().unwrap_or_else(|p| p.into_inner()));
        if !embed.is_empty() {
            add(&dense_grads(embed)?)?;
        }
        Ok(())
    }
}

/// Computes the head's pending weight gradients (`crate::head`), hands them to `add` and
/// drops them.
fn add_head<E: From<candle_core::Error>>(
    head: &mut Vec<PendingGrad>,
    add: &mut impl FnMut(&GradStore) -> Result<(), E>,
) -> Result<(), E> {
    if head.is_empty() {
        return Ok(());
    }
    let mut store = GradStore::default();
    for pending in head.drain(..) {
        let w = pending.weight().clone();
        let g = pending.compute()?;
        let g = match store.remove(&w) {
            Some(s) => (s + g)?,
            None => g,
        };
        store.insert(&w, g);
    }
    add(&store)
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};

    use super::*;

    /// Two "layers" `y = tanh(W1 x)`, `z = W2 y`, a loss over `z`: the staged backward gives
    /// the same gradients as the whole graph's.
    #[test]
    fn staged_gradients_equal_the_whole_graphs() {
        let dev = Device::Cpu;
        let w1 = Var::from_vec((0..12).map(|i| (i as f32 - 5.0) / 7.0).collect(), (4, 3), &dev).unwrap();
        let w2 = Var::from_vec((0..8).map(|i| (i as f32 * 0.3).sin()).collect(), (2, 4), &dev).unwrap();
        let x = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.25, 1.5, -0.75], (2, 3), &dev).unwrap();
        let layer1 = |x: &Tensor| x.matmul(&w1.as_tensor().t().unwrap()).unwrap().tanh().unwrap();
        let layer2 = |y: &Tensor| y.matmul(&w2.as_tensor().t().unwrap()).unwrap();
        let loss = |z: &Tensor| z.sqr().unwrap().sum_all().unwrap();

        let whole = loss(&layer2(&layer1(&x))).backward().unwrap();

        let mut stages = Stages::default();
        let y = stages.cut(0, layer1(&x)).unwrap();
        let top = loss(&layer2(&y)).backward().unwrap();
        let mut got: Vec<(Tensor, Tensor)> = Vec::new();
        let mut take = |g: &GradStore| -> candle_core::Result<()> {
            for w in [&w1, &w2] {
                if let Some(t) = g.get(w.as_tensor()) {
                    got.push((w.as_tensor().clone(), t.clone()));
                }
            }
            Ok(())
        };
        take(&top).unwrap();
        assert_eq!(stages.len(), 1);
        stages.backward(top, &mut take).unwrap();
        assert_eq!(got.len(), 2, "each weight's gradient once");
        for (w, g) in &got {
            let want = whole.get(w).unwrap();
            let (a, b) = (g.to_dtype(DType::F64).unwrap(), want.to_dtype(DType::F64).unwrap());
            let diff = (a - b).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
            assert_eq!(diff, 0.0, "{w:?}");
        }
    }
}
