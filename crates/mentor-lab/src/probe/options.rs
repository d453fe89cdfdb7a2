//! What the probe is asked ([`ProbeOptions`]) and what it found ([`ProbeReport`]): below both
//! the probe that fills the report and the table that renders it (`report.rs`).

use serde::{Deserialize, Serialize};

use super::grid::{Cell, Regime};
use mentor_trainer::strata::PromptStyle;

/// What the probe samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeOptions {
    /// Sampling temperatures.
    pub temperatures: Vec<f64>,
    /// `max_new_tokens` values (read by truncating attempts drawn at the largest).
    pub lengths: Vec<usize>,
    /// Prompt styles.
    pub prompts: Vec<PromptStyle>,
    /// Attempts per problem.
    pub attempts: usize,
    /// Problems per cell after each round (increasing): `[10, 20]` samples 10, then 10 more.
    pub rounds: Vec<usize>,
    /// Steps of the generated arithmetic problems (0: no arithmetic stratum).
    pub arith_steps: usize,
    /// The generated problems' family.
    pub arith_seed: u64,
    /// No new round starts after this many seconds (0: no limit).
    pub budget_seconds: f64,
    /// Most rows per generate call.
    pub batch_rows: usize,
    /// Attempts a cell needs to be chosen as the regime.
    pub min_attempts: usize,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            temperatures: vec![0.3, 0.6, 1.0],
            lengths: vec![128, 256, 384],
            prompts: vec![PromptStyle::System, PromptStyle::FewShot],
            attempts: 4,
            rounds: vec![10, 20],
            arith_steps: 2,
            arith_seed: 0,
            budget_seconds: 1800.0,
            batch_rows: 64,
            min_attempts: 40,
        }
    }
}

impl ProbeOptions {
    /// Checks the options; the message names the option.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.temperatures.is_empty() || self.temperatures.iter().any(|t| !(t.is_finite() && *t > 0.0)) {
            return Err(format!(
                "--temperatures {:?}: give one or more finite values > 0",
                self.temperatures
            ));
        }
        if self.lengths.is_empty() || self.lengths.contains(&0) {
            return Err(format!("--lengths {:?}: give one or more values > 0", self.lengths));
        }
        if self.prompts.is_empty() {
            return Err("--prompts: give at least one of system, few_shot".into());
        }
        if self.attempts == 0 || self.batch_rows == 0 {
            return Err("--attempts and rescue.batch_rows must be > 0".into());
        }
        if self.rounds.is_empty() || self.rounds[0] == 0 || self.rounds.windows(2).any(|w| w[1] <= w[0]) {
            return Err(format!("--rounds {:?}: give increasing problem counts > 0", self.rounds));
        }
        Ok(())
    }
}

/// What the probe found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeReport {
    /// Every cell, in grid order (temperature, prompt, source, stratum).
    pub cells: Vec<Cell>,
    /// The chosen regime, if a cell qualified.
    pub regime: Option<Regime>,
    /// The options it ran with.
    pub options: ProbeOptions,
    /// The model.
    pub model: String,
    /// The training data.
    pub data: String,
    /// Rows generated.
    pub rows: usize,
    /// Tokens generated.
    pub tokens: usize,
    /// Rounds run.
    pub rounds: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Whether the time budget stopped it before every cell was decided.
    pub budget_hit: bool,
}
