//! Difficulty strata and the two prompt styles, shared by `mentor probe`, `mentor rescue` and
//! training on generated problems (`data.prompt`).
//!
//! - GSM8K: the number of calculator steps (`<<…>>`) in the reference solution: ≤ 2 (a
//!   solution without annotations counts here), 3–4, ≥ 5.
//! - MBPP: the reference solution's non-empty lines: ≤ 3, 4–6, ≥ 7.
//! - Generated word problems ([`mentor_tasks::arith`], the development family; [`mentor_tasks::heldout`],
//!   templates apart from it): one stratum each, for math data.
//!
//! The few-shot style puts two worked examples in the chat before the problem: for a dataset,
//! the last two problems (in the run's task order) of its easiest stratum, which are then
//! sampled in no stratum; for the arithmetic stratum, two problems of the same family from
//! indices the probe never samples.

use mentor_core::{Message, Payload, Role, Task};
use serde::{Deserialize, Serialize};

/// Where a stratum's problems come from; strata of one source are ordered easiest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The config's training data.
    Dataset,
    /// Generated arithmetic word problems.
    Arith,
    /// Held-out generated word problems ([`mentor_tasks::heldout`]): templates apart from `arith`'s.
    Heldout,
}

/// One difficulty stratum: its problems in sampling order and its worked examples.
#[derive(Debug, Clone)]
pub struct Stratum {
    /// The name in tables and JSON (`gsm8k steps<=2`, `arith 2-step seed 0`).
    pub name: String,
    /// Where its problems come from.
    pub source: Source,
    /// Its problems, in the order the probe samples them.
    pub tasks: Vec<Task>,
    /// The two worked examples of the few-shot prompt.
    pub examples: Vec<Task>,
}

pub use crate::config::PromptStyle;

/// Calculator steps (`<<…>>`) in a math task's reference solution (0 without one).
pub fn gsm8k_steps(task: &Task) -> usize {
    task.reference_solution().map_or(0, |s| s.matches("<<").count())
}

/// Non-empty lines of a code task's reference solution (0 without one).
pub fn reference_lines(task: &Task) -> usize {
    task.reference_solution().map_or(0, |s| s.lines().filter(|l| !l.trim().is_empty()).count())
}

/// Splits `tasks` (in the run's order) into three strata by `measure` and the bins
/// `[..=a]`, `[a+1..=b]`, `[b+1..]`, named `{prefix}<=a`, `{prefix} a+1-b`, `{prefix}>=b+1`.
/// The last two tasks of the easiest non-empty stratum become every stratum's examples.
/// Tasks without a reference (measure 0 where a reference is needed) are dropped when
/// `needs_reference`.
fn binned(
    tasks: &[Task],
    measure: impl Fn(&Task) -> usize,
    (a, b): (usize, usize),
    prefix: &str,
    needs_reference: bool,
) -> Vec<Stratum> {
    let mut bins: [Vec<Task>; 3] = Default::default();
    for t in tasks {
        if needs_reference && t.reference_solution().is_none() {
            continue;
        }
        let m = measure(t);
        let bin = if m <= a {
            0
        } else if m <= b {
            1
        } else {
            2
        };
        bins[bin].push(t.clone());
    }
    let examples: Vec<Task> = match bins.iter_mut().find(|b| b.len() > 2) {
        Some(easiest) => easiest.split_off(easiest.len() - 2),
        None => Vec::new(),
    };
    let names = [format!("{prefix}<={a}"), format!("{prefix} {}-{b}", a + 1), format!("{prefix}>={}", b + 1)];
    names
        .into_iter()
        .zip(bins)
        .filter(|(_, tasks)| !tasks.is_empty())
        .map(|(name, tasks)| Stratum { name, source: Source::Dataset, tasks, examples: examples.clone() })
        .collect()
}

/// GSM8K's strata by calculator steps (≤ 2, 3–4, ≥ 5).
pub fn by_steps(tasks: &[Task], dataset: &str) -> Vec<Stratum> {
    binned(tasks, gsm8k_steps, (2, 4), &format!("{dataset} steps"), true)
}

/// MBPP's strata by reference lines (≤ 3, 4–6, ≥ 7).
pub fn by_lines(tasks: &[Task], dataset: &str) -> Vec<Stratum> {
    binned(tasks, reference_lines, (3, 6), &format!("{dataset} lines"), true)
}

/// A dataset's strata: by reference lines for code tasks, by calculator steps otherwise.
pub fn of_dataset(tasks: &[Task], dataset: &str) -> Vec<Stratum> {
    if tasks.first().is_some_and(|t| t.domain() == mentor_core::Domain::Code) {
        by_lines(tasks, dataset)
    } else {
        by_steps(tasks, dataset)
    }
}

/// Index of the first arithmetic example: far past any sample the probe draws.
const ARITH_EXAMPLES_AT: u64 = 1 << 40;

/// A stratum of generated problems, `system` (the config's system prompt) put first in each.
fn generated_stratum(
    name: String,
    source: Source,
    tasks: Vec<Task>,
    examples: Vec<Task>,
    system: Option<&str>,
) -> Stratum {
    let with_system = |mut t: Task| {
        if let Some(s) = system {
            t.prompt.insert(0, Message::system(s));
        }
        t
    };
    Stratum { name, source, tasks: tasks.into_iter().map(with_system).collect(), examples }
}

/// The arithmetic stratum: `n` generated problems of `steps` steps from family `seed`, with
/// `system` (the config's system prompt) as their system message.
pub fn arith(seed: u64, steps: usize, n: usize, system: Option<&str>) -> Stratum {
    generated_stratum(
        format!("arith {steps}-step seed {seed}"),
        Source::Arith,
        mentor_tasks::arith::problems(seed, n, steps),
        (0..2).map(|i| mentor_tasks::arith::problem(seed, ARITH_EXAMPLES_AT + i, steps)).collect(),
        system,
    )
}

/// The held-out stratum: `n` problems of `lo..=hi` steps from the held-out family `seed`
/// ([`mentor_tasks::heldout::mixed`]), with `system` as their system message; its two worked examples
/// (of `lo` and `hi` steps) come from the example-only templates, so none shares a template with
/// a test problem.
pub fn heldout(seed: u64, (lo, hi): (usize, usize), n: usize, system: Option<&str>) -> Stratum {
    let name = if lo == hi { format!("{lo}") } else { format!("{lo}-{hi}") };
    generated_stratum(
        format!("heldout {name}-step seed {seed}"),
        Source::Heldout,
        mentor_tasks::heldout::mixed(seed, n, (lo, hi)),
        [(0, lo), (1, hi)]
            .into_iter()
            .map(|(i, steps)| mentor_tasks::heldout::example(seed, i, steps))
            .collect(),
        system,
    )
}

/// `n` problems of a generated family with family seed `seed` (whatever `g.seed` says: the
/// caller resolves `*`), `system` as their system message, and the family's worked examples.
pub fn generated(g: crate::config::Generated, seed: u64, n: usize, system: Option<&str>) -> Stratum {
    match g.family {
        crate::config::Family::Arith => arith(seed, g.steps.0, n, system),
        crate::config::Family::Heldout => heldout(seed, g.steps, n, system),
    }
}

/// A worked example's answer as the learner should write it: for math, the reference
/// solution without its calculator annotations, ending with the answer in `\boxed{}`; for code,
/// the reference in one python block.
pub fn worked_answer(task: &Task) -> Option<String> {
    let reference = task.reference_solution()?;
    Some(match &task.payload {
        Payload::Math(m) => {
            let mut text = String::with_capacity(reference.len());
            let mut rest = reference;
            while let Some(open) = rest.find("<<") {
                text.push_str(&rest[..open]);
                match rest[open..].find(">>") {
                    Some(close) => rest = &rest[open + close + 2..],
                    None => {
                        rest = "";
                    }
                }
            }
            text.push_str(rest);
            format!("{}\nThe final answer is \\boxed{{{}}}.", text.trim_end(), m.answer)
        }
        Payload::Code(_) => format!("```python\n{}\n```", reference.trim_end()),
    })
}

/// The prompt `task` is shown in `style`: for few-shot, each example's question and worked
/// answer as a user and an assistant turn after the system message (if any) and before the
/// task's own turns. Examples without a reference are left out.
pub fn prompt(task: &Task, style: PromptStyle, examples: &[Task]) -> Vec<Message> {
    match style {
        PromptStyle::System => task.prompt.clone(),
        PromptStyle::FewShot => {
            let split = task.prompt.iter().take_while(|m| m.role == Role::System).count();
            let mut out: Vec<Message> = task.prompt[..split].to_vec();
            for ex in examples {
                if let Some(answer) = worked_answer(ex) {
                    out.push(Message::user(ex.question()));
                    out.push(Message::assistant(answer));
                }
            }
            out.extend_from_slice(&task.prompt[split..]);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use mentor_core::MathPayload;

    use super::*;

    fn gsm(id: &str, steps: usize) -> Task {
        let solution: Vec<String> = (0..steps).map(|i| format!("a = <<{i}+1={}>>{}", i + 1, i + 1)).collect();
        let mut t = Task::math(id, format!("question {id}"), "5");
        t.payload = Payload::Math(MathPayload {
            answer: "5".into(),
            solution: (!solution.is_empty()).then(|| solution.join("\n")),
        });
        t
    }

    #[test]
    fn gsm8k_strata_bin_by_steps_and_take_examples_from_the_easiest() {
        let tasks: Vec<Task> = (0..12).map(|i| gsm(&format!("t{i}"), i % 7)).collect();
        let strata = by_steps(&tasks, "gsm8k");
        let names: Vec<&str> = strata.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["gsm8k steps<=2", "gsm8k steps 3-4", "gsm8k steps>=5"]);
        // Steps 1, 2 (t1, t2, t8, t9) and t0/t7 have no reference: left out. The last two of the
        // easiest stratum are the examples and are sampled nowhere.
        let ids = |s: &Stratum| s.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&strata[0]), ["t1", "t2"]);
        assert_eq!(strata[0].examples.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["t8", "t9"]);
        assert_eq!(ids(&strata[1]), ["t3", "t4", "t10", "t11"]);
        assert_eq!(ids(&strata[2]), ["t5", "t6"]);
        for s in &strata {
            assert_eq!(s.examples, strata[0].examples);
        }
    }

    #[test]
    fn worked_answers_drop_annotations_and_box_the_answer() {
        let t = gsm("x", 2);
        assert_eq!(worked_answer(&t).unwrap(), "a = 1\na = 2\nThe final answer is \\boxed{5}.");
        assert!(worked_answer(&Task::math("y", "q", "1")).is_none());
    }

    #[test]
    fn few_shot_prompts_put_the_examples_between_system_and_problem() {
        let mut t = gsm("p", 1);
        t.prompt.insert(0, Message::system("sys"));
        let ex = [gsm("e1", 1), gsm("e2", 2)];
        assert_eq!(prompt(&t, PromptStyle::System, &ex), t.prompt);
        let p = prompt(&t, PromptStyle::FewShot, &ex);
        let roles: Vec<Role> = p.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::Assistant, Role::User, Role::Assistant, Role::User]
        );
        assert_eq!(p[1].content, "question e1");
        assert!(p[4].content.ends_with("\\boxed{5}."));
        assert_eq!(p[5].content, "question p");
    }

    #[test]
    fn the_arithmetic_stratum_has_its_examples_outside_its_problems() {
        let s = arith(3, 2, 5, Some("sys"));
        assert_eq!(s.tasks.len(), 5);
        assert_eq!(s.tasks[0].prompt[0], Message::system("sys"));
        assert!(s.examples.iter().all(|e| !s.tasks.iter().any(|t| t.question() == e.question())));
        assert_eq!(s.name, "arith 2-step seed 3");
    }
}
