//! Building the policy a config asks for ([`build`], [`model_config`], [`load_dir`]). The
//! seeded mixing every random stream of a run is derived from is `crate::seed`.

use std::path::PathBuf;

use candle_core::{DType, Device};
use mentor_core::assets::AssetDir;
use mentor_policy::Config;
use mentor_policy::{HubOptions, LoadOptions, ModelSource, Policy};

use crate::config::{ModelChoice, ModelSection};
use crate::error::{Error, Result};
use mentor_tasks::curriculum::ALPHABET;

/// The policy `model` describes. `tiny` models are initialised from `seed`. Also sets the
/// process's fixed-order mode from `model.deterministic`.
pub fn build(model: &ModelSection, seed: u64) -> Result<Policy> {
    mentor_kernels::set_deterministic(model.deterministic);
    let source = match &model.source {
        ModelChoice::Tiny => {
            let mut cfg = Config::tiny(0, model.hidden, model.layers, model.heads, model.heads);
            cfg.intermediate_size = model.intermediate;
            return Ok(Policy::char_level(ALPHABET, cfg, seed, DType::F32, &Device::Cpu)?);
        }
        ModelChoice::Smollm2 => {
            let assets = AssetDir::resolve(|k| std::env::var(k).ok())
                .ok_or_else(|| Error::Missing("no asset directory: set MENTOR_HOME or HOME".into()))?;
            let path = assets.smollm2_gguf();
            if !path.exists() {
                return Err(Error::Missing(format!(
                    "{} is missing\nhint: run `cargo xtask setup` to install the SmolLM2 GGUF",
                    path.display()
                )));
            }
            ModelSource::Gguf(path)
        }
        ModelChoice::Source(s) => ModelSource::parse(s),
    };
    let opts = LoadOptions { hub: HubOptions::from_env(|k| std::env::var(k).ok()), ..LoadOptions::default() };
    Ok(Policy::load(&source, &opts)?)
}

/// The configuration of the model `model` describes, read without its weights: computed for
/// `tiny`, from the GGUF metadata for `smollm2` and `.gguf` files, from `config.json` for a
/// directory. `None` for a Hub repo id (its files are only reached when the model loads).
pub fn model_config(model: &ModelSection) -> Result<Option<Config>> {
    let path = match &model.source {
        ModelChoice::Tiny => {
            let mut cfg = Config::tiny(0, model.hidden, model.layers, model.heads, model.heads);
            cfg.intermediate_size = model.intermediate;
            cfg.vocab_size = mentor_policy::Tokenizer::char_level(ALPHABET)?.vocab_size();
            return Ok(Some(cfg));
        }
        ModelChoice::Smollm2 => match AssetDir::resolve(|k| std::env::var(k).ok()) {
            Some(assets) => assets.smollm2_gguf(),
            None => return Ok(None),
        },
        ModelChoice::Source(s) => match ModelSource::parse(s) {
            ModelSource::Gguf(p) => p,
            ModelSource::Dir(d) => {
                let file = d.join("config.json");
                let text = std::fs::read_to_string(&file).map_err(Error::io(&file))?;
                let cfg = Config::from_json(&text).map_err(|e| Error::Config {
                    file: file.display().to_string(),
                    message: e.to_string(),
                })?;
                return Ok(Some(cfg));
            }
            ModelSource::Hub { .. } => return Ok(None),
        },
    };
    let mut f = std::fs::File::open(&path).map_err(Error::io(&path))?;
    let ct = candle_core::quantized::gguf_file::Content::read(&mut f)
        .map_err(|e| Error::Missing(format!("{}: {e}", path.display())))?;
    Ok(Some(mentor_policy::config_from_gguf(&ct)?))
}

/// Parameters of a model with configuration `cfg` (the sum of its weight shapes), without
/// building it (the memory estimate's tests).
#[cfg(test)]
pub fn param_count(cfg: &Config) -> usize {
    cfg.weight_shapes()
        .iter()
        .map(|(_, s)| s.iter().fold(1usize, |a, &d| a.saturating_mul(d)))
        .fold(0usize, usize::saturating_add)
}

/// Loads a policy saved by [`Policy::save`].
pub fn load_dir(dir: PathBuf) -> Result<Policy> {
    Ok(Policy::load(&ModelSource::Dir(dir), &LoadOptions::default())?)
}
