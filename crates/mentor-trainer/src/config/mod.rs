//! The run configuration: one TOML file (see `configs/*.toml`) with `--set key=value`
//! overrides, validated up front so a mistake is reported before any work starts, naming the
//! field and the values it allows.
//!
//! One module per section (`[run]` in `run.rs`, ...; `[curriculum]` lives with the curriculum
//! in `mentor_tasks::curriculum`), each with the checks that need only its own fields (`validate`);
//! this module holds the whole [`TrainConfig`], loading and the checks that span sections;
//! `overrides.rs` is the `--set` engine and TRL's other names, `resume.rs` what a `--resume`
//! may change.

use std::path::{Path, PathBuf};

use mentor_grpo::GrpoConfig;
use serde::{Deserialize, Serialize};

mod data;
mod eval;
mod mentor;
mod model;
mod overrides;
mod pretrain;
mod rescue;
mod resume;
mod run;
mod sampling;
mod strategy;

pub use data::{CodeReward, DataKind, DataSection, Family, Generated, TaskSpec};
pub use eval::EvalSection;
pub use mentor::{Backend, MentorModel, MentorSection, PromptSet};
pub use mentor_tasks::curriculum::{CurriculumSection, ReferenceStyle};
pub use model::{ModelChoice, ModelSection};
pub use overrides::ALIASES;
use overrides::{alias_of, apply_set, flatten, get_path, resolve_aliases};
pub use pretrain::PretrainSection;
pub use rescue::{PromptStyle, RescueArm, RescueSection};
pub use resume::RESUMABLE_KEYS;
pub use run::RunSection;
pub use sampling::SamplingSection;
pub use strategy::{Arm, StrategySection};

use crate::error::{Error, Result};
use mentor_tasks::curriculum::MAX_LEVEL;

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Name, seed, length, output.
    pub run: RunSection,
    /// The policy.
    pub model: ModelSection,
    /// Where tasks come from.
    pub data: DataSection,
    /// The synthetic curriculum (when `data.kind = "curriculum"`).
    pub curriculum: CurriculumSection,
    /// Supervised pretraining of a from-scratch model before RL (`model.source = "tiny"`).
    pub pretrain: PretrainSection,
    /// Rollouts.
    pub sampling: SamplingSection,
    /// The GRPO update (TRL's `GRPOConfig` names). TRL's `num_generations`,
    /// `max_completion_length`, `temperature`, `max_steps`, `save_steps` and `eval_steps`
    /// are accepted here as other names of `sampling.group_size`, `sampling.max_new_tokens`,
    /// `sampling.temperature`, `run.steps`, `run.checkpoint_every` and `eval.every`
    /// ([`ALIASES`]); one setting under both names with different values is an error.
    pub grpo: GrpoConfig,
    /// The arm.
    pub strategy: StrategySection,
    /// The mentor of intervening arms.
    pub mentor: MentorSection,
    /// Periodic evaluation without hints.
    pub eval: EvalSection,
    /// What `mentor rescue` measures (ignored by training; left out of a run's `config.toml`
    /// when it has its defaults).
    #[serde(skip_serializing_if = "RescueSection::is_default")]
    pub rescue: RescueSection,
}

/// The presets shipped with the binary: `(name, TOML)`.
pub const PRESETS: &[(&str, &str)] = &[
    ("demo", include_str!("../../configs/demo.toml")),
    ("gsm8k-smollm2", include_str!("../../configs/gsm8k-smollm2.toml")),
    ("mbpp-smollm2", include_str!("../../configs/mbpp-smollm2.toml")),
    ("math500-eval", include_str!("../../configs/math500-eval.toml")),
    ("rescue-gsm8k-smollm2", include_str!("../../configs/rescue-gsm8k-smollm2.toml")),
    ("rescue-mbpp-smollm2", include_str!("../../configs/rescue-mbpp-smollm2.toml")),
    ("rescue-arith-smollm2", include_str!("../../configs/rescue-arith-smollm2.toml")),
    ("rescue-heldout-smollm2", include_str!("../../configs/rescue-heldout-smollm2.toml")),
    ("edge-smollm2", include_str!("../../configs/edge-smollm2.toml")),
];

impl TrainConfig {
    /// Reads `path` (or a preset name such as `demo`), applies `key=value` overrides
    /// (dotted keys, TOML values; a bare word is taken as a string) and validates.
    pub fn load(path: &str, sets: &[String]) -> Result<Self> {
        let (label, text) = match PRESETS.iter().find(|(n, _)| *n == path) {
            Some((name, text)) => (format!("preset `{name}`"), (*text).to_string()),
            None => {
                let text = std::fs::read_to_string(path).map_err(|source| {
                    if source.kind() == std::io::ErrorKind::NotFound {
                        let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
                        Error::Config {
                            file: path.to_string(),
                            message: format!(
                                "no such file, and not a preset (presets: {})",
                                names.join(", ")
                            ),
                        }
                    } else {
                        Error::Io { path: PathBuf::from(path), source }
                    }
                })?;
                (path.to_string(), text)
            }
        };
        Self::parse(&label, &text, sets)
    }

    /// Parses TOML text (named `label` in errors), applies overrides and validates.
    pub fn parse(label: &str, text: &str, sets: &[String]) -> Result<Self> {
        let mut doc: toml::Table = toml::from_str(text).map_err(|e| Error::Config {
            file: label.into(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let mut leaves = Vec::new();
        flatten("", &toml::Value::Table(doc.clone()), &mut leaves);
        if leaves.is_empty() {
            return Err(Error::Config { file: label.into(), message: empty_config_message() });
        }
        if !ALIASES.iter().any(|(alias, _)| get_path(&doc, alias).is_some()) {
            // The file alone first, so that its mistakes are reported with line and column
            // (a file using TRL's names is checked after they are resolved, without).
            toml::from_str::<TrainConfig>(text).map_err(|e| Error::Config {
                file: label.into(),
                message: e.to_string().trim_end().to_string(),
            })?;
        }
        resolve_aliases(&mut doc).map_err(|message| Error::Config { file: label.into(), message })?;
        let mut given: Vec<&str> = Vec::new();
        for set in sets {
            let key = set.split_once('=').map_or(set.as_str(), |(k, _)| k.trim());
            let canonical = alias_of(key).unwrap_or(key);
            if let Some(other) = given.iter().find(|g| alias_of(g).unwrap_or(g) == canonical && **g != key) {
                return Err(Error::Config {
                    file: "--set".into(),
                    message: format!("`{key}` and `{other}` name the same setting; give one"),
                });
            }
            given.push(key);
            match (alias_of(key), set.split_once('=')) {
                (Some(canonical), Some((_, value))) => apply_set(&mut doc, &format!("{canonical}={value}"))?,
                _ => apply_set(&mut doc, set)?,
            }
        }
        let mut cfg: TrainConfig = TrainConfig::deserialize(toml::Value::Table(doc)).map_err(|e| {
            let file =
                if sets.is_empty() { label.to_string() } else { format!("{label} with --set overrides") };
            Error::Config { file, message: e.to_string().trim_end().to_string() }
        })?;
        cfg.validate().map_err(|message| Error::Config { file: label.into(), message })?;
        // One value per setting: the GRPO section's copies follow `[sampling]`.
        cfg.grpo = cfg.grpo_config();
        Ok(cfg)
    }

    /// Training steps: `run.steps`, else the curriculum schedule's total.
    pub fn total_steps(&self) -> usize {
        if self.run.steps > 0 || self.data.kind != DataKind::Curriculum {
            self.run.steps
        } else {
            self.schedule_steps().unwrap_or(usize::MAX)
        }
    }

    /// The curriculum schedule's total steps (`None`: they add up past `usize::MAX`).
    fn schedule_steps(&self) -> Option<usize> {
        self.curriculum.schedule.iter().try_fold(0usize, |a, p| a.checked_add(p.steps))
    }

    /// The curriculum levels to evaluate.
    pub fn eval_levels(&self) -> Vec<u32> {
        if !self.eval.levels.is_empty() {
            return self.eval.levels.clone();
        }
        let mut v: Vec<u32> = self.curriculum.schedule.iter().map(|p| p.level).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The GRPO config with the sampling section's group size and length filled in.
    pub fn grpo_config(&self) -> GrpoConfig {
        GrpoConfig {
            num_generations: self.sampling.group_size,
            max_completion_length: self.sampling.max_new_tokens,
            ..self.grpo.clone()
        }
    }

    /// Checks values serde cannot: ranges and combinations. The message names the field.
    /// Each section checks its own fields (`validate` beside its schema); what spans
    /// sections is checked here.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.total_steps() == 0 {
            return invalid("run.steps", "must be > 0 (or give the curriculum a schedule)");
        }
        self.sampling.validate()?;
        self.check_sizes()?;
        self.model.validate()?;
        if self.data.kind == DataKind::Curriculum {
            self.curriculum.validate()?;
            let levels = self.pretrain.unhinted_levels.iter().chain(&self.pretrain.hinted_levels);
            for l in levels.chain(&self.eval.levels) {
                if !(1..=MAX_LEVEL).contains(l) {
                    return invalid("pretrain/eval levels", format!("{l} (allowed: 1..={MAX_LEVEL})"));
                }
            }
        } else if self.pretrain.steps > 0 {
            return invalid("pretrain.steps", "pretraining is only defined for `data.kind = \"curriculum\"`");
        }
        self.data.validate()?;
        for (i, set) in self.eval.sets.iter().enumerate() {
            let field = format!("eval.sets[{i}].tasks");
            match TaskSpec::parse(&set.tasks) {
                _ if self.data.kind == DataKind::Curriculum => {
                    return invalid(&field, "the curriculum evaluates by level (`eval.levels`)")
                }
                Ok(TaskSpec::Split { dataset, .. }) if Some(dataset) != self.data.kind.dataset() => {
                    return invalid(
                        &field,
                        format!(
                            "names {} but `data.kind` is another set: one run, one verifier",
                            dataset.name()
                        ),
                    )
                }
                Ok(TaskSpec::Generated(g)) if self.data.kind != DataKind::Gsm8k => {
                    return invalid(
                        &field,
                        format!("`{g}` is math in GSM8K's form: it needs `data.kind = \"gsm8k\"`"),
                    )
                }
                _ => {}
            }
        }
        if self.model.source == ModelChoice::Tiny && self.data.kind != DataKind::Curriculum {
            return invalid("model.source", "`tiny` only speaks the curriculum's alphabet; use a real model");
        }
        self.pretrain.validate()?;
        self.mentor.validate()?;
        self.grpo_config().validate().map_err(|e| format!("[grpo] {e}"))?;
        self.eval.validate()?;
        self.rescue.validate()?;
        self.strategy.validate()
    }

    /// Sizes that must not overflow or allocate without bound before the run's checks: the
    /// schedule's total, steps × prompts, rows per step, optimizer steps, and the counts held
    /// up front ([`MAX_HELD_TASKS`], [`MAX_SAMPLES`]; the tiny model's [`MAX_TINY_DIM`] is
    /// `[model]`'s own check). Lengths are checked
    /// against the model when it is loaded, memory against the machine
    /// (`train::start`).
    fn check_sizes(&self) -> std::result::Result<(), String> {
        let err = |field: &str, msg: String| Err(format!("`{field}`: {msg}"));
        if self.data.kind == DataKind::Curriculum && self.run.steps == 0 && self.schedule_steps().is_none() {
            return err("curriculum.schedule", "its phases' steps add up past the largest integer".into());
        }
        let steps = self.total_steps();
        let (prompts, group) = (self.sampling.prompts_per_step, self.sampling.group_size);
        let steps_field = if self.run.steps > 0 || self.data.kind != DataKind::Curriculum {
            "run.steps"
        } else {
            "curriculum.schedule"
        };
        if steps.checked_mul(prompts).is_none() {
            return Err(format!(
                "`sampling.prompts_per_step` = {prompts} over `{steps_field}` = {steps} steps: \
                 their product overflows the task index"
            ));
        }
        if prompts.checked_mul(group).is_none() {
            return err(
                "sampling.group_size",
                format!("{prompts} prompts x {group} completions per step overflows the row count"),
            );
        }
        if steps.checked_mul(self.grpo.num_iterations.max(1)).is_none() {
            return Err(format!(
                "`grpo.num_iterations` = {} over `{steps_field}` = {steps} steps: their product \
                 overflows the optimizer's step count",
                self.grpo.num_iterations
            ));
        }
        let capped = [
            ("eval.problems", self.eval.problems, MAX_HELD_TASKS),
            ("curriculum.pool", self.curriculum.pool, MAX_HELD_TASKS),
            ("eval.k", self.eval.k, MAX_SAMPLES),
            ("eval.samples", self.eval.samples, MAX_SAMPLES),
            ("pretrain.batch", self.pretrain.batch, MAX_SAMPLES),
        ];
        for (field, value, max) in capped {
            if value > max {
                return err(
                    field,
                    format!("{value} (at most {max}: they are generated and held in memory at once)"),
                );
            }
        }
        Ok(())
    }

    /// The run directory.
    pub fn output_dir(&self) -> &Path {
        &self.run.output_dir
    }
}

/// A check's failure naming the field: "`field`: message".
fn invalid(field: &str, message: impl std::fmt::Display) -> std::result::Result<(), String> {
    Err(format!("`{field}`: {message}"))
}

/// Why an empty configuration is refused, naming the presets.
fn empty_config_message() -> String {
    let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
    format!(
        "sets nothing (an empty file, or only comments and empty tables): it would start a run \
         with every default into `runs/run`\nhint: start from a preset ({}), e.g. `--config {}`, \
         or copy one of configs/*.toml and edit it",
        names.join(", "),
        names[0]
    )
}

/// Most tasks a setting may ask to generate and hold up front (`eval.problems`,
/// `curriculum.pool`): a million problems per level is far beyond any evaluation, and larger
/// counts only exhaust memory before the run's memory check can refuse them.
pub const MAX_HELD_TASKS: usize = 1_000_000;
/// Most completions per evaluation problem (`eval.k`, `eval.samples`) and examples per
/// pretraining step (`pretrain.batch`).
pub const MAX_SAMPLES: usize = 1 << 16;
/// Largest tiny-model dimension (`model.layers`, `model.hidden`, `model.heads`,
/// `model.intermediate`).
pub const MAX_TINY_DIM: usize = 1 << 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_validates() {
        for (name, _) in PRESETS {
            TrainConfig::load(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn overrides_reach_nested_fields_with_typed_values() {
        let cfg = TrainConfig::load(
            "demo",
            &[
                "run.seed=7".into(),
                "strategy.arm=vanilla".into(),
                "grpo.learning_rate=0.001".into(),
                "strategy.intervention.credit=\"in_context\"".into(),
                "run.output_dir=/tmp/x y".into(),
            ],
        )
        .unwrap();
        assert_eq!(cfg.run.seed, 7);
        assert_eq!(cfg.strategy.arm, Arm::Vanilla);
        assert_eq!(cfg.grpo.optimizer.learning_rate, 0.001);
        assert_eq!(cfg.strategy.intervention.credit, mentor_integration::Credit::InContext);
        assert_eq!(cfg.run.output_dir, PathBuf::from("/tmp/x y"));
    }

    #[test]
    fn errors_name_the_field_and_the_allowed_values() {
        let e = TrainConfig::load("demo", &["strategy.arm=mentr".into()]).unwrap_err().to_string();
        assert!(e.contains("mentr") && e.contains("vanilla") && e.contains("mentor"), "{e}");
        let e = TrainConfig::parse("x.toml", "[run]\nsede = 1\n", &[]).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("sede") && e.contains("line 2"), "{e}");
        let e = TrainConfig::load("demo", &["sampling.group_size=1".into()]).unwrap_err().to_string();
        assert!(e.contains("sampling.group_size"), "{e}");
        let e = TrainConfig::load("demo", &["curriculum.schedule=[{level = 12, steps = 3}]".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("curriculum.schedule[0].level") && e.contains("1..=9"), "{e}");
        let e = TrainConfig::load("demo", &["grpo.learning_rate=-1".into()]).unwrap_err().to_string();
        assert!(e.contains("learning_rate"), "{e}");
        assert!(TrainConfig::load("demo", &["novalue".into()]).is_err());
        let e = TrainConfig::load("demo", &["mentor.backend=local".into()]).unwrap_err().to_string();
        assert!(e.contains("mentor.model") && e.contains("self"), "{e}");
        assert!(
            TrainConfig::load("demo", &["mentor.backend=local".into(), "mentor.model=self".into()]).is_ok()
        );
        let e = TrainConfig::load("demo", &["pretrain.static_fraction=0.6".into()]).unwrap_err().to_string();
        assert!(e.contains("pretrain.static_fraction"), "{e}");
        let e = TrainConfig::load("demo", &["strategy.intervention.hint_format=\"Hint: {hint}\"".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("hint_format") && e.contains("{prompt}"), "{e}");
        let e = TrainConfig::load("/nonexistent/x.toml", &[]).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/x.toml"), "{e}");
    }

    #[test]
    fn trl_names_are_honoured_and_one_setting_given_twice_is_an_error() {
        let cfg = TrainConfig::parse(
            "x.toml",
            "[grpo]\nnum_generations = 4\nmax_completion_length = 32\nmax_steps = 7\nsave_steps = 3\n\
             eval_steps = 2\ntemperature = 0.7\n",
            &[],
        )
        .unwrap();
        assert_eq!((cfg.sampling.group_size, cfg.sampling.max_new_tokens), (4, 32));
        assert_eq!((cfg.run.steps, cfg.run.checkpoint_every, cfg.eval.every), (7, 3, 2));
        assert_eq!(cfg.sampling.temperature, 0.7);
        assert_eq!((cfg.grpo.num_generations, cfg.grpo.max_completion_length), (4, 32));
        let cfg = TrainConfig::load("demo", &["grpo.num_generations=5".into()]).unwrap();
        assert_eq!((cfg.sampling.group_size, cfg.grpo_config().num_generations), (5, 5));

        let e =
            TrainConfig::parse("x.toml", "[grpo]\nnum_generations = 4\n[sampling]\ngroup_size = 8\n", &[])
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("x.toml") && e.contains("grpo.num_generations") && e.contains("sampling.group_size"),
            "{e}"
        );
        let e = TrainConfig::load("demo", &["grpo.max_steps=3".into(), "run.steps=4".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("run.steps") && e.contains("grpo.max_steps"), "{e}");
        // A written config (both names, one value) reads back as itself.
        let cfg = TrainConfig::load("demo", &["sampling.group_size=3".into()]).unwrap();
        let again = TrainConfig::parse("config.toml", &toml::to_string_pretty(&cfg).unwrap(), &[]).unwrap();
        assert_eq!(again, cfg);
        assert!(again.resume_conflicts(&cfg).is_empty());
        // TRL's top_p / top_k are ours; an out-of-range top_p is refused, not ignored.
        let cfg = TrainConfig::parse("x.toml", "[grpo]\ntop_p = 0.9\ntop_k = 20\n", &[]).unwrap();
        assert_eq!((cfg.sampling.top_p, cfg.sampling.top_k), (0.9, 20));
        let e = TrainConfig::load("demo", &["sampling.top_p=1.5".into()]).unwrap_err().to_string();
        assert!(e.contains("sampling.top_p"), "{e}");
    }

    #[test]
    fn sentinel_strings_read_as_enums_and_write_back_the_same() {
        let cfg = TrainConfig::load(
            "demo",
            &[
                "mentor.backend=local".into(),
                "mentor.model=self".into(),
                "mentor.prompts=my/prompts".into(),
                "mentor.retries=5".into(),
                "mentor.max_code_overlap=0.25".into(),
                "strategy.refinement_quote_chars=80".into(),
            ],
        )
        .unwrap();
        assert_eq!(cfg.model.source, ModelChoice::Tiny);
        assert_eq!(cfg.mentor.model, MentorModel::Learner);
        assert_eq!(cfg.mentor.prompts, PromptSet::Dir("my/prompts".into()));
        assert_eq!((cfg.mentor.retries, cfg.mentor.max_code_overlap), (5, 0.25));
        assert_eq!(cfg.strategy.refinement_quote_chars, 80);
        let text = toml::to_string_pretty(&cfg).unwrap();
        assert!(text.contains("model = \"self\"") && text.contains("source = \"tiny\""), "{text}");
        assert_eq!(TrainConfig::parse("config.toml", &text, &[]).unwrap(), cfg);
        let cfg = TrainConfig::load("gsm8k-smollm2", &[]).unwrap();
        assert_eq!(cfg.model.source, ModelChoice::Smollm2);
        assert_eq!(
            ModelChoice::from("HuggingFaceTB/x".to_string()),
            ModelChoice::Source("HuggingFaceTB/x".into())
        );
        // `self` is a local model; an endpoint cannot serve the learner.
        let e = TrainConfig::load("demo", &["mentor.backend=llm".into(), "mentor.model=self".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("mentor.model") && e.contains("local"), "{e}");
        let e = TrainConfig::load("demo", &["mentor.max_code_overlap=2".into()]).unwrap_err().to_string();
        assert!(e.contains("mentor.max_code_overlap"), "{e}");
    }

    #[test]
    fn arm_names_agree_across_serde_clap_and_reports() {
        use clap::ValueEnum;
        assert_eq!(Arm::value_variants(), &Arm::ALL[..]);
        for arm in Arm::ALL {
            let serde_name = toml::Value::try_from(arm).unwrap();
            assert_eq!(serde_name.as_str(), Some(arm.name()));
            assert_eq!(arm.to_possible_value().unwrap().get_name(), arm.name());
            assert_eq!(Arm::parse(arm.name()), Some(arm));
            assert_eq!(Arm::from_str(arm.name(), false), Ok(arm));
        }
        assert_eq!(Arm::parse("mentorr"), None);
    }

    #[test]
    fn unknown_presets_and_pretrain_rates_are_named() {
        let e = TrainConfig::load("dmeo", &[]).unwrap_err().to_string();
        assert!(e.contains("dmeo") && e.contains("not a preset") && e.contains("demo, gsm8k-smollm2"), "{e}");
        let e = TrainConfig::load("demo", &["pretrain.learning_rate=-1".into()]).unwrap_err().to_string();
        assert!(e.contains("`pretrain.learning_rate`") && e.contains("-1"), "{e}");
        let e = TrainConfig::load("demo", &["pretrain.learning_rate=nan".into()]).unwrap_err().to_string();
        assert!(e.contains("`pretrain.learning_rate`"), "{e}");
    }

    /// The error of `demo` with `sets`, as text.
    fn refused(sets: &[&str]) -> String {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        TrainConfig::load("demo", &sets).unwrap_err().to_string()
    }

    #[test]
    fn nan_negative_and_infinite_rates_are_named() {
        for (set, field) in [
            ("grpo.learning_rate=nan", "learning_rate"),
            ("grpo.learning_rate=-1e-4", "learning_rate"),
            ("grpo.learning_rate=inf", "learning_rate"),
            ("pretrain.learning_rate=-inf", "`pretrain.learning_rate`"),
            ("pretrain.hinted_fraction=nan", "`pretrain.hinted_fraction`"),
            ("grpo.beta=-0.1", "beta"),
            ("grpo.weight_decay=nan", "weight_decay"),
            ("sampling.temperature=inf", "`sampling.temperature`"),
            ("sampling.temperature=nan", "`sampling.temperature`"),
            ("sampling.temperature=-1", "`sampling.temperature`"),
            ("sampling.top_p=nan", "`sampling.top_p`"),
            ("mentor.temperature=inf", "`mentor.temperature`"),
            ("mentor.max_code_overlap=nan", "`mentor.max_code_overlap`"),
        ] {
            let e = refused(&[set]);
            assert!(e.contains(field), "{set}: {e}");
        }
    }

    #[test]
    fn zero_sizes_are_named() {
        for field in [
            "sampling.prompts_per_step",
            "sampling.group_size",
            "sampling.max_new_tokens",
            "pretrain.batch",
            "mentor.concurrency",
            "mentor.max_tokens",
            "strategy.intervention.hinted_samples",
            "grpo.gradient_accumulation_steps",
            "grpo.num_iterations",
            "model.layers",
            "model.hidden",
            "rescue.batch_rows",
        ] {
            let e = refused(&[&format!("{field}=0")]);
            let short = field.rsplit('.').next().unwrap();
            assert!(e.contains(short), "{field}: {e}");
        }
        let e = refused(&["run.steps=0", "curriculum.schedule=[]"]);
        assert!(e.contains("run.steps"), "{e}");
    }

    #[test]
    fn wrong_types_and_broken_toml_name_file_line_and_key() {
        let e = TrainConfig::parse("x.toml", "[sampling]\ngroup_size = \"eight\"\n", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.toml") && e.contains("line 2") && e.contains("group_size"), "{e}");
        let e = TrainConfig::parse("x.toml", "[run]\nseed = -1\n", &[]).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("line 2") && e.contains("seed"), "{e}");
        let e = TrainConfig::parse("x.toml", "[run]\nprogress = \"yes\"\n", &[]).unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("progress"), "{e}");
        let e = refused(&["sampling.group_size=eight"]);
        assert!(e.contains("--set") && e.contains("eight"), "{e}");
        let e = refused(&["run=3"]);
        assert!(e.contains("--set") && e.contains("run"), "{e}");
        for broken in ["[run", "[run]\nseed = ", "[run]\nname = \"unterminated\n", "= 3\n"] {
            let e = TrainConfig::parse("x.toml", broken, &[]).unwrap_err().to_string();
            assert!(e.contains("x.toml") && e.contains("line"), "{broken:?}: {e}");
        }
    }

    #[test]
    fn a_file_that_is_not_utf8_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.toml");
        std::fs::write(&path, b"[run]\nname = \"caf\xe9\"\n").unwrap();
        let e = TrainConfig::load(path.to_str().unwrap(), &[]).unwrap_err().to_string();
        assert!(e.contains("latin1.toml") && e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn an_empty_config_is_refused_naming_the_presets() {
        for text in ["", "\n\n", "# only a comment\n", "[run]\n[sampling]\n"] {
            let e = TrainConfig::parse("empty.toml", text, &[]).unwrap_err().to_string();
            assert!(e.contains("empty.toml") && e.contains("sets nothing"), "{text:?}: {e}");
            for (name, _) in PRESETS {
                assert!(e.contains(name), "{name} missing from: {e}");
            }
        }
        // Overrides do not make an empty file a configuration.
        assert!(TrainConfig::parse("empty.toml", "", &["run.steps=3".into()]).is_err());
        // One setting is enough.
        assert!(TrainConfig::parse("one.toml", "[run]\nsteps = 3\n", &[]).is_ok());
    }

    #[test]
    fn huge_values_are_refused_or_harmless_never_a_panic() {
        // Every integer leaf of every preset, set to the largest TOML integer: loading either
        // refuses it by name or accepts it (lengths and memory are checked against the model
        // and the machine when the run starts: `train::preflight`).
        for (preset, _) in PRESETS {
            let cfg = TrainConfig::load(preset, &[]).unwrap();
            let mut leaves = Vec::new();
            flatten("", &toml::Value::try_from(&cfg).unwrap(), &mut leaves);
            for (key, value) in leaves {
                if !matches!(value, toml::Value::Integer(_)) || alias_of(&key).is_some() {
                    continue;
                }
                let set = format!("{key}={}", i64::MAX);
                let result =
                    std::panic::catch_unwind(|| TrainConfig::load(preset, std::slice::from_ref(&set)));
                let result = result.unwrap_or_else(|_| panic!("{preset} --set {set} panicked"));
                if let Ok(cfg) = result {
                    let _ = cfg.total_steps();
                    let _ = cfg.grpo_config();
                }
            }
        }
        for (set, field) in [
            ("eval.problems=9223372036854775807", "`eval.problems`"),
            ("curriculum.pool=9223372036854775807", "`curriculum.pool`"),
            ("eval.k=9223372036854775807", "`eval.k`"),
            ("pretrain.batch=9223372036854775807", "`pretrain.batch`"),
            ("model.hidden=9223372036854775807", "`model.hidden`"),
            ("sampling.prompts_per_step=9223372036854775807", "`sampling.prompts_per_step`"),
            ("sampling.group_size=9223372036854775807", "`sampling.group_size`"),
            ("grpo.num_iterations=9223372036854775807", "`grpo.num_iterations`"),
        ] {
            let e = refused(&[set]);
            assert!(e.contains(field) && e.contains("9223372036854775807"), "{set}: {e}");
        }
        let e = refused(&[
            "curriculum.schedule=[{level = 2, steps = 9223372036854775807}, {level = 3, steps = 9223372036854775807}]",
        ]);
        assert!(e.contains("curriculum.schedule"), "{e}");
    }

    #[test]
    fn resume_conflicts_name_every_changed_key_but_the_resumable_ones() {
        let saved = TrainConfig::load("demo", &[]).unwrap();
        let same = TrainConfig::load(
            "demo",
            &["run.steps=500".into(), "run.progress=false".into(), "run.output_dir=/elsewhere".into()],
        )
        .unwrap();
        assert!(same.resume_conflicts(&saved).is_empty());
        let other = TrainConfig::load(
            "demo",
            &[
                "strategy.arm=vanilla".into(),
                "run.seed=5".into(),
                "model.layers=2".into(),
                "run.steps=9".into(),
            ],
        )
        .unwrap();
        assert_eq!(other.resume_conflicts(&saved), vec!["model.layers", "run.seed", "strategy.arm"]);
    }

    #[test]
    fn curriculum_steps_default_to_the_schedule() {
        let cfg = TrainConfig::load(
            "demo",
            &[
                "curriculum.schedule=[{level = 2, steps = 3}, {level = 4, steps = 5}]".into(),
                "run.steps=0".into(),
                "eval.levels=[]".into(),
            ],
        )
        .unwrap();
        assert_eq!(cfg.total_steps(), 8);
        assert_eq!(cfg.eval_levels(), vec![2, 4]);
    }
}
