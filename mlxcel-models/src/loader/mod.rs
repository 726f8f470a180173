//! Loading a model: its configuration, weights and tokenizer from a local directory
//! (HF `config.json` + safetensors), a `.gguf` file, the HF hub cache, the default
//! model, or synthetic random weights of a real model's shapes.

pub mod gguf;
pub mod gguf_quants;
pub mod resolve;
pub mod synthetic;

use std::path::{Path, PathBuf};

use mlxcel_core::mlx::io::TensorFile;
use mlxcel_core::mlx::ops::{quantize, Quantized, WeightLayout};
use mlxcel_core::Array;

use crate::config::ModelConfig;
use crate::error::{ModelError, Result};
use crate::weights::{Tensor, WeightFormat, Weights};
use gguf::{GgmlType, GgufFile, GgufTensorInfo};

/// Maps a GGUF tensor name onto the HF name the model code uses.
pub fn hf_name(gguf_name: &str) -> Option<String> {
    let fixed = match gguf_name {
        "token_embd.weight" => Some("model.embed_tokens.weight"),
        "output_norm.weight" => Some("model.norm.weight"),
        "output.weight" => Some("lm_head.weight"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some(f.to_string());
    }
    let rest = gguf_name.strip_prefix("blk.")?;
    let (layer, part) = rest.split_once('.')?;
    let (stem, suffix) = part.rsplit_once('.')?;
    let hf = match stem {
        "attn_norm" => "input_layernorm",
        "ffn_norm" => "post_attention_layernorm",
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "attn_q_norm" => "self_attn.q_norm",
        "attn_k_norm" => "self_attn.k_norm",
        "ffn_gate" => "mlp.gate_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        _ => return None,
    };
    Some(format!("model.layers.{layer}.{hf}.{suffix}"))
}

/// Undoes llama.cpp's row permutation of Q/K (made for adjacent-pair RoPE) along the
/// first axis: `[h, r/h/2, 2, ...] -> [h, 2, r/h/2, ...]`.
fn unpermute_rows(a: &Array, heads: usize) -> Result<Array> {
    let s = a.shape();
    let rows = s[0];
    let h = heads as i32;
    let mut split = vec![h, rows / h / 2, 2];
    split.extend_from_slice(&s[1..]);
    let mut axes: Vec<i32> = vec![0, 2, 1];
    axes.extend(3..split.len() as i32);
    Ok(a.reshape(&split)?.transpose(&axes)?.reshape(&s)?)
}

fn unpermute(t: Tensor, heads: usize) -> Result<Tensor> {
    Ok(match t {
        Tensor::Dense(a) => Tensor::Dense(unpermute_rows(&a, heads)?),
        Tensor::Quantized(q) => Tensor::Quantized(Quantized {
            w: unpermute_rows(&q.w, heads)?,
            scales: unpermute_rows(&q.scales, heads)?,
            biases: unpermute_rows(&q.biases, heads)?,
            group_size: q.group_size,
            bits: q.bits,
            layout: WeightLayout::Mlx,
        }),
    })
}

/// Converts one GGUF tensor according to the weight format.
fn gguf_tensor(g: &GgufFile, t: &GgufTensorInfo, fmt: WeightFormat) -> Result<Tensor> {
    let shape = t.shape();
    let data = g.data(t);
    let n = t.n_elements();
    let dtype = fmt.dtype();
    let bad = |m: String| ModelError::BadFile {
        path: g.path.clone(),
        message: format!("tensor '{}': {m}", t.name),
    };
    match t.ggml_type {
        GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => {
            let host = match t.ggml_type {
                GgmlType::F32 => Array::from_slice(&gguf_quants::dequantize(t.ggml_type, data, n)?, &shape)?,
                GgmlType::F16 => {
                    let v: Vec<half::f16> = data
                        .chunks_exact(2)
                        .map(|c| half::f16::from_le_bytes([c[0], c[1]]))
                        .collect();
                    Array::from_slice(&v, &shape)?
                }
                _ => {
                    let v: Vec<half::bf16> = data
                        .chunks_exact(2)
                        .map(|c| half::bf16::from_le_bytes([c[0], c[1]]))
                        .collect();
                    Array::from_slice(&v, &shape)?
                }
            };
            Ok(Tensor::Dense(host.astype(dtype)?))
        }
        GgmlType::Other(_) => Err(bad(format!(
            "{} is not supported (supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K)",
            t.ggml_type.name()
        ))),
        ty => {
            if shape.len() != 2 {
                return Err(bad(format!("quantized tensor with shape {shape:?}, expected 2-D")));
            }
            if let (WeightFormat::Native(_), Some(p)) = (fmt, gguf_quants::to_mlx_affine(ty, data, n)) {
                let (rows, cols) = (shape[0], shape[1]);
                let w = Array::from_slice(&p.words, &[rows, cols * p.bits / 32])?;
                let scales = Array::from_slice(&p.scales, &[rows, cols / 32])?.astype(dtype)?;
                let biases = Array::from_slice(&p.biases, &[rows, cols / 32])?.astype(dtype)?;
                return Ok(Tensor::Quantized(Quantized {
                    w,
                    scales,
                    biases,
                    group_size: 32,
                    bits: p.bits,
                    layout: WeightLayout::Mlx,
                }));
            }
            // K-quants and Q5_x (and every type in Dense format): exact dequantization.
            let f = gguf_quants::dequantize(ty, data, n)?;
            let dense = Array::from_slice(&f, &shape)?.astype(dtype)?;
            match fmt {
                // Keep GPU memory and bandwidth near the file's: MLX affine with group 64,
                // 4-bit for Q4_K, 8-bit for the wider types (Q5_x, Q6_K).
                WeightFormat::Native(_) if shape[1] % 64 == 0 => {
                    let bits = if ty == GgmlType::Q4K { 4 } else { 8 };
                    Ok(Tensor::Quantized(quantize(&dense, 64, bits)?))
                }
                _ => Ok(Tensor::Dense(dense)),
            }
        }
    }
}

/// Reads all weights of a GGUF model under HF names.
pub fn load_gguf_weights(g: &GgufFile, cfg: &ModelConfig, fmt: WeightFormat) -> Result<Weights> {
    let mut w = Weights::new(g.path.display().to_string());
    let permuted = g.get_str("general.architecture")? == "llama";
    let mut pending = Vec::new();
    for t in &g.tensors {
        if t.name == "rope_freqs.weight" {
            continue; // read by the config (RoPE factors)
        }
        let Some(name) = hf_name(&t.name) else {
            tracing::debug!("ignoring GGUF tensor {}", t.name);
            continue;
        };
        let mut tensor = gguf_tensor(g, t, fmt)?;
        if permuted && name.contains("self_attn.q_proj.") {
            tensor = unpermute(tensor, cfg.num_heads)?;
        } else if permuted && name.contains("self_attn.k_proj.") {
            tensor = unpermute(tensor, cfg.num_kv_heads)?;
        }
        match &tensor {
            Tensor::Dense(a) => pending.push(a.clone()),
            Tensor::Quantized(q) => {
                pending.extend([q.w.clone(), q.scales.clone(), q.biases.clone()])
            }
        }
        // Materialize in batches so host copies and graph nodes do not pile up.
        if pending.len() >= 32 {
            mlxcel_core::mlx::array::eval_all(&pending.iter().collect::<Vec<_>>())?;
            pending.clear();
        }
        w.insert(name, tensor);
    }
    mlxcel_core::mlx::array::eval_all(&pending.iter().collect::<Vec<_>>())?;
    Ok(w)
}

/// The `.safetensors` files of a directory (one file, or shards), sorted.
pub fn safetensors_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| ModelError::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(ModelError::BadFile {
            path: dir.to_path_buf(),
            message: "no .safetensors files in the model directory".into(),
        });
    }
    Ok(files)
}

/// Reads the weights of an HF-layout directory (single or sharded safetensors; f32, f16,
/// bf16, or MLX affine-quantized with `quantization: {group_size, bits}` in the config).
pub fn load_safetensors_weights(
    dir: &Path,
    cfg: &ModelConfig,
    fmt: WeightFormat,
) -> Result<Weights> {
    let mut w = Weights::new(dir.display().to_string());
    let dtype = fmt.dtype();
    for path in safetensors_files(dir)? {
        let f = TensorFile::load_safetensors(&path)?;
        let names = f.names();
        for name in &names {
            if name.ends_with(".scales") || name.ends_with(".biases") {
                continue;
            }
            let a = f.get(name)?;
            let base = name.strip_suffix(".weight").unwrap_or(name);
            let scales_name = format!("{base}.scales");
            let tensor = if names.contains(&scales_name) {
                let q = cfg.quantization.ok_or_else(|| ModelError::MissingField {
                    path: dir.join("config.json"),
                    field: "quantization".into(),
                    expected: format!("{{group_size, bits}}: '{name}' is quantized"),
                })?;
                let biases = f.get(&format!("{base}.biases"))?;
                let qt = Quantized {
                    w: a,
                    scales: f.get(&scales_name)?.astype(dtype)?,
                    biases: biases.astype(dtype)?,
                    group_size: q.group_size,
                    bits: q.bits,
                    layout: WeightLayout::Mlx,
                };
                match fmt {
                    WeightFormat::Dense(d) => Tensor::Dense(qt.dequantize(d)?),
                    WeightFormat::Native(_) => Tensor::Quantized(qt),
                }
            } else {
                Tensor::Dense(if a.dtype() == dtype {
                    a
                } else {
                    a.astype(dtype)?
                })
            };
            w.insert(name.clone(), tensor);
        }
    }
    Ok(w)
}

/// RoPE period multipliers stored in a GGUF (`rope_freqs.weight`, Llama-3 files).
pub fn gguf_rope_factors(g: &GgufFile) -> Result<Option<Vec<f32>>> {
    match g.tensor("rope_freqs.weight") {
        Some(t) => Ok(Some(gguf_quants::dequantize(
            t.ggml_type,
            g.data(t),
            t.n_elements(),
        )?)),
        None => Ok(None),
    }
}
