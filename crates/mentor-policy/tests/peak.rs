//! `cargo xtask bench peak`'s measurement code (the `peak` example's `measure` module) on the
//! tiny model: every figure is measured and finite, the FLOP model is the one stated (the
//! update's products alone counted as the update), and the summary line has the fields the
//! bench promises.

#[path = "../benches/peak/measure.rs"]
#[allow(dead_code)]
mod measure;

#[test]
fn the_peak_bench_measures_every_figure_on_the_tiny_model() {
    let policy = measure::tiny_policy().unwrap();
    let sizes = measure::Sizes::tiny();
    let limits = measure::limits(2, &sizes).unwrap();
    assert_eq!(limits.kernel_shape, sizes.kernel);
    assert!(limits.kernel_1t.is_finite() && limits.kernel_1t > 0.0, "{limits:?}");
    assert!(limits.kernel_all.is_finite() && limits.kernel_all > 0.0, "{limits:?}");
    assert!(limits.kernel_apart.is_finite() && limits.kernel_apart > 0.0, "{limits:?}");
    assert!(
        limits.fma_avx2_all > 0.0 || !cfg!(target_arch = "x86_64") || !std::is_x86_feature_detected!("fma")
    );
    assert!(limits.read_gb_s > 0.0 && limits.copy_gb_s > 0.0);
    assert_eq!(limits.peak_gflops, limits.fma_avx2_all.max(limits.fma_avx512_all.unwrap_or(0.0)));
    // Layer weights as counted from the config: 2 layers of hidden 32, 4 heads of 8, 2 kv
    // heads, the MLP's intermediate size; the head is vocab × hidden.
    let c = policy.config();
    let (wl, wh) = measure::weights(&policy);
    let (h, i) = (c.hidden_size, c.intermediate_size);
    assert_eq!(wl, 2 * (h * 32 + 2 * h * 16 + 32 * h + 3 * h * i));
    assert_eq!(wh, c.vocab_size * h);
    let report = measure::measure(&policy, limits, &sizes).unwrap();
    let what: Vec<(&str, usize)> = report.figures.iter().map(|f| (f.what.as_str(), f.batch)).collect();
    assert_eq!(
        what,
        [
            ("decode", 1),
            ("decode", 8),
            ("decode", 32),
            ("decode", 64),
            ("decode products", 32),
            ("prefill", 4),
            ("update", 4),
            ("products", 4)
        ]
    );
    for f in &report.figures {
        assert!(f.seconds > 0.0 && f.tok_s.is_finite() && f.gflops.is_finite() && f.frac >= 0.0, "{f:?}");
        assert_eq!(f.gb_s.is_some(), f.what == "decode", "{f:?}");
    }
    // Prefill's FLOPs: 2 × layer weights per token, the head once per prompt.
    let p = &report.figures[5];
    assert_eq!(p.tokens, 64);
    let flops = 2.0 * (wl * 64 + wh * 4) as f64;
    assert!((p.gflops - flops / p.seconds / 1e9).abs() <= 1e-9 * p.gflops.max(1.0), "{p:?}");
    // Decode's products alone at batch 32: decode's FLOPs (2 × all weights per token) for
    // the tokens of a decode run after its first (6 new tokens: 5 steps of 32 rows).
    let d = &report.figures[4];
    assert_eq!(d.tokens, 32 * 5);
    let flops = 2.0 * ((wl + wh) * 32 * 5) as f64;
    assert!((d.gflops - flops / d.seconds / 1e9).abs() <= 1e-9 * d.gflops.max(1.0), "{d:?}");
    assert!(report.table().contains("Decode's matrix products alone at batch 32 reach"));
    // The update's products alone: the update's FLOPs (6 × layer weights per position but
    // the last, 6 × head weights per completion token; 16 = 4 prompt + 12 completion tokens).
    let (u, m) = (&report.figures[6], &report.figures[7]);
    let flops = 6.0 * (wl * 4 * 15 + wh * 4 * 12) as f64;
    for f in [u, m] {
        assert_eq!(f.tokens, 64);
        assert!((f.gflops - flops / f.seconds / 1e9).abs() <= 1e-9 * f.gflops.max(1.0), "{f:?}");
    }
    assert!(report.table().contains("The update's matrix products alone take"));
    assert!(report.table().contains("the small-batch product (32 × 40 times 24 × 40 transposed"));
    assert!(report.table().contains("The 2 threads each running their own products at once, nothing split"));
    let line = report.last_line();
    let keys: Vec<&str> = line.split(' ').map(|kv| kv.split('=').next().unwrap()).collect();
    assert_eq!(keys, ["peak_gflops", "decode32_frac", "prefill_frac", "update_frac", "decode1_bw_frac"]);
    assert!(report.table().contains("| decode | 32 |"));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["figures"].as_array().unwrap().len(), 8);
}
