//! Diagnoses a failed GSM8K group with the offline `rules` mentor and prints the diagnosis and
//! the hint at every level.
//!
//! `cargo run -p mentor-agents --example diagnose`

use mentor_agents::{AgentMentor, Guard, GuardConfig};
use mentor_core::{
    Attempt, Completion, Feedback, HintLevel, MathFeedback, MathOutcome, MathPayload, Mentor, MentorRequest,
    Payload, Task, Verdict,
};

fn main() {
    let mut task = Task::math(
        "gsm8k/test/0",
        "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins for her friends every day with four. She sells the remainder at the farmers' market daily for $2 per fresh duck egg. How much in dollars does she make every day at the farmers' market?",
        "18",
    );
    task.payload = Payload::Math(MathPayload {
        answer: "18".into(),
        solution: Some("Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18 every day at the farmer's market.".into()),
    });
    let wrong = "She eats 3, so 16 - 3 = 13 eggs remain. 13 * 2 = 26. The answer is \\boxed{26}.";
    let feedback = MathFeedback {
        outcome: MathOutcome::WrongValue,
        extracted: Some("26".into()),
        ..MathFeedback::no_answer("18")
    };
    let attempts = vec![Attempt {
        completion: Completion::new(&task.id, wrong),
        verdict: Verdict::fail(Feedback::Math(feedback)),
    }];
    let mentor = AgentMentor::rules(Guard::numeric_only(GuardConfig::default()));
    for level in [HintLevel::NUDGE, HintLevel::PLAN, HintLevel::PARTIAL_SOLUTION] {
        let request = MentorRequest { task: &task, attempts: &attempts, level, previous_hints: &[] };
        match mentor.intervene(&request) {
            Ok(i) => {
                if level == HintLevel::NUDGE {
                    println!("diagnosis: {:?}", i.diagnosis);
                }
                println!("level {}: {:?}", level.get(), i.hint.map(|h| h.text));
            }
            Err(e) => eprintln!("error: {e}"),
        }
    }
}
