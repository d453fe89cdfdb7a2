//! Which training problems a rescue samples, and how they are prompted (`rescue.stratum`,
//! `rescue.prompt`).

use mentor_core::Task;

use crate::config::TrainConfig;
use crate::error::{Error, Result};

/// The training problems of the configured regime: those of `rescue.stratum` (a stratum of
/// `mentor probe`, the generated arithmetic problems included), each prompt in
/// `rescue.prompt`'s style.
pub(super) fn tasks(cfg: &TrainConfig, tasks: Vec<Task>) -> Result<Vec<Task>> {
    tasks_of_family(cfg, tasks, None)
}

/// The calibration set of `prior_step`: the configured generated stratum with the family seed
/// `rescue.calibration_seed` (never a test problem's seed).
pub(super) fn calibration(cfg: &TrainConfig) -> Result<Vec<Task>> {
    tasks_of_family(cfg, Vec::new(), Some(cfg.rescue.calibration_seed))
}

/// A stratum's steps: one count, or a range (`2-4`).
fn steps_of(text: &str) -> Option<(usize, usize)> {
    match text.split_once('-') {
        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)).filter(|(a, b)| a <= b),
        None => text.parse().ok().map(|n| (n, n)),
    }
}

fn tasks_of_family(cfg: &TrainConfig, tasks: Vec<Task>, family_seed: Option<u64>) -> Result<Vec<Task>> {
    use crate::probe::strata;
    let r = &cfg.rescue;
    let strata_of =
        |tasks: &[Task]| strata::of_dataset(tasks, cfg.data.kind.dataset().map_or("data", |d| d.name()));
    let generated =
        ["arith ", "heldout "].into_iter().find_map(|f| Some((f.trim_end(), r.stratum.strip_prefix(f)?)));
    if family_seed.is_some() && generated.is_none() {
        return Err(Error::Config {
            file: "[rescue]".into(),
            message: format!(
                "`prior_step` calibrates on a generated stratum; `rescue.stratum` = \"{}\" is not one",
                r.stratum
            ),
        });
    }
    let (chosen, examples) = if r.stratum.is_empty() {
        let examples = strata_of(&tasks).first().map(|s| s.examples.clone()).unwrap_or_default();
        (tasks, examples)
    } else if let Some((family, rest)) = generated {
        // `arith|heldout <steps>-step seed <seed>`: as many generated problems as the rescue
        // may use (`heldout`: the templates apart from arith's, examples from their own).
        let parsed = rest.split_once("-step seed ").and_then(|(steps, seed)| {
            let seed = if seed == "*" { Some(cfg.run.seed) } else { seed.parse::<u64>().ok() };
            Some((steps_of(steps)?, seed?))
        });
        let parsed = parsed.filter(|((lo, hi), _)| family == "heldout" || lo == hi);
        let Some((steps, seed)) = parsed else {
            return Err(Error::Config {
                file: "[rescue]".into(),
                message: format!(
                    "`rescue.stratum` = \"{}\": expected `{family} <steps>-step seed <seed>`{}",
                    r.stratum,
                    if family == "heldout" { " (steps `2` or `2-4`, seed a number or `*`)" } else { "" }
                ),
            });
        };
        let seed = family_seed.unwrap_or(seed);
        let n = if r.problems > 0 { r.problems } else { 10 * r.collapsed.max(1) };
        let system = cfg.data.system_prompt.as_deref();
        let s = if family == "arith" {
            strata::arith(seed, steps.0, n, system)
        } else {
            strata::heldout(seed, steps, n, system)
        };
        (s.tasks, s.examples)
    } else {
        let all = strata_of(&tasks);
        let names: Vec<String> = all.iter().map(|s| s.name.clone()).collect();
        let Some(s) = all.into_iter().find(|s| s.name == r.stratum) else {
            return Err(Error::Config {
                file: "[rescue]".into(),
                message: format!(
                    "`rescue.stratum` = \"{}\" is not a stratum of this data (allowed: {}, or `arith|heldout <steps>-step seed <seed>`)",
                    r.stratum,
                    names.join(", ")
                ),
            });
        };
        (s.tasks, s.examples)
    };
    Ok(chosen
        .into_iter()
        .map(|mut t| {
            t.prompt = strata::prompt(&t, r.prompt, &examples);
            t
        })
        .collect())
}
