//! Command-line definitions (clap). Only subcommands that work are listed.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "mentor",
    version,
    about = "MENTOR: RLVR training that turns zero-reward collapse into guided on-policy attempts"
)]
pub(crate) struct Cli {
    /// Worker threads for tensor work (default: all cores; 1 is often faster on a busy
    /// 2-core machine).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    /// Library log messages shown on stderr (e.g. the LLM mentor's fallbacks to rules):
    /// `error`, `warn`, `info`, `debug`, `trace`, or a `RUST_LOG`-style filter. `RUST_LOG`,
    /// when set, is used instead of the default.
    #[arg(long, global = true, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Which code path the tensor kernels take: `auto` (AVX-512 where the CPU has it, else
    /// AVX2 + FMA where it has those), `avx2` or `avx512` (an error on a CPU without them) or
    /// `portable` (scalar code); all give the same results, bit for bit. Also read from
    /// `MENTOR_KERNELS`.
    #[arg(long, global = true, value_name = "PATH", env = "MENTOR_KERNELS")]
    pub kernels: Option<mentor_kernels::KernelPath>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Load a benchmark file into MENTOR tasks and print them as JSON Lines.
    Tasks(TasksArgs),
    /// Generate a completion with a model (Hub repo id, local directory or GGUF file).
    Generate(GenerateArgs),
    /// Serve a model over an OpenAI-compatible chat-completions endpoint (`/v1/chat/completions`).
    Serve(ServeArgs),
    /// Check completions with a verifier, one JSON line per input.
    #[command(subcommand)]
    Verify(VerifyCommand),
    /// Train with GRPO (and an arm: vanilla, dapo, static_hints, refinement, mentor).
    Train(TrainArgs),
    /// Evaluate a model without hints (greedy pass@1, optional pass@k).
    Eval(EvalArgs),
    /// The embedded default: pretrain a tiny model, run every arm on 3 seeds (0, 1, 2), write a report.
    Demo(DemoArgs),
    /// Markdown + SVG report over run directories.
    Report(ReportArgs),
    /// Measure how often each mentor turns an all-fail group into a success (no training).
    Rescue(RescueArgs),
    /// Train every arm × seed of one config that has no result file yet (resuming checkpoints),
    /// condense each into a small result file, and pool them all.
    Experiment(ExperimentArgs),
    /// Measure the learner's unhinted pass@1 over temperatures, lengths, prompts and difficulty
    /// strata, and name the regime where it sometimes succeeds (pass@1 in [0.10, 0.50]).
    Probe(ProbeArgs),
}

/// Arguments of `mentor experiment`.
#[derive(Args, Clone)]
pub struct ExperimentArgs {
    /// Config file or preset: every run's settings but its arm and seed.
    #[arg(long)]
    pub config: String,
    /// Override a config value for every run (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// The arms.
    #[arg(long, value_delimiter = ',', default_value = "vanilla,retry,mentor,random_step")]
    pub arms: Vec<String>,
    /// The run seeds.
    #[arg(long, value_delimiter = ',', default_value = "0,1,2")]
    pub seeds: Vec<u64>,
    /// Where the result files go (`<arm>-s<seed>.json`, `pooled.md`): a directory that is
    /// committed.
    #[arg(long)]
    pub results: PathBuf,
    /// Where the runs' directories and checkpoints go (kept out of git).
    #[arg(long, default_value = "runs/experiment")]
    pub runs: PathBuf,
    /// The commit the binary was built from, written into each result file.
    #[arg(long, default_value = "unknown")]
    pub commit: String,
    /// Pool the result files only; run nothing.
    #[arg(long)]
    pub pool_only: bool,
    /// A sweep of one setting, `KEY=V1,V2,..` (e.g. `grpo.learning_rate=3e-6,1e-5,3e-5`): the
    /// arms × seeds run for each value, its results in `<results>/<value>/`, then
    /// `<results>/sweep.md` applies the rule: the largest value whose train reward rises (mean
    /// of the last `--sweep-window` steps above the first's) while its final greedy pass@1 on
    /// `--sweep-set` does not fall below step 0's.
    #[arg(long, value_name = "KEY=V1,V2,..")]
    pub sweep: Option<String>,
    /// The evaluation set the sweep's rule reads.
    #[arg(long, default_value = "same_templates")]
    pub sweep_set: String,
    /// Steps averaged at each end of the train reward curve by the sweep's rule.
    #[arg(long, default_value_t = 10)]
    pub sweep_window: usize,
}

/// Arguments of `mentor probe`.
#[derive(Args)]
pub struct ProbeArgs {
    /// Config file, or a preset name (rescue-arith-smollm2, rescue-gsm8k-smollm2, rescue-mbpp-smollm2): its model,
    /// training data, system prompt and `rescue.batch_rows`.
    #[arg(long)]
    pub config: String,
    /// Override a config value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Sampling temperatures.
    #[arg(long, value_delimiter = ',', default_value = "0.3,0.6,1.0")]
    pub temperatures: Vec<f64>,
    /// `max_new_tokens` values (attempts are drawn at the largest and read at each by truncation).
    #[arg(long, value_delimiter = ',', default_value = "128,256,384")]
    pub lengths: Vec<usize>,
    /// Prompt styles: `system` (the config's prompt), `few_shot` (two worked examples first).
    #[arg(long, value_delimiter = ',', default_value = "system,few_shot")]
    pub prompts: Vec<String>,
    /// Attempts per problem.
    #[arg(long, default_value_t = 4)]
    pub attempts: usize,
    /// Problems per cell after each round, increasing (a cell stops early once its interval
    /// lies outside [0.10, 0.50] at every length).
    #[arg(long, value_delimiter = ',', default_value = "10,20")]
    pub rounds: Vec<usize>,
    /// Steps of the generated arithmetic word problems (math data; 0: none).
    #[arg(long, default_value_t = 2)]
    pub arith_steps: usize,
    /// Family seed of the generated arithmetic problems.
    #[arg(long, default_value_t = 0)]
    pub arith_seed: u64,
    /// No new round starts after this many minutes (0: no limit).
    #[arg(long, default_value_t = 30.0)]
    pub minutes: f64,
    /// Print the report as one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mentor rescue`.
#[derive(Args)]
pub struct RescueArgs {
    /// Config file, or a preset name: rescue-arith-smollm2, rescue-gsm8k-smollm2, rescue-mbpp-smollm2 (any training
    /// config works; `[rescue]` says what to measure).
    #[arg(long)]
    pub config: String,
    /// Override a config value, e.g. `--set rescue.collapsed=20` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Attempt seeds (`run.seed` of each measurement), e.g. `0,1,2`: each runs into
    /// `run.output_dir/seed-<s>/` unless that seed already finished there, then every finished
    /// seed is pooled into `pooled.json` and `pooled.md`.
    #[arg(long, value_delimiter = ',')]
    pub seeds: Vec<u64>,
    /// Print the summary (with `--seeds`: the pooled one) as one JSON object on stdout instead
    /// of the table.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mentor train`.
#[derive(Args)]
pub struct TrainArgs {
    /// Config file, or a preset name: demo, gsm8k-smollm2, mbpp-smollm2, math500-eval.
    #[arg(long)]
    pub config: String,
    /// Override a config value, e.g. `--set strategy.arm=vanilla` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Continue from the newest checkpoint in the run's output directory. The configuration
    /// must be the run's own: only `run.steps`, `run.checkpoint_every`, `run.progress`,
    /// `run.log_completions_every` and the spelling of `run.output_dir` may change.
    #[arg(long, conflicts_with = "fork")]
    pub resume: bool,
    /// Continue from the newest checkpoint in the run's output directory under a *new*
    /// configuration: a branch (the demo starts every arm from one copied warm-up this way).
    /// The run's `config.toml` and `run.json` then describe the branch.
    #[arg(long)]
    pub fork: bool,
    /// Print the run summary as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Start even when the run's memory estimate (printed at the start) exceeds the memory
    /// this machine has available; without it such a run is refused before anything is
    /// written.
    #[arg(long)]
    pub allow_over_memory: bool,
}

/// Arguments of `mentor eval`.
#[derive(Args)]
pub struct EvalArgs {
    /// Config file or preset (model, data and `[eval]` are used).
    #[arg(long)]
    pub config: String,
    /// Override a config value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Evaluate this model instead of `model.source` (a checkpoint's `policy/`, a run's
    /// `final/`, a .gguf, a Hub id).
    #[arg(long)]
    pub model: Option<String>,
    /// Print the rows as JSON Lines instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mentor demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Config file or preset.
    #[arg(long, default_value = "demo")]
    pub config: String,
    /// Override a config value (repeatable), e.g. `--set curriculum.schedule=...`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Where the demo writes its runs and report (default: the config's `run.output_dir`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Arms to run.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "vanilla,static_hints,wrong_answers,where_only,random_prefix,full_solution,full_solution_learner,mentor"
    )]
    pub arms: Vec<mentor_trainer::config::Arm>,
    /// RL seeds to run on each pretrained model.
    #[arg(long, value_delimiter = ',', default_value = "0,1,2")]
    pub seeds: Vec<u64>,
    /// Pretrained models: one pretraining per seed (`pretrain.seed`), each cached in
    /// `<out>/pretrained-p<seed>/`; every RL seed and arm runs on each.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub pretrain_seeds: Vec<u64>,
    /// The 3 × 3 behind the README's claims: pretrained models 0, 1, 2 × RL seeds 0, 1, 2
    /// (instead of `--pretrain-seeds` and `--seeds`).
    #[arg(long)]
    pub full: bool,
    /// Runs at a time (default: the cores divided by `--threads`, each run's tensor threads,
    /// which default to 1 for the demo).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Print the demo summary as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mentor report`.
#[derive(Args)]
pub struct ReportArgs {
    /// Run directories (each with run.json); a directory without run.json is searched one
    /// level down.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Output directory (default: `report/` beside the first run).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Report title.
    #[arg(long, default_value = "MENTOR runs")]
    pub title: String,
}

/// `mentor verify <domain>`.
#[derive(Subcommand)]
pub enum VerifyCommand {
    /// Math answers: JSONL lines `{"id","gold","completion"}` in, `{"id","correct","extracted","feedback"}` out.
    Math(VerifyMathArgs),
    /// Code in the sandbox: JSONL records of the dataset's schema plus `completion` in,
    /// `{"id","passed","reward","feedback"}` out.
    Code(VerifyCodeArgs),
}

/// Arguments of `mentor verify code`.
#[derive(Args)]
pub struct VerifyCodeArgs {
    /// JSONL input file (`-` for stdin).
    #[arg(long)]
    pub input: PathBuf,
    /// Record schema: humaneval, mbpp or stdio.
    #[arg(long)]
    pub format: String,
    /// Print the closing summary as a JSON object (on stderr) instead of a text line.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mentor verify math`.
#[derive(Args)]
pub struct VerifyMathArgs {
    /// JSONL input file (`-` for stdin).
    #[arg(long)]
    pub input: PathBuf,
    /// Print the closing summary as a JSON object (on stderr) instead of a text line.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mentor tasks`.
#[derive(Args)]
pub struct TasksArgs {
    /// Which benchmark: gsm8k, math500, humaneval, mbpp, aime2024, amc2023.
    #[arg(long)]
    pub dataset: String,
    /// The file to load (default: the set's standard file under --data-dir).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Data directory laid out like `cargo xtask datasets` installs it
    /// (default: `$MENTOR_HOME/datasets`).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Print at most this many tasks.
    #[arg(long)]
    pub limit: Option<usize>,
}

/// Arguments of `mentor generate`.
#[derive(Args)]
pub struct GenerateArgs {
    /// Hub repo id (`org/name[@revision]`), a local model directory, or a `.gguf` file.
    #[arg(long)]
    pub model: String,
    /// The prompt.
    #[arg(long)]
    pub prompt: String,
    /// Render the prompt as a user message through the model's own chat template.
    #[arg(long)]
    pub chat: bool,
    /// Most tokens to generate.
    #[arg(long, default_value_t = 128)]
    pub max_new_tokens: usize,
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Random seed (same seed, same output).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print one JSON line `{"text","token_ids","finish_reason"}` instead of the text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mentor serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Hub repo id (`org/name[@revision]`), a local model directory, or a `.gguf` file.
    #[arg(long)]
    pub model: String,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to bind; 0 picks a free one. The bound address is printed on stderr as
    /// `listening on http://ADDR`.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Model id listed by `/v1/models` and echoed in replies (default: from `--model`).
    #[arg(long)]
    pub model_id: Option<String>,
    /// `max_tokens` for requests that give none.
    #[arg(long, default_value_t = 256)]
    pub default_max_tokens: usize,
    /// Upper bound on `max_tokens` (larger requests are clamped).
    #[arg(long, default_value_t = 2048)]
    pub max_tokens_cap: usize,
    /// Chat completions generating at once (they share the `--threads` tensor threads).
    #[arg(long, default_value_t = 2)]
    pub max_concurrency: usize,
    /// Chat completions waiting for a generation slot; past that, 503.
    #[arg(long, default_value_t = 16)]
    pub max_queue: usize,
    /// Connections open at once (reading, waiting, generating or answering); past that a new
    /// connection gets 503. Must exceed `--max-concurrency` + `--max-queue`.
    #[arg(long, default_value_t = 64)]
    pub max_connections: usize,
    /// Seconds a client has to send its whole request (line, headers and body) after
    /// connecting; past that, 408. Also the limit on each write of a reply.
    #[arg(long, default_value_t = 30.0)]
    pub read_timeout_s: f64,
    /// Seconds from connecting to the reply: a request still waiting or generating then is
    /// stopped and gets 504.
    #[arg(long, default_value_t = 300.0)]
    pub request_timeout_s: f64,
}
