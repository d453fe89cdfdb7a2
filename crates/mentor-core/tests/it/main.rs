//! Loads the real benchmark files and checks their record counts and a few known values.
//!
//! The data directory is `$MENTOR_DATASETS` when set, else the `shared/datasets` folder beside
//! the repository (present in CI), else the user's installed copy under the asset directory
//! (`cargo xtask datasets`). With none present the test fails and says how to get them.

use std::path::PathBuf;

use mentor_core::datasets::{load_gsm8k, load_mbpp, Dataset, MbppSplit};
use mentor_core::{CodeHarness, Payload};

fn data_dir() -> PathBuf {
    mentor_core::datasets_dir!()
}

#[test]
fn every_dataset_loads_with_its_published_count() {
    let dir = data_dir();
    let expect = [
        (Dataset::Gsm8k, 1319),
        (Dataset::Math500, 500),
        (Dataset::HumanEval, 164),
        (Dataset::Aime2024, 30),
        (Dataset::Amc2023, 40),
    ];
    for (d, n) in expect {
        let tasks = d.load_from_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", d.name()));
        assert_eq!(tasks.len(), n, "{}", d.name());
        let mut ids: Vec<_> = tasks.iter().map(|t| t.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "{}: ids are unique", d.name());
    }
    assert_eq!(load_gsm8k(&dir.join("gsm8k/train.jsonl")).unwrap().len(), 7473);
    let mbpp = dir.join("mbpp/mbpp.jsonl");
    let sanitized = dir.join("mbpp/sanitized-mbpp.json");
    assert_eq!(load_mbpp(&mbpp, MbppSplit::All).unwrap().len(), 974);
    assert_eq!(load_mbpp(&sanitized, MbppSplit::All).unwrap().len(), 427);
    assert_eq!(load_mbpp(&mbpp, MbppSplit::Test).unwrap().len(), 500);
    assert_eq!(load_mbpp(&sanitized, MbppSplit::Test).unwrap().len(), 257);
}

#[test]
fn known_records_parse_as_published() {
    let dir = data_dir();
    let gsm = Dataset::Gsm8k.load_from_dir(&dir).unwrap();
    assert_eq!(gsm[0].reference_answer(), Some("18"), "Janet's ducks");
    assert!(gsm[0].reference_solution().unwrap().contains("<<16-3-4=9>>"));

    let math = Dataset::Math500.load_from_dir(&dir).unwrap();
    assert_eq!(math[0].id, "test/precalculus/807.json");
    assert_eq!(math[0].reference_answer(), Some(r"\left( 3, \frac{\pi}{2} \right)"));
    assert_eq!((math[0].meta.level, math[0].meta.subject.as_deref()), (Some(2), Some("Precalculus")));

    let aime = Dataset::Aime2024.load_from_dir(&dir).unwrap();
    let answers: Vec<_> = aime.iter().filter_map(|t| t.reference_answer()).collect();
    assert!(answers.contains(&"25") && answers.contains(&"73"), "leading zeros dropped: {answers:?}");

    let amc = Dataset::Amc2023.load_from_dir(&dir).unwrap();
    assert_eq!(amc[0].reference_answer(), Some("27"));
    assert!(amc.iter().any(|t| t.reference_answer() == Some("-1")));

    let he = Dataset::HumanEval.load_from_dir(&dir).unwrap();
    let Payload::Code(p) = &he[0].payload else { panic!("HumanEval is code") };
    assert!(
        matches!(&p.harness, CodeHarness::HumanEval { entry_point, .. } if entry_point == "has_close_elements")
    );

    let mbpp = Dataset::Mbpp.load_from_dir(&dir).unwrap();
    let with_setup = mbpp
        .iter()
        .filter(|t| matches!(&t.payload, Payload::Code(p) if matches!(&p.harness, CodeHarness::Mbpp { setup_code, .. } if !setup_code.is_empty())))
        .count();
    assert!(with_setup >= 1, "MBPP keeps test_setup_code");
}
