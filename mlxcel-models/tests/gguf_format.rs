//! The GGUF reader and the ggml block decoders: dequantization against the PyPI `gguf`
//! package on random blocks (`fixtures/gguf_quant_blocks.json`), the lossless Q4_0 / Q4_1 /
//! Q8_0 -> MLX affine mapping, and clear errors for broken files.

use mlxcel_core::mlx::io::save_gguf;
use mlxcel_core::mlx::ops::{Quantized, WeightLayout};
use mlxcel_core::{Array, Dtype};
use mlxcel_models::loader::gguf::{GgmlType, GgufFile};
use mlxcel_models::loader::gguf_quants::{dequantize, to_mlx_affine};
use mlxcel_models::loader::hf_name;
use serde_json::Value;

fn ggml_type(name: &str) -> GgmlType {
    match name {
        "Q4_0" => GgmlType::Q4_0,
        "Q4_1" => GgmlType::Q4_1,
        "Q5_0" => GgmlType::Q5_0,
        "Q5_1" => GgmlType::Q5_1,
        "Q8_0" => GgmlType::Q8_0,
        "Q4_K" => GgmlType::Q4K,
        "Q5_K" => GgmlType::Q5K,
        "Q6_K" => GgmlType::Q6K,
        other => panic!("unexpected type {other}"),
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn cases() -> Vec<(GgmlType, Vec<u8>, Vec<f32>)> {
    let v: Value = serde_json::from_str(include_str!("fixtures/gguf_quant_blocks.json")).unwrap();
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                ggml_type(c["type"].as_str().unwrap()),
                hex(c["hex"].as_str().unwrap()),
                c["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn dequantization_matches_gguf_py_for_every_type() {
    let all = cases();
    assert_eq!(all.len(), 8);
    for (ty, bytes, want) in all {
        let got = dequantize(ty, &bytes, want.len()).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-6 * w.abs().max(1e-3),
                "{ty:?} element {i}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn q4_0_q4_1_q8_0_map_losslessly_onto_mlx_affine() {
    for (ty, bytes, want) in cases() {
        let Some(p) = to_mlx_affine(ty, &bytes, want.len()) else {
            assert!(!matches!(
                ty,
                GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q8_0
            ));
            continue;
        };
        let n = want.len() as i32;
        let q = Quantized {
            w: Array::from_slice(&p.words, &[1, n * p.bits / 32]).unwrap(),
            scales: Array::from_slice(&p.scales, &[1, n / 32]).unwrap(),
            biases: Array::from_slice(&p.biases, &[1, n / 32]).unwrap(),
            group_size: 32,
            bits: p.bits,
            layout: WeightLayout::Mlx,
        };
        let got = q.dequantize(Dtype::F32).unwrap().to_vec::<f32>().unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-6 * w.abs().max(1e-3),
                "{ty:?} element {i}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn gguf_tensor_names_map_to_hf_names() {
    assert_eq!(
        hf_name("token_embd.weight").unwrap(),
        "model.embed_tokens.weight"
    );
    assert_eq!(hf_name("output.weight").unwrap(), "lm_head.weight");
    assert_eq!(
        hf_name("blk.7.attn_q.weight").unwrap(),
        "model.layers.7.self_attn.q_proj.weight"
    );
    assert_eq!(
        hf_name("blk.0.attn_k.bias").unwrap(),
        "model.layers.0.self_attn.k_proj.bias"
    );
    assert_eq!(
        hf_name("blk.3.ffn_down.weight").unwrap(),
        "model.layers.3.mlp.down_proj.weight"
    );
    assert_eq!(
        hf_name("blk.1.attn_k_norm.weight").unwrap(),
        "model.layers.1.self_attn.k_norm.weight"
    );
    assert!(hf_name("blk.1.something_else.weight").is_none());
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mlxcel-gguf-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn reader_reads_metadata_and_tensors_written_by_mlx() {
    let dir = tmp("ok");
    let path = dir.join("m.gguf");
    let w = Array::from_slice(&(0..96).map(|x| x as f32).collect::<Vec<_>>(), &[3, 32]).unwrap();
    let n = Array::scalar(7u32).unwrap();
    save_gguf(
        &path,
        &[("blk.0.attn_q.weight", &w)],
        &[("general.architecture", "llama")],
        &[("llama.block_count", &n)],
    )
    .unwrap();
    let g = GgufFile::open(&path).unwrap();
    assert_eq!(g.get_str("general.architecture").unwrap(), "llama");
    assert_eq!(g.get_u64("llama.block_count").unwrap(), 7);
    let t = g.tensor("blk.0.attn_q.weight").unwrap();
    assert_eq!(t.shape(), vec![3, 32]);
    assert_eq!(t.ggml_type, GgmlType::F32);
    let vals = dequantize(t.ggml_type, g.data(t), t.n_elements()).unwrap();
    assert_eq!(vals[95], 95.0);
    let missing = g.get_u64("llama.embedding_length").unwrap_err().to_string();
    assert!(
        missing.contains("llama.embedding_length") && missing.contains("m.gguf"),
        "{missing}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn broken_files_give_clear_errors() {
    let dir = tmp("bad");
    let path = dir.join("m.gguf");
    let w = Array::ones(&[64, 64], Dtype::F32).unwrap();
    save_gguf(
        &path,
        &[("token_embd.weight", &w)],
        &[("general.architecture", "llama")],
        &[],
    )
    .unwrap();
    let bytes = std::fs::read(&path).unwrap();

    let cut = dir.join("cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    let e = GgufFile::open(&cut).err().unwrap().to_string();
    assert!(
        e.contains("truncated") && e.contains("token_embd.weight") && e.contains("cut.gguf"),
        "{e}"
    );

    let header_only = dir.join("head.gguf");
    std::fs::write(&header_only, &bytes[..20]).unwrap();
    let e = GgufFile::open(&header_only).err().unwrap().to_string();
    assert!(e.contains("truncated"), "{e}");

    let junk = dir.join("junk.gguf");
    std::fs::write(&junk, b"PK\x03\x04 definitely not gguf").unwrap();
    let e = GgufFile::open(&junk).err().unwrap().to_string();
    assert!(e.contains("not a GGUF file"), "{e}");

    let e = GgufFile::open(&dir.join("absent.gguf"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("absent.gguf"), "{e}");
    std::fs::remove_dir_all(dir).ok();
}
