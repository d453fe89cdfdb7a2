//! `tests/data/math_equiv_cases.jsonl`: a copy of `shared/fixtures/math_equiv_cases.jsonl`
//! (sha256 `ac6c9e61..e74`), human labels beside Math-Verify 0.9.0's verdicts. Cases marked
//! `ambiguous` are excluded from the agreement bar and counted separately.

use mentor_verify_math::{check, Config};
use serde_json::Value;

#[test]
fn agreement_with_human_labels_is_at_least_math_verify_s() {
    let text = std::fs::read_to_string(crate::data("math_equiv_cases.jsonl")).expect("fixture present");
    let cfg = Config::default();
    let (mut n, mut ours, mut theirs) = (0, 0, 0);
    let (mut amb_n, mut amb_ours) = (0, 0);
    let mut misses = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let c: Value = serde_json::from_str(line).expect("valid fixture line");
        let gold = c["gold"].as_str().expect("gold");
        let completion = c["completion"].as_str().expect("completion");
        let expected = c["expected"].as_bool().expect("expected");
        let got = check(gold, completion, &cfg).passed();
        if c["ambiguous"].as_bool() == Some(true) {
            amb_n += 1;
            amb_ours += usize::from(got == expected);
            if got != expected {
                eprintln!("ambiguous, differs from the label: {} gold={gold:?} completion={completion:?} label={expected}", c["id"]);
            }
            continue;
        }
        n += 1;
        if got == expected {
            ours += 1;
        } else {
            misses.push(format!("{} gold={gold:?} completion={:?} expected={expected}", c["id"], completion));
        }
        theirs += usize::from(c["mathverify"].as_bool() == Some(expected));
    }
    eprintln!(
        "fixture: {n} unambiguous cases, ours {ours} ({:.1}%), Math-Verify {theirs} ({:.1}%); ambiguous {amb_n}, ours agree on {amb_ours}",
        100.0 * ours as f64 / n as f64,
        100.0 * theirs as f64 / n as f64
    );
    for m in &misses {
        eprintln!("miss: {m}");
    }
    assert!(n > 300, "fixture unexpectedly small: {n}");
    assert!(
        ours >= theirs,
        "agreement {ours}/{n} below Math-Verify's {theirs}/{n}; misses:\n{}",
        misses.join("\n")
    );
}
