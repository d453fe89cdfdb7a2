//! Which training problems a rescue samples, and how they are prompted (`rescue.stratum`,
//! `rescue.prompt`).

use mentor_core::Task;

use mentor_trainer::config::TrainConfig;
use mentor_trainer::{Error, Result};

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

fn tasks_of_family(cfg: &TrainConfig, tasks: Vec<Task>, family_seed: Option<u64>) -> Result<Vec<Task>> {
    use mentor_trainer::strata;
    let r = &cfg.rescue;
    let strata_of =
        |tasks: &[Task]| strata::of_dataset(tasks, cfg.data.kind.dataset().map_or("data", |d| d.name()));
    let generated = mentor_trainer::config::Generated::parse(&r.stratum);
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
    } else if let Some(g) = generated {
        // `arith|heldout <steps>-step seed <seed>`: as many generated problems as the rescue
        // may use (`heldout`: the templates apart from arith's, examples from their own).
        let g = g.map_err(|m| Error::Config {
            file: "[rescue]".into(),
            message: format!("`rescue.stratum` = {m}"),
        })?;
        let seed = family_seed.unwrap_or(g.seed.unwrap_or(cfg.run.seed));
        let n = if r.problems > 0 { r.problems } else { 10 * r.collapsed.max(1) };
        let s = strata::generated(g, seed, n, cfg.data.system_prompt.as_deref());
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
