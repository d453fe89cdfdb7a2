//! Choosing the next token from a row of logits: greedy, temperature, top-k, top-p.
//!
//! Works on plain `f32` slices on the host (one row per call), with a caller-owned seeded RNG,
//! so the same seed and logits give the same choice. The returned log-probability is that of
//! the chosen token under the temperature-scaled softmax over the *whole* vocabulary (the
//! quantity GRPO's importance ratios use), not under the top-k/top-p truncated distribution;
//! greedy decoding reports it at temperature 1.

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

    /// Checks the knobs.
    pub fn validate(&self) -> Result<()> {
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            return Err(Error::InvalidRequest(format!("temperature {} must be >= 0", self.temperature)));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(Error::InvalidRequest(format!("top_p {} must be in (0, 1]", self.top_p)));
        }
        Ok(())
    }

    /// Picks a token from `logits`; returns `(token, log-prob)` (see the module docs).
    pub fn sample(&self, logits: &[f32], rng: &mut impl Rng) -> Result<(u32, f32)> {
        if logits.is_empty() {
            return Err(Error::InvalidRequest("empty logits".into()));
        }
        if logits.iter().any(|x| x.is_nan()) {
            return Err(Error::InvalidRequest("NaN in logits".into()));
        }
        let t = if self.temperature == 0.0 { 1.0 } else { self.temperature };
        // One pass of `exp` over the vocabulary: `e[i] = exp((x_i - max) / t)` are the
        // unnormalised probabilities, `sum` their total, so `p_i = e[i] / sum` and
        // `log p_i = (x_i - max) / t - ln(sum)`.
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let e: Vec<f64> = logits.iter().map(|&x| ((x as f64 - max) / t).exp()).collect();
        let sum: f64 = e.iter().sum();
        let log_sum = sum.ln();
        let logp = |i: usize| ((logits[i] as f64 - max) / t - log_sum) as f32;
        if self.temperature == 0.0 {
            let mut best = 0;
            for (i, x) in logits.iter().enumerate() {
                if *x > logits[best] {
                    best = i;
                }
            }
            return Ok((best as u32, logp(best)));
        }
        if self.top_k == 0 && self.top_p >= 1.0 {
            // Inverse CDF over the whole vocabulary, in id order.
            let mut u = rng.random::<f64>() * sum;
            let mut chosen = e.len() - 1;
            for (i, &w) in e.iter().enumerate() {
                u -= w;
                if u < 0.0 {
                    chosen = i;
                    break;
                }
            }
            return Ok((chosen as u32, logp(chosen)));
        }
        let mut idx: Vec<usize> = (0..e.len()).collect();
        idx.sort_by(|&a, &b| e[b].total_cmp(&e[a]).then(a.cmp(&b)));
        if self.top_k > 0 {
            idx.truncate(self.top_k);
        }
        if self.top_p < 1.0 {
            let need = self.top_p * sum;
            let mut mass = 0.0;
            let mut keep = 0;
            for &i in &idx {
                mass += e[i];
                keep += 1;
                if mass >= need {
                    break;
                }
            }
            idx.truncate(keep.max(1));
        }
        let total: f64 = idx.iter().map(|&i| e[i]).sum();
        let mut u = rng.random::<f64>() * total;
        let mut chosen = idx[idx.len() - 1];
        for &i in &idx {
            u -= e[i];
            if u < 0.0 {
                chosen = i;
                break;
            }
        }
        Ok((chosen as u32, logp(chosen)))
    }
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
    }
}
