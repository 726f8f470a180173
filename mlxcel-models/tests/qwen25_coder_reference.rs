//! Qwen2 on real weights: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF: Q4_K, Q5_0, Q6_K, Q8_0
//! tensors; q/k/v biases; untied head) against HF transformers at f32 on the exact
//! dequantization of the same file (`fixtures/qwen25_coder_05b_reference.json`).
//!
//! Opt-in (a 491 MB download, 2.5 GB of f32 weights): fetch the file as
//! `../shared/reference/models-and-corpora.md` says (M2), then
//!   MLXCEL_QWEN25_05B_GGUF=/path/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \
//!     cargo test --release -p mlxcel-models --test qwen25_coder_reference -- --ignored

mod common;

use mlxcel_core::Dtype;
use mlxcel_models::weights::WeightFormat;
use mlxcel_models::{LoadOptions, Model};

#[test]
#[ignore = "opt-in: needs the 491 MB Qwen2.5-Coder-0.5B GGUF in MLXCEL_QWEN25_05B_GGUF"]
fn qwen25_coder_05b_matches_transformers() {
    let path = std::env::var("MLXCEL_QWEN25_05B_GGUF")
        .expect("set MLXCEL_QWEN25_05B_GGUF to the GGUF path");
    let model = Model::load(
        Some(&path),
        &LoadOptions {
            format: WeightFormat::Dense(Dtype::F32),
            seed: 0,
        },
    )
    .unwrap();
    let reference =
        serde_json::from_str(include_str!("fixtures/qwen25_coder_05b_reference.json")).unwrap();
    common::check_against_reference(&model, &reference, "qwen2.5-coder-0.5b", 0.1);
}
