/// `out[j] = dot(x, w row j)` for the `out.len()` rows of `w` (`k` each).
pub fn rows(x: &[f32], w: &[f32], out: &mut [f32], k: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::paths::fma_detected() {
            // SAFETY: the CPU has FMA (checked just above).
            unsafe { rows_fma(x, w, out, k) };
            return;
        }
    }
    rows_plain(x, w, out, k);
}

/// [`rows`] compiled for scalar FMA instructions (same results: a fused multiply-add is
/// exactly rounded either way).
///
/// # Safety
/// The CPU must have FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn rows_fma(x: &[f32], w: &[f32], out: &mut [f32], k: usize) {
    rows_plain(x, w, out, k)
}

/// [`rows`] with `f32::mul_add` as compiled for any CPU (a library call without FMA).
#[inline(always)]
pub(crate) fn rows_plain(x: &[f32], w: &[f32], out: &mut [f32], k: usize) {
    for (j, o) in out.iter_mut().enumerate() {
        *o = dot(x, &w[j * k..(j + 1) * k]);
    }
}

#[inline(always)]
fn dot(x: &[f32], w: &[f32]) -> f32 {
    let k8 = x.len() / 8 * 8;
    let mut lanes = [0f32; 8];
    for (xc, wc) in x[..k8].chunks_exact(8).zip(w[..k8].chunks_exact(8)) {
        for l in 0..8 {
            lanes[l] = xc[l].mul_add(wc[l], lanes[l]);
        }
    }
    let mut s = crate::lanes::hsum_portable(&lanes);
    for (a, b) in x[k8..].iter().zip(&w[k8..]) {
        s += a * b;
    }
    s
}
