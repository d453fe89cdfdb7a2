//! The override engine: `--set key=value` on the TOML document, and TRL's `GRPOConfig` names
//! ([`ALIASES`]) moved to the settings they are.

use crate::error::{Error, Result};

/// `(dotted key, leaf value)` of every leaf of `v` (arrays are leaves).
pub(super) fn flatten(prefix: &str, v: &toml::Value, out: &mut Vec<(String, toml::Value)>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&key, v, out);
            }
        }
        leaf => out.push((prefix.to_string(), leaf.clone())),
    }
}

/// TRL's `GRPOConfig` names accepted in `[grpo]`, and the setting each one is: a key that is
/// accepted is honoured (before, `grpo.num_generations` was silently replaced by
/// `sampling.group_size`).
pub const ALIASES: &[(&str, &str)] = &[
    ("grpo.num_generations", "sampling.group_size"),
    ("grpo.max_completion_length", "sampling.max_new_tokens"),
    ("grpo.temperature", "sampling.temperature"),
    ("grpo.top_p", "sampling.top_p"),
    ("grpo.top_k", "sampling.top_k"),
    ("grpo.max_steps", "run.steps"),
    ("grpo.save_steps", "run.checkpoint_every"),
    ("grpo.eval_steps", "eval.every"),
];

/// The setting `key` is another name of, when it is one of [`ALIASES`].
pub(super) fn alias_of(key: &str) -> Option<&'static str> {
    ALIASES.iter().find(|(alias, _)| *alias == key).map(|(_, canonical)| *canonical)
}

pub(super) fn get_path<'a>(doc: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let mut parts = key.split('.');
    let mut v = doc.get(parts.next()?)?;
    for p in parts {
        v = v.as_table()?.get(p)?;
    }
    Some(v)
}

/// Moves every alias in `doc` to its setting. Both names with different values is an error;
/// the same value twice (as in a `config.toml` a run wrote) is one setting.
pub(super) fn resolve_aliases(doc: &mut toml::Table) -> std::result::Result<(), String> {
    for (alias, canonical) in ALIASES {
        let (section, field) = alias.split_once('.').unwrap_or(("", alias));
        let Some(value) = doc.get(section).and_then(|s| s.as_table()).and_then(|t| t.get(field)).cloned()
        else {
            continue;
        };
        if let Some(existing) = get_path(doc, canonical) {
            if existing != &value {
                return Err(format!(
                    "`{alias}` = {value} and `{canonical}` = {existing} name the same setting; give one"
                ));
            }
        }
        if let Some(t) = doc.get_mut(section).and_then(|s| s.as_table_mut()) {
            t.remove(field);
        }
        let (c_section, c_field) = canonical.split_once('.').unwrap_or(("", canonical));
        let entry =
            doc.entry(c_section.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let Some(t) = entry.as_table_mut() {
            t.insert(c_field.to_string(), value);
        }
    }
    Ok(())
}

/// Applies one `a.b.c=value` override to the TOML document.
pub(super) fn apply_set(doc: &mut toml::Table, set: &str) -> Result<()> {
    let bad = |message: String| Error::Config { file: "--set".into(), message };
    let (key, raw) = set.split_once('=').ok_or_else(|| bad(format!("`{set}` is not key=value")))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(bad(format!("`{key}` is not a dotted key")));
    }
    // A TOML value if it parses as one (numbers, booleans, arrays, quoted strings), else the
    // raw text as a string.
    let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.trim().to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    let mut table = doc;
    for part in &parts[..parts.len() - 1] {
        let entry =
            table.entry((*part).to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        table = entry.as_table_mut().ok_or_else(|| bad(format!("`{part}` in `{key}` is not a table")))?;
    }
    table.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}
