//! `--resume`: which settings may differ between a run and its continuation.

use super::overrides::flatten;
use super::TrainConfig;

/// Keys that may differ between a run and its `--resume`: how long it runs, how often it
/// checkpoints, whether it shows progress, and where its directory is spelled from.
pub const RESUMABLE_KEYS: &[&str] =
    &["run.steps", "run.checkpoint_every", "run.progress", "run.output_dir", "run.log_completions_every"];

impl TrainConfig {
    /// The dotted keys in which `self` differs from `saved` (the configuration a run was
    /// started with), leaving out [`RESUMABLE_KEYS`]: what `--resume` must refuse, since a run
    /// continued under another arm, seed, model or schedule would be labelled as one run.
    pub fn resume_conflicts(&self, saved: &TrainConfig) -> Vec<String> {
        let leaves = |cfg: &TrainConfig| {
            let mut out = Vec::new();
            match toml::Value::try_from(cfg) {
                Ok(v) => flatten("", &v, &mut out),
                // Not expected (the run wrote its config.toml the same way); refuse plainly.
                Err(e) => {
                    out.push(("(the whole configuration)".to_string(), toml::Value::String(e.to_string())))
                }
            }
            out.into_iter().collect::<std::collections::BTreeMap<String, toml::Value>>()
        };
        let (now, then) = (leaves(self), leaves(saved));
        let mut keys: Vec<String> = now
            .keys()
            .chain(then.keys())
            .filter(|k| !RESUMABLE_KEYS.contains(&k.as_str()) && now.get(*k) != then.get(*k))
            .cloned()
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}
