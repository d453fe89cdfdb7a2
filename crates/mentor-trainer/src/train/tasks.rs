//! Tasks and splits: the training and held-out evaluation tasks a config names, the overlap
//! guard between them, the dataset directory, each step's tasks and DAPO's refills.

use std::path::PathBuf;

use mentor_core::datasets::Dataset;
use mentor_core::Task;
use mentor_integration::TaskSource;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::config::{TaskSpec, TrainConfig};
use crate::error::{Error, Result};
use crate::seed::mix;
use mentor_tasks::curriculum;

/// Where training tasks come from.
pub enum Tasks {
    /// The curriculum (generated per step).
    Curriculum,
    /// A dataset: training tasks (in a seeded order) and held-out evaluation tasks.
    Dataset {
        /// Training tasks.
        train: Vec<Task>,
        /// Evaluation tasks (`data.eval`).
        eval: Vec<Task>,
        /// The named evaluation sets (`[[eval.sets]]`), in the config's order.
        named: Vec<(String, Vec<Task>)>,
    },
}

/// Training problems drawn from a generated family when `data.limit` is 0.
pub const GENERATED_TRAIN: usize = 4096;

/// Tasks of one source and the worked examples a few-shot prompt shows before them.
struct Loaded {
    tasks: Vec<Task>,
    examples: Vec<Task>,
}

/// Loads the tasks a config names (nothing for the curriculum): the training tasks from
/// `data.train` in a seeded order, cut to `data.limit`, the first `data.eval_tasks` of
/// `data.eval`, and the first `n` of each `[[eval.sets]]`; every prompt in `data.prompt`'s
/// style. Training and evaluation tasks that overlap (by id or by normalised question text) are
/// an error naming both sources unless `data.allow_overlap`; generated evaluation problems that
/// repeat a training problem are left out instead (a small family repeats itself).
pub fn load_tasks(cfg: &TrainConfig) -> Result<Tasks> {
    let Some(dataset) = cfg.data.kind.dataset() else {
        return Ok(Tasks::Curriculum);
    };
    let bad = |message: String| Error::Config { file: "[data]".into(), message };
    let train_spec = cfg.data.train_spec().map_err(bad)?;
    let eval_spec = cfg.data.eval_spec().map_err(bad)?;
    let dir = data_dir(cfg)?;
    let system = cfg.data.system_prompt.as_deref();
    let load = |spec: &TaskSpec, n: usize| -> Result<Loaded> {
        let mut tasks = match spec {
            TaskSpec::Split { dataset, split } => dataset.load_split(&dir, split)?,
            TaskSpec::File(path) => match dataset {
                // A file of the user's: every record, whatever its MBPP task id.
                Dataset::Mbpp => {
                    mentor_core::datasets::load_mbpp(path, mentor_core::datasets::MbppSplit::All)?
                }
                d => d.load(path)?,
            },
            TaskSpec::Generated(g) => {
                // The system prompt is the family's builder's to place.
                let s = crate::strata::generated(*g, g.seed.unwrap_or(cfg.run.seed), n, system);
                return Ok(Loaded { tasks: s.tasks, examples: s.examples });
            }
        };
        if let Some(system) = system {
            for t in &mut tasks {
                t.prompt.insert(0, mentor_core::Message::system(system));
            }
        }
        // A dataset's worked examples: its easiest stratum's, as `mentor probe` takes them.
        let examples = crate::strata::of_dataset(&tasks, dataset.name())
            .into_iter()
            .next()
            .map(|s| s.examples)
            .unwrap_or_default();
        Ok(Loaded { tasks, examples })
    };
    let styled = |loaded: Loaded| -> Vec<Task> {
        let Loaded { tasks, examples } = loaded;
        tasks
            .into_iter()
            .map(|mut t| {
                t.prompt = crate::strata::prompt(&t, cfg.data.prompt, &examples);
                t
            })
            .collect()
    };
    let limit = match (&train_spec, cfg.data.limit) {
        (Some(TaskSpec::Generated(_)), 0) => GENERATED_TRAIN,
        (_, n) => n,
    };
    let mut train = match &train_spec {
        Some(spec) => styled(load(spec, limit)?),
        None => Vec::new(),
    };
    train.shuffle(&mut StdRng::seed_from_u64(mix(&[cfg.run.seed, 0xda7a])));
    if limit > 0 {
        train.truncate(limit);
    }
    let mut eval = match (&eval_spec, cfg.data.eval_tasks) {
        (Some(spec), n) if n > 0 => styled(load(spec, n)?),
        _ => Vec::new(),
    };
    eval.truncate(cfg.data.eval_tasks);
    if !cfg.data.allow_overlap {
        if let (Some(t), Some(e)) = (&train_spec, &eval_spec) {
            check_overlap(&train, t, &eval, e)?;
        }
    }
    let trained: std::collections::HashSet<String> = train.iter().map(normalised_question).collect();
    let mut named = Vec::with_capacity(cfg.eval.sets.len());
    for set in &cfg.eval.sets {
        let spec = TaskSpec::parse(&set.tasks)
            .map_err(|m| Error::Config { file: "[eval]".into(), message: format!("`{}`: {m}", set.name) })?;
        let tasks = match &spec {
            // Drawn past `n` so that `n` remain once training's repeats are left out.
            TaskSpec::Generated(_) => {
                let drawn = styled(load(&spec, set.n.saturating_mul(2).max(set.n + 64))?);
                let mut kept: Vec<Task> =
                    drawn.into_iter().filter(|t| !trained.contains(&normalised_question(t))).collect();
                kept.truncate(set.n);
                kept
            }
            _ => {
                let mut tasks = styled(load(&spec, set.n)?);
                tasks.truncate(set.n);
                if !cfg.data.allow_overlap {
                    if let Some(t) = &train_spec {
                        check_overlap(&train, t, &tasks, &spec)?;
                    }
                }
                tasks
            }
        };
        named.push((set.name.clone(), tasks));
    }
    Ok(Tasks::Dataset { train, eval, named })
}

/// A question as compared for overlap: lower case, letters and digits, single spaces.
fn normalised_question(task: &Task) -> String {
    let text = task.question().to_lowercase();
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// An error when a training task is also an evaluation task, by id or by question text.
fn check_overlap(train: &[Task], train_spec: &TaskSpec, eval: &[Task], eval_spec: &TaskSpec) -> Result<()> {
    use std::collections::HashMap;
    let ids: HashMap<&str, &Task> = eval.iter().map(|t| (t.id.as_str(), t)).collect();
    let questions: HashMap<String, &Task> = eval.iter().map(|t| (normalised_question(t), t)).collect();
    let shared: Vec<(&Task, &Task)> = train
        .iter()
        .filter_map(|t| {
            ids.get(t.id.as_str()).or_else(|| questions.get(&normalised_question(t))).map(|e| (t, *e))
        })
        .collect();
    let Some((t, e)) = shared.first() else {
        return Ok(());
    };
    Err(Error::Config {
        file: "[data]".into(),
        message: format!(
            "training tasks (data.train = {train_spec}) overlap the evaluation tasks (data.eval = {eval_spec}): {} shared, e.g. `{}` (train) and `{}` (eval)\nhint: hold evaluation tasks out of training, or set data.allow_overlap = true to run anyway",
            shared.len(),
            t.id,
            e.id
        ),
    })
}

/// The dataset directory: `data.dir`, else [`mentor_core::assets::locate_datasets`] from the
/// current directory (`$MENTOR_DATASETS`, the asset directory's `datasets/`, or a
/// `shared/datasets` beside the current directory's ancestors).
pub fn data_dir(cfg: &TrainConfig) -> Result<PathBuf> {
    if let Some(d) = &cfg.data.dir {
        return Ok(d.clone());
    }
    let here = std::env::current_dir().unwrap_or_default();
    mentor_core::assets::locate_datasets(|k| std::env::var(k).ok(), &here).ok_or_else(|| {
        Error::Missing("no dataset directory\nhint: run `cargo xtask datasets` or set data.dir".into())
    })
}

/// The tasks of step `step`: `prompts_per_step` problems (curriculum: at the scheduled level).
pub(super) fn step_tasks(cfg: &TrainConfig, tasks: &Tasks, step: usize) -> Vec<Task> {
    let n = cfg.sampling.prompts_per_step;
    match tasks {
        Tasks::Curriculum if cfg.curriculum.pool > 0 => {
            let level = curriculum::level_at(&cfg.curriculum.schedule, step);
            let pool = pool(cfg, level);
            let into = curriculum::steps_into_phase(&cfg.curriculum.schedule, step);
            // Epochs over the pool from the start of the level's phase, each in its own
            // seeded order (a step spans at most a few epochs; each order is drawn once).
            let mut orders: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
            (0..n)
                .map(|i| {
                    let k = into * n + i;
                    let order = orders.entry(k / pool.len()).or_insert_with_key(|&epoch| {
                        let mut order: Vec<usize> = (0..pool.len()).collect();
                        let seed = mix(&[cfg.run.seed, 0x9002, u64::from(level), epoch as u64]);
                        order.shuffle(&mut StdRng::seed_from_u64(seed));
                        order
                    });
                    pool[order[k % pool.len()]].clone()
                })
                .collect()
        }
        Tasks::Curriculum => {
            let level = curriculum::level_at(&cfg.curriculum.schedule, step);
            let mut rng = StdRng::seed_from_u64(mix(&[cfg.run.seed, 0x7a1, step as u64]));
            (0..n)
                .map(|i| {
                    let p = cfg.curriculum.draw(level, &mut rng);
                    cfg.curriculum.train_task(&p, format!("s{step}-{i}"), level)
                })
                .collect()
        }
        Tasks::Dataset { train, .. } => {
            (0..n).filter_map(|i| train.get((step * n + i) % train.len().max(1)).cloned()).collect()
        }
    }
}

/// The seed of a curriculum run's evaluation sets (one per run seed, shared by its arms):
/// here, below the evaluation that draws them, because a pool leaves them out.
pub fn curriculum_eval_seed(cfg: &TrainConfig) -> u64 {
    mix(&[cfg.run.seed, 0xe7a1])
}

/// The training pool of `level` when `curriculum.pool > 0`: that many distinct problems, none
/// of them in the run's evaluation set of that level, with stable ids `pool-L<level>-<i>`, so
/// a task comes back every epoch and the per-task hint memory sees it again.
pub fn pool(cfg: &TrainConfig, level: u32) -> Vec<Task> {
    let held_out: std::collections::HashSet<String> = if cfg.eval_levels().contains(&level) {
        let tasks = cfg.curriculum.tasks(curriculum_eval_seed(cfg), level, cfg.eval.problems, "eval");
        tasks.iter().map(|t| t.question().to_string()).collect()
    } else {
        Default::default()
    };
    let mut rng = StdRng::seed_from_u64(mix(&[cfg.run.seed, 0x9001, u64::from(level)]));
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(cfg.curriculum.pool);
    // Bounded: a level may not hold `pool` distinct problems outside the evaluation set.
    for _ in 0..cfg.curriculum.pool.saturating_mul(100).max(1000) {
        if out.len() == cfg.curriculum.pool {
            break;
        }
        let p = cfg.curriculum.draw(level, &mut rng);
        if held_out.contains(&p.prompt()) || !seen.insert(p.prompt()) {
            continue;
        }
        out.push(cfg.curriculum.train_task(&p, format!("pool-L{level}-{}", out.len()), level));
    }
    out
}

/// More tasks for DAPO refills, deterministic per step.
pub(super) struct Refill<'a> {
    cfg: &'a TrainConfig,
    tasks: &'a Tasks,
    step: usize,
    drawn: usize,
    rng: StdRng,
}

impl<'a> Refill<'a> {
    /// The refills of step `step`.
    pub(super) fn new(cfg: &'a TrainConfig, tasks: &'a Tasks, step: usize) -> Self {
        Self {
            cfg,
            tasks,
            step,
            drawn: 0,
            rng: StdRng::seed_from_u64(mix(&[cfg.run.seed, 0x4ef1, step as u64])),
        }
    }
}

impl TaskSource for Refill<'_> {
    fn next_task(&mut self) -> Option<Task> {
        self.drawn += 1;
        match self.tasks {
            Tasks::Curriculum => {
                let level = curriculum::level_at(&self.cfg.curriculum.schedule, self.step);
                let p = self.cfg.curriculum.draw(level, &mut self.rng);
                Some(self.cfg.curriculum.train_task(&p, format!("s{}-r{}", self.step, self.drawn), level))
            }
            Tasks::Dataset { train, .. } => {
                let n = self.cfg.sampling.prompts_per_step;
                let at = (self.step * n + n + self.drawn) % train.len().max(1);
                train.get(at).cloned()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The benchmark data ([`mentor_core::datasets_dir`] from this crate).
    fn data_dir() -> String {
        mentor_core::datasets_dir!().display().to_string()
    }

    fn config(preset: &str, sets: &[&str]) -> Result<TrainConfig> {
        let mut all = vec![format!("data.dir={}", data_dir())];
        all.extend(sets.iter().map(|s| s.to_string()));
        TrainConfig::load(preset, &all)
    }

    fn ids(tasks: &Tasks) -> (Vec<String>, Vec<String>) {
        match tasks {
            Tasks::Dataset { train, eval, .. } => {
                (train.iter().map(|t| t.id.clone()).collect(), eval.iter().map(|t| t.id.clone()).collect())
            }
            Tasks::Curriculum => panic!("a dataset config"),
        }
    }

    #[test]
    fn presets_train_on_training_splits_and_evaluate_on_held_out_tests() {
        let (train, eval) = ids(&load_tasks(&config("gsm8k-smollm2", &[]).unwrap()).unwrap());
        assert_eq!(train.len(), 7473);
        assert!(train.iter().all(|id| id.starts_with("gsm8k/train/")), "{:?}", &train[..3]);
        assert_eq!(eval.len(), 100);
        assert_eq!(eval[0], "gsm8k/test/0");
        assert!(eval.iter().all(|id| id.starts_with("gsm8k/test/")));

        let (train, eval) = ids(&load_tasks(&config("mbpp-smollm2", &[]).unwrap()).unwrap());
        // Task ids 601–974 and the ten prompt tasks 1–10.
        assert_eq!(train.len(), 374 + 10);
        assert!(train.iter().all(|id| id.starts_with("mbpp/train/") || id.starts_with("mbpp/prompt/")));
        assert_eq!(eval.len(), 50);
        assert_eq!(eval[0], "mbpp/test/11");
    }

    #[test]
    fn overlapping_training_and_evaluation_tasks_stop_the_run_before_step_0() {
        // By id: the evaluation split trained on.
        let cfg = config("gsm8k-smollm2", &["data.train=gsm8k:test", "data.eval_tasks=5"]).unwrap();
        let Err(e) = load_tasks(&cfg) else { panic!("overlap accepted") };
        let e = e.to_string();
        assert!(e.contains("data.train = gsm8k:test") && e.contains("data.eval = gsm8k:test"), "{e}");
        assert!(e.contains("5 shared") && e.contains("allow_overlap"), "{e}");
        let cfg = config(
            "gsm8k-smollm2",
            &["data.train=gsm8k:test", "data.eval_tasks=5", "data.allow_overlap=true"],
        )
        .unwrap();
        assert!(load_tasks(&cfg).is_ok());

        // By question text: a training file that copies a test problem under another id,
        // with different case, spacing and punctuation.
        let test = Dataset::Gsm8k.load_split(Path::new(&data_dir()), "test").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.jsonl");
        let copied = format!("  {}!! ", test[3].question().to_uppercase().replace(' ', "  "));
        let lines = [
            serde_json::json!({"question": "What is 2 + 2?", "answer": "2 + 2 = 4\n#### 4"}),
            serde_json::json!({"question": copied, "answer": "#### 1"}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&file, text).unwrap();
        let train = format!("data.train={}", file.display());
        let cfg = config("gsm8k-smollm2", &[&train, "data.eval_tasks=10"]).unwrap();
        let e = load_tasks(&cfg).err().expect("overlap by text accepted").to_string();
        assert!(e.contains("1 shared") && e.contains("gsm8k/test/3") && e.contains("mine.jsonl"), "{e}");
        let cfg = config("gsm8k-smollm2", &[&train, "data.eval_tasks=3"]).unwrap();
        let (train, _) = ids(&load_tasks(&cfg).unwrap());
        assert_eq!(train.len(), 2);
    }

    #[test]
    fn task_sources_are_validated_against_the_kind() {
        let e = config("gsm8k-smollm2", &["data.train=gsm8k:dev"]).unwrap_err().to_string();
        assert!(e.contains("data.train") && e.contains("train, test"), "{e}");
        let e = config("gsm8k-smollm2", &["data.eval=math500:test"]).unwrap_err().to_string();
        assert!(e.contains("data.eval") && e.contains("math500") && e.contains("gsm8k"), "{e}");
        let e = config("demo", &["data.train=gsm8k:train"]).unwrap_err().to_string();
        assert!(e.contains("data.train"), "{e}");
        assert_eq!(
            TaskSpec::parse("mbpp:validation").unwrap(),
            TaskSpec::Split { dataset: Dataset::Mbpp, split: "validation".into() }
        );
        assert_eq!(TaskSpec::parse("runs/x:y.jsonl").unwrap(), TaskSpec::File("runs/x:y.jsonl".into()));
        // AIME 2024 and AMC 2023 are evaluated like MATH-500.
        for (kind, n) in [("aime2024", 30), ("amc2023", 40)] {
            let kind_set = format!("data.kind={kind}");
            let cfg = config("math500-eval", &[&kind_set, "data.eval_tasks=100"]).unwrap();
            let (train, eval) = ids(&load_tasks(&cfg).unwrap());
            assert!(train.is_empty());
            assert_eq!(eval.len(), n, "{kind}");
        }
        // MATH-500 is evaluation-only: no training split by default.
        let cfg = config("math500-eval", &[]).unwrap();
        assert_eq!(cfg.data.train_spec().unwrap(), None);
        let (train, eval) = ids(&load_tasks(&cfg).unwrap());
        assert!(train.is_empty());
        assert_eq!(eval.len(), 500);
    }

    /// Training on a generated family in the few-shot style, evaluated on named sets: the same
    /// templates under another seed (training's repeats left out), templates never trained on,
    /// and a GSM8K slice, each its own set.
    #[test]
    fn generated_training_problems_and_named_evaluation_sets() {
        let sets = [
            "data.train=\"arith 2-step seed 0\"",
            "data.limit=300",
            "data.prompt=\"few_shot\"",
            "data.eval_tasks=0",
            "eval.sets=[{ name = \"same_templates\", tasks = \"arith 2-step seed 9\", n = 50 }, { name = \"new_templates\", tasks = \"heldout 2-4-step seed 9\", n = 24 }, { name = \"gsm8k\", tasks = \"gsm8k:test\", n = 5 }]",
        ];
        let cfg = config("gsm8k-smollm2", &sets).unwrap();
        let Tasks::Dataset { train, eval, named } = load_tasks(&cfg).unwrap() else { panic!("a dataset") };
        assert_eq!(train.len(), 300);
        assert!(eval.is_empty());
        assert!(train.iter().all(|t| t.id.starts_with("arith/0/2/")), "{}", train[0].id);
        // Few-shot: the system prompt, two worked examples, the problem.
        let roles: Vec<mentor_core::Role> = train[0].prompt.iter().map(|m| m.role).collect();
        use mentor_core::Role::{Assistant, System, User};
        assert_eq!(roles, [System, User, Assistant, User, Assistant, User]);
        let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["same_templates", "new_templates", "gsm8k"]);
        let (same, new, gsm) = (&named[0].1, &named[1].1, &named[2].1);
        assert_eq!((same.len(), new.len(), gsm.len()), (50, 24, 5));
        let trained: std::collections::HashSet<String> = train.iter().map(normalised_question).collect();
        assert!(same
            .iter()
            .all(|t| t.id.starts_with("arith/9/2/") && !trained.contains(&normalised_question(t))));
        assert!(new.iter().all(|t| t.id.starts_with("heldout/9/")));
        assert_eq!(gsm[0].id, "gsm8k/test/0");
        assert!(same.iter().chain(new).chain(gsm).all(|t| t.prompt.len() == 6), "every set few-shot");
        // The run's evaluation sets, one per named set, reported under their names.
        let evals =
            crate::train::eval_sets(&cfg, &Tasks::Dataset { train, eval: vec![], named: named.clone() });
        assert_eq!(
            evals.iter().map(|e| e.name.as_deref()).collect::<Vec<_>>(),
            names.iter().map(|n| Some(*n)).collect::<Vec<_>>()
        );
        // Sets are checked against the run's kind and named apart.
        let e = config("gsm8k-smollm2", &["eval.sets=[{ name = \"m\", tasks = \"math500:test\", n = 5 }]"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("eval.sets[0].tasks") && e.contains("math500"), "{e}");
        let twice = "eval.sets=[{ name = \"a\", tasks = \"gsm8k:test\", n = 5 }, { name = \"a\", tasks = \"gsm8k:test\", n = 5 }]";
        let e = config("gsm8k-smollm2", &[twice]).unwrap_err().to_string();
        assert!(e.contains("eval.sets[1].name"), "{e}");
        let e = config("gsm8k-smollm2", &["data.train=\"heldout 5-step seed 0\""]).unwrap_err().to_string();
        assert!(e.contains("data.train") && e.contains("steps 1-4"), "{e}");
        let e = config("mbpp-smollm2", &["data.train=\"arith 2-step seed 0\""]).unwrap_err().to_string();
        assert!(e.contains("gsm8k"), "{e}");
    }

    #[test]
    fn generated_families_parse_and_print_back() {
        use crate::config::{Family, Generated};
        for (text, g) in [
            ("arith 2-step seed 0", Generated { family: Family::Arith, steps: (2, 2), seed: Some(0) }),
            ("heldout 2-4-step seed *", Generated { family: Family::Heldout, steps: (2, 4), seed: None }),
            ("heldout 3-step seed 17", Generated { family: Family::Heldout, steps: (3, 3), seed: Some(17) }),
        ] {
            assert_eq!(Generated::parse(text), Some(Ok(g)));
            assert_eq!(g.to_string(), text);
            assert_eq!(TaskSpec::parse(text).unwrap(), TaskSpec::Generated(g));
        }
        assert!(Generated::parse("arith 2-4-step seed 0").unwrap().is_err(), "arith has one count");
        assert!(Generated::parse("heldout 4-2-step seed 0").unwrap().is_err());
        assert!(Generated::parse("heldout two steps").unwrap().is_err());
        assert_eq!(Generated::parse("arithmetic.jsonl"), None);
        assert_eq!(Generated::parse("gsm8k:test"), None);
    }

    #[test]
    fn a_curriculum_pool_repeats_its_tasks_and_holds_out_the_evaluation_set() {
        let cfg =
            TrainConfig::load("demo", &["curriculum.pool=12".into(), "sampling.prompts_per_step=8".into()])
                .unwrap();
        let hard = 4;
        let pool = pool(&cfg, hard);
        assert_eq!(pool.len(), 12);
        assert_eq!(pool, super::pool(&cfg, hard), "seeded");
        let questions: std::collections::HashSet<&str> = pool.iter().map(|t| t.question()).collect();
        assert_eq!(questions.len(), 12, "distinct problems");
        let eval = cfg.curriculum.tasks(super::curriculum_eval_seed(&cfg), hard, cfg.eval.problems, "eval");
        assert!(eval.iter().all(|t| !questions.contains(t.question())), "no evaluation problem in the pool");
        // Steps at the hard level draw from the pool only, and every task comes back.
        let first_hard = cfg.curriculum.schedule[0].steps;
        let mut seen = std::collections::HashMap::new();
        for step in first_hard..first_hard + 6 {
            for t in step_tasks(&cfg, &Tasks::Curriculum, step) {
                assert!(t.id.starts_with("pool-L4-"), "{}", t.id);
                *seen.entry(t.id).or_insert(0) += 1;
            }
        }
        assert_eq!(seen.len(), 12);
        assert!(seen.values().all(|&n| n == 4), "48 draws over 12 tasks, epoch by epoch: {seen:?}");
        assert_eq!(step_tasks(&cfg, &Tasks::Curriculum, 20), step_tasks(&cfg, &Tasks::Curriculum, 20));
    }
}
