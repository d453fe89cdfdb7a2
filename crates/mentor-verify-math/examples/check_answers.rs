//! Checks a few completions against gold answers and prints the feedback the mentor gets.
//!
//! Run: `cargo run -p mentor-verify-math --example check_answers`

use mentor_core::{Feedback, Task, Verifier};
use mentor_verify_math::{check, equivalent, extract, Config, MathVerifier};

fn main() {
    let cfg = Config::default();
    let cases = [
        ("\\frac{14}{3}", "So $a + b = 2 + \\frac{8}{3} = \\boxed{4\\frac{2}{3}}$."),
        ("18", "She makes 9 * 2 = $18 every day.\n#### 18"),
        ("3600", "The answer is 360."),
        ("-5", "Therefore $x = \\boxed{5}$."),
        ("\\frac{1}{3}", "It is about 0.333."),
        ("(1, 7]", "The solution set is $\\boxed{[1, 7]}$."),
        ("5", "It could be \\boxed{4} or \\boxed{5}"),
        ("\\{1, 2\\}", "\\boxed{2}"),
        ("5", "\\boxed{10^{10^{10}}}"),
        ("42", "I am not sure."),
    ];
    for (gold, completion) in cases {
        let verdict = check(gold, completion, &cfg);
        let Feedback::Math(f) = verdict.feedback() else { continue };
        let json = serde_json::to_string(f).unwrap_or_else(|e| format!("<{e}>"));
        println!("gold {gold:<14} reward {}  {json}", verdict.reward());
    }

    // Extraction alone, and the cheap equivalence the mentor's guard uses.
    println!(
        "{:?}",
        extract("Final Answer: The final answer is $\\dfrac{3}{4}$. I hope it is correct.", &cfg)
    );
    println!("x^2-1 ~ (x-1)(x+1): {}", equivalent("x^2-1", "(x-1)(x+1)", &cfg));

    // As a mentor_core::Verifier over tasks, batched on all cores.
    let verifier = MathVerifier::new(cfg);
    let task = Task::math("demo/1", "What is 6 * 7?", "42");
    let results = verifier.verify_batch(&[(&task, "\\boxed{42}"), (&task, "The answer is 24.")]);
    for r in results {
        match r {
            Ok(v) => println!("{}: passed={}", task.id, v.passed()),
            Err(e) => println!("{}: {e}", task.id),
        }
    }
}
