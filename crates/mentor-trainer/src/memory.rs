//! The peak-memory estimate of a training run, made before the run starts, and the machine's
//! memory it is compared with.
//!
//! # The formula
//!
//! Every tensor is `f32` (4 bytes) on the CPU. With `P` parameters, `L` layers, hidden size
//! `h`, MLP width `i`, `n` attention heads, `kv` = key/value heads × head width, vocabulary
//! `V`; a step of `R` rows (prompts × group size) updated in `k` micro-batches of at most
//! `m = ceil(R / k)` rows, of which `g = min(m, ceil(m / G) + 1)` distinct prompts (group size
//! `G`; a micro-batch that straddles groups holds one more); prompts of at most `p` tokens and
//! completions of at most `c` (so keys `t = p + c`):
//!
//! - **weights** `4 P` (twice with a KL reference model, `grpo.beta > 0`);
//! - **gradients** `8 P`: the micro-batches' running sum and one backward pass's gradients.
//!   An upper bound since the update's backward runs a layer at a time
//!   (`mentor_policy::Stages`): it holds the sum and one layer's gradients (the LM head's at
//!   most, with the zeroed buffer and the sum candle's backward makes for it); the peaks in
//!   `train::preflight`'s test were measured before that change and are not re-measured;
//! - **optimizer** `8 P`: AdamW's two moments;
//! - **activations** of the largest micro-batch's training pass, everything the graph keeps
//!   for the backward (`mentor-policy`'s shared-prompt, packed-column log-probs), in floats
//!   per layer: `m c (14 h + 6 kv + 3 i + 2 n t) + 2 m kv t + g p (14 h + 6 kv + 3 i + 2 n p)`
//!   — per completion token the residual stream, norms, projections, RoPE'd queries and keys,
//!   attention output and SwiGLU (`14 h + 6 kv + 3 i`) and the attention scores and
//!   probabilities over its `t` keys; per row its copy of the prompt's keys and values; the
//!   prompt pass once per distinct prompt; plus the backward's working set, about two layers'
//!   worth of the same (the gradients of one layer's tensors and the copies its matmul and
//!   softmax backward make), so the total is `(L + 2)` times the per-layer floats, times 4;
//! - **logits** `4 m c V × (2 + [temperature ≠ 1])`: the completion columns' logits and their
//!   gradient (and the tempered copy);
//! - **runtime**: the process without tensors (binary, thread stacks, tokenizer, tasks,
//!   allocator slack: [`RUNTIME_BASE`], plus [`RUNTIME_REAL_MODEL`] for a tokenizer-and-GGUF
//!   model and [`RUNTIME_CODE_SANDBOX`] for the wasmtime Python sandbox).
//!
//! The estimate is that of the largest of three phases. The training update, above, usually.
//! Sampling (a key/value cache of `2 L kv t` floats per row) and evaluation (the same for up to
//! 128 rows per call): the moments persist but no gradients do, and the cache (and one row of
//! logits per cached row) replaces activations and logits. Pretraining a fresh tiny model
//! (`pretrain.steps > 0`): its whole batch of `b` examples of at most `s` tokens at once (the
//! shards run in parallel threads), the activation formula with `m = b`, `c = s`, `p = 1`
//! (every example shares its first token) and `g` = the shards; one backward's gradients per
//! shard plus their sum; logits `8 b s V`.
//!
//! Against the peak RSS of short `mentor train` runs of the presets (recorded, with the box and
//! the commands, in `train::preflight`'s test `estimates_match_measured_peaks`), the estimate is
//! within 25%; it leans high because every completion is counted at its full `max_new_tokens`
//! and every prompt at the longest. Not modelled: checkpoint serialisation (measured below the
//! update's peak in those runs) and the allocator's retention of freed memory (`mentor train`
//! never returns it: see that test's notes).

use std::fmt;

/// Bytes of one `f32`.
const F32: f64 = 4.0;

/// The process without tensors: binary, thread stacks, allocator slack (measured: 36 MB for a
/// demo run of one prompt of two completions, 4 evaluation problems, no pretraining).
pub const RUNTIME_BASE: u64 = 40 << 20;
/// A real model's tokenizer, GGUF metadata and load-time buffers, and its benchmark tasks.
pub const RUNTIME_REAL_MODEL: u64 = 240 << 20;
/// The wasmtime engine and the compiled CPython component of the code sandbox.
pub const RUNTIME_CODE_SANDBOX: u64 = 360 << 20;

/// The model as the estimate needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelShape {
    /// Parameters.
    pub params: u64,
    /// Decoder layers.
    pub layers: u64,
    /// Hidden size.
    pub hidden: u64,
    /// MLP width.
    pub intermediate: u64,
    /// Attention (query) heads.
    pub heads: u64,
    /// Key/value heads × head width.
    pub kv_width: u64,
    /// Vocabulary size.
    pub vocab: u64,
}

impl ModelShape {
    /// The shape of a model with configuration `cfg` and `params` parameters.
    pub fn of(cfg: &mentor_policy::Config, params: usize) -> Self {
        let w = |x: usize| x as u64;
        Self {
            params: w(params),
            layers: w(cfg.num_hidden_layers),
            hidden: w(cfg.hidden_size),
            intermediate: w(cfg.intermediate_size),
            heads: w(cfg.num_attention_heads),
            kv_width: w(cfg.kv_heads()).saturating_mul(w(cfg.head_dim())),
            vocab: w(cfg.vocab_size),
        }
    }
}

/// What a run asks of the model per step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Rows of one update (prompts per step × the larger of the group size and the hinted
    /// samples).
    pub rows: u64,
    /// Rows per prompt (the group size).
    pub group: u64,
    /// `grpo.gradient_accumulation_steps`.
    pub micro_batches: u64,
    /// The longest prompt, in tokens.
    pub prompt_tokens: u64,
    /// The longest completion, in tokens (`sampling.max_new_tokens`).
    pub completion_tokens: u64,
    /// Rows of the largest evaluation generate call.
    pub eval_rows: u64,
    /// Whether log-probs are tempered (a temperature other than 1: one more logits copy).
    pub tempered: bool,
    /// Whether a frozen KL reference copy of the weights is kept (`grpo.beta > 0`).
    pub reference: bool,
    /// Bytes of the process besides tensors (see [`RUNTIME_BASE`]).
    pub runtime: u64,
    /// Supervised pretraining before the first step (a fresh run with `pretrain.steps > 0`).
    pub pretraining: Option<Pretraining>,
}

/// A pretraining step (`[pretrain]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pretraining {
    /// Examples per step (`pretrain.batch`).
    pub batch: u64,
    /// Pieces computed in parallel (`pretrain.shards`, 0 resolved to the cores).
    pub shards: u64,
    /// The longest example, in tokens.
    pub tokens: u64,
}

impl Workload {
    /// Rows of the largest micro-batch: `ceil(rows / min(micro_batches, rows))`.
    pub fn micro_batch_rows(&self) -> u64 {
        let rows = self.rows.max(1);
        rows.div_ceil(self.micro_batches.clamp(1, rows))
    }
}

/// An estimate, in bytes, of the peak phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Model weights (and the KL reference copy).
    pub weights: f64,
    /// Gradients held during the update (0 when sampling is the peak).
    pub gradients: f64,
    /// AdamW moments.
    pub optimizer: f64,
    /// Activations of the largest micro-batch (or the key/value cache when sampling is the
    /// peak).
    pub activations: f64,
    /// The completion columns' logits and their gradient.
    pub logits: f64,
    /// The process without tensors.
    pub runtime: f64,
}

impl Estimate {
    /// The estimated peak, in bytes.
    pub fn peak(&self) -> f64 {
        self.weights + self.gradients + self.optimizer + self.activations + self.logits + self.runtime
    }
}

impl fmt::Display for Estimate {
    /// `5.2 GB peak (weights 0.5, …)` in gigabytes (10^9 bytes) with one decimal, or in whole
    /// megabytes (10^6) when the peak is under a gigabyte (a tiny model's run).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let peak = self.peak();
        let (unit, scale, decimals) = if peak < 1e9 { ("MB", 1e6, 0) } else { ("GB", 1e9, 1) };
        let n = |bytes: f64| {
            let v = bytes / scale;
            if v.is_finite() && v < 1e9 {
                format!("{v:.decimals$}")
            } else {
                format!("{v:.1e}")
            }
        };
        write!(
            f,
            "{} {unit} peak (weights {}, gradients {}, optimizer {}, activations {}, logits {}, runtime {})",
            n(peak),
            n(self.weights),
            n(self.gradients),
            n(self.optimizer),
            n(self.activations),
            n(self.logits),
            n(self.runtime)
        )
    }
}

/// Estimates the peak memory of a run of `work` on `model` (see the module docs for the
/// formula). Computed in `f64`: huge settings give huge (or infinite) numbers, never an
/// overflow.
pub fn estimate(model: &ModelShape, work: &Workload) -> Estimate {
    let f = |x: u64| x as f64;
    let (p, vocab) = (f(model.params), f(model.vocab));
    let rows = f(work.rows.max(1));
    let m = f(work.micro_batch_rows());
    let g = ((m / f(work.group.max(1))).ceil() + 1.0).min(m);
    let (pt, ct) = (f(work.prompt_tokens), f(work.completion_tokens));
    let update = Estimate {
        weights: F32 * p * if work.reference { 2.0 } else { 1.0 },
        gradients: 2.0 * F32 * p,
        optimizer: 2.0 * F32 * p,
        activations: activations(model, m, g, pt, ct),
        logits: F32 * m * ct * vocab * if work.tempered { 3.0 } else { 2.0 },
        runtime: f(work.runtime),
    };
    // Sampling: a key/value cache of every row of the step (or of an evaluation call).
    let cache_rows = rows.max(f(work.eval_rows));
    let sampling = Estimate {
        gradients: 0.0,
        activations: F32 * 2.0 * f(model.layers) * f(model.kv_width) * (pt + ct) * cache_rows,
        logits: F32 * cache_rows * vocab,
        ..update
    };
    // Pretraining: the whole batch at once (its shards run in parallel threads), one
    // backward's gradients per shard plus their sum, its own AdamW moments.
    let pretraining = work.pretraining.map(|pre| {
        let (batch, shards, tokens) = (f(pre.batch.max(1)), f(pre.shards.max(1)), f(pre.tokens));
        Estimate {
            weights: F32 * p,
            gradients: (shards + 1.0) * F32 * p,
            activations: activations(model, batch, shards.min(batch), 1.0, tokens),
            logits: 2.0 * F32 * batch * tokens * vocab,
            ..update
        }
    });
    [Some(update), Some(sampling), pretraining].into_iter().flatten().fold(sampling, |best, e| {
        if e.peak() > best.peak() {
            e
        } else {
            best
        }
    })
}

/// Bytes of activations (and backward working set) of one training pass of `m` rows of `c` completion tokens under `g`
/// distinct prompts of `p` tokens (the module docs' formula).
fn activations(model: &ModelShape, m: f64, g: f64, p: f64, c: f64) -> f64 {
    let f = |x: u64| x as f64;
    let (h, i, n, kv) = (f(model.hidden), f(model.intermediate), f(model.heads), f(model.kv_width));
    let t = p + c;
    let per_token = 14.0 * h + 6.0 * kv + 3.0 * i;
    let per_layer = m * c * (per_token + 2.0 * n * t) + 2.0 * m * kv * t + g * p * (per_token + 2.0 * n * p);
    F32 * (f(model.layers) + BACKWARD_LAYERS) * per_layer
}

/// Layers' worth of activations the backward pass holds on top of the graph's (see the module
/// docs): negligible for SmolLM2's 30 layers, a third of the total for the tiny model's 3.
const BACKWARD_LAYERS: f64 = 2.0;

/// The machine's memory, from `/proc/meminfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemInfo {
    /// `MemAvailable` (bytes): what can be allocated without swapping.
    pub available: u64,
    /// `MemTotal` (bytes).
    pub total: u64,
}

/// Parses `/proc/meminfo` text (`MemAvailable` and `MemTotal`, in kB). `None` when either is
/// missing or unreadable (kernels before 3.14 have no `MemAvailable`).
pub fn parse_meminfo(text: &str) -> Option<MemInfo> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.split(':').next() == Some(name))?;
        let kb: u64 = line.split(':').nth(1)?.trim().trim_end_matches("kB").trim().parse().ok()?;
        kb.checked_mul(1024)
    };
    Some(MemInfo { available: field("MemAvailable")?, total: field("MemTotal")? })
}

/// The machine's memory now (`None` where `/proc/meminfo` is absent or unreadable).
pub fn meminfo() -> Option<MemInfo> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// This process's resident memory now (`VmRSS` of `/proc/self/status`), in bytes.
pub fn resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse().ok()?;
    kb.checked_mul(1024)
}

/// SmolLM2-135M: 30 layers, hidden 576, MLP 1536, 9 heads, 3 kv heads of 64, 49,152 tokens.
#[cfg(test)]
pub(crate) const SMOLLM2_135M: ModelShape = ModelShape {
    params: 134_515_008,
    layers: 30,
    hidden: 576,
    intermediate: 1536,
    heads: 9,
    kv_width: 192,
    vocab: 49_152,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn smollm2() -> ModelShape {
        SMOLLM2_135M
    }

    fn work() -> Workload {
        Workload {
            rows: 32,
            group: 8,
            micro_batches: 4,
            prompt_tokens: 150,
            completion_tokens: 256,
            eval_rows: 4,
            tempered: false,
            reference: false,
            runtime: RUNTIME_BASE + RUNTIME_REAL_MODEL,
            pretraining: None,
        }
    }

    #[test]
    fn parameter_state_is_five_copies_of_the_weights() {
        let e = estimate(&smollm2(), &work());
        let p = 4.0 * 134_515_008.0;
        assert_eq!((e.weights, e.gradients, e.optimizer), (p, 2.0 * p, 2.0 * p));
        let with_ref = estimate(&smollm2(), &Workload { reference: true, ..work() });
        assert_eq!(with_ref.weights, 2.0 * p);
    }

    #[test]
    fn micro_batches_shrink_activations_and_logits_but_not_the_parameter_state() {
        let one = estimate(&smollm2(), &Workload { micro_batches: 1, ..work() });
        let four = estimate(&smollm2(), &work());
        let seven = estimate(&smollm2(), &Workload { micro_batches: 7, ..work() });
        assert!(one.activations > 3.0 * four.activations, "{one} vs {four}");
        assert!(seven.activations < four.activations && seven.logits < four.logits);
        assert_eq!((one.weights, one.optimizer), (four.weights, four.optimizer));
        // More micro-batches than rows: one row each, never fewer.
        let many = estimate(&smollm2(), &Workload { micro_batches: 1000, ..work() });
        let per_row = estimate(&smollm2(), &Workload { micro_batches: 32, ..work() });
        assert_eq!(many, per_row);
    }

    #[test]
    fn longer_completions_and_prompts_cost_more() {
        let base = estimate(&smollm2(), &work());
        let long = estimate(&smollm2(), &Workload { completion_tokens: 512, ..work() });
        let wide = estimate(&smollm2(), &Workload { prompt_tokens: 600, ..work() });
        assert!(long.peak() > base.peak() && wide.peak() > base.peak());
        let tempered = estimate(&smollm2(), &Workload { tempered: true, ..work() });
        assert_eq!(tempered.logits, base.logits * 1.5);
    }

    #[test]
    fn a_large_evaluation_batch_can_be_the_peak() {
        // Few tiny update rows, 128 evaluation rows of long completions: the cache wins.
        let w = Workload {
            rows: 2,
            group: 2,
            micro_batches: 2,
            eval_rows: 128,
            completion_tokens: 1000,
            ..work()
        };
        let e = estimate(&smollm2(), &w);
        assert_eq!(e.gradients, 0.0);
        assert_eq!(e.activations, 4.0 * 2.0 * 30.0 * 192.0 * 1150.0 * 128.0);
        assert_eq!(e.logits, 4.0 * 128.0 * 49_152.0);
    }

    #[test]
    fn huge_settings_give_huge_numbers_not_overflows() {
        let w = Workload {
            rows: u64::MAX,
            group: u64::MAX,
            micro_batches: 1,
            prompt_tokens: u64::MAX,
            completion_tokens: u64::MAX,
            eval_rows: u64::MAX,
            tempered: true,
            reference: true,
            runtime: u64::MAX,
            pretraining: Some(Pretraining { batch: u64::MAX, shards: u64::MAX, tokens: u64::MAX }),
        };
        let e = estimate(&smollm2(), &w);
        assert!(e.peak() > 1e30, "{e}");
        let zero = Workload { rows: 0, group: 0, micro_batches: 0, ..work() };
        assert!(estimate(&smollm2(), &zero).peak().is_finite());
        let first = e.to_string().split_whitespace().next().unwrap().to_string();
        assert!(first.contains('e') && first.parse::<f64>().is_ok(), "{e}");
    }

    #[test]
    fn the_line_reads_in_gigabytes() {
        let e = Estimate {
            weights: 0.54e9,
            gradients: 1.08e9,
            optimizer: 1.08e9,
            activations: 3.0e9,
            logits: 0.6e9,
            runtime: 0.3e9,
        };
        assert_eq!(
            e.to_string(),
            "6.6 GB peak (weights 0.5, gradients 1.1, optimizer 1.1, activations 3.0, logits 0.6, runtime 0.3)"
        );
        let small = Estimate {
            weights: 0.6e6,
            gradients: 1.2e6,
            optimizer: 1.2e6,
            activations: 190e6,
            logits: 3e6,
            runtime: 42e6,
        };
        assert_eq!(
            small.to_string(),
            "238 MB peak (weights 1, gradients 1, optimizer 1, activations 190, logits 3, runtime 42)"
        );
    }

    #[test]
    fn meminfo_is_parsed_and_its_absence_is_none() {
        let text = "MemTotal:       24558924 kB\nMemFree:        22000000 kB\nMemAvailable:   23000000 kB\n";
        assert_eq!(
            parse_meminfo(text),
            Some(MemInfo { available: 23_000_000 * 1024, total: 24_558_924 * 1024 })
        );
        assert_eq!(parse_meminfo("MemTotal: 100 kB\n"), None);
        assert_eq!(parse_meminfo(""), None);
        assert_eq!(parse_meminfo("MemTotal: x kB\nMemAvailable: 1 kB\n"), None);
        assert_eq!(parse_meminfo("MemTotal: 99999999999999999 kB\nMemAvailable: 1 kB\n"), None);
        if std::path::Path::new("/proc/meminfo").exists() {
            let m = meminfo().expect("this machine's /proc/meminfo");
            assert!(m.available <= m.total && m.total > 0);
            assert!(resident().is_some_and(|r| r > 0));
        }
    }
}
