//! Prompt and hint templates, kept in files rather than code.
//!
//! The defaults are `prompts/hints.toml`, `prompts/static_hints.toml` and `prompts/llm.toml`,
//! embedded at compile time. [`Prompts::load_dir`] reads a folder with the same files (each
//! optional) to override them without rebuilding.

use std::collections::BTreeMap;
use std::path::Path;

use mentor_core::{Domain, FailureCategory};
use serde::Deserialize;

use crate::{Error, Result};

const HINTS: &str = include_str!("../prompts/hints.toml");
const STATIC_HINTS: &str = include_str!("../prompts/static_hints.toml");
const LLM: &str = include_str!("../prompts/llm.toml");

/// `domain -> category -> level -> template`.
type HintTable = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

/// Generic hints of the static baseline, per domain.
#[derive(Debug, Clone, Deserialize)]
struct StaticTable {
    math: Vec<String>,
    code: Vec<String>,
}

/// Role prompts of the LLM backend.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LlmPrompts {
    pub diagnoser_system: String,
    pub diagnoser_user: String,
    pub tutor_system: String,
    pub tutor_user: String,
}

/// The loaded, validated template set.
#[derive(Debug, Clone)]
pub struct Prompts {
    hints: HintTable,
    statics: StaticTable,
    pub(crate) llm: LlmPrompts,
}

impl Default for Prompts {
    fn default() -> Self {
        // The embedded files are validated by the `embedded_prompts_are_valid` test.
        Self::parse(HINTS, STATIC_HINTS, LLM).unwrap_or_else(|e| panic!("embedded prompts are invalid: {e}"))
    }
}

impl Prompts {
    /// Parses the three files' contents and checks every template compiles.
    pub fn parse(hints: &str, statics: &str, llm: &str) -> Result<Self> {
        let hints: HintTable = toml::from_str(hints)
            .map_err(|e| Error::Prompts { file: "hints.toml".into(), message: e.to_string() })?;
        let statics: StaticTable = toml::from_str(statics)
            .map_err(|e| Error::Prompts { file: "static_hints.toml".into(), message: e.to_string() })?;
        let llm: LlmPrompts = toml::from_str(llm)
            .map_err(|e| Error::Prompts { file: "llm.toml".into(), message: e.to_string() })?;
        let env = minijinja::Environment::new();
        for (domain, cats) in &hints {
            if !cats.contains_key("unknown") {
                return Err(Error::Prompts {
                    file: "hints.toml".into(),
                    message: format!("[{domain}.unknown] is required as the fallback"),
                });
            }
            for (cat, levels) in cats {
                for (level, tpl) in levels {
                    if !matches!(level.as_str(), "1" | "2" | "3") {
                        return Err(Error::Prompts {
                            file: "hints.toml".into(),
                            message: format!("[{domain}.{cat}] level `{level}` is not 1, 2 or 3"),
                        });
                    }
                    env.template_from_str(tpl).map_err(|e| Error::Template {
                        name: format!("{domain}.{cat}.{level}"),
                        message: e.to_string(),
                    })?;
                }
            }
        }
        for (name, tpl) in [
            ("diagnoser_user", &llm.diagnoser_user),
            ("tutor_user", &llm.tutor_user),
            ("diagnoser_system", &llm.diagnoser_system),
            ("tutor_system", &llm.tutor_system),
        ] {
            env.template_from_str(tpl)
                .map_err(|e| Error::Template { name: format!("llm.{name}"), message: e.to_string() })?;
        }
        if statics.math.is_empty() || statics.code.is_empty() {
            return Err(Error::Prompts {
                file: "static_hints.toml".into(),
                message: "`math` and `code` need at least one hint each".into(),
            });
        }
        Ok(Self { hints, statics, llm })
    }

    /// Hint templates and a static hint library of the caller's (a task family with its own
    /// vocabulary, say), with the embedded LLM role prompts.
    pub fn with_hints(hints: &str, statics: &str) -> Result<Self> {
        Self::parse(hints, statics, LLM)
    }

    /// Loads `hints.toml`, `static_hints.toml` and `llm.toml` from `dir`; a missing file keeps
    /// the embedded default.
    pub fn load_dir(dir: &Path) -> Result<Self> {
        let read = |name: &str, default: &'static str| -> Result<String> {
            let path = dir.join(name);
            match std::fs::read_to_string(&path) {
                Ok(s) => Ok(s),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(default.to_string()),
                Err(source) => Err(Error::Io { path, source }),
            }
        };
        Self::parse(
            &read("hints.toml", HINTS)?,
            &read("static_hints.toml", STATIC_HINTS)?,
            &read("llm.toml", LLM)?,
        )
        .map_err(|e| match e {
            Error::Prompts { file, message } => {
                Error::Prompts { file: dir.join(file).display().to_string(), message }
            }
            other => other,
        })
    }

    /// The template for `domain`/`category` at the highest defined level ≤ `level`, falling
    /// back to the domain's `unknown` entry. Returns `(name, template, level used)`.
    pub(crate) fn hint_template(
        &self,
        domain: Domain,
        category: FailureCategory,
        level: u8,
    ) -> Option<(String, &str, u8)> {
        let cats = self.hints.get(domain.as_str())?;
        let cat = category_key(category);
        let pick = |name: &str| {
            let levels = cats.get(name)?;
            (1..=level)
                .rev()
                .find_map(|l| levels.get(&l.to_string()).map(|t| (name.to_string(), t.as_str(), l)))
        };
        pick(&cat).or_else(|| pick("unknown")).map(|(n, t, l)| (format!("{domain}.{n}.{l}"), t, l))
    }

    /// Renders a template with a serialisable context.
    pub(crate) fn render(&self, name: &str, template: &str, ctx: impl serde::Serialize) -> Result<String> {
        let env = minijinja::Environment::new();
        env.render_str(template, ctx)
            .map(|s| s.trim().to_string())
            .map_err(|e| Error::Template { name: name.to_string(), message: e.to_string() })
    }

    /// The `unknown` category's hint for `domain` at `level` (or the highest level below it),
    /// rendered with no evidence: what a task family's hinted examples look like when it
    /// has a fixed hint text (the embedded curriculum does).
    pub fn render_hint(&self, domain: Domain, level: u8) -> Option<String> {
        let (name, template, _) = self.hint_template(domain, FailureCategory::Unknown, level)?;
        self.render(&name, template, serde_json::json!({})).ok()
    }

    /// The static baseline's hints for a domain (`math` or `code`).
    pub fn static_hints(&self, domain: Domain) -> &[String] {
        match domain {
            Domain::Code => &self.statics.code,
            Domain::Math => &self.statics.math,
        }
    }
}

/// The snake_case name of a category, as used in the template files.
pub(crate) fn category_key(c: FailureCategory) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_prompts_are_valid() {
        let p = Prompts::parse(HINTS, STATIC_HINTS, LLM).unwrap();
        let (name, _, used) = p.hint_template(Domain::Math, FailureCategory::ArithmeticSlip, 3).unwrap();
        assert_eq!((name.as_str(), used), ("math.arithmetic_slip.3", 3));
        // resource_exhaustion defines levels 1-2 only: level 3 falls back to 2.
        let (_, _, used) = p.hint_template(Domain::Code, FailureCategory::ResourceExhaustion, 3).unwrap();
        assert_eq!(used, 2);
        // A category without an entry falls back to `unknown`.
        let (name, _, _) = p.hint_template(Domain::Math, FailureCategory::Timeout, 1).unwrap();
        assert_eq!(name, "math.unknown.1");
    }

    #[test]
    fn bad_files_are_named_errors() {
        let err = Prompts::parse("[math.unknown]\n1 = \"{{ oops\"\n", STATIC_HINTS, LLM).unwrap_err();
        assert!(matches!(err, Error::Template { ref name, .. } if name == "math.unknown.1"), "{err}");
        let err = Prompts::parse("[math.x]\n1 = \"a\"\n", STATIC_HINTS, LLM).unwrap_err();
        assert!(err.to_string().contains("math.unknown"), "{err}");
        let err = Prompts::parse("[math.unknown]\n7 = \"a\"\n", STATIC_HINTS, LLM).unwrap_err();
        assert!(err.to_string().contains("level `7`"), "{err}");
        let dir = std::env::temp_dir().join(format!("mentor-prompts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("static_hints.toml"), "math = []\ncode = [\"x\"]\n").unwrap();
        let err = Prompts::load_dir(&dir).unwrap_err().to_string();
        assert!(err.contains(&dir.display().to_string()) && err.contains("at least one"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
