//! Held-out arithmetic word problems: a second generator whose templates share nothing with
//! [`crate::arith`] (the family the `rules` mentor's wording was written from), so that a
//! rescue or training claim can be tested on problems its author never read.
//!
//! Eight test templates (two people and "more/fewer than", change from a bill, equal shares,
//! halves, reading rates, weekly totals, several purchases), each a short story of up to four
//! calculations using all four operations, with its own names and objects; two more templates
//! (earnings, teams) serve only as the few-shot prompt's worked examples, so no example shares
//! a template with a test problem. A problem of `steps` calculations (2–4) tells the first
//! `steps` parts of its template's story and asks for the last result. Solutions are in
//! GSM8K's form (every calculation a `<<a op b=c>>` step, an integer answer), as `arith`'s are,
//! so the checker, the mentor's step diagnosis and the controls read them alike.
//!
//! Every problem is a function of `(seed, index, steps)` (integer arithmetic and a seeded
//! [`StdRng`]): problem `index` uses test template `index % 8`, so templates are balanced.
//! The template's name is in `meta.subject`, for per-template tables.

use mentor_core::{MathPayload, Message, Payload, Task, TaskMeta};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use mentor_core::seed::mix;

/// The `meta.source` of held-out problems.
pub const SOURCE: &str = "heldout";

/// The `meta.source` of the worked examples (templates never in a test set).
pub const EXAMPLE_SOURCE: &str = "heldout-example";

/// Names of the held-out family (none is a name of [`crate::arith`]'s).
pub(crate) const NAMES: &[&str] =
    &["Priya", "Omar", "Keiko", "Diego", "Hana", "Felix", "Rosa", "Kwame", "Lena", "Arjun", "Mei", "Tariq"];

/// Things counted in the held-out family (none is an item or container of [`crate::arith`]'s).
pub(crate) const OBJECTS: &[&str] = &[
    "marbles",
    "stamps",
    "seashells",
    "beads",
    "postcards",
    "pebbles",
    "crayons",
    "buttons",
    "acorns",
    "feathers",
];

/// A story a problem is told in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// Two people, one with some more than the other.
    MoreThan,
    /// Two people, one with some fewer than the other.
    FewerThan,
    /// A purchase paid with a bill, and the change.
    ChangeFromBill,
    /// Equal shares among friends.
    EqualShares,
    /// Half given away.
    Halves,
    /// Pages read at a rate over days.
    ReadingRate,
    /// Distances over a week.
    WeeklyTotal,
    /// Several purchases, a coupon, a split bill.
    SeveralPurchases,
    /// Earnings (worked examples only).
    Earnings,
    /// Teams of pupils (worked examples only).
    Teams,
}

impl Template {
    /// The name in `meta.subject` and in per-template tables.
    pub fn name(self) -> &'static str {
        match self {
            Template::MoreThan => "more_than",
            Template::FewerThan => "fewer_than",
            Template::ChangeFromBill => "change_from_bill",
            Template::EqualShares => "equal_shares",
            Template::Halves => "halves",
            Template::ReadingRate => "reading_rate",
            Template::WeeklyTotal => "weekly_total",
            Template::SeveralPurchases => "several_purchases",
            Template::Earnings => "earnings",
            Template::Teams => "teams",
        }
    }
}

/// The test templates, in the order problem indices cycle through them.
pub const TEMPLATES: [Template; 8] = [
    Template::MoreThan,
    Template::FewerThan,
    Template::ChangeFromBill,
    Template::EqualShares,
    Template::Halves,
    Template::ReadingRate,
    Template::WeeklyTotal,
    Template::SeveralPurchases,
];

/// The templates of the worked examples only.
pub const EXAMPLE_TEMPLATES: [Template; 2] = [Template::Earnings, Template::Teams];

/// The most calculations a template's story has.
pub const MAX_STEPS: usize = 4;

/// One calculation: the story's sentence, the question that asks for its result, the worked
/// line (with `{calc}` where the `<<a op b=c>>` note and result go), and the calculation.
struct Part {
    story: String,
    ask: String,
    line: String,
    a: u64,
    op: char,
    b: u64,
}

impl Part {
    fn result(&self) -> u64 {
        match self.op {
            '+' => self.a + self.b,
            '-' => self.a - self.b,
            '*' => self.a * self.b,
            _ => self.a / self.b,
        }
    }
}

/// A part's parameters: the story sentence, the question, the worked line with `{calc}`.
fn part(story: impl Into<String>, ask: impl Into<String>, line: &str, (a, op, b): (u64, char, u64)) -> Part {
    Part { story: story.into(), ask: ask.into(), line: line.to_string(), a, op, b }
}

/// `n` with `1 <= n < v` and `(v - n)` a positive multiple of `k` (`v > k`).
fn sub_to_multiple(rng: &mut StdRng, v: u64, k: u64) -> u64 {
    let top = (v - 1) / k; // multiples k, 2k, .. below v
    let m = rng.random_range(1..=top.max(1));
    v - m * k
}

fn pick<'a>(rng: &mut StdRng, from: &[&'a str]) -> &'a str {
    from[rng.random_range(0..from.len())]
}

/// Two different names.
fn two_names(rng: &mut StdRng) -> (&'static str, &'static str) {
    let a = pick(rng, NAMES);
    loop {
        let b = pick(rng, NAMES);
        if b != a {
            return (a, b);
        }
    }
}

/// The four parts of `template`'s story, with numbers drawn from `rng`.
fn story(template: Template, rng: &mut StdRng) -> Vec<Part> {
    let (a, b) = two_names(rng);
    let obj = pick(rng, OBJECTS);
    match template {
        Template::MoreThan => {
            let x = rng.random_range(5..=30u64);
            let d = rng.random_range(2..=15u64);
            let v1 = x + d;
            let k = rng.random_range(2..=3u64);
            let v2 = v1 * k;
            let q = rng.random_range(2..=5u64);
            let n = sub_to_multiple(rng, v2, q);
            let v3 = v2 - n;
            vec![
                part(
                    format!("{a} has {x} {obj}. {b} has {d} more {obj} than {a}."),
                    format!("How many {obj} does {b} have?"),
                    &format!("{b} owns {{calc}} {obj}."),
                    (x, '+', d),
                ),
                part(
                    format!("Over the holidays, {b}'s collection grows to {k} times its size."),
                    format!("How many {obj} does {b} own after the holidays?"),
                    &format!("After the holidays {b} owns {{calc}} {obj}."),
                    (v1, '*', k),
                ),
                part(
                    format!("{b} trades away {n} of them."),
                    format!("How many {obj} are left with {b}?"),
                    &format!("{b} is left with {{calc}} {obj}."),
                    (v2, '-', n),
                ),
                part(
                    format!("{b} packs what is left evenly into {q} tins."),
                    format!("How many {obj} go into each tin?"),
                    &format!("Each tin holds {{calc}} {obj}."),
                    (v3, '/', q),
                ),
            ]
        }
        Template::FewerThan => {
            let x = rng.random_range(20..=60u64);
            let d = rng.random_range(3..=15u64);
            let v1 = x - d;
            let n = rng.random_range(2..=20u64);
            let v2 = v1 + n;
            let k = rng.random_range(2..=4u64);
            let v3 = v2 * k;
            vec![
                part(
                    format!("{a} collected {x} {obj}. {b} collected {d} fewer {obj} than {a} did."),
                    format!("How many {obj} did {b} collect?"),
                    &format!("{b} collected {{calc}} {obj}."),
                    (x, '-', d),
                ),
                part(
                    format!("Later, a neighbour handed {b} another {n}."),
                    format!("How many {obj} did {b} have after the neighbour's gift?"),
                    &format!("With the gift {b} had {{calc}} {obj}."),
                    (v1, '+', n),
                ),
                part(
                    format!("By the end of the year {b} owned {k} times as many as that."),
                    format!("How many {obj} did {b} own at the end of the year?"),
                    &format!("At the end of the year {b} owned {{calc}} {obj}."),
                    (v2, '*', k),
                ),
                part(
                    format!("{b} then divided all of them equally among {k} cousins."),
                    format!("How many {obj} did each cousin receive?"),
                    &format!("Each cousin received {{calc}} {obj}."),
                    (v3, '/', k),
                ),
            ]
        }
        Template::ChangeFromBill => {
            let n = rng.random_range(2..=6u64);
            let p = rng.random_range(2..=8u64);
            let cost = n * p;
            let bill = [20u64, 50, 100].into_iter().find(|&b| b > cost + 2).unwrap_or(100);
            let change = bill - cost;
            let s = sub_to_multiple(rng, change, 2);
            let left = change - s;
            vec![
                part(
                    format!("{a} buys {n} bags of {obj} that cost ${p} per bag."),
                    format!("How many dollars does {a} spend on the {obj}?"),
                    &format!("The {obj} cost {{calc}} dollars."),
                    (n, '*', p),
                ),
                part(
                    format!("{a} hands the cashier a ${bill} bill."),
                    format!("How many dollars of change does {a} get back?"),
                    "The change is {calc} dollars.",
                    (bill, '-', cost),
                ),
                part(
                    format!("On the way out, {a} spends ${s} of the change on a snack."),
                    format!("How many dollars of change does {a} still hold?"),
                    &format!("{a} still holds {{calc}} dollars."),
                    (change, '-', s),
                ),
                part(
                    format!("{a} splits the remaining money evenly with {b}."),
                    "How many dollars does each of them get?",
                    "Each of them gets {calc} dollars.",
                    (left, '/', 2),
                ),
            ]
        }
        Template::EqualShares => {
            let k = rng.random_range(2..=6u64);
            let m = rng.random_range(3..=12u64);
            let t = k * m;
            let n = rng.random_range(2..=15u64);
            let v2 = m + n;
            let j = rng.random_range(2..=3u64);
            let v3 = v2 * j;
            let l = rng.random_range(1..v3.min(20));
            vec![
                part(
                    format!("{a} shares {t} {obj} equally among {k} friends."),
                    format!("How many {obj} does each friend get?"),
                    &format!("Each friend gets {{calc}} {obj}."),
                    (t, '/', k),
                ),
                part(
                    format!("One of the friends, {b}, already kept {n} {obj} at home."),
                    format!("How many {obj} does {b} have after the sharing?"),
                    &format!("After the sharing {b} has {{calc}} {obj}."),
                    (m, '+', n),
                ),
                part(
                    format!("A month later {b} has {j} times that number."),
                    format!("How many {obj} does {b} have a month later?"),
                    &format!("A month later {b} has {{calc}} {obj}."),
                    (v2, '*', j),
                ),
                part(
                    format!("At the park {b} drops {l} of them and cannot find them."),
                    format!("How many {obj} does {b} still have?"),
                    &format!("{b} still has {{calc}} {obj}."),
                    (v3, '-', l),
                ),
            ]
        }
        Template::Halves => {
            let x = 2 * rng.random_range(4..=25u64);
            let h = x / 2;
            let n = rng.random_range(2..=20u64);
            let v2 = h + n;
            let s = rng.random_range(1..v2.min(12));
            let v3 = v2 - s;
            let k = rng.random_range(2..=3u64);
            vec![
                part(
                    format!("{a} had {x} {obj} and gave half of them to {b}."),
                    format!("How many {obj} did {b} receive?"),
                    &format!("{b} received {{calc}} {obj}."),
                    (x, '/', 2),
                ),
                part(
                    format!("Before that, {b} already owned {n} {obj}."),
                    format!("How many {obj} does {b} own in total?"),
                    &format!("In total {b} owns {{calc}} {obj}."),
                    (h, '+', n),
                ),
                part(
                    format!("{b} swaps {s} of them for a comic book."),
                    format!("How many {obj} does {b} keep?"),
                    &format!("{b} keeps {{calc}} {obj}."),
                    (v2, '-', s),
                ),
                part(
                    format!("By winter, {b}'s pile is {k} times the size it was after the swap."),
                    format!("How many {obj} does {b} have by winter?"),
                    &format!("By winter {b} has {{calc}} {obj}."),
                    (v3, '*', k),
                ),
            ]
        }
        Template::ReadingRate => {
            let r = rng.random_range(5..=20u64);
            let h = rng.random_range(2..=4u64);
            let v1 = r * h;
            let n = rng.random_range(3..=25u64);
            let v2 = v1 + n;
            let l = rng.random_range(2..v2.min(20));
            let v3 = v2 - l;
            let k = rng.random_range(2..=3u64);
            vec![
                part(
                    format!("{a} reads {r} pages every hour and reads for {h} hours on Monday."),
                    format!("How many pages does {a} read on Monday?"),
                    &format!("On Monday {a} reads {{calc}} pages."),
                    (r, '*', h),
                ),
                part(
                    format!("On Tuesday {a} reads {n} pages more than on Monday."),
                    format!("How many pages does {a} read on Tuesday?"),
                    &format!("On Tuesday {a} reads {{calc}} pages."),
                    (v1, '+', n),
                ),
                part(
                    format!("On Wednesday {a} reads {l} pages less than on Tuesday."),
                    format!("How many pages does {a} read on Wednesday?"),
                    &format!("On Wednesday {a} reads {{calc}} pages."),
                    (v2, '-', l),
                ),
                part(
                    format!("{a}'s goal for Thursday is {k} times Wednesday's pages."),
                    format!("How many pages is {a}'s goal for Thursday?"),
                    "The goal for Thursday is {calc} pages.",
                    (v3, '*', k),
                ),
            ]
        }
        Template::WeeklyTotal => {
            let d = rng.random_range(2..=9u64);
            let w = rng.random_range(3..=5u64);
            let v1 = d * w;
            let e = rng.random_range(5..=30u64);
            let v2 = v1 + e;
            let q = rng.random_range(2..=4u64);
            let c = sub_to_multiple(rng, v2, q);
            let v3 = v2 - c;
            vec![
                part(
                    format!("{a} cycles {d} kilometres on each of {w} school days."),
                    format!("How many kilometres does {a} cycle on those school days?"),
                    "On the school days the distance is {calc} kilometres.",
                    (d, '*', w),
                ),
                part(
                    format!("At the weekend {a} adds one long ride of {e} kilometres."),
                    format!("How many kilometres does {a} cycle that week?"),
                    "For the week that makes {calc} kilometres.",
                    (v1, '+', e),
                ),
                part(
                    format!("The next week a flat tyre cuts {c} kilometres from that same total."),
                    format!("How many kilometres does {a} cycle in the next week?"),
                    "The next week's distance is {calc} kilometres.",
                    (v2, '-', c),
                ),
                part(
                    format!(
                        "{a} wants to ride the next week's distance again, in {q} rides of equal length."
                    ),
                    "How many kilometres long is each ride?",
                    "Each ride is {calc} kilometres.",
                    (v3, '/', q),
                ),
            ]
        }
        Template::SeveralPurchases => {
            let x = rng.random_range(3..=15u64);
            let y = rng.random_range(3..=15u64);
            let v1 = x + y;
            let z = rng.random_range(4..=20u64);
            let v2 = v1 + z;
            let k = rng.random_range(2..=4u64);
            let c = sub_to_multiple(rng, v2, k);
            let v3 = v2 - c;
            vec![
                part(
                    format!("{a} pays ${x} for a notebook and ${y} for a set of paints."),
                    format!("How many dollars does {a} spend on the two things?"),
                    "The two things cost {calc} dollars.",
                    (x, '+', y),
                ),
                part(
                    format!("{a} also picks up a desk lamp for ${z}."),
                    format!("How many dollars does {a} spend altogether?"),
                    "Altogether that is {calc} dollars.",
                    (v1, '+', z),
                ),
                part(
                    format!("A coupon takes ${c} off the whole bill."),
                    format!("How many dollars does {a} pay after the coupon?"),
                    "After the coupon the bill is {calc} dollars.",
                    (v2, '-', c),
                ),
                part(
                    format!("{a} and {} friends pay that bill in equal parts.", k - 1),
                    "How many dollars does each person pay?",
                    "Each person pays {calc} dollars.",
                    (v3, '/', k),
                ),
            ]
        }
        Template::Earnings => {
            let e = rng.random_range(4..=12u64);
            let n = rng.random_range(2..=6u64);
            let v1 = e * n;
            let s = rng.random_range(5..=25u64);
            let v2 = v1 + s;
            let k = rng.random_range(2..=3u64);
            let c = sub_to_multiple(rng, v2, k);
            let v3 = v2 - c;
            vec![
                part(
                    format!("{a} earns ${e} for every lawn mowed and mows {n} lawns."),
                    format!("How many dollars does {a} earn?"),
                    "The lawns bring in {calc} dollars.",
                    (e, '*', n),
                ),
                part(
                    format!("{a} adds ${s} of birthday money to it."),
                    format!("How many dollars does {a} have then?"),
                    "With the gift there are {calc} dollars.",
                    (v1, '+', s),
                ),
                part(
                    format!("{a} spends ${c} on a cap."),
                    "How many dollars remain?",
                    "What remains is {calc} dollars.",
                    (v2, '-', c),
                ),
                part(
                    format!("{a} divides the rest between {k} jars."),
                    "How many dollars go in each jar?",
                    "Each jar gets {calc} dollars.",
                    (v3, '/', k),
                ),
            ]
        }
        Template::Teams => {
            let g = rng.random_range(3..=6u64);
            let teams = rng.random_range(3..=8u64);
            let t = g * teams;
            let n = rng.random_range(1..=5u64);
            let v2 = teams + n;
            let k = rng.random_range(2..=4u64);
            let v3 = v2 * k;
            let c = rng.random_range(1..v3);
            vec![
                part(
                    format!("A class of {t} pupils forms teams of {g}."),
                    "How many teams are there?",
                    "There are {calc} teams.",
                    (t, '/', g),
                ),
                part(
                    format!("{n} more teams join from the class next door."),
                    "How many teams are there now in all?",
                    "In all there are {calc} teams.",
                    (teams, '+', n),
                ),
                part(
                    format!("Every team needs {k} cones for practice."),
                    "How many cones are needed?",
                    "The teams need {calc} cones.",
                    (v2, '*', k),
                ),
                part(
                    format!("{c} cones are already on the field."),
                    "How many more cones must be brought?",
                    "They must bring {calc} more cones.",
                    (v3, '-', c),
                ),
            ]
        }
    }
}

/// A task of `template` with `steps` calculations (2..=4; clamped), numbers from `rng`.
fn build(template: Template, rng: &mut StdRng, steps: usize, id: String, source: &str) -> Task {
    let steps = steps.clamp(1, MAX_STEPS);
    let parts = story(template, rng);
    let mut question = String::new();
    let mut solution = Vec::with_capacity(steps);
    let mut value = 0;
    for p in &parts[..steps] {
        value = p.result();
        let calc = format!("{} {} {} = <<{}{}{}={value}>>{value}", p.a, p.op, p.b, p.a, p.op, p.b);
        if !question.is_empty() {
            question.push(' ');
        }
        question.push_str(&p.story);
        solution.push(p.line.replace("{calc}", &calc));
    }
    question.push(' ');
    question.push_str(&parts[steps - 1].ask);
    Task {
        id,
        prompt: vec![Message::user(question)],
        payload: Payload::Math(MathPayload {
            answer: value.to_string(),
            solution: Some(solution.join("\n")),
        }),
        meta: TaskMeta {
            source: source.into(),
            level: Some(steps as u32),
            subject: Some(template.name().into()),
        },
    }
}

/// Held-out problem `index` of family `seed` with `steps` calculations (2–4): test template
/// `index % 8`. The id is `heldout/<seed>/<steps>/<index>`.
pub fn problem(seed: u64, index: u64, steps: usize) -> Task {
    let template = TEMPLATES[(index % TEMPLATES.len() as u64) as usize];
    let mut rng = StdRng::seed_from_u64(mix(&[seed, 0x4e1d, steps as u64, index]));
    build(template, &mut rng, steps, format!("{SOURCE}/{seed}/{steps}/{index}"), SOURCE)
}

/// `n` held-out problems of family `seed`, indices `0..n`, problem `i` of template `i % 8` with
/// `lo + (i / 8) % (hi - lo + 1)` steps: every template at every count in turn.
pub fn mixed(seed: u64, n: usize, (lo, hi): (usize, usize)) -> Vec<Task> {
    let counts = (hi.max(lo) - lo + 1) as u64;
    (0..n as u64).map(|i| problem(seed, i, lo + ((i / TEMPLATES.len() as u64) % counts) as usize)).collect()
}

/// Worked example `i` for the few-shot prompt: from the example-only templates, never one a
/// test problem uses.
pub fn example(seed: u64, i: u64, steps: usize) -> Task {
    let template = EXAMPLE_TEMPLATES[(i % EXAMPLE_TEMPLATES.len() as u64) as usize];
    let mut rng = StdRng::seed_from_u64(mix(&[seed, 0xe8a3, steps as u64, i]));
    build(template, &mut rng, steps, format!("{EXAMPLE_SOURCE}/{seed}/{steps}/{i}"), EXAMPLE_SOURCE)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use mentor_core::Verifier;
    use mentor_verify_math::MathVerifier;

    use super::*;

    fn eval(expr: &str) -> u64 {
        for op in ['+', '-', '*', '/'] {
            if let Some((a, b)) = expr.split_once(op) {
                let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
                return match op {
                    '+' => a + b,
                    '-' => a.checked_sub(b).expect("no negative step"),
                    '*' => a * b,
                    _ => {
                        assert_eq!(a % b, 0, "an exact division: {expr}");
                        a / b
                    }
                };
            }
        }
        panic!("no operator in {expr}")
    }

    fn all_tasks() -> Vec<Task> {
        let mut out = Vec::new();
        for seed in 0..4 {
            for steps in 2..=MAX_STEPS {
                out.extend(mixed(seed, 80, (steps, steps)));
                out.extend((0..6).map(|i| example(seed, i, steps)));
            }
        }
        out
    }

    #[test]
    fn every_step_is_exact_positive_and_ends_at_the_answer() {
        let mut ops_at = vec![BTreeSet::new(); MAX_STEPS];
        for t in all_tasks() {
            let solution = t.reference_solution().unwrap();
            let calcs: Vec<&str> =
                solution.split("<<").skip(1).map(|s| s.split(">>").next().unwrap()).collect();
            assert_eq!(calcs.len(), t.meta.level.unwrap() as usize, "{solution}");
            let mut last = 0;
            for (i, c) in calcs.iter().enumerate() {
                let (lhs, rhs) = c.split_once('=').unwrap();
                let r: u64 = rhs.parse().unwrap();
                assert_eq!(eval(lhs), r, "{c} in {}", t.question());
                assert!(r > 0, "{c} in {}", t.question());
                ops_at[i].insert(lhs.chars().find(|ch| "+-*/".contains(*ch)).unwrap());
                last = r;
            }
            let Payload::Math(m) = &t.payload else { unreachable!() };
            assert_eq!(m.answer, last.to_string());
            assert!(t.question().ends_with('?'), "{}", t.question());
        }
        // All four operations, and the first calculation is not always a product.
        assert_eq!(ops_at[0], BTreeSet::from(['*', '+', '-', '/']));
        let all: BTreeSet<char> = ops_at.iter().flatten().copied().collect();
        assert_eq!(all.len(), 4);
    }

    #[test]
    fn templates_cycle_and_examples_never_use_a_test_template() {
        let ps = mixed(3, 16, (3, 3));
        for (i, t) in ps.iter().enumerate() {
            assert_eq!(t.meta.subject.as_deref(), Some(TEMPLATES[i % TEMPLATES.len()].name()));
            assert_eq!(t.id, format!("heldout/3/3/{i}"));
        }
        for i in 0..10 {
            let e = example(3, i, 3);
            let template = e.meta.subject.clone().unwrap();
            let named = |set: &[Template]| set.iter().any(|t| t.name() == template);
            assert!(named(&EXAMPLE_TEMPLATES) && !named(&TEMPLATES));
        }
        assert!(TEMPLATES.len() >= 8);
        assert_eq!(problem(5, 2, 4), problem(5, 2, 4));
        assert_ne!(problem(5, 2, 4).question(), problem(6, 2, 4).question());
        // Mixed counts: every template at every count, in turn; ids name the count.
        let mut seen = std::collections::BTreeMap::new();
        for (i, t) in mixed(3, 48, (2, 4)).iter().enumerate() {
            let steps = 2 + (i / TEMPLATES.len()) % 3;
            assert_eq!(t.id, format!("heldout/3/{steps}/{i}"));
            assert_eq!(t.meta.level, Some(steps as u32));
            *seen.entry((t.meta.subject.clone().unwrap(), steps)).or_insert(0) += 1;
        }
        assert_eq!(seen.len(), TEMPLATES.len() * 3);
        assert!(seen.values().all(|&n| n == 2), "{seen:?}");
    }

    /// A sentence with its numbers, names and objects replaced by placeholders.
    fn shape(sentence: &str, names: &[&str], objects: &[&str]) -> String {
        let mut words: Vec<String> = Vec::new();
        for w in sentence.split_whitespace() {
            let core: String = w.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
            let stem = core.strip_suffix("'s").unwrap_or(&core);
            let w = if core.chars().any(|c| c.is_ascii_digit()) {
                "#".to_string()
            } else if names.contains(&stem) {
                "@name".to_string()
            } else if objects.contains(&core.as_str()) {
                "@thing".to_string()
            } else {
                w.to_lowercase()
            };
            words.push(w);
        }
        words.join(" ")
    }

    fn sentences(text: &str) -> Vec<&str> {
        text.split_inclusive(['.', '?']).map(str::trim).filter(|s| !s.is_empty()).collect()
    }

    #[test]
    fn no_sentence_shape_is_shared_with_the_development_family() {
        let arith_names: Vec<&str> = crate::arith::NAMES.iter().map(|(n, _)| *n).collect();
        let arith_things: Vec<&str> = crate::arith::THINGS.iter().flat_map(|(c, i)| [*c, *i]).collect();
        let names: Vec<&str> = arith_names.iter().chain(NAMES).copied().collect();
        let objects: Vec<&str> = arith_things.iter().chain(OBJECTS).copied().collect();
        for n in NAMES {
            assert!(!arith_names.contains(n), "{n} is an arith name");
        }
        for o in OBJECTS {
            assert!(!arith_things.contains(o), "{o} is an arith thing");
        }
        let mut dev = BTreeSet::new();
        for seed in 0..3 {
            for steps in 1..=4 {
                for t in crate::arith::problems(seed, 60, steps) {
                    let text = format!("{}\n{}", t.question(), t.reference_solution().unwrap());
                    for line in text.lines() {
                        for s in sentences(line) {
                            dev.insert(shape(s, &names, &objects));
                        }
                    }
                }
            }
        }
        assert!(dev.len() > 5, "{dev:?}");
        for t in all_tasks() {
            let text = format!("{}\n{}", t.question(), t.reference_solution().unwrap());
            for line in text.lines() {
                for s in sentences(line) {
                    let sh = shape(s, &names, &objects);
                    assert!(!dev.contains(&sh), "`{s}` has the shape of a development sentence: {sh}");
                }
            }
        }
    }

    #[test]
    fn the_math_checker_accepts_the_answer_boxed() {
        let v = MathVerifier::default();
        for t in mixed(1, 24, (3, 3)) {
            let Payload::Math(m) = &t.payload else { unreachable!() };
            let verdict = v.verify(&t, &format!("So the answer is \\boxed{{{}}}.", m.answer)).unwrap();
            assert!(verdict.passed(), "{verdict:?}");
        }
    }
}
