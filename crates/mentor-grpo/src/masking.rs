//! Completion-mask helpers: TRL's `mask_truncated_completions`.

use candle_core::Tensor;

use crate::error::{Error, Result};

/// Zero the mask rows of truncated completions (`truncated[i]` true), so they contribute
/// nothing to the loss or the token counts. `mask` is `[batch, seq]`; the result has its dtype.
pub fn mask_truncated(mask: &Tensor, truncated: &[bool]) -> Result<Tensor> {
    let (b, _) = mask.dims2()?;
    if truncated.len() != b {
        return Err(Error::shape("truncated", b, truncated.len()));
    }
    let keep: Vec<f64> = truncated.iter().map(|t| if *t { 0.0 } else { 1.0 }).collect();
    let keep = Tensor::from_vec(keep, (b, 1), mask.device())?.to_dtype(mask.dtype())?;
    Ok(mask.broadcast_mul(&keep)?)
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::*;

    #[test]
    fn truncated_rows_become_all_zero() {
        let m = Tensor::new(&[[1f32, 1., 0.], [1., 1., 1.]], &Device::Cpu).unwrap();
        let out = mask_truncated(&m, &[false, true]).unwrap();
        assert_eq!(out.to_vec2::<f32>().unwrap(), vec![vec![1., 1., 0.], vec![0., 0., 0.]]);
        assert!(mask_truncated(&m, &[true]).is_err());
    }
}
