//! Choosing the next token from a row of logits: greedy, temperature, top-k, top-p.
//!
//! Works on plain `f32` slices on the host (one row per call), with a caller-owned seeded RNG,
//! so the same seed and logits give the same choice.
//!
//! With temperature `t > 0` the token is drawn from the distribution actually sampled from:
//! the softmax of `logits / t`, restricted to the kept tokens and renormalised. The kept
//! tokens are chosen as in Hugging Face's and vLLM's samplers: first the `top_k` most likely
//! (ties broken by the lower id), then, of those, the nucleus — the most likely tokens whose
//! mass *under the top-k renormalised distribution* reaches `top_p` (always at least one).
//! The returned log-probability is the chosen token's under that same truncated,
//! renormalised distribution, `(x_i − max) / t − ln Σ_{j kept} exp((x_j − max) / t)`, so the
//! behaviour log-probs GRPO's importance ratios use are those of the sampler that produced
//! the tokens. It is never below the token's log-prob under the full tempered softmax, and is
//! equal to it when nothing is cut (`top_k = 0` or `top_k ≥` vocabulary, and `top_p = 1`:
//! then the token is drawn by one inverse-CDF pass in id order, without sorting).
//!
//! Greedy decoding (`temperature = 0`) takes the argmax (the lowest id among ties) and reports
//! its log-prob under the softmax at temperature 1 over the whole vocabulary; `top_k` and
//! `top_p` do not apply to it.

use rand::Rng;

use crate::error::{Error, Result};

/// Sampling knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampler {
    /// Softmax temperature; `0` means greedy (argmax).
    pub temperature: f64,
    /// Nucleus sampling: keep the most likely tokens whose mass reaches `top_p`; `1` = off.
    pub top_p: f64,
    /// Keep only the `top_k` most likely tokens; `0` = off.
    pub top_k: usize,
}

impl Default for Sampler {
    fn default() -> Self {
        Self { temperature: 1.0, top_p: 1.0, top_k: 0 }
    }
}

impl Sampler {
    /// Greedy decoding.
    pub fn greedy() -> Self {
        Self { temperature: 0.0, top_p: 1.0, top_k: 0 }
    }

    /// Checks the knobs: a finite `temperature >= 0` and `top_p` in `(0, 1]`. Every `top_k` is
    /// valid: `0` and any value at least the vocabulary size keep every token.
    pub fn validate(&self) -> Result<()> {
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            return Err(Error::InvalidRequest(format!("temperature {} must be >= 0", self.temperature)));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(Error::InvalidRequest(format!("top_p {} must be in (0, 1]", self.top_p)));
        }
        Ok(())
    }

    /// Picks a token from `logits`; returns `(token, log-prob)`, the log-prob under the
    /// distribution the token was drawn from: the softmax of `logits / temperature` over the
    /// tokens top-k and then top-p kept, renormalised (for greedy decoding, the argmax's
    /// log-prob under the softmax at temperature 1).
    pub fn sample(&self, logits: &[f32], rng: &mut impl Rng) -> Result<(u32, f32)> {
        self.prepare(logits)?.draw(logits, rng)
    }

    /// The part of [`Sampler::sample`] that does not touch the RNG: the checks, the tempered
    /// softmax over the whole row and the kept tokens. Rows can be prepared on several threads
    /// and then drawn in order from one RNG, with the same results as sampling them one by one.
    pub(crate) fn prepare(&self, logits: &[f32]) -> Result<Prepared> {
        if logits.is_empty() {
            return Err(Error::InvalidRequest("empty logits".into()));
        }
        let Some(max) = largest(logits) else {
            return Err(Error::InvalidRequest("NaN in logits".into()));
        };
        let greedy = self.temperature == 0.0;
        let t = if greedy { 1.0 } else { self.temperature };
        let tempered = Tempered::with_max(logits, max, t);
        if !tempered.max.is_finite() {
            return Err(Error::InvalidRequest(format!(
                "the largest logit must be finite, not {}",
                tempered.max
            )));
        }
        let pick = if greedy {
            let mut best = 0;
            for (i, x) in logits.iter().enumerate() {
                if *x > logits[best] {
                    best = i;
                }
            }
            Pick::Greedy(best)
        } else {
            let cut_k = self.top_k > 0 && self.top_k < tempered.e.len();
            if !cut_k && self.top_p >= 1.0 {
                Pick::Whole
            } else {
                let e = &tempered.e;
                let kept = kept_tokens(e, if cut_k { self.top_k } else { 0 }, self.top_p);
                // The kept mass, in the order it is sampled; never above the whole
                // vocabulary's (a subset's sum can round above it), so the log-prob is never
                // below the full one.
                let total = if kept.len() == e.len() {
                    tempered.sum
                } else {
                    kept.iter().map(|&i| e[i] as f64).sum::<f64>().min(tempered.sum)
                };
                Pick::Kept { kept, total }
            }
        };
        Ok(Prepared { t, tempered, pick })
    }
}

/// A row made ready by [`Sampler::prepare`] for [`Prepared::draw`].
pub(crate) struct Prepared {
    /// The temperature the row was tempered at (1 for greedy decoding).
    t: f64,
    tempered: Tempered,
    pick: Pick,
}

impl Prepared {
    /// The rest of [`Sampler::sample`] for the `logits` this row was prepared from: one
    /// uniform draw from `rng` (none for greedy decoding) and the inverse CDF.
    pub(crate) fn draw(&self, logits: &[f32], rng: &mut impl Rng) -> Result<(u32, f32)> {
        let Prepared { t, tempered: Tempered { max, e, sum }, pick } = self;
        if logits.len() != e.len() {
            return Err(Error::InvalidRequest("logits differ from the prepared row".into()));
        }
        // `log p_i = (x_i - max) / t - ln(mass)` for the mass the choice was made from. Every
        // mass used holds the largest logit's `e = 1`, so `ln(mass) >= 0` and `log p_i <= 0`.
        let logp = |i: usize, mass: f64| ((logits[i] as f64 - max) / t - mass.ln()) as f32;
        match pick {
            Pick::Greedy(best) => Ok((*best as u32, logp(*best, *sum))),
            Pick::Whole => {
                // Nothing is cut: inverse CDF over the whole vocabulary, in id order.
                let mut u = rng.random::<f64>() * sum;
                let mut chosen = e.len() - 1;
                for (i, &w) in e.iter().enumerate() {
                    u -= w as f64;
                    if u < 0.0 {
                        chosen = i;
                        break;
                    }
                }
                Ok((chosen as u32, logp(chosen, *sum)))
            }
            Pick::Kept { kept, total } => {
                let mut u = rng.random::<f64>() * total;
                let mut chosen = kept[kept.len() - 1];
                for &i in kept {
                    u -= e[i] as f64;
                    if u < 0.0 {
                        chosen = i;
                        break;
                    }
                }
                Ok((chosen as u32, logp(chosen, *total)))
            }
        }
    }
}

/// How [`Prepared::draw`] chooses.
enum Pick {
    /// The argmax, already found.
    Greedy(usize),
    /// Inverse CDF over the whole vocabulary.
    Whole,
    /// Inverse CDF over the kept ids, whose mass is `total`.
    Kept { kept: Vec<usize>, total: f64 },
}

/// The tempered, unnormalised probabilities of a row: `e[i] = exp((x_i - max) / t)` (one
/// pass of `exp`), with `max` the largest logit and `sum` the total of `e`, so that
/// `p_i = e[i] / sum` and `log p_i = (x_i - max) / t - ln(sum)`.
///
/// The exponent is taken in `f64` and rounded to `f32`, the exponential is this crate's
/// ([`mentor_kernels::vexp::exp_in_place`], within 2 ulp in `f32`, libm-free, 8 lanes at a time where
/// the CPU has AVX2), and the sum is [`lane_sum`]'s in `f64`: the same bits on every kernel
/// path and C library. (Before, 49,152 scalar libm `exp`s in `f64` a row were 5-6% of a
/// batch-32 decode of SmolLM2-135M.) Exponents below about -87.3 give 0: such a token's
/// probability is below 1e-38 of the largest's.
struct Tempered {
    max: f64,
    e: Vec<f32>,
    sum: f64,
}

impl Tempered {
    /// The row of `logits` at temperature `t`, `max` their largest ([`largest`]).
    fn with_max(logits: &[f32], max: f32, t: f64) -> Self {
        let max = max as f64;
        // Dividing by 1 is exact: at temperature 1 the division is left out, same bits.
        let mut e: Vec<f32> = if t == 1.0 {
            logits.iter().map(|&x| (x as f64 - max) as f32).collect()
        } else {
            logits.iter().map(|&x| ((x as f64 - max) / t) as f32).collect()
        };
        mentor_kernels::vexp::exp_in_place(&mut e);
        let sum = lane_sum(&e);
        Self { max, e, sum }
    }

    #[cfg(test)]
    fn new(logits: &[f32], t: f64) -> Self {
        Self::with_max(logits, largest(logits).unwrap_or(f32::NAN), t)
    }
}

/// The largest of `logits`, as `logits.iter().copied().fold(f32::NEG_INFINITY, f32::max)`
/// gives it, or `None` when one is NaN. One pass over 8 independent lanes, which the compiler
/// vectorises, where the fold is one chain of dependent `max`es and the NaN check was a
/// second pass: together about half of `prepare`'s time on a 49,152-token vocabulary. The
/// largest value does not depend on the order it is found in; only the sign of a zero could,
/// so a largest of zero is taken by the fold itself.
fn largest(logits: &[f32]) -> Option<f32> {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let mut nan = false;
    // Element `i` into lane `i % 8`: whole chunks of 8 (which vectorise), then the tail.
    let mut take = |chunk: &[f32]| {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            nan |= v.is_nan();
            *lane = if v > *lane { v } else { *lane };
        }
    };
    let chunks = logits.chunks_exact(8);
    let tail = chunks.remainder();
    chunks.for_each(&mut take);
    take(tail);
    if nan {
        return None;
    }
    let m = lanes.iter().fold(f32::NEG_INFINITY, |a, &b| if b > a { b } else { a });
    Some(if m == 0.0 { logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) } else { m })
}

/// The `f64` total of `e`, in a fixed order whatever the CPU: element `i` goes to lane
/// `i % 8` (left to right), then the lanes are added as [`mentor_kernels::lanes::hsum_portable`] adds them.
/// Eight independent sums where one chain of 49,152 additions stood before.
fn lane_sum(e: &[f32]) -> f64 {
    let mut lanes = [0f64; 8];
    let chunks = e.chunks_exact(8);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane += v as f64;
        }
    }
    for (lane, &v) in lanes.iter_mut().zip(tail) {
        *lane += v as f64;
    }
    mentor_kernels::lanes::hsum_portable(&lanes)
}

/// The ids kept by `top_k` (`0` = all) then the `top_p` nucleus of the top-k renormalised
/// distribution, most likely first (ties: lower id first); never empty for non-empty `e`.
fn kept_tokens(e: &[f32], top_k: usize, top_p: f64) -> Vec<usize> {
    let by_mass = |a: &usize, b: &usize| e[*b].total_cmp(&e[*a]).then(a.cmp(b));
    let mut idx: Vec<usize> = (0..e.len()).collect();
    if top_k > 0 && top_k < idx.len() {
        // The order is total, so selecting the k first then sorting them equals a full sort
        // truncated to k, without sorting the whole vocabulary.
        idx.select_nth_unstable_by(top_k - 1, by_mass);
        idx.truncate(top_k);
    }
    idx.sort_unstable_by(by_mass);
    if top_p < 1.0 {
        let need = top_p * idx.iter().map(|&i| e[i] as f64).sum::<f64>();
        let mut mass = 0.0;
        let mut keep = 0;
        for &i in &idx {
            mass += e[i] as f64;
            keep += 1;
            if mass >= need {
                break;
            }
        }
        idx.truncate(keep.max(1));
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng(seed: u64) -> rand::rngs::StdRng {
        rand::rngs::StdRng::seed_from_u64(seed)
    }

    #[test]
    fn greedy_takes_argmax_with_its_logprob() {
        let (tok, lp) = Sampler::greedy().sample(&[0.0, 2.0, 1.0], &mut rng(0)).unwrap();
        assert_eq!(tok, 1);
        let z = (0f64.exp() + 2f64.exp() + 1f64.exp()).ln();
        assert!((lp as f64 - (2.0 - z)).abs() < 1e-6);
    }

    #[test]
    fn top_k_one_is_greedy_and_top_p_keeps_the_nucleus() {
        let logits = [1.0, 3.0, 2.9, -5.0];
        let s = Sampler { temperature: 1.0, top_p: 1.0, top_k: 1 };
        for seed in 0..20 {
            assert_eq!(s.sample(&logits, &mut rng(seed)).unwrap().0, 1);
        }
        // p = [0.064, 0.497, 0.45, 0.0003]: top_p 0.9 keeps ids 1 and 2 only.
        let s = Sampler { temperature: 1.0, top_p: 0.9, top_k: 0 };
        let mut seen = [0usize; 4];
        for seed in 0..400 {
            seen[s.sample(&logits, &mut rng(seed)).unwrap().0 as usize] += 1;
        }
        assert_eq!((seen[0], seen[3]), (0, 0));
        assert!(seen[1] > 100 && seen[2] > 100, "{seen:?}");
    }

    #[test]
    fn frequencies_follow_the_tempered_softmax() {
        // Temperature 2 on logits ln(1), ln(9): probabilities 1/4 and 3/4.
        let logits = [0.0, 9f32.ln()];
        let s = Sampler { temperature: 2.0, top_p: 1.0, top_k: 0 };
        let mut r = rng(7);
        let n = 4000;
        let ones = (0..n).filter(|_| s.sample(&logits, &mut r).unwrap().0 == 1).count();
        let f = ones as f64 / n as f64;
        assert!((f - 0.75).abs() < 0.03, "{f}");
        let (_, lp) = s.sample(&[0.0, 0.0], &mut r).unwrap();
        assert!((lp - 0.5f32.ln()).abs() < 1e-6);
    }

    #[test]
    fn same_seed_same_choices_and_bad_knobs_rejected() {
        let logits: Vec<f32> = (0..50).map(|i| (i as f32 * 0.37).sin()).collect();
        let s = Sampler::default();
        let a: Vec<u32> =
            (0..10).map(|_| 0).scan(rng(3), |r, _| Some(s.sample(&logits, r).unwrap().0)).collect();
        let b: Vec<u32> =
            (0..10).map(|_| 0).scan(rng(3), |r, _| Some(s.sample(&logits, r).unwrap().0)).collect();
        assert_eq!(a, b);
        assert!(Sampler { temperature: -1.0, ..Sampler::default() }.validate().is_err());
        assert!(Sampler { top_p: 0.0, ..Sampler::default() }.validate().is_err());
        assert!(Sampler::default().sample(&[f32::NAN], &mut rng(0)).is_err());
        assert!(Sampler::default().sample(&[0.0, f32::INFINITY], &mut rng(0)).is_err());
        assert!(Sampler::default().sample(&[f32::NEG_INFINITY; 2], &mut rng(0)).is_err());
        assert!(Sampler { top_k: usize::MAX, ..Sampler::default() }.validate().is_ok());
    }

    /// Logits whose softmax at temperature 2 is `[0.1, 0.4, 0.2, 0.3]` (`x_i = 2 ln w_i`).
    fn four() -> [f32; 4] {
        [1f32, 4.0, 2.0, 3.0].map(|w| 2.0 * w.ln())
    }

    /// Draws `n` times; returns each token's count and the log-prob it was reported with
    /// (checking that a token always comes with the same log-prob).
    fn draws(s: &Sampler, logits: &[f32], n: usize) -> Vec<(usize, Option<f32>)> {
        let mut r = rng(11);
        let mut out = vec![(0, None); logits.len()];
        for _ in 0..n {
            let (tok, lp) = s.sample(logits, &mut r).unwrap();
            let slot: &mut (usize, Option<f32>) = &mut out[tok as usize];
            slot.0 += 1;
            if let Some(prev) = slot.1 {
                assert_eq!(prev, lp, "token {tok}");
            }
            slot.1 = Some(lp);
        }
        out
    }

    /// The truncated, renormalised distributions, worked by hand from `p = [0.1, 0.4, 0.2,
    /// 0.3]` (ids by probability: 1, 3, 2, 0).
    #[test]
    fn logprobs_are_those_of_the_truncated_renormalised_distribution() {
        let ln = |x: f64| x.ln() as f32;
        let t2 = |top_k, top_p| Sampler { temperature: 2.0, top_p, top_k };
        let cases: [(Sampler, [Option<f32>; 4]); 5] = [
            // Nothing cut: the tempered softmax itself.
            (t2(0, 1.0), [Some(ln(0.1)), Some(ln(0.4)), Some(ln(0.2)), Some(ln(0.3))]),
            // top-k 2 keeps ids 1 and 3: 0.4 / 0.7 and 0.3 / 0.7.
            (t2(2, 1.0), [None, Some(ln(4.0 / 7.0)), None, Some(ln(3.0 / 7.0))]),
            // top-p 0.85: 0.4 + 0.3 = 0.7 < 0.85 <= 0.9 keeps ids 1, 3, 2, renormalised by 0.9.
            (t2(0, 0.85), [None, Some(ln(4.0 / 9.0)), Some(ln(2.0 / 9.0)), Some(ln(3.0 / 9.0))]),
            // top-k 3 renormalises to [4, 3, 2] / 9; its nucleus 0.75 needs 4/9 + 3/9 = 0.78, so
            // ids 1 and 3 remain, renormalised by 7/9. (A nucleus of the full distribution's
            // mass, 0.4 + 0.3 = 0.7 < 0.75, would have kept id 2 as well.)
            (t2(3, 0.75), [None, Some(ln(4.0 / 7.0)), None, Some(ln(3.0 / 7.0))]),
            // top-k 2 renormalises to [4, 3] / 7; 4/7 >= 0.5 already: id 1 alone, log-prob 0.
            (t2(2, 0.5), [None, Some(0.0), None, None]),
        ];
        let n = 4000;
        for (s, want) in cases {
            let got = draws(&s, &four(), n);
            let mut total = 0.0;
            for (id, ((count, lp), want)) in got.iter().zip(want).enumerate() {
                match (lp, want) {
                    (Some(lp), Some(w)) => {
                        assert!((lp - w).abs() < 1e-6, "{s:?} id {id}: {lp} vs {w}");
                        let p = (*lp as f64).exp();
                        total += p;
                        // Frequencies follow exp(log-prob): within 4.5 standard deviations.
                        let f = *count as f64 / n as f64;
                        let sd = (p * (1.0 - p) / n as f64).sqrt();
                        assert!((f - p).abs() <= 4.5 * sd + 1e-9, "{s:?} id {id}: frequency {f}, p {p}");
                    }
                    (None, None) => {}
                    _ => panic!("{s:?} id {id}: drawn {count} times, expected {want:?}"),
                }
            }
            assert!((total - 1.0).abs() < 1e-6, "{s:?}: exp(log-prob) over the kept set sums to {total}");
        }
    }

    #[test]
    fn top_k_at_least_the_vocabulary_is_off_bit_for_bit() {
        let logits: Vec<f32> = (0..50).map(|i| (i as f32 * 0.61).cos() * 3.0).collect();
        for k in [50, 51, usize::MAX] {
            let cut = Sampler { temperature: 0.7, top_p: 1.0, top_k: k };
            let off = Sampler { temperature: 0.7, top_p: 1.0, top_k: 0 };
            let (mut a, mut b) = (rng(5), rng(5));
            for _ in 0..50 {
                assert_eq!(cut.sample(&logits, &mut a).unwrap(), off.sample(&logits, &mut b).unwrap());
            }
        }
    }

    #[test]
    fn tempered_row_is_the_softmax_numerator_with_the_largest_exactly_one() {
        let logits: Vec<f32> = (0..1003).map(|i| (i as f32 * 0.37).sin() * 20.0 - (i % 7) as f32).collect();
        for t in [0.3, 1.0, 1.7] {
            let row = Tempered::new(&logits, t);
            let top = logits.iter().enumerate().fold(0, |b, (i, &x)| if x > logits[b] { i } else { b });
            assert_eq!(row.e[top], 1.0, "t = {t}: the largest logit's term");
            let mut exact_sum = 0f64;
            for (&x, &e) in logits.iter().zip(&row.e) {
                let z = (x as f64 - row.max) / t;
                let exact = z.exp();
                exact_sum += exact;
                // 2 ulp of f32 from the exponential, and the exponent's rounding to f32 (half
                // an ulp of `z`, which moves `exp(z)` by that much relatively); 0 below the
                // smallest normal f32.
                let bound = (4.0 + z.abs()) * f32::EPSILON as f64 * exact + 2.0 * f32::MIN_POSITIVE as f64;
                assert!(
                    (e as f64 - exact).abs() <= bound,
                    "t = {t}, x = {x}, z = {z}: {e} vs {exact}, bound {bound}"
                );
            }
            assert!((row.sum - exact_sum).abs() <= 1e-5 * exact_sum, "t = {t}: sum");
        }
    }

    /// [`largest`] gives the fold's bits (zeros of both signs included), and `None` for a
    /// NaN anywhere, in the lanes or the tail.
    #[test]
    fn largest_is_the_folds_max_and_finds_any_nan() {
        let fold = |v: &[f32]| v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for len in [0usize, 1, 7, 8, 9, 17, 49_152] {
            for zeros in [false, true] {
                let mut v: Vec<f32> = (0..len).map(|_| rng.random_range(-30.0f32..30.0)).collect();
                if zeros {
                    // Non-positive logits with zeros of both signs: the largest is a zero.
                    for (i, x) in v.iter_mut().enumerate() {
                        *x = if i % 5 == 0 {
                            if i % 2 == 0 {
                                0.0
                            } else {
                                -0.0
                            }
                        } else {
                            -x.abs()
                        };
                    }
                }
                let want = fold(&v);
                assert_eq!(largest(&v).map(f32::to_bits), Some(want.to_bits()), "len {len}");
                for at in [0, len / 2, len.saturating_sub(1)] {
                    if len > 0 {
                        let mut w = v.clone();
                        w[at] = f32::NAN;
                        assert_eq!(largest(&w), None, "NaN at {at} of {len}");
                    }
                }
            }
        }
        assert_eq!(largest(&[f32::NEG_INFINITY; 3]), Some(f32::NEG_INFINITY));
    }

    #[test]
    fn lane_sum_is_the_fixed_order_total() {
        let e: Vec<f32> = (0..1003).map(|i| 1.0 / (1 + i % 97) as f32).collect();
        let mut lanes = [0f64; 8];
        for (i, &v) in e.iter().enumerate() {
            lanes[i % 8] += v as f64;
        }
        let l = lanes;
        let want = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
        assert_eq!(lane_sum(&e).to_bits(), want.to_bits());
        assert_eq!(lane_sum(&[]), 0.0);
        assert_eq!(lane_sum(&[2.5, 1.0]), 3.5);
    }

    proptest::proptest! {
        /// For any logits and knobs the reported log-prob is finite, at most 0, and at least the
        /// token's log-prob under the full tempered softmax (truncation only removes mass).
        #[test]
        fn logprob_is_finite_nonpositive_and_at_least_the_full_one(
            logits in proptest::collection::vec(-30f32..30.0, 1..40),
            temperature in 0.05f64..5.0,
            top_k in 0usize..45,
            top_p in 0.001f64..=1.0,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let s = Sampler { temperature, top_p, top_k };
            let (tok, lp) = s.sample(&logits, &mut rng(seed)).unwrap();
            let Tempered { max, sum, .. } = Tempered::new(&logits, temperature);
            let full = ((logits[tok as usize] as f64 - max) / temperature - sum.ln()) as f32;
            proptest::prop_assert!(lp.is_finite() && lp <= 0.0, "{lp}");
            proptest::prop_assert!(lp >= full, "{lp} < {full}");
        }
    }
}
