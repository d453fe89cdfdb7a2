//! Checker settings: tolerances, equivalence switches and resource bounds.

/// How answers are extracted and compared, and the resource bounds of one check.
///
/// `Config::default()` is what the verifier uses unless told otherwise. All bounds are per
/// check; a check that would exceed one returns `MathOutcome::TooComplex` instead of running.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Relative tolerance used when either side is irrational (contains `\pi`, a root that is
    /// not exact, a logarithm...). Rational values are always compared exactly. Default `1e-9`.
    pub rel_tolerance: f64,
    /// Whether `25\%` also equals `0.25`. Default `true`. (`25\%` equals `25` only where the
    /// question or the gold is about a percentage, or for [`crate::equivalent`].)
    pub percent_as_fraction: bool,
    /// Whether the last number in the text is taken as the answer when no boxed answer,
    /// `####` line, answer phrase or math span is found. Default `true`.
    pub last_number_fallback: bool,
    /// Completions longer than this many bytes are refused (`TooComplex`). Default 4 MiB.
    pub max_completion_bytes: usize,
    /// Extracted answers (and gold answers) longer than this many bytes are refused. Default 4096.
    pub max_answer_bytes: usize,
    /// Maximum nesting depth of one answer: brackets, braces, commands (`\frac`, `\sqrt`,
    /// functions), prefix signs, `^` towers and chains of postfix operators (`3!!`, `5\%`) all
    /// count. Default 48; values above 64 are treated as 64, which bounds the stack a check
    /// uses (a deepest answer is judged within 256 KiB).
    pub max_depth: usize,
    /// Largest exact integer or rational (numerator plus denominator bits) kept exactly;
    /// larger intermediate values fall back to floating point or are refused. Default 16384.
    pub max_bits: u64,
    /// Number of random points at which expressions with variables are compared. Default 12:
    /// rationals of both signs and varied size, drawn per variable so their order varies,
    /// which catches sign and absolute-value errors (`|x|` against `x`); points outside the
    /// real domain of either side are skipped while enough are left.
    pub sample_points: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            rel_tolerance: 1e-9,
            percent_as_fraction: true,
            last_number_fallback: true,
            max_completion_bytes: 4 << 20,
            max_answer_bytes: 4096,
            max_depth: 48,
            max_bits: 16384,
            sample_points: 12,
        }
    }
}
