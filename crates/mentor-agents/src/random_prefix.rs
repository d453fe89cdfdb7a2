//! The control of the level-3 hint: the same template and the same kind of content — the
//! first steps of the reference solution — but cut at a random step instead of the one the
//! diagnosis located. If the diagnosed cut is what makes level 3 work, the mentor beats this
//! control; if any reference prefix does as well, it does not.
//!
//! [`control`] (a uniform other cut) and [`size_matched`] (the nearest in tokens) make the twin
//! of one hint for `mentor rescue`; [`RandomPrefix`] is the training arm `random_prefix`, a
//! mentor whose every level-3 hint is replaced by its [`size_matched_random`] twin.

use crate::rules::reference_steps;
use crate::twins::{shown_size, TokenCount};
use crate::{Guard, GuardOutcome};
use mentor_core::{GuardRejection, Hint, Intervention, Mentor, MentorError, MentorRequest, Payload, Task};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The pieces a level-3 hint shows the first of: reference steps (math, as the rules tutor
/// splits them) or non-empty lines of the reference code.
pub fn pieces(task: &Task) -> Vec<String> {
    let Some(solution) = task.reference_solution() else { return Vec::new() };
    match task.payload {
        Payload::Math(_) => reference_steps(solution).into_iter().map(|s| s.text).collect(),
        Payload::Code(_) => solution.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect(),
    }
}

/// `mentor_hint` with its forced prefix (`prefix`, also replaced in its text) cut to the first
/// `m` of `pieces`.
fn twin(mentor_hint: &Hint, prefix: &str, pieces: &[String], m: usize) -> Hint {
    let new_prefix = pieces[..m].join("\n");
    let text = if mentor_hint.text.contains(prefix) {
        mentor_hint.text.replacen(prefix, &new_prefix, 1)
    } else {
        mentor_hint.text.clone()
    };
    Hint { text, solution_prefix: Some(new_prefix), ..mentor_hint.clone() }
}

/// The control built from a mentor's level-3 hint.
#[derive(Debug, Clone, PartialEq)]
pub struct Control {
    /// The control hint after the guard (`None`: rejected).
    pub hint: Option<Hint>,
    /// The guard's rejection, if any.
    pub rejections: Vec<GuardRejection>,
    /// Pieces the mentor's prefix shows (0: it shows none).
    pub mentor_cut: usize,
    /// Pieces the control shows.
    pub random_cut: usize,
}

/// The random-cut twin of `mentor_hint` (the mentor's level-3 hint for `task`): its forced
/// prefix replaced by the first `m` pieces of the reference, `m` drawn uniformly (with `seed`)
/// from the cuts a level-3 hint may make — at least one piece, never the last — other than
/// the mentor's own; the same cut when there is no other (a two-step solution). The prefix in
/// the hint's text is replaced the same way. A hint without a prefix (level 3 fell back to
/// level 2: no reference, or a guard rejection) is its own control. The guard judges the
/// result as it judged the mentor's.
pub fn control(task: &Task, mentor_hint: &Hint, seed: u64, guard: &Guard) -> Control {
    let Some(prefix) = mentor_hint.solution_prefix.as_deref() else {
        return unchanged(mentor_hint, 0);
    };
    let pieces = pieces(task);
    let n = prefix.lines().count();
    let cuts: Vec<usize> = (1..pieces.len()).filter(|&m| m != n).collect();
    if cuts.is_empty() {
        return unchanged(mentor_hint, n);
    }
    let m = cuts[StdRng::seed_from_u64(seed).random_range(0..cuts.len())];
    judged(task, twin(mentor_hint, prefix, &pieces, m), guard, n, m)
}

/// The mentor's own hint as its control (no other cut to make, or no prefix to cut: `cut` 0).
fn unchanged(mentor_hint: &Hint, cut: usize) -> Control {
    Control { hint: Some(mentor_hint.clone()), rejections: Vec::new(), mentor_cut: cut, random_cut: cut }
}

/// The guard's verdict on a twin cut at `m` (the mentor's at `n`).
fn judged(task: &Task, twin: Hint, guard: &Guard, n: usize, m: usize) -> Control {
    match guard.check(task, twin) {
        GuardOutcome::Accepted(h) | GuardOutcome::Redacted { hint: h, .. } => {
            Control { hint: Some(h), rejections: Vec::new(), mentor_cut: n, random_cut: m }
        }
        GuardOutcome::Rejected(r) => {
            Control { hint: None, rejections: vec![r], mentor_cut: n, random_cut: m }
        }
    }
}

/// The training arm's twin of `mentor_hint`: its prefix cut at another step (at least one piece,
/// never the last) whose hint is nearest in size ([`shown_size`] with `tokens`) to the
/// mentor's; when several cuts are equally near (one step shorter and one longer, often), one
/// of them drawn with `seed`, so that ties favour neither a shorter nor a longer cut. The same
/// cut when there is no other; a hint without a prefix is its own control. The guard judges the
/// result as it judged the mentor's.
pub fn size_matched_random(
    task: &Task,
    mentor_hint: &Hint,
    seed: u64,
    guard: &Guard,
    tokens: &dyn Fn(&str) -> usize,
) -> Control {
    let Some(prefix) = mentor_hint.solution_prefix.as_deref() else {
        return unchanged(mentor_hint, 0);
    };
    let pieces = pieces(task);
    let n = prefix.lines().count();
    let target = shown_size(mentor_hint, tokens);
    let twins: Vec<(usize, Hint)> =
        (1..pieces.len()).filter(|&m| m != n).map(|m| (m, twin(mentor_hint, prefix, &pieces, m))).collect();
    let Some(best) = twins.iter().map(|(_, h)| shown_size(h, tokens).abs_diff(target)).min() else {
        return unchanged(mentor_hint, n);
    };
    let nearest: Vec<&(usize, Hint)> =
        twins.iter().filter(|(_, h)| shown_size(h, tokens).abs_diff(target) == best).collect();
    let (m, hint) = nearest[StdRng::seed_from_u64(seed).random_range(0..nearest.len())].clone();
    judged(task, hint, guard, n, m)
}

/// The size-matched twin of `mentor_hint` for `mentor rescue`: its prefix replaced by the first
/// `m` reference pieces, `m` the cut other than the mentor's own (at least one piece, never the
/// last) whose hint is nearest in size ([`shown_size`] with `tokens`) to the mentor's (ties: the
/// shorter cut). `None` when there is no other cut (a reference of one or two pieces) or the mentor's
/// hint has no prefix: the problem is left out of this control's paired comparison, never
/// answered by the mentor's own cut. The guard judges the result as it judged the mentor's; a
/// rejected twin (the other cut would show the answer) is `Some` with no hint and the rejection.
pub fn size_matched(
    task: &Task,
    mentor_hint: &Hint,
    tokens: &dyn Fn(&str) -> usize,
    guard: &Guard,
) -> Option<Control> {
    let prefix = mentor_hint.solution_prefix.as_deref()?;
    let pieces = pieces(task);
    let n = prefix.lines().count();
    let target = shown_size(mentor_hint, tokens);
    let (m, hint) = (1..pieces.len())
        .filter(|&m| m != n)
        .map(|m| (m, twin(mentor_hint, prefix, &pieces, m)))
        .min_by_key(|(m, h)| (shown_size(h, tokens).abs_diff(target), *m))?;
    Some(judged(task, hint, guard, n, m))
}

/// The `random_prefix` training arm: `inner` (the rules mentor) diagnoses and writes its
/// hint, then [`size_matched_random`] moves the hint's cut to another step of about the same
/// size (ties drawn at random). The hint budget is the mentor's (the first reference steps, in
/// the same template, within a step's length); only the place of the cut ignores the diagnosis. The cut is drawn from `seed`, the task id and the number of earlier
/// hints of the group, so a run repeats.
pub struct RandomPrefix {
    inner: Box<dyn Mentor>,
    guard: Guard,
    seed: u64,
    tokens: TokenCount,
}

impl RandomPrefix {
    /// The control of `inner`, its hints judged by `guard` and sized with `tokens`.
    pub fn new(inner: Box<dyn Mentor>, guard: Guard, seed: u64, tokens: TokenCount) -> Self {
        Self { inner, guard, seed, tokens }
    }
}

impl Mentor for RandomPrefix {
    fn name(&self) -> &str {
        "random_prefix"
    }

    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        let mut out = self.inner.intervene(request)?;
        if let Some(hint) = out.hint.take() {
            let seed = mentor_core::seed::mix(&[
                self.seed,
                0x0c04_7501,
                mentor_core::seed::str_key(&request.task.id),
                request.previous_hints.len() as u64,
            ]);
            let c = size_matched_random(request.task, &hint, seed, &self.guard, self.tokens.as_ref());
            out.hint = c.hint;
            out.rejections.extend(c.rejections);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::GuardConfig;
    use mentor_core::{HintLevel, HintSource, MathPayload};

    use super::*;

    fn task(solution: &str, answer: &str) -> Task {
        let mut t = Task::math("t", "q", answer);
        t.payload = Payload::Math(MathPayload { answer: answer.into(), solution: Some(solution.into()) });
        t
    }

    fn hint(prefix: &str) -> Hint {
        Hint {
            level: HintLevel::PARTIAL_SOLUTION,
            text: format!("Here is how the solution starts:\n{prefix}\nContinue from here."),
            solution_prefix: Some(prefix.into()),
            source: HintSource::Mentor,
        }
    }

    const SOLUTION: &str = "She buys 3 apples.\nEach costs 2 dollars, so 6 dollars.\nShe pays 7 more for pears, 13.\nHalf is 26/2 = 13.\n#### 99";

    #[test]
    fn the_control_cuts_elsewhere_in_the_same_template() {
        let t = task(SOLUTION, "99");
        let guard = Guard::numeric_only(GuardConfig::default());
        let steps = pieces(&t);
        assert_eq!(steps.len(), 4);
        // The mentor showed one step; the control shows two or three, in the same words.
        for seed in 0..20 {
            let c = control(&t, &hint(&steps[0]), seed, &guard);
            assert_eq!(c.mentor_cut, 1);
            assert!([2, 3].contains(&c.random_cut), "{c:?}");
            let h = c.hint.unwrap();
            let want = steps[..c.random_cut].join("\n");
            assert_eq!(h.solution_prefix.as_deref(), Some(want.as_str()));
            assert_eq!(h.text, format!("Here is how the solution starts:\n{want}\nContinue from here."));
        }
        let cuts: std::collections::BTreeSet<usize> =
            (0..40).map(|s| control(&t, &hint(&steps[0]), s, &guard).random_cut).collect();
        assert_eq!(cuts, [2, 3].into());
        // Seeded.
        assert_eq!(control(&t, &hint(&steps[0]), 5, &guard), control(&t, &hint(&steps[0]), 5, &guard));
    }

    #[test]
    fn without_another_cut_or_a_prefix_the_control_is_the_mentors_hint() {
        let t = task("A is 4.\nSo 8.\n#### 8", "8");
        let guard = Guard::numeric_only(GuardConfig::default());
        let h = hint("A is 4.");
        let c = control(&t, &h, 1, &guard);
        assert_eq!((c.hint.as_ref(), c.mentor_cut, c.random_cut), (Some(&h), 1, 1));
        let plain = Hint { solution_prefix: None, ..h };
        assert_eq!(control(&t, &plain, 1, &guard).hint, Some(plain));
    }

    /// The rescue's control is matched in size: of the other cuts, the one whose hint is
    /// nearest in tokens to the mentor's (words here), never the mentor's own; without another
    /// cut there is no control.
    #[test]
    fn the_size_matched_cut_is_the_other_boundary_nearest_in_tokens() {
        let t = task(SOLUTION, "99");
        let guard = Guard::numeric_only(GuardConfig::default());
        let words = |s: &str| s.split_whitespace().count();
        let steps = pieces(&t);
        let hint_words = |m: usize| shown_size(&hint(&steps[..m].join("\n")), &words);
        // Mentor at cut 2: cut 1 and cut 3 are the candidates; the nearer in words wins.
        let mentor = hint(&steps[..2].join("\n"));
        let c = size_matched(&t, &mentor, &words, &guard).unwrap();
        let target = shown_size(&mentor, &words);
        let expect = [1, 3].into_iter().min_by_key(|&m| (hint_words(m).abs_diff(target), m)).unwrap();
        assert_eq!((c.mentor_cut, c.random_cut), (2, expect));
        assert_ne!(c.random_cut, c.mentor_cut);
        let h = c.hint.unwrap();
        assert_eq!(h.solution_prefix.unwrap(), steps[..expect].join("\n"));
        // Mentor at cut 1: the nearest other cut is 2 (cut 3 is longer still).
        let c = size_matched(&t, &hint(&steps[0]), &words, &guard).unwrap();
        assert_eq!(c.random_cut, 2);
        // A two-step reference has no other cut, and a hint without a prefix no control.
        let short = task("A is 4.\nSo 8.\n#### 8", "8");
        assert!(size_matched(&short, &hint("A is 4."), &words, &guard).is_none());
        let plain = Hint { solution_prefix: None, ..hint(&steps[0]) };
        assert!(size_matched(&t, &plain, &words, &guard).is_none());
    }

    #[test]
    fn the_guard_judges_the_control() {
        // Cutting after the third step shows the answer 13 (a redaction); a guard that
        // rejects instead of redacting refuses it.
        let t = task(SOLUTION, "13");
        let strict = Guard::numeric_only(GuardConfig { redact: false, ..GuardConfig::default() });
        let steps = pieces(&t);
        let rejected =
            (0..40).map(|s| control(&t, &hint(&steps[0]), s, &strict)).find(|c| c.random_cut == 3).unwrap();
        assert!(rejected.hint.is_none() && rejected.rejections.len() == 1, "{rejected:?}");
    }

    /// A mentor double that always hints the first two reference steps.
    struct TwoSteps;

    impl Mentor for TwoSteps {
        fn name(&self) -> &str {
            "two"
        }
        fn intervene(&self, r: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
            let steps = pieces(r.task);
            Ok(Intervention {
                diagnosis: None,
                hint: Some(hint(&steps[..2].join("\n"))),
                rejections: Vec::new(),
                redactions: Vec::new(),
            })
        }
    }

    /// Steps of one length: the cuts one step shorter and one longer tie in size.
    const EVEN: &str = "1+1+0=2\n2+2+0=4\n3+3+0=6\n4+4+0=8\nA:8642";

    #[test]
    fn the_training_arms_cut_is_the_nearest_in_size_with_ties_drawn() {
        let chars = |s: &str| s.chars().count();
        let guard = Guard::numeric_only(GuardConfig::default());
        let t = task(SOLUTION, "99");
        let steps = pieces(&t);
        // Mentor at cut 2: the hint cut at 3 is nearer its size than the one cut at 1 (the
        // second step is longer than the third): always cut 3.
        let mentor = hint(&steps[..2].join("\n"));
        for seed in 0..20 {
            let c = size_matched_random(&t, &mentor, seed, &guard, &chars);
            assert_eq!((c.mentor_cut, c.random_cut), (2, 3), "seed {seed}");
        }
        let even = task(EVEN, "8642");
        let cuts: std::collections::BTreeSet<usize> = (0..40)
            .map(|s| size_matched_random(&even, &hint("1+1+0=2\n2+2+0=4"), s, &guard, &chars).random_cut)
            .collect();
        assert_eq!(cuts, [1, 3].into(), "a tie is drawn, not broken toward the shorter cut");
        let plain = Hint { solution_prefix: None, ..mentor };
        assert_eq!(size_matched_random(&t, &plain, 1, &guard, &chars).hint, Some(plain));
    }

    #[test]
    fn the_training_arm_moves_every_cut_and_repeats_per_seed() {
        let guard = Guard::numeric_only(GuardConfig::default());
        let arm =
            RandomPrefix::new(Box::new(TwoSteps), guard.clone(), 3, Arc::new(|s: &str| s.chars().count()));
        assert_eq!(arm.name(), "random_prefix");
        let mut cuts = std::collections::BTreeSet::new();
        for i in 0..30 {
            let mut t = task(EVEN, "8642");
            t.id = format!("t{i}");
            let req = MentorRequest {
                task: &t,
                attempts: &[],
                level: HintLevel::PARTIAL_SOLUTION,
                previous_hints: &[],
            };
            let h = arm.intervene(&req).unwrap().hint.unwrap();
            let prefix = h.solution_prefix.clone().unwrap();
            let n = prefix.lines().count();
            assert_ne!(n, 2, "never the mentor's own cut");
            assert_eq!(prefix, pieces(&t)[..n].join("\n"));
            cuts.insert(n);
            let again = RandomPrefix::new(
                Box::new(TwoSteps),
                guard.clone(),
                3,
                Arc::new(|s: &str| s.chars().count()),
            )
            .intervene(&req)
            .unwrap();
            assert_eq!(again.hint, Some(h), "seeded by run seed and task");
        }
        assert_eq!(cuts, [1, 3].into(), "both other cuts occur");
    }
}
