//! [`ModelFiles`]: what loading a model yields, whatever the source (`source.rs`: a Hub repo or
//! a directory; `gguf.rs`: a GGUF file).

use std::collections::HashMap;

use candle_core::Tensor;

use crate::config::Config;
use crate::tokenizer::Tokenizer;

/// What loading a model yields, before it becomes a [`crate::Policy`].
#[derive(Debug)]
pub struct ModelFiles {
    /// The configuration.
    pub config: Config,
    /// Weights under HF names, in the requested dtype and device.
    pub weights: HashMap<String, Tensor>,
    /// The tokenizer.
    pub tokenizer: Tokenizer,
    /// The chat template text, when the model has one.
    pub chat_template: Option<String>,
}
