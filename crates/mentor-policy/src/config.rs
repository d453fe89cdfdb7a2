//! Model configuration in Hugging Face `config.json` form, validated once.
//!
//! [`Config`] deserialises straight from a Llama / SmolLM2 / Qwen2 `config.json` (unknown keys are
//! ignored) and serialises back to the same form, so a saved checkpoint is a valid HF directory.
//! [`Config::validate`] rejects what the model in [`crate::model`] does not implement (another
//! activation, an unknown RoPE scaling type) instead of silently running something else.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The architectures this crate implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Llama 2/3, SmolLM2, Mistral-style dense decoders (optional biases via `attention_bias`).
    Llama,
    /// Qwen2 / Qwen2.5: Llama layout plus biases on the q, k and v projections.
    Qwen2,
}

/// RoPE frequency scaling as written in `config.json` (`rope_scaling`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RopeScaling {
    /// `"llama3"`, `"linear"` or `"default"` (newer configs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_type: Option<String>,
    /// The same as `rope_type` in older configs.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Scaling factor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// Llama 3: low-frequency factor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_freq_factor: Option<f64>,
    /// Llama 3: high-frequency factor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_freq_factor: Option<f64>,
    /// Llama 3: context length the model was pretrained with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_max_position_embeddings: Option<usize>,
}

/// `eos_token_id` is a single id or a list in HF configs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TokenIds {
    /// One id.
    One(u32),
    /// Several ids.
    Many(Vec<u32>),
}

impl TokenIds {
    /// The ids as a list.
    pub fn to_vec(&self) -> Vec<u32> {
        match self {
            TokenIds::One(i) => vec![*i],
            TokenIds::Many(v) => v.clone(),
        }
    }
}

fn default_model_type() -> String {
    "llama".into()
}
fn default_rope_theta() -> f64 {
    10_000.0
}
fn default_eps() -> f64 {
    1e-6
}
fn default_max_pos() -> usize {
    2048
}
fn default_act() -> String {
    "silu".into()
}

/// A decoder-only model configuration (the subset of HF `config.json` the model reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// `"llama"` or `"qwen2"` (`"mistral"` without sliding window is read as Llama).
    #[serde(default = "default_model_type")]
    pub model_type: String,
    /// Vocabulary size (rows of the embedding).
    pub vocab_size: usize,
    /// Residual width.
    pub hidden_size: usize,
    /// MLP inner width.
    pub intermediate_size: usize,
    /// Number of decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads (GQA); defaults to `num_attention_heads`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_key_value_heads: Option<usize>,
    /// Per-head width; defaults to `hidden_size / num_attention_heads`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_dim: Option<usize>,
    /// RMSNorm epsilon.
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    /// RoPE base.
    #[serde(default = "default_rope_theta")]
    pub rope_theta: f64,
    /// Optional RoPE frequency scaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_scaling: Option<RopeScaling>,
    /// Longest position the model was trained for (informational; positions are not capped).
    #[serde(default = "default_max_pos")]
    pub max_position_embeddings: usize,
    /// Whether `lm_head` shares the embedding matrix.
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Llama: biases on q, k, v and o projections.
    #[serde(default)]
    pub attention_bias: bool,
    /// Must be `"silu"`.
    #[serde(default = "default_act")]
    pub hidden_act: String,
    /// Beginning-of-sequence id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bos_token_id: Option<u32>,
    /// End-of-sequence id(s): generation stops on any of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eos_token_id: Option<TokenIds>,
    /// HF architectures list, written back on save.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architectures: Vec<String>,
}

impl Config {
    /// Parses `config.json` text and validates it.
    pub fn from_json(text: &str) -> std::result::Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// A small Llama config for from-scratch models (tied embeddings, GQA when `kv_heads < heads`).
    pub fn tiny(vocab_size: usize, hidden: usize, layers: usize, heads: usize, kv_heads: usize) -> Self {
        Config {
            model_type: "llama".into(),
            vocab_size,
            hidden_size: hidden,
            intermediate_size: hidden * 8 / 3,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            num_key_value_heads: Some(kv_heads),
            head_dim: None,
            rms_norm_eps: 1e-5,
            rope_theta: 10_000.0,
            rope_scaling: None,
            max_position_embeddings: 2048,
            tie_word_embeddings: true,
            attention_bias: false,
            hidden_act: "silu".into(),
            bos_token_id: None,
            eos_token_id: None,
            architectures: vec!["LlamaForCausalLM".into()],
        }
    }

    /// The architecture family.
    pub fn family(&self) -> Result<Family> {
        match self.model_type.as_str() {
            "llama" | "mistral" => Ok(Family::Llama),
            "qwen2" => Ok(Family::Qwen2),
            other => {
                Err(Error::Config(format!("model_type `{other}` is not a supported Llama-family model")))
            }
        }
    }

    /// Key/value heads.
    pub fn kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    /// Per-head width.
    pub fn head_dim(&self) -> usize {
        self.head_dim.unwrap_or(self.hidden_size / self.num_attention_heads.max(1))
    }

    /// Whether q, k and v projections carry a bias.
    pub fn qkv_bias(&self) -> bool {
        self.attention_bias || self.model_type == "qwen2"
    }

    /// Whether the output projection carries a bias.
    pub fn o_bias(&self) -> bool {
        self.attention_bias
    }

    /// Checks that the configuration is one the model implements.
    pub fn validate(&self) -> Result<()> {
        self.family()?;
        let bad = |m: String| Err(Error::Config(m));
        if self.hidden_act != "silu" {
            return bad(format!("hidden_act `{}` (only silu is implemented)", self.hidden_act));
        }
        let (h, kv) = (self.num_attention_heads, self.kv_heads());
        if self.vocab_size == 0 || self.hidden_size == 0 || self.intermediate_size == 0 || h == 0 || kv == 0 {
            return bad("sizes and head counts must be positive".into());
        }
        if h % kv != 0 {
            return bad(format!("num_attention_heads {h} is not a multiple of num_key_value_heads {kv}"));
        }
        if !self.head_dim().is_multiple_of(2) || self.head_dim() == 0 {
            return bad(format!("head_dim {} must be even and positive", self.head_dim()));
        }
        self.inv_freq()?;
        Ok(())
    }

    /// RoPE inverse frequencies (length `head_dim / 2`), with `rope_scaling` applied.
    pub fn inv_freq(&self) -> Result<Vec<f32>> {
        let hd = self.head_dim();
        let base: Vec<f64> =
            (0..hd / 2).map(|i| 1.0 / self.rope_theta.powf(2.0 * i as f64 / hd as f64)).collect();
        let Some(s) = &self.rope_scaling else {
            return Ok(base.into_iter().map(|f| f as f32).collect());
        };
        let kind = s.rope_type.as_deref().or(s.kind.as_deref()).unwrap_or("default");
        let need = |v: Option<f64>, k: &str| {
            v.ok_or_else(|| Error::Config(format!("rope_scaling `{kind}` needs `{k}`")))
        };
        let out: Vec<f64> = match kind {
            "default" => base,
            "linear" => {
                let f = need(s.factor, "factor")?;
                base.into_iter().map(|x| x / f).collect()
            }
            "llama3" => {
                let factor = need(s.factor, "factor")?;
                let low = need(s.low_freq_factor, "low_freq_factor")?;
                let high = need(s.high_freq_factor, "high_freq_factor")?;
                let old = s.original_max_position_embeddings.ok_or_else(|| {
                    Error::Config("rope_scaling llama3 needs original_max_position_embeddings".into())
                })? as f64;
                let (low_wl, high_wl) = (old / low, old / high);
                base.into_iter()
                    .map(|f| {
                        let wl = 2.0 * std::f64::consts::PI / f;
                        if wl < high_wl {
                            f
                        } else if wl > low_wl {
                            f / factor
                        } else {
                            let smooth = (old / wl - low) / (high - low);
                            (1.0 - smooth) * f / factor + smooth * f
                        }
                    })
                    .collect()
            }
            other => return Err(Error::Config(format!("rope_scaling type `{other}` is not implemented"))),
        };
        Ok(out.into_iter().map(|f| f as f32).collect())
    }

    /// Names and shapes of every weight the model reads, in HF naming.
    pub fn weight_shapes(&self) -> Vec<(String, Vec<usize>)> {
        let (hid, hd) = (self.hidden_size, self.head_dim());
        let (q, kv) = (self.num_attention_heads * hd, self.kv_heads() * hd);
        let mut out = vec![("model.embed_tokens.weight".to_string(), vec![self.vocab_size, hid])];
        for i in 0..self.num_hidden_layers {
            let p = format!("model.layers.{i}");
            out.push((format!("{p}.input_layernorm.weight"), vec![hid]));
            for (n, o) in [("q_proj", q), ("k_proj", kv), ("v_proj", kv)] {
                out.push((format!("{p}.self_attn.{n}.weight"), vec![o, hid]));
                if self.qkv_bias() {
                    out.push((format!("{p}.self_attn.{n}.bias"), vec![o]));
                }
            }
            out.push((format!("{p}.self_attn.o_proj.weight"), vec![hid, q]));
            if self.o_bias() {
                out.push((format!("{p}.self_attn.o_proj.bias"), vec![hid]));
            }
            out.push((format!("{p}.post_attention_layernorm.weight"), vec![hid]));
            let inter = self.intermediate_size;
            out.push((format!("{p}.mlp.gate_proj.weight"), vec![inter, hid]));
            out.push((format!("{p}.mlp.up_proj.weight"), vec![inter, hid]));
            out.push((format!("{p}.mlp.down_proj.weight"), vec![hid, inter]));
        }
        out.push(("model.norm.weight".into(), vec![hid]));
        if !self.tie_word_embeddings {
            out.push(("lm_head.weight".into(), vec![self.vocab_size, hid]));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_smollm2_config() {
        let text = r#"{"architectures":["LlamaForCausalLM"],"bos_token_id":1,"eos_token_id":2,
            "hidden_act":"silu","hidden_size":576,"intermediate_size":1536,"max_position_embeddings":8192,
            "model_type":"llama","num_attention_heads":9,"num_hidden_layers":30,"num_key_value_heads":3,
            "rms_norm_eps":1e-05,"rope_scaling":null,"rope_theta":100000,"tie_word_embeddings":true,
            "torch_dtype":"bfloat16","vocab_size":49152}"#;
        let c = Config::from_json(text).unwrap();
        c.validate().unwrap();
        assert_eq!((c.head_dim(), c.kv_heads(), c.family().unwrap()), (64, 3, Family::Llama));
        assert!(!c.qkv_bias());
        assert_eq!(c.eos_token_id, Some(TokenIds::One(2)));
        // 1 embed + 30 * 9 + 1 norm, tied head.
        assert_eq!(c.weight_shapes().len(), 272);
    }

    #[test]
    fn qwen2_has_qkv_bias_and_eos_list() {
        let text = r#"{"model_type":"qwen2","vocab_size":10,"hidden_size":8,"intermediate_size":16,
            "num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"eos_token_id":[3,4]}"#;
        let c = Config::from_json(text).unwrap();
        c.validate().unwrap();
        assert!(c.qkv_bias() && !c.o_bias());
        assert_eq!(c.eos_token_id.unwrap().to_vec(), vec![3, 4]);
    }

    #[test]
    fn llama3_rope_scaling_matches_reference_formula() {
        // Llama 3.1 values; the three bands follow HF's `_compute_llama3_parameters`.
        let mut c = Config::tiny(10, 128, 1, 1, 1);
        c.rope_theta = 500_000.0;
        c.rope_scaling = Some(RopeScaling {
            rope_type: Some("llama3".into()),
            kind: None,
            factor: Some(8.0),
            low_freq_factor: Some(1.0),
            high_freq_factor: Some(4.0),
            original_max_position_embeddings: Some(8192),
        });
        let scaled = c.inv_freq().unwrap();
        c.rope_scaling = None;
        let plain = c.inv_freq().unwrap();
        // Highest frequency (wavelength 2*pi < 2048): unchanged.
        assert_eq!(scaled[0], plain[0]);
        // Lowest frequency (wavelength > 8192): divided by the factor.
        let last = plain.len() - 1;
        assert!((scaled[last] - plain[last] / 8.0).abs() <= 1e-12 + plain[last] * 1e-6);
        // Every scaled frequency lies in [f/8, f].
        for (s, p) in scaled.iter().zip(&plain) {
            assert!(*s <= *p && *s >= *p / 8.0 * (1.0 - 1e-6));
        }
    }

    #[test]
    fn rejects_what_is_not_implemented() {
        let mut c = Config::tiny(10, 8, 1, 2, 1);
        c.hidden_act = "gelu".into();
        assert!(matches!(c.validate(), Err(Error::Config(_))));
        let mut c = Config::tiny(10, 8, 1, 3, 2);
        assert!(c.validate().is_err());
        c.num_key_value_heads = Some(3);
        c.model_type = "gpt2".into();
        assert!(c.validate().is_err());
    }
}
