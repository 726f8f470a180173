//! Llama-3 (RoPE scaling), Qwen2 (q/k/v biases, tied head) and Qwen3 (q/k norm) against HF
//! transformers on tiny random-initialized checkpoints (`tests/fixtures/tiny/`, made by
//! `make_tiny_arch_fixtures.py`): 320 tokens, crossing the Llama-3 scaling's original
//! context of 256.

use std::path::PathBuf;

use mlxcel_core::Dtype;
use mlxcel_models::config::{Family, RopeScaling};
use mlxcel_models::weights::WeightFormat;
use mlxcel_models::{LoadOptions, Model};
use serde_json::Value;

/// Max |logit - reference| allowed: both sides compute in f32.
const TOL: f32 = 1e-3;

fn fixture(name: &str) -> (Model, Value) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tiny")
        .join(name);
    let model = Model::load(
        Some(dir.to_str().unwrap()),
        &LoadOptions {
            format: WeightFormat::Dense(Dtype::F32),
            seed: 0,
        },
    )
    .unwrap();
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference.json")).unwrap())
            .unwrap();
    (model, r)
}

fn ids(r: &Value) -> Vec<u32> {
    r["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// Max error over the reference positions of `[L, vocab]` logits.
fn max_err(all: &[f32], vocab: usize, r: &Value) -> f32 {
    let mut worst = 0f32;
    for (p, want) in r["positions"]
        .as_array()
        .unwrap()
        .iter()
        .zip(r["logits"].as_array().unwrap())
    {
        let p = p.as_u64().unwrap() as usize;
        for (j, w) in want.as_array().unwrap().iter().enumerate() {
            worst = worst.max((all[p * vocab + j] - w.as_f64().unwrap() as f32).abs());
        }
    }
    worst
}

fn check(name: &str, family: Family) {
    let (model, r) = fixture(name);
    assert_eq!(model.config().family, family);
    let ids = ids(&r);
    let vocab = model.config().vocab_size;

    // One forward pass over the whole sequence.
    let mut caches = model
        .new_caches(&mlxcel_models::KvConfig::default())
        .unwrap();
    let full = model
        .forward(&ids, &mut caches, false)
        .unwrap()
        .astype(Dtype::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let e_full = max_err(&full, vocab, &r);

    // The same through the KV cache: uneven prefill chunks, then one token at a time.
    let mut caches = model
        .new_caches(&mlxcel_models::KvConfig::default())
        .unwrap();
    let mut chunked = Vec::with_capacity(full.len());
    let mut pos = 0;
    for step in [100usize, 37, 119] {
        let l = model
            .forward(&ids[pos..pos + step], &mut caches, false)
            .unwrap();
        chunked.extend(l.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap());
        pos += step;
    }
    while pos < ids.len() {
        let l = model
            .forward(&ids[pos..pos + 1], &mut caches, false)
            .unwrap();
        chunked.extend(l.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap());
        pos += 1;
    }
    let e_cached = max_err(&chunked, vocab, &r);
    eprintln!("{name}: max |logit error| full pass {e_full:.2e}, chunked + decode {e_cached:.2e}");
    assert!(e_full < TOL, "{name}: full pass error {e_full}");
    assert!(e_cached < TOL, "{name}: cached pass error {e_cached}");
}

#[test]
fn llama3_with_rope_scaling_matches_transformers() {
    let (model, _) = fixture("llama3");
    assert!(
        matches!(model.config().rope_scaling, RopeScaling::Llama3(_)),
        "rope_parameters must be read"
    );
    check("llama3", Family::Llama);
}

#[test]
fn qwen2_with_biases_and_tied_head_matches_transformers() {
    let (model, _) = fixture("qwen2");
    assert!(model.config().tie_word_embeddings && model.config().attention_bias);
    check("qwen2", Family::Qwen2);
}

#[test]
fn qwen3_with_qk_norm_matches_transformers() {
    let (model, _) = fixture("qwen3");
    assert_eq!(model.config().head_dim, 32);
    check("qwen3", Family::Qwen3);
}
