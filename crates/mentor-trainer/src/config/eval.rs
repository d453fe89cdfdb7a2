//! `[eval]`: periodic evaluation without hints.

use serde::{Deserialize, Serialize};

use super::invalid;

/// `[eval]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvalSection {
    /// Evaluate every this many steps (0: only before the first and after the last step).
    pub every: usize,
    /// Held-out problems per level (curriculum).
    pub problems: usize,
    /// Curriculum levels to evaluate (empty: the schedule's levels).
    pub levels: Vec<u32>,
    /// The k of pass@k (0: greedy pass@1 only).
    pub k: usize,
    /// Completions drawn per problem for pass@k and mean@k (0: `k`). pass@k is the unbiased
    /// estimator of Chen et al. (2021), so `samples > k` lowers its variance.
    pub samples: usize,
    /// Temperature of the pass@k samples.
    pub temperature: f64,
    /// Named evaluation sets, each evaluated and reported apart (`[[eval.sets]]`), besides
    /// `data.eval`: e.g. the training templates held out, templates never trained on, a GSM8K
    /// slice.
    pub sets: Vec<NamedSet>,
}

/// `[[eval.sets]]`: a named evaluation set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedSet {
    /// The name in `eval.jsonl` and reports (`same_templates`, `new_templates`, `gsm8k`).
    pub name: String,
    /// Its tasks, as `data.train` names them: `dataset:split`, a file, or generated problems
    /// (`heldout 2-step seed 900`). Generated problems that are also training problems (by
    /// question text) are left out before the first `n` are taken.
    pub tasks: String,
    /// Problems in the set (the first `n`).
    pub n: usize,
    /// pass@k (when `eval.k > 0`) on the first this many problems only (absent: all `n`; 0:
    /// none, e.g. for a far-transfer slice); greedy pass@1 is on all `n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passk_n: Option<usize>,
}

impl Default for EvalSection {
    fn default() -> Self {
        Self { every: 10, problems: 200, levels: vec![], k: 0, samples: 0, temperature: 1.0, sets: vec![] }
    }
}

impl EvalSection {
    /// Enough draws for pass@k; named sets with distinct names, a task source and a size.
    pub fn validate(&self) -> Result<(), String> {
        let mut names = std::collections::BTreeSet::new();
        for (i, set) in self.sets.iter().enumerate() {
            let field = format!("eval.sets[{i}]");
            if set.name.trim().is_empty() || !names.insert(set.name.as_str()) {
                return invalid(&format!("{field}.name"), format!("`{}`: empty or used twice", set.name));
            }
            if let Err(e) = super::TaskSpec::parse(&set.tasks) {
                return invalid(&format!("{field}.tasks"), e);
            }
            if set.n == 0 {
                return invalid(&format!("{field}.n"), "0 (give the number of problems)");
            }
            if let Some(m) = set.passk_n.filter(|&m| m > set.n) {
                return invalid(&format!("{field}.passk_n"), format!("{m}: more than n = {}", set.n));
            }
        }
        if self.samples > 0 && self.samples < self.k {
            return invalid(
                "eval.samples",
                format!("{} is fewer than eval.k = {} (pass@k needs at least k draws)", self.samples, self.k),
            );
        }
        Ok(())
    }
}
