//! Latency of one `rules` intervention (diagnose + tutor + guard) on a failed group, next to
//! which a rollout costs ~100 ms per sampled token on this CPU (docs/PERFORMANCE.md).
//!
//! - `gsm8k`: GSM8K's first problem with two wrong attempts judged by the real math verifier
//!   (step matching against the reference, the guard's answer-equivalence check included).
//! - `mbpp`: MBPP 14 with the sandbox's feedback for a wrong-operator candidate (built here, so
//!   the bench measures the mentor, not the sandbox), guard reference-overlap check included.
//!
//! ```text
//! cargo bench -p mentor-agents --bench rules_latency
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use mentor_agents::{AgentMentor, Guard, GuardConfig};
use mentor_core::datasets::{load_mbpp, Dataset, MbppSplit};
use mentor_core::{
    Attempt, CodeFeedback, CodeOutcome, Completion, FailedTest, Feedback, FinishReason, HintLevel, Mentor,
    MentorRequest, Verdict,
};
use mentor_verify_math::MathEquivalence;

fn data_dir() -> PathBuf {
    mentor_core::datasets_dir!()
}

fn bench(c: &mut Criterion) {
    let mentor = AgentMentor::rules(Guard::new(GuardConfig::default(), Arc::new(MathEquivalence::default())));

    let gsm = Dataset::Gsm8k.load_from_dir(&data_dir()).expect("GSM8K").swap_remove(0);
    let gsm_attempts: Vec<Attempt> = [
        "16 - 3 - 4 = 9 eggs are left. 9 * 2 = 16 dollars.\nThe answer is \\boxed{16}",
        "Janet has 16 eggs. She eats 3, so 16 - 3 = 13 eggs remain. 13 * 2 = 26. \\boxed{26}",
    ]
    .iter()
    .map(|t| Attempt {
        completion: Completion {
            task_id: gsm.id.clone(),
            text: t.to_string(),
            finish_reason: FinishReason::Stop,
        },
        verdict: mentor_verify_math::check("18", t, &mentor_verify_math::Config::default()),
    })
    .collect();

    let mbpp = load_mbpp(&data_dir().join("mbpp/mbpp.jsonl"), MbppSplit::All)
        .expect("MBPP")
        .into_iter()
        .find(|t| t.id == "mbpp/test/14")
        .expect("mbpp/test/14");
    let feedback = CodeFeedback {
        outcome: CodeOutcome::WrongAnswer,
        tests_total: 3,
        tests_passed: 0,
        failed_test: Some(FailedTest {
            index: 0,
            source: "assert find_Volume(10,8,6) == 240".into(),
            input: Some("10,8,6".into()),
            expected: Some("240".into()),
            actual: Some("960".into()),
        }),
        exception: None,
        stdout: String::new(),
        stderr: String::new(),
        output_truncated: false,
        detail: None,
    };
    let code_attempts = vec![Attempt {
        completion: Completion {
            task_id: mbpp.id.clone(),
            text: "def find_Volume(l,b,h) : \n    return ((l * b * h) * 2) ".into(),
            finish_reason: FinishReason::Stop,
        },
        verdict: Verdict::fail(Feedback::Code(feedback)),
    }];

    let mut group = c.benchmark_group("rules_intervention");
    for (name, task, attempts) in [("gsm8k", &gsm, &gsm_attempts), ("mbpp", &mbpp, &code_attempts)] {
        let request = MentorRequest { task, attempts, level: HintLevel::PLAN, previous_hints: &[] };
        assert!(mentor.intervene(&request).expect("rules never fail").hint.is_some(), "{name}");
        group.bench_function(name, |b| b.iter(|| mentor.intervene(std::hint::black_box(&request))));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
