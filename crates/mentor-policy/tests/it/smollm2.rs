//! The real SmolLM2-135M-Instruct GGUF against transformers' greedy fixture
//! (`../shared/fixtures/smollm2_greedy.json`, produced by transformers 5.24 on the dequantised
//! weights; not by this crate).

use std::path::PathBuf;
use std::sync::OnceLock;

use mentor_core::assets::AssetDir;
use mentor_core::Message;
use mentor_policy::{GenerateConfig, LoadOptions, ModelSource, Policy, Sampler};
use serde::Deserialize;

fn gguf_path() -> PathBuf {
    let dir =
        AssetDir::resolve(|k| std::env::var(k).ok()).expect("no HOME / MENTOR_HOME to find the assets in");
    let path = dir.smollm2_gguf();
    assert!(path.is_file(), "SmolLM2 GGUF missing at {}: run `cargo xtask setup`", path.display());
    path
}

fn policy() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(|| Policy::load(&ModelSource::Gguf(gguf_path()), &LoadOptions::default()).unwrap())
}

#[derive(Deserialize)]
struct Fixture {
    max_new_tokens: usize,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    prompt: String,
    chat_text: String,
    greedy: String,
    prompt_ids: Vec<u32>,
    greedy_ids: Vec<u32>,
}

fn fixture() -> Fixture {
    let path = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/fixtures/smollm2_greedy.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn tokenizer_round_trips_and_chat_template_matches_transformers() {
    let p = policy();
    let t = p.tokenizer();
    for s in
        ["Hello world", "12345 + 678 = 7023", "line1\nline2\n\n\ttab", "naïve café 東京 🙂", "  two  spaces "]
    {
        assert_eq!(t.decode(&t.encode(s).unwrap(), false).unwrap(), s);
    }
    // Digits are split one by one (SmolLM2's Digits pre-tokenizer).
    assert_eq!(t.encode("2024").unwrap().len(), 4);
    // Chat special tokens are single ids.
    assert_eq!(t.encode("<|im_start|>").unwrap(), vec![1]);
    assert_eq!(t.encode("<|im_end|>").unwrap(), vec![2]);
    assert_eq!(t.encode("<|endoftext|>").unwrap(), vec![0]);
    assert!(t.stop_ids().contains(&2));
    for case in fixture().cases {
        let chat = p.render_chat(&[Message::user(case.prompt.clone())]).unwrap();
        assert_eq!(chat, case.chat_text);
        assert_eq!(t.encode(&chat).unwrap(), case.prompt_ids, "{}", case.prompt);
        assert_eq!(t.decode(&case.greedy_ids, true).unwrap().trim_end(), case.greedy.trim_end());
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn tokenizer_round_trips_any_text(s in "\\PC{0,40}") {
        let t = policy().tokenizer();
        proptest::prop_assert_eq!(t.decode(&t.encode(&s).unwrap(), false).unwrap(), s);
    }
}

#[test]
fn batched_greedy_equals_transformers() {
    // Both fixture prompts in one left-padded batch (they differ in length): each row must
    // reproduce transformers' greedy ids exactly.
    let p = policy();
    let fx = fixture();
    let prompts: Vec<Vec<u32>> = fx.cases.iter().map(|c| c.prompt_ids.clone()).collect();
    assert!(prompts.windows(2).any(|w| w[0].len() != w[1].len()));
    let cfg = GenerateConfig {
        sampler: Sampler::greedy(),
        max_new_tokens: fx.max_new_tokens,
        ..GenerateConfig::default()
    };
    let out = p.generate(&prompts, &cfg).unwrap();
    for (case, g) in fx.cases.iter().zip(&out) {
        assert_eq!(g.token_ids, case.greedy_ids, "prompt {:?}: got {:?}", case.prompt, g.text);
    }
}

#[test]
fn logits_match_candle_transformers_quantized_llama_dequantised() {
    use candle_core::quantized::gguf_file::Content;
    use candle_core::{Device, Tensor, D};
    use mentor_policy::Kernels;
    // candle's reference with every weight dequantised to f32 (read once per thread, here).
    // Edition 2021: `set_var` is a safe fn; only this test thread reads the variable.
    std::env::set_var("CANDLE_DEQUANTIZE_ALL", "1");
    let path = gguf_path();
    let mut f = std::fs::File::open(&path).unwrap();
    let ct = Content::read(&mut f).unwrap();
    let mut reference =
        candle_transformers::models::quantized_llama::ModelWeights::from_gguf(ct, &mut f, &Device::Cpu)
            .unwrap();
    let p = policy();
    let ids = p.tokenizer().encode("<|im_start|>user\nName 3 colors: red,<|im_end|>\n").unwrap();
    let n = ids.len();
    // candle's quantized Llama returns last-position logits only: feed one token at a time.
    let mut want = Vec::with_capacity(n);
    for (i, id) in ids.iter().enumerate() {
        let x = Tensor::new(&[*id], &Device::Cpu).unwrap().unsqueeze(0).unwrap();
        want.push(reference.forward(&x, i).unwrap().squeeze(0).unwrap());
    }
    let want = Tensor::stack(&want, 0).unwrap();
    let ids_t = Tensor::new(ids.as_slice(), &Device::Cpu).unwrap().unsqueeze(0).unwrap();
    // One unpadded row: positions 0..n, and the additive causal mask `Model::forward` takes
    // (0 = attend, a large negative = blocked).
    let pos = Tensor::from_vec((0..n as u32).collect::<Vec<_>>(), (1, n), &Device::Cpu).unwrap();
    let causal: Vec<f32> = (0..n * n).map(|k| if k % n > k / n { -1e9 } else { 0.0 }).collect();
    let mask = Tensor::from_vec(causal, (1, 1, n, n), &Device::Cpu).unwrap();
    for kernels in [Kernels::Fused, Kernels::Differentiable] {
        let got = p.model().forward(&ids_t, &pos, &mask, None, 0, kernels).unwrap().squeeze(0).unwrap();
        let diff = (&got - &want).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
        assert!(diff < 1e-3, "{kernels:?}: max abs logit difference {diff}");
        let a = got.argmax(D::Minus1).unwrap().to_vec1::<u32>().unwrap();
        let b = want.argmax(D::Minus1).unwrap().to_vec1::<u32>().unwrap();
        assert_eq!(a, b, "{kernels:?}: argmax differs");
        eprintln!("{kernels:?}: {n} positions, max abs logit difference {diff:.2e}, argmax equal");
    }
}
