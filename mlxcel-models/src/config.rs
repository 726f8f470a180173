//! [`ModelConfig`]: the architecture hyper-parameters, read from an HF `config.json` or
//! from GGUF metadata. Every missing required field is an error naming the file and key.

use std::path::Path;

use serde_json::Value;

use crate::error::{ModelError, Result};
use crate::loader::gguf::GgufFile;

/// The model families mlxcel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Llama 2/3 (and SmolLM2, which is llama-architecture).
    Llama,
    /// Qwen2 / Qwen2.5: llama attention with q/k/v biases.
    Qwen2,
    /// Qwen3: per-head RMSNorm on q and k, no biases.
    Qwen3,
}

impl Family {
    pub const SUPPORTED: &'static str = "llama, qwen2, qwen3";

    fn parse(name: &str) -> Option<Family> {
        match name.to_ascii_lowercase().as_str() {
            "llama" | "llamaforcausallm" | "mistral" => Some(Family::Llama),
            "qwen2" | "qwen2forcausallm" => Some(Family::Qwen2),
            "qwen3" | "qwen3forcausallm" => Some(Family::Qwen3),
            _ => None,
        }
    }
}

/// Llama-3 style RoPE frequency scaling (`rope_type: llama3`).
#[derive(Debug, Clone, PartialEq)]
pub struct Llama3RopeScaling {
    pub factor: f32,
    pub low_freq_factor: f32,
    pub high_freq_factor: f32,
    pub original_max_position_embeddings: f32,
}

/// How RoPE frequencies are made.
#[derive(Debug, Clone, PartialEq)]
pub enum RopeScaling {
    None,
    Llama3(Llama3RopeScaling),
    /// Per-frequency multipliers of the period (GGUF `rope_freqs.weight`).
    Factors(Vec<f32>),
}

/// MLX affine quantization of the stored weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantSpec {
    pub group_size: i32,
    pub bits: i32,
}

/// Everything the model code needs to build the network.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub family: Family,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub vocab_size: usize,
    pub rms_norm_eps: f32,
    pub rope_theta: f32,
    pub rope_scaling: RopeScaling,
    /// RoPE rotates adjacent pairs (GGUF llama layout kept as is) instead of halves.
    pub rope_traditional: bool,
    pub tie_word_embeddings: bool,
    /// q/k/v projections carry biases (Qwen2, or `attention_bias: true`).
    pub attention_bias: bool,
    pub max_position_embeddings: usize,
    pub bos_token_id: Option<u32>,
    pub eos_token_ids: Vec<u32>,
    /// Affine quantization of the checkpoint (mlx-community style), if any.
    pub quantization: Option<QuantSpec>,
}

fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn req_usize(v: &Value, key: &str, path: &Path) -> Result<usize> {
    field(v, key)
        .and_then(Value::as_u64)
        .map(|x| x as usize)
        .ok_or_else(|| ModelError::MissingField {
            path: path.to_path_buf(),
            field: key.to_string(),
            expected: "a positive integer".into(),
        })
}

fn id_list(v: Option<&Value>) -> Vec<u32> {
    match v {
        Some(Value::Number(n)) => n.as_u64().map(|x| vec![x as u32]).unwrap_or_default(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_u64())
            .map(|x| x as u32)
            .collect(),
        _ => Vec::new(),
    }
}

fn llama3_scaling(obj: &Value, path: &Path) -> Result<Option<Llama3RopeScaling>> {
    let kind = field(obj, "rope_type")
        .or_else(|| field(obj, "type"))
        .and_then(Value::as_str)
        .unwrap_or("default");
    match kind {
        "default" | "linear" if field(obj, "factor").is_none() => Ok(None),
        "default" => Ok(None),
        "llama3" => {
            let f = |k: &str| -> Result<f32> {
                field(obj, k)
                    .and_then(Value::as_f64)
                    .map(|x| x as f32)
                    .ok_or_else(|| ModelError::MissingField {
                        path: path.to_path_buf(),
                        field: format!("rope_scaling.{k}"),
                        expected: "a number".into(),
                    })
            };
            Ok(Some(Llama3RopeScaling {
                factor: f("factor")?,
                low_freq_factor: f("low_freq_factor")?,
                high_freq_factor: f("high_freq_factor")?,
                original_max_position_embeddings: f("original_max_position_embeddings")?,
            }))
        }
        other => Err(ModelError::Unsupported(format!(
            "{}: rope scaling type '{other}' is not supported (supported: llama3)",
            path.display()
        ))),
    }
}

impl ModelConfig {
    /// Reads an HF `config.json`.
    pub fn from_hf_json(path: &Path) -> Result<ModelConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        let v: Value = serde_json::from_str(&text).map_err(|e| ModelError::BadFile {
            path: path.to_path_buf(),
            message: format!("not valid JSON: {e}"),
        })?;
        Self::from_hf_value(&v, path)
    }

    /// Builds the config from parsed `config.json` contents (`path` is for messages).
    pub fn from_hf_value(v: &Value, path: &Path) -> Result<ModelConfig> {
        let arch = field(v, "model_type")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                field(v, "architectures")
                    .and_then(|a| a.get(0))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .ok_or_else(|| ModelError::MissingField {
                path: path.to_path_buf(),
                field: "model_type".into(),
                expected: "the architecture name (llama, qwen2, qwen3)".into(),
            })?;
        let family = Family::parse(&arch).ok_or_else(|| ModelError::UnknownArchitecture {
            path: path.to_path_buf(),
            arch: arch.clone(),
            supported: Family::SUPPORTED.into(),
        })?;
        let hidden_size = req_usize(v, "hidden_size", path)?;
        let num_heads = req_usize(v, "num_attention_heads", path)?;
        let num_kv_heads = field(v, "num_key_value_heads")
            .and_then(Value::as_u64)
            .map(|x| x as usize)
            .unwrap_or(num_heads);
        let head_dim = field(v, "head_dim")
            .and_then(Value::as_u64)
            .map(|x| x as usize)
            .unwrap_or(hidden_size / num_heads);
        // transformers 5.x moves rope settings under `rope_parameters`; read both.
        let rope_params = field(v, "rope_parameters");
        let rope_theta = field(v, "rope_theta")
            .or_else(|| rope_params.and_then(|p| field(p, "rope_theta")))
            .and_then(Value::as_f64)
            .unwrap_or(10000.0) as f32;
        let scaling_obj = field(v, "rope_scaling").or(rope_params);
        let rope_scaling = match scaling_obj {
            Some(obj) => match llama3_scaling(obj, path)? {
                Some(s) => RopeScaling::Llama3(s),
                None => RopeScaling::None,
            },
            None => RopeScaling::None,
        };
        let quantization = field(v, "quantization")
            .or_else(|| field(v, "quantization_config"))
            .map(|q| -> Result<QuantSpec> {
                let g = req_usize(q, "group_size", path)? as i32;
                let b = req_usize(q, "bits", path)? as i32;
                Ok(QuantSpec {
                    group_size: g,
                    bits: b,
                })
            })
            .transpose()?;
        let cfg = ModelConfig {
            family,
            hidden_size,
            intermediate_size: req_usize(v, "intermediate_size", path)?,
            num_layers: req_usize(v, "num_hidden_layers", path)?,
            num_heads,
            num_kv_heads,
            head_dim,
            vocab_size: req_usize(v, "vocab_size", path)?,
            rms_norm_eps: field(v, "rms_norm_eps")
                .and_then(Value::as_f64)
                .unwrap_or(1e-6) as f32,
            rope_theta,
            rope_scaling,
            rope_traditional: false,
            tie_word_embeddings: field(v, "tie_word_embeddings")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            attention_bias: family == Family::Qwen2
                || field(v, "attention_bias")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            max_position_embeddings: field(v, "max_position_embeddings")
                .and_then(Value::as_u64)
                .unwrap_or(4096) as usize,
            bos_token_id: field(v, "bos_token_id")
                .and_then(Value::as_u64)
                .map(|x| x as u32),
            eos_token_ids: id_list(field(v, "eos_token_id")),
            quantization,
        };
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// Reads the config from GGUF metadata (`<arch>.*` keys).
    pub fn from_gguf(g: &GgufFile) -> Result<ModelConfig> {
        let arch = g.get_str("general.architecture")?.to_string();
        let family = Family::parse(&arch).ok_or_else(|| ModelError::UnknownArchitecture {
            path: g.path.clone(),
            arch: arch.clone(),
            supported: Family::SUPPORTED.into(),
        })?;
        let k = |s: &str| format!("{arch}.{s}");
        let hidden_size = g.get_u64(&k("embedding_length"))? as usize;
        let num_heads = g.get_u64(&k("attention.head_count"))? as usize;
        let num_kv_heads = g
            .get(&k("attention.head_count_kv"))
            .and_then(|v| v.as_u64())
            .map(|x| x as usize)
            .unwrap_or(num_heads);
        let head_dim = g
            .get(&k("attention.key_length"))
            .and_then(|v| v.as_u64())
            .map(|x| x as usize)
            .unwrap_or(hidden_size / num_heads);
        let vocab_size = match g.get(&k("vocab_size")).and_then(|v| v.as_u64()) {
            Some(v) => v as usize,
            None => g
                .get("tokenizer.ggml.tokens")
                .and_then(|v| v.as_array())
                .map(|a| a.len())
                .ok_or_else(|| ModelError::MissingField {
                    path: g.path.clone(),
                    field: "tokenizer.ggml.tokens".into(),
                    expected: "the vocabulary (or <arch>.vocab_size)".into(),
                })?,
        };
        let rope_scaling = match g.get(&k("rope.scaling.type")).and_then(|v| v.as_str()) {
            None | Some("none") => RopeScaling::None,
            Some("llama3") => RopeScaling::Llama3(Llama3RopeScaling {
                factor: g.get_f64(&k("rope.scaling.factor"))? as f32,
                low_freq_factor: g.get_f64(&k("rope.scaling.low_freq_factor"))? as f32,
                high_freq_factor: g.get_f64(&k("rope.scaling.high_freq_factor"))? as f32,
                original_max_position_embeddings: g
                    .get_f64(&k("rope.scaling.original_context_length"))?
                    as f32,
            }),
            Some(other) => {
                return Err(ModelError::Unsupported(format!(
                    "{}: rope scaling type '{other}' is not supported",
                    g.path.display()
                )))
            }
        };
        let eos = g
            .get("tokenizer.ggml.eos_token_id")
            .and_then(|v| v.as_u64())
            .map(|x| vec![x as u32])
            .unwrap_or_default();
        let cfg = ModelConfig {
            family,
            hidden_size,
            intermediate_size: g.get_u64(&k("feed_forward_length"))? as usize,
            num_layers: g.get_u64(&k("block_count"))? as usize,
            num_heads,
            num_kv_heads,
            head_dim,
            vocab_size,
            rms_norm_eps: g.get_f64(&k("attention.layer_norm_rms_epsilon"))? as f32,
            rope_theta: g
                .get(&k("rope.freq_base"))
                .and_then(|v| v.as_f64())
                .unwrap_or(10000.0) as f32,
            rope_scaling,
            rope_traditional: false,
            tie_word_embeddings: g.tensor("output.weight").is_none(),
            attention_bias: g.tensor("blk.0.attn_q.bias").is_some(),
            max_position_embeddings: g
                .get(&k("context_length"))
                .and_then(|v| v.as_u64())
                .unwrap_or(4096) as usize,
            bos_token_id: g
                .get("tokenizer.ggml.bos_token_id")
                .and_then(|v| v.as_u64())
                .map(|x| x as u32),
            eos_token_ids: eos,
            quantization: None,
        };
        cfg.validate(&g.path)?;
        Ok(cfg)
    }

    fn validate(&self, path: &Path) -> Result<()> {
        let bad = |field: &str, expected: String| ModelError::MissingField {
            path: path.to_path_buf(),
            field: field.into(),
            expected,
        };
        if self.num_heads == 0
            || self.num_kv_heads == 0
            || !self.num_heads.is_multiple_of(self.num_kv_heads)
        {
            return Err(bad(
                "num_key_value_heads",
                format!(
                    "a divisor of num_attention_heads ({}), got {}",
                    self.num_heads, self.num_kv_heads
                ),
            ));
        }
        if self.head_dim == 0 || !self.head_dim.is_multiple_of(2) {
            return Err(bad(
                "head_dim",
                format!("an even number, got {}", self.head_dim),
            ));
        }
        for (name, v) in [
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_layers),
            ("vocab_size", self.vocab_size),
        ] {
            if v == 0 {
                return Err(bad(name, "a positive integer".into()));
            }
        }
        Ok(())
    }

    /// Bytes of one token's K and V in one layer at `bytes_per_elem`.
    pub fn kv_bytes_per_token_layer(&self, bytes_per_elem: usize) -> usize {
        2 * self.num_kv_heads * self.head_dim * bytes_per_elem
    }
}
