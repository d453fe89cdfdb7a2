use candle_core::{Device, Var, D};

use super::reference::masked_softmax;
use super::*;

/// Deterministic uniform values in `[-scale, scale)` (SplitMix64).
fn values(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            ((z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn tensor(dims: &[usize], seed: u64, scale: f64, dtype: DType) -> Tensor {
    let n = dims.iter().product();
    Tensor::from_vec(values(n, seed, scale), dims, &Device::Cpu).unwrap().to_dtype(dtype).unwrap()
}

/// Largest `|a - b|` relative to the largest `|b|` (1 when b is all zeros).
fn rel_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.dims(), b.dims());
    let a: Vec<f64> = a.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1().unwrap();
    let b: Vec<f64> = b.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1().unwrap();
    let scale = b.iter().fold(0f64, |m, v| m.max(v.abs())).max(1e-300);
    a.iter().zip(&b).fold(0f64, |m, (a, b)| m.max((a - b).abs())) / scale
}

/// An additive mask `[B, 1, T, Tk]`: causal, the first `pad[b]` keys of row b blocked
/// (left padding; whole query rows of padding are then fully blocked), like the model's
/// (mentor-policy blocks with -1e9).
fn mask(b: usize, t: usize, pad: &[usize], dtype: DType) -> Tensor {
    let mut m = vec![0f64; b * t * t];
    for bi in 0..b {
        for i in 0..t {
            for j in 0..t {
                if j > i || j < pad[bi] {
                    m[(bi * t + i) * t + j] = -1e9;
                }
            }
        }
    }
    Tensor::from_vec(m, (b, 1, t, t), &Device::Cpu).unwrap().to_dtype(dtype).unwrap()
}

fn composite_softmax(s: &Tensor, mask5: &Tensor, scale: f64) -> Tensor {
    candle_nn::ops::softmax(&(s * scale).unwrap().broadcast_add(mask5).unwrap(), D::Minus1).unwrap()
}

fn composite_rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Tensor {
    let half = x.dim(D::Minus1).unwrap() / 2;
    let (cos, sin) = (cos.unsqueeze(1).unwrap(), sin.unsqueeze(1).unwrap());
    let x1 = x.narrow(D::Minus1, 0, half).unwrap();
    let x2 = x.narrow(D::Minus1, half, half).unwrap();
    let r1 = (x1.broadcast_mul(&cos).unwrap() - x2.broadcast_mul(&sin).unwrap()).unwrap();
    let r2 = (x2.broadcast_mul(&cos).unwrap() + x1.broadcast_mul(&sin).unwrap()).unwrap();
    Tensor::cat(&[r1, r2], D::Minus1).unwrap()
}

/// `cos`/`sin` `[B, T, hd/2]` of per-row positions (row b starts at `-pad[b]`).
fn cos_sin(b: usize, t: usize, hd: usize, dtype: DType) -> (Tensor, Tensor) {
    let half = hd / 2;
    let mut f = vec![0f64; b * t * half];
    for bi in 0..b {
        for ti in 0..t {
            for j in 0..half {
                let inv = 10_000f64.powf(-(2.0 * j as f64) / hd as f64);
                f[(bi * t + ti) * half + j] = (ti as f64 - 2.0 * bi as f64).max(0.0) * inv;
            }
        }
    }
    let f = Tensor::from_vec(f, (b, t, half), &Device::Cpu).unwrap();
    (f.cos().unwrap().to_dtype(dtype).unwrap(), f.sin().unwrap().to_dtype(dtype).unwrap())
}

/// Gradients of `sum(op(args) * r)` with respect to each argument, `r` random.
fn grads(args: &[Tensor], op: impl Fn(&[Tensor]) -> Tensor, seed: u64) -> Vec<Tensor> {
    let vars: Vec<Var> = args.iter().map(|a| Var::from_tensor(a).unwrap()).collect();
    let ts: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
    let y = op(&ts);
    let r = tensor(y.dims(), seed, 1.0, y.dtype());
    let g = (y * r).unwrap().sum_all().unwrap().backward().unwrap();
    ts.iter().map(|t| g.get(t).expect("a gradient for every argument").clone()).collect()
}

const B: usize = 3;
const T: usize = 7;

#[test]
fn masked_softmax_matches_composite_forward_and_backward() {
    let pad = [0, 2, 5];
    for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
        // [B, kv_heads, n_rep, T, Tk] as in grouped-query attention.
        let s = tensor(&[B, 2, 2, T, T], 1, 4.0, dtype);
        let m = mask(B, T, &pad, dtype);
        let m5 = m.reshape((B, 1, 1, T, T)).unwrap();
        let scale = 0.25;
        let ours = masked_softmax(&s, &m5, scale).unwrap();
        let theirs = composite_softmax(&s, &m5, scale);
        assert!(rel_diff(&ours, &theirs) < tol, "{dtype:?}: {}", rel_diff(&ours, &theirs));
        // The grouped-query layout `[B, kv_heads, n_rep * T, Tk]` with the `[B, 1, T, Tk]` mask.
        let flat = masked_softmax(&s.reshape((B, 2, 2 * T, T)).unwrap(), &m, scale).unwrap();
        assert_eq!(rel_diff(&flat.reshape(ours.shape()).unwrap(), &ours), 0.0);
        // Blocked entries of a row with a visible key are exactly 0; a fully blocked
        // (padding) row stays a finite distribution.
        let v: Vec<f64> = ours.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(v[T - 1], 0.0);
        let pad_row = &v[(2 * 4 * T) * T..(2 * 4 * T + 1) * T];
        assert!(pad_row.iter().all(|p| p.is_finite() && *p > 0.0), "{pad_row:?}");
        assert!((pad_row.iter().sum::<f64>() - 1.0).abs() < tol, "{pad_row:?}");
    }
    let s = tensor(&[B, 2, 2, T, T], 2, 4.0, DType::F64);
    let m5 = mask(B, T, &pad, DType::F64).reshape((B, 1, 1, T, T)).unwrap();
    let ours = grads(std::slice::from_ref(&s), |a| masked_softmax(&a[0], &m5, 0.3).unwrap(), 3);
    let theirs = grads(&[s], |a| composite_softmax(&a[0], &m5, 0.3), 3);
    let d = rel_diff(&ours[0], &theirs[0]);
    assert!(d < 1e-12, "gradient differs by {d}");
    assert!(ours[0].abs().unwrap().sum_all().unwrap().to_scalar::<f64>().unwrap() > 0.0);
}

#[test]
fn rms_norm_matches_composite_forward_and_backward() {
    for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
        let x = tensor(&[B, T, 16], 4, 3.0, dtype);
        let w = tensor(&[16], 5, 1.5, dtype);
        let ours = rms_norm(&x, &w, 1e-5).unwrap();
        let theirs = candle_nn::ops::rms_norm_slow(&x, &w, 1e-5).unwrap();
        assert!(rel_diff(&ours, &theirs) < tol, "{dtype:?}: {}", rel_diff(&ours, &theirs));
    }
    // A zero row (eps matters) among random ones, f64 gradients for x and w.
    let x = tensor(&[B, T, 16], 6, 3.0, DType::F64);
    let x = Tensor::cat(&[x, Tensor::zeros((B, 1, 16), DType::F64, &Device::Cpu).unwrap()], 1).unwrap();
    let w = tensor(&[16], 7, 1.5, DType::F64);
    let ours = grads(&[x.clone(), w.clone()], |a| rms_norm(&a[0], &a[1], 1e-5).unwrap(), 8);
    let theirs = grads(&[x, w], |a| candle_nn::ops::rms_norm_slow(&a[0], &a[1], 1e-5).unwrap(), 8);
    for (o, t) in ours.iter().zip(&theirs) {
        assert!(rel_diff(o, t) < 1e-12, "gradient differs by {}", rel_diff(o, t));
    }
}

#[test]
fn rope_matches_composite_on_strided_input_forward_and_backward() {
    let (h, hd) = (4, 8);
    for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
        // [B, T, H, hd] transposed to [B, H, T, hd], as the projections are.
        let x = tensor(&[B, T, h, hd], 9, 2.0, dtype).transpose(1, 2).unwrap();
        assert!(!x.is_contiguous());
        let (cos, sin) = cos_sin(B, T, hd, dtype);
        let ours = rope(&x, &cos, &sin).unwrap();
        let theirs = composite_rope(&x, &cos, &sin);
        assert!(rel_diff(&ours, &theirs) < tol, "{dtype:?}: {}", rel_diff(&ours, &theirs));
    }
    let x = tensor(&[B, T, h, hd], 10, 2.0, DType::F64);
    let (cos, sin) = cos_sin(B, T, hd, DType::F64);
    let ours =
        grads(std::slice::from_ref(&x), |a| rope(&a[0].transpose(1, 2).unwrap(), &cos, &sin).unwrap(), 11);
    let theirs = grads(&[x], |a| composite_rope(&a[0].transpose(1, 2).unwrap(), &cos, &sin), 11);
    assert!(rel_diff(&ours[0], &theirs[0]) < 1e-12, "gradient differs by {}", rel_diff(&ours[0], &theirs[0]));
}

/// Sampling runs these kernels in place of candle's fused `rms_norm` and `rope` (they are
/// split over the pool and read strided input): the same bits as candle's (`rope` in both
/// dtypes, `rms_norm` in f32, the one candle's runs in), at decode's one position per row
/// (where candle's run on one thread) and at a prompt's several, up to 32 rows and beyond.
#[test]
fn rms_norm_and_rope_equal_candles_fused_ops_bit_for_bit() {
    use crate::test_util::bits;
    for dtype in [DType::F32, DType::F64] {
        for (b, t) in [(32, 1), (3, 1), (40, 1), (2, 5)] {
            let x = crate::test_util::tensor(&[b, t, 24], 12, 3.0, dtype);
            let w = crate::test_util::tensor(&[24], 13, 1.5, dtype);
            // candle's fused `rms_norm` has no f64 kernel.
            if dtype == DType::F32 {
                let ours = rms_norm(&x, &w, 1e-5).unwrap();
                let theirs = candle_nn::ops::rms_norm(&x, &w, 1e-5).unwrap();
                assert_eq!(bits(&ours), bits(&theirs), "rms_norm {dtype:?} {b} x {t}");
            }
            let (h, hd) = (3, 8);
            let x = crate::test_util::tensor(&[b, t, h, hd], 14, 2.0, dtype).transpose(1, 2).unwrap();
            let (cos, sin) = cos_sin(b, t, hd, dtype);
            let ours = rope(&x, &cos, &sin).unwrap();
            let theirs = candle_nn::rotary_emb::rope(&x.contiguous().unwrap(), &cos, &sin).unwrap();
            assert_eq!(bits(&ours), bits(&theirs), "rope {dtype:?} {b} x {t}");
        }
    }
}

#[test]
fn swiglu_matches_composite_forward_and_backward() {
    // More elements than one rayon chunk, so chunk offsets are exercised.
    let dims = [3, 50, 70];
    for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
        let a = tensor(&dims, 12, 6.0, dtype);
        let b = tensor(&dims, 13, 2.0, dtype);
        let ours = swiglu(&a, &b).unwrap();
        let theirs = (a.silu().unwrap() * &b).unwrap();
        assert!(rel_diff(&ours, &theirs) < tol, "{dtype:?}: {}", rel_diff(&ours, &theirs));
    }
    let a = tensor(&dims, 14, 6.0, DType::F64);
    let b = tensor(&dims, 15, 2.0, DType::F64);
    let ours = grads(&[a.clone(), b.clone()], |x| swiglu(&x[0], &x[1]).unwrap(), 16);
    let theirs = grads(&[a, b], |x| (x[0].silu().unwrap() * &x[1]).unwrap(), 16);
    for (o, t) in ours.iter().zip(&theirs) {
        assert!(rel_diff(o, t) < 1e-12, "gradient differs by {}", rel_diff(o, t));
    }
}

#[test]
fn other_dtypes_and_bad_shapes_are_errors() {
    let x = tensor(&[2, 4], 17, 1.0, DType::BF16);
    let w = tensor(&[4], 18, 1.0, DType::BF16);
    assert!(!supported(&x));
    assert!(rms_norm(&x, &w, 1e-5).is_err());
    let x = tensor(&[2, 4], 17, 1.0, DType::F32);
    assert!(supported(&x));
    assert!(rms_norm(&x, &tensor(&[3], 18, 1.0, DType::F32), 1e-5).is_err());
    assert!(swiglu(&x, &tensor(&[4, 2], 19, 1.0, DType::F32)).is_err());
    let s = tensor(&[2, 1, 3, 3], 20, 1.0, DType::F32);
    assert!(masked_softmax(&s, &tensor(&[2, 1, 3, 4], 21, 1.0, DType::F32), 1.0).is_err());
    assert!(masked_softmax(&s, &tensor(&[2, 1, 2, 3], 21, 1.0, DType::F32), 1.0).is_err());
    let (cos, sin) = cos_sin(2, 3, 4, DType::F32);
    assert!(rope(&tensor(&[2, 1, 3, 6], 22, 1.0, DType::F32), &cos, &sin).is_err());
}

#[test]
fn token_entropy_matches_the_definition() {
    // Uniform over 4 classes: ln 4. One certain class: 0. A hand case: p = softmax([0, ln 3])
    // = [1/4, 3/4], H = -(1/4 ln 1/4 + 3/4 ln 3/4).
    let rows = [0.0f32, 0.0, 0.0, 0.0, 0.0, -200.0, -200.0, -200.0, 0.0, 3f32.ln(), -1e30, -1e30];
    let logits = Tensor::from_vec(rows.to_vec(), (3, 4), &Device::Cpu).unwrap();
    let h = token_entropy(&logits).unwrap().to_vec1::<f32>().unwrap();
    let hand = -(0.25f64 * 0.25f64.ln() + 0.75 * 0.75f64.ln());
    assert!((h[0] as f64 - 4f64.ln()).abs() < 1e-6, "{h:?}");
    assert!(h[1].abs() < 1e-6, "{h:?}");
    assert!((h[2] as f64 - hand).abs() < 1e-6, "{h:?}");
    // Against candle-nn's softmax on random logits, f64, batched [2, 3, V].
    let x = Tensor::from_vec(values(2 * 3 * 50, 7, 6.0), (2, 3, 50), &Device::Cpu).unwrap();
    let p = candle_nn::ops::softmax_last_dim(&x).unwrap();
    let want = (p.clone() * p.log().unwrap()).unwrap().sum(D::Minus1).unwrap().neg().unwrap();
    let got = token_entropy(&x).unwrap();
    assert_eq!(got.dims(), &[2, 3]);
    let diff = (got - want).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
    assert!(diff < 1e-12, "{diff}");
}

// ---------------------------------------------------------------------------------------
// The per-kernel timing table (a report, not a check of speed: run it with
// `cargo test --release -p mentor-kernels --lib kernel_timing -- --ignored --nocapture`;
// the LM head's row, which needs the policy's head node, is mentor-policy's `head_timing`).

use std::time::Instant;

/// Milliseconds of one forward + backward of `op` on `args` (as trainable variables), best of 5
/// rounds of `reps`.
fn time_op(
    args: &[Tensor],
    reps: usize,
    op: &dyn Fn(&[Tensor]) -> candle_core::Result<Tensor>,
) -> candle_core::Result<f64> {
    let vars: Vec<Var> = args.iter().map(Var::from_tensor).collect::<candle_core::Result<_>>()?;
    let ts: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..reps {
            let g = op(&ts)?.sum_all()?.backward()?;
            std::hint::black_box(&g);
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e3 / reps as f64);
    }
    Ok(best)
}

/// The model dims the table runs at.
struct Dims {
    hidden: usize,
    heads: usize,
    hd: usize,
    inter: usize,
    layers: usize,
}

/// Fused kernels against the composite ops they replace, on the shapes of mentor-policy's
/// `benches/train_step.rs` workload: each pair must agree (forward), and the table gives
/// milliseconds of forward + backward per training step.
fn kernel_table(b: usize, t: usize, d: &Dims) -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let Dims { hidden, heads, hd, inter, layers } = *d;
    let scores = Tensor::randn(0f32, 1., (b, heads, t, t), &dev)?;
    let mut m = vec![0f32; b * t * t];
    for (i, v) in m.iter_mut().enumerate() {
        if i % t > (i / t) % t {
            *v = -1e9;
        }
    }
    let mask = Tensor::from_vec(m, (b, 1, t, t), &dev)?;
    let x = Tensor::randn(0f32, 1., (b, t, hidden), &dev)?;
    let w = Tensor::randn(1f32, 0.1, hidden, &dev)?;
    let q = Tensor::randn(0f32, 1., (b, t, heads, hd), &dev)?;
    let f = Tensor::randn(0f32, 1., (b, t, hd / 2), &dev)?;
    let (cos, sin) = (f.cos()?, f.sin()?);
    let gate = Tensor::randn(0f32, 1., (b, t, inter), &dev)?;
    let up = Tensor::randn(0f32, 1., (b, t, inter), &dev)?;
    let scale = 1.0 / (hd as f64).sqrt();
    let mask5 = mask.reshape((b, 1, t, t))?;
    let rope_composite = |x: &Tensor| -> candle_core::Result<Tensor> {
        let half = hd / 2;
        let (cos, sin) = (cos.unsqueeze(1)?, sin.unsqueeze(1)?);
        let x1 = x.narrow(D::Minus1, 0, half)?;
        let x2 = x.narrow(D::Minus1, half, half)?;
        let r1 = (x1.broadcast_mul(&cos)? - x2.broadcast_mul(&sin)?)?;
        let r2 = (x2.broadcast_mul(&cos)? + x1.broadcast_mul(&sin)?)?;
        Tensor::cat(&[r1, r2], D::Minus1)
    };
    type Op<'a> = Box<dyn Fn(&[Tensor]) -> candle_core::Result<Tensor> + 'a>;
    let rows: Vec<(&str, usize, Vec<Tensor>, Op, Op)> = vec![
        (
            "masked softmax",
            layers,
            vec![scores],
            Box::new(|a| candle_nn::ops::softmax(&(&a[0] * scale)?.broadcast_add(&mask5)?, D::Minus1)),
            Box::new(|a| masked_softmax(&a[0], &mask, scale)),
        ),
        (
            "rms norm",
            2 * layers + 1,
            vec![x, w],
            Box::new(|a| candle_nn::ops::rms_norm_slow(&a[0], &a[1], 1e-5)),
            Box::new(|a| rms_norm(&a[0], &a[1], 1e-5)),
        ),
        (
            "rope",
            2 * layers,
            vec![q],
            Box::new(|a| rope_composite(&a[0].transpose(1, 2)?)),
            Box::new(|a| rope(&a[0].transpose(1, 2)?, &cos, &sin)),
        ),
        (
            "swiglu",
            layers,
            vec![gate, up],
            Box::new(|a| a[0].silu()? * &a[1]),
            Box::new(|a| swiglu(&a[0], &a[1])),
        ),
    ];
    println!("kernel (forward + backward)   calls/step   composite ms/step   fused ms/step");
    for (name, calls, args, composite, fused) in rows {
        let diff = (composite(&args)? - fused(&args)?)?.abs()?.max_all()?.to_scalar::<f32>()?;
        assert!(diff < 1e-4, "{name}: fused and composite differ by {diff}");
        let a = time_op(&args, 3, &composite)? * calls as f64;
        let f = time_op(&args, 3, &fused)? * calls as f64;
        println!("{name:<30}{calls:>10}{a:>20.1}{f:>16.1}");
    }
    Ok(())
}

#[test]
#[ignore = "a timing report: run with --release -- --ignored --nocapture"]
fn kernel_timing_against_composite_ops() {
    // mentor-policy's `benches/train_step.rs` tiny model (`Config::tiny(0, 64, 3, 4, 4)` with
    // an intermediate size of 170) and batch: 64 rows, ~80-token completions.
    kernel_table(64, 91, &Dims { hidden: 64, heads: 4, hd: 16, inter: 170, layers: 3 }).unwrap();
}
