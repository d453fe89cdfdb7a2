//! [`Policy`]: a model, its weights in a `VarMap`, its tokenizer and chat template.
//!
//! The weights live in one `candle_nn::VarMap`; the [`Model`] holds the same tensors (shared
//! storage), so an optimizer built over [`Policy::vars`] updates what generation and log-probs
//! see. [`Policy::frozen_copy`] makes an independent, gradient-free copy for a KL reference.

use std::collections::HashMap;
use std::sync::MutexGuard;

use candle_core::{DType, Device, Tensor, Var};
use candle_nn::VarMap;
use mentor_core::Message;

use crate::model::Kernels;
use rand::{Rng, SeedableRng};

use crate::chat_template::ChatTemplate;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::source::{HubOptions, ModelFiles, ModelSource};
use crate::tokenizer::Tokenizer;

/// Where and in what precision to hold the weights.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Weight and activation dtype (`F32` on CPU; `BF16` is a CUDA option).
    pub dtype: DType,
    /// Device.
    pub device: Device,
    /// Hub access.
    pub hub: HubOptions,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self { dtype: DType::F32, device: Device::Cpu, hub: HubOptions::default() }
    }
}

/// A causal LM policy.
pub struct Policy {
    varmap: VarMap,
    model: Model,
    /// The same weights, detached (views of the same storage, so the optimizer's in-place
    /// updates reach it): the no-grad forwards run on it ([`Policy::model_for`]).
    detached: Model,
    tokenizer: Tokenizer,
    chat_template: Option<ChatTemplate>,
    trainable: bool,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("config", self.model.config())
            .field("tokenizer", &self.tokenizer)
            .field("trainable", &self.trainable)
            .finish_non_exhaustive()
    }
}

fn lock(vm: &VarMap) -> MutexGuard<'_, HashMap<String, Var>> {
    // A poisoned lock only means another thread panicked while holding it; the map is intact.
    vm.data().lock().unwrap_or_else(|e| e.into_inner())
}

impl Policy {
    /// Loads a model from the Hub, a directory or a GGUF file.
    pub fn load(source: &ModelSource, opts: &LoadOptions) -> Result<Self> {
        let files = crate::source::load(source, &opts.hub, opts.dtype, &opts.device)?;
        Self::from_files(files)
    }

    /// Builds a trainable policy from loaded parts. Every weight the config needs must be
    /// present with the right shape.
    pub fn from_files(files: ModelFiles) -> Result<Self> {
        let ModelFiles { config, weights, tokenizer, chat_template } = files;
        if tokenizer.vocab_size() > config.vocab_size {
            return Err(Error::Config(format!(
                "tokenizer has {} ids, the model only {}",
                tokenizer.vocab_size(),
                config.vocab_size
            )));
        }
        let chat_template = chat_template
            .map(|src| ChatTemplate::new(src, tokenizer.special_tokens().clone()))
            .transpose()?;
        let varmap = VarMap::new();
        {
            let mut data = lock(&varmap);
            for (name, _) in config.weight_shapes() {
                let t = weights.get(&name).ok_or_else(|| Error::MissingWeight(name.clone()))?;
                data.insert(name, Var::from_tensor(t)?);
            }
        }
        let model = Self::build_model(&config, &varmap, true)?;
        let detached = Self::build_model(&config, &varmap, false)?;
        Ok(Self { varmap, model, detached, tokenizer, chat_template, trainable: true })
    }

    /// A randomly initialised model (normal(0, 0.02) matrices, unit norms, zero biases) drawn
    /// from `seed`: the same seed gives the same weights.
    pub fn random(
        config: &Config,
        tokenizer: Tokenizer,
        chat_template: Option<String>,
        seed: u64,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        config.validate()?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut weights = HashMap::new();
        for (name, shape) in config.weight_shapes() {
            let n: usize = shape.iter().product();
            let data: Vec<f64> = if name.ends_with("norm.weight") {
                vec![1.0; n]
            } else if name.ends_with(".bias") {
                vec![0.0; n]
            } else {
                (0..n).map(|_| 0.02 * standard_normal(&mut rng)).collect()
            };
            let t = Tensor::from_vec(data, shape, device)?.to_dtype(dtype)?;
            weights.insert(name, t);
        }
        Self::from_files(ModelFiles { config: config.clone(), weights, tokenizer, chat_template })
    }

    /// A from-scratch model with a character-level tokenizer over `alphabet`
    /// ([`Tokenizer::char_level`]); `config`'s vocabulary size is set to fit. The chat template
    /// concatenates message contents (a from-scratch model has no chat format).
    pub fn char_level(
        alphabet: &str,
        config: Config,
        seed: u64,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        let tokenizer = Tokenizer::char_level(alphabet)?;
        let mut config = config;
        config.vocab_size = tokenizer.vocab_size();
        config.eos_token_id = Some(crate::config::TokenIds::Many(tokenizer.stop_ids().to_vec()));
        let template = "{% for message in messages %}{{ message['content'] }}{% endfor %}".to_string();
        Self::random(&config, tokenizer, Some(template), seed, dtype, device)
    }

    fn build_model(config: &Config, varmap: &VarMap, track: bool) -> Result<Model> {
        let data = lock(varmap);
        let weights: HashMap<String, Tensor> = data
            .iter()
            .map(|(k, v)| (k.clone(), if track { v.as_tensor().clone() } else { v.as_tensor().detach() }))
            .collect();
        Model::new(config, &weights)
    }

    /// An independent copy whose weights never receive gradients (for KL reference log-probs).
    /// Later updates of `self` do not change it.
    pub fn frozen_copy(&self) -> Result<Self> {
        let varmap = VarMap::new();
        {
            let src = lock(&self.varmap);
            let mut dst = lock(&varmap);
            for (k, v) in src.iter() {
                dst.insert(k.clone(), Var::from_tensor(&v.as_tensor().copy()?)?);
            }
        }
        let model = Self::build_model(self.model.config(), &varmap, false)?;
        let detached = Self::build_model(self.model.config(), &varmap, false)?;
        Ok(Self {
            varmap,
            detached,
            model,
            tokenizer: self.tokenizer.clone(),
            chat_template: self.chat_template.clone(),
            trainable: false,
        })
    }

    /// The model: its weights are the trainable variables, so a forward pass records the graph
    /// a backward pass needs.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The model to run with `kernels`: [`Policy::model`] for [`Kernels::Differentiable`]; for
    /// [`Kernels::Fused`] (no gradient flows through it anyway) the same weights detached, so
    /// the forward records no graph and each intermediate tensor is freed as soon as the next
    /// op has read it. On the tracked weights a no-grad forward would keep every layer's
    /// activations, attention scores included, until its output is dropped: a prefill of
    /// 32 prompts of 500 tokens held 7 GB that way.
    pub fn model_for(&self, kernels: Kernels) -> &Model {
        match kernels {
            Kernels::Fused => &self.detached,
            Kernels::Differentiable => &self.model,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        self.model.config()
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The chat template, when the model has one.
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.chat_template.as_ref()
    }

    /// The weights (HF names). Checkpoints and optimizers work on this map.
    pub fn varmap(&self) -> &VarMap {
        &self.varmap
    }

    /// The trainable variables, sorted by name; empty for a frozen copy.
    pub fn vars(&self) -> Vec<(String, Var)> {
        if !self.trainable {
            return Vec::new();
        }
        let mut v: Vec<(String, Var)> =
            lock(&self.varmap).iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Whether this policy's weights are trainable (false for [`Policy::frozen_copy`]).
    pub fn is_trainable(&self) -> bool {
        self.trainable
    }

    /// Number of parameters.
    pub fn num_params(&self) -> usize {
        lock(&self.varmap).values().map(|v| v.elem_count()).sum()
    }

    /// Renders `messages` through the model's chat template, ending with the assistant prompt.
    pub fn render_chat(&self, messages: &[Message]) -> Result<String> {
        let t = self
            .chat_template
            .as_ref()
            .ok_or_else(|| Error::ChatTemplate("the model has no chat template".into()))?;
        t.render(messages, true)
    }
}

/// One draw from N(0, 1) (Box-Muller), so initialisation depends only on the seed.
fn standard_normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{attention_mask, positions};

    /// The no-grad forward runs on detached views of the trainable weights: it records no
    /// graph (so nothing is kept for a backward that never comes), it computes the same logits,
    /// and an in-place update of a variable (as the optimizer makes) reaches it.
    #[test]
    fn no_grad_forwards_record_no_graph_and_follow_in_place_updates() {
        let p = Policy::char_level("abc", Config::tiny(0, 16, 2, 4, 2), 3, DType::F32, &Device::Cpu).unwrap();
        let dev = Device::Cpu;
        let ids = Tensor::from_vec(vec![1u32, 2, 3, 1], (1, 4), &dev).unwrap();
        let valid = vec![vec![true; 4]];
        let pos = positions(&valid, &[0], &dev).unwrap();
        let mask = attention_mask(&valid, 4, DType::F32, &dev).unwrap();
        let logits = |k: Kernels| p.model_for(k).forward(&ids, &pos, &mask, None, 0, k).unwrap();
        let (fused, tracked) = (logits(Kernels::Fused), logits(Kernels::Differentiable));
        assert!(!fused.track_op(), "the no-grad forward recorded a graph");
        assert!(tracked.track_op(), "the differentiable forward must record its graph");
        let max_diff = |a: &Tensor, b: &Tensor| {
            (a - b).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap()
        };
        assert!(max_diff(&fused, &tracked) < 1e-5);
        // An in-place update of a weight (as `Var::set` in an optimizer step) reaches both.
        let (_, norm) = p.vars().into_iter().find(|(n, _)| n == "model.norm.weight").unwrap();
        norm.set(&(norm.as_tensor() * 2.0).unwrap()).unwrap();
        let (fused2, tracked2) = (logits(Kernels::Fused), logits(Kernels::Differentiable));
        assert!(max_diff(&fused2, &tracked2) < 1e-5);
        assert!(max_diff(&fused2, &fused) > 1e-3, "the detached model did not see the update");
    }
}
