//! When digits split by a separator are one number: the thousands-group rule.
//!
//! `1 000 000`, `1,000`, `1\,000`, `1{,}000`, `1~000`, `1\ 000` (and a unicode thin or
//! no-break space, which [`crate::lexer::normalise_unicode`] turns into a space) are one
//! number: the first group has one to three digits and every later group exactly three. A
//! decimal part may follow the last group (`12 345.5`). Anything else written with such a
//! separator between digits (`2 3`, `5\,1`, `1\,000\,1`, `1234 567`) is not a number, and it
//! is not a product either: the parser refuses two numbers side by side
//! ([`crate::parser`]'s `SideBySide` error), so a policy cannot be paid for `2 3` when the
//! gold is 6, or for `1 000 1` when it is 1000.
//!
//! A comma that does not start a thousands group is a list separator (`3,5` is two answers),
//! which is judged as a list, not here.

/// The separators that may join thousands groups, longest first so `{,}` wins over `,`.
const SEPARATORS: &[&[u8]] = &[b"{,}", b"\\,", b"\\!", b"\\ ", b"\\;", b"\\:", b",", b" ", b"~"];

/// The byte length of a thousands separator at the start of `rest`, if one is there.
pub(crate) fn separator_len(rest: &[u8]) -> Option<usize> {
    SEPARATORS.iter().find(|sep| rest.starts_with(sep)).map(|sep| sep.len())
}

/// Whether `rest` starts with a thousands group: exactly three digits, not followed by a
/// fourth (a decimal part after them is fine).
pub(crate) fn group_at(rest: &[u8]) -> bool {
    rest.len() >= 3
        && rest[..3].iter().all(u8::is_ascii_digit)
        && !rest.get(3).is_some_and(u8::is_ascii_digit)
}

/// Why two numbers side by side are refused, for the feedback.
pub(crate) fn side_by_side_reason(left: &str, right: &str) -> String {
    format!(
        "malformed number: `{left}` and `{right}` are written side by side; digit groups split by a \
         space or thin space are one number only as thousands groups (a first group of 1-3 digits, \
         then groups of exactly 3, e.g. `1 000 000`), and numbers side by side are not a product"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_and_groups() {
        for (s, n) in [("{,}000", 3), ("\\,000", 2), ("\\ 000", 2), (",000", 1), (" 000", 1), ("~000", 1)] {
            assert_eq!(separator_len(s.as_bytes()), Some(n), "{s}");
        }
        assert_eq!(separator_len(b"000"), None);
        assert_eq!(separator_len(b"\\quad 000"), None);
        assert!(group_at(b"000"));
        assert!(group_at(b"000.5"));
        assert!(group_at(b"123 456"));
        assert!(!group_at(b"0000"));
        assert!(!group_at(b"12"));
        assert!(!group_at(b"1"));
        assert!(!group_at(b"12a"));
    }

    #[test]
    fn the_reason_names_both_numbers() {
        let r = side_by_side_reason("2", "3");
        assert!(r.contains("`2` and `3`") && r.contains("thousands"), "{r}");
    }
}
