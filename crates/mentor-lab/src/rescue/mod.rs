//! `mentor rescue`: how often each mentor turns an all-fail group into a success, measured
//! on a real model and its real failures, without training.
//!
//! The protocol is paired. The learner samples G attempts per training problem at the run's
//! temperature (`sampling::BASE_STREAM`); the problems whose G attempts all fail are the
//! collapsed set. For every collapsed problem each arm ([`RescueArm`]) produces its
//! intervention — nothing (`retry`), a static hint, a refinement prompt, the `rules` mentor's
//! hint at each level and with escalation, the random-cut control of level 3
//! ([`mentor_agents::random_prefix`]), an `llm`/`local` mentor — and the learner samples G second attempts,
//! row `g` of problem `p` seeded by `(seed, p, g)` whatever the arm
//! (`sampling::PairedSampler`): arms differ only by what they show, so their rescue rates
//! are compared problem by problem (`stats`). Every accepted hint is checked for leaks on
//! its own (`leaks`). What is written: `records`; the report: `report`.
//!
//! A rescue is not transfer: it says a hint makes the *next, hinted* attempt succeed. Whether
//! training on rescued groups raises unhinted accuracy is what `mentor train` measures.

pub(crate) mod arms;
pub(crate) mod calibration;
mod context;
pub mod contrasts;
pub(crate) mod leaks;
pub mod pooled;
mod quota;
pub mod records;
mod regime;
pub(crate) mod reliance;
pub mod report;
mod rounds;
pub(crate) mod sampling;
mod summary;
mod unhinted;

use std::sync::Arc;
use std::time::Instant;

use mentor_core::{Attempt, HintLevel, Task, Verifier};
use mentor_policy::Sampler;

pub use mentor_trainer::config::RescueArm;
pub use records::RescueSummary;

use self::arms::{ask, Asked, Mentors};
use self::context::{note, Ctx, Problem};
use self::sampling::PairedSampler;
use mentor_trainer::config::TrainConfig;
use mentor_trainer::live_bytes;
use mentor_trainer::train::{load_tasks, Tasks};
use mentor_trainer::{Error, Result};

/// Runs the measurement a config describes (`[rescue]` with the run's model, data, sampling,
/// hint format, credit and mentor settings) and writes its files to `run.output_dir`.
/// `code` is the code verifier (for code tasks).
pub fn run(cfg: &TrainConfig, code: Option<&dyn Verifier>) -> Result<RescueSummary> {
    let t0 = Instant::now();
    let r = &cfg.rescue;
    r.validate().map_err(|message| Error::Config { file: "[rescue]".into(), message })?;
    let Tasks::Dataset { train: tasks, .. } = load_tasks(cfg)? else {
        return Err(Error::Config {
            file: "[data]".into(),
            message: "`mentor rescue` measures a dataset's training problems; `data.kind = \"curriculum\"` has none"
                .into(),
        });
    };
    let mut tasks = regime::tasks(cfg, tasks)?;
    if r.problems > 0 {
        tasks.truncate(r.problems);
    }
    if tasks.is_empty() {
        return Err(Error::Config { file: "[data]".into(), message: "no training tasks to sample".into() });
    }
    let dir = cfg.output_dir().to_path_buf();
    std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
    let policy = Arc::new(mentor_trainer::policy::build(&cfg.model, cfg.run.seed)?);
    let mut mentors = Mentors::build(cfg, &policy, &r.arms)?;
    let verifier = mentor_trainer::verify::DomainVerifier::new(code);
    let (g_base, g_hint) = group_sizes(cfg);
    let sampler_cfg = Sampler {
        temperature: cfg.sampling.temperature,
        top_p: cfg.sampling.top_p,
        top_k: cfg.sampling.top_k,
    };
    let mut sampler = PairedSampler::new(
        &policy,
        sampler_cfg.clone(),
        cfg.sampling.max_new_tokens,
        cfg.run.seed,
        r.batch_rows,
    );
    let bar = crate::progress::bar(cfg.run.progress, "rescue");
    let mut prior = None;
    if r.arms.contains(&RescueArm::PriorStep) {
        // The calibration's attempts come from their own seed: the test's stay as they were.
        let mut cal_sampler = PairedSampler::new(
            &policy,
            sampler_cfg.clone(),
            cfg.sampling.max_new_tokens,
            mentor_trainer::seed::mix(&[cfg.run.seed, r.calibration_seed, 0xca1]),
            r.batch_rows,
        );
        let ctx =
            Ctx { cfg, policy: &policy, mentors: &mentors, verifier: &verifier, bar: &bar, g_base, g_hint };
        prior = Some(calibration::prior_steps(&ctx, &mut cal_sampler)?);
    }
    if let Some(p) = &prior {
        mentors.add_prior(cfg, &policy, p.prior.clone())?;
    }
    let ctx = Ctx { cfg, policy: &policy, mentors: &mentors, verifier: &verifier, bar: &bar, g_base, g_hint };
    let mut peaks = StagePeaks::start();

    // 1. The unhinted attempts, until enough problems have collapsed.
    let mut quota = quota::PositionQuota::new(r.max_position_share, r.collapsed, &tasks);
    // The `rules` diagnosis decides admission; an admitted problem keeps it for stage 2.
    let mut admitted: std::collections::HashMap<String, Asked> = std::collections::HashMap::new();
    let mut admit = |task: &Task, attempts: &[Attempt]| -> Result<bool> {
        let asked = ask(mentors.rules.as_ref(), task, attempts, HintLevel::NUDGE, &[])?;
        let step = asked.diagnosis.as_ref().and_then(|d| d.first_wrong_step);
        let admit = quota.admit(quota::steps(task), step);
        if admit {
            admitted.insert(task.id.clone(), asked);
        }
        Ok(admit)
    };
    let base = unhinted::sample(&ctx, &mut sampler, &tasks, &mut admit)?;
    peaks.unhinted = stage_peak();
    mentor_trainer::jsonl::write_lines(&dir.join(records::BASE_FILE), &base.lines)?;
    note(
        &bar,
        &format!(
            "rescue: {} of {} problems collapsed{} (unhinted pass rate {:.3}) in {:.0} s{}",
            base.lines.iter().filter(|l| l.collapsed).count(),
            base.lines.len(),
            match base.lines.iter().filter(|l| l.skipped).count() {
                0 => String::new(),
                n =>
                    format!(", {} measured ({n} left out by rescue.max_position_share)", base.collapsed.len()),
            },
            base.pass_rate,
            base.seconds,
            peaks
                .unhinted
                .map_or(String::new(), |b| format!(", peak live heap {:.0} MiB", live_bytes::mib(b)))
        ),
    );
    if base.collapsed.is_empty() {
        bar.finish_and_clear();
        return Err(Error::Missing(
            "no problem collapsed: every problem had a successful unhinted attempt\nhint: sample more problems (rescue.problems) or a larger group"
                .into(),
        ));
    }
    // 2. Each collapsed problem's `rules` diagnosis (the mentor's level-1 answer).
    let mut problems = Vec::with_capacity(base.collapsed.len());
    for (i, attempts) in &base.collapsed {
        let rules_l1 = match admitted.remove(&tasks[*i].id) {
            Some(asked) => asked,
            None => ask(mentors.rules.as_ref(), &tasks[*i], attempts, HintLevel::NUDGE, &[])?,
        };
        problems.push(Problem { index: *i as u64, task: &tasks[*i], attempts: attempts.clone(), rules_l1 });
    }
    let diagnosed = diagnosed_steps(&problems);
    note(
        &bar,
        &format!("rescue: diagnosed step by step count (positions 1..n): {}", diagnosed_line(&diagnosed)),
    );
    // 3-4. Every arm's interventions and hinted attempts, escalation included.
    let mut hinted = rounds::sample(&ctx, &mut sampler, &problems, base.rows)?;
    // 5. Hint reliance of every rescued hinted attempt.
    reliance::of_rescued(&ctx, &problems, &mut hinted.cells)?;
    // 6. Leaks and hint lengths of every hint shown.
    leaks::of_hints(&ctx, &problems, &mut hinted.cells)?;
    peaks.hinted = stage_peak();
    // 7. Files and the summary.
    let facts =
        summary::RunFacts { memory: peaks.summary(), t0, diagnosed_steps: diagnosed, prior_steps: prior };
    summary::write(&ctx, &problems, &base, &hinted, &sampler, facts)
}

/// How often the `rules` diagnosis located each step, per step count: `steps → counts by
/// position` (problems without a located step are not counted).
fn diagnosed_steps(problems: &[Problem<'_>]) -> std::collections::BTreeMap<usize, Vec<usize>> {
    let mut out = std::collections::BTreeMap::new();
    for p in problems {
        if let Some(step) = p.rules_l1.diagnosis.as_ref().and_then(|d| d.first_wrong_step) {
            quota::tally(&mut out, p.steps(), p.steps(), step);
        }
    }
    out
}

/// `2 steps [3, 40] (91% at one position); 3 steps [...]`.
fn diagnosed_line(d: &std::collections::BTreeMap<usize, Vec<usize>>) -> String {
    let parts: Vec<String> = d
        .iter()
        .map(|(steps, c)| {
            let n: usize = c.iter().sum();
            let top = c.iter().max().copied().unwrap_or(0);
            format!("{steps} steps {c:?} ({:.0}% at one position)", 100.0 * top as f64 / n.max(1) as f64)
        })
        .collect();
    if parts.is_empty() {
        "none located".into()
    } else {
        parts.join("; ")
    }
}

/// The live peak since the last stage ended, and a new peak for the next.
fn stage_peak() -> Option<usize> {
    let peak = live_bytes::live().map(|l| l.peak);
    live_bytes::reset_peak();
    peak
}

/// Peak live heap bytes by stage ([`mentor_trainer::live_bytes`]; all `None` where not counted).
struct StagePeaks {
    /// Loading the model, the data and the mentors.
    load: Option<usize>,
    unhinted: Option<usize>,
    hinted: Option<usize>,
}

impl StagePeaks {
    /// The loading stage's peak, and a new peak for the next stage.
    fn start() -> Self {
        Self { load: stage_peak(), unhinted: None, hinted: None }
    }

    fn summary(&self) -> records::MemoryPeaks {
        let mib = |b: Option<usize>| b.map(live_bytes::mib);
        records::MemoryPeaks {
            rss_mib: mentor_trainer::train::peak_rss_mib(),
            live_mib: mib([self.load, self.unhinted, self.hinted].into_iter().flatten().max()),
            unhinted_live_mib: mib(self.unhinted),
            hinted_live_mib: mib(self.hinted),
        }
    }
}

/// The unhinted and the hinted attempts per problem (`rescue.unhinted_samples`,
/// `rescue.hinted_samples`; `sampling.group_size` where 0).
fn group_sizes(cfg: &TrainConfig) -> (usize, usize) {
    let or_group = |n: usize| if n > 0 { n } else { cfg.sampling.group_size };
    (or_group(cfg.rescue.unhinted_samples), or_group(cfg.rescue.hinted_samples))
}

#[cfg(test)]
mod tests {
    use mentor_core::{MathPayload, Payload, Role};

    use super::*;

    fn gsm(i: usize, steps: usize) -> Task {
        let solution: Vec<String> = (0..steps).map(|s| format!("x = <<{s}+1={}>>{}", s + 1, s + 1)).collect();
        let mut t = Task::math(format!("gsm8k/train/{i}"), format!("question {i}"), "1");
        t.payload = Payload::Math(MathPayload { answer: "1".into(), solution: Some(solution.join("\n")) });
        t.prompt.insert(0, mentor_core::Message::system("sys"));
        t
    }

    fn cfg(sets: &[&str]) -> TrainConfig {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        TrainConfig::load("rescue-gsm8k-smollm2", &sets).unwrap()
    }

    #[test]
    fn the_regime_draws_the_stratum_in_the_prompt_style() {
        let tasks: Vec<Task> = (0..12).map(|i| gsm(i, 1 + i % 6)).collect();
        // The preset: GSM8K's easiest stratum, few-shot.
        let got = regime::tasks(&cfg(&[]), tasks.clone()).unwrap();
        assert!(got.iter().all(|t| mentor_trainer::strata::gsm8k_steps(t) <= 2), "{got:?}");
        let roles: Vec<Role> = got[0].prompt.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::Assistant, Role::User, Role::Assistant, Role::User]
        );
        // The generated stratum, as many problems as asked.
        let got = regime::tasks(
            &cfg(&["rescue.stratum=\"arith 3-step seed 4\"", "rescue.problems=7"]),
            tasks.clone(),
        )
        .unwrap();
        assert_eq!(got.len(), 7);
        assert!(got[0].id.starts_with("arith/4/3/"), "{}", got[0].id);
        // The held-out family: its worked examples come from templates no test problem uses.
        let got = regime::tasks(
            &cfg(&["rescue.stratum=\"heldout 4-step seed 2\"", "rescue.problems=9"]),
            tasks.clone(),
        )
        .unwrap();
        assert_eq!(got.len(), 9);
        assert!(got[8].id.starts_with("heldout/2/4/"), "{}", got[8].id);
        let example = &got[0].prompt[1].content;
        assert!(got.iter().all(|t| !t.question().is_empty() && t.prompt[1].content == *example));
        assert_eq!(example, &mentor_tasks::heldout::example(2, 0, 4).question());
        let e = regime::tasks(&cfg(&["rescue.stratum=\"heldout 4 steps\""]), tasks.clone())
            .unwrap_err()
            .to_string();
        assert!(e.contains("heldout <steps>-step seed <seed>"), "{e}");
        // Every problem, as the run builds its prompt.
        let got =
            regime::tasks(&cfg(&["rescue.stratum=\"\"", "rescue.prompt=\"system\""]), tasks.clone()).unwrap();
        assert_eq!(got, tasks);
        // A stratum the data does not have is named with the ones it has.
        let e = regime::tasks(&cfg(&["rescue.stratum=\"gsm8k steps<=9\""]), tasks.clone())
            .unwrap_err()
            .to_string();
        assert!(e.contains("rescue.stratum") && e.contains("gsm8k steps 3-4"), "{e}");
        let e = regime::tasks(&cfg(&["rescue.stratum=\"arith two steps\""]), tasks).unwrap_err().to_string();
        assert!(e.contains("arith <steps>-step seed <seed>"), "{e}");
    }

    #[test]
    fn the_presets_hold_the_probed_regimes() {
        let g = TrainConfig::load("rescue-gsm8k-smollm2", &[]).unwrap();
        assert_eq!((g.rescue.stratum.as_str(), g.sampling.temperature), ("gsm8k steps<=2", 0.6));
        let a = TrainConfig::load("rescue-arith-smollm2", &[]).unwrap();
        assert_eq!((a.rescue.stratum.as_str(), a.sampling.temperature), ("arith 2-step seed 0", 0.3));
        let m = TrainConfig::load("rescue-mbpp-smollm2", &[]).unwrap();
        assert_eq!((m.rescue.stratum.as_str(), m.sampling.temperature), ("mbpp lines<=3", 0.3));
        assert_eq!(m.rescue.collapsed, 40);
        for c in [&g, &a, &m] {
            assert_eq!(group_sizes(c), (4, 2));
            assert_eq!(c.rescue.prompt, mentor_trainer::strata::PromptStyle::FewShot);
            assert_eq!(c.sampling.max_new_tokens, 128);
        }
    }
}
