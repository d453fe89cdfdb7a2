//! `mentor demo` gives the same bits whatever the kernel path, the thread count and the CPU:
//! a short demo (pretraining, a warm-up, two arms that both train) under forced paths and
//! thread counts, and against a committed golden hash.
//!
//! The golden hashes were printed by this test on the machine that wrote it (an AVX2 AMD EPYC,
//! 2 cores); the two trained arms' were printed again (on a 2-vCPU AVX-512 AMD EPYC, where the
//! old ones still held) when the GRPO update's backward came to run a layer at a time
//! (`mentor_policy::Stages`), which adds gradients in another order (at least a tied weight's:
//! its LM-head part goes into the micro-batches' sum before its embedding part). The machines this project is tested on change from session
//! to session: a machine whose CPU or C library changes the digits fails here, with the hashes
//! it got.

use std::path::Path;

use super::mentor;

/// The short demo's settings: levels 1 and 2 without ten columns, so that a 120-step
/// pretraining already solves some problems and both arms' GRPO steps move the weights.
const SETS: &[&str] = &[
    "curriculum.schedule=[{ level = 1, steps = 3 }, { level = 2, steps = 3 }]",
    "curriculum.ten_levels=[]",
    "curriculum.full_operand_levels=[]",
    "pretrain.steps=120",
    "pretrain.unhinted_levels=[1, 2]",
    "pretrain.hinted_levels=[2]",
    "eval.problems=40",
    "eval.every=3",
    "eval.levels=[2]",
];

/// The files whose bytes must not change, in the order of [`GOLDEN`].
const FILES: &[&str] = &[
    "pretrained-p0/model.safetensors",
    "vanilla-p0-s0/final/model.safetensors",
    "mentor-p0-s0/final/model.safetensors",
    "report/summary.json",
];

/// The first 16 hex digits of each file's SHA-256, from the machine that wrote this test.
const GOLDEN: &[&str] = &["f6ac925e9a56b577", "0bf739d858ddd49e", "e7aea9e7f64f29b6", "92f298c36bc620a9"];

fn sha16(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    format!("{:x}", Sha256::digest(&bytes))[..16].to_string()
}

/// Runs the short demo with `--threads threads --kernels kernels`; the hashes of [`FILES`].
fn demo(dir: &Path, threads: &str, kernels: &str) -> Vec<String> {
    let mut cmd = mentor();
    cmd.args([
        "--threads",
        threads,
        "--kernels",
        kernels,
        "demo",
        "--seeds",
        "0",
        "--arms",
        "vanilla,mentor",
        "--out",
    ])
    .arg(dir);
    for s in SETS {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().expect("running mentor demo");
    assert!(out.status.success(), "mentor demo failed:\n{}", String::from_utf8_lossy(&out.stderr));
    FILES.iter().map(|f| sha16(&dir.join(f))).collect()
}

#[test]
fn the_demo_gives_the_same_bits_on_every_path_thread_count_and_machine() {
    let root = tempfile::tempdir().expect("tempdir");
    let avx2 = std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
    let reference = demo(&root.path().join("portable-1"), "1", "portable");
    // Both arms trained: their weights left the pretrained model's.
    assert_ne!(reference[1], reference[0], "vanilla did not train: the check would be vacuous");
    assert_ne!(reference[2], reference[0], "mentor did not train: the check would be vacuous");
    if avx2 {
        let got = demo(&root.path().join("avx2-2"), "2", "avx2");
        assert_eq!(got, reference, "AVX2 at 2 threads vs portable at 1 thread ({FILES:?})");
    } else {
        eprintln!("this CPU lacks AVX2/FMA: only the portable path runs");
    }
    assert_eq!(
        reference, GOLDEN,
        "this machine's demo digits differ from the committed ones ({FILES:?}); the demo is not reproducible here"
    );
}
