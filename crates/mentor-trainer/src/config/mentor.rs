//! `[mentor]`: the mentor of intervening arms.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::invalid;

/// Mentor backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Offline, deterministic diagnosis and templates.
    Rules,
    /// An OpenAI-compatible chat endpoint (falls back to rules on any failure).
    Llm,
    /// The same role prompts answered by an in-process model: `mentor.model = "self"` (the
    /// learner as its own mentor, weights updating as it trains) or a model source (a
    /// directory, a .gguf, a Hub id, `smollm2`). Falls back to rules like `llm`.
    Local,
}

/// `[mentor]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MentorSection {
    /// Backend.
    pub backend: Backend,
    /// Hint templates: `default` (the embedded ones), `curriculum` (short texts in the tiny
    /// model's alphabet), or a directory holding `hints.toml` / `static_hints.toml` /
    /// `llm.toml`.
    pub prompts: PromptSet,
    /// `llm`: base URL including the version path.
    pub base_url: String,
    /// `llm`: the model name sent to the endpoint (`default`: the string `default`);
    /// `local`: `self` (the learner) or a model source (directory, .gguf, Hub id, `smollm2`).
    pub model: MentorModel,
    /// `llm`: environment variable holding the API key (none when unset).
    pub api_key_env: Option<String>,
    /// `llm`: per-request timeout in seconds.
    pub timeout_secs: f64,
    /// `llm`: retries after the first try (transport errors, 429, 5xx); then rules.
    pub retries: u32,
    /// `llm`: most requests in flight at once.
    pub concurrency: usize,
    /// Mentor sampling temperature (unset: 0.2 for `llm`, 0 (greedy) for `local`).
    pub temperature: Option<f64>,
    /// Longest mentor reply in tokens (unset: 512 for `llm`, 256 for `local`).
    pub max_tokens: Option<usize>,
    /// Guard: longest hint in characters.
    pub max_hint_chars: usize,
    /// Guard: largest share of the reference solution's non-trivial lines a code hint may
    /// contain.
    pub max_code_overlap: f64,
}

impl Default for MentorSection {
    fn default() -> Self {
        Self {
            backend: Backend::Rules,
            prompts: PromptSet::Default,
            base_url: "http://127.0.0.1:8080/v1".into(),
            model: MentorModel::Default,
            api_key_env: None,
            timeout_secs: 60.0,
            retries: 2,
            concurrency: 4,
            temperature: None,
            max_tokens: None,
            max_hint_chars: 2000,
            max_code_overlap: 0.5,
        }
    }
}

/// `mentor.prompts`: which hint templates (spelled as a string in TOML).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum PromptSet {
    /// `default`: the embedded templates.
    Default,
    /// `curriculum`: short texts in the tiny model's alphabet.
    Curriculum,
    /// A directory holding `hints.toml` / `static_hints.toml` / `llm.toml`.
    Dir(PathBuf),
}

impl From<String> for PromptSet {
    fn from(s: String) -> Self {
        match s.as_str() {
            "default" => PromptSet::Default,
            "curriculum" => PromptSet::Curriculum,
            _ => PromptSet::Dir(PathBuf::from(s)),
        }
    }
}

impl From<PromptSet> for String {
    fn from(p: PromptSet) -> Self {
        match p {
            PromptSet::Default => "default".into(),
            PromptSet::Curriculum => "curriculum".into(),
            PromptSet::Dir(d) => d.display().to_string(),
        }
    }
}

/// `mentor.model` (spelled as a string in TOML).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum MentorModel {
    /// `default`: the endpoint's default model (`llm`); not a model for `local`.
    Default,
    /// `self`: the learner, its weights updating as it trains (`local`).
    Learner,
    /// A model name (`llm`) or a model source (`local`).
    Named(String),
}

impl From<String> for MentorModel {
    fn from(s: String) -> Self {
        match s.as_str() {
            "default" => MentorModel::Default,
            "self" => MentorModel::Learner,
            _ => MentorModel::Named(s),
        }
    }
}

impl From<MentorModel> for String {
    fn from(m: MentorModel) -> Self {
        match m {
            MentorModel::Default => "default".into(),
            MentorModel::Learner => "self".into(),
            MentorModel::Named(s) => s,
        }
    }
}

impl MentorSection {
    /// The backend and model agree; timeouts, concurrency, temperature, token cap and the
    /// code-overlap limit in range.
    pub fn validate(&self) -> Result<(), String> {
        if self.backend == Backend::Local && self.model == MentorModel::Default {
            return invalid(
                "mentor.model",
                "the `local` backend needs `self` (the learner) or a model source (directory, .gguf, Hub id, `smollm2`)",
            );
        }
        if self.backend == Backend::Llm && self.model == MentorModel::Learner {
            return invalid("mentor.model", "`self` (the learner) needs `mentor.backend = \"local\"`");
        }
        if self.backend == Backend::Llm && !(self.timeout_secs > 0.0 && self.timeout_secs.is_finite()) {
            return invalid(
                "mentor.timeout_secs",
                format!("{} (must be a finite number > 0)", self.timeout_secs),
            );
        }
        if self.concurrency == 0 {
            return invalid("mentor.concurrency", "must be > 0");
        }
        if let Some(t) = self.temperature {
            if !(t >= 0.0 && t.is_finite()) {
                return invalid("mentor.temperature", format!("{t} (must be a finite number >= 0)"));
            }
        }
        if self.max_tokens == Some(0) {
            return invalid("mentor.max_tokens", "must be > 0");
        }
        if !(0.0..=1.0).contains(&self.max_code_overlap) {
            return invalid("mentor.max_code_overlap", format!("{} (allowed: 0..=1)", self.max_code_overlap));
        }
        Ok(())
    }
}
