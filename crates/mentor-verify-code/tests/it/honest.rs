//! Honest programs of the classes the two-instance judge once misjudged (iterators, subclasses
//! of plain types, truthiness, CPU time, `doctest`, stdlib modules the tests read), judged at
//! the default limits: each must get the outcome native CPython gave it, recorded in
//! `tests/data/honest_variants.jsonl` by `tests/data/gen_honest_variants.py` (the CPython
//! version is in every line; the sandbox runs 3.14).

use mentor_core::datasets::{load_mbpp, MbppSplit};
use mentor_core::{Task, Verifier};
use serde_json::Value;

use crate::{code, datasets_dir, humaneval, verifier};

fn sanitized_mbpp() -> Vec<Task> {
    let path = datasets_dir().join("mbpp/sanitized-mbpp.json");
    load_mbpp(&path, MbppSplit::All).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn honest_variants_get_the_native_outcome() {
    let fixture = include_str!("../data/honest_variants.jsonl");
    let he = humaneval();
    let mbpp = sanitized_mbpp();
    let cases: Vec<Value> = fixture.lines().map(|l| serde_json::from_str(l).expect("fixture line")).collect();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let mut items = Vec::new();
    for c in &cases {
        let task_ref = c["task"].as_str().expect("task");
        let task = match task_ref.strip_prefix("mbpp-sanitized/") {
            Some(n) => mbpp.iter().find(|t| t.id.rsplit('/').next() == Some(n)),
            None => he.iter().find(|t| t.id == task_ref),
        }
        .unwrap_or_else(|| panic!("{task_ref} is not in the datasets"));
        items.push((task, c["program"].as_str().expect("program")));
    }
    let verdicts = verifier().verify_batch(&items);
    let mut differ = Vec::new();
    let mut classes = std::collections::BTreeMap::<&str, usize>::new();
    for (c, v) in cases.iter().zip(&verdicts) {
        let native = c["native_passed"].as_bool().expect("native_passed");
        let v = v.as_ref().unwrap_or_else(|e| panic!("{}: {e}", c["variant"]));
        *classes.entry(c["class"].as_str().unwrap_or("?")).or_default() += 1;
        if v.passed() != native {
            differ.push(format!(
                "{} {} ({}): native {native}, sandbox {:?}",
                c["class"],
                c["task"],
                c["variant"],
                code(v)
            ));
        }
    }
    assert!(differ.is_empty(), "{} differ from native CPython:\n{}", differ.len(), differ.join("\n"));
    // Several per class, and outcomes both ways.
    assert!(classes.values().all(|&n| n >= 1) && classes.len() >= 6, "{classes:?}");
    assert!(cases.iter().any(|c| c["native_passed"] == Value::Bool(false)));
}
