//! The crate's interval statistics, for every measurement (`rescue`, `probe`, the report's
//! paired comparison): Wilson intervals for rates, and paired bootstrap intervals (problems
//! resampled with replacement, the same resamples for every arm) for differences between arms
//! measured on the same problems. Where items come in clusters (several items of one problem or
//! one template), `clustered_resamples` resamples whole clusters instead, for the same
//! `paired_difference`, and `paired_difference_p` the p-value that goes with its interval. For paired pass/fail outcomes, `mcnemar_exact` gives the exact two-sided
//! McNemar p-value, and `holm` adjusts a family of p-values for multiple comparisons
//! (Holm–Bonferroni).

use std::collections::HashMap;

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

/// `count` cluster bootstrap resamples of the items whose cluster ids are `clusters` (`clusters[i]`
/// is item `i`'s cluster, e.g. its problem or template): each resample draws as many clusters as
/// there are distinct ids, uniformly with replacement, from a generator seeded with `seed`, and
/// lists the indices of every item of each drawn cluster (a cluster drawn twice contributes its
/// items twice). Clusters are numbered in order of first appearance. The resamples plug into
/// `paired_difference`. Without items, `count` empty resamples.
pub fn clustered_resamples<K: Eq + std::hash::Hash>(
    clusters: &[K],
    count: usize,
    seed: u64,
) -> Vec<Vec<usize>> {
    let mut index: HashMap<&K, usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, id) in clusters.iter().enumerate() {
        let c = *index.entry(id).or_insert_with(|| {
            members.push(Vec::new());
            members.len() - 1
        });
        members[c].push(i);
    }
    let k = members.len();
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let mut r = Vec::with_capacity(clusters.len());
            for _ in 0..k {
                r.extend_from_slice(&members[rng.random_range(0..k)]);
            }
            r
        })
        .collect()
}

/// The exact two-sided McNemar p-value of paired outcomes `a` and `b` (a sign test on the
/// discordant pairs): with `n10` pairs where only `a` holds and `n01` where only `b` holds,
/// `min(1, 2·P[X ≤ min(n10, n01)])` for `X ~ Binomial(n10 + n01, 1/2)`, and 1 without discordant
/// pairs. The tail is summed in log space, so it stays exact and finite for thousands of pairs.
/// `None` when the lengths differ or there are no pairs.
pub fn mcnemar_exact(a: &[bool], b: &[bool]) -> Option<f64> {
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    let n10 = a.iter().zip(b).filter(|&(&x, &y)| x && !y).count();
    let n01 = a.iter().zip(b).filter(|&(&x, &y)| !x && y).count();
    let n = n10 + n01;
    if n == 0 {
        return Some(1.0);
    }
    let s = n10.min(n01);
    // ln C(n, k) for k = 0..=s, by ln C(n, k + 1) = ln C(n, k) + ln(n - k) - ln(k + 1).
    let mut ln_choose = Vec::with_capacity(s + 1);
    let mut l = 0.0f64;
    ln_choose.push(l);
    for k in 0..s {
        l += ((n - k) as f64).ln() - ((k + 1) as f64).ln();
        ln_choose.push(l);
    }
    // Log-sum-exp; as s ≤ n / 2, the largest term is the last.
    let top = ln_choose[s];
    let ln_tail = top + ln_choose.iter().map(|t| (t - top).exp()).sum::<f64>().ln();
    let p = 2.0 * (ln_tail - n as f64 * std::f64::consts::LN_2).exp();
    Some(p.min(1.0))
}

/// Holm–Bonferroni adjusted p-values of the family `p`, in the input order: with the `m` values
/// sorted ascending, the `i`-th (0-based) becomes the running maximum over `j ≤ i` of
/// `min(1, (m - j)·p_(j))`. A NaN counts as 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let clean: Vec<f64> = p.iter().map(|&x| if x.is_nan() { 1.0 } else { x }).collect();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| clean[i].total_cmp(&clean[j]));
    let mut adjusted = vec![1.0; m];
    let mut running = f64::NEG_INFINITY;
    for (j, &i) in order.iter().enumerate() {
        running = running.max(((m - j) as f64 * clean[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
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
    let (d, mut boot) = bootstrap_means(a, b, resamples)?;
    if boot.is_empty() {
        return Some([d, d, d]);
    }
    let lo = quantile(&mut boot, 0.025);
    let hi = quantile(&mut boot, 0.975);
    Some([d, lo, hi])
}

/// The two-sided percentile-bootstrap p-value of the mean of `a[i] - b[i]` over the same
/// `resamples` as [`paired_difference`]: with `B` resamples, of which `below` have a mean at or
/// under 0 and `above` at or over 0, `min(1, 2·(1 + min(below, above)) / (1 + B))`. It falls
/// under 0.05 about when the 95% interval leaves out 0, so it can be adjusted over a family
/// ([`holm`]) without a second test. `None` without items or resamples.
pub fn paired_difference_p(a: &[f64], b: &[f64], resamples: &[Vec<usize>]) -> Option<f64> {
    let (_, boot) = bootstrap_means(a, b, resamples)?;
    if boot.is_empty() {
        return None;
    }
    let below = boot.iter().filter(|m| **m <= 0.0).count();
    let above = boot.iter().filter(|m| **m >= 0.0).count();
    Some((2.0 * (1 + below.min(above)) as f64 / (1 + boot.len()) as f64).min(1.0))
}

/// The mean paired difference and its mean in each resample (`None` without items).
fn bootstrap_means(a: &[f64], b: &[f64], resamples: &[Vec<usize>]) -> Option<(f64, Vec<f64>)> {
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
    Some((d, resamples.iter().map(|r| mean(&mut r.iter().copied())).collect()))
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
    fn bootstrap_p_values_count_the_resamples_on_each_side_of_zero() {
        // Hand-made resamples of differences [1, 0]: means 1, 0.5, 0. At or under 0: 1; at or
        // over 0: 3. p = 2 · (1 + 1) / (1 + 3) = 1.
        let r = vec![vec![0, 0], vec![0, 1], vec![1, 1]];
        assert_eq!(paired_difference_p(&[1.0, 0.0], &[0.0, 0.0], &r), Some(1.0));
        // Differences [1, 1, -1] and resamples with means 1, 1, 1/3, -1/3: under 0: 1 of 4,
        // over: 3. p = 2 · 2 / 5 = 0.8.
        let r = vec![vec![0, 1, 0], vec![1, 1, 0], vec![0, 1, 2], vec![2, 2, 0]];
        let p = paired_difference_p(&[1.0, 1.0, 0.0], &[0.0, 0.0, 1.0], &r).unwrap();
        assert!(close(p, 0.8), "{p}");
        // The same difference everywhere: no resample at or under 0, so p is the floor
        // 2 / (1 + B), and the 95% interval leaves out 0.
        let r = resamples(4, 999, 3);
        let p = paired_difference_p(&[1.0; 4], &[0.0; 4], &r).unwrap();
        assert!(close(p, 2.0 / 1000.0), "{p}");
        // No difference at all: every resample's mean is 0, on both sides: p = 1.
        let r0 = vec![vec![0, 1], vec![1, 1]];
        assert_eq!(paired_difference_p(&[1.0, 0.0], &[1.0, 0.0], &r0), Some(1.0));
        assert_eq!(paired_difference_p(&[1.0], &[0.0], &[]), None);
        assert_eq!(paired_difference_p(&[], &[], &r), None);
    }

    #[test]
    fn resamples_are_seeded_and_in_range() {
        assert_eq!(resamples(5, 3, 9), resamples(5, 3, 9));
        assert_ne!(resamples(5, 3, 9), resamples(5, 3, 10));
        assert!(resamples(5, 50, 1).iter().all(|r| r.len() == 5 && r.iter().all(|&i| i < 5)));
    }

    #[test]
    fn clustered_resamples_keep_clusters_together() {
        // Items 0 and 1 form cluster 7, item 2 cluster 9: two draws give 7+7 (4 items),
        // 7+9 (3) or 9+9 (2), and items 0 and 1 always appear equally often.
        let ids = [7, 7, 9];
        let r = clustered_resamples(&ids, 500, 3);
        assert_eq!(r.len(), 500);
        for s in &r {
            let count = |i: usize| s.iter().filter(|&&j| j == i).count();
            assert!([2, 3, 4].contains(&s.len()), "{s:?}");
            assert!(s.iter().all(|&i| i < 3), "{s:?}");
            assert_eq!(count(0), count(1), "{s:?}");
            assert_eq!(2 * count(0) + count(2), s.len(), "{s:?}");
            assert_eq!(count(0) + count(2), 2, "{s:?}");
        }
        // All three draws occur (each with probability at least 1/4).
        for len in [2, 3, 4] {
            assert!(r.iter().any(|s| s.len() == len), "no resample of {len} items");
        }
        assert_eq!(clustered_resamples(&ids, 20, 3), clustered_resamples(&ids, 20, 3));
        assert_ne!(clustered_resamples(&ids, 20, 3), clustered_resamples(&ids, 20, 4));
        assert_eq!(clustered_resamples::<u64>(&[], 3, 1), vec![Vec::<usize>::new(); 3]);
        assert!(clustered_resamples(&ids, 0, 1).is_empty());
        // One cluster: every resample is all its items, in order.
        assert!(clustered_resamples(&[5, 5, 5], 10, 2).iter().all(|s| s == &[0, 1, 2]));
        // Ids need not be sorted or contiguous: cluster 4 is items 0 and 2.
        for s in clustered_resamples(&[4, 8, 4], 100, 5) {
            let count = |i: usize| s.iter().filter(|&&j| j == i).count();
            assert_eq!(count(0), count(2), "{s:?}");
        }
    }

    #[test]
    fn clustered_paired_differences() {
        // Differences 1, 0 (cluster 7: sum 1 over 2 items) and 4 (cluster 9: sum 4 over 1 item).
        let ids = [7, 7, 9];
        let a = [1.0, 0.0, 4.0];
        let b = [0.0, 0.0, 0.0];
        let r = clustered_resamples(&ids, 2000, 11);
        // The first resample's mean, from the clusters it drew: c7 draws of cluster 7 (seen as
        // copies of item 0) and c9 of cluster 9 give (1·c7 + 4·c9) / (2·c7 + c9).
        let first = &r[0];
        let c7 = first.iter().filter(|&&i| i == 0).count() as f64;
        let c9 = first.iter().filter(|&&i| i == 2).count() as f64;
        let hand = (c7 + 4.0 * c9) / (2.0 * c7 + c9);
        // Over that one resample both quantiles are its mean; the point estimate is the mean
        // over the items, (1 + 0 + 4)/3 = 5/3.
        let [d, lo, hi] = paired_difference(&a, &b, &r[..1]).unwrap();
        assert!(close(d, 5.0 / 3.0), "{d}");
        assert!(close(lo, hand) && close(hi, hand), "{lo} {hi} {hand}");
        // Over many resamples the means are 7+7 → 2/4 = 0.5 (probability 1/4), 7+9 → 5/3
        // (1/2) and 9+9 → 8/2 = 4 (1/4), so the 95% interval is [0.5, 4] around 5/3.
        let [d, lo, hi] = paired_difference(&a, &b, &r).unwrap();
        assert!(close(d, 5.0 / 3.0) && lo == 0.5 && hi == 4.0, "{d} {lo} {hi}");
    }

    /// Paired outcomes with `n10` (a only), `n01` (b only), `n11` (both) and `n00` (neither).
    fn pairs(n10: usize, n01: usize, n11: usize, n00: usize) -> (Vec<bool>, Vec<bool>) {
        let mut a = Vec::new();
        let mut b = Vec::new();
        for (x, y, n) in [(true, false, n10), (false, true, n01), (true, true, n11), (false, false, n00)] {
            a.extend(std::iter::repeat_n(x, n));
            b.extend(std::iter::repeat_n(y, n));
        }
        (a, b)
    }

    fn rel_close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs()
    }

    #[test]
    fn mcnemar_matches_hand_computed_p_values() {
        // n10 = 0, n01 = 5: 2·P[X ≤ 0] = 2·(1/32) = 0.0625.
        let (a, b) = pairs(0, 5, 3, 2);
        let p = mcnemar_exact(&a, &b).unwrap();
        assert!(rel_close(p, 0.0625), "{p}");
        // n10 = 1, n01 = 9: 2·(C(10,0) + C(10,1))/2^10 = 2·11/1024 = 0.021484375.
        let (a, b) = pairs(1, 9, 0, 4);
        let p = mcnemar_exact(&a, &b).unwrap();
        assert!(rel_close(p, 0.021484375), "{p}");
        // n10 = n01 = 3: 2·(1 + 6 + 15 + 20)/64 = 84/64 > 1, so 1.
        let (a, b) = pairs(3, 3, 1, 1);
        assert_eq!(mcnemar_exact(&a, &b), Some(1.0));
        // No discordant pairs.
        let (a, b) = pairs(0, 0, 4, 6);
        assert_eq!(mcnemar_exact(&a, &b), Some(1.0));
        // n10 = 0, n01 = 60: 2·2^-60 = 2^-59, finite and positive.
        let (a, b) = pairs(0, 60, 0, 0);
        let p = mcnemar_exact(&a, &b).unwrap();
        assert!(p > 0.0 && p.is_finite() && rel_close(p, 2f64.powi(-59)), "{p}");
        assert_eq!(mcnemar_exact(&[], &[]), None);
        assert_eq!(mcnemar_exact(&[true], &[true, false]), None);
    }

    #[test]
    fn mcnemar_is_symmetric_and_stable() {
        for (n10, n01) in [(0, 5), (1, 9), (4, 17), (30, 12), (7, 7)] {
            let (a, b) = pairs(n10, n01, 2, 3);
            assert_eq!(mcnemar_exact(&a, &b), mcnemar_exact(&b, &a), "{n10} {n01}");
        }
        // Against the tail summed from exact integer binomials (Pascal's triangle in u128)
        // for every split of n = 100 discordant pairs.
        let n = 100;
        let mut row = vec![1u128];
        for _ in 0..n {
            let mut next = vec![1u128; row.len() + 1];
            for k in 1..row.len() {
                next[k] = row[k - 1] + row[k];
            }
            row = next;
        }
        for n10 in 0..=n {
            let s = n10.min(n - n10);
            let tail: u128 = row[..=s].iter().sum();
            let exact = (2.0 * tail as f64 / 2f64.powi(n as i32)).min(1.0);
            let (a, b) = pairs(n10, n - n10, 0, 0);
            let p = mcnemar_exact(&a, &b).unwrap();
            assert!((p - exact).abs() <= 1e-12 * exact, "{n10}: {p} {exact}");
        }
        // Thousands of pairs: equal counts give 1, a small imbalance a p-value inside (0, 1),
        // and a large one a tiny but positive p.
        let (a, b) = pairs(2000, 2000, 10, 10);
        assert_eq!(mcnemar_exact(&a, &b), Some(1.0));
        let (a, b) = pairs(2000, 2050, 0, 0);
        let p = mcnemar_exact(&a, &b).unwrap();
        assert!(p > 0.0 && p < 1.0, "{p}");
        let (a, b) = pairs(1500, 2500, 0, 0);
        let p = mcnemar_exact(&a, &b).unwrap();
        assert!(p > 0.0 && p < 1e-20, "{p}");
    }

    #[test]
    fn holm_matches_hand_computed_adjustments() {
        // Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; running
        // maximum 0.02, 0.03, 0.06, 0.06; in input order [0.03, 0.06, 0.06, 0.02].
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        assert!(adj.iter().zip(want).all(|(x, y)| (x - y).abs() < 1e-12), "{adj:?}");
        // Sorted 0.3, 0.4, 0.6 times 3, 2, 1 = 0.9, 0.8, 0.6; running maximum 0.9 throughout.
        let adj = holm(&[0.6, 0.3, 0.4]);
        assert!(adj.iter().zip([0.9, 0.9, 0.9]).all(|(x, y)| (x - y).abs() < 1e-12), "{adj:?}");
        // Clamped at 1: 0.5·2 = 1, then max(1, 0.9·1) = 1; sorted 0.6, 0.7: 0.6·2 = 1.2 → 1,
        // then max(1, 0.7·1) = 1.
        assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
        assert_eq!(holm(&[0.7, 0.6]), vec![1.0, 1.0]);
        assert_eq!(holm(&[0.037]), vec![0.037]);
        assert!(holm(&[]).is_empty());
        // NaN counts as 1: sorted 0.01, 1 → 0.02, 1.
        assert_eq!(holm(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
    }
}
