//! Checkpoints round-trip; loading from a directory and from an offline Hub cache.

use candle_core::{DType, Device, Tensor};
use mentor_core::Message;
use mentor_policy::{
    Error, GenerateConfig, HubOptions, LoadOptions, LogProbOptions, ModelSource, Policy, Sampler,
};

use crate::{tiny, tiny_with};

fn logprobs(p: &Policy) -> Vec<Vec<f32>> {
    let t = p.tokenizer();
    let prompts = vec![t.encode("3+4=").unwrap(), t.encode("10-2=").unwrap()];
    let completions = vec![t.encode("7").unwrap(), t.encode("8\n").unwrap()];
    p.logprobs(&prompts, &completions, &LogProbOptions::default()).unwrap().logprobs.to_vec2().unwrap()
}

fn greedy(p: &Policy) -> Vec<u32> {
    let cfg = GenerateConfig { sampler: Sampler::greedy(), max_new_tokens: 6, ..GenerateConfig::default() };
    p.generate(&[p.tokenizer().encode("5*5=").unwrap()], &cfg).unwrap().remove(0).token_ids
}

#[test]
fn save_then_load_gives_the_same_model() {
    let p = tiny_with(DType::F32, 21, |c| c.tie_word_embeddings = false);
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("step-1");
    p.save(&ckpt).unwrap();
    for f in ["model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json"] {
        assert!(ckpt.join(f).is_file(), "{f}");
    }
    let q = Policy::load(&ModelSource::Dir(ckpt.clone()), &LoadOptions::default()).unwrap();
    assert_eq!(q.config(), p.config());
    assert_eq!(logprobs(&q), logprobs(&p));
    assert_eq!(greedy(&q), greedy(&p));
    assert_eq!(q.tokenizer().stop_ids(), p.tokenizer().stop_ids());
    let chat = [Message::user("1+1=")];
    assert_eq!(q.render_chat(&chat).unwrap(), p.render_chat(&chat).unwrap());
    // No temporary directories are left next to the checkpoint.
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("step-1")]);
}

#[test]
fn saving_over_a_checkpoint_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("latest");
    tiny(DType::F32, 22).save(&ckpt).unwrap();
    let second = tiny(DType::F32, 23);
    second.save(&ckpt).unwrap();
    let loaded = Policy::load(&ModelSource::Dir(ckpt), &LoadOptions::default()).unwrap();
    assert_eq!(logprobs(&loaded), logprobs(&second));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn frozen_copy_does_not_follow_updates() {
    let p = tiny(DType::F32, 24);
    let frozen = p.frozen_copy().unwrap();
    let before = logprobs(&p);
    for (_, v) in p.vars() {
        v.set(&(v.as_tensor() * 1.5).unwrap()).unwrap();
    }
    assert_eq!(logprobs(&frozen), before);
    assert_ne!(logprobs(&p), before);
}

#[test]
fn missing_or_misshapen_weights_are_errors() {
    let p = tiny(DType::F32, 25);
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("c");
    p.save(&ckpt).unwrap();
    let path = ckpt.join("model.safetensors");
    let mut w = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
    w.remove("model.layers.1.mlp.up_proj.weight");
    candle_core::safetensors::save(&w, &path).unwrap();
    let err = Policy::load(&ModelSource::Dir(ckpt.clone()), &LoadOptions::default()).unwrap_err();
    assert!(matches!(err, Error::MissingWeight(ref n) if n == "model.layers.1.mlp.up_proj.weight"), "{err}");
    w.insert(
        "model.layers.1.mlp.up_proj.weight".into(),
        Tensor::zeros((3, 3), DType::F32, &Device::Cpu).unwrap(),
    );
    candle_core::safetensors::save(&w, &path).unwrap();
    let err = Policy::load(&ModelSource::Dir(ckpt), &LoadOptions::default()).unwrap_err();
    assert!(matches!(err, Error::WeightShape { .. }), "{err}");
}

#[test]
fn sharded_safetensors_and_bf16_files_load() {
    let p = tiny(DType::F32, 26);
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("sharded");
    p.save(&ckpt).unwrap();
    let path = ckpt.join("model.safetensors");
    let all = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut shards = [std::collections::HashMap::new(), std::collections::HashMap::new()];
    let mut map = serde_json::Map::new();
    for (i, (k, t)) in all.iter().enumerate() {
        let s = i % 2;
        shards[s].insert(k.clone(), t.to_dtype(DType::BF16).unwrap());
        map.insert(k.clone(), format!("model-0000{}-of-00002.safetensors", s + 1).into());
    }
    for (s, shard) in shards.iter().enumerate() {
        candle_core::safetensors::save(shard, ckpt.join(format!("model-0000{}-of-00002.safetensors", s + 1)))
            .unwrap();
    }
    let index = serde_json::json!({ "metadata": {}, "weight_map": map });
    std::fs::write(ckpt.join("model.safetensors.index.json"), index.to_string()).unwrap();
    let q = Policy::load(&ModelSource::Dir(ckpt), &LoadOptions::default()).unwrap();
    // bf16 keeps ~3 significant digits of the f32 weights.
    for (a, b) in logprobs(&q).iter().flatten().zip(logprobs(&p).iter().flatten()) {
        assert!((a - b).abs() < 2e-2, "{a} vs {b}");
    }
}

#[test]
fn hub_repo_loads_from_the_offline_cache() {
    let p = tiny(DType::F32, 27);
    let cache = tempfile::tempdir().unwrap();
    // hf-hub's cache layout: models--owner--name/{refs/main, snapshots/<commit>/<files>}.
    let repo_dir = cache.path().join("models--mentor--tiny");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let snap = repo_dir.join("snapshots").join(commit);
    p.save(&snap).unwrap();
    std::fs::create_dir_all(repo_dir.join("refs")).unwrap();
    std::fs::write(repo_dir.join("refs").join("main"), commit).unwrap();
    let hub = HubOptions { cache_dir: Some(cache.path().to_path_buf()), offline: true, token: None };
    let opts = LoadOptions { hub: hub.clone(), ..LoadOptions::default() };
    let q = Policy::load(&ModelSource::parse("mentor/tiny"), &opts).unwrap();
    assert_eq!(logprobs(&q), logprobs(&p));
    // Offline, a repo that is not cached fails with a message naming the file, without network.
    let err = Policy::load(&ModelSource::parse("mentor/absent"), &opts).unwrap_err();
    assert!(err.to_string().contains("config.json"), "{err}");
}
