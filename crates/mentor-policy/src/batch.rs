//! Padding, positions and attention masks for ragged batches.
//!
//! Rows of a batch have different lengths. They are padded (left for prompts, so every row's
//! next token is in the last column), each row gets its own RoPE positions (`0..len` over its
//! real tokens), and pad keys are blocked with a large *finite* negative additive mask: a query
//! row that sees only pads then gets a uniform, NaN-free softmax whose output is ignored.

use candle_core::{DType, Device, Tensor};

use crate::error::{Error, Result};

/// The additive value that blocks attention. Finite on purpose (see the module docs).
pub const MASKED: f32 = -1e9;

/// Additive attention mask `[B, 1, T, Tk]`: query `i` of the last `T` positions may attend key
/// `j` when `j <= Tk - T + i` (causal) and `key_valid[b][j]` (not padding).
pub fn attention_mask(key_valid: &[Vec<bool>], t: usize, dtype: DType, device: &Device) -> Result<Tensor> {
    let b = key_valid.len();
    let tk = key_valid.first().map(Vec::len).unwrap_or(0);
    if key_valid.iter().any(|r| r.len() != tk) || t > tk {
        return Err(Error::InvalidRequest("ragged key-validity rows or query longer than keys".into()));
    }
    let past = tk - t;
    let mut m = vec![0f32; b * t * tk];
    for (bi, row) in key_valid.iter().enumerate() {
        for i in 0..t {
            for (j, valid) in row.iter().enumerate() {
                if j > past + i || !valid {
                    m[(bi * t + i) * tk + j] = MASKED;
                }
            }
        }
    }
    Ok(Tensor::from_vec(m, (b, 1, t, tk), device)?.to_dtype(dtype)?)
}

/// RoPE positions `[B, T]` for the next `T` columns: each row counts its valid tokens, starting
/// from `start[b]` (the number of valid tokens already in the cache). Pads repeat the position
/// of the next real token (their value is irrelevant: they are masked as keys).
pub fn positions(valid: &[Vec<bool>], start: &[usize], device: &Device) -> Result<Tensor> {
    let b = valid.len();
    let t = valid.first().map(Vec::len).unwrap_or(0);
    if start.len() != b || valid.iter().any(|r| r.len() != t) {
        return Err(Error::InvalidRequest("positions: ragged rows".into()));
    }
    let mut p = Vec::with_capacity(b * t);
    for (row, s) in valid.iter().zip(start) {
        let mut c = *s;
        for v in row {
            p.push(c as u32);
            if *v {
                c += 1;
            }
        }
    }
    Ok(Tensor::from_vec(p, (b, t), device)?)
}

/// Left-pads `rows` with `pad` to the longest row. Returns the flat ids (`B * T`), the
/// validity of each column and `T`.
pub fn left_pad<R: AsRef<[u32]>>(rows: &[R], pad: u32) -> (Vec<u32>, Vec<Vec<bool>>, usize) {
    let t = rows.iter().map(|r| r.as_ref().len()).max().unwrap_or(0);
    let mut ids = Vec::with_capacity(rows.len() * t);
    let mut valid = Vec::with_capacity(rows.len());
    for r in rows {
        let r = r.as_ref();
        let n = t - r.len();
        ids.extend(std::iter::repeat_n(pad, n));
        ids.extend_from_slice(r);
        valid.push((0..t).map(|i| i >= n).collect());
    }
    (ids, valid, t)
}

/// The distinct token rows in order of first appearance, and each row's index into them
/// (prompt deduplication for shared prefill and shared-prompt log-probs).
pub(crate) fn distinct_rows<'a>(rows: impl IntoIterator<Item = &'a [u32]>) -> (Vec<&'a [u32]>, Vec<usize>) {
    let mut index = std::collections::HashMap::new();
    let mut distinct = Vec::new();
    let of = rows
        .into_iter()
        .map(|r| {
            *index.entry(r).or_insert_with(|| {
                distinct.push(r);
                distinct.len() - 1
            })
        })
        .collect();
    (distinct, of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_is_causal_and_blocks_pads() {
        let valid = vec![vec![false, true, true], vec![true, true, true]];
        let m = attention_mask(&valid, 3, DType::F32, &Device::Cpu).unwrap();
        let m = m.squeeze(1).unwrap().to_vec3::<f32>().unwrap();
        assert_eq!(m[0][0], vec![MASKED, MASKED, MASKED]);
        assert_eq!(m[0][1], vec![MASKED, 0.0, MASKED]);
        assert_eq!(m[0][2], vec![MASKED, 0.0, 0.0]);
        assert_eq!(m[1][0], vec![0.0, MASKED, MASKED]);
        // Decoding one query against 4 keys: only padding blocks.
        let m = attention_mask(&[vec![false, true, true, true]], 1, DType::F32, &Device::Cpu).unwrap();
        assert_eq!(m.flatten_all().unwrap().to_vec1::<f32>().unwrap(), vec![MASKED, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn positions_count_valid_tokens_per_row() {
        let (ids, valid, t) = left_pad(&[vec![7, 8], vec![1, 2, 3, 4]], 0);
        assert_eq!((ids, t), (vec![0, 0, 7, 8, 1, 2, 3, 4], 4));
        let p = positions(&valid, &[0, 0], &Device::Cpu).unwrap().to_vec2::<u32>().unwrap();
        assert_eq!(p, vec![vec![0, 0, 0, 1], vec![0, 1, 2, 3]]);
        let p =
            positions(&[vec![true], vec![true]], &[2, 4], &Device::Cpu).unwrap().to_vec2::<u32>().unwrap();
        assert_eq!(p, vec![vec![2], vec![4]]);
    }
}
