//! What the crate's AVX2 kernels (`matmul`, `attention`, `vexp`) share: whether the CPU runs
//! them, and the sum of a vector's 8 lanes.

/// Whether this CPU has AVX2 and FMA (always false off x86-64).
pub(crate) fn avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Sum of the 8 lanes of `v`: high half onto low half, then pairs, then the last two.
///
/// # Safety
/// AVX2 and FMA must be available ([`avx2_fma`]).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) unsafe fn hsum(v: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    _mm_cvtss_f32(s)
}
