//! `mentor probe`: where the learner is at the edge of what it can do.
//!
//! A hint can only be told apart from no hint by a learner that sometimes succeeds. The probe
//! measures the learner's *unhinted* pass@1 over a grid — temperature × `max_new_tokens` ×
//! prompt style (the run's prompt; the same with two worked examples) × difficulty stratum
//! ([`strata`]) — and names the cell whose pass@1 lies in `[0.10, 0.50]` ([`grid::choose`]): the
//! regime a rescue preset should run at.
//!
//! Cost is kept down three ways, each stated in the report:
//! - **Lengths by truncation.** Each attempt is drawn once at the longest length; the attempt
//!   at a shorter length `L` is its first `L` tokens. With per-row seeds
//!   ([`mentor_policy::Policy::generate_with_row_seeds`]) that is what a run at
//!   `max_new_tokens = L` draws (up to float rounding across batch shapes).
//! - **Rounds with stopping.** A cell is sampled a round of problems at a time and stops once
//!   its interval lies outside the regime at every length ([`grid::Cell::decide`]).
//! - **Strata in order.** Harder strata wait for easier ones and are skipped after a too-hard
//!   one ([`grid::advance`]).
//!
//! The same problem gets the same attempt seeds in every cell (paired across temperatures and
//! prompts).

pub mod grid;
mod options;
pub mod report;
use mentor_trainer::strata;

use std::collections::HashMap;
use std::time::Instant;

use indicatif::ProgressBar;
use mentor_core::{Task, Verifier};
use mentor_policy::{GenerateConfig, Policy, Sampler};

pub use self::options::{ProbeOptions, ProbeReport};

use self::grid::{Cell, Status};
use mentor_trainer::seed::mix;
use mentor_trainer::strata::Stratum;
use mentor_trainer::{Error, Result};

/// The stream of the probe's attempts.
pub const PROBE_STREAM: u64 = 0x9e0b;

/// One attempt, read at every length: per length, whether it passed, whether it had ended, and
/// its tokens within the length.
type Reading = Vec<(bool, bool, usize)>;

/// Draws `attempts` attempts of each `(task, prompt)` at temperature `t` up to the longest of
/// `lengths` and reads each at every length (truncated, decoded, verified).
#[allow(clippy::too_many_arguments)] // the draw's context, passed down as is
fn draw(
    policy: &Policy,
    verifier: &dyn Verifier,
    items: &[(&Task, Vec<mentor_core::Message>)],
    t: f64,
    opts: &ProbeOptions,
    seed: u64,
    bar: &ProgressBar,
    counters: &mut (usize, usize),
) -> Result<Vec<Vec<Reading>>> {
    let longest = opts.lengths.iter().copied().max().unwrap_or(1);
    let config = GenerateConfig {
        sampler: Sampler { temperature: t, top_p: 1.0, top_k: 0 },
        max_new_tokens: longest,
        ..GenerateConfig::default()
    };
    let n = opts.attempts;
    let mut prompts = Vec::with_capacity(items.len());
    for (_, messages) in items {
        prompts.push(policy.encode_chat(messages)?);
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| prompts[i].len());
    let mut rows = Vec::with_capacity(items.len() * n);
    let mut seeds = Vec::with_capacity(items.len() * n);
    let mut owner = Vec::with_capacity(items.len() * n);
    for &i in &order {
        for g in 0..n {
            rows.push(prompts[i].clone());
            seeds.push(mix(&[seed, PROBE_STREAM, mentor_trainer::seed::str_key(&items[i].0.id), g as u64]));
            owner.push((i, g));
        }
    }
    let per_call = (opts.batch_rows / n).max(1) * n;
    let mut gens = Vec::with_capacity(rows.len());
    for (chunk, chunk_seeds) in rows.chunks(per_call).zip(seeds.chunks(per_call)) {
        let out = policy.generate_with_row_seeds(chunk, &config, chunk_seeds)?;
        counters.0 += out.len();
        counters.1 += out.iter().map(|g| g.token_ids.len()).sum::<usize>();
        bar.inc(out.len() as u64);
        gens.extend(out);
    }
    if gens.len() != rows.len() {
        return Err(Error::Missing("the policy returned fewer generations than rows".into()));
    }
    // Every (row, length) text, verified once per distinct (task, text).
    let tok = policy.tokenizer();
    let mut texts: Vec<Vec<String>> = Vec::with_capacity(gens.len());
    for g in &gens {
        let mut per_length = Vec::with_capacity(opts.lengths.len());
        for &l in &opts.lengths {
            per_length.push(if g.token_ids.len() <= l {
                g.text.clone()
            } else {
                tok.decode(&g.token_ids[..l], true)?
            });
        }
        texts.push(per_length);
    }
    let mut distinct: HashMap<(usize, &str), usize> = HashMap::new();
    let mut batch: Vec<(&Task, &str)> = Vec::new();
    for (r, per_length) in texts.iter().enumerate() {
        let i = owner[r].0;
        for text in per_length {
            distinct.entry((i, text.as_str())).or_insert_with(|| {
                batch.push((items[i].0, text.as_str()));
                batch.len() - 1
            });
        }
    }
    let verdicts = verifier.judge_batch(&batch);
    if verdicts.len() != batch.len() {
        return Err(Error::Missing("the verifier returned fewer verdicts than completions".into()));
    }
    let mut out: Vec<Vec<Reading>> = items.iter().map(|_| vec![Vec::new(); n]).collect();
    for (r, g) in gens.iter().enumerate() {
        let (i, a) = owner[r];
        let stopped = !matches!(g.finish_reason, mentor_policy::StopCondition::Length);
        out[i][a] = opts
            .lengths
            .iter()
            .zip(&texts[r])
            .map(|(&l, text)| {
                let passed = verdicts[distinct[&(i, text.as_str())]].passed();
                (passed, stopped && g.token_ids.len() <= l, g.token_ids.len().min(l))
            })
            .collect();
    }
    Ok(out)
}

/// What [`probe`] measured: the cells, the rounds run, the rows and tokens generated, and
/// whether the time budget stopped it.
#[derive(Debug, Clone)]
pub struct Grid {
    /// Every cell, in grid order.
    pub cells: Vec<Cell>,
    /// Rounds run.
    pub rounds: usize,
    /// Rows generated.
    pub rows: usize,
    /// Tokens generated.
    pub tokens: usize,
    /// Whether the time budget stopped it.
    pub budget_hit: bool,
}

/// Runs the probe over `strata` with `policy` and `verifier`; `seed` seeds the attempts.
pub fn probe(
    policy: &Policy,
    verifier: &dyn Verifier,
    strata: &[Stratum],
    opts: &ProbeOptions,
    seed: u64,
    bar: &ProgressBar,
) -> Result<Grid> {
    opts.validate().map_err(|message| Error::Config { file: "probe".into(), message })?;
    let t0 = Instant::now();
    let mut lengths = opts.lengths.clone();
    lengths.sort_unstable();
    lengths.dedup();
    let opts = &ProbeOptions { lengths, ..opts.clone() };
    // Grid order: temperature, prompt, then the strata as given (a source's easiest first).
    let mut rank: HashMap<strata::Source, usize> = HashMap::new();
    let ranks: Vec<usize> = strata
        .iter()
        .map(|s| {
            let r = rank.entry(s.source).or_insert(0);
            *r += 1;
            *r - 1
        })
        .collect();
    let mut cells = Vec::new();
    let mut owner = Vec::new();
    for &t in &opts.temperatures {
        for &p in &opts.prompts {
            for (k, s) in strata.iter().enumerate() {
                cells.push(Cell::new(t, p, (&s.name, s.source, ranks[k], s.tasks.len()), &opts.lengths));
                owner.push(k);
            }
        }
    }
    let mut counters = (0usize, 0usize);
    let mut rounds = 0;
    let mut budget_hit = false;
    loop {
        let live: Vec<usize> = (0..cells.len()).filter(|&c| cells[c].status == Status::Live).collect();
        if live.is_empty() {
            break;
        }
        if opts.budget_seconds > 0.0 && t0.elapsed().as_secs_f64() > opts.budget_seconds {
            for c in &mut cells {
                if matches!(c.status, Status::Live | Status::Waiting) {
                    c.status = Status::Budget;
                }
            }
            budget_hit = true;
            break;
        }
        rounds += 1;
        // Each live cell's next round of problems, grouped by temperature.
        let mut planned: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
        for &c in &live {
            let cell = &cells[c];
            let target = opts.rounds.get(cell.rounds).copied().unwrap_or(cell.problems);
            let range = cell.problems..target.min(cell.available);
            planned.push((c, range));
        }
        let rows: usize = planned.iter().map(|(_, r)| r.len() * opts.attempts).sum();
        bar.set_length(bar.position() + rows as u64);
        bar.set_message(format!("round {rounds}: {} cells", planned.len()));
        for &t in &opts.temperatures {
            let mine: Vec<&(usize, std::ops::Range<usize>)> =
                planned.iter().filter(|(c, _)| cells[*c].temperature == t).collect();
            let mut items = Vec::new();
            let mut back = Vec::new();
            for (c, range) in &mine {
                let s = &strata[owner[*c]];
                for p in range.clone() {
                    let task = &s.tasks[p];
                    items.push((task, strata::prompt(task, cells[*c].prompt, &s.examples)));
                    back.push(*c);
                }
            }
            if items.is_empty() {
                continue;
            }
            let readings = draw(policy, verifier, &items, t, opts, seed, bar, &mut counters)?;
            for (c, attempts) in back.into_iter().zip(readings) {
                for reading in attempts {
                    for (at, (passed, finished, tokens)) in cells[c].lengths.iter_mut().zip(reading) {
                        at.attempts += 1;
                        at.passed += usize::from(passed);
                        at.finished += usize::from(finished);
                        at.tokens += tokens;
                    }
                }
            }
        }
        for (c, range) in planned {
            let cell = &mut cells[c];
            cell.problems = range.end.max(cell.problems);
            cell.rounds += 1;
            let last = cell.rounds >= opts.rounds.len() || range.is_empty();
            cell.status = cell.decide(grid::LOW, grid::HIGH, last);
        }
        grid::advance(&mut cells);
    }
    Ok(Grid { cells, rounds, rows: counters.0, tokens: counters.1, budget_hit })
}

/// Runs `mentor probe` for a config: its training data's strata (and the arithmetic stratum
/// for math data), its model; writes `probe.json` and `probe.md` to `run.output_dir`.
pub fn run(
    cfg: &mentor_trainer::config::TrainConfig,
    code: Option<&dyn Verifier>,
    opts: &ProbeOptions,
) -> Result<ProbeReport> {
    let t0 = Instant::now();
    let mentor_trainer::train::Tasks::Dataset { train: tasks, .. } = mentor_trainer::train::load_tasks(cfg)?
    else {
        return Err(Error::Config {
            file: "[data]".into(),
            message:
                "`mentor probe` measures a dataset's training problems; `data.kind = \"curriculum\"` has none"
                    .into(),
        });
    };
    let name = cfg.data.kind.dataset().map_or("data", |d| d.name()).to_string();
    let code_data = tasks.first().is_some_and(|t| t.domain() == mentor_core::Domain::Code);
    let mut strata = strata::of_dataset(&tasks, &name);
    if strata.is_empty() {
        return Err(Error::Missing("no training task has a reference solution to stratify by".into()));
    }
    if !code_data && opts.arith_steps > 0 {
        let most = opts.rounds.iter().copied().max().unwrap_or(0);
        strata.push(strata::arith(
            opts.arith_seed,
            opts.arith_steps,
            most,
            cfg.data.system_prompt.as_deref(),
        ));
    }
    let dir = cfg.output_dir().to_path_buf();
    std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
    let policy = mentor_trainer::policy::build(&cfg.model, cfg.run.seed)?;
    let verifier = mentor_trainer::verify::DomainVerifier::new(code);
    let bar = crate::progress::bar(cfg.run.progress, "probe");
    let Grid { cells, rounds, rows, tokens, budget_hit } =
        probe(&policy, &verifier, &strata, opts, cfg.run.seed, &bar)?;
    bar.finish_and_clear();
    let regime = grid::choose(&cells, grid::LOW, grid::HIGH, opts.min_attempts);
    let report = ProbeReport {
        cells,
        regime,
        options: opts.clone(),
        model: cfg.model.source.to_string(),
        data: cfg.data.train_spec().ok().flatten().map_or_else(|| name.clone(), |s| s.to_string()),
        rows,
        tokens,
        rounds,
        seconds: t0.elapsed().as_secs_f64(),
        budget_hit,
    };
    mentor_trainer::jsonl::write_json(&dir.join(report::JSON_FILE), &report)?;
    mentor_trainer::jsonl::write_atomic(
        &dir.join(report::MARKDOWN_FILE),
        report::markdown(&report).as_bytes(),
    )?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device};
    use mentor_policy::Config;

    use super::*;
    use mentor_tasks::curriculum::ALPHABET;
    use mentor_trainer::strata::PromptStyle;

    fn policy() -> Policy {
        Policy::char_level(ALPHABET, Config::tiny(0, 32, 2, 4, 2), 7, DType::F32, &Device::Cpu).unwrap()
    }

    fn tasks(prefix: &str, n: usize) -> Vec<Task> {
        (0..n).map(|i| Task::math(format!("{prefix}{i}"), format!("{i}+1="), (i + 1).to_string())).collect()
    }

    fn stratum(name: &str, source: strata::Source, n: usize) -> Stratum {
        Stratum { name: name.into(), source, tasks: tasks(name, n), examples: Vec::new() }
    }

    fn opts() -> ProbeOptions {
        ProbeOptions {
            temperatures: vec![0.5, 1.0],
            lengths: vec![4, 8],
            prompts: vec![PromptStyle::System],
            attempts: 2,
            rounds: vec![3, 5],
            arith_steps: 0,
            budget_seconds: 0.0,
            batch_rows: 8,
            min_attempts: 4,
            ..ProbeOptions::default()
        }
    }

    /// The grid on a tiny untrained model: every (temperature, stratum) cell exists; an
    /// untrained model passes nothing, so the easiest stratum of each chain runs both rounds
    /// (10 attempts cannot show a rate below 0.10) and the harder one waits, then starts.
    #[test]
    fn the_grid_runs_on_a_tiny_model() {
        let p = policy();
        let v = mentor_trainer::verify::DomainVerifier::new(None);
        let strata =
            [stratum("easy", strata::Source::Dataset, 6), stratum("hard", strata::Source::Dataset, 6)];
        let Grid { cells, rounds, rows, tokens, budget_hit: budget } =
            probe(&p, &v, &strata, &opts(), 1, &ProgressBar::hidden()).unwrap();
        assert!(!budget);
        assert_eq!(cells.len(), 4);
        assert_eq!(
            cells.iter().map(|c| (c.temperature, c.stratum.as_str())).collect::<Vec<_>>(),
            [(0.5, "easy"), (0.5, "hard"), (1.0, "easy"), (1.0, "hard")]
        );
        for c in &cells {
            assert_eq!(c.problems, 5, "{c:?}");
            assert_eq!(c.lengths.iter().map(|l| l.attempts).collect::<Vec<_>>(), [10, 10]);
            assert_eq!(c.status, Status::Complete);
            assert!(c.lengths[0].tokens <= c.lengths[1].tokens);
        }
        assert_eq!(rounds, 4, "two rounds per stratum, strata one after another");
        assert_eq!(rows, 4 * 10);
        assert!(tokens > 0 && tokens <= rows * 8);
    }

    /// An attempt read at a shorter length is the attempt a run at that length draws.
    #[test]
    fn a_truncated_attempt_is_the_shorter_runs_attempt() {
        let p = policy();
        let v = mentor_trainer::verify::DomainVerifier::new(None);
        let t = tasks("x", 3);
        let items: Vec<(&Task, Vec<mentor_core::Message>)> =
            t.iter().map(|t| (t, t.prompt.clone())).collect();
        let mut c = (0, 0);
        let long = ProbeOptions { lengths: vec![3, 9], ..opts() };
        let both = draw(&p, &v, &items, 1.0, &long, 5, &ProgressBar::hidden(), &mut c).unwrap();
        let short = ProbeOptions { lengths: vec![3], ..opts() };
        let alone = draw(&p, &v, &items, 1.0, &short, 5, &ProgressBar::hidden(), &mut c).unwrap();
        for (b, a) in both.iter().zip(&alone) {
            for (rb, ra) in b.iter().zip(a) {
                assert_eq!(rb[0], ra[0]);
            }
        }
        // And the texts themselves: generating at 3 gives the first 3 tokens of generating at 9.
        let prompt = vec![p.encode_chat(&t[0].prompt).unwrap()];
        let seed = [mix(&[5, PROBE_STREAM, mentor_trainer::seed::str_key(&t[0].id), 0])];
        let cfg = |l| GenerateConfig {
            sampler: Sampler { temperature: 1.0, top_p: 1.0, top_k: 0 },
            max_new_tokens: l,
            ..GenerateConfig::default()
        };
        let g9 = p.generate_with_row_seeds(&prompt, &cfg(9), &seed).unwrap();
        let g3 = p.generate_with_row_seeds(&prompt, &cfg(3), &seed).unwrap();
        let n = g3[0].token_ids.len();
        assert_eq!(g3[0].token_ids[..], g9[0].token_ids[..n]);
    }

    #[test]
    fn bad_options_are_named() {
        for (o, needle) in [
            (ProbeOptions { temperatures: vec![0.0], ..opts() }, "--temperatures"),
            (ProbeOptions { lengths: vec![], ..opts() }, "--lengths"),
            (ProbeOptions { rounds: vec![5, 3], ..opts() }, "--rounds"),
            (ProbeOptions { prompts: vec![], ..opts() }, "--prompts"),
        ] {
            assert!(o.validate().unwrap_err().contains(needle));
        }
    }
}
