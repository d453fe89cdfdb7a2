//! How the report's tables show a number: 3 decimals, or a placeholder when it is missing.
//! Below the tables that use it (`markdown.rs`, `paired.rs`).

/// Placeholder for a missing number.
pub const MISSING: &str = "–";

/// Formats an optional number with 3 decimals, or [`MISSING`].
pub fn num(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.3}"),
        _ => MISSING.to_string(),
    }
}

/// Formats an optional number with 3 decimals, or in scientific notation with 3 significant
/// digits when that would show it as 0.000 (a KL of 3e-4), or [`MISSING`].
pub fn small_num(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() && v != 0.0 && v.abs() < 0.0005 => format!("{v:.2e}"),
        other => num(other),
    }
}
