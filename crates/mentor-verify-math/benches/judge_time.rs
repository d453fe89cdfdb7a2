//! Per-task judge time over the labelled case files and the reference solutions of the
//! datasets, single-threaded: what one check costs on typical inputs.
//!
//! Run: `cargo bench -p mentor-verify-math --bench judge_time -- [ROUNDS]`
//! (data from `$MENTOR_DATASETS`, else `shared/datasets` beside the workspace).

use std::time::Instant;

use mentor_core::datasets::Dataset;
use mentor_core::{Task, Verifier};
use mentor_verify_math::MathVerifier;

fn main() {
    // A timing program: `cargo bench` runs it and passes `--bench`; `cargo test --all-targets`
    // runs it without, and then it only says how to run it, so the test suite times nothing.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!(
            "a timing program: run it with `cargo bench -p mentor-verify-math --bench judge_time [-- ARGS]`"
        );
        return;
    }
    let rounds: usize =
        std::env::args().skip(1).find(|a| a != "--bench").and_then(|a| a.parse().ok()).unwrap_or(5);
    let mut tasks: Vec<(Task, String)> = Vec::new();
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for file in ["math_equiv_cases.jsonl", "cases.jsonl"] {
        let text = std::fs::read_to_string(here.join(file)).unwrap_or_default();
        for (k, line) in text.lines().enumerate() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            let (Some(g), Some(c)) = (v["gold"].as_str(), v["completion"].as_str()) else { continue };
            tasks.push((Task::math(format!("{file}/{k}"), "", g), c.to_string()));
        }
    }
    let dir = mentor_core::datasets_dir!();
    for set in [Dataset::Gsm8k, Dataset::Math500, Dataset::Aime2024] {
        for t in set.load_from_dir(&dir).unwrap_or_default() {
            let Some(sol) = t.reference_solution().map(str::to_string) else { continue };
            let c = match set {
                Dataset::Gsm8k => format!("{sol}\n#### {}", t.reference_answer().unwrap_or("")),
                _ => sol,
            };
            tasks.push((t, c));
        }
    }
    let v = MathVerifier::default();
    let mut best = f64::INFINITY;
    let mut passed = 0;
    for _ in 0..rounds {
        let t0 = Instant::now();
        passed = tasks.iter().filter(|(t, c)| v.verify(t, c).is_ok_and(|x| x.passed())).count();
        best = best.min(t0.elapsed().as_secs_f64());
    }
    println!(
        "{} tasks, {passed} judged correct; best of {rounds} rounds: {:.3} s, {:.1} us per task",
        tasks.len(),
        best,
        1e6 * best / tasks.len() as f64
    );
}
