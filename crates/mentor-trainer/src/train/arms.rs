//! The arms: the strategy plug-in each `strategy.arm` builds (vanilla, DAPO, static hints,
//! random prefix, full solution, refinement, the mentor on its backends) and the hint templates it uses.

use std::sync::Arc;

use mentor_agents::llm::{FallbackCounter, LlmConfig};
use mentor_agents::{
    AgentMentor, Guard, GuardConfig, Prompts, Refinement, Rewritten, StaticHints, WhereOnly, WrongAnswers,
};
use mentor_integration::Strategy;
use mentor_policy::Policy;

use crate::config::{
    Arm, Backend, DataKind, MentorModel, ModelChoice, PromptSet, ReferenceStyle, TrainConfig,
};
use crate::error::Result;
use mentor_verify_math::MathEquivalence;

/// The curriculum's hint templates and static hints (in the tiny model's alphabet).
pub const CURRICULUM_HINTS: &str = include_str!("../../curriculum/hints.toml");
/// The curriculum's static hint library.
pub const CURRICULUM_STATIC_HINTS: &str = include_str!("../../curriculum/static_hints.toml");

/// The curriculum's wording of the `wrong_answers` control (`{answers}`: the wrong answers).
pub const CURRICULUM_WRONG_ANSWERS: &str = "H wrong answer {answers}";
/// The curriculum's wording of the `where_only` control (`{step}`: the first wrong line,
/// `{kind}`: the mistake's kind in words).
pub const CURRICULUM_WHERE_ONLY: &str = "H line {step} is wrong, {kind}";

/// The rewrite every arm that shows reference lines shares, when the training tasks' references
/// are not in the learner's layout (`curriculum.reference = "teacher"`).
pub fn reference_rewrite(cfg: &TrainConfig) -> Option<mentor_core::ReferenceRewrite> {
    (cfg.data.kind == DataKind::Curriculum && cfg.curriculum.reference == ReferenceStyle::Teacher)
        .then(|| Arc::new(mentor_tasks::curriculum::learner_solution) as mentor_core::ReferenceRewrite)
}

/// The hint templates a config names.
pub fn prompts(cfg: &TrainConfig) -> Result<Prompts> {
    Ok(match &cfg.mentor.prompts {
        PromptSet::Default => Prompts::default(),
        PromptSet::Curriculum => Prompts::with_hints(CURRICULUM_HINTS, CURRICULUM_STATIC_HINTS)?,
        PromptSet::Dir(dir) => Prompts::load_dir(dir)?,
    })
}

/// The strategy plug-in of an arm, with the mentor's fallback counter when its backend can
/// fall back to rules (`llm`, `local`).
pub struct Built {
    /// The plug-in's strategy.
    pub strategy: Strategy,
    /// Mentor calls answered by the rules because the model failed (None: no model).
    pub fallbacks: Option<Arc<FallbackCounter>>,
}

/// The `local` mentor's model (the learner for `mentor.model = "self"`, else the named
/// model, loaded) and its sampling settings.
pub fn local_model(
    cfg: &TrainConfig,
    learner: &Arc<Policy>,
) -> Result<(Arc<Policy>, crate::local_mentor::LocalConfig)> {
    let m = &cfg.mentor;
    let model = match &m.model {
        MentorModel::Learner => learner.clone(),
        other => {
            let source = ModelChoice::from(String::from(other.clone()));
            let section = crate::config::ModelSection { source, ..cfg.model.clone() };
            Arc::new(crate::policy::build(&section, cfg.run.seed)?)
        }
    };
    let local = crate::local_mentor::LocalConfig {
        temperature: m.temperature.unwrap_or(0.0),
        max_tokens: m.max_tokens.unwrap_or(256),
        seed: cfg.run.seed,
    };
    Ok((model, local))
}

/// Hint sizes in the learner's tokens ([`mentor_agents::shown_size`]: one definition for rescue
/// and training).
pub fn token_count(learner: &Arc<Policy>) -> mentor_agents::TokenCount {
    let policy = learner.clone();
    Arc::new(move |text: &str| policy.tokenizer().encode(text).map_or(0, |ids| ids.len()))
}

/// The strategy plug-in of the config's arm; `learner` is the policy being trained (the
/// local mentor's `self`).
pub fn strategy(cfg: &TrainConfig, learner: &Arc<Policy>) -> Result<Built> {
    let m = &cfg.mentor;
    let guard = || {
        Guard::new(
            GuardConfig {
                max_chars: m.max_hint_chars,
                max_reference_overlap: m.max_code_overlap,
                ..GuardConfig::default()
            },
            Arc::new(MathEquivalence::default()),
        )
    };
    // Every mentor and control behind the same rewrite of the reference (when there is one).
    let rewrite = reference_rewrite(cfg);
    let intervene = |mentor: Box<dyn mentor_core::Mentor>| Strategy::Intervene {
        mentor: match &rewrite {
            Some(r) => Box::new(Rewritten::new(mentor, r.clone())),
            None => mentor,
        },
        config: cfg.strategy.intervention.clone(),
    };
    let curriculum = cfg.mentor.prompts == PromptSet::Curriculum;
    let plain = |strategy| Built { strategy, fallbacks: None };
    Ok(match cfg.strategy.arm {
        Arm::Vanilla => plain(Strategy::Vanilla),
        Arm::Dapo => plain(Strategy::Dapo { max_refill_groups: cfg.strategy.dapo_max_refill }),
        Arm::StaticHints => {
            plain(intervene(Box::new(StaticHints::with_prompts(prompts(cfg)?, cfg.run.seed))))
        }
        Arm::RandomPrefix => plain(intervene(Box::new(mentor_agents::random_prefix::RandomPrefix::new(
            Box::new(AgentMentor::rules_with(prompts(cfg)?, guard())),
            guard(),
            cfg.run.seed,
            token_count(learner),
        )))),
        Arm::Retry => plain(intervene(Box::new(mentor_agents::Retry))),
        Arm::RandomStep => plain(intervene(Box::new(
            mentor_agents::StepTwin::new(
                mentor_agents::TwinKind::RandomStep,
                prompts(cfg)?,
                guard(),
                cfg.run.seed,
                token_count(learner),
            )
            .for_training(),
        ))),
        Arm::FullSolution => plain(Strategy::FullSolution {
            max_groups: cfg.strategy.intervention.max_interventions_per_step,
            rewrite: None,
        }),
        Arm::FullSolutionLearner => plain(Strategy::FullSolution {
            max_groups: cfg.strategy.intervention.max_interventions_per_step,
            // Without a rewrite the references are in the learner's layout already.
            rewrite: rewrite.clone(),
        }),
        Arm::WrongAnswers => plain(intervene(Box::new(if curriculum {
            WrongAnswers::with_wording(guard(), CURRICULUM_WRONG_ANSWERS)
        } else {
            WrongAnswers::new(guard())
        }))),
        Arm::WhereOnly => {
            let diagnoser = Box::new(AgentMentor::rules_with(prompts(cfg)?, guard()));
            plain(intervene(Box::new(if curriculum {
                WhereOnly::with_wording(diagnoser, guard(), CURRICULUM_WHERE_ONLY)
            } else {
                WhereOnly::new(diagnoser, guard())
            })))
        }
        Arm::Refinement => {
            plain(intervene(Box::new(Refinement::new(guard(), cfg.strategy.refinement_quote_chars))))
        }
        Arm::Mentor => match m.backend {
            Backend::Rules => plain(intervene(Box::new(AgentMentor::rules_with(prompts(cfg)?, guard())))),
            Backend::Llm => {
                let defaults = LlmConfig::default();
                let llm = LlmConfig {
                    base_url: m.base_url.clone(),
                    model: String::from(m.model.clone()),
                    api_key: m.api_key_env.as_ref().and_then(|v| std::env::var(v).ok()),
                    timeout: std::time::Duration::from_secs_f64(m.timeout_secs),
                    retries: m.retries,
                    max_concurrency: m.concurrency,
                    temperature: m.temperature.map_or(defaults.temperature, |t| t as f32),
                    max_tokens: m.max_tokens.map_or(defaults.max_tokens, |t| t.min(u32::MAX as usize) as u32),
                    ..defaults
                };
                let (mentor, fallbacks) = mentor_agents::llm::mentor(llm, prompts(cfg)?, guard());
                Built { strategy: intervene(Box::new(mentor)), fallbacks: Some(fallbacks) }
            }
            Backend::Local => {
                let (model, local) = local_model(cfg, learner)?;
                let (mentor, fallbacks) = crate::local_mentor::mentor(model, local, prompts(cfg)?, guard());
                Built { strategy: intervene(Box::new(mentor)), fallbacks: Some(fallbacks) }
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mentor_tasks::curriculum::ALPHABET;

    #[test]
    fn the_curriculum_hints_are_in_the_tiny_models_alphabet() {
        let p = Prompts::with_hints(CURRICULUM_HINTS, CURRICULUM_STATIC_HINTS).unwrap();
        let marker = p.render_hint(mentor_core::Domain::Math, 3).unwrap();
        assert_eq!(marker, "H", "the level-3 text is the demo's one-character marker");
        let statics = p.static_hints(mentor_core::Domain::Math);
        assert!(statics.len() >= 3);
        for text in statics.iter().chain(std::iter::once(&marker)) {
            assert!(text.chars().all(|c| ALPHABET.contains(c)), "{text:?} leaves the alphabet");
            assert!(text.starts_with('H'), "{text:?}: every hint follows the marker");
        }
        // No static text carries a worked line: no `=` (a line is `a+b+c=s`).
        assert!(statics.iter().all(|t| !t.contains('=')));
    }

    /// The matched controls' curriculum wording, filled in as the controls fill it, stays in
    /// the alphabet and after the marker, and carries no worked line.
    #[test]
    fn the_controls_curriculum_wording_is_in_the_alphabet() {
        let kinds =
            ["a calculation error", "the wrong method", "no final answer in the required form", "a mistake"];
        let mut texts = vec![CURRICULUM_WRONG_ANSWERS.replace("{answers}", "2301, 10, none")];
        texts.extend(kinds.iter().map(|k| CURRICULUM_WHERE_ONLY.replace("{step}", "3").replace("{kind}", k)));
        for t in &texts {
            assert!(t.chars().all(|c| ALPHABET.contains(c)), "{t:?} leaves the alphabet");
            assert!(t.starts_with("H ") && !t.contains('='), "{t:?}");
        }
    }

    /// `random_step` trains with the mentor's twin: the same template about another step.
    #[test]
    fn the_random_step_arm_is_the_mentors_twin() {
        let mut cfg = TrainConfig::load("gsm8k-smollm2", &[]).unwrap();
        cfg.strategy.arm = Arm::RandomStep;
        let learner = Arc::new(
            Policy::char_level(
                ALPHABET,
                mentor_policy::Config::tiny(0, 32, 2, 4, 2),
                1,
                candle_core::DType::F32,
                &candle_core::Device::Cpu,
            )
            .unwrap(),
        );
        let built = strategy(&cfg, &learner).unwrap();
        let Strategy::Intervene { mentor, .. } = built.strategy else { panic!("an intervening arm") };
        assert_eq!(mentor.name(), "random_step");
    }

    /// With teacher references, every arm that shows reference lines gets them through the one
    /// rewrite; with the learner's own, none is rewritten.
    #[test]
    fn the_reference_rewrite_follows_the_curriculums_reference_style() {
        let mut cfg = TrainConfig::load("demo", &[]).unwrap();
        let p = mentor_tasks::curriculum::Problem { a: 457, b: 68 };
        assert_eq!(cfg.curriculum.reference, ReferenceStyle::Teacher, "the demo's default");
        let rewrite = reference_rewrite(&cfg).expect("a rewrite for teacher references");
        assert_eq!(rewrite(&p.teacher_solution()), Some(p.solution()));
        cfg.curriculum.reference = ReferenceStyle::Learner;
        assert!(reference_rewrite(&cfg).is_none());
    }
}
