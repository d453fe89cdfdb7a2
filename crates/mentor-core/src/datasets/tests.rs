use std::io::Write;

use proptest::prelude::*;

use super::*;
use crate::{CodeHarness, Payload};

fn file(contents: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(contents).unwrap();
    f
}

#[test]
fn gsm8k_splits_answer_and_rationale() {
    let f = file(b"{\"question\":\"q?\",\"answer\":\"2 + 2 = <<2+2=4>>4\\n#### 1,004\"}\n\n");
    let tasks = load_gsm8k(f.path()).unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].reference_answer(), Some("1,004"));
    assert_eq!(tasks[0].reference_solution(), Some("2 + 2 = <<2+2=4>>4"));
    assert_eq!(tasks[0].question(), "q?");
}

#[test]
fn errors_name_file_line_and_field() {
    let f = file(b"{\"question\":\"q\",\"answer\":\"#### 1\"}\n{\"question\":\"q\"}\n");
    let err = load_gsm8k(f.path()).unwrap_err();
    assert!(matches!(err, DatasetError::MissingField { line: 2, field: "answer", .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&f.path().display().to_string()) && msg.contains(":2:") && msg.contains("answer"),
        "{msg}"
    );

    let f = file(b"{\"question\":\"q\",\"answer\":\"no hashes\"}\n");
    assert!(matches!(
        load_gsm8k(f.path()).unwrap_err(),
        DatasetError::BadField { line: 1, field: "answer", .. }
    ));

    let f = file(b"{\"question\":\"q\",\"answer\":\"#### 1\"}\nnot json\n");
    assert!(matches!(load_gsm8k(f.path()).unwrap_err(), DatasetError::Syntax { line: 2, .. }));

    let f = file(b"{\"problem\":\"p\",\"answer\":\"1\",\"unique_id\":\"u\",\"level\":9}\n");
    let err = load_math500(f.path()).unwrap_err();
    assert!(matches!(err, DatasetError::BadField { field: "level", .. }), "{err:?}");

    let f = file(b"{\"id\":1,\"problem\":\"p\",\"answer\":\"abc\"}\n");
    assert!(matches!(load_aime(f.path()).unwrap_err(), DatasetError::BadField { field: "answer", .. }));

    let f = file(b"{\"id\":1,\"problem\":\"p\",\"answer\":\"12\"}\n");
    assert!(matches!(load_amc(f.path()).unwrap_err(), DatasetError::BadField { field: "answer", .. }));

    let f = file(b"");
    assert!(matches!(load_humaneval(f.path()).unwrap_err(), DatasetError::Empty { .. }));

    let missing = std::path::Path::new("/definitely/not/here.jsonl");
    assert!(matches!(load_gsm8k(missing).unwrap_err(), DatasetError::Io { .. }));
}

#[test]
fn aime_drops_leading_zeros_and_amc_formats_floats() {
    let f = file(b"{\"id\":7,\"problem\":\"p\",\"answer\":\"025\"}\n");
    let t = load_aime(f.path()).unwrap();
    assert_eq!((t[0].id.as_str(), t[0].reference_answer()), ("aime2024/7", Some("25")));
    let f =
        file(b"{\"id\":3,\"problem\":\"p\",\"answer\":-1.0}\n{\"id\":4,\"problem\":\"p\",\"answer\":2.5}\n");
    let t = load_amc(f.path()).unwrap();
    assert_eq!(t[0].reference_answer(), Some("-1"));
    assert_eq!(t[1].reference_answer(), Some("2.5"));
}

#[test]
fn mbpp_reads_both_formats_and_filters_split() {
    let jsonl = file(
        b"{\"task_id\":5,\"text\":\"t\",\"code\":\"c\",\"test_list\":[\"assert f()==1\"],\"test_setup_code\":\"\"}\n\
          {\"task_id\":11,\"text\":\"t\",\"code\":\"c\",\"test_list\":[\"assert f()==1\"],\"test_setup_code\":\"import x\"}\n",
    );
    let t = load_mbpp(jsonl.path(), MbppSplit::Test).unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].id, "mbpp/test/11");
    let Payload::Code(p) = &t[0].payload else { panic!("not code") };
    assert!(matches!(&p.harness, CodeHarness::Mbpp { setup_code, .. } if setup_code == "import x"));
    assert_eq!(load_mbpp(jsonl.path(), MbppSplit::All).unwrap().len(), 2);

    let arr = file(b"  [{\"task_id\":12,\"prompt\":\"p\",\"code\":\"c\",\"test_list\":[\"assert g()\"],\"test_imports\":[\"import math\"]}]");
    let t = load_mbpp(arr.path(), MbppSplit::Test).unwrap();
    let Payload::Code(p) = &t[0].payload else { panic!("not code") };
    assert!(matches!(&p.harness, CodeHarness::Mbpp { imports, .. } if imports == &["import math"]));

    let arr = file(b"[{\"task_id\":12,\"prompt\":\"p\",\"test_list\":[1]}]");
    let err = load_mbpp(arr.path(), MbppSplit::Test).unwrap_err();
    assert!(matches!(err, DatasetError::BadField { line: 1, field: "test_list", .. }), "{err:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Arbitrary bytes never panic any loader; failures are located errors.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let f = file(&bytes);
        for d in Dataset::ALL {
            match d.load(f.path()) {
                Ok(_) => {}
                Err(DatasetError::Io { .. }) => prop_assert!(false, "file exists"),
                Err(e) => prop_assert!(e.to_string().contains(&f.path().display().to_string())),
            }
        }
    }

    /// Valid records with one field's value replaced by arbitrary JSON never panic either.
    #[test]
    fn arbitrary_field_values_never_panic(v in arb_json(), field in 0usize..4) {
        let names = ["question", "answer", "problem", "test_list"];
        let mut obj = serde_json::json!({"question":"q","answer":"#### 1","problem":"p","id":1,
            "unique_id":"u","level":1,"task_id":11,"text":"t","test_list":["assert 1"],
            "prompt":"p","test":"t","entry_point":"f"});
        obj[names[field]] = v;
        let f = file(serde_json::to_string(&obj).unwrap().as_bytes());
        for d in Dataset::ALL {
            let _ = d.load(f.path());
        }
    }
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        ".{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(".{0,4}", inner, 0..3)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}
