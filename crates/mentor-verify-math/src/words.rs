//! The words an answer may contain: what the checker *reads* besides math.
//!
//! Every word of an answer region must be one of these, or the region is not an answer
//! (`no_answer`): a unit ([`UNITS`], single-letter ones only where the gold has no variable), a
//! neutral word of answer phrasing ([`NEUTRAL`]), a number word (`seven`, `negative`), a
//! multiplier that changes the value (`thousand`, `dozen`: applied by the lexer, see
//! [`multiplier`]), a word of the gold answer, or a word of the question (what is counted:
//! "33 pencils" when the question asks about pencils). Anything else (`probably`, `nope`,
//! `nicht`, a word never seen) is unread, so a new hedge word is refused by construction: the
//! lists here say what is neutral, never what is a hedge.

use std::collections::HashSet;

/// Units of measure and currencies, lower case, singular and plural where they differ.
pub(crate) const UNITS: &[&str] = &[
    // Length, area, volume.
    "mm",
    "cm",
    "dm",
    "km",
    "meter",
    "meters",
    "metre",
    "metres",
    "millimeter",
    "millimeters",
    "centimeter",
    "centimeters",
    "kilometer",
    "kilometers",
    "inch",
    "inches",
    "in",
    "ft",
    "foot",
    "feet",
    "yd",
    "yard",
    "yards",
    "mi",
    "mile",
    "miles",
    "sq",
    "square",
    "cubic",
    "units",
    "unit",
    "liter",
    "liters",
    "litre",
    "litres",
    "ml",
    "milliliter",
    "milliliters",
    "gallon",
    "gallons",
    "quart",
    "quarts",
    "pint",
    "pints",
    "cup",
    "cups",
    "ounce",
    "ounces",
    "oz",
    "acre",
    "acres",
    "hectare",
    "hectares",
    // Mass.
    "mg",
    "kg",
    "gram",
    "grams",
    "kilogram",
    "kilograms",
    "lb",
    "lbs",
    "pound",
    "pounds",
    "ton",
    "tons",
    "tonne",
    "tonnes",
    // Time.
    "sec",
    "secs",
    "second",
    "seconds",
    "min",
    "mins",
    "minute",
    "minutes",
    "hr",
    "hrs",
    "hour",
    "hours",
    "day",
    "days",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "am",
    "pm",
    // Speed, rates, misc.
    "mph",
    "kmh",
    "kph",
    "rpm",
    "per",
    "degree",
    "degrees",
    "deg",
    "radian",
    "radians",
    "rad",
    "percent",
    "percentage",
    "points",
    "point",
    "kw",
    "kwh",
    "watt",
    "watts",
    "volt",
    "volts",
    "mb",
    "gb",
    "kb",
    "tb",
    "byte",
    "bytes",
    // Money.
    "dollar",
    "dollars",
    "cent",
    "cents",
    "usd",
    "euro",
    "euros",
    "pound",
    "pounds",
    "yen",
    "rupee",
    "rupees",
];

/// Single letters that are units (`1000 m`, `5 s`, `3 g`, `2 L`); read as units only where the
/// gold answer has no variable, else they are variables.
pub(crate) const UNIT_LETTERS: &[&str] = &["m", "s", "g", "h", "l", "L", "N", "J", "W", "V", "K", "A"];

/// Words of answer phrasing that state nothing about the value: articles, copulas, pronouns,
/// connectives of a conclusion, and the words that name an answer or a total. Never a word
/// that negates, bounds, approximates, doubts or retracts.
pub(crate) const NEUTRAL: &[&str] = &[
    // Articles, pronouns, copulas.
    "a",
    "an",
    "the",
    "it",
    "its",
    "it's",
    "this",
    "that",
    "these",
    "those",
    "there",
    "here",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "equals",
    "equal",
    "makes",
    "make",
    "gives",
    "give",
    "giving",
    "making",
    "get",
    "gets",
    "got",
    "has",
    "have",
    "had",
    "he",
    "she",
    "they",
    "we",
    "you",
    "i",
    "his",
    "her",
    "their",
    "our",
    "your",
    "my",
    "them",
    "him",
    // Prepositions and connectives that join a value to what it counts.
    "of",
    "in",
    "on",
    "at",
    "for",
    "to",
    "by",
    "with",
    "each",
    "every",
    "and",
    "all",
    "so",
    "thus",
    "hence",
    "therefore",
    "then",
    "which",
    "who",
    "what",
    // Naming the answer or a total.
    "answer",
    "answers",
    "final",
    "result",
    "value",
    "solution",
    "number",
    "total",
    "totals",
    "in",
    "altogether",
    "overall",
    "sum",
    "left",
    "remaining",
    "needed",
    "needs",
    "need",
    "spent",
    "earned",
    "costs",
    "cost",
    "chance",
    "probability",
    "paid",
    "pays",
    "exactly",
    "only",
    "just",
    "times",
    "plus",
    "minus",
    "divided",
    "multiplied",
    "squared",
    "cubed",
    "correct",
    "option",
    "choice",
];

/// Number words read as values by the checker (`seven`, `negative three`).
const NUMBER_WORDS: &[&str] = &["negative", "minus", "zero", "hundred", "and"];

/// A multiplier word and its factor (`3 thousand` is 3000, `2 dozen` is 24).
pub(crate) fn multiplier(word: &str) -> Option<u64> {
    Some(match word.to_ascii_lowercase().as_str() {
        "dozen" | "dozens" => 12,
        "hundred" | "hundreds" => 100,
        "thousand" | "thousands" => 1_000,
        "million" | "millions" => 1_000_000,
        "billion" | "billions" => 1_000_000_000,
        "trillion" | "trillions" => 1_000_000_000_000,
        _ => return None,
    })
}

/// The fraction words of a mixed quantity (`3 and a half`): the words after `and`, and the
/// value added as numerator and denominator.
pub(crate) const AND_FRACTIONS: &[(&[&str], u32, u32)] = &[
    (&["a", "half"], 1, 2),
    (&["one", "half"], 1, 2),
    (&["a", "quarter"], 1, 4),
    (&["one", "quarter"], 1, 4),
    (&["a", "third"], 1, 3),
    (&["one", "third"], 1, 3),
    (&["three", "quarters"], 3, 4),
    (&["two", "thirds"], 2, 3),
];

/// The words a region may contain: the allow-lists plus the words of the gold and the question.
#[derive(Debug, Clone)]
pub(crate) struct Lexicon<'a> {
    gold: &'a str,
    question: Option<&'a str>,
    /// Words of the question and of the gold, lower case, with singular forms of plurals; built
    /// on the first word the allow-lists do not hold (most answers have none).
    extra: std::cell::OnceCell<HashSet<String>>,
    /// Single-letter units are read as units (the gold has no variable).
    unit_letters: bool,
}

/// The lower-case word forms under which `w` is looked up: itself and its singular forms.
fn forms(w: &str) -> impl Iterator<Item = &str> {
    let s = w.strip_suffix('s');
    let es = w.strip_suffix("es");
    let poss = w.strip_suffix("'s");
    std::iter::once(w).chain(s).chain(es).chain(poss)
}

/// The words of a text, lower case (letters and inner apostrophes).
pub(crate) fn split_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphabetic() || c == '\'' || c == '’'))
        .map(|w| w.trim_matches(['\'', '’']).replace('’', "'").to_lowercase())
        .filter(|w| !w.is_empty())
}

impl<'a> Lexicon<'a> {
    /// The lexicon of one check: the allow-lists, the words of `gold` and of `question`.
    /// `unit_letters`: single-letter units are units (the gold has no variable).
    pub(crate) fn new(gold: &'a str, question: Option<&'a str>, unit_letters: bool) -> Self {
        Self { gold, question, extra: std::cell::OnceCell::new(), unit_letters }
    }

    fn extra(&self) -> &HashSet<String> {
        self.extra.get_or_init(|| {
            let mut extra = HashSet::new();
            // LaTeX command names in the question (`\frac`) are not words of it.
            for text in [Some(self.gold), self.question].into_iter().flatten() {
                for w in split_words(&strip_commands(text)) {
                    if w.chars().count() >= 2 {
                        for f in forms(&w) {
                            extra.insert(f.to_string());
                        }
                    }
                }
            }
            extra
        })
    }

    /// Whether `word` (any case) is read: a unit, neutral, a number or multiplier word, or a
    /// word of the gold or the question.
    pub(crate) fn reads(&self, word: &str) -> bool {
        let original = word;
        let w = word.replace('’', "'").to_lowercase();
        if w.is_empty() {
            return true;
        }
        if w.chars().count() == 1 {
            return w == "a" || w == "i" || (self.unit_letters && UNIT_LETTERS.contains(&original));
        }
        let listed = forms(&w).any(|f| {
            UNITS.contains(&f)
                || NEUTRAL.contains(&f)
                || NUMBER_WORDS.contains(&f)
                || multiplier(f).is_some()
                || is_number_word(f)
        });
        listed || forms(&w).any(|f| self.extra().contains(f))
    }

    /// Whether `words[k]` is read, in the sequence of words it stands in: [`Lexicon::reads`],
    /// or, where no question was given to name what is counted, the noun of a partitive
    /// (`3/4 of the pie`, `half of a circle`): the word after `of the`, `of a`, `of an`.
    pub(crate) fn reads_at(&self, words: &[&str], k: usize) -> bool {
        let Some(w) = words.get(k) else { return true };
        if self.reads(w) {
            return true;
        }
        let lower = |j: usize| words.get(j).map(|w| w.to_lowercase());
        self.question.is_none()
            && k >= 2
            && lower(k - 2).as_deref() == Some("of")
            && matches!(lower(k - 1).as_deref(), Some("the" | "a" | "an"))
    }
}

/// `seven`, `forty`, `forty-two` (each part), `half`, `quarter`: a number word.
fn is_number_word(w: &str) -> bool {
    use mentor_core::number_words::{TENS, UNITS as NUM_UNITS};
    w.split('-').all(|p| NUM_UNITS.contains(&p) || TENS.contains(&p))
        || AND_FRACTIONS.iter().any(|(ws, _, _)| ws.contains(&w))
}

/// `text` with LaTeX command names (`\frac`, `\text`) removed.
fn strip_commands(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            while chars.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
                chars.next();
            }
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_lists_question_and_gold_words() {
        let lx = Lexicon::new("18", Some("Mia has 12 pencils. How many pencils does she have?"), true);
        for w in ["dollars", "cm", "The", "answer", "pencils", "pencil", "Mia", "thousand", "seven", "m"] {
            assert!(lx.reads(w), "{w}");
        }
        for w in ["probably", "nope", "nicht", "maybe", "perhaps", "think", "max", "within", "above", "x"] {
            assert!(!lx.reads(w), "{w}");
        }
        let no_units = Lexicon::new("x + 1", None, false);
        assert!(!no_units.reads("m") && !no_units.reads("pencils"));
        // Command names of a LaTeX question are not its words.
        assert!(!Lexicon::new("1", Some(r"Find $\sqrt{2}$"), true).reads("sqrt"));
        assert_eq!(multiplier("Thousand"), Some(1000));
    }
}
