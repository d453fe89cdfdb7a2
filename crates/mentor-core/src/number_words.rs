//! The English words numbers are spelled with, shared by the math checker (which reads
//! spelled answers) and the hint guard (which must not show one).

/// `zero` … `nineteen`: the word at index `i` is the number `i`.
pub const UNITS: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];

/// `twenty` … `ninety`: the word at index `i` is the number `10 * (i + 2)`.
pub const TENS: [&str; 8] = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_values() {
        assert_eq!((UNITS[0], UNITS[7], UNITS[19]), ("zero", "seven", "nineteen"));
        assert_eq!((TENS[0], TENS[7]), ("twenty", "ninety"));
    }
}
