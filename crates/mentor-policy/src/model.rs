//! The Llama-family decoder, written with candle ops whose backward is implemented.
//!
//! One set of weights, two kernel choices ([`Kernels`]): `Differentiable` uses only ops with a
//! backward pass, so every weight gets a gradient: on CPU in f32/f64 the crate's fused kernels
//! (masked scaled softmax, RMSNorm, RoPE, SwiGLU, each one pass forward and
//! one backward), elsewhere composite primitive ops (slow-path RMSNorm, max/exp/sum softmax,
//! RoPE by narrow/mul/cat). `Fused` uses candle-nn's fused RMSNorm, softmax and RoPE kernels,
//! which **detach the graph** (they are `apply_op*_no_bwd` in candle) and are only for no-grad
//! work such as generation. All compute the same function up to float rounding (see the tests).
//!
//! The model takes explicit per-token positions and an additive attention mask, so rows of a
//! batch can be left-padded and sit at different positions. It does not own a tokenizer or
//! sample: see [`crate::generate`] and [`crate::logprobs`].

use std::collections::HashMap;

use candle_core::{DType, Device, Tensor, D};
use candle_nn::Linear;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::packing::Packing;
use crate::stages::Stages;
use mentor_kernels::matmul;
use mentor_kernels::ops;

/// Which kernels the forward pass uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    /// Fused candle-nn kernels: faster, **no gradient flows through them**. For sampling.
    Fused,
    /// Ops with backward everywhere (fused ones of the crate's kernels on CPU in f32/f64,
    /// primitive ones otherwise). For log-probs that are trained on.
    Differentiable,
}

/// Per-layer keys (after RoPE) and values, `[batch, kv_heads, past_len, head_dim]` each, in
/// buffers preallocated for a number of positions (grown by doubling when exceeded), so a
/// decoding step writes its new keys in place instead of copying the whole cache.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    layers: Vec<Option<LayerCache>>,
    /// Positions to allocate room for at the first write.
    capacity: usize,
}

/// One layer's key and value buffers `[batch, kv_heads, capacity, head_dim]`, the first `len`
/// positions filled.
#[derive(Debug, Clone)]
struct LayerCache {
    k: Tensor,
    v: Tensor,
    len: usize,
}

impl LayerCache {
    /// Appends `k`/`v` `[batch, kv_heads, t, head_dim]` (contiguous) and returns views of all
    /// cached positions.
    fn append(&mut self, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let t = k.dim(2)?;
        let cap = self.k.dim(2)?;
        if self.len + t > cap {
            let cap = (2 * cap).max(self.len + t);
            let grow = |old: &Tensor| -> Result<Tensor> {
                let (b, h, _, d) = old.dims4()?;
                let new = Tensor::zeros((b, h, cap, d), old.dtype(), old.device())?;
                new.slice_set(&old.narrow(2, 0, self.len)?.contiguous()?, 2, 0)?;
                Ok(new)
            };
            self.k = grow(&self.k)?;
            self.v = grow(&self.v)?;
        }
        self.k.slice_set(k, 2, self.len)?;
        self.v.slice_set(v, 2, self.len)?;
        self.len += t;
        Ok((self.k.narrow(2, 0, self.len)?, self.v.narrow(2, 0, self.len)?))
    }
}

impl KvCache {
    /// An empty cache for `layers` layers.
    pub fn new(layers: usize) -> Self {
        Self { layers: vec![None; layers], capacity: 0 }
    }

    /// An empty cache for `layers` layers that allocates room for `positions` keys at its first
    /// write (e.g. prompt length + new tokens), so it never has to grow.
    pub fn with_capacity(layers: usize, positions: usize) -> Self {
        Self { layers: vec![None; layers], capacity: positions }
    }

    /// Number of cached key positions (0 when empty).
    pub fn len(&self) -> usize {
        self.layers.first().and_then(|l| l.as_ref()).map(|l| l.len).unwrap_or(0)
    }

    /// Whether nothing is cached yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps only batch rows `rows` (in that order), e.g. to drop finished sequences from a
    /// decoding batch. Copies each layer's buffers once.
    pub fn select_rows(&mut self, rows: &[usize]) -> Result<()> {
        let Some(device) = self.layers.iter().flatten().next().map(|l| l.k.device().clone()) else {
            return Ok(());
        };
        let ids = Tensor::from_vec(rows.iter().map(|&r| r as u32).collect::<Vec<_>>(), rows.len(), &device)?;
        for l in self.layers.iter_mut().flatten() {
            l.k = l.k.index_select(&ids, 0)?;
            l.v = l.v.index_select(&ids, 0)?;
        }
        Ok(())
    }

    /// Appends layer `li`'s new keys and values (contiguous `[batch, kv_heads, t, head_dim]`)
    /// and returns all of its cached ones.
    fn append(&mut self, li: usize, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let capacity = self.capacity;
        let slot =
            self.layers.get_mut(li).ok_or_else(|| Error::InvalidRequest(format!("no cache layer {li}")))?;
        match slot {
            Some(l) => l.append(k, v),
            None => {
                let (b, h, t, d) = k.dims4()?;
                let cap = capacity.max(t);
                let buf = || Tensor::zeros((b, h, cap, d), k.dtype(), k.device());
                let l = slot.insert(LayerCache { k: buf()?, v: buf()?, len: 0 });
                l.append(k, v)
            }
        }
    }
}

struct Layer {
    ln1: Tensor,
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    ln2: Tensor,
    gate: Linear,
    up: Linear,
    down: Linear,
}

/// A decoder-only transformer with HF weight layout and rotate-half RoPE.
pub struct Model {
    cfg: Config,
    embed: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    lm_head: Tensor,
    inv_freq: Tensor,
    device: Device,
    dtype: DType,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("cfg", &self.cfg).field("dtype", &self.dtype).finish_non_exhaustive()
    }
}

/// `l`'s product through [`matmul::linear`] (its small-batch kernel, same function as
/// `Linear::forward` up to rounding).
fn lin(l: &Linear, x: &Tensor) -> Result<Tensor> {
    Ok(matmul::linear(x, l.weight(), l.bias())?)
}

/// Takes weight `name` from `w`, checking its shape against the config.
fn take(w: &HashMap<String, Tensor>, name: &str, shape: &[usize]) -> Result<Tensor> {
    let t = w.get(name).ok_or_else(|| Error::MissingWeight(name.to_string()))?;
    if t.dims() != shape {
        return Err(Error::WeightShape {
            name: name.to_string(),
            expected: shape.to_vec(),
            actual: t.dims().to_vec(),
        });
    }
    Ok(t.clone())
}

impl Model {
    /// Builds the model over `weights` (HF names, see [`Config::weight_shapes`]). The tensors are
    /// shared, not copied: pass `Var` tensors to train them, detached tensors to freeze them.
    /// All weights must have one dtype and device.
    pub fn new(cfg: &Config, weights: &HashMap<String, Tensor>) -> Result<Self> {
        cfg.validate()?;
        let shapes: HashMap<String, Vec<usize>> = cfg.weight_shapes().into_iter().collect();
        let get = |n: &str| -> Result<Tensor> {
            let shape =
                shapes.get(n).ok_or_else(|| Error::Config(format!("no weight `{n}` in this config")))?;
            take(weights, n, shape)
        };
        let lin = |p: &str, bias: bool| -> Result<Linear> {
            let w = get(&format!("{p}.weight"))?;
            let b = if bias { Some(get(&format!("{p}.bias"))?) } else { None };
            Ok(Linear::new(w, b))
        };
        let embed = get("model.embed_tokens.weight")?;
        let (device, dtype) = (embed.device().clone(), embed.dtype());
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for i in 0..cfg.num_hidden_layers {
            let p = format!("model.layers.{i}");
            layers.push(Layer {
                ln1: get(&format!("{p}.input_layernorm.weight"))?,
                q: lin(&format!("{p}.self_attn.q_proj"), cfg.qkv_bias())?,
                k: lin(&format!("{p}.self_attn.k_proj"), cfg.qkv_bias())?,
                v: lin(&format!("{p}.self_attn.v_proj"), cfg.qkv_bias())?,
                o: lin(&format!("{p}.self_attn.o_proj"), cfg.o_bias())?,
                ln2: get(&format!("{p}.post_attention_layernorm.weight"))?,
                gate: lin(&format!("{p}.mlp.gate_proj"), false)?,
                up: lin(&format!("{p}.mlp.up_proj"), false)?,
                down: lin(&format!("{p}.mlp.down_proj"), false)?,
            });
        }
        let norm = get("model.norm.weight")?;
        let lm_head = if cfg.tie_word_embeddings { embed.clone() } else { get("lm_head.weight")? };
        let inv = cfg.inv_freq()?;
        let n = inv.len();
        let inv_freq = Tensor::from_vec(inv, (1, 1, n), &device)?;
        for (name, _) in cfg.weight_shapes() {
            if let Some(t) = weights.get(&name) {
                if t.dtype() != dtype || !t.device().same_device(&device) {
                    return Err(Error::Config(format!("weight `{name}` has another dtype or device")));
                }
            }
        }
        Ok(Self { cfg: cfg.clone(), embed, layers, norm, lm_head, inv_freq, device, dtype })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Device of the weights.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Dtype of the weights and activations.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Whether `k` runs on the fused kernels with a backward pass of [`mentor_kernels::ops`]
    /// (differentiable, on a CPU model in f32 or f64).
    fn fused_bwd(&self, k: Kernels) -> bool {
        k == Kernels::Differentiable && ops::supported(&self.embed)
    }

    /// RMSNorm; `fast`: the differentiable path on [`mentor_kernels::ops`] (else composite ops).
    fn rms(&self, x: &Tensor, w: &Tensor, k: Kernels, fast: bool) -> Result<Tensor> {
        let eps = self.cfg.rms_norm_eps as f32;
        // Sampling takes the crate's kernel wherever it runs: the same sums in the same order
        // as candle's `rms_norm`, so the same bits, but split over the pool (candle's runs on
        // one thread up to 32 rows: every decode step at batch 32 or less).
        let ours = ops::supported(x);
        Ok(match k {
            Kernels::Fused if ours => ops::rms_norm(x, w, eps)?,
            Kernels::Fused => candle_nn::ops::rms_norm(&x.contiguous()?, w, eps)?,
            Kernels::Differentiable if fast => ops::rms_norm(x, w, eps)?,
            Kernels::Differentiable => candle_nn::ops::rms_norm_slow(x, w, eps)?,
        })
    }

    /// `x`: `[B, H, T, hd]`; `cos`/`sin`: `[B, T, hd/2]`. HF rotate-half layout.
    ///
    /// Sampling takes the crate's kernel wherever it runs: the same products and sums as
    /// candle's `rope`, so the same bits, but split over the pool and read through `x`'s
    /// strides. candle's runs on one thread when `T` = 1 (every decode step) and needs a
    /// contiguous copy of `x` first.
    fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor, k: Kernels, fast: bool) -> Result<Tensor> {
        let ours = ops::supported(x);
        Ok(match k {
            Kernels::Fused if ours => ops::rope(x, cos, sin)?,
            Kernels::Fused => candle_nn::rotary_emb::rope(&x.contiguous()?, cos, sin)?,
            Kernels::Differentiable if fast => ops::rope(x, cos, sin)?,
            Kernels::Differentiable => {
                let half = x.dim(D::Minus1)? / 2;
                let (cos, sin) = (cos.unsqueeze(1)?, sin.unsqueeze(1)?);
                let x1 = x.narrow(D::Minus1, 0, half)?;
                let x2 = x.narrow(D::Minus1, half, half)?;
                let r1 = (x1.broadcast_mul(&cos)? - x2.broadcast_mul(&sin)?)?;
                let r2 = (x2.broadcast_mul(&cos)? + x1.broadcast_mul(&sin)?)?;
                Tensor::cat(&[r1, r2], D::Minus1)?
            }
        })
    }

    /// Runs the decoder.
    ///
    /// - `ids`: `[B, T]` u32 token ids (pad positions may hold any valid id).
    /// - `positions`: `[B, T]` u32 RoPE positions (per row, so left-padded rows start at 0).
    /// - `mask`: additive `[B, 1, T, past + T]` mask in the model dtype (0 = attend, a large
    ///   finite negative such as `-1e9` = blocked; not `-inf`, so that a query row seeing only
    ///   padding gets a NaN-free softmax): causal, and blocking padded keys.
    /// - `cache`: when given, keys/values of this call are appended and earlier ones attended.
    ///   The cache is for no-grad decoding: gradients do not flow through cached keys and
    ///   values (they are copied into its buffers).
    /// - `logits_from`: logits are computed for positions `logits_from..T` only.
    ///
    /// Returns logits `[B, T - logits_from, vocab]` in the model dtype. Differentiable with
    /// respect to every weight when `kernels` is [`Kernels::Differentiable`].
    pub fn forward(
        &self,
        ids: &Tensor,
        positions: &Tensor,
        mask: &Tensor,
        cache: Option<&mut KvCache>,
        logits_from: usize,
        kernels: Kernels,
    ) -> Result<Tensor> {
        self.forward_with(ids, positions, mask, cache, logits_from, None, kernels, self.fused_bwd(kernels))
    }

    /// [`Self::forward`], `fast` choosing between [`mentor_kernels::ops`] and composite ops for
    /// [`Kernels::Differentiable`] (the tests compare the two), the graph cut into `stages`
    /// when given.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn forward_with(
        &self,
        ids: &Tensor,
        positions: &Tensor,
        mask: &Tensor,
        cache: Option<&mut KvCache>,
        logits_from: usize,
        stages: Option<&mut Stages>,
        kernels: Kernels,
        fast: bool,
    ) -> Result<Tensor> {
        let t = ids.dim(1)?;
        if logits_from >= t {
            return Err(Error::InvalidRequest(format!("logits_from {logits_from} >= sequence length {t}")));
        }
        let x = self.body(ids, positions, mask, Attend::Cache(cache), None, stages, kernels, fast)?;
        let x = if logits_from > 0 { x.narrow(1, logits_from, t - logits_from)? } else { x };
        self.head(&x, kernels, fast)
    }

    /// The final norm and the LM head over hidden states `[B, T, hidden]`: logits
    /// `[B, T, vocab]`.
    pub(crate) fn head(&self, x: &Tensor, kernels: Kernels, fast: bool) -> Result<Tensor> {
        let (b, n, hidden) = x.dims3()?;
        let x = self.final_norm(x, kernels, fast)?;
        Ok(matmul::linear(&x.reshape((b * n, hidden))?, &self.lm_head, None)?.reshape((
            b,
            n,
            self.cfg.vocab_size,
        ))?)
    }

    /// The final norm over hidden states `[.., hidden]` (the head's input).
    pub(crate) fn final_norm(&self, x: &Tensor, kernels: Kernels, fast: bool) -> Result<Tensor> {
        self.rms(x, &self.norm, kernels, fast)
    }

    /// The LM head's weight `[vocab, hidden]` (the embedding's tensor when tied).
    pub(crate) fn lm_head(&self) -> &Tensor {
        &self.lm_head
    }

    /// Whether the differentiable path runs on [`mentor_kernels::ops`] (see [`Self::forward`]).
    pub(crate) fn fast(&self, kernels: Kernels) -> bool {
        self.fused_bwd(kernels)
    }

    /// The decoder layers: hidden states `[B, T, hidden]` after the last layer (before the
    /// final norm). `attend` gives the keys and values before this call's (a no-grad cache, or
    /// a differentiable shared prefix); `record`, when given, receives each layer's keys
    /// (after RoPE) and values of this call, `[B, kv_heads, T, head_dim]`, still in the graph;
    /// `stages`, when given, cuts the graph after every layer ([`Stages`]). By phase: the
    /// call's shapes are checked ([`Self::batch_shape`], [`Self::past_len`]), the tokens
    /// embedded ([`Self::embed_tokens`]), then each layer runs ([`Self::layer`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn body(
        &self,
        ids: &Tensor,
        positions: &Tensor,
        mask: &Tensor,
        attend: Attend<'_>,
        mut record: Option<&mut Vec<(Tensor, Tensor)>>,
        mut stages: Option<&mut Stages>,
        kernels: Kernels,
        fast: bool,
    ) -> Result<Tensor> {
        let packed = match &attend {
            Attend::Prefix(p) => p.packed.as_ref(),
            Attend::Cache(_) => None,
        };
        let (b, t) = Self::batch_shape(ids, packed)?;
        let (mut cache, prefix) = match attend {
            Attend::Cache(c) => (c, None),
            Attend::Prefix(p) => (None, Some(p)),
        };
        let tk = self.past_len(cache.as_deref_mut(), prefix, b)? + t;
        if mask.dims() != [b, 1, t, tk] {
            return Err(Error::InvalidRequest(format!(
                "mask shape {:?}, expected {:?}",
                mask.dims(),
                [b, 1, t, tk]
            )));
        }
        let (cos, sin) = self.rope_tables(positions)?;
        let pass = LayerPass {
            b,
            t,
            packed,
            cos,
            sin,
            mask,
            mask5: mask.reshape((b, 1, 1, t, tk))?,
            scale: 1.0 / (self.cfg.head_dim() as f64).sqrt(),
            kernels,
            fast,
        };
        let mut x = self.embed_tokens(ids, stages.as_deref(), packed, b, t)?;
        for (li, l) in self.layers.iter().enumerate() {
            x = self.layer(li, l, x, &pass, cache.as_deref_mut(), prefix, record.as_deref_mut())?;
            if let Some(s) = stages.as_deref_mut() {
                x = s.cut(li, x)?;
            }
        }
        Ok(x)
    }

    /// The batch's rows and columns `(B, T)`: `ids`' own, or, for packed rows (`ids` is
    /// `[1, N]`, the real columns of a `[B, T]` batch, and every op but attention runs on
    /// those `N` columns only), the packing's.
    fn batch_shape(ids: &Tensor, packed: Option<&Packing>) -> Result<(usize, usize)> {
        match packed {
            Some(pk) => {
                if ids.dims() != [1, pk.n] {
                    return Err(Error::InvalidRequest(format!(
                        "packed ids {:?}, expected [1, {}]",
                        ids.dims(),
                        pk.n
                    )));
                }
                Ok((pk.b, pk.t))
            }
            None => Ok(ids.dims2()?),
        }
    }

    /// The positions attended to before this call's: the cache's (reset first when it was
    /// made for another layer count) or the shared prefix's (checked against the model and
    /// the batch's `b` rows), else none.
    fn past_len(
        &self,
        cache: Option<&mut KvCache>,
        prefix: Option<&SharedPrefix>,
        b: usize,
    ) -> Result<usize> {
        if let Some(c) = cache {
            if c.layers.len() != self.layers.len() {
                *c = KvCache::with_capacity(self.layers.len(), c.capacity);
            }
            return Ok(c.len());
        }
        let Some(p) = prefix else { return Ok(0) };
        if p.layers.len() != self.layers.len() || p.rows.dims() != [b] {
            return Err(Error::InvalidRequest(format!(
                "shared prefix of {} layers for {:?} rows; the model has {} layers and the batch {b} rows",
                p.layers.len(),
                p.rows.dims(),
                self.layers.len()
            )));
        }
        p.len()
    }

    /// The token embeddings, `[B, T, hidden]` (`[1, N, hidden]` when packed). A staged pass
    /// leaves the embedding's gradient to its stages (`crate::embed`).
    fn embed_tokens(
        &self,
        ids: &Tensor,
        stages: Option<&Stages>,
        packed: Option<&Packing>,
        b: usize,
        t: usize,
    ) -> Result<Tensor> {
        let (xb, xt) = match packed {
            Some(pk) => (1, pk.n),
            None => (b, t),
        };
        let ids = ids.flatten_all()?;
        let rows = match stages {
            Some(s) if ops::supported(&self.embed) => {
                crate::embed::embed_rows(&self.embed, &ids, s.embed_slot())?
            }
            _ => self.embed.index_select(&ids, 0)?,
        };
        Ok(rows.reshape((xb, xt, self.cfg.hidden_size))?)
    }

    /// One decoder layer on hidden states `x`: attention over the keys and values before
    /// (`cache`, appended to, or `prefix`) and this call's, then the MLP, each added to the
    /// residual stream. `record` receives this call's keys and values.
    #[allow(clippy::too_many_arguments)]
    fn layer(
        &self,
        li: usize,
        l: &Layer,
        x: Tensor,
        p: &LayerPass<'_>,
        cache: Option<&mut KvCache>,
        prefix: Option<&SharedPrefix>,
        record: Option<&mut Vec<(Tensor, Tensor)>>,
    ) -> Result<Tensor> {
        let (q, k, v) = self.qkv(l, &x, p)?;
        if let Some(r) = record {
            r.push((k.contiguous()?, v.clone()));
        }
        let (k, v) = match (cache, prefix) {
            (Some(c), _) => c.append(li, &k.contiguous()?, &v)?,
            (None, Some(pre)) => {
                // Each row's copy of its prompt's keys and values: the gradient of every
                // row flows back into the one prompt computation (index_select's backward
                // adds them up).
                let (pk, pv) = &pre.layers[li];
                let pk = pk.index_select(&pre.rows, 0)?;
                let pv = pv.index_select(&pre.rows, 0)?;
                (Tensor::cat(&[&pk, &k], 2)?, Tensor::cat(&[&pv, &v], 2)?)
            }
            (None, None) => (k, v),
        };
        let y = self.attention(&q, &k, &v, p, prefix.is_none())?;
        let x = (x + lin(&l.o, &y)?)?;
        let down = self.mlp(&x, l, p.kernels, p.fast)?;
        Ok((x + down)?)
    }

    /// A layer's queries, keys (both after RoPE) and values, `[B, heads, T, hd]`.
    fn qkv(&self, l: &Layer, x: &Tensor, p: &LayerPass<'_>) -> Result<(Tensor, Tensor, Tensor)> {
        let cfg = &self.cfg;
        let (hd, nh, nkv) = (cfg.head_dim(), cfg.num_attention_heads, cfg.kv_heads());
        // `[xb, xt, heads * hd]` -> `[B, heads, T, hd]` (padded again when packed: then one
        // contiguous copy).
        let heads = |y: Tensor, n: usize| -> Result<Tensor> {
            match p.packed {
                Some(pk) => pk.pad_heads(&y, n, hd),
                None => Ok(y.reshape((p.b, p.t, n, hd))?.transpose(1, 2)?),
            }
        };
        let h = self.rms(x, &l.ln1, p.kernels, p.fast)?;
        let v = heads(lin(&l.v, &h)?, nkv)?.contiguous()?;
        let (q, k) = match p.packed {
            // Padded and rotated in one node (`crate::packing`) on the fast path.
            Some(pk) if p.fast => (
                pk.pad_heads_rope(&lin(&l.q, &h)?, nh, hd, &p.cos, &p.sin)?,
                pk.pad_heads_rope(&lin(&l.k, &h)?, nkv, hd, &p.cos, &p.sin)?,
            ),
            _ => {
                let q = heads(lin(&l.q, &h)?, nh)?;
                let k = heads(lin(&l.k, &h)?, nkv)?;
                (
                    Self::rope(&q, &p.cos, &p.sin, p.kernels, p.fast)?,
                    Self::rope(&k, &p.cos, &p.sin, p.kernels, p.fast)?,
                )
            }
        };
        Ok((q, k, v))
    }

    /// Attention's output before the output projection, `[B, T, heads * hd]` (`[1, N, ..]`
    /// when packed), from `q` `[B, heads, T, hd]` and all keys and values `[B, kv_heads, Tk,
    /// hd]`. `may_decode`: no shared prefix, so a one-position no-grad step may take the fused
    /// decode pass.
    fn attention(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        p: &LayerPass<'_>,
        may_decode: bool,
    ) -> Result<Tensor> {
        let cfg = &self.cfg;
        let (hd, nh, nkv) = (cfg.head_dim(), cfg.num_attention_heads, cfg.kv_heads());
        let (b, t) = (p.b, p.t);
        // GQA without materialising repeated keys: query head h uses kv head h / n_rep
        // (HF `repeat_kv`), so group the n_rep query heads of one kv head along time.
        let q = q.contiguous()?.reshape((b, nkv, (nh / nkv) * t, hd))?;
        // A decode step (one position per row, no gradient): one fused pass.
        // (Not in the fixed-order mode: `attend` runs there, on the same kernels as training.)
        let decoded =
            if p.kernels == Kernels::Fused && t == 1 && may_decode && !mentor_kernels::deterministic() {
                crate::attention::decode(&q, k, v, p.mask, p.scale)?
            } else {
                None
            };
        let y = match decoded {
            Some(y) => y,
            None => Self::attend(&q, k, v, p.mask, &p.mask5, p.scale, p.kernels, p.fast)?,
        };
        let y = y.reshape((b, nh, t, hd))?;
        Ok(match p.packed {
            Some(pk) => pk.pack_heads(&y)?,
            None => y.transpose(1, 2)?.reshape((b, t, nh * hd))?,
        })
    }

    /// The rotary embedding's cosines and sines at `positions`, in the model's dtype. The
    /// fixed-order mode takes them in f64, rounded once to the model's dtype: libm's f32
    /// `cosf`/`sinf` may differ between C libraries in the last bit, an f64 result rounded to
    /// f32 practically never does.
    fn rope_tables(&self, positions: &Tensor) -> Result<(Tensor, Tensor)> {
        let freqs = positions.to_dtype(DType::F32)?.unsqueeze(2)?.broadcast_mul(&self.inv_freq)?;
        let freqs = if mentor_kernels::deterministic() { freqs.to_dtype(DType::F64)? } else { freqs };
        let cos = freqs.cos()?.to_dtype(self.dtype)?.contiguous()?;
        let sin = freqs.sin()?.to_dtype(self.dtype)?.contiguous()?;
        Ok((cos, sin))
    }

    /// A layer's MLP half on the residual stream `x`: its norm, then SwiGLU and the down
    /// projection (the residual is added by the caller).
    fn mlp(&self, x: &Tensor, l: &Layer, kernels: Kernels, fast: bool) -> Result<Tensor> {
        let h = self.rms(x, &l.ln2, kernels, fast)?;
        let (gate, up) = (lin(&l.gate, &h)?, lin(&l.up, &h)?);
        if fast {
            // The SwiGLU and the down projection as one node (`crate::mlp`): the graph does not
            // hold the `[.., intermediate]` product between them.
            return Ok(crate::mlp::swiglu_down(&gate, &up, l.down.weight())?);
        }
        // The fused SwiGLU serves the no-grad path where it runs.
        let m = if kernels == Kernels::Fused && ops::supported(&gate) {
            ops::swiglu(&gate, &up)?
        } else {
            (gate.silu()? * up)?
        };
        lin(&l.down, &m)
    }

    /// Attention from candle ops: `softmax(scale * q·kᵀ + mask) · v`, grouped-query `q`
    /// `[B, kv_heads, n_rep * T, hd]` against `k`, `v` `[B, kv_heads, Tk, hd]`.
    #[allow(clippy::too_many_arguments)]
    fn attend(
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        mask: &Tensor,
        mask5: &Tensor,
        scale: f64,
        kernels: Kernels,
        fast: bool,
    ) -> Result<Tensor> {
        let (b, nkv, rows, _) = q.dims4()?;
        let (t, tk) = (mask.dim(2)?, mask.dim(3)?);
        let n_rep = rows / t.max(1);
        // The fixed-order mode: both products on the crate's kernel (`mentor_kernels::set_deterministic`).
        let fixed = mentor_kernels::deterministic();
        let att = if fast || (kernels == Kernels::Fused && ops::supported(q)) {
            // The product and the fused masked softmax as one node (`mentor_kernels::probs`): one pass
            // over the scores, the largest tensor, which the graph then holds once (as the
            // probabilities), not twice; no scaled or masked copies of it. For training's fast
            // path, and for the no-grad path where it runs. `[B, kv_heads, n_rep * T, Tk]` as
            // is: reshapes of this tensor each cost a pass in the backward.
            mentor_kernels::probs::attention_probs(q, k, mask, scale)?
        } else {
            let att = if fixed { matmul::bmm_t(q, k)? } else { q.matmul(&k.t()?)? };
            let att = (att * scale)?.reshape((b, nkv, n_rep, t, tk))?.broadcast_add(mask5)?;
            let att = match kernels {
                Kernels::Fused => candle_nn::ops::softmax_last_dim(&att)?,
                Kernels::Differentiable => candle_nn::ops::softmax(&att, D::Minus1)?,
            };
            att.reshape((b, nkv, n_rep * t, tk))?
        };
        Ok(if fixed { matmul::bmm_t(&att, &v.t()?)? } else { att.matmul(v)? })
    }
}

/// What every layer of one [`Model::body`] call shares: the batch's shape and packing, the
/// rotary tables, the masks, the attention scale and the kernels.
struct LayerPass<'a> {
    b: usize,
    t: usize,
    packed: Option<&'a Packing>,
    cos: Tensor,
    sin: Tensor,
    mask: &'a Tensor,
    mask5: Tensor,
    scale: f64,
    kernels: Kernels,
    fast: bool,
}

/// What a [`Model::body`] call attends to before its own positions.
pub(crate) enum Attend<'a> {
    /// A no-grad decoding cache (appended to), or nothing.
    Cache(Option<&'a mut KvCache>),
    /// Keys and values of shared prompts, in the graph.
    Prefix(&'a SharedPrefix),
}

/// Per-layer keys (after RoPE) and values of `G` prompts, `[G, kv_heads, P, head_dim]`, as
/// recorded by [`Model::body`], the prompt `rows[b]` of each batch row, and, when given, the
/// batch rows' real columns packed.
pub(crate) struct SharedPrefix {
    pub layers: Vec<(Tensor, Tensor)>,
    pub rows: Tensor,
    pub packed: Option<Packing>,
}

impl SharedPrefix {
    /// Prompt positions `P`.
    fn len(&self) -> Result<usize> {
        Ok(match self.layers.first() {
            Some((k, _)) => k.dim(2)?,
            None => 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use candle_core::Var;

    use super::*;
    use crate::batch::{attention_mask, positions};

    /// A tiny GQA model with deterministic weights in `dtype`, as trainable `Var`s.
    fn model(dtype: DType) -> (Model, Vec<(String, Var)>) {
        let mut cfg = Config::tiny(11, 16, 2, 4, 2);
        cfg.tie_word_embeddings = false;
        let mut state = 12345u64;
        let mut vars = vec![];
        for (name, shape) in cfg.weight_shapes() {
            let n: usize = shape.iter().product();
            let v: Vec<f64> = (0..n)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                    if name.contains("norm") {
                        0.5 + u
                    } else {
                        (u - 0.5) * 0.8
                    }
                })
                .collect();
            let t = Tensor::from_vec(v, shape, &Device::Cpu).unwrap().to_dtype(dtype).unwrap();
            vars.push((name, Var::from_tensor(&t).unwrap()));
        }
        let weights = vars.iter().map(|(n, v)| (n.clone(), v.as_tensor().clone())).collect();
        (Model::new(&cfg, &weights).unwrap(), vars)
    }

    /// Logits of a left-padded batch of two rows, on the fused or the composite path.
    fn logits(m: &Model, fast: bool) -> Tensor {
        let valid = vec![vec![true; 6], vec![false, false, false, true, true, true]];
        let ids =
            Tensor::from_vec(vec![1u32, 2, 3, 4, 5, 6, 0, 0, 0, 7, 8, 9], (2, 6), &Device::Cpu).unwrap();
        let pos = positions(&valid, &[0, 0], &Device::Cpu).unwrap();
        let mask = attention_mask(&valid, 6, m.dtype(), &Device::Cpu).unwrap();
        m.forward_with(&ids, &pos, &mask, None, 1, None, Kernels::Differentiable, fast).unwrap()
    }

    fn max_rel(a: &Tensor, b: &Tensor) -> f64 {
        let d = (a - b).unwrap().abs().unwrap().max_all().unwrap().to_dtype(DType::F64).unwrap();
        let s = b.abs().unwrap().max_all().unwrap().to_dtype(DType::F64).unwrap();
        d.to_scalar::<f64>().unwrap() / s.to_scalar::<f64>().unwrap().max(1e-300)
    }

    #[test]
    fn fused_differentiable_path_equals_composite_path_with_gradients() {
        let (m, _) = model(DType::F32);
        assert!(m.fused_bwd(Kernels::Differentiable) && !m.fused_bwd(Kernels::Fused));
        let d = max_rel(&logits(&m, true), &logits(&m, false));
        assert!(d < 1e-5, "f32 logits differ by {d}");

        let (m, vars) = model(DType::F64);
        let (a, b) = (logits(&m, true), logits(&m, false));
        assert!(max_rel(&a, &b) < 1e-12, "f64 logits differ by {}", max_rel(&a, &b));
        let r = Tensor::from_vec(
            (0..a.elem_count()).map(|i| (i % 7) as f64 - 3.0).collect(),
            a.shape(),
            &Device::Cpu,
        )
        .unwrap();
        let ga = (a * &r).unwrap().sum_all().unwrap().backward().unwrap();
        let gb = (b * &r).unwrap().sum_all().unwrap().backward().unwrap();
        for (name, v) in &vars {
            let (x, y) = (ga.get(v.as_tensor()).unwrap(), gb.get(v.as_tensor()).unwrap());
            assert!(max_rel(x, y) < 1e-10, "{name}: gradients differ by {}", max_rel(x, y));
        }
    }

    #[test]
    fn bf16_takes_the_composite_path() {
        let (m, _) = model(DType::BF16);
        assert!(!m.fused_bwd(Kernels::Differentiable));
        let x = logits(&m, false);
        assert_eq!(x.dims(), [2, 5, 11]);
    }
}
