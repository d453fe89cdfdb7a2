use candle_core::bail;
use rayon::prelude::*;

/// Whether this CPU runs the kernel.
pub fn available() -> bool {
    crate::lanes::avx2_fma()
}

/// `dst[m, n] = Σ_k x[m, k] · w[n, k]`; `x` `[m, k]`, `w` `[n, k]`, `dst` `[m, n]`, all
/// row-major. On AVX2 splits `N` over rayon's pool (with the AVX-512 tile for whole groups
/// of 8 rows where it runs); the portable kernel (same sums, same bits) splits `M`.
pub fn matmul_t(
    x: &[f32],
    w: &[f32],
    dst: &mut [f32],
    m: usize,
    n: usize,
    k: usize,
) -> candle_core::Result<()> {
    matmul_t_on(x, w, dst, m, n, k, crate::lanes::avx512())
}

/// [`matmul_t`] with the AVX-512 tile on or off (`wide`; on only where the CPU has it).
pub fn matmul_t_on(
    x: &[f32],
    w: &[f32],
    dst: &mut [f32],
    m: usize,
    n: usize,
    k: usize,
    wide: bool,
) -> candle_core::Result<()> {
    if x.len() != m * k || w.len() != n * k || dst.len() != m * n {
        bail!("matmul_t: buffer sizes do not match [{m}, {k}] x [{n}, {k}]ᵀ");
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if !available() {
        dst.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            super::portable::rows(&x[i * k..(i + 1) * k], w, row, k);
        });
        return Ok(());
    }
    // SAFETY: AVX2 and FMA were checked just above; the sizes were checked against `dst`.
    unsafe { tiles(x, w, dst.as_mut_ptr(), m, n, k, wide) };
    Ok(())
}

/// [`matmul_t`] into a new buffer: on the kernel's path the buffer is not zeroed first
/// (the tiles write each of its `m * n` outputs exactly once), which saved a serial pass
/// over every output of a decode step (the head's alone is `rows × vocab` floats).
pub fn matmul_t_vec(x: &[f32], w: &[f32], m: usize, n: usize, k: usize) -> candle_core::Result<Vec<f32>> {
    let len = m * n;
    if x.len() != m * k || w.len() != n * k {
        bail!("matmul_t: buffer sizes do not match [{m}, {k}] x [{n}, {k}]ᵀ");
    }
    if !available() || len == 0 {
        let mut dst = vec![0f32; len];
        matmul_t(x, w, &mut dst, m, n, k)?;
        return Ok(dst);
    }
    let mut dst: Vec<f32> = Vec::with_capacity(len);
    // SAFETY: AVX2 and FMA were checked; `x` and `w` hold `m * k` and `n * k` elements and
    // `dst` has room for `m * n`. `tiles` writes every one of them before `set_len` (each
    // output belongs to exactly one tile of exactly one task); were it to unwind, `dst`
    // would be dropped empty.
    unsafe {
        tiles(x, w, dst.as_mut_ptr(), m, n, k, crate::lanes::avx512());
        dst.set_len(len);
    }
    Ok(dst)
}

/// The AVX2 / AVX-512 tiles of [`matmul_t_on`] over all of `dst` `[m, n]` (`m`, `n` > 0).
///
/// # Safety
/// AVX2 and FMA must be available; `x` holds `m * k` and `w` `n * k` elements, `dst` has
/// room for `m * n` (it may be uninitialised: every element is written, none read).
#[allow(clippy::too_many_arguments)]
unsafe fn tiles(x: &[f32], w: &[f32], dst: *mut f32, m: usize, n: usize, k: usize, wide: bool) {
    let threads = rayon::current_num_threads();
    // Enough columns per task that each streams a few weight rows (and a multiple of both
    // tile widths, so only the last task has a ragged tile).
    let chunk = n.div_ceil(threads).max(48).div_ceil(12) * 12;
    // The AVX-512 tile takes the whole groups of 8 rows (`m8`), from `x` packed by row
    // pairs; the AVX2 tile the rest.
    let m8 = if wide && crate::paths::detected_avx512() { m / 8 * 8 } else { 0 };
    // The packing buffer is this thread's, lent for the call (a call nested in this one,
    // on a thread that steals work while it waits, finds it empty and packs into its own).
    let mut buffer = PACKED.with(std::cell::Cell::take);
    let packed = pack_pairs(x, m8, k, &mut buffer);
    let out = SendPtr(dst);
    let run = |n0: usize| {
        let n1 = (n0 + chunk).min(n);
        // SAFETY: AVX2 and FMA are available (the caller's contract), AVX-512 F and DQ
        // where `m8 > 0`; `x` and `w` hold `m * k` and `n * k` elements, `dst` room for
        // `m * n`, and `packed` the first `m8` rows of `x` in pairs; tasks write disjoint
        // columns `n0..n1` of `dst`, the AVX-512 tiles rows `..m8` and the AVX2 tiles the
        // rest.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            if m8 > 0 {
                avx512::block(packed.as_ptr(), x.as_ptr(), w.as_ptr(), out.get(), m8, n0, n1, n, k);
            }
            if m8 < m {
                avx2::block(x.as_ptr().add(m8 * k), w.as_ptr(), out.get().add(m8 * n), m - m8, n0, n1, n, k)
            }
        }
        // Unreachable elsewhere (`available` is false there).
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (x, w, out, n1, &packed);
    };
    if chunk >= n || threads == 1 {
        (0..n).step_by(chunk).for_each(run);
    } else {
        (0..n).into_par_iter().step_by(chunk).for_each(run);
    }
    if buffer.len() <= PACKED_KEPT {
        PACKED.with(|b| b.set(buffer));
    }
}

/// `batches` independent products `a_b · w_bᵀ` (`[m, k]` · `[n, k]ᵀ`), split over rayon's
/// pool by batch; each output the same sum as [`matmul_t`]'s.
pub fn batched(
    a: &[f32],
    w: &[f32],
    dst: &mut [f32],
    batches: usize,
    m: usize,
    n: usize,
    k: usize,
) -> candle_core::Result<()> {
    if a.len() != batches * m * k || w.len() != batches * n * k || dst.len() != batches * m * n {
        bail!("bmm_t: buffer sizes do not match {batches} x [{m}, {k}] x [{n}, {k}]ᵀ");
    }
    if m == 0 || n == 0 || batches == 0 {
        return Ok(());
    }
    let avx2 = available();
    dst.par_chunks_mut(m * n).enumerate().for_each(|(bi, d)| {
        let (x, w) = (&a[bi * m * k..(bi + 1) * m * k], &w[bi * n * k..(bi + 1) * n * k]);
        if avx2 {
            // SAFETY: AVX2 and FMA were checked; `x`, `w` and `d` hold `m * k`, `n * k`
            // and `m * n` elements.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                avx2::block(x.as_ptr(), w.as_ptr(), d.as_mut_ptr(), m, 0, n, n, k)
            }
        } else {
            for (i, row) in d.chunks_mut(n).enumerate() {
                super::portable::rows(&x[i * k..(i + 1) * k], w, row, k);
            }
        }
    });
    Ok(())
}

/// Columns per tile.
const NR: usize = 3;

/// `s` plus the products of `x[e] · w[e]` for `e` in `k8..k` (the tail of `K` beyond the
/// last multiple of 8), added one at a time, each rounded: how every tile ends an output.
///
/// # Safety
/// `x` and `w` hold `k` elements.
#[inline(always)]
unsafe fn with_tail(mut s: f32, x: *const f32, w: *const f32, k8: usize, k: usize) -> f32 {
    for e in k8..k {
        s += *x.add(e) * *w.add(e);
    }
    s
}

std::thread_local! {
    /// Each thread's buffer for [`pack_pairs`], kept between calls: decoding packs the same
    /// few sizes hundreds of times a token. It keeps the largest size met up to
    /// [`PACKED_KEPT`] floats; a larger one (a deterministic run's training products) is
    /// freed after its call.
    static PACKED: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The most floats a thread's packing buffer keeps between calls (4 MiB: 32 rows of
/// `K` = 32,768).
const PACKED_KEPT: usize = 1 << 20;

/// The first `m8` rows of `x` (`[m, k]`; `m8` even) by row pairs, for the AVX-512 tile: for
/// pair `q` and each whole 8 columns `p..p + 8` of `K`, row `2q`'s 8 values then row
/// `2q + 1`'s (16 floats, one register). The tail of `K` beyond the last multiple of 8 is
/// not packed (the tile reads it from `x`). Written into `buffer` (grown as needed) from a
/// 64-byte boundary, so that no register load of a pair straddles two cache lines; returns
/// that part of `buffer`.
fn pack_pairs<'b>(x: &[f32], m8: usize, k: usize, buffer: &'b mut Vec<f32>) -> &'b [f32] {
    const LINE_FLOATS: usize = 64 / std::mem::size_of::<f32>();
    let k8 = k / 8 * 8;
    let len = m8 * k8;
    if len == 0 {
        return &[];
    }
    if buffer.len() < len + LINE_FLOATS - 1 {
        buffer.resize(len + LINE_FLOATS - 1, 0.0);
    }
    let offset = buffer.as_ptr().align_offset(64).min(LINE_FLOATS - 1);
    let out = &mut buffer[offset..offset + len];
    for (q, pair) in out.chunks_exact_mut(2 * k8).enumerate() {
        let (a, b) = (&x[2 * q * k..2 * q * k + k8], &x[(2 * q + 1) * k..(2 * q + 1) * k + k8]);
        for ((d, ca), cb) in pair.chunks_exact_mut(16).zip(a.chunks_exact(8)).zip(b.chunks_exact(8)) {
            d[..8].copy_from_slice(ca);
            d[8..].copy_from_slice(cb);
        }
    }
    out
}

/// A raw output pointer shared by tasks that write disjoint parts.
#[derive(Clone, Copy)]
struct SendPtr(*mut f32);
// SAFETY: used only for disjoint writes (see `matmul_t`).
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

impl SendPtr {
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// The AVX-512 tile: the AVX2 tile's arithmetic, two outputs per register. Lanes 0-7 of an
/// accumulator are output `(2q, c)`'s 8 lane sums and lanes 8-15 output `(2q + 1, c)`'s,
/// each lane the same chain of fused multiply-adds over `K` as the AVX2 tile's lane (a
/// weight row's 8 values broadcast to both halves, a packed row pair's 16), so each output
/// has the same bits as on the AVX2 and portable paths.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::avx2::{prefetch_ahead, weight_block, NextBlock, PF_TILES};
    use crate::lanes::hsum;

    /// Row pairs per tile (8 rows).
    const PAIRS: usize = 4;
    /// Columns per tile.
    const NC: usize = 4;

    /// Columns `n0..n1` of the first `m8` rows of `dst` (`[m, ldd]`).
    ///
    /// # Safety
    /// AVX-512 F and DQ, AVX2 and FMA must be available; `m8` is a multiple of 8; `xp`
    /// holds `x`'s first `m8` rows packed by [`super::pack_pairs`], `x` those rows of `k`
    /// elements, `w` at least `n1 * k` and `dst` `m8 * ldd` elements.
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn block(
        xp: *const f32,
        x: *const f32,
        w: *const f32,
        dst: *mut f32,
        m8: usize,
        n0: usize,
        n1: usize,
        ldd: usize,
        k: usize,
    ) {
        // The AVX2 tile's blocking; the first row group prefetches. With blocks, the
        // later row groups' tiles prefetch the next block's weight rows into L2 among
        // them, so that memory is read while they compute (see [`NextBlock`]).
        let nb = weight_block(m8, k, NC);
        let pair = 2 * (k / 8 * 8);
        let mut nb0 = n0;
        while nb0 < n1 {
            let nb1 = (nb0 + nb).min(n1);
            let mut next = NextBlock::new(w.add(nb1 * k), m8 / 8, nb1 - nb0, (nb1 + nb).min(n1) - nb1, k, NC);
            let mut i = 0;
            while i < m8 {
                let mut j = nb0;
                while j < nb1 {
                    let nr = (nb1 - j).min(NC);
                    let ahead = next.take(i > 0);
                    let t = Tile {
                        xp: xp.add(i / 2 * pair),
                        x: x.add(i * k),
                        w: w.add(j * k),
                        dst: dst.add(i * ldd + j),
                        k,
                        ldd,
                        ahead,
                    };
                    match nr {
                        NC if i == 0 && j + (PF_TILES + 1) * NC <= n1 => tile::<NC, true>(t),
                        NC => tile::<NC, false>(t),
                        3 => tile::<3, false>(t),
                        2 => tile::<2, false>(t),
                        _ => tile::<1, false>(t),
                    }
                    j += nr;
                }
                i += 2 * PAIRS;
            }
            nb0 = nb1;
        }
    }

    /// One tile of 8 rows.
    #[derive(Clone, Copy)]
    struct Tile {
        xp: *const f32,
        x: *const f32,
        w: *const f32,
        dst: *mut f32,
        k: usize,
        ldd: usize,
        /// The first of a number of cache lines to prefetch into L2, and that number
        /// ([`NextBlock::take`]).
        ahead: (*const i8, usize),
    }

    /// `dst[a, b] = dot(x row a, w row b)` for `a < 8`, `b < C`; `PF`: also prefetch the
    /// weight rows [`PF_TILES`] tiles ahead into L2 (see [`PF_TILES`]).
    ///
    /// # Safety
    /// As [`block`]: `t.xp` holds 4 packed row pairs, `t.x` 8 rows and `t.w` `C` rows (with
    /// `PF`, `(PF_TILES + 1) * C`) of `t.k` elements, `t.dst` 8 rows of at least `C`.
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    #[inline]
    unsafe fn tile<const C: usize, const PF: bool>(t: Tile) {
        let Tile { xp, x, w, dst, k, ldd, ahead: (ahead, ahead_lines) } = t;
        let k8 = k / 8 * 8;
        let pair = 2 * k8;
        let steps = k8 / 8;
        let mut acc = [[_mm512_setzero_ps(); C]; PAIRS];
        let mut p = 0;
        while p < k8 {
            prefetch_ahead(ahead, ahead_lines, p / 8, steps);
            let mut wv = [_mm512_setzero_ps(); C];
            for (c, v) in wv.iter_mut().enumerate() {
                *v = _mm512_broadcast_f32x8(_mm256_loadu_ps(w.add(c * k + p)));
                if PF && p % 16 == 0 {
                    _mm_prefetch::<_MM_HINT_T1>(w.add((PF_TILES * C + c) * k + p) as *const i8);
                }
            }
            for (q, row) in acc.iter_mut().enumerate() {
                let xv = _mm512_loadu_ps(xp.add(q * pair + 2 * p));
                for (a, v) in row.iter_mut().zip(&wv) {
                    *a = _mm512_fmadd_ps(xv, *v, *a);
                }
            }
            p += 8;
        }
        if C == NC {
            // Two row pairs' 16 outputs at a time, reduced together in `hsum`'s order, put
            // in row order and stored a row's 4 columns at once; then the tail of `K`, if
            // any, added to each output as `with_tail` adds it.
            let order = _mm512_loadu_si512(ROW_ORDER.as_ptr().cast());
            for qq in (0..PAIRS).step_by(2) {
                let v = _mm512_permutexvar_ps(order, sums16(&acc[qq], &acc[qq + 1]));
                let r = dst.add(2 * qq * ldd);
                _mm_storeu_ps(r, _mm512_castps512_ps128(v));
                _mm_storeu_ps(r.add(ldd), _mm512_extractf32x4_ps::<1>(v));
                _mm_storeu_ps(r.add(2 * ldd), _mm512_extractf32x4_ps::<2>(v));
                _mm_storeu_ps(r.add(3 * ldd), _mm512_extractf32x4_ps::<3>(v));
            }
            if k8 < k {
                for r in 0..2 * PAIRS {
                    for c in 0..NC {
                        let d = dst.add(r * ldd + c);
                        *d = super::with_tail(*d, x.add(r * k), w.add(c * k), k8, k);
                    }
                }
            }
            return;
        }
        for (q, row) in acc.iter().enumerate() {
            for (c, a) in row.iter().enumerate() {
                let halves = [_mm512_castps512_ps256(*a), _mm512_extractf32x8_ps::<1>(*a)];
                for (h, half) in halves.into_iter().enumerate() {
                    let r = 2 * q + h;
                    *dst.add(r * ldd + c) = super::with_tail(hsum(half), x.add(r * k), w.add(c * k), k8, k);
                }
            }
        }
    }

    /// For lane `4 r + c` of [`sums16`]'s result in row order (row `r` of the two pairs,
    /// column `c`), the lane of [`sums16`] that holds it: `4 j + e` with `j = 2 (c % 2) +
    /// r % 2` and `e = 2 (r / 2) + c / 2` (see [`sums16`]).
    const ROW_ORDER: [i32; 16] = {
        let mut order = [0i32; 16];
        let mut lane = 0;
        while lane < 16 {
            let (r, c) = (lane / 4, lane % 4);
            order[lane] = (4 * (2 * (c % 2) + r % 2) + 2 * (r / 2) + c / 2) as i32;
            lane += 1;
        }
        order
    };

    /// The lane sums of the 16 outputs of two row pairs' accumulators `a` and `b` (each
    /// [`NC`] registers, one per column; lanes 0-7 of a register its pair's first row,
    /// lanes 8-15 the second), each summed as [`hsum`] sums 8 lanes: `l_i + l_(i+4)`, then
    /// `(s0 + s2) + (s1 + s3)`, so each has the bits of the one-output reduction. Lane
    /// `4j + e` of the result: `e` 0 and 1 from `a`, 2 and 3 from `b`; within those, row
    /// `j % 2` of the pair, column `j / 2` (`e` even) or `2 + j / 2` (odd).
    ///
    /// # Safety
    /// AVX-512 F must be available; `a` and `b` hold at least [`NC`] registers.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn sums16(a: &[__m512], b: &[__m512]) -> __m512 {
        let (ta, tb) = (pair_sums(a), pair_sums(b));
        _mm512_add_ps(_mm512_shuffle_ps::<0x88>(ta, tb), _mm512_shuffle_ps::<0xDD>(ta, tb))
    }

    /// One pair's 8 outputs from its [`NC`] registers `v`: quarter `j` of the result is
    /// `[s0 + s2, s1 + s3]` of output (row `j % 2`, column `j / 2`), then of (row `j % 2`,
    /// column `2 + j / 2`).
    ///
    /// # Safety
    /// As [`sums16`].
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn pair_sums(v: &[__m512]) -> __m512 {
        let (s01, s23) = (halves_added(v[0], v[1]), halves_added(v[2], v[3]));
        _mm512_add_ps(_mm512_shuffle_ps::<0x44>(s01, s23), _mm512_shuffle_ps::<0xEE>(s01, s23))
    }

    /// Quarter `j` of the result: `s_i = l_i + l_(i+4)` of output (row `j % 2`, column
    /// `j / 2`) of the registers `a` (column 0) and `b` (column 1).
    ///
    /// # Safety
    /// AVX-512 F must be available.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn halves_added(a: __m512, b: __m512) -> __m512 {
        _mm512_add_ps(_mm512_shuffle_f32x4::<0x88>(a, b), _mm512_shuffle_f32x4::<0xDD>(a, b))
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::NR;
    use crate::lanes::hsum;

    /// Rows of `x` per tile.
    const MR: usize = 4;
    /// How many tiles ahead weight rows are prefetched, into L2 (`_MM_HINT_T1`): that is
    /// `PF_TILES * C * K * 4` bytes ahead, 37-98 KiB at SmolLM2's K (576, 1536), more than
    /// an L1 holds (32 KiB on Zen 4), where the lines would be evicted before their use and
    /// push out `x`. Into L1 instead (T0), SmolLM2-135M on a 2-vCPU Zen 4 at 2 threads,
    /// 64 tokens, three alternating runs: batch 1 1.71-1.98 against 1.25-1.56 s, batch 32
    /// 6.09-8.40 against 5.72-6.34 s.
    pub(super) const PF_TILES: usize = 4;
    /// Bytes of weight rows kept in L2 while `x` passes over them, one tile's rows at a time.
    const W_BLOCK_BYTES: usize = 192 << 10;
    /// Largest `x` (bytes) that meets one tile of weight rows at a time; a larger `x` meets
    /// blocks of [`W_BLOCK_BYTES`], one tile's rows at a time. (Up to 256 KiB, which kept
    /// decoding's whole `x` in L2 and read it from there once per tile, was slower at 27 to
    /// 64 rows: SmolLM2-135M's shapes on the Intel Xeon box of docs/history.md, weights
    /// from memory, 2 threads, best of three alternating runs: 1.06-1.22x on the LM head
    /// and gate and up projections with the AVX-512 tile, 1.05-1.09x at 32 rows with the
    /// AVX2 tile alone; the other projections, and 4 or 8 rows, within the noise.)
    const X_IN_L1_BYTES: usize = 32 << 10;

    /// Weight rows per block for `m` rows of `x` of `k` elements and tiles `cols` weight rows
    /// wide: one tile when all of `x` fits in L1 (it meets all of `x`), else a multiple of
    /// `cols` filling about [`W_BLOCK_BYTES`] (held in L2 while one tile's rows of `x`, in
    /// L1, pass over it).
    pub(super) fn weight_block(m: usize, k: usize, cols: usize) -> usize {
        if 4 * m * k <= X_IN_L1_BYTES {
            cols
        } else {
            (W_BLOCK_BYTES / (4 * k.max(1))).max(cols) / cols * cols
        }
    }

    /// The next weight block's cache lines, shared out among the tiles of the row groups
    /// after the first while they compute from L2 on the current block. The first group
    /// reads its block from memory, so before, memory sat idle while the later groups
    /// computed; now it fills the next block meanwhile. (SmolLM2-135M's shapes at 32 rows,
    /// weights from memory, AVX-512 tile, 2 threads on the Intel Xeon box of
    /// docs/history.md, 7 alternating rounds: time with/without 0.88 on the LM head,
    /// 0.90 on gate and up, 0.91 on 576 x 576, 0.96 on k and v, 0.99 on down.) Nothing
    /// without a later group, where nothing computes while memory is read.
    pub(super) struct NextBlock {
        start: *const i8,
        /// Lines per tile: the block's lines over the later groups' tiles, at most two per
        /// step of 8 along `K` ([`prefetch_ahead`]).
        per_tile: usize,
        total: usize,
        done: usize,
    }

    impl NextBlock {
        /// The block of `next_rows` weight rows from `start` (`k` each), after a block of
        /// `rows` met by `groups` row groups of tiles `cols` weight rows wide.
        pub(super) fn new(
            start: *const f32,
            groups: usize,
            rows: usize,
            next_rows: usize,
            k: usize,
            cols: usize,
        ) -> Self {
            let tiles = groups.saturating_sub(1) * rows.div_ceil(cols);
            let total =
                if tiles == 0 { 0 } else { (next_rows * k * std::mem::size_of::<f32>()).div_ceil(64) };
            let per_tile = if tiles == 0 { 0 } else { total.div_ceil(tiles).min(2 * (k / 8)) };
            Self { start: start as *const i8, per_tile, total, done: 0 }
        }

        /// The first line and the count for the next tile: none in the first group
        /// (`later` false).
        pub(super) fn take(&mut self, later: bool) -> (*const i8, usize) {
            let lines = if later { self.per_tile.min(self.total - self.done) } else { 0 };
            let first = self.start.wrapping_add(64 * self.done);
            self.done += lines;
            (first, lines)
        }
    }

    #[cfg(test)]
    #[test]
    fn next_block_is_handed_out_once_in_order_and_never_to_the_first_group() {
        let w = vec![0f32; 200 * 576];
        // 4 groups over a block of 84 rows, tiles 4 wide: 63 later tiles share the next
        // 84 rows' 3,024 lines, 48 each.
        let mut next = NextBlock::new(w.as_ptr(), 4, 84, 84, 576, 4);
        let mut at = w.as_ptr() as *const i8;
        let mut lines = 0;
        for group in 0..4 {
            for _ in 0..21 {
                let (first, n) = next.take(group > 0);
                assert!(group > 0 || n == 0, "the first group reads its own block");
                assert_eq!(first, at, "contiguous");
                at = at.wrapping_add(64 * n);
                lines += n;
            }
        }
        assert_eq!(lines, 84 * 576 * 4 / 64);
        // One group: nothing computes while memory is read, so nothing is prefetched.
        let mut one = NextBlock::new(w.as_ptr(), 1, 84, 84, 576, 4);
        assert_eq!(one.take(true).1, 0);
        // Capped at two lines a step along K (576 / 8 steps).
        let mut few = NextBlock::new(w.as_ptr(), 2, 4, 84, 576, 4);
        assert_eq!(few.take(true).1, 2 * 576 / 8);
    }

    /// At step `step` of a tile's `steps` along `K`, prefetches line `step` of the `lines`
    /// from `ahead` into L2, and line `step + steps` (at most two lines a step).
    ///
    /// # Safety
    /// None beyond the caller's: a prefetch does not fault, and the address is formed with
    /// wrapping arithmetic.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) unsafe fn prefetch_ahead(ahead: *const i8, lines: usize, step: usize, steps: usize) {
        if step < lines {
            _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(64 * step));
            if step + steps < lines {
                _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(64 * (step + steps)));
            }
        }
    }

    /// Columns `n0..n1` of `dst` (`[m, ldd]`).
    ///
    /// # Safety
    /// AVX2 and FMA must be available; `x` holds `m * k`, `w` at least `n1 * k` and
    /// `dst` `m * ldd` elements.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn block(
        x: *const f32,
        w: *const f32,
        dst: *mut f32,
        m: usize,
        n0: usize,
        n1: usize,
        ldd: usize,
        k: usize,
    ) {
        // When all of `x` fits in L1, one tile of weight rows at a time; else blocks of
        // weight rows held in L2 while one tile's rows of `x`, in L1, pass over them. Either
        // way the first row group reads each weight row from memory and prefetches the next
        // tiles' rows. (Cutting `K` into chunks that fit L1 was tried for large `M` and did
        // not pay: such products go to candle.)
        // With blocks, the later row groups prefetch the next block ([`NextBlock`]).
        let nb = weight_block(m, k, NR);
        {
            let mut nb0 = n0;
            while nb0 < n1 {
                let nb1 = (nb0 + nb).min(n1);
                let mut next = NextBlock::new(
                    w.add(nb1 * k),
                    m.div_ceil(MR),
                    nb1 - nb0,
                    (nb1 + nb).min(n1) - nb1,
                    k,
                    NR,
                );
                let mut i = 0;
                while i < m {
                    let mr = (m - i).min(MR);
                    let mut j = nb0;
                    while j < nb1 {
                        let nr = (nb1 - j).min(NR);
                        let ahead = next.take(i > 0);
                        let t = Tile {
                            x: x.add(i * k),
                            w: w.add(j * k),
                            dst: dst.add(i * ldd + j),
                            k,
                            ldd,
                            ahead,
                        };
                        if i == 0 && nr == NR && j + (PF_TILES + 1) * NR <= n1 {
                            // First use of these weight rows: fetch the next tile's meanwhile.
                            match mr {
                                4 => tile::<4, NR, true>(t),
                                3 => tile::<3, NR, true>(t),
                                2 => tile::<2, NR, true>(t),
                                _ => tile::<1, NR, true>(t),
                            }
                        } else {
                            match (mr, nr) {
                                (4, 3) => tile::<4, 3, false>(t),
                                (4, 2) => tile::<4, 2, false>(t),
                                (4, _) => tile::<4, 1, false>(t),
                                (3, 3) => tile::<3, 3, false>(t),
                                (3, 2) => tile::<3, 2, false>(t),
                                (3, _) => tile::<3, 1, false>(t),
                                (2, 3) => tile::<2, 3, false>(t),
                                (2, 2) => tile::<2, 2, false>(t),
                                (2, _) => tile::<2, 1, false>(t),
                                (_, 3) => tile::<1, 3, false>(t),
                                (_, 2) => tile::<1, 2, false>(t),
                                (_, _) => tile::<1, 1, false>(t),
                            }
                        }
                        j += nr;
                    }
                    i += mr;
                }
                nb0 = nb1;
            }
        }
    }

    /// One tile: rows of `x` and `w` of `k` elements, `dst` rows `ldd` apart.
    #[derive(Clone, Copy)]
    struct Tile {
        x: *const f32,
        w: *const f32,
        dst: *mut f32,
        k: usize,
        ldd: usize,
        /// The first of a number of cache lines to prefetch, and that number
        /// ([`NextBlock::take`]).
        ahead: (*const i8, usize),
    }

    /// `dst[a, b] = dot(x row a, w row b)` for `a < R`, `b < C`; `PF`: also prefetch
    /// the weight rows [`PF_TILES`] tiles ahead into L2 (see [`PF_TILES`]).
    ///
    /// # Safety
    /// AVX2 and FMA must be available; `t.x` holds `R` rows, `t.w` `C` rows (with `PF`,
    /// `(PF_TILES + 1) * C`) of `t.k` elements, and `t.dst` `R` rows of at least `C`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn tile<const R: usize, const C: usize, const PF: bool>(t: Tile) {
        let Tile { x, w, dst, k, ldd, ahead: (ahead, ahead_lines) } = t;
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        let k8 = k / 8 * 8;
        let mut p = 0;
        while p < k8 {
            prefetch_ahead(ahead, ahead_lines, p / 8, k8 / 8);
            let mut wv = [_mm256_setzero_ps(); C];
            for (c, v) in wv.iter_mut().enumerate() {
                *v = _mm256_loadu_ps(w.add(c * k + p));
                if PF && p % 16 == 0 {
                    _mm_prefetch::<_MM_HINT_T1>(w.add((PF_TILES * C + c) * k + p) as *const i8);
                }
            }
            for (r, row) in acc.iter_mut().enumerate() {
                let xv = _mm256_loadu_ps(x.add(r * k + p));
                for (a, v) in row.iter_mut().zip(&wv) {
                    *a = _mm256_fmadd_ps(xv, *v, *a);
                }
            }
            p += 8;
        }
        for (r, row) in acc.iter().enumerate() {
            for (c, a) in row.iter().enumerate() {
                *dst.add(r * ldd + c) = super::with_tail(hsum(*a), x.add(r * k), w.add(c * k), k8, k);
            }
        }
    }
}
