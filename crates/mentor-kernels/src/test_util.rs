//! Helpers the unit tests of this crate and of mentor-policy share (the `test-util` feature
//! exports them to the policy's tests; no library code uses them).

use candle_core::{DType, Device, Tensor};

/// Deterministic values in `[-scale, scale)` (xorshift64 from `seed`), as `dtype`.
pub fn tensor(dims: &[usize], seed: u64, scale: f64, dtype: DType) -> Tensor {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let n = dims.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect();
    Tensor::from_vec(v, dims, &Device::Cpu).unwrap().to_dtype(dtype).unwrap()
}

/// Each element's bits (an `f32`'s widened), for bit-for-bit comparisons.
pub fn bits(t: &Tensor) -> Vec<u64> {
    let t = t.flatten_all().unwrap().contiguous().unwrap();
    match t.dtype() {
        DType::F32 => t.to_vec1::<f32>().unwrap().iter().map(|x| x.to_bits() as u64).collect(),
        _ => t.to_vec1::<f64>().unwrap().iter().map(|x| x.to_bits()).collect(),
    }
}
