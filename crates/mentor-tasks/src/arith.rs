//! Generated arithmetic word problems: multi-step integer expressions written as short word
//! problems in GSM8K's form (a question, a worked solution whose every calculation is a
//! `<<a op b=c>>` step, an integer answer), so every part of the system that reads GSM8K —
//! the math checker, the `rules` mentor's step diagnosis, the random-cut control — reads them
//! too.
//!
//! They exist to put a small learner at the edge of what it can do. SmolLM2-135M solves almost
//! no GSM8K problem; a problem of two or three small-number steps it solves sometimes, and a
//! measurement of hints needs a learner that sometimes succeeds. Every problem is a function of
//! `(seed, index, steps)`: the same arguments give the same text on every machine (integer
//! arithmetic and a seeded [`StdRng`] only), and tables that use them say which seed.

use mentor_core::{MathPayload, Message, Payload, Task, TaskMeta};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use mentor_core::seed::mix;

/// The `meta.source` of generated problems.
pub const SOURCE: &str = "arith";

pub(crate) const NAMES: &[(&str, &str)] = &[
    ("Mia", "she"),
    ("Leo", "he"),
    ("Ava", "she"),
    ("Sam", "he"),
    ("Zoe", "she"),
    ("Ben", "he"),
    ("Ivy", "she"),
    ("Tom", "he"),
    ("Nora", "she"),
    ("Eli", "he"),
];

/// (container, item) pairs: "3 boxes of pencils".
pub(crate) const THINGS: &[(&str, &str)] = &[
    ("boxes", "pencils"),
    ("bags", "apples"),
    ("packs", "stickers"),
    ("jars", "cookies"),
    ("crates", "oranges"),
    ("shelves", "books"),
    ("trays", "muffins"),
    ("baskets", "eggs"),
];

/// One calculation after the first: what happens, how the value changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// More arrive.
    Add(u64),
    /// Some leave (less than what is there).
    Sub(u64),
    /// The amount is multiplied (2: doubles, 3: triples).
    Mul(u64),
}

/// Problem `index` of the family `seed` with `steps` calculations (at least 1; the first
/// multiplies containers by items per container, each later one adds, takes away or
/// multiplies). The id is `arith/<seed>/<steps>/<index>`.
pub fn problem(seed: u64, index: u64, steps: usize) -> Task {
    let steps = steps.max(1);
    let mut rng = StdRng::seed_from_u64(mix(&[seed, 0xa417, steps as u64, index]));
    let (name, pronoun) = NAMES[rng.random_range(0..NAMES.len())];
    let (container, item) = THINGS[rng.random_range(0..THINGS.len())];
    let count = rng.random_range(2..=9u64);
    let each = rng.random_range(2..=12u64);
    let mut value = count * each;
    let cap = |s: &str| {
        let mut c = s.chars();
        c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
    };
    let mut question = format!("{name} has {count} {container} of {item} with {each} {item} in each.");
    let mut solution = format!("{name} has {count} * {each} = <<{count}*{each}={value}>>{value} {item}.");
    for _ in 1..steps {
        let op = match rng.random_range(0..3u8) {
            0 => Op::Add(rng.random_range(2..=30u64)),
            1 if value > 2 => Op::Sub(rng.random_range(1..value.min(40))),
            1 => Op::Add(rng.random_range(2..=30u64)),
            _ if value <= 200 => Op::Mul(rng.random_range(2..=3u64)),
            _ => Op::Sub(rng.random_range(1..value.min(40))),
        };
        let (text, line, next) = match op {
            Op::Add(b) => (
                format!(" Then {pronoun} gets {b} more {item}."),
                format!(
                    "After getting {b} more, {pronoun} has {value} + {b} = <<{value}+{b}={}>>{} {item}.",
                    value + b,
                    value + b
                ),
                value + b,
            ),
            Op::Sub(b) => (
                format!(" Then {pronoun} gives away {b} {item}."),
                format!(
                    "After giving away {b}, {pronoun} has {value} - {b} = <<{value}-{b}={}>>{} {item}.",
                    value - b,
                    value - b
                ),
                value - b,
            ),
            Op::Mul(k) => {
                let verb = if k == 2 { "doubles" } else { "triples" };
                (
                    format!(" Then the number of {item} {pronoun} has {verb}."),
                    format!(
                        "After it {verb}, {pronoun} has {value} * {k} = <<{value}*{k}={}>>{} {item}.",
                        value * k,
                        value * k
                    ),
                    value * k,
                )
            }
        };
        question.push_str(&text);
        solution.push('\n');
        solution.push_str(&cap(&line));
        value = next;
    }
    question.push_str(&format!(" How many {item} does {name} have now?"));
    Task {
        id: format!("{SOURCE}/{seed}/{steps}/{index}"),
        prompt: vec![Message::user(question)],
        payload: Payload::Math(MathPayload { answer: value.to_string(), solution: Some(solution) }),
        meta: TaskMeta { source: SOURCE.into(), level: Some(steps as u32), subject: None },
    }
}

/// `n` problems of `steps` calculations from family `seed`, indices `0..n`.
pub fn problems(seed: u64, n: usize, steps: usize) -> Vec<Task> {
    (0..n as u64).map(|i| problem(seed, i, steps)).collect()
}

#[cfg(test)]
mod tests {
    use mentor_core::Verifier;
    use mentor_verify_math::MathVerifier;

    use super::*;

    /// Evaluates a `<<a op b=c>>` step's left side.
    fn eval(expr: &str) -> u64 {
        for (op, f) in
            [('+', (|a, b| a + b) as fn(u64, u64) -> u64), ('-', |a, b| a - b), ('*', |a, b| a * b)]
        {
            if let Some((a, b)) = expr.split_once(op) {
                return f(a.parse().unwrap(), b.parse().unwrap());
            }
        }
        panic!("no operator in {expr}")
    }

    #[test]
    fn every_step_is_correct_and_ends_at_the_answer() {
        for seed in 0..3 {
            for steps in 1..=4 {
                for t in problems(seed, 50, steps) {
                    let solution = t.reference_solution().unwrap();
                    let calcs: Vec<&str> =
                        solution.split("<<").skip(1).map(|s| s.split(">>").next().unwrap()).collect();
                    assert_eq!(calcs.len(), steps, "{solution}");
                    let mut last = 0;
                    for c in calcs {
                        let (lhs, rhs) = c.split_once('=').unwrap();
                        assert_eq!(eval(lhs), rhs.parse::<u64>().unwrap(), "{c}");
                        last = rhs.parse().unwrap();
                    }
                    let Payload::Math(m) = &t.payload else { unreachable!() };
                    assert_eq!(m.answer, last.to_string());
                    assert!(t.question().ends_with("have now?"), "{}", t.question());
                }
            }
        }
    }

    #[test]
    fn the_same_arguments_give_the_same_problem_and_others_differ() {
        assert_eq!(problem(7, 3, 2), problem(7, 3, 2));
        assert_ne!(problem(7, 3, 2).question(), problem(8, 3, 2).question());
        assert_ne!(problem(7, 3, 2).question(), problem(7, 4, 2).question());
        assert_eq!(problem(7, 3, 2).id, "arith/7/2/3");
        // A pinned instance: the generator's text is part of every table that cites a seed.
        let t = problem(0, 0, 2);
        assert!(t.question().contains(" of ") && t.question().contains(" in each."), "{}", t.question());
    }

    #[test]
    fn the_math_checker_accepts_the_answer_boxed() {
        let v = MathVerifier::default();
        for t in problems(1, 20, 3) {
            let Payload::Math(m) = &t.payload else { unreachable!() };
            let verdict = v.verify(&t, &format!("So the answer is \\boxed{{{}}}.", m.answer)).unwrap();
            assert!(verdict.passed(), "{verdict:?}");
        }
    }
}
