//! Where a model comes from: a Hub repo id (through `hf-hub`'s cache), a local HF-style
//! directory, or a local GGUF file; and reading one into [`ModelFiles`].
//!
//! A directory (and a Hub snapshot) holds `config.json`, `tokenizer.json`, optionally
//! `tokenizer_config.json` (chat template, special tokens) and `generation_config.json`, and
//! the weights as `model.safetensors` or sharded with `model.safetensors.index.json`. This is
//! also the layout `Policy::save` writes. The Hub is reached only when
//! [`HubOptions::offline`] is false and a file is not cached.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use serde::Deserialize;

use crate::config::{Config, TokenIds};
use crate::error::{Error, Result};
use crate::tokenizer::{SpecialTokens, Tokenizer};

/// A model location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// A Hugging Face Hub repository, e.g. `HuggingFaceTB/SmolLM2-135M-Instruct`.
    Hub {
        /// `owner/name`.
        repo: String,
        /// Branch, tag or commit; `main` when `None`.
        revision: Option<String>,
    },
    /// A local directory in HF layout (also what checkpoints are).
    Dir(PathBuf),
    /// A local GGUF file.
    Gguf(PathBuf),
}

impl ModelSource {
    /// Interprets a CLI argument: an existing `.gguf` file, an existing directory, else a Hub
    /// repo id (`owner/name` or `owner/name@revision`).
    pub fn parse(arg: &str) -> Self {
        let p = Path::new(arg);
        if p.is_dir() {
            return ModelSource::Dir(p.to_path_buf());
        }
        if p.is_file() || arg.ends_with(".gguf") {
            return ModelSource::Gguf(p.to_path_buf());
        }
        match arg.split_once('@') {
            Some((repo, rev)) => ModelSource::Hub { repo: repo.into(), revision: Some(rev.into()) },
            None => ModelSource::Hub { repo: arg.into(), revision: None },
        }
    }
}

/// How to reach the Hub.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HubOptions {
    /// The hub cache (`$HF_HOME/hub`); `hf-hub`'s default (`~/.cache/huggingface/hub`) when `None`.
    pub cache_dir: Option<PathBuf>,
    /// Never touch the network; only cached files are used (`HF_HUB_OFFLINE=1`).
    pub offline: bool,
    /// Access token for gated repos.
    pub token: Option<String>,
}

impl HubOptions {
    /// Reads `HF_HUB_CACHE`, `HF_HOME`, `HF_HUB_OFFLINE` and `HF_TOKEN` through `env`
    /// (binaries pass `std::env::var(..).ok()`), as `huggingface_hub` does.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Self {
        let get = |k: &str| env(k).filter(|v| !v.is_empty());
        let cache_dir = get("HF_HUB_CACHE")
            .map(PathBuf::from)
            .or_else(|| get("HF_HOME").map(|h| Path::new(&h).join("hub")));
        let offline =
            get("HF_HUB_OFFLINE").is_some_and(|v| matches!(v.as_str(), "1" | "true" | "TRUE" | "yes"));
        Self { cache_dir, offline, token: get("HF_TOKEN") }
    }
}

pub use crate::model_files::ModelFiles;

/// Fetches files of one model, by name.
trait Fetch {
    /// The local path of `name`; `Ok(None)` when the model has no such file.
    fn fetch(&self, name: &str) -> Result<Option<PathBuf>>;
    fn describe(&self) -> String;
}

struct DirFetch(PathBuf);

impl Fetch for DirFetch {
    fn fetch(&self, name: &str) -> Result<Option<PathBuf>> {
        let p = self.0.join(name);
        Ok(p.is_file().then_some(p))
    }
    fn describe(&self) -> String {
        self.0.display().to_string()
    }
}

struct HubFetch {
    repo: hf_hub::Repo,
    opts: HubOptions,
}

impl HubFetch {
    fn cache(&self) -> hf_hub::Cache {
        match &self.opts.cache_dir {
            Some(d) => hf_hub::Cache::new(d.clone()),
            None => hf_hub::Cache::default(),
        }
    }
}

impl Fetch for HubFetch {
    fn fetch(&self, name: &str) -> Result<Option<PathBuf>> {
        if let Some(p) = self.cache().repo(self.repo.clone()).get(name) {
            return Ok(Some(p));
        }
        if self.opts.offline {
            // hf-hub records no "absent" marker; offline, an uncached file is treated as absent
            // and a required one fails below with a message naming the file.
            return Ok(None);
        }
        let api = hf_hub::api::sync::ApiBuilder::from_cache(self.cache())
            .with_token(self.opts.token.clone())
            .with_progress(false)
            .build()
            .map_err(|e| self.err(name, e.to_string()))?;
        match api.repo(self.repo.clone()).get(name) {
            Ok(p) => Ok(Some(p)),
            Err(e) if e.to_string().contains("404") => Ok(None),
            Err(e) => Err(self.err(name, e.to_string())),
        }
    }
    fn describe(&self) -> String {
        format!("{} (hub{})", self.repo.folder_name(), if self.opts.offline { ", offline" } else { "" })
    }
}

impl HubFetch {
    fn err(&self, file: &str, reason: String) -> Error {
        Error::Hub { repo: self.repo.folder_name(), file: file.into(), reason }
    }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(Error::io("read", path))?;
    serde_json::from_str(&text).map_err(|source| Error::Json { path: path.to_path_buf(), source })
}

/// A token written as a string or as an `AddedToken` object in `tokenizer_config.json`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TokenText {
    Plain(String),
    Object { content: String },
}

impl TokenText {
    fn text(self) -> String {
        match self {
            TokenText::Plain(s) | TokenText::Object { content: s } => s,
        }
    }
}

/// `chat_template` is a string or a list of named templates.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TemplateField {
    One(String),
    Named(Vec<NamedTemplate>),
}

#[derive(Debug, Deserialize)]
struct NamedTemplate {
    name: String,
    template: String,
}

#[derive(Debug, Default, Deserialize)]
struct TokenizerConfig {
    #[serde(default)]
    chat_template: Option<TemplateField>,
    #[serde(default)]
    bos_token: Option<TokenText>,
    #[serde(default)]
    eos_token: Option<TokenText>,
    #[serde(default)]
    pad_token: Option<TokenText>,
}

#[derive(Debug, Default, Deserialize)]
struct GenerationConfig {
    #[serde(default)]
    eos_token_id: Option<TokenIds>,
}

#[derive(Debug, Deserialize)]
struct ShardIndex {
    weight_map: HashMap<String, String>,
}

fn load_files(f: &dyn Fetch, dtype: DType, device: &Device) -> Result<ModelFiles> {
    let need = |name: &str| -> Result<PathBuf> {
        f.fetch(name)?.ok_or_else(|| Error::Config(format!("{} has no `{name}`", f.describe())))
    };
    let config_path = need("config.json")?;
    let config: Config = read_json(&config_path)?;
    config.validate()?;
    let tok_cfg: TokenizerConfig = match f.fetch("tokenizer_config.json")? {
        Some(p) => read_json(&p)?,
        None => TokenizerConfig::default(),
    };
    let gen_cfg: GenerationConfig = match f.fetch("generation_config.json")? {
        Some(p) => read_json(&p)?,
        None => GenerationConfig::default(),
    };
    let special = SpecialTokens {
        bos: tok_cfg.bos_token.map(TokenText::text),
        eos: tok_cfg.eos_token.map(TokenText::text),
        pad: tok_cfg.pad_token.map(TokenText::text),
    };
    let mut stop: Vec<u32> = Vec::new();
    for ids in [&config.eos_token_id, &gen_cfg.eos_token_id].into_iter().flatten() {
        for id in ids.to_vec() {
            if !stop.contains(&id) {
                stop.push(id);
            }
        }
    }
    let tokenizer = Tokenizer::from_file(&need("tokenizer.json")?, special, stop)?;
    let chat_template = match tok_cfg.chat_template {
        None => None,
        Some(TemplateField::One(s)) => Some(s),
        Some(TemplateField::Named(list)) => {
            list.into_iter().find(|t| t.name == "default").map(|t| t.template)
        }
    };
    let shards: Vec<PathBuf> = match f.fetch("model.safetensors")? {
        Some(p) => vec![p],
        None => {
            let index: ShardIndex = read_json(&need("model.safetensors.index.json")?)?;
            let files: BTreeSet<String> = index.weight_map.into_values().collect();
            files.iter().map(|n| need(n)).collect::<Result<_>>()?
        }
    };
    let wanted: HashMap<String, Vec<usize>> = config.weight_shapes().into_iter().collect();
    let mut weights = HashMap::new();
    for shard in &shards {
        for (name, t) in candle_core::safetensors::load(shard, device)? {
            if wanted.contains_key(&name) {
                weights.insert(name, t.to_dtype(dtype)?);
            }
        }
    }
    Ok(ModelFiles { config, weights, tokenizer, chat_template })
}

/// Whether a model argument that names no existing file or directory was still meant as a
/// local path, so that it must not be sent to the Hub as a repository id (with a token, if
/// one is set): an absolute or explicitly relative path, a home-relative one, more than one
/// `/`, a backslash, a file extension of model files, or a first component that is an
/// existing local directory (`runs/typo` when `runs/` exists).
pub fn looks_local(arg: &str) -> bool {
    const EXTENSIONS: [&str; 5] = [".gguf", ".safetensors", ".bin", ".json", ".pt"];
    if arg.starts_with('/') || arg.starts_with("./") || arg.starts_with("../") || arg.starts_with('~') {
        return true;
    }
    if arg == "." || arg == ".." || arg.contains('\\') || arg.matches('/').count() > 1 {
        return true;
    }
    let repo = arg.split_once('@').map_or(arg, |(r, _)| r);
    if EXTENSIONS.iter().any(|e| repo.ends_with(e)) {
        return true;
    }
    match repo.split_once('/') {
        Some((first, _)) => Path::new(first).is_dir(),
        None => false,
    }
}

/// Reads the model at `source` with weights in `dtype` on `device`.
pub fn load(source: &ModelSource, hub: &HubOptions, dtype: DType, device: &Device) -> Result<ModelFiles> {
    match source {
        ModelSource::Dir(d) => load_files(&DirFetch(d.clone()), dtype, device),
        ModelSource::Hub { repo, .. } if looks_local(repo) => Err(Error::ModelNotFound(PathBuf::from(repo))),
        ModelSource::Hub { repo, revision } => {
            let repo = hf_hub::Repo::with_revision(
                repo.clone(),
                hf_hub::RepoType::Model,
                revision.clone().unwrap_or_else(|| "main".into()),
            );
            load_files(&HubFetch { repo, opts: hub.clone() }, dtype, device)
        }
        ModelSource::Gguf(p) => crate::gguf::load(p, dtype, device),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sources() {
        assert_eq!(
            ModelSource::parse("HuggingFaceTB/SmolLM2-135M-Instruct"),
            ModelSource::Hub { repo: "HuggingFaceTB/SmolLM2-135M-Instruct".into(), revision: None }
        );
        assert_eq!(
            ModelSource::parse("Qwen/Qwen2.5-0.5B@v1"),
            ModelSource::Hub { repo: "Qwen/Qwen2.5-0.5B".into(), revision: Some("v1".into()) }
        );
        assert_eq!(ModelSource::parse("/nowhere/m.gguf"), ModelSource::Gguf("/nowhere/m.gguf".into()));
        let d = tempfile::tempdir().unwrap();
        assert_eq!(ModelSource::parse(d.path().to_str().unwrap()), ModelSource::Dir(d.path().into()));
    }

    #[test]
    fn missing_local_paths_are_not_hub_ids() {
        let d = tempfile::tempdir().unwrap();
        let typo = format!("{}/typo", d.path().display());
        for arg in
            [typo.as_str(), "./model", "../m", "~/models/x", "a/b/c", "runs\\x", "org/name.safetensors"]
        {
            assert!(looks_local(arg), "{arg}");
            let err = load(&ModelSource::parse(arg), &HubOptions::default(), DType::F32, &Device::Cpu)
                .unwrap_err()
                .to_string();
            assert!(err.contains(arg) && err.contains("no model file or directory"), "{err}");
        }
        // `src/x` from this crate's directory: `src` exists here, so it is a local path.
        assert!(looks_local("src/typo"));
        for arg in ["HuggingFaceTB/SmolLM2-135M-Instruct", "Qwen/Qwen2.5-0.5B@v1", "gpt2"] {
            assert!(!looks_local(arg), "{arg}");
        }
    }

    #[test]
    fn hub_options_from_env() {
        let env = |k: &str| match k {
            "HF_HOME" => Some("/h".to_string()),
            "HF_HUB_OFFLINE" => Some("1".to_string()),
            _ => None,
        };
        let o = HubOptions::from_env(env);
        assert_eq!(o.cache_dir, Some(PathBuf::from("/h/hub")));
        assert!(o.offline && o.token.is_none());
    }
}
