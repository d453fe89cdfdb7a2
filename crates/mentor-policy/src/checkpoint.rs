//! Saving a policy as an HF-style directory, atomically.
//!
//! The directory holds `model.safetensors`, `config.json`, `tokenizer.json` and
//! `tokenizer_config.json` (chat template and special tokens), so it loads back with
//! [`crate::ModelSource::Dir`] and with transformers. Files are written into a temporary
//! sibling directory which is then renamed into place: a crash leaves either the old
//! checkpoint or the new one, never a mix.

use std::collections::HashMap;
use std::path::Path;

use candle_core::Tensor;
use serde_json::json;

use crate::config::TokenIds;
use crate::error::{Error, Result};
use crate::policy::Policy;

impl Policy {
    /// Writes the checkpoint directory `dir` (replacing an existing one).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::env::current_dir().map_err(Error::io("resolve", dir))?,
        };
        std::fs::create_dir_all(&parent).map_err(Error::io("create", &parent))?;
        let tmp = tempfile::Builder::new()
            .prefix(".ckpt-tmp-")
            .tempdir_in(&parent)
            .map_err(Error::io("create", &parent))?;
        let weights: HashMap<String, Tensor> = self
            .varmap()
            .data()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), v.as_tensor().detach()))
            .collect();
        candle_core::safetensors::save(&weights, tmp.path().join("model.safetensors"))?;
        let mut config = self.config().clone();
        let stops = self.tokenizer().stop_ids().to_vec();
        if !stops.is_empty() {
            config.eos_token_id = Some(TokenIds::Many(stops));
        }
        write_json(&tmp.path().join("config.json"), &serde_json::to_value(&config).map_err(json_err(dir))?)?;
        self.tokenizer().save(&tmp.path().join("tokenizer.json"))?;
        let special = self.tokenizer().special_tokens();
        let tok_cfg = json!({
            "chat_template": self.chat_template().map(|t| t.source()),
            "bos_token": special.bos,
            "eos_token": special.eos,
            "pad_token": special.pad,
        });
        write_json(&tmp.path().join("tokenizer_config.json"), &tok_cfg)?;
        let staged = tmp.keep();
        if dir.exists() {
            let old = tempfile::Builder::new()
                .prefix(".ckpt-old-")
                .tempdir_in(&parent)
                .map_err(Error::io("create", &parent))?;
            let old = old.keep();
            let backup = old.join("previous");
            std::fs::rename(dir, &backup).map_err(Error::io("rename", dir))?;
            std::fs::rename(&staged, dir).map_err(Error::io("rename", &staged))?;
            std::fs::remove_dir_all(&old).map_err(Error::io("remove", &old))?;
        } else {
            std::fs::rename(&staged, dir).map_err(Error::io("rename", &staged))?;
        }
        Ok(())
    }
}

fn json_err(dir: &Path) -> impl FnOnce(serde_json::Error) -> Error + '_ {
    move |source| Error::Json { path: dir.to_path_buf(), source }
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(v).map_err(json_err(path))?;
    std::fs::write(path, text).map_err(Error::io("write", path))
}
