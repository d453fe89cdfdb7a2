//! Which code path the crate's kernels take, and whether every reduction runs in a fixed order.
//!
//! Two process-wide switches, read by every kernel of the crate:
//!
//! - [`KernelPath`]: `Auto` (AVX-512 where the CPU has it, else AVX2 + FMA where it has
//!   those), `Avx512` and `Avx2` (that instruction set, an error on a CPU without it; `Avx2`
//!   keeps the AVX-512 tile off on a CPU that has it) or `Portable` (the scalar code every CPU
//!   runs). The portable kernels replay the vector kernels' arithmetic operation by operation
//!   (the same fused multiply-adds, in the same order), and the AVX-512 tile keeps the AVX2
//!   tile's lanes (two outputs' 8 lanes in one register), so every path gives the same bits;
//!   forcing one is how the tests check that.
//! - [`set_deterministic`]: with it on, every matmul of the model (linear layers and attention,
//!   forward and backward) runs the crate's own kernel, whose sum for each output is taken in
//!   one fixed order (8 lanes over `K`, then a fixed tree, then the tail) that depends on
//!   neither the CPU's features, its cache sizes, the thread count, nor the rows around it.
//!   Without it, large products go to candle's gemm, whose block size along `K` comes from
//!   the CPU's cache geometry: a weight gradient (a sum over every token of the batch) then
//!   rounds differently on two CPUs. The deterministic mode costs speed; the demo uses it,
//!   `mentor train` on real models does not by default.
//!
//! Set both once, before the first tensor op (they are read at every call, so a change
//! mid-computation mixes paths).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crate::error::{Error, Result};

/// Which kernels run: see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelPath {
    /// AVX-512 where the CPU has it, AVX2 + FMA where it has those, the portable code elsewhere.
    #[default]
    Auto,
    /// AVX2 + FMA only (the AVX-512 tile off); [`set_kernel_path`] fails on a CPU without them.
    Avx2,
    /// AVX-512 (F and DQ) with AVX2 + FMA; [`set_kernel_path`] fails on a CPU without them.
    Avx512,
    /// The portable scalar code, whatever the CPU.
    Portable,
}

impl KernelPath {
    /// The path's name as the CLI spells it (`auto`, `avx2`, `avx512`, `portable`).
    pub fn name(self) -> &'static str {
        match self {
            KernelPath::Auto => "auto",
            KernelPath::Avx2 => "avx2",
            KernelPath::Avx512 => "avx512",
            KernelPath::Portable => "portable",
        }
    }
}

impl std::str::FromStr for KernelPath {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(KernelPath::Auto),
            "avx2" => Ok(KernelPath::Avx2),
            "avx512" => Ok(KernelPath::Avx512),
            "portable" => Ok(KernelPath::Portable),
            other => Err(Error::InvalidRequest(format!(
                "unknown kernel path `{other}`: expected auto, avx2, avx512 or portable"
            ))),
        }
    }
}

static PATH: AtomicU8 = AtomicU8::new(0);
static DETERMINISTIC: AtomicBool = AtomicBool::new(false);

/// Chooses the kernels' code path for the process. `Avx2` fails on a CPU without AVX2 and FMA,
/// `Avx512` on one without AVX-512 F and DQ as well.
pub fn set_kernel_path(path: KernelPath) -> Result<()> {
    if path == KernelPath::Avx2 && !detected() {
        return Err(Error::InvalidRequest(
            "the AVX2 kernel path was asked for, but this CPU lacks AVX2 or FMA".into(),
        ));
    }
    if path == KernelPath::Avx512 && !detected_avx512() {
        return Err(Error::InvalidRequest(
            "the AVX-512 kernel path was asked for, but this CPU lacks AVX-512 F and DQ (or AVX2 and FMA)"
                .into(),
        ));
    }
    let code = match path {
        KernelPath::Auto => 0,
        KernelPath::Avx2 => 1,
        KernelPath::Portable => 2,
        KernelPath::Avx512 => 3,
    };
    PATH.store(code, Ordering::Relaxed);
    Ok(())
}

/// The code path set by [`set_kernel_path`] (`Auto` by default).
pub fn kernel_path() -> KernelPath {
    match PATH.load(Ordering::Relaxed) {
        1 => KernelPath::Avx2,
        2 => KernelPath::Portable,
        3 => KernelPath::Avx512,
        _ => KernelPath::Auto,
    }
}

/// Turns the fixed-order mode on or off for the process (see the module docs).
pub fn set_deterministic(on: bool) {
    DETERMINISTIC.store(on, Ordering::Relaxed);
}

/// Whether the fixed-order mode is on.
pub fn deterministic() -> bool {
    DETERMINISTIC.load(Ordering::Relaxed)
}

/// Whether this CPU has AVX2 and FMA (always false off x86-64).
pub(crate) fn detected() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU has AVX-512 F and DQ besides AVX2 and FMA (always false off x86-64).
pub(crate) fn detected_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        detected()
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU has FMA (for the portable code's scalar fused multiply-adds).
pub(crate) fn fma_detected() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the AVX2 kernels run: the CPU has them and the portable path is not forced.
pub(crate) fn use_avx2() -> bool {
    kernel_path() != KernelPath::Portable && detected()
}

/// Whether the AVX-512 tile runs: the CPU has it and neither `Avx2` nor `Portable` is forced.
pub(crate) fn use_avx512() -> bool {
    matches!(kernel_path(), KernelPath::Auto | KernelPath::Avx512) && detected_avx512()
}
