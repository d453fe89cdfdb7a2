//! The embedded synthetic curriculum: multi-digit addition with a worked, least-significant-
//! digit-first scratchpad, at difficulty levels 1 (one-digit numbers) and up.
//!
//! A level-`L` problem adds two numbers of up to `L` digits. The completion writes one line
//! per column, right to left, `a+b+carry=sum`, then the answer read off the scratchpad's last
//! digits, least significant first:
//!
//! ```text
//! prompt      457+68=
//! completion  7+8+0=15
//!             5+6+1=12
//!             4+0+1=5
//!             A:525
//! ```
//!
//! The answer is checked by the math verifier against the gold digits (`525`; 1029+3=1032 is
//! written `A:2301`). The reference solution is the worked scratchpad itself, one step per
//! line, so the `rules` mentor can find the first line an attempt got wrong and hint the
//! correct lines up to it. Carries make the failure position vary from problem to problem.
//!
//! ## Ten columns: the withheld skill
//!
//! A *ten column* is a column whose sum, carry included, is exactly 10: `3+7+0=10`,
//! `4+5+1=10`. With `curriculum.ten_levels` set, pretraining never shows the model such a line
//! as a target, the easy levels never contain one, and every problem of a ten level contains
//! exactly one, at a column that varies from problem to problem. The model can do every other
//! column (sums 0 to 9 and 11 to 19), so its unhinted attempts at the hard level fail at the
//! ten column, wherever it is: at step 1 on one problem, step 3 on the next. A hint that stops
//! before it does not help; one that shows the lines up to and including it does.
//!
//! (A narrower gap, carries into a digit sum of 9 only, was tried first: the model got 30% of
//! those lines right by generalising from its other sums, and plain GRPO learned them alone.
//! A sum of 10 is the one whose digits, `1` then `0`, it never writes.)
//!
//! Problems are drawn from a seeded RNG: the same seed, level and index give the same task.

use mentor_core::{MathPayload, Message, Payload, Task, TaskMeta};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// The characters the curriculum's prompts, completions and hints use (the tiny model's
/// character vocabulary). Hint texts in `curriculum/prompts` must stay inside it.
pub const ALPHABET: &str = "0123456789+=:A\nHint abcdefghijklmnopqrsuvwxyz.,";

/// Name recorded in [`TaskMeta::source`].
pub const SOURCE: &str = "carry-add";

/// Highest supported level (number of digits).
pub const MAX_LEVEL: u32 = 9;

/// One addition problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Problem {
    /// First operand.
    pub a: u64,
    /// Second operand.
    pub b: u64,
}

/// How operands are drawn at a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Operands {
    /// `a` has exactly `L` digits, `b` between 1 and `L` (the prototype's distribution).
    #[default]
    Mixed,
    /// Both operands have exactly `L` digits (more columns with carries).
    Full,
}

/// Which problems a draw accepts, by their number of ten columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tens {
    /// Any problem.
    Any,
    /// Only problems without a ten column.
    None,
    /// Only problems with at most one.
    AtMostOne,
    /// Only problems with exactly one (levels of at least two digits).
    One,
}

impl Tens {
    fn accepts(self, n: usize) -> bool {
        match self {
            Tens::Any => true,
            Tens::None => n == 0,
            Tens::AtMostOne => n <= 1,
            Tens::One => n == 1,
        }
    }
}

impl Problem {
    /// Draws a level-`level` problem whose number of ten columns `tens` accepts (by
    /// rejection: every level has problems with none and with one).
    pub fn draw_with(level: u32, operands: Operands, tens: Tens, rng: &mut impl Rng) -> Problem {
        loop {
            let p = Problem::draw(level, operands, rng);
            if tens.accepts(p.ten_steps().len()) {
                return p;
            }
        }
    }

    /// The 0-based indices of the steps that are ten columns (a sum of exactly 10, carry
    /// included: `3+7+0=10`, `4+5+1=10`).
    pub fn ten_steps(&self) -> Vec<usize> {
        let (mut a, mut b, mut carry, mut i) = (self.a, self.b, 0u64, 0usize);
        let mut out = Vec::new();
        loop {
            let s = a % 10 + b % 10 + carry;
            if s == 10 {
                out.push(i);
            }
            carry = s / 10;
            a /= 10;
            b /= 10;
            i += 1;
            if a == 0 && b == 0 {
                break;
            }
        }
        out
    }

    /// Draws a level-`level` problem.
    pub fn draw(level: u32, operands: Operands, rng: &mut impl Rng) -> Problem {
        let level = level.clamp(1, MAX_LEVEL);
        let digits = |n: u32, rng: &mut dyn rand::RngCore| -> u64 {
            if n == 1 {
                rng.random_range(0..10)
            } else {
                rng.random_range(10u64.pow(n - 1)..10u64.pow(n))
            }
        };
        let a = digits(level, rng);
        let bl = match operands {
            Operands::Mixed => rng.random_range(1..=level),
            Operands::Full => level,
        };
        let b = digits(bl, rng);
        Problem { a, b }
    }

    /// The prompt text, `a+b=`.
    pub fn prompt(&self) -> String {
        format!("{}+{}=", self.a, self.b)
    }

    /// The worked scratchpad lines (without the answer line).
    pub fn steps(&self) -> Vec<String> {
        let (mut a, mut b, mut carry) = (self.a, self.b, 0u64);
        let mut out = Vec::new();
        loop {
            let (da, db) = (a % 10, b % 10);
            let s = da + db + carry;
            out.push(format!("{da}+{db}+{carry}={s}"));
            carry = s / 10;
            a /= 10;
            b /= 10;
            if a == 0 && b == 0 {
                break;
            }
        }
        out
    }

    /// The answer digits, least significant first (`457+68` → `525`, `1029+3` → `2301`).
    pub fn answer(&self) -> String {
        (self.a + self.b).to_string().chars().rev().collect()
    }

    /// The full reference completion: the steps, then `A:` and the answer.
    pub fn solution(&self) -> String {
        let mut lines = self.steps();
        lines.push(format!("A:{}", self.answer()));
        lines.join("\n")
    }

    /// A teacher's reference for the same problem: the column lines most significant first
    /// (`4+0+1=5`, `5+6+1=12`, `7+8+0=15` for `457+68`), then the same `A:` line. The arithmetic
    /// is the learner's; the order is one it never writes (its scratchpad, and every example of
    /// its pretraining, run from the units column up). [`learner_solution`] turns it back.
    pub fn teacher_solution(&self) -> String {
        let mut lines = self.steps();
        lines.reverse();
        lines.push(format!("A:{}", self.answer()));
        lines.join("\n")
    }

    /// The task: one user message with the prompt, the gold answer and the reference
    /// solution, with its level in the metadata.
    pub fn task(&self, id: impl Into<String>, level: u32) -> Task {
        Task {
            id: id.into(),
            prompt: vec![Message::user(self.prompt())],
            payload: Payload::Math(MathPayload { answer: self.answer(), solution: Some(self.solution()) }),
            meta: TaskMeta { source: SOURCE.into(), level: Some(level), subject: None },
        }
    }
}

/// A teacher's reference ([`Problem::teacher_solution`]) in the learner's layout: its column
/// lines in the order the learner writes them, least significant first, then the `A:` line.
/// `None` when `teacher` is not in that form (a line that is not `a+b+c=s`, or no final `A:`
/// line). This is the one rewrite every arm that shows the learner reference lines goes
/// through (the mentor, `random_prefix`, `where_only`, `full_solution_learner`); only
/// `full_solution` trains on the teacher's text as written.
pub fn learner_solution(teacher: &str) -> Option<String> {
    let mut lines: Vec<&str> = teacher.lines().collect();
    let answer = lines.pop().filter(|l| l.starts_with("A:"))?;
    let column = |l: &str| {
        let (lhs, sum) = l.split_once('=')?;
        let terms: Vec<&str> = lhs.split('+').collect();
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        (terms.len() == 3 && terms.iter().all(|t| digits(t)) && digits(sum)).then_some(())
    };
    if lines.is_empty() || lines.iter().any(|l| column(l).is_none()) {
        return None;
    }
    lines.reverse();
    lines.push(answer);
    Some(lines.join("\n"))
}

/// One phase of the training schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Difficulty level of the phase's problems.
    pub level: u32,
    /// Number of training steps.
    pub steps: usize,
}

/// The level of training step `step` under `schedule` (the last phase's level after its end).
pub fn level_at(schedule: &[Phase], step: usize) -> u32 {
    let mut end = 0;
    for p in schedule {
        end += p.steps;
        if step < end {
            return p.level;
        }
    }
    schedule.last().map_or(1, |p| p.level)
}

/// Steps since the start of the phase that step `step` falls in under `schedule` (for steps
/// past the end: since the start of the last phase).
pub fn steps_into_phase(schedule: &[Phase], step: usize) -> usize {
    let mut start = 0;
    for (i, p) in schedule.iter().enumerate() {
        if step < start + p.steps || i + 1 == schedule.len() {
            return step - start.min(step);
        }
        start += p.steps;
    }
    step
}

/// A seeded stream of tasks at one level: the `i`-th task depends only on
/// `(seed, level, operands, tens, i)`.
pub fn tasks(seed: u64, level: u32, operands: Operands, tens: Tens, count: usize, tag: &str) -> Vec<Task> {
    let mut rng = StdRng::seed_from_u64(seed ^ (u64::from(level) << 48) ^ 0x5eed_c0de);
    (0..count)
        .map(|i| {
            Problem::draw_with(level, operands, tens, &mut rng).task(format!("{tag}-L{level}-{i}"), level)
        })
        .collect()
}

/// `[curriculum]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CurriculumSection {
    /// Phases in order (level, steps): e.g. two digits for 20 steps, then four.
    pub schedule: Vec<Phase>,
    /// How operands are drawn at each level.
    pub operands: Operands,
    /// Levels at which `Full` operands are used regardless of `operands` (the hard level).
    pub full_operand_levels: Vec<u32>,
    /// Levels whose every problem holds exactly one ten column (a column summing to 10,
    /// `4+5+1=10`; see the module docs). When set, the other levels and pretraining's
    /// targets hold none: it is the skill the model lacks. Empty: problems are drawn as they
    /// come.
    pub ten_levels: Vec<u32>,
    /// Training problems per level: 0 draws new problems every step; `n > 0` draws each
    /// step's problems from a fixed pool of `n` per level (none in the evaluation set), in
    /// seeded epochs, so tasks come back and the per-task hint memory can fade their hints.
    pub pool: usize,
    /// The layout of the training tasks' reference solutions: `learner` (the learner's own
    /// scratchpad, as pretraining teaches it) or `teacher` (the same arithmetic, most
    /// significant column first: a layout the learner never produces). With `teacher`, every
    /// arm that shows the learner reference lines sees them through one shared rewrite into
    /// the learner's layout (`learner_solution`), and `full_solution`
    /// trains on the teacher's text as written.
    pub reference: ReferenceStyle,
}

/// `curriculum.reference`: whose layout the reference solutions are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceStyle {
    /// The learner's own scratchpad (least significant column first).
    #[default]
    Learner,
    /// A teacher's: most significant column first.
    Teacher,
}

impl Default for CurriculumSection {
    fn default() -> Self {
        Self {
            schedule: vec![Phase { level: 2, steps: 20 }, Phase { level: 4, steps: 100 }],
            operands: Operands::Mixed,
            full_operand_levels: vec![],
            ten_levels: vec![],
            pool: 0,
            reference: ReferenceStyle::Learner,
        }
    }
}

impl CurriculumSection {
    /// A schedule, and every level in range (read when `data.kind = "curriculum"`).
    pub fn validate(&self) -> Result<(), String> {
        if self.schedule.is_empty() {
            return Err("`curriculum.schedule`: needs at least one phase".into());
        }
        for (i, &l) in self.ten_levels.iter().enumerate() {
            if !(1..=MAX_LEVEL).contains(&l) {
                return Err(format!("`curriculum.ten_levels[{i}]`: {l} (allowed: 1..={MAX_LEVEL})"));
            }
        }
        for (i, p) in self.schedule.iter().enumerate() {
            if !(1..=MAX_LEVEL).contains(&p.level) {
                return Err(format!(
                    "`curriculum.schedule[{i}].level`: {} (allowed: 1..={MAX_LEVEL})",
                    p.level
                ));
            }
        }
        Ok(())
    }
}

/// The curriculum section's rules, applied.
impl CurriculumSection {
    /// The training task of problem `p`, its reference in [`Self::reference`]'s layout.
    pub fn train_task(&self, p: &Problem, id: String, level: u32) -> mentor_core::Task {
        let task = p.task(id, level);
        match self.reference {
            ReferenceStyle::Learner => task,
            ReferenceStyle::Teacher => task.with_reference_solution(p.teacher_solution()),
        }
    }

    /// The operand rule at `level`.
    pub fn operands_at(&self, level: u32) -> Operands {
        if self.full_operand_levels.contains(&level) {
            Operands::Full
        } else {
            self.operands
        }
    }

    /// The ten-column rule at `level` (see [`CurriculumSection::ten_levels`]).
    pub fn tens_at(&self, level: u32) -> Tens {
        if self.ten_levels.is_empty() {
            Tens::Any
        } else if self.ten_levels.contains(&level) {
            Tens::One
        } else {
            Tens::None
        }
    }

    /// Draws a level-`level` problem under the operand and ten-column rules.
    pub fn draw(&self, level: u32, rng: &mut impl rand::Rng) -> Problem {
        Problem::draw_with(level, self.operands_at(level), self.tens_at(level), rng)
    }

    /// A seeded stream of `count` level-`level` tasks (see `tasks`).
    pub fn tasks(&self, seed: u64, level: u32, count: usize, tag: &str) -> Vec<mentor_core::Task> {
        tasks(seed, level, self.operands_at(level), self.tens_at(level), count, tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mentor_core::Verifier;
    use proptest::prelude::*;

    #[test]
    fn worked_example_matches_the_format() {
        let p = Problem { a: 457, b: 68 };
        assert_eq!(p.prompt(), "457+68=");
        assert_eq!(p.solution(), "7+8+0=15\n5+6+1=12\n4+0+1=5\nA:525");
        let q = Problem { a: 1029, b: 3 };
        assert_eq!(q.answer(), "2301");
        assert_eq!(q.steps(), vec!["9+3+0=12", "2+0+1=3", "0+0+0=0", "1+0+0=1"]);
        // A final carry shows in the answer, not as an extra step.
        assert_eq!(Problem { a: 95, b: 7 }.solution(), "5+7+0=12\n9+0+1=10\nA:201");
    }

    #[test]
    fn every_character_is_in_the_alphabet() {
        let p = Problem { a: 987_654_321, b: 123_456_789 };
        let t = p.task("x", 9);
        for c in p.prompt().chars().chain(p.solution().chars()).chain(t.reference_answer().unwrap().chars()) {
            assert!(ALPHABET.contains(c), "{c:?}");
        }
    }

    #[test]
    fn the_math_verifier_accepts_the_reference_and_rejects_a_slip() {
        let v = mentor_verify_math::MathVerifier::default();
        let p = Problem { a: 4573, b: 6821 };
        let task = p.task("t", 4);
        assert!(v.verify(&task, &p.solution()).unwrap().passed());
        let mut wrong = p.solution();
        wrong.truncate(wrong.rfind(':').unwrap() + 1);
        wrong.push_str("49301");
        assert!(!v.verify(&task, &wrong).unwrap().passed());
        // Stopping early (the collapse mode) fails.
        assert!(!v.verify(&task, "3+1+0=4\n7+2+0=9\nA:94").unwrap().passed());
    }

    #[test]
    fn the_teacher_writes_most_significant_first_and_the_rewrite_gives_the_learners_lines() {
        let p = Problem { a: 457, b: 68 };
        assert_eq!(p.teacher_solution(), "4+0+1=5\n5+6+1=12\n7+8+0=15\nA:525");
        assert_ne!(p.teacher_solution(), p.solution());
        for (a, b) in [(457, 68), (4573, 6821), (9, 1), (987_654_321, 123_456_789)] {
            let p = Problem { a, b };
            assert_eq!(learner_solution(&p.teacher_solution()).as_deref(), Some(p.solution().as_str()));
            // The verifier takes the teacher's text as it is (`full_solution` trains on it).
            let v = mentor_verify_math::MathVerifier::default();
            assert!(v.verify(&p.task("t", 4), &p.teacher_solution()).unwrap().passed());
        }
        // Not the teacher's form: no rewrite.
        for bad in ["", "A:5", "4+0+1=5", "4+0=5\nA:5", "four\nA:5", "A:5\n4+0+1=5"] {
            assert_eq!(learner_solution(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn schedule_levels() {
        let s = [Phase { level: 2, steps: 3 }, Phase { level: 4, steps: 2 }];
        let levels: Vec<u32> = (0..7).map(|i| level_at(&s, i)).collect();
        assert_eq!(levels, vec![2, 2, 2, 4, 4, 4, 4]);
        let into: Vec<usize> = (0..7).map(|i| steps_into_phase(&s, i)).collect();
        assert_eq!(into, vec![0, 1, 2, 0, 1, 2, 3]);
        assert_eq!(steps_into_phase(&[], 5), 5);
    }

    #[test]
    fn streams_are_seeded_and_levels_tagged() {
        let a = tasks(3, 4, Operands::Full, Tens::Any, 5, "train");
        assert_eq!(a, tasks(3, 4, Operands::Full, Tens::Any, 5, "train"));
        assert_ne!(a, tasks(4, 4, Operands::Full, Tens::Any, 5, "train"));
        assert!(a.iter().all(|t| t.meta.level == Some(4)));
        for t in &a {
            let (x, y) = t.question().trim_end_matches('=').split_once('+').unwrap();
            assert_eq!((x.len(), y.len()), (4, 4), "{}", t.question());
        }
    }

    #[test]
    fn ten_columns_sum_to_ten_carry_included() {
        // 457+68: 7+8=15, 5+6+1=12, 4+0+1=5: none.
        assert!(Problem { a: 457, b: 68 }.ten_steps().is_empty());
        // 45+55: 5+5+0=10, then 4+5+1=10: both.
        assert_eq!(Problem { a: 45, b: 55 }.ten_steps(), vec![0, 1]);
        assert_eq!(Problem { a: 45, b: 55 }.steps(), vec!["5+5+0=10", "4+5+1=10"]);
        // 9+0+1 past the end of the shorter number counts: 1999+1 (9+1+0, 9+0+1, 9+0+1, 1+0+1).
        assert_eq!(Problem { a: 1999, b: 1 }.ten_steps(), vec![0, 1, 2]);
        // A digit sum of 9 without a carry in is not one; 11 is not either.
        assert!(Problem { a: 45, b: 54 }.ten_steps().is_empty());
        assert!(Problem { a: 56, b: 65 }.ten_steps().is_empty());
    }

    #[test]
    fn one_ten_levels_put_the_ten_at_varying_steps() {
        let ts = tasks(7, 4, Operands::Full, Tens::One, 400, "t");
        let mut at = [0usize; 5];
        for t in &ts {
            let (x, y) = t.question().trim_end_matches('=').split_once('+').unwrap();
            let p = Problem { a: x.parse().unwrap(), b: y.parse().unwrap() };
            let c = p.ten_steps();
            assert_eq!(c.len(), 1, "{}", t.question());
            at[c[0]] += 1;
        }
        assert!(at[..4].iter().all(|&n| n > 50), "every column hosts the ten: {at:?}");
        let none = tasks(7, 4, Operands::Full, Tens::None, 100, "t");
        assert!(none.iter().all(|t| !t.reference_solution().unwrap().contains("=10\n")));
    }

    proptest! {
        #[test]
        fn scratchpad_adds_up(level in 1u32..=9, seed in any::<u64>(), full in any::<bool>()) {
            let ops = if full { Operands::Full } else { Operands::Mixed };
            let p = Problem::draw(level, ops, &mut StdRng::seed_from_u64(seed));
            prop_assert_eq!(p.a.to_string().len() as u32, level);
            // Reading the last digit of each step's sum, then a final carry, gives a+b.
            let steps = p.steps();
            let mut digits = String::new();
            let mut carry = 0;
            for s in &steps {
                let sum: u64 = s.rsplit('=').next().unwrap().parse().unwrap();
                digits.push(char::from(b'0' + (sum % 10) as u8));
                carry = sum / 10;
            }
            if carry > 0 {
                digits.push('1');
            }
            prop_assert_eq!(&digits, &p.answer());
            let back: String = digits.chars().rev().collect();
            prop_assert_eq!(back.parse::<u64>().unwrap(), p.a + p.b);
        }
    }
}
