//! `exp` over slices of `f32`, 8 lanes at a time on AVX2 + FMA.
//!
//! The training kernels take ~10^8 exponentials per SmolLM2 step (the softmax over the
//! vocabulary, SwiGLU's sigmoid, attention); libm's scalar `expf` was 4 % of a step's time.
//! [`exp_in_place`] computes Cephes' `expf` (range reduction by `ln 2` in two parts, a
//! degree-6 polynomial, the exponent added to the bits) on 8 lanes, within 2 ulp of the exact
//! value (tested against `f64::exp`). Like the kernels' scalar path it returns exactly 0 below
//! the smallest normal result (`x < -87.33`: the sums these exponentials enter are ≥ 1, so
//! the subnormals dropped are below 1e-38 of them), `+inf` above `88.72`, and NaN for NaN.
//!
//! [`exp_scalar`] is the same arithmetic on one lane, operation by operation (the same fused
//! multiply-adds, the same rounding to an integer): the same bits as the vector path, on every
//! CPU and without libm. It serves the vector path's tail, the portable path
//! ([`crate::paths::KernelPath::Portable`], or a CPU without AVX2) and the kernels' scalar
//! exponentials. [`ln`] is likewise libm-free (a series in f64, rounded once).

/// Below this, `exp` is 0 here (the smallest normal `f32` is `exp(-87.336)`).
const LOW: f32 = -87.33;
/// Above this, `exp` overflows to `+inf`.
const HIGH: f32 = 88.72;

/// `exp(x)` on one lane with the vector path's arithmetic (see the module docs).
pub fn exp_scalar(x: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::paths::fma_detected() {
            // SAFETY: the CPU has FMA (checked just above).
            #[allow(unsafe_code)]
            return unsafe { portable::exp_fma(x) };
        }
    }
    portable::exp_lane(x)
}

/// `x = exp(x)` for every element (see the module docs for the edge cases).
pub fn exp_in_place(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::lanes::avx2_fma() {
            // SAFETY: AVX2 and FMA are available (checked just above).
            #[allow(unsafe_code)]
            unsafe {
                avx2::exp_in_place(xs)
            };
            return;
        }
        if crate::paths::fma_detected() {
            // SAFETY: the CPU has FMA (checked just above).
            #[allow(unsafe_code)]
            unsafe {
                portable::exp_slice_fma(xs)
            };
            return;
        }
    }
    for x in xs {
        *x = portable::exp_lane(*x);
    }
}

/// `ln(x)` in f32 without libm: `x = 2^e · m` with `m` in `[√½, √2)`, then
/// `ln m = 2 atanh((m - 1) / (m + 1))` by its series in f64 (error below 1e-16 relative),
/// rounded once to f32. `ln(0) = -inf`, `ln(+inf) = +inf`, NaN for negative or NaN `x`.
pub fn ln(x: f32) -> f32 {
    if x.is_nan() || x < 0.0 {
        return f32::NAN;
    }
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    if x.is_infinite() {
        return f32::INFINITY;
    }
    let bits = (x as f64).to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    // Σ s2^i / (2i + 1), i = 0..=11, by Horner from the highest term.
    let mut p = 0.0f64;
    for i in (0..12).rev() {
        p = p * s2 + 1.0 / (2 * i + 1) as f64;
    }
    (e as f64 * std::f64::consts::LN_2 + 2.0 * s * p) as f32
}

/// The one-lane twins of the AVX2 code.
#[allow(unsafe_code)]
mod portable {
    use super::{HIGH, LOW};

    /// `exp8`'s arithmetic on one lane.
    #[inline(always)]
    pub fn exp_lane(x: f32) -> f32 {
        // (NaN stays NaN here, where the vector path clamps it to LOW; the lane returns `x` then.)
        let xc = x.clamp(LOW, HIGH);
        let n = (xc * std::f32::consts::LOG2_E).round_ties_even();
        let r = (-n).mul_add(0.693_359_4, xc);
        let r = (-n).mul_add(-2.121_944_4e-4, r);
        let mut y = 1.987_569_1e-4f32;
        for c in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5] {
            y = y.mul_add(r, c);
        }
        let r2 = r * r;
        let y = y.mul_add(r2, r + 1.0);
        let n1 = (n * 0.5).floor();
        let n2 = n - n1;
        let y = y * pow2(n1) * pow2(n2);
        if x < LOW {
            0.0
        } else if x > HIGH {
            f32::INFINITY
        } else if x.is_nan() {
            x
        } else {
            y
        }
    }

    /// `2^k` for integral `k` in `[-126, 127]`, built in the exponent bits.
    #[inline(always)]
    fn pow2(k: f32) -> f32 {
        f32::from_bits(((k as i32 + 127) as u32) << 23)
    }

    /// [`exp_lane`] compiled for scalar FMA instructions (the same results).
    ///
    /// # Safety
    /// The CPU must have FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "fma")]
    pub unsafe fn exp_fma(x: f32) -> f32 {
        exp_lane(x)
    }

    /// [`exp_lane`] over a slice, compiled for FMA.
    ///
    /// # Safety
    /// The CPU must have FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "fma")]
    pub unsafe fn exp_slice_fma(xs: &mut [f32]) {
        for x in xs {
            *x = exp_lane(*x);
        }
    }
}

/// `Σ exp(x - shift)` over `xs`: the exponentials of each 256-element chunk are taken with
/// [`exp_in_place`] in a stack buffer and summed in order, the chunk sums then added in order.
pub fn sum_exp_minus(xs: &[f32], shift: f32) -> f32 {
    let mut buf = [0f32; 256];
    let mut total = 0f32;
    for chunk in xs.chunks(buf.len()) {
        let b = &mut buf[..chunk.len()];
        for (b, &x) in b.iter_mut().zip(chunk) {
            *b = x - shift;
        }
        exp_in_place(b);
        total += b.iter().sum::<f32>();
    }
    total
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{portable::exp_lane, HIGH, LOW};

    /// # Safety
    /// AVX2 and FMA must be available.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn exp_in_place(xs: &mut [f32]) {
        let n8 = xs.len() / 8 * 8;
        let p = xs.as_mut_ptr();
        let mut i = 0;
        while i < n8 {
            // SAFETY: `i + 8 <= xs.len()`.
            let x = _mm256_loadu_ps(p.add(i));
            _mm256_storeu_ps(p.add(i), exp8(x));
            i += 8;
        }
        for x in &mut xs[n8..] {
            *x = exp_lane(*x);
        }
    }

    /// Cephes `expf` on 8 lanes.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn exp8(x: __m256) -> __m256 {
        let low = _mm256_set1_ps(LOW);
        let high = _mm256_set1_ps(HIGH);
        // Reduce on a clamped copy; fix the out-of-range lanes at the end.
        let xc = _mm256_min_ps(_mm256_max_ps(x, low), high);
        let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
            xc,
            _mm256_set1_ps(std::f32::consts::LOG2_E),
        ));
        // r = x - n ln2, ln2 split so that n * C1 is exact.
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693_359_4), xc);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.121_944_4e-4), r);
        let mut y = _mm256_set1_ps(1.987_569_1e-4);
        for c in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5] {
            y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(c));
        }
        let r2 = _mm256_mul_ps(r, r);
        let y = _mm256_fmadd_ps(y, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0)));
        // y * 2^n. n ∈ [-126, 128]: scale by 2^(n-1) twice so that n = 128 does not overflow
        // the exponent field before the multiply (the result is then +inf, as it should be).
        let n1 = _mm256_floor_ps(_mm256_mul_ps(n, _mm256_set1_ps(0.5)));
        let n2 = _mm256_sub_ps(n, n1);
        let y = _mm256_mul_ps(_mm256_mul_ps(y, pow2(n1)), pow2(n2));
        // Lanes below LOW: 0; above HIGH: +inf; NaN stays NaN.
        let y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps::<_CMP_LT_OQ>(x, low));
        let y = _mm256_blendv_ps(y, _mm256_set1_ps(f32::INFINITY), _mm256_cmp_ps::<_CMP_GT_OQ>(x, high));
        _mm256_blendv_ps(y, x, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x))
    }

    /// `2^k` for integral `k` in `[-126, 127]`, built in the exponent bits.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn pow2(k: __m256) -> __m256 {
        _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(
            _mm256_cvtps_epi32(k),
            _mm256_set1_epi32(127),
        )))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Distance in units in the last place of `b` (exact, from f64).
    fn ulps(a: f32, exact: f64) -> f64 {
        let b = exact as f32;
        let ulp = (f32::from_bits(b.to_bits() + 1) - b) as f64;
        (a as f64 - exact).abs() / ulp
    }

    #[test]
    fn edge_cases() {
        let mut xs = vec![
            -1e9, -104.0, -87.4, -87.3, -10.0, -1.0, -1e-8, 0.0, 1e-8, 0.5, 1.0, 10.0, 88.0, 88.7, 88.8, 1e9,
        ];
        xs.extend([f32::NEG_INFINITY, f32::INFINITY, f32::NAN]);
        let mut ys = xs.clone();
        exp_in_place(&mut ys);
        for (&x, &y) in xs.iter().zip(&ys) {
            if x.is_nan() {
                assert!(y.is_nan());
            } else if x < LOW {
                assert_eq!(y, 0.0, "exp({x})");
            } else if x > HIGH {
                assert_eq!(y, f32::INFINITY, "exp({x})");
            } else {
                assert!(ulps(y, (x as f64).exp()) <= 2.0, "exp({x}) = {y}, exact {}", (x as f64).exp());
            }
        }
        assert_eq!(exp_scalar(-100.0), 0.0);
    }

    /// Every 97th float from -100 to 100, the edges, and the tail of a slice.
    fn probe_values() -> Vec<f32> {
        let mut xs: Vec<f32> = (-200_000..200_000).step_by(97).map(|i| i as f32 / 2000.0).collect();
        xs.extend([-1e9, -104.0, -87.4, -87.33, -87.3, -1e-8, 0.0, -0.0, 1e-8, 88.7, 88.72, 88.8, 1e9]);
        xs.extend([f32::NEG_INFINITY, f32::INFINITY, f32::NAN, 3.0]);
        xs
    }

    #[test]
    fn the_one_lane_twin_gives_the_vector_paths_bits() {
        let xs = probe_values();
        let mut vector = xs.clone();
        exp_in_place(&mut vector);
        for (&x, &v) in xs.iter().zip(&vector) {
            for one in [exp_scalar(x), portable::exp_lane(x)] {
                assert!(
                    one.to_bits() == v.to_bits() || (one.is_nan() && v.is_nan()),
                    "exp({x}): {one} vs {v}"
                );
            }
        }
    }

    #[test]
    fn ln_is_within_half_an_ulp_and_keeps_the_edges() {
        let mut x = 1e-30f32;
        while x < 1e30 {
            let exact = (x as f64).ln();
            let got = ln(x);
            assert!(ulps(got, exact) <= 0.5 + 1e-6 || exact == 0.0, "ln({x}) = {got}, exact {exact}");
            x *= 1.0137;
        }
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f32::NEG_INFINITY);
        assert_eq!(ln(f32::INFINITY), f32::INFINITY);
        assert!(ln(-1.0).is_nan() && ln(f32::NAN).is_nan());
        assert!(ulps(ln(1e-40), (1e-40f32 as f64).ln()) <= 0.5 + 1e-6, "subnormal");
    }

    proptest! {
        #[test]
        fn within_two_ulp_of_the_exact_value(xs in proptest::collection::vec(-87.3f32..88.7, 1..40)) {
            let mut ys = xs.clone();
            exp_in_place(&mut ys);
            for (&x, &y) in xs.iter().zip(&ys) {
                prop_assert!(ulps(y, (x as f64).exp()) <= 2.0, "exp({}) = {}", x, y);
            }
        }

        #[test]
        fn sum_matches_the_f64_sum(xs in proptest::collection::vec(-30f32..30.0, 1..600), shift in -5f32..5.0) {
            let exact: f64 = xs.iter().map(|&x| ((x - shift) as f64).exp()).sum();
            let got = sum_exp_minus(&xs, shift) as f64;
            prop_assert!((got - exact).abs() <= 1e-5 * exact, "{} vs {}", got, exact);
        }
    }
}
