//! The crate's interval statistics, for every measurement (`rescue`, `probe`, the report's
//! paired comparison): Wilson intervals for rates, and paired bootstrap intervals (problems
//! resampled with replacement, the same resamples for every arm) for differences between arms
//! measured on the same problems.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score 95% interval of `k` successes in `n` trials (`None` for `n = 0`).
pub fn wilson(k: usize, n: usize) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    // At 0 and n the bound is exactly 0 (or 1); rounding would leave it a hair inside.
    let lo = if k == 0.0 { 0.0 } else { (center - half).max(0.0) };
    let hi = if k == n { 1.0 } else { (center + half).min(1.0) };
    Some((lo, hi))
}

/// `count` bootstrap resamples of `n` items: each a list of `n` indices drawn uniformly with
/// replacement, from a generator seeded with `seed`.
pub fn resamples(n: usize, count: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count).map(|_| (0..n).map(|_| rng.random_range(0..n.max(1))).collect()).collect()
}

/// The `q` quantile of `values` (sorted in place), interpolating linearly between ranks.
pub fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        1 => values[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            values[lo] + (values[hi] - values[lo]) * (pos - lo as f64)
        }
    }
}

/// The mean of `a[i] - b[i]` over the items, with the 2.5% and 97.5% quantiles of that mean
/// over `resamples` (each a list of item indices): `[d, lo, hi]`. `None` without items.
pub fn paired_difference(a: &[f64], b: &[f64], resamples: &[Vec<usize>]) -> Option<[f64; 3]> {
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    let diff: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let mean = |idx: &mut dyn Iterator<Item = usize>| {
        let (mut s, mut n) = (0.0, 0usize);
        for i in idx {
            s += diff[i];
            n += 1;
        }
        s / n.max(1) as f64
    };
    let d = mean(&mut (0..diff.len()));
    if resamples.is_empty() {
        return Some([d, d, d]);
    }
    let mut boot: Vec<f64> = resamples.iter().map(|r| mean(&mut r.iter().copied())).collect();
    let lo = quantile(&mut boot, 0.025);
    let hi = quantile(&mut boot, 0.975);
    Some([d, lo, hi])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-5
    }

    #[test]
    fn wilson_matches_hand_computed_intervals() {
        // 0 of 10: (0, z²/n / (1 + z²/n)) = (0, 0.27753).
        let (lo, hi) = wilson(0, 10).unwrap();
        assert!(lo == 0.0 && close(hi, 0.27753), "{lo} {hi}");
        // 5 of 10: 0.5 ± 1.96·sqrt(0.025 + 0.0096037)/1.38415 = (0.23659, 0.76341).
        let (lo, hi) = wilson(5, 10).unwrap();
        assert!(close(lo, 0.23659) && close(hi, 0.76341), "{lo} {hi}");
        // 10 of 10 mirrors 0 of 10.
        let (lo, hi) = wilson(10, 10).unwrap();
        assert!(close(lo, 1.0 - 0.27753) && hi == 1.0, "{lo} {hi}");
        // 3 of 100: centre 0.0492073/1.038415, half 1.96·sqrt(0.000291 + 0.000096)/1.038415.
        let (lo, hi) = wilson(3, 100).unwrap();
        assert!(close(lo, 0.010255) && close(hi, 0.084519), "{lo} {hi}");
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn quantiles_interpolate_between_ranks() {
        let mut v: Vec<f64> = (0..=100).rev().map(f64::from).collect();
        assert!(close(quantile(&mut v, 0.025), 2.5));
        assert!(close(quantile(&mut v, 0.975), 97.5));
        assert!(close(quantile(&mut [4.0, 1.0], 0.5), 2.5));
        assert_eq!(quantile(&mut [3.0], 0.9), 3.0);
        assert!(quantile(&mut [], 0.5).is_nan());
    }

    #[test]
    fn paired_differences_and_their_bootstrap_intervals() {
        // The same difference on every problem: the interval is that point.
        let a = [1.0, 1.0, 0.0, 1.0];
        let b = [0.0, 0.0, -1.0, 0.0];
        let r = resamples(4, 500, 1);
        assert_eq!(paired_difference(&a, &b, &r), Some([1.0, 1.0, 1.0]));
        // Two problems, differences 1 and 0: a resample's mean is 0, 0.5 or 1 with
        // probabilities 1/4, 1/2, 1/4, so the 95% interval is [0, 1] around 0.5.
        let r = resamples(2, 4000, 7);
        let [d, lo, hi] = paired_difference(&[1.0, 0.0], &[0.0, 0.0], &r).unwrap();
        assert_eq!((d, lo, hi), (0.5, 0.0, 1.0));
        // Hand-made resamples: means 1, 0.5, 0 → quantiles 0.025 and 0.975 of [0, 0.5, 1].
        let r = vec![vec![0, 0], vec![0, 1], vec![1, 1]];
        let [_, lo, hi] = paired_difference(&[1.0, 0.0], &[0.0, 0.0], &r).unwrap();
        assert!(close(lo, 0.025) && close(hi, 0.975), "{lo} {hi}");
        assert_eq!(paired_difference(&[], &[], &r), None);
        assert_eq!(paired_difference(&[1.0], &[1.0, 0.0], &r), None);
    }

    #[test]
    fn resamples_are_seeded_and_in_range() {
        assert_eq!(resamples(5, 3, 9), resamples(5, 3, 9));
        assert_ne!(resamples(5, 3, 9), resamples(5, 3, 10));
        assert!(resamples(5, 50, 1).iter().all(|r| r.len() == 5 && r.iter().all(|&i| i < 5)));
    }
}
