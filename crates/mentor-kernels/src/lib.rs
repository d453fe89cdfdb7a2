//! The CPU tensor kernels behind mentor-policy: candle custom ops and the switches and pool
//! they run under. Only CPU `f32`/`f64` tensors take them; everything else goes to candle.
//!
//! - [`matmul`]: `x · Wᵀ` with the weight read as stored ([`matmul::matmul_t`],
//!   [`matmul::linear`]) and the batched `a · bᵀ` ([`matmul::bmm_t`]), whose sum for each
//!   output is taken in one fixed order: AVX2 + FMA tiles, an AVX-512 tile that keeps their
//!   bits, and a portable path that replays them operation by operation. Differentiable.
//! - [`ops`]: fused ops with a fused backward (RMSNorm, RoPE, SwiGLU, the masked softmax's row
//!   and gradient, the targets' log-probs, entropy), and [`probs`]: attention's product and
//!   masked softmax as one node.
//! - [`vexp`]: `exp` and `ln` without libm, the same bits on every CPU and C library
//!   ([`lanes`]: the 8-lane sum the vector kernels share).
//! - The process-wide switches every kernel reads: the code path ([`KernelPath`],
//!   [`set_kernel_path`]) and the fixed-order mode ([`set_deterministic`]).
//! - The worker pool: [`set_threads`] sizes rayon's global pool, [`on_pool`] runs work on one
//!   of its threads so that the kernels split it without a hand-over per product.
//!
//! **Invariants.** Every path gives the same bits (forcing one is how the tests check it);
//! in the fixed-order mode results depend on neither the CPU's features, its cache sizes, the
//! thread count nor the rows around a row. This crate depends on no other mentor crate, reads
//! no environment variable and prints nothing.
//!
//! ```
//! use candle_core::{Device, Tensor};
//! use mentor_kernels::{matmul::matmul_t, on_pool, set_deterministic};
//!
//! set_deterministic(true); // every sum in one fixed order, on any CPU
//! let x = Tensor::new(&[[1f32, 2., 3.], [4., 5., 6.]], &Device::Cpu)?;
//! let w = Tensor::new(&[[1f32, 0., 1.]], &Device::Cpu)?;
//! let y = on_pool(|| matmul_t(&x, &w))?; // x · wᵀ: [2, 1]
//! assert_eq!(y.to_vec2::<f32>()?, [[4.], [10.]]);
//! # set_deterministic(false);
//! # Ok::<(), candle_core::Error>(())
//! ```
#![deny(missing_docs)]

mod error;
pub mod lanes;
pub mod matmul;
pub mod ops;
mod paths;
pub mod probs;
#[cfg(any(test, feature = "test-util"))]
#[doc(hidden)]
pub mod test_util;
mod threads;
pub mod vexp;

pub use error::{Error, Result};
pub use paths::{deterministic, kernel_path, set_deterministic, set_kernel_path, KernelPath};
pub use threads::{current_threads, on_pool, set_threads, POOL_SPIN_LIMIT, POOL_SPIN_VAR, STACK_BYTES};

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
