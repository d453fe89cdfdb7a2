//! How an answer number is written: the one formatter of the dataset loaders (answers given as
//! numbers) and the mentor's rules (results quoted in hints).

/// `x` as an answer is written: an integral value without a fraction (`27`, `-1`, exact up
/// to 1e15), anything else as Rust prints an `f64` (`0.5`; `1e20` as all its digits).
///
/// ```
/// use mentor_core::numbers::format_number;
/// assert_eq!(format_number(27.0), "27");
/// assert_eq!(format_number(0.5), "0.5");
/// ```
pub fn format_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::format_number;

    #[test]
    fn numbers_format_like_answers() {
        assert_eq!(format_number(27.0), "27");
        assert_eq!(format_number(-1.0), "-1");
        assert_eq!(format_number(-0.0), "0");
        assert_eq!(format_number(0.5), "0.5");
        assert_eq!(format_number(-2.25), "-2.25");
        assert_eq!(format_number(1e20), "100000000000000000000");
        assert_eq!(format_number(f64::NAN), "NaN");
    }
}
