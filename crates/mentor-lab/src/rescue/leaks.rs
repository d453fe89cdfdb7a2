//! The leak check of accepted hints, independent of the guard that let them through: the
//! hint alone (its text and forced prefix) is judged as an answer — by the math checker for
//! math, by the code sandbox for code (a hint whose code passes the tests on its own gives
//! the solution away) — and a code hint also leaks when it repeats more of the reference's
//! lines than `mentor.max_code_overlap` allows.

use mentor_agents::reference_overlap;
use mentor_core::{Hint, Payload, Task, Verifier};

use super::context::{Cell, Ctx, Problem};
use mentor_trainer::Result;

/// What a hint shows: its text, and its forced prefix when the text does not contain it.
pub fn shown(hint: &Hint) -> String {
    match hint.solution_prefix.as_deref() {
        Some(p) if !hint.text.contains(p) => format!("{}\n{p}", hint.text),
        _ => hint.text.clone(),
    }
}

/// Whether each hint leaks its task's answer (see the module docs), judged in one batch.
pub fn leaks(items: &[(&Task, &Hint)], verifier: &dyn Verifier, max_code_overlap: f64) -> Vec<bool> {
    let texts: Vec<String> = items.iter().map(|(_, h)| shown(h)).collect();
    let judged: Vec<(&Task, &str)> = items.iter().zip(&texts).map(|((t, _), s)| (*t, s.as_str())).collect();
    let verdicts = verifier.judge_batch(&judged);
    items
        .iter()
        .zip(&texts)
        .zip(verdicts)
        .map(|(((task, _), text), verdict)| {
            let copied = match &task.payload {
                Payload::Code(c) => c
                    .reference_solution
                    .as_deref()
                    .is_some_and(|r| reference_overlap(r, text) > max_code_overlap),
                Payload::Math(_) => false,
            };
            verdict.passed() || copied
        })
        .collect()
}

/// Stage 6: the leaks and the token length of every hint `cells` show, into their cells.
pub(super) fn of_hints(ctx: &Ctx<'_>, problems: &[Problem<'_>], cells: &mut [Vec<Cell>]) -> Result<()> {
    let mut items = Vec::new();
    let mut owners = Vec::new();
    for (k, row_cells) in cells.iter().enumerate() {
        for (p, cell) in row_cells.iter().enumerate() {
            for h in &cell.hints {
                items.push((problems[p].task, h));
                owners.push((k, p));
            }
        }
    }
    let leaked = leaks(&items, ctx.verifier, ctx.cfg.mentor.max_code_overlap);
    let tokenizer = ctx.policy.tokenizer();
    let tokens = |text: &str| tokenizer.encode(text).map_or(0, |ids| ids.len());
    let found: Vec<((bool, bool), usize)> = items
        .iter()
        .map(|(task, hint)| (derivation(task, hint), mentor_agents::shown_size(hint, &tokens)))
        .collect();
    drop(items);
    for (((k, p), leak), ((derived, solved), size)) in owners.into_iter().zip(leaked).zip(found) {
        let cell = &mut cells[k][p];
        cell.leaks += usize::from(leak);
        cell.derivation_leaks += usize::from(derived);
        cell.no_learner += usize::from(solved);
        cell.hint_tokens.push(size);
    }
    Ok(())
}

/// Whether a math hint leaks by derivation, and whether the no-learner solver answers the
/// problem from the question and the hint alone (both false for code, or without a numeric
/// answer).
pub fn derivation(task: &Task, hint: &Hint) -> (bool, bool) {
    let Payload::Math(m) = &task.payload else { return (false, false) };
    let Ok(answer) = m.answer.trim().replace(',', "").parse::<f64>() else { return (false, false) };
    let text = shown(hint);
    let question = task.question();
    let reference = m.solution.as_deref().unwrap_or("");
    let derived = mentor_agents::leak_by_derivation(question, &text, reference, answer).is_some();
    let solved = mentor_agents::no_learner_answer(question, &text).is_some_and(|x| (x - answer).abs() < 1e-6);
    (derived, solved)
}

#[cfg(test)]
mod tests {
    use mentor_core::{HintLevel, HintSource};

    use super::*;

    fn hint(text: &str, prefix: Option<&str>) -> Hint {
        Hint {
            level: HintLevel::NUDGE,
            text: text.into(),
            solution_prefix: prefix.map(String::from),
            source: HintSource::Mentor,
        }
    }

    #[test]
    fn a_math_hint_leaks_when_the_checker_reads_the_answer_from_it_alone() {
        let v = mentor_trainer::verify::DomainVerifier::new(None);
        let t = Task::math("t", "What is 6 * 3?", "18");
        let safe = hint("Multiply the two numbers carefully.", None);
        let boxed = hint("The answer is \\boxed{18}.", None);
        let in_prefix = hint("Continue from here.", Some("6 * 3 = 18"));
        let other = hint("Half of it is 9.", None);
        let out = leaks(&[(&t, &safe), (&t, &boxed), (&t, &in_prefix), (&t, &other)], &v, 0.5);
        assert_eq!(out, vec![false, true, true, false]);
    }

    #[test]
    fn a_hint_stating_a_result_and_the_operation_left_leaks_by_derivation() {
        let mut t = Task::math(
            "t",
            "Mia has 7 boxes of pencils with 6 pencils in each. Then she gives away 9 pencils. How many pencils does Mia have now?",
            "33",
        );
        t.payload = Payload::Math(mentor_core::MathPayload {
            answer: "33".into(),
            solution: Some(
                "Mia has 7*6 = <<7*6=42>>42 pencils.\nShe has 42-9 = <<42-9=33>>33 left.\n#### 33".into(),
            ),
        });
        let l2 = hint(
            "These steps are right: Mia has 7 * 6 = 42 pencils. Step 2 needs a subtraction (\"Then she gives away 9 pencils.\").",
            None,
        );
        assert_eq!(derivation(&t, &l2), (true, true));
        let nudge = hint("Reread the question carefully and check every step of your reasoning.", None);
        assert_eq!(derivation(&t, &nudge), (false, false));
    }

    #[test]
    fn overlap_counts_the_references_long_lines() {
        let reference = "def f(x):\n    return x * 2  \n# note here\n";
        assert_eq!(reference_overlap(reference, "def f(x):\nreturn x * 2"), 1.0);
        assert_eq!(reference_overlap(reference, "def f(x):"), 0.5);
        assert_eq!(reference_overlap("", "anything"), 0.0);
        assert_eq!(shown(&hint("see:\nA", Some("A"))), "see:\nA");
        assert_eq!(shown(&hint("go on", Some("A"))), "go on\nA");
    }
}
