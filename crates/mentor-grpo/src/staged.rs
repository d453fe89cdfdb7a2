//! The rest of a backward that a policy cut into stages ([`StagedBackward`]).

use candle_core::backprop::GradStore;

use crate::error::Result;

/// The backward of a policy pass below the part a loss's `backward` reaches (a graph cut at
/// its layer boundaries so that one layer's gradients and activations are held at a time:
/// `mentor_policy::Stages`).
pub trait StagedBackward: std::fmt::Debug + Send {
    /// Carries the gradients in `top` (what `backward` of the loss returned; its variables'
    /// gradients are already taken) down the rest of the graph, handing each stage's
    /// gradients to `add` as they come.
    fn finish(self: Box<Self>, top: GradStore, add: &mut dyn FnMut(&GradStore) -> Result<()>) -> Result<()>;
}
