//! The learner of MENTOR: a trainable causal-LM policy on candle.
//!
//! - [`Policy`] holds a Llama-family decoder ([`model::Model`]: Llama 2/3, SmolLM2, Qwen2; GQA,
//!   tied or untied embeddings, q/k/v biases, RoPE scaling) whose weights live in a
//!   `candle_nn::VarMap`, plus its [`Tokenizer`] and [`ChatTemplate`].
//! - Loading ([`ModelSource`]): a Hub repo through `hf-hub` (cache and offline mode honoured),
//!   a local HF directory (safetensors, single or sharded), or a local GGUF file (dequantised,
//!   renamed to HF names, Q/K un-permuted, tokenizer rebuilt from metadata).
//! - [`Policy::generate`]: batched sampling with a KV cache, left padding, per-row positions,
//!   greedy / temperature / top-k / top-p, stop ids and strings, seeded.
//! - [`Policy::logprobs`]: differentiable per-token log-probs (and entropy) of completions,
//!   on CPU through `mentor-kernels`' fused kernels with a backward pass (masked softmax,
//!   RMSNorm, RoPE, SwiGLU, token log-probs), and the linear layers' `x · Wᵀ` for small
//!   batches (decoding) on AVX2 CPUs without repacking the weights on every call
//!   (`mentor_kernels::matmul::matmul_t`). The kernels' code path, fixed-order mode and thread
//!   pool are set there too (`mentor_kernels::set_kernel_path`, `set_deterministic`,
//!   `set_threads`).
//! - [`Policy::save`] / [`Policy::frozen_copy`]: atomic checkpoints and a KL reference.
//! - [`Policy::char_level`]: a from-scratch model with a character tokenizer (the demo's).
//!
//! **Invariants.** Log-probs meant for training use [`model::Kernels::Differentiable`], built
//! only from ops with a backward pass: every weight gets a gradient (tested), unlike
//! candle-transformers' Llama, whose fused kernels silently detach all but the embedding.
//! Model output is never an `Err`. This crate does not depend on wasmtime, read environment
//! variables, or print.
//!
//! ```
//! use mentor_policy::{Config, GenerateConfig, Policy, Sampler};
//! use candle_core::{DType, Device};
//!
//! let policy = Policy::char_level("0123456789+=", Config::tiny(0, 32, 2, 4, 2), 7, DType::F32, &Device::Cpu)?;
//! let prompt = policy.tokenizer().encode("1+2=")?;
//! let cfg = GenerateConfig { sampler: Sampler::greedy(), max_new_tokens: 5, ..GenerateConfig::default() };
//! let out = policy.generate(&[prompt], &cfg)?;
//! assert!(out[0].token_ids.len() <= 5);
//! # Ok::<(), mentor_policy::Error>(())
//! ```
#![deny(missing_docs)]

mod attention;
mod batch;
mod chat_template;
mod checkpoint;
mod config;
mod embed;
mod error;
mod generate;
mod gguf;
mod head;
mod logprobs;
mod mlp;
mod model;
mod model_files;
mod packing;
mod policy;
mod sampling;
mod source;
mod stages;
mod tokenizer;

pub use chat_template::ChatTemplate;
pub use config::{Config, RopeScaling};
pub use error::{Error, Result};
pub use generate::{GenerateConfig, Generation, StopCondition};
pub use gguf::config as config_from_gguf;
pub use logprobs::{Entropy, LogProbOptions, TokenLogProbs};
pub use model::{Kernels, KvCache, Model};
pub use policy::{LoadOptions, Policy};
pub use sampling::Sampler;
pub use source::{HubOptions, ModelFiles, ModelSource};
pub use stages::Stages;
pub use tokenizer::{SpecialTokens, Tokenizer};
