//! The probe's grid: its cells, what each has measured, when a cell stops being sampled, and
//! which cell becomes the regime.
//!
//! A cell is (temperature, prompt style, stratum); each cell's attempts are drawn once at the
//! longest `max_new_tokens` and read at every length by truncation, so one cell measures all
//! lengths. Cells are sampled in rounds of problems. After each round a cell stops when its
//! 95% Wilson interval at every length lies below the regime (upper bound < `low`: too hard)
//! or above it (lower bound > `high`: too easy), or when it has reached its last round.
//! Within one (temperature, prompt) and one source, strata are sampled easiest first, one
//! stratum at a time: a stratum starts once the one before it has stopped, and when a stratum
//! is too hard every harder one is skipped (assumed harder still: a stated assumption, not a
//! measurement).

use serde::{Deserialize, Serialize};

use crate::stats::wilson;
use mentor_trainer::strata::{PromptStyle, Source};

/// The regime a preset should run at: unhinted pass@1 in `[LOW, HIGH]`.
pub const LOW: f64 = 0.10;
/// See [`LOW`].
pub const HIGH: f64 = 0.50;

/// What one length of a cell measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AtLength {
    /// `max_new_tokens`.
    pub max_new_tokens: usize,
    /// Attempts.
    pub attempts: usize,
    /// Attempts that passed (`Verdict::passed`).
    pub passed: usize,
    /// Attempts that ended (a stop token) within the length.
    pub finished: usize,
    /// Tokens generated within the length, summed.
    pub tokens: usize,
}

impl AtLength {
    /// Unhinted pass@1 (`None` without attempts).
    pub fn pass_rate(&self) -> Option<f64> {
        (self.attempts > 0).then(|| self.passed as f64 / self.attempts as f64)
    }

    /// Its 95% Wilson interval.
    pub fn interval(&self) -> Option<(f64, f64)> {
        wilson(self.passed, self.attempts)
    }
}

/// Why a cell is no longer sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting for an easier stratum of its chain.
    Waiting,
    /// Being sampled.
    Live,
    /// Its interval lies below the regime at every length.
    TooHard,
    /// Its interval lies above the regime at every length.
    TooEasy,
    /// Sampled to its last round.
    Complete,
    /// Not sampled: an easier stratum of its chain was too hard.
    Skipped,
    /// Stopped by the time budget.
    Budget,
}

/// One cell of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Sampling temperature.
    pub temperature: f64,
    /// Prompt style.
    pub prompt: PromptStyle,
    /// Stratum name.
    pub stratum: String,
    /// Where the stratum's problems come from.
    pub source: Source,
    /// The stratum's position among its source's strata (0: easiest).
    pub rank: usize,
    /// Problems in the stratum.
    pub available: usize,
    /// Problems sampled so far (the stratum's first ones).
    pub problems: usize,
    /// Per length, ascending.
    pub lengths: Vec<AtLength>,
    /// Whether and why it is still sampled.
    pub status: Status,
    /// Rounds it was sampled in.
    pub rounds: usize,
}

impl Cell {
    /// A cell not yet sampled.
    pub fn new(
        temperature: f64,
        prompt: PromptStyle,
        (stratum, source, rank, available): (&str, Source, usize, usize),
        lengths: &[usize],
    ) -> Self {
        Self {
            temperature,
            prompt,
            stratum: stratum.to_string(),
            source,
            rank,
            available,
            problems: 0,
            lengths: lengths.iter().map(|&l| AtLength { max_new_tokens: l, ..AtLength::default() }).collect(),
            status: if rank == 0 { Status::Live } else { Status::Waiting },
            rounds: 0,
        }
    }

    /// Whether it is the same chain as `other`: temperature, prompt and source.
    pub fn same_chain(&self, other: &Cell) -> bool {
        self.temperature == other.temperature && self.prompt == other.prompt && self.source == other.source
    }

    /// The status after a round, with `last_round` whether no further round is planned for it.
    pub fn decide(&self, low: f64, high: f64, last_round: bool) -> Status {
        let intervals: Vec<(f64, f64)> = self.lengths.iter().filter_map(AtLength::interval).collect();
        if intervals.is_empty() {
            return self.status;
        }
        if intervals.iter().all(|&(_, hi)| hi < low) {
            Status::TooHard
        } else if intervals.iter().all(|&(lo, _)| lo > high) {
            Status::TooEasy
        } else if last_round || self.problems >= self.available {
            Status::Complete
        } else {
            Status::Live
        }
    }
}

/// Applies the chain rules after a round in which the cells' statuses were decided: the next
/// stratum of a chain whose live stratum stopped starts (or, when the stopped one was too hard,
/// every waiting stratum of the chain is skipped).
pub fn advance(cells: &mut [Cell]) {
    for i in 0..cells.len() {
        if cells[i].status != Status::Waiting {
            continue;
        }
        let mut easier =
            cells.iter().filter(|c| c.same_chain(&cells[i]) && c.rank < cells[i].rank).map(|c| c.status);
        let blocked = easier.clone().any(|s| matches!(s, Status::Live | Status::Waiting));
        if easier.any(|s| matches!(s, Status::TooHard | Status::Skipped)) {
            cells[i].status = Status::Skipped;
        } else if !blocked {
            // Start only the next one: the nearest waiting stratum.
            let next_rank = cells
                .iter()
                .filter(|c| c.same_chain(&cells[i]) && c.status == Status::Waiting)
                .map(|c| c.rank)
                .min();
            if next_rank == Some(cells[i].rank) {
                cells[i].status = Status::Live;
            }
        }
    }
}

/// The regime chosen from the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regime {
    /// Temperature.
    pub temperature: f64,
    /// `max_new_tokens`.
    pub max_new_tokens: usize,
    /// Prompt style.
    pub prompt: PromptStyle,
    /// Stratum.
    pub stratum: String,
    /// Its measured unhinted pass@1.
    pub pass_rate: f64,
    /// Its 95% interval.
    pub interval: [f64; 2],
    /// Attempts behind it.
    pub attempts: usize,
    /// Why this one.
    pub why: String,
}

/// The regime: among cells whose pass@1 at some length lies in `[low, high]` with at least
/// `min_attempts` attempts, the dataset's strata before generated ones, then the pass@1
/// nearest the middle of the range, then the shorter length, then grid order. `None` when no
/// cell qualifies.
pub fn choose(cells: &[Cell], low: f64, high: f64, min_attempts: usize) -> Option<Regime> {
    let middle = (low + high) / 2.0;
    let mut best: Option<(usize, f64, usize, &Cell, &AtLength)> = None;
    for c in cells {
        for l in &c.lengths {
            let Some(p) = l.pass_rate() else { continue };
            if l.attempts < min_attempts || !(low..=high).contains(&p) {
                continue;
            }
            let key = (usize::from(c.source != Source::Dataset), (p - middle).abs(), l.max_new_tokens);
            let better = match &best {
                None => true,
                Some((s, d, m, _, _)) => (key.0, key.1, key.2) < (*s, *d, *m),
            };
            if better {
                best = Some((key.0, key.1, key.2, c, l));
            }
        }
    }
    best.map(|(_, _, _, c, l)| {
        let (lo, hi) = l.interval().unwrap_or((0.0, 1.0));
        Regime {
            temperature: c.temperature,
            max_new_tokens: l.max_new_tokens,
            prompt: c.prompt,
            stratum: c.stratum.clone(),
            pass_rate: l.pass_rate().unwrap_or(0.0),
            interval: [lo, hi],
            attempts: l.attempts,
            why: format!(
                "pass@1 in [{low:.2}, {high:.2}] on >= {min_attempts} attempts; the dataset's strata before \
                 generated ones, then nearest {middle:.2}, then the shorter length"
            ),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(rank: usize, source: Source, measured: &[(usize, usize)]) -> Cell {
        let mut c = Cell::new(1.0, PromptStyle::System, ("s", source, rank, 100), &[128, 256]);
        c.problems = measured.first().map_or(0, |m| m.0 / 4);
        for (l, &(n, k)) in c.lengths.iter_mut().zip(measured) {
            l.attempts = n;
            l.passed = k;
        }
        c
    }

    #[test]
    fn a_cell_stops_only_when_every_length_is_outside_the_regime() {
        // 0 of 40 at both lengths: upper bound 0.088 < 0.10.
        assert_eq!(cell(0, Source::Dataset, &[(40, 0), (40, 0)]).decide(LOW, HIGH, false), Status::TooHard);
        // One length might still be in range: keep sampling.
        assert_eq!(cell(0, Source::Dataset, &[(40, 0), (40, 3)]).decide(LOW, HIGH, false), Status::Live);
        // 0 of 32: upper bound 0.107, not yet below 0.10.
        assert_eq!(cell(0, Source::Dataset, &[(32, 0), (32, 0)]).decide(LOW, HIGH, false), Status::Live);
        assert_eq!(cell(0, Source::Dataset, &[(40, 36), (40, 38)]).decide(LOW, HIGH, false), Status::TooEasy);
        assert_eq!(cell(0, Source::Dataset, &[(40, 8), (40, 9)]).decide(LOW, HIGH, true), Status::Complete);
    }

    #[test]
    fn strata_of_a_chain_start_one_after_another_and_harder_ones_are_skipped() {
        let mut cells = vec![
            cell(0, Source::Dataset, &[]),
            cell(1, Source::Dataset, &[]),
            cell(2, Source::Dataset, &[]),
            cell(0, Source::Arith, &[]),
        ];
        assert_eq!(
            cells.iter().map(|c| c.status).collect::<Vec<_>>()[..3],
            [Status::Live, Status::Waiting, Status::Waiting]
        );
        cells[0].status = Status::TooEasy;
        advance(&mut cells);
        assert_eq!((cells[1].status, cells[2].status), (Status::Live, Status::Waiting));
        cells[1].status = Status::TooHard;
        advance(&mut cells);
        assert_eq!(cells[2].status, Status::Skipped);
        assert_eq!(cells[3].status, Status::Live, "another source is another chain");
    }

    #[test]
    fn the_regime_prefers_the_dataset_then_the_middle_then_the_shorter_length() {
        let a = cell(0, Source::Arith, &[(40, 12), (40, 12)]);
        let mut d = cell(1, Source::Dataset, &[(40, 5), (40, 8)]);
        d.stratum = "d".into();
        let r = choose(&[a.clone(), d.clone()], LOW, HIGH, 40).unwrap();
        assert_eq!((r.stratum.as_str(), r.max_new_tokens), ("d", 256));
        assert!((r.pass_rate - 0.2).abs() < 1e-12);
        // Without a dataset cell in range, the generated stratum; at equal rates, the shorter.
        let r = choose(&[a.clone(), cell(0, Source::Dataset, &[(40, 1), (40, 1)])], LOW, HIGH, 40).unwrap();
        assert_eq!((r.stratum.as_str(), r.max_new_tokens), ("s", 128));
        // Too few attempts: nothing.
        assert!(choose(&[cell(0, Source::Dataset, &[(8, 2), (8, 2)])], LOW, HIGH, 40).is_none());
    }
}
