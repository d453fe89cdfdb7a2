//! Run checkpoints: everything a run needs to continue bit for bit — the policy's weights,
//! the optimizer's moments and step, the strategy's state (collapse window, hint memory) and
//! the step to resume at.
//!
//! Layout under `<run>/checkpoints/`: one directory per checkpoint (`step-000040/` holding
//! `policy/`, `optimizer.safetensors` and `state.json`), and `latest`, naming the newest.
//! A checkpoint is assembled in a temporary directory and renamed into place, and `latest`
//! is replaced atomically after it, so a crash or Ctrl-C at any moment leaves the previous
//! checkpoint intact. `state.json` records the SHA-256 of every file; loading re-checks them,
//! so a truncated or altered checkpoint is reported by name instead of resuming wrongly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use mentor_grpo::OptimizerState;
use mentor_integration::PluginState;
use mentor_policy::Policy;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::jsonl::{write_atomic, write_json};

/// Format version written in `state.json`.
const FORMAT: u32 = 1;
/// Checkpoints kept (older ones are deleted after a new one is in place).
const KEEP: usize = 2;

/// The non-tensor state of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointState {
    /// Format version.
    pub format: u32,
    /// The next step to run.
    pub step: usize,
    /// Strategy state.
    pub plugin: PluginState,
    /// Optimizer steps taken.
    pub optimizer_steps: usize,
    /// SHA-256 of each file, by path relative to the checkpoint directory.
    pub files: BTreeMap<String, String>,
}

/// A loaded checkpoint.
pub struct Loaded {
    /// The checkpoint directory.
    pub dir: PathBuf,
    /// The policy, trainable.
    pub policy: Policy,
    /// The optimizer state.
    pub optimizer: OptimizerState,
    /// The rest.
    pub state: CheckpointState,
}

fn checkpoints(run: &Path) -> PathBuf {
    run.join("checkpoints")
}

/// Removes the checkpoints of a finished run (they only serve to resume it), leaving its
/// `final/` model and its records. Refuses a run without a `final/` model: one that has not
/// finished still needs them. Returns whether there were any.
pub fn remove_finished(run: &Path) -> Result<bool> {
    let dir = checkpoints(run);
    if !run.join("final").is_dir() {
        return Err(Error::Checkpoint {
            path: dir,
            message: "kept: the run has no final/ model, so it has not finished and these resume it".into(),
        });
    }
    if !dir.is_dir() {
        return Ok(false);
    }
    std::fs::remove_dir_all(&dir).map_err(Error::io(&dir))?;
    Ok(true)
}

/// The file's SHA-256, read in a stream: the optimizer's state is as large as two copies of
/// the weights, and read whole it would be the run's peak memory.
fn sha256_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(Error::io(path))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(Error::io(path))?;
    Ok(format!("{:x}", hasher.finalize()))
}

fn files_under(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(Error::io(dir))? {
        let path = entry.map_err(Error::io(dir))?.path();
        if path.is_dir() {
            files_under(root, &path, out)?;
        } else if path.strip_prefix(root).is_ok() {
            out.push(path);
        }
    }
    Ok(())
}

/// Saves a checkpoint of `policy`, `optimizer` and `plugin` for resuming at `step`.
pub fn save(
    run: &Path,
    step: usize,
    policy: &Policy,
    optimizer: &OptimizerState,
    plugin: PluginState,
) -> Result<PathBuf> {
    let root = checkpoints(run);
    std::fs::create_dir_all(&root).map_err(Error::io(&root))?;
    let tmp = tempfile::Builder::new().prefix(".partial-").tempdir_in(&root).map_err(Error::io(&root))?;
    policy.save(&tmp.path().join("policy"))?;
    let mut tensors: BTreeMap<String, Tensor> = BTreeMap::new();
    for (i, (m, v)) in optimizer.first_moments.iter().zip(&optimizer.second_moments).enumerate() {
        tensors.insert(format!("m.{i:05}"), m.clone());
        tensors.insert(format!("v.{i:05}"), v.clone());
    }
    let opt_path = tmp.path().join("optimizer.safetensors");
    let tensors: std::collections::HashMap<String, Tensor> = tensors.into_iter().collect();
    candle_core::safetensors::save(&tensors, &opt_path)?;
    let mut listed = Vec::new();
    files_under(tmp.path(), tmp.path(), &mut listed)?;
    let mut files = BTreeMap::new();
    for f in listed {
        let rel = f.strip_prefix(tmp.path()).map_err(|_| Error::Missing("path outside checkpoint".into()))?;
        files.insert(rel.to_string_lossy().replace('\\', "/"), sha256_file(&f)?);
    }
    let state = CheckpointState { format: FORMAT, step, plugin, optimizer_steps: optimizer.step, files };
    write_json(&tmp.path().join("state.json"), &state)?;
    let name = format!("step-{step:06}");
    let dest = root.join(&name);
    if dest.exists() {
        std::fs::remove_dir_all(&dest).map_err(Error::io(&dest))?;
    }
    let staged = tmp.keep();
    std::fs::rename(&staged, &dest).map_err(Error::io(&dest))?;
    write_atomic(&root.join("latest"), name.as_bytes())?;
    prune(&root, &name)?;
    Ok(dest)
}

/// Deletes all but the newest [`KEEP`] checkpoints (never `current`) and stale partial ones.
fn prune(root: &Path, current: &str) -> Result<()> {
    let mut steps: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(root).map_err(Error::io(root))? {
        let entry = entry.map_err(Error::io(root))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with(".partial-") {
            let _ = std::fs::remove_dir_all(entry.path());
        } else if name.starts_with("step-") && entry.path().is_dir() {
            steps.push(name);
        }
    }
    steps.sort();
    let n = steps.len();
    for name in steps.into_iter().take(n.saturating_sub(KEEP)) {
        if name != current {
            let p = root.join(&name);
            std::fs::remove_dir_all(&p).map_err(Error::io(&p))?;
        }
    }
    Ok(())
}

/// The newest checkpoint of `run`, if any.
pub fn latest(run: &Path) -> Result<Option<PathBuf>> {
    let pointer = checkpoints(run).join("latest");
    match std::fs::read_to_string(&pointer) {
        Ok(name) => {
            let name = name.trim();
            if name.is_empty() || name.contains('/') || name.contains("..") {
                return Err(Error::Checkpoint {
                    path: pointer,
                    message: format!("`{name}` is not a checkpoint name"),
                });
            }
            Ok(Some(checkpoints(run).join(name)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Io { path: pointer, source: e }),
    }
}

/// Loads and verifies the checkpoint in `dir`.
pub fn load(dir: &Path) -> Result<Loaded> {
    let bad = |message: String| Error::Checkpoint { path: dir.to_path_buf(), message };
    if !dir.is_dir() {
        return Err(bad("is missing".into()));
    }
    let state_path = dir.join("state.json");
    let text = std::fs::read_to_string(&state_path)
        .map_err(|e| bad(format!("state.json cannot be read ({e}): the checkpoint is partial")))?;
    let state: CheckpointState =
        serde_json::from_str(&text).map_err(|e| bad(format!("state.json is corrupt: {e}")))?;
    if state.format != FORMAT {
        return Err(bad(format!("format {} (this build reads {FORMAT})", state.format)));
    }
    let mut present = Vec::new();
    files_under(dir, dir, &mut present)?;
    for (rel, want) in &state.files {
        let path = dir.join(rel);
        if !path.is_file() {
            return Err(bad(format!("{rel} is missing: the checkpoint is partial")));
        }
        let got = sha256_file(&path)?;
        if &got != want {
            return Err(bad(format!("{rel} is corrupt (sha256 {got}, recorded {want})")));
        }
    }
    for p in present {
        let rel = p.strip_prefix(dir).map(|r| r.to_string_lossy().replace('\\', "/")).unwrap_or_default();
        if rel != "state.json" && !state.files.contains_key(&rel) {
            return Err(bad(format!("{rel} is not recorded in state.json")));
        }
    }
    let policy = crate::policy::load_dir(dir.join("policy"))?;
    let opt_path = dir.join("optimizer.safetensors");
    let tensors = candle_core::safetensors::load(&opt_path, &Device::Cpu)?;
    let n = tensors.len() / 2;
    let mut first_moments = Vec::with_capacity(n);
    let mut second_moments = Vec::with_capacity(n);
    for i in 0..n {
        let get = |k: String| {
            tensors.get(&k).cloned().ok_or_else(|| bad(format!("optimizer.safetensors lacks {k}")))
        };
        first_moments.push(get(format!("m.{i:05}"))?);
        second_moments.push(get(format!("v.{i:05}"))?);
    }
    let optimizer = OptimizerState { step: state.optimizer_steps, first_moments, second_moments };
    Ok(Loaded { dir: dir.to_path_buf(), policy, optimizer, state })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_finished_runs_checkpoints_are_removed() {
        let run = tempfile::tempdir().unwrap();
        let step = checkpoints(run.path()).join("step-000010");
        std::fs::create_dir_all(&step).unwrap();
        std::fs::write(step.join("model.safetensors"), b"weights").unwrap();
        // Not finished: kept, and the error says why.
        let e = remove_finished(run.path()).unwrap_err().to_string();
        assert!(e.contains("not finished"), "{e}");
        assert!(step.is_dir());
        // Finished: removed, the final model kept.
        std::fs::create_dir_all(run.path().join("final")).unwrap();
        assert!(remove_finished(run.path()).unwrap());
        assert!(!checkpoints(run.path()).exists() && run.path().join("final").is_dir());
        assert!(!remove_finished(run.path()).unwrap());
    }
}
