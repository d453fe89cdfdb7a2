//! The probe's table (markdown, also printed by `mentor probe`) and its file names.

use std::fmt::Write as _;

use super::grid::{Status, HIGH, LOW};
use super::options::ProbeReport;

/// The probe's JSON, in the run directory.
pub const JSON_FILE: &str = "probe.json";
/// The probe's table, in the run directory.
pub const MARKDOWN_FILE: &str = "probe.md";

fn status(s: Status) -> &'static str {
    match s {
        Status::Waiting => "waiting",
        Status::Live => "live",
        Status::TooHard => "too hard",
        Status::TooEasy => "too easy",
        Status::Complete => "complete",
        Status::Skipped => "skipped (easier stratum too hard)",
        Status::Budget => "stopped by the time budget",
    }
}

/// The grid as a markdown table: a row per (cell, length) that was sampled, then the skipped
/// cells in one line each, then the regime.
pub fn table(r: &ProbeReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| T | max_new_tokens | prompt | stratum | problems (of) | attempts | pass@1 [95% CI] | ended | mean tokens | status |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    let mut unsampled = Vec::new();
    for c in &r.cells {
        if c.problems == 0 {
            unsampled.push(format!(
                "T {} {} {}: {}",
                c.temperature,
                c.prompt.name(),
                c.stratum,
                status(c.status)
            ));
            continue;
        }
        for l in &c.lengths {
            let (lo, hi) = l.interval().unwrap_or((0.0, 1.0));
            let n = l.attempts.max(1) as f64;
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} ({}) | {} | {:.3} [{:.3}, {:.3}] | {:.2} | {:.0} | {} |",
                c.temperature,
                l.max_new_tokens,
                c.prompt.name(),
                c.stratum,
                c.problems,
                c.available,
                l.attempts,
                l.pass_rate().unwrap_or(0.0),
                lo,
                hi,
                l.finished as f64 / n,
                l.tokens as f64 / n,
                status(c.status)
            );
        }
    }
    for u in unsampled {
        let _ = writeln!(out, "\nnot sampled: {u}");
    }
    let _ = writeln!(out);
    match &r.regime {
        Some(g) => {
            let _ = writeln!(
                out,
                "regime: T = {}, max_new_tokens = {}, prompt = {}, stratum `{}`: pass@1 {:.3} [{:.3}, {:.3}] on {} attempts ({})",
                g.temperature,
                g.max_new_tokens,
                g.prompt.name(),
                g.stratum,
                g.pass_rate,
                g.interval[0],
                g.interval[1],
                g.attempts,
                g.why
            );
        }
        None => {
            let _ = writeln!(out, "regime: no cell has pass@1 in [{LOW:.2}, {HIGH:.2}] on enough attempts");
        }
    }
    out
}

/// The table with a header saying how it was measured.
pub fn markdown(r: &ProbeReport) -> String {
    let o = &r.options;
    let mut out = String::new();
    let _ = writeln!(out, "# `mentor probe`: unhinted pass@1 of {} on {}\n", r.model, r.data);
    let _ = writeln!(
        out,
        "{} attempts per problem, rounds of {:?} problems per cell, {} rows / {} tokens generated in {} rounds, {:.0} s{}. \
         Lengths are read by truncating attempts drawn at {} tokens. `ended`: the share of attempts that \
         stopped on their own within the length. Generated arithmetic problems: family seed {}, {} steps.\n",
        o.attempts,
        o.rounds,
        r.rows,
        r.tokens,
        r.rounds,
        r.seconds,
        if r.budget_hit { " (stopped by the time budget)" } else { "" },
        o.lengths.iter().max().copied().unwrap_or(0),
        o.arith_seed,
        o.arith_steps
    );
    out.push_str(&table(r));
    out
}

/// The one-line summary.
pub fn summary_line(r: &ProbeReport) -> String {
    let regime = match &r.regime {
        Some(g) => format!(
            "regime T {} / {} tokens / {} / {}: pass@1 {:.3}",
            g.temperature,
            g.max_new_tokens,
            g.prompt.name(),
            g.stratum,
            g.pass_rate
        ),
        None => format!("no regime in [{LOW:.2}, {HIGH:.2}]"),
    };
    format!(
        "probe: {} cells, {} sampled, {} rows, {} tokens, {:.0} s; {regime}",
        r.cells.len(),
        r.cells.iter().filter(|c| c.problems > 0).count(),
        r.rows,
        r.tokens,
        r.seconds
    )
}
