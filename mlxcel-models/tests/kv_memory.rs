//! The compressed caches are compressed in memory, not only on paper: stored bytes per
//! position match the formats, and a decode step at a long context never materializes a
//! full-size copy of the cache (the split paths dequantize one layer at a time).
//! Its own test binary: MLX's memory counters are process-wide.

use mlxcel_core::kv::KvMode;
use mlxcel_core::mlx::memory;
use mlxcel_core::Dtype;
use mlxcel_models::loader::resolve::default_model;
use mlxcel_models::weights::WeightFormat;
use mlxcel_models::{KvConfig, LoadOptions, Model};

#[test]
fn decode_peak_memory_shows_the_compression() {
    let m = Model::load(
        Some(default_model().unwrap().to_str().unwrap()),
        &LoadOptions {
            format: WeightFormat::Dense(Dtype::F32),
            seed: 0,
        },
    )
    .unwrap();
    let ctx = 2048usize;
    let prompt: Vec<u32> = (0..ctx as u32).map(|i| (i * 7919) % 49152).collect();
    let (layers, kvh, d) = (30usize, 3usize, 64usize);
    let fp16_per_pos = layers * 2 * kvh * d * 2;
    for (mode, per_pos) in [
        ("fp16", fp16_per_pos),
        // 27 turbo4 layers (K and V: 32 B of nibbles + 2 B norm per head vector) + 3 boundary
        // layers (the first three, ADR 0028) of fp16 keys and turbo4 values (ADR 0027).
        (
            "turbo4",
            27 * 2 * kvh * (32 + 2) + 3 * kvh * (d * 2 + 32 + 2),
        ),
        // turbo4-asym keeps the first and last two layers in fp16+int8 (int8 values: d bytes +
        // one fp16 scale per vector).
        (
            "turbo4-asym",
            26 * kvh * (d * 2 + 32 + 2) + 4 * kvh * (d * 2 + d + 2),
        ),
    ] {
        let kv = KvConfig::new(KvMode::parse(mode).unwrap());
        let mut caches = m.new_caches(&kv).unwrap();
        for chunk in prompt.chunks(512) {
            m.forward(chunk, &mut caches, true).unwrap().eval().unwrap();
        }
        let stored: usize = caches.iter().map(|c| c.bytes()).sum();
        assert_eq!(stored, ctx * per_pos, "{mode}: stored bytes");
        memory::clear_cache().unwrap();
        let before = memory::active_memory().unwrap();
        memory::reset_peak_memory().unwrap();
        for t in 0..4u32 {
            m.forward(&[t + 11], &mut caches, true)
                .unwrap()
                .eval()
                .unwrap();
        }
        let transient = memory::peak_memory().unwrap().saturating_sub(before);
        let full_fp16 = ctx * fp16_per_pos;
        eprintln!(
            "{mode}: cache {:.1} MB ({:.2}x smaller than fp16), decode-step transient {:.1} MB (full fp16 cache {:.1} MB)",
            stored as f64 / 1e6,
            full_fp16 as f64 / stored as f64,
            transient as f64 / 1e6,
            full_fp16 as f64 / 1e6
        );
        // One layer dequantized at a time: far below a full-size copy of the cache.
        assert!(
            transient < full_fp16 / 4,
            "{mode}: decode transient {transient} B vs full fp16 cache {full_fp16} B"
        );
    }
}
