//! What the AVX2 kernels (this crate's `matmul` and `vexp`, mentor-policy's decode attention)
//! share: whether the CPU runs them, and the sum of a vector's 8 lanes.

/// Whether the AVX2 kernels run: the CPU has AVX2 and FMA and the portable path is not forced
/// ([`crate::paths`]).
pub fn avx2_fma() -> bool {
    crate::paths::use_avx2()
}

/// Whether the AVX-512 tile of the small-batch matmul runs ([`crate::paths`]).
pub(crate) fn avx512() -> bool {
    crate::paths::use_avx512()
}

/// Sum of the 8 lanes of `v`: high half onto low half, then pairs, then the last two.
///
/// # Safety
/// AVX2 and FMA must be available ([`avx2_fma`]).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
#[inline]
pub unsafe fn hsum(v: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    _mm_cvtss_f32(s)
}

/// [`hsum`]'s order on 8 plain lanes: `(l0+l4) + (l2+l6)` and `(l1+l5) + (l3+l7)`, then those two
/// (in `f32` for the kernels, in `f64` for the sampler's total).
pub fn hsum_portable<T: Copy + std::ops::Add<Output = T>>(l: &[T; 8]) -> T {
    let s = [l[0] + l[4], l[1] + l[5], l[2] + l[6], l[3] + l[7]];
    let t = [s[0] + s[2], s[1] + s[3]];
    t[0] + t[1]
}
