//! Loading a local GGUF file: dequantised weights under HF names, config, tokenizer and chat
//! template, all from the one file.
//!
//! llama.cpp's converter permutes the rows of `attn_q` / `attn_k` for its interleaved RoPE;
//! the model here uses HF's rotate-half RoPE, so those rows are permuted back
//! ([`unpermute_rows`]). Without it logits are wrong by up to ~36 on SmolLM2 (measured in the
//! candle-policy spike). The tokenizer is rebuilt from `tokenizer.ggml.*` because candle's own
//! GGUF helper adds a leading space for SmolLM2's `smollm` pre-tokenizer.
//!
//! Supported: `general.architecture` `llama` and `qwen2`, BPE (`gpt2`) vocabularies with the
//! `smollm` or `default`/`gpt2` pre-tokenizer. Anything else is an [`Error::Gguf`], never a
//! silent approximation.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::{DType, Device, Tensor};
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::AddedToken;

use crate::config::{Config, RopeScaling, TokenIds};
use crate::error::{Error, Result};
use crate::model_files::ModelFiles;
use crate::tokenizer::{SpecialTokens, Tokenizer};

struct Meta<'a> {
    ct: &'a Content,
}

impl Meta<'_> {
    fn get(&self, k: &str) -> Result<&Value> {
        self.ct.metadata.get(k).ok_or_else(|| Error::Gguf(format!("missing metadata `{k}`")))
    }
    fn usize(&self, k: &str) -> Result<usize> {
        let v = self.get(k)?;
        let n = v
            .to_u32()
            .map(u64::from)
            .or_else(|_| v.to_u64())
            .map_err(|e| Error::Gguf(format!("`{k}`: {e}")))?;
        usize::try_from(n).map_err(|_| Error::Gguf(format!("`{k}` out of range")))
    }
    fn f64(&self, k: &str) -> Result<f64> {
        let v = self.get(k)?;
        v.to_f32().map(f64::from).or_else(|_| v.to_f64()).map_err(|e| Error::Gguf(format!("`{k}`: {e}")))
    }
    fn opt_u32(&self, k: &str) -> Option<u32> {
        self.ct.metadata.get(k).and_then(|v| v.to_u32().ok())
    }
    fn str(&self, k: &str) -> Result<&str> {
        Ok(self.get(k)?.to_string().map_err(|e| Error::Gguf(format!("`{k}`: {e}")))?.as_str())
    }
    fn strings(&self, k: &str) -> Result<Vec<&str>> {
        let arr = self.get(k)?.to_vec().map_err(|e| Error::Gguf(format!("`{k}`: {e}")))?;
        arr.iter()
            .map(|v| v.to_string().map(String::as_str).map_err(|e| Error::Gguf(format!("`{k}`: {e}"))))
            .collect()
    }
}

/// Reads the model configuration from GGUF metadata.
pub fn config(ct: &Content) -> Result<Config> {
    let m = Meta { ct };
    let arch = m.str("general.architecture")?.to_string();
    if arch != "llama" && arch != "qwen2" {
        return Err(Error::Gguf(format!("architecture `{arch}` is not supported (llama, qwen2)")));
    }
    if ct.tensor_infos.contains_key("rope_freqs.weight") {
        return Err(Error::Gguf("per-frequency RoPE factors (rope_freqs.weight) are not supported".into()));
    }
    let k = |s: &str| format!("{arch}.{s}");
    let heads = m.usize(&k("attention.head_count"))?;
    let hidden = m.usize(&k("embedding_length"))?;
    let head_dim = match m.usize(&k("rope.dimension_count")) {
        Ok(d) if d != hidden / heads => Some(d),
        _ => None,
    };
    let rope_scaling = match ct.metadata.get(&k("rope.scaling.type")).and_then(|v| v.to_string().ok()) {
        None => None,
        Some(t) if t == "none" => None,
        Some(t) if t == "linear" => Some(RopeScaling {
            rope_type: Some("linear".into()),
            kind: None,
            factor: Some(m.f64(&k("rope.scaling.factor"))?),
            low_freq_factor: None,
            high_freq_factor: None,
            original_max_position_embeddings: None,
        }),
        Some(t) => return Err(Error::Gguf(format!("rope scaling `{t}` is not supported"))),
    };
    let vocab_size = m.get("tokenizer.ggml.tokens")?.to_vec().map_err(|e| Error::Gguf(e.to_string()))?.len();
    let cfg = Config {
        model_type: arch.clone(),
        vocab_size,
        hidden_size: hidden,
        intermediate_size: m.usize(&k("feed_forward_length"))?,
        num_hidden_layers: m.usize(&k("block_count"))?,
        num_attention_heads: heads,
        num_key_value_heads: Some(m.usize(&k("attention.head_count_kv")).unwrap_or(heads)),
        head_dim,
        rms_norm_eps: m.f64(&k("attention.layer_norm_rms_epsilon"))?,
        rope_theta: m.f64(&k("rope.freq_base")).unwrap_or(10_000.0),
        rope_scaling,
        max_position_embeddings: m.usize(&k("context_length")).unwrap_or(2048),
        tie_word_embeddings: !ct.tensor_infos.contains_key("output.weight"),
        attention_bias: arch == "llama" && ct.tensor_infos.contains_key("blk.0.attn_q.bias"),
        hidden_act: "silu".into(),
        bos_token_id: m.opt_u32("tokenizer.ggml.bos_token_id"),
        eos_token_id: m.opt_u32("tokenizer.ggml.eos_token_id").map(TokenIds::One),
        architectures: vec![if arch == "qwen2" { "Qwen2ForCausalLM" } else { "LlamaForCausalLM" }.into()],
    };
    cfg.validate()?;
    Ok(cfg)
}

/// GGUF tensor name to HF name; `None` for tensors the model does not use.
pub fn hf_name(gguf: &str) -> Option<String> {
    let fixed = match gguf {
        "token_embd.weight" => Some("model.embed_tokens.weight"),
        "output_norm.weight" => Some("model.norm.weight"),
        "output.weight" => Some("lm_head.weight"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some(f.to_string());
    }
    let (i, sub) = gguf.strip_prefix("blk.")?.split_once('.')?;
    let (base, kind) = sub.rsplit_once('.')?;
    let hf = match base {
        "attn_norm" => "input_layernorm",
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "ffn_norm" => "post_attention_layernorm",
        "ffn_gate" => "mlp.gate_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        _ => return None,
    };
    Some(format!("model.layers.{i}.{hf}.{kind}"))
}

/// Undoes llama.cpp's Q/K row permutation: within each head, rows were reordered from HF's
/// `[first half, second half]` to interleaved pairs. `w` is `[out, in]` or a bias `[out]`.
pub fn unpermute_rows(w: &Tensor, n_head: usize) -> Result<Tensor> {
    let dims = w.dims().to_vec();
    let out = dims[0];
    let inp = if dims.len() == 2 { dims[1] } else { 1 };
    if n_head == 0 || !out.is_multiple_of(2 * n_head) {
        return Err(Error::Gguf(format!("cannot un-permute {out} rows over {n_head} heads")));
    }
    let hd = out / n_head;
    Ok(w.reshape((n_head, hd / 2, 2, inp))?.transpose(1, 2)?.reshape(dims)?.contiguous()?)
}

/// Builds the tokenizer from `tokenizer.ggml.*` metadata.
pub fn tokenizer(ct: &Content) -> Result<Tokenizer> {
    let m = Meta { ct };
    let model = m.str("tokenizer.ggml.model")?;
    if model != "gpt2" {
        return Err(Error::Gguf(format!("tokenizer model `{model}` is not supported (gpt2 BPE only)")));
    }
    let pre = ct.metadata.get("tokenizer.ggml.pre").and_then(|v| v.to_string().ok()).map(String::as_str);
    let tokens = m.strings("tokenizer.ggml.tokens")?;
    let merges = m
        .strings("tokenizer.ggml.merges")?
        .into_iter()
        .map(|s| {
            s.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or_else(|| Error::Gguf(format!("malformed merge `{s}`")))
        })
        .collect::<Result<Vec<_>>>()?;
    let vocab: tokenizers::models::bpe::Vocab =
        tokens.iter().enumerate().map(|(i, t)| (t.to_string(), i as u32)).collect();
    let bpe = BPE::builder().vocab_and_merges(vocab, merges).build().map_err(Error::tokenizer)?;
    let mut inner = tokenizers::Tokenizer::new(bpe);
    // SmolLM2's tokenizer.json: Sequence[Digits(individual), ByteLevel(add_prefix_space=false)].
    let byte_level = ByteLevel::new(false, true, true);
    match pre {
        Some("smollm") => {
            inner.with_pre_tokenizer(Some(Sequence::new(vec![Digits::new(true).into(), byte_level.into()])));
        }
        None | Some("default") | Some("gpt2") => {
            inner.with_pre_tokenizer(Some(byte_level));
        }
        Some(other) => {
            return Err(Error::Gguf(format!(
                "pre-tokenizer `{other}` is not supported (smollm, gpt2, default)"
            )));
        }
    }
    inner.with_decoder(Some(ByteLevel::default()));
    let types = m.get("tokenizer.ggml.token_type")?.to_vec().map_err(|e| Error::Gguf(e.to_string()))?;
    // llama.cpp token types: 3 = control, 4 = user-defined. Both match as whole special tokens.
    let specials: Vec<AddedToken> = types
        .iter()
        .zip(&tokens)
        .filter(|(t, _)| matches!(t.to_i32(), Ok(3) | Ok(4)))
        .map(|(_, tok)| AddedToken::from(tok.to_string(), true))
        .collect();
    inner.add_special_tokens(specials).map_err(Error::tokenizer)?;
    let name = |k: &str| m.opt_u32(k).and_then(|i| tokens.get(i as usize)).map(|s| s.to_string());
    let special = SpecialTokens {
        bos: name("tokenizer.ggml.bos_token_id"),
        eos: name("tokenizer.ggml.eos_token_id"),
        pad: name("tokenizer.ggml.padding_token_id"),
    };
    let stop: Vec<u32> = m.opt_u32("tokenizer.ggml.eos_token_id").into_iter().collect();
    Ok(Tokenizer::new(inner, special, stop))
}

/// Loads a GGUF file: every tensor dequantised to `dtype` on `device`.
pub fn load(path: &Path, dtype: DType, device: &Device) -> Result<ModelFiles> {
    let mut f = File::open(path).map_err(Error::io("open", path))?;
    let ct = Content::read(&mut f).map_err(|e| Error::Gguf(format!("{}: {e}", path.display())))?;
    let config = config(&ct)?;
    let permuted = config.model_type == "llama";
    let mut names: Vec<&String> = ct.tensor_infos.keys().collect();
    names.sort();
    let mut weights = HashMap::new();
    for name in names {
        let Some(hf) = hf_name(name) else { continue };
        let q = ct.tensor(&mut f, name, device).map_err(|e| Error::Gguf(format!("tensor {name}: {e}")))?;
        let mut t = q.dequantize(device)?;
        if permuted && (name.contains(".attn_q.") || name.contains(".attn_k.")) {
            let heads =
                if name.contains(".attn_q.") { config.num_attention_heads } else { config.kv_heads() };
            t = unpermute_rows(&t, heads)?;
        }
        weights.insert(hf, t.to_dtype(dtype)?);
    }
    let tokenizer = tokenizer(&ct)?;
    let chat_template = ct.metadata.get("tokenizer.chat_template").and_then(|v| v.to_string().ok()).cloned();
    Ok(ModelFiles { config, weights, tokenizer, chat_template })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_hf() {
        assert_eq!(hf_name("blk.3.attn_q.weight").as_deref(), Some("model.layers.3.self_attn.q_proj.weight"));
        assert_eq!(hf_name("blk.0.attn_k.bias").as_deref(), Some("model.layers.0.self_attn.k_proj.bias"));
        assert_eq!(
            hf_name("blk.12.ffn_down.weight").as_deref(),
            Some("model.layers.12.mlp.down_proj.weight")
        );
        assert_eq!(hf_name("token_embd.weight").as_deref(), Some("model.embed_tokens.weight"));
        assert_eq!(hf_name("rope_freqs.weight"), None);
    }

    #[test]
    fn unpermute_inverts_llama_cpp_permutation() {
        // llama.cpp convert: w.reshape(n_head, 2, hd/2, in).swapaxes(1, 2).reshape(out, in).
        // For one head of hd = 4: HF rows [r0 r1 r2 r3] become [r0 r2 r1 r3].
        let hf = Tensor::arange(0f32, 16.0, &Device::Cpu).unwrap().reshape((8, 2)).unwrap();
        let permuted = hf.reshape((2, 2, 2, 2)).unwrap().transpose(1, 2).unwrap().reshape((8, 2)).unwrap();
        let back = unpermute_rows(&permuted, 2).unwrap();
        assert_eq!(back.to_vec2::<f32>().unwrap(), hf.to_vec2::<f32>().unwrap());
        let bias = Tensor::new(&[0f32, 2.0, 1.0, 3.0], &Device::Cpu).unwrap();
        assert_eq!(unpermute_rows(&bias, 1).unwrap().to_vec1::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);
    }
}
