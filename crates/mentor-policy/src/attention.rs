//! No-grad attention of one new position per row against a KV cache: a decode step's attention
//! in one pass.
//!
//! In a decode step each row has one query per head, so per row and kv head the attention is
//! `n_rep` queries against the cached keys. As candle ops that is two batched matmuls of
//! `batch * kv_heads` tiny products each (the gemm crate runs every one of them alone, on the
//! calling thread, with its dispatch cost), a softmax between them, and the scaled and masked
//! scores as temporaries. [`decode`] does each (row, kv head) pair in one pass, the pairs split
//! over rayon's pool: the scores `q·k` (dot products over the head dim, AVX2/FMA), the scaled,
//! masked softmax row of the training path (`mentor_kernels::ops::masked_softmax_row`) itself, then `p·v`. The keys and
//! values are read in place from the cache's strided views. It computes the same function as the candle ops; results differ by float
//! rounding (the tests compare the two).
//!
//! Only CPU `f32` tensors on x86-64 with AVX2 and FMA take this path ([`decode`] returns
//! `None` otherwise, and the model keeps the candle ops).

use candle_core::{CpuStorage, DType, Storage, Tensor};
use rayon::prelude::*;

/// `softmax(scale * q·kᵀ + mask) · v` for one query position per row: `q` `[B, kv_heads, R, hd]`
/// (the `R = n_rep` query heads of each kv head; contiguous), `k` and `v` `[B, kv_heads, L, hd]`
/// (any strides with the head dim contiguous, e.g. views of a cache's buffers), `mask`
/// `[B, 1, 1, L]` (additive: 0 attends, a large finite negative blocks). Returns
/// `[B, kv_heads, R, hd]`, or `None` where this kernel does not run (not CPU `f32`, no
/// AVX2/FMA, or other shapes): the caller then uses candle's ops.
pub(crate) fn decode(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: &Tensor,
    scale: f64,
) -> candle_core::Result<Option<Tensor>> {
    if !simd::available() || [q, k, v, mask].iter().any(|t| !t.device().is_cpu() || t.dtype() != DType::F32) {
        return Ok(None);
    }
    let Ok((b, g, r, hd)) = q.dims4() else { return Ok(None) };
    let Ok((kb, kg, l, khd)) = k.dims4() else { return Ok(None) };
    if (kb, kg, khd) != (b, g, hd) || v.dims() != k.dims() || mask.dims() != [b, 1, 1, l] || l == 0 || hd == 0
    {
        return Ok(None);
    }
    let q = q.contiguous()?;
    let mask = mask.contiguous()?;
    let (qs, ql) = q.storage_and_layout();
    let (ks, kl) = k.storage_and_layout();
    let (vs, vl) = v.storage_and_layout();
    let (ms, ml) = mask.storage_and_layout();
    let (
        Storage::Cpu(CpuStorage::F32(qd)),
        Storage::Cpu(CpuStorage::F32(kd)),
        Storage::Cpu(CpuStorage::F32(vd)),
    ) = (&*qs, &*ks, &*vs)
    else {
        return Ok(None);
    };
    let Storage::Cpu(CpuStorage::F32(md)) = &*ms else { return Ok(None) };
    let (Some((q0, q1)), Some((m0, m1))) = (ql.contiguous_offsets(), ml.contiguous_offsets()) else {
        return Ok(None);
    };
    let (qd, md) = (&qd[q0..q1], &md[m0..m1]);
    let (Some(kv_k), Some(kv_v)) = (Strided::of(kl, kd.len()), Strided::of(vl, vd.len())) else {
        return Ok(None);
    };
    let scale = scale as f32;
    let mut dst = vec![0f32; b * g * r * hd];
    // Per rayon job, scratch rows for the raw scores and the probabilities (`r * l` each).
    let scratch = || (Vec::new(), Vec::new());
    dst.par_chunks_mut(r * hd).enumerate().for_each_init(scratch, |(s, p), (task, out)| {
        let (bi, gi) = (task / g, task % g);
        let q = &qd[task * r * hd..(task + 1) * r * hd];
        let m = &md[bi * l..(bi + 1) * l];
        let (k0, v0) = (kv_k.at(bi, gi), kv_v.at(bi, gi));
        s.resize(r * l, 0.0);
        p.resize(r * l, 0.0);
        // SAFETY: AVX2 and FMA were checked; `Strided::of` checked that every key and value row
        // `(bi, gi, j < L)` lies inside its buffer; `q`, `s`, `p` and `out` hold `r` rows of
        // `hd`, `l`, `l` and `hd` elements.
        #[allow(unsafe_code)]
        unsafe {
            simd::scores(q, r, kd.as_ptr().add(k0), kv_k.row, l, hd, s);
        }
        for (pr, sr) in p.chunks_mut(l).zip(s.chunks(l)) {
            mentor_kernels::ops::masked_softmax_row(pr, sr, m, scale);
        }
        // SAFETY: as above.
        #[allow(unsafe_code)]
        unsafe {
            simd::weighted_sum(p, r, vd.as_ptr().add(v0), kv_v.row, l, hd, out);
        }
    });
    drop((qs, ks, vs, ms));
    Ok(Some(Tensor::from_vec(dst, (b, g, r, hd), q.device())?))
}

/// Where the rows of a `[B, kv_heads, L, hd]` layout with a contiguous head dim lie.
#[derive(Clone, Copy)]
struct Strided {
    start: usize,
    batch: usize,
    head: usize,
    /// Elements between consecutive positions.
    row: usize,
}

impl Strided {
    /// The layout's offsets, if its last dim is contiguous and every row lies in a buffer of
    /// `len` elements.
    fn of(layout: &candle_core::Layout, len: usize) -> Option<Self> {
        let (dims, st) = (layout.dims(), layout.stride());
        if dims.len() != 4 || st[3] != 1 || dims.contains(&0) {
            return None;
        }
        let last = layout.start_offset()
            + (dims[0] - 1) * st[0]
            + (dims[1] - 1) * st[1]
            + (dims[2] - 1) * st[2]
            + dims[3];
        (last <= len).then_some(Self { start: layout.start_offset(), batch: st[0], head: st[1], row: st[2] })
    }

    /// The offset of position 0 of batch row `b`, head `h`.
    fn at(&self, b: usize, h: usize) -> usize {
        self.start + b * self.batch + h * self.head
    }
}

// SIMD intrinsics over raw rows need `unsafe`; every unsafe fn states its contract.
#[allow(unsafe_code)]
mod simd {
    /// Whether this CPU runs the kernels.
    pub fn available() -> bool {
        mentor_kernels::lanes::avx2_fma()
    }

    /// `p[i * l + j] = q_i · k_j` for the `r` rows `q_i` of `q` (`hd` each) and the `l` key
    /// rows `k_j = k + j * ldk`.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; `k` must hold `l` rows of `hd` elements `ldk` apart;
    /// `q` holds `r * hd` and `p` `r * l` elements.
    pub unsafe fn scores(q: &[f32], r: usize, k: *const f32, ldk: usize, l: usize, hd: usize, p: &mut [f32]) {
        debug_assert!(q.len() == r * hd && p.len() == r * l);
        #[cfg(target_arch = "x86_64")]
        {
            let mut i = 0;
            while i < r {
                let n = (r - i).min(4);
                let qi = q.as_ptr().add(i * hd);
                let pi = p.as_mut_ptr().add(i * l);
                match n {
                    4 => avx2::scores::<4>(qi, hd, k, ldk, l, pi, l),
                    3 => avx2::scores::<3>(qi, hd, k, ldk, l, pi, l),
                    2 => avx2::scores::<2>(qi, hd, k, ldk, l, pi, l),
                    _ => avx2::scores::<1>(qi, hd, k, ldk, l, pi, l),
                }
                i += n;
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (q, r, k, ldk, l, hd, p);
    }

    /// `out_i = Σ_j p[i * l + j] v_j` for the `r` rows of `out` (`hd` each) and the `l` value
    /// rows `v_j = v + j * ldv`.
    ///
    /// # Safety
    /// As [`scores`], with `v` for `k`; `p` holds `r * l` and `out` `r * hd` elements.
    pub unsafe fn weighted_sum(
        p: &[f32],
        r: usize,
        v: *const f32,
        ldv: usize,
        l: usize,
        hd: usize,
        out: &mut [f32],
    ) {
        debug_assert!(p.len() == r * l && out.len() == r * hd);
        #[cfg(target_arch = "x86_64")]
        for i in 0..r {
            avx2::weighted_sum(p.as_ptr().add(i * l), v, ldv, l, hd, out.as_mut_ptr().add(i * hd));
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (p, r, v, ldv, l, hd, out);
    }

    #[cfg(target_arch = "x86_64")]
    mod avx2 {
        use std::arch::x86_64::*;

        use mentor_kernels::lanes::hsum;

        /// `p[i * ldp + j] = q_i · k_j` for `R` query rows (`hd` apart) and `l` key rows.
        ///
        /// # Safety
        /// AVX2 and FMA; `q` holds `R * hd`, `k` `l` rows `ldk` apart of `hd`, `p` `R` rows
        /// `ldp` apart of `l` elements.
        #[target_feature(enable = "avx2,fma")]
        pub unsafe fn scores<const R: usize>(
            q: *const f32,
            hd: usize,
            k: *const f32,
            ldk: usize,
            l: usize,
            p: *mut f32,
            ldp: usize,
        ) {
            let h8 = hd / 8 * 8;
            for j in 0..l {
                let kj = k.add(j * ldk);
                // Two accumulators per query row: the even and odd 8-lane chunks.
                let mut acc = [[_mm256_setzero_ps(); 2]; R];
                let mut d = 0;
                while d + 16 <= h8 {
                    let (k0, k1) = (_mm256_loadu_ps(kj.add(d)), _mm256_loadu_ps(kj.add(d + 8)));
                    for (i, a) in acc.iter_mut().enumerate() {
                        let qi = q.add(i * hd + d);
                        a[0] = _mm256_fmadd_ps(_mm256_loadu_ps(qi), k0, a[0]);
                        a[1] = _mm256_fmadd_ps(_mm256_loadu_ps(qi.add(8)), k1, a[1]);
                    }
                    d += 16;
                }
                if d < h8 {
                    let k0 = _mm256_loadu_ps(kj.add(d));
                    for (i, a) in acc.iter_mut().enumerate() {
                        a[0] = _mm256_fmadd_ps(_mm256_loadu_ps(q.add(i * hd + d)), k0, a[0]);
                    }
                }
                for (i, a) in acc.iter().enumerate() {
                    let mut s = hsum(_mm256_add_ps(a[0], a[1]));
                    for e in h8..hd {
                        s += *q.add(i * hd + e) * *kj.add(e);
                    }
                    *p.add(i * ldp + j) = s;
                }
            }
        }

        /// `out = Σ_j p[j] v_j` over `l` value rows `ldv` apart of `hd` elements.
        ///
        /// # Safety
        /// AVX2 and FMA; `p` holds `l`, `v` `l` rows `ldv` apart of `hd`, `out` `hd` elements.
        #[target_feature(enable = "avx2,fma")]
        pub unsafe fn weighted_sum(
            p: *const f32,
            v: *const f32,
            ldv: usize,
            l: usize,
            hd: usize,
            out: *mut f32,
        ) {
            let h8 = hd / 8 * 8;
            let mut d = 0;
            // Blocks of 64 (8 accumulators: enough independent FMAs to fill both pipes), then 8.
            while d + 64 <= h8 {
                let mut acc = [_mm256_setzero_ps(); 8];
                for j in 0..l {
                    let w = _mm256_set1_ps(*p.add(j));
                    let vj = v.add(j * ldv + d);
                    for (c, a) in acc.iter_mut().enumerate() {
                        *a = _mm256_fmadd_ps(w, _mm256_loadu_ps(vj.add(8 * c)), *a);
                    }
                }
                for (c, a) in acc.iter().enumerate() {
                    _mm256_storeu_ps(out.add(d + 8 * c), *a);
                }
                d += 64;
            }
            while d < h8 {
                let mut acc = _mm256_setzero_ps();
                for j in 0..l {
                    acc =
                        _mm256_fmadd_ps(_mm256_set1_ps(*p.add(j)), _mm256_loadu_ps(v.add(j * ldv + d)), acc);
                }
                _mm256_storeu_ps(out.add(d), acc);
                d += 8;
            }
            for e in h8..hd {
                let mut s = 0f32;
                for j in 0..l {
                    s += *p.add(j) * *v.add(j * ldv + e);
                }
                *out.add(e) = s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, IndexOp};

    use super::*;

    /// The candle ops the model ran before: `softmax(scale * q·kᵀ + mask) · v`.
    fn reference(q: &Tensor, k: &Tensor, v: &Tensor, mask: &Tensor, scale: f64) -> Tensor {
        let att = (q.matmul(&k.t().unwrap()).unwrap() * scale).unwrap().broadcast_add(mask).unwrap();
        candle_nn::ops::softmax_last_dim(&att).unwrap().matmul(&v.contiguous().unwrap()).unwrap()
    }

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap().to_scalar::<f32>().unwrap()
    }

    /// Keys and values as a cache holds them: views of the first `l` of `cap` positions.
    fn cache_view(b: usize, g: usize, l: usize, cap: usize, hd: usize, seed: u64) -> (Tensor, Tensor) {
        let dev = Device::Cpu;
        let buf = |s: u64| {
            let n = b * g * cap * hd;
            let xs: Vec<f32> =
                (0..n).map(|i| (((i as u64 * 2654435761 + s * 97) % 1000) as f32 / 500.0) - 1.0).collect();
            Tensor::from_vec(xs, (b, g, cap, hd), &dev).unwrap()
        };
        (buf(seed).narrow(2, 0, l).unwrap(), buf(seed + 1).narrow(2, 0, l).unwrap())
    }

    fn mask(b: usize, l: usize, blocked: &[(usize, usize)]) -> Tensor {
        let mut m = vec![0f32; b * l];
        for &(bi, j) in blocked {
            m[bi * l + j] = -1e9;
        }
        Tensor::from_vec(m, (b, 1, 1, l), &Device::Cpu).unwrap()
    }

    #[test]
    fn equals_the_candle_ops_on_cache_views_with_padding() {
        if !simd::available() {
            return;
        }
        // Head dims with a 64-block, an 8-block and a scalar tail; n_rep 1 to 5 (row groups of
        // 4 and a rest); keys with blocked (padding) positions.
        for &(b, g, r, l, cap, hd) in
            &[(3, 3, 3, 37, 50, 64), (2, 1, 5, 9, 9, 76), (1, 2, 1, 1, 4, 8), (4, 2, 4, 130, 131, 13)]
        {
            let q = cache_view(b, g, r, r, hd, 11).0.contiguous().unwrap();
            let (k, v) = cache_view(b, g, l, cap, hd, 3);
            let blocked: Vec<(usize, usize)> =
                (0..b).flat_map(|bi| (0..bi.min(l - 1)).map(move |j| (bi, j))).collect();
            let m = mask(b, l, &blocked);
            let got = decode(&q, &k, &v, &m, 0.125).unwrap().expect("the kernel runs on f32 CPU tensors");
            let want = reference(&q, &k, &v, &m, 0.125);
            assert_eq!(got.dims(), want.dims());
            let d = max_abs_diff(&got, &want);
            assert!(d < 1e-5, "{:?}: max |diff| {d}", (b, g, r, l, cap, hd));
            // A blocked key has no weight: changing its value changes nothing.
            if b > 1 && l > 1 {
                let v2 = v.contiguous().unwrap();
                let poke = v2.i((1..2, .., 0..1, ..)).unwrap().affine(0.0, 100.0).unwrap();
                let v2 = v2.slice_assign(&[1..2, 0..g, 0..1, 0..hd], &poke).unwrap();
                let again = decode(&q, &k, &v2, &m, 0.125).unwrap().unwrap();
                assert_eq!(max_abs_diff(&again.i(1).unwrap(), &got.i(1).unwrap()), 0.0);
            }
        }
    }

    #[test]
    fn declines_what_it_does_not_run() {
        let dev = Device::Cpu;
        let q = Tensor::zeros((1, 1, 2, 8), DType::F64, &dev).unwrap();
        let k = Tensor::zeros((1, 1, 3, 8), DType::F64, &dev).unwrap();
        let m = Tensor::zeros((1, 1, 1, 3), DType::F64, &dev).unwrap();
        assert!(decode(&q, &k, &k, &m, 1.0).unwrap().is_none(), "f64");
        let (q, k, m) = (
            q.to_dtype(DType::F32).unwrap(),
            k.to_dtype(DType::F32).unwrap(),
            m.to_dtype(DType::F32).unwrap(),
        );
        // A mask for two query positions: not one decode step.
        let m2 = Tensor::zeros((1, 1, 2, 3), DType::F32, &dev).unwrap();
        assert!(decode(&q, &k, &k, &m2, 1.0).unwrap().is_none());
        let k_wrong = Tensor::zeros((1, 1, 3, 4), DType::F32, &dev).unwrap();
        assert!(decode(&q, &k_wrong, &k_wrong, &m, 1.0).unwrap().is_none());
        if simd::available() {
            assert!(decode(&q, &k, &k, &m, 1.0).unwrap().is_some());
        }
    }
}
