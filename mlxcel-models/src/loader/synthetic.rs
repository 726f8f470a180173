//! Random weights with the exact shapes and quantization of a real model, for speed work
//! (vLLM calls this the dummy load format). The numbers are random; the shapes, dtypes,
//! bytes moved and kernels run are those of the real model.

use std::path::Path;

use mlxcel_core::mlx::ops::{Quantized, WeightLayout};
use mlxcel_core::mlx::random;
use mlxcel_core::{Array, Dtype};

use crate::config::{Family, ModelConfig};
use crate::error::{ModelError, Result};
use crate::weights::{Tensor, WeightFormat, Weights};

/// Presets compiled into the binary (the files live in `benchmarks/configs/`).
pub const PRESETS: &[(&str, &str)] = &[
    (
        "llama3-8b-4bit",
        include_str!("../../../benchmarks/configs/llama3-8b-4bit.json"),
    ),
    (
        "qwen3-8b-4bit",
        include_str!("../../../benchmarks/configs/qwen3-8b-4bit.json"),
    ),
];

/// The config of a preset name or a JSON file path.
pub fn config(spec: &str) -> Result<ModelConfig> {
    if let Some((name, text)) = PRESETS.iter().find(|(n, _)| *n == spec) {
        let v: serde_json::Value = serde_json::from_str(text).expect("presets are valid JSON");
        return ModelConfig::from_hf_value(&v, Path::new(&format!("synthetic preset {name}")));
    }
    let p = Path::new(spec);
    if p.is_file() {
        return ModelConfig::from_hf_json(p);
    }
    let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
    Err(ModelError::Resolve {
        source_name: format!("synthetic:{spec}"),
        message: format!("not a preset ({}) nor a config.json path", names.join(", ")),
    })
}

struct Gen {
    key: Array,
    counter: u64,
}

impl Gen {
    fn next_key(&mut self) -> Result<Array> {
        self.counter += 1;
        let ks = random::split(&self.key, 2)?;
        self.key = ks.slice_axis(0, 0, 1)?.squeeze(&[0])?;
        Ok(ks.slice_axis(0, 1, 2)?.squeeze(&[0])?)
    }

    fn dense(&mut self, shape: &[i32], std: f32, dtype: Dtype) -> Result<Array> {
        let k = self.next_key()?;
        Ok(random::normal(shape, dtype, Some(&k))?.mul_scalar(std as f64)?)
    }

    /// Uniformly random packed words, scales giving each row a std of about `std`, and
    /// biases centring the codes on zero.
    fn quantized(
        &mut self,
        rows: i32,
        cols: i32,
        bits: i32,
        group: i32,
        std: f32,
        dtype: Dtype,
    ) -> Result<Quantized> {
        let words = cols * bits / 32;
        let half = |g: &mut Gen| -> Result<Array> {
            let k = g.next_key()?;
            Ok(random::uniform(&[rows, words], Dtype::F32, Some(&k))?
                .mul_scalar(65536.0)?
                .floor()?
                .astype(Dtype::U32)?)
        };
        let hi = half(self)?;
        let lo = half(self)?;
        let w = hi.left_shift(&Array::scalar(16u32)?)?.bitwise_or(&lo)?;
        let levels = ((1u32 << bits) - 1) as f32;
        // Uniform codes on [0, levels] have std levels/sqrt(12).
        let scale = std / (levels / 12f32.sqrt());
        let scales = Array::full(&[rows, cols / group], scale as f64, dtype)?;
        let biases = Array::full(&[rows, cols / group], (-scale * levels / 2.0) as f64, dtype)?;
        Ok(Quantized {
            w,
            scales,
            biases,
            group_size: group,
            bits,
            layout: WeightLayout::Mlx,
        })
    }
}

/// Random weights for `cfg` under HF names.
pub fn weights(cfg: &ModelConfig, fmt: WeightFormat, seed: u64) -> Result<Weights> {
    let dtype = fmt.dtype();
    let mut g = Gen {
        key: random::key(seed)?,
        counter: 0,
    };
    let mut w = Weights::new(format!("synthetic {:?} model", cfg.family));
    let quant = match fmt {
        WeightFormat::Native(_) => cfg.quantization,
        WeightFormat::Dense(_) => None,
    };
    let matrix =
        |g: &mut Gen, w: &mut Weights, name: String, rows: usize, cols: usize| -> Result<()> {
            let std = 1.0 / (cols as f32).sqrt();
            let t = match quant {
                Some(q) if cols as i32 % q.group_size == 0 => Tensor::Quantized(g.quantized(
                    rows as i32,
                    cols as i32,
                    q.bits,
                    q.group_size,
                    std,
                    dtype,
                )?),
                _ => Tensor::Dense(g.dense(&[rows as i32, cols as i32], std, dtype)?),
            };
            match &t {
                Tensor::Dense(a) => a.eval()?,
                Tensor::Quantized(q) => {
                    mlxcel_core::mlx::array::eval_all(&[&q.w, &q.scales, &q.biases])?
                }
            }
            w.insert(name, t);
            Ok(())
        };
    let ones = |n: usize| Array::ones(&[n as i32], dtype);
    let (h, d) = (cfg.hidden_size, cfg.head_dim);
    let (qd, kvd) = (cfg.num_heads * d, cfg.num_kv_heads * d);
    for (name, r, c) in matrices(cfg) {
        matrix(&mut g, &mut w, name, r, c)?;
    }
    for i in 0..cfg.num_layers {
        let p = format!("model.layers.{i}");
        if cfg.family == Family::Qwen2 || cfg.attention_bias {
            for (n, r) in [("q_proj", qd), ("k_proj", kvd), ("v_proj", kvd)] {
                w.insert(
                    format!("{p}.self_attn.{n}.bias"),
                    Tensor::Dense(g.dense(&[r as i32], 0.02, dtype)?),
                );
            }
        }
        if cfg.family == Family::Qwen3 {
            w.insert(
                format!("{p}.self_attn.q_norm.weight"),
                Tensor::Dense(ones(d)?),
            );
            w.insert(
                format!("{p}.self_attn.k_norm.weight"),
                Tensor::Dense(ones(d)?),
            );
        }
        w.insert(
            format!("{p}.input_layernorm.weight"),
            Tensor::Dense(ones(h)?),
        );
        w.insert(
            format!("{p}.post_attention_layernorm.weight"),
            Tensor::Dense(ones(h)?),
        );
    }
    w.insert("model.norm.weight", Tensor::Dense(ones(h)?));
    Ok(w)
}

/// The weight matrices of `cfg` as (name, rows, cols), in the order [`weights`] draws them.
fn matrices(cfg: &ModelConfig) -> Vec<(String, usize, usize)> {
    let (h, d) = (cfg.hidden_size, cfg.head_dim);
    let (qd, kvd) = (cfg.num_heads * d, cfg.num_kv_heads * d);
    let mut m = vec![("model.embed_tokens.weight".to_string(), cfg.vocab_size, h)];
    for i in 0..cfg.num_layers {
        for (n, r, c) in [
            ("self_attn.q_proj", qd, h),
            ("self_attn.k_proj", kvd, h),
            ("self_attn.v_proj", kvd, h),
            ("self_attn.o_proj", h, qd),
            ("mlp.gate_proj", cfg.intermediate_size, h),
            ("mlp.up_proj", cfg.intermediate_size, h),
            ("mlp.down_proj", h, cfg.intermediate_size),
        ] {
            m.push((format!("model.layers.{i}.{n}.weight"), r, c));
        }
    }
    if !cfg.tie_word_embeddings {
        m.push(("lm_head.weight".to_string(), cfg.vocab_size, h));
    }
    m
}

/// Bytes of an MLX-affine quantized `rows` x `cols` matrix: the packed `bits`-bit values
/// plus an fp16 scale and an fp16 bias per group of `group` values (`cols` a multiple of
/// `group`).
pub fn quantized_matrix_bytes(rows: u64, cols: u64, bits: u64, group: u64) -> u64 {
    rows * cols * bits / 8 + rows * (cols / group) * 4
}

/// Bytes [`weights`] allocates for `cfg` in its own format with fp16 compute dtype (MLX
/// 4-bit with fp16 scales and biases when the config has a quantization, else fp16): the
/// matrices plus the norms and biases.
pub fn weight_bytes(cfg: &ModelConfig) -> u64 {
    let matrices: u64 = matrices(cfg)
        .iter()
        .map(|&(_, r, c)| {
            let (r, c) = (r as u64, c as u64);
            match cfg.quantization {
                Some(q) if c % q.group_size as u64 == 0 => {
                    quantized_matrix_bytes(r, c, q.bits as u64, q.group_size as u64)
                }
                _ => r * c * 2,
            }
        })
        .sum();
    let (h, d) = (cfg.hidden_size as u64, cfg.head_dim as u64);
    let mut per_layer = 2 * h;
    if cfg.family == Family::Qwen3 {
        per_layer += 2 * d;
    }
    if cfg.family == Family::Qwen2 || cfg.attention_bias {
        per_layer += (cfg.num_heads as u64 + 2 * cfg.num_kv_heads as u64) * d;
    }
    matrices + 2 * (cfg.num_layers as u64 * per_layer + h)
}
