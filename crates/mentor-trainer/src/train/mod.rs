//! Training, by stage: `tasks` (the training and held-out splits, the overlap guard, each
//! step's tasks), `arms` (the strategy plug-in of each arm), `run` (start or resume →
//! steps → checkpoints → finish; a step samples the groups, verifies them, hands them to the
//! arm's strategy — vanilla, DAPO, hints — and runs the GRPO update), `preflight` (before a run
//! writes anything: lengths against the model's context, the memory estimate against the
//! machine), `evaluation` (without hints, every `eval.every` steps) and `records` (the JSONL files a run writes). A resumed
//! run reproduces exactly what an uninterrupted one would have done.

pub(crate) mod arms;
pub(crate) mod evaluation;
pub mod preflight;
pub(crate) mod records;
pub(crate) mod run;
pub(crate) mod tasks;

pub use arms::{local_model, prompts, strategy, token_count};
pub use evaluation::{eval_sets, run_eval, EvalSet};
pub use records::{
    peak_rss_mib, InterventionEntry, InterventionLine, RunInfo, StepRecord, StepTiming, EVAL_FILE,
    INTERVENTIONS_FILE, METRICS_FILE, RUN_FILE, SUMMARY_FILE,
};
pub use run::{start_eval, train, Progress, TrainOptions};
pub use tasks::{load_tasks, Tasks};
