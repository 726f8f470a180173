//! [`Model`]: a loaded network with its tokenizer, built from any [`ModelSource`].

use std::time::Instant;

use mlxcel_core::kv::mode::{default_boundary_layers, default_boundary_mode, BoundaryLayers};
use mlxcel_core::kv::{make_caches, CacheSpec, KvCache, KvMode};
use mlxcel_core::Array;

use crate::config::{Family, ModelConfig, RopeScaling};
use crate::error::{ModelError, Result};
use crate::llama3::{AttentionOptions, Transformer};
use crate::loader::gguf::GgufFile;
use crate::loader::resolve::{default_model, hub_model_dir, ModelSource};
use crate::loader::{
    gguf_rope_factors, load_gguf_weights, load_safetensors_weights, safetensors_files, synthetic,
};
use crate::tokenizer::{gguf_bpe, Tokenizer};
use crate::weights::{WeightFormat, Weights};
use crate::{qwen2, qwen3};

/// How to load a model.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub format: WeightFormat,
    /// Seed of synthetic weights.
    pub seed: u64,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            format: WeightFormat::auto(),
            seed: 0,
        }
    }
}

/// The KV cache settings of a run (`--kv`, `--kv-boundary-layers`, `--kv-boundary-type`).
#[derive(Debug, Clone, Copy)]
pub struct KvConfig {
    pub mode: KvMode,
    /// The layers kept in `boundary_mode` in turbo modes.
    pub boundary_layers: BoundaryLayers,
    /// fp16+turbo4 (the default for quantized keys), fp16+int8 (the default for fp16 keys), fp16,
    /// int8, int8r or fp16+int8r (`mode::check_boundary_mode`, `mode::default_boundary_mode`).
    pub boundary_mode: KvMode,
}

impl KvConfig {
    /// `mode` with its default boundary layers ([`default_boundary_layers`], in
    /// [`default_boundary_mode`]).
    pub fn new(mode: KvMode) -> KvConfig {
        KvConfig {
            mode,
            boundary_layers: default_boundary_layers(mode),
            boundary_mode: default_boundary_mode(mode),
        }
    }
}

impl Default for KvConfig {
    fn default() -> Self {
        KvConfig::new(KvMode::FP16)
    }
}

/// A ready-to-run model.
pub struct Model {
    pub net: Transformer,
    /// None for synthetic models.
    pub tokenizer: Option<Tokenizer>,
    /// What was loaded, for reports.
    pub description: String,
    pub weight_bytes: usize,
    /// Synthetic models never stop at EOS.
    pub synthetic: bool,
}

/// Builds the network of `cfg.family` from `w`.
pub fn build(cfg: &ModelConfig, w: &mut Weights) -> Result<Transformer> {
    match cfg.family {
        Family::Llama => Transformer::load(cfg, w, AttentionOptions::default()),
        Family::Qwen2 => qwen2::load(cfg, w),
        Family::Qwen3 => qwen3::load(cfg, w),
    }
}

/// What `mlxcel recommend-quant` needs to know about a model without loading its weights.
#[derive(Debug, Clone)]
pub struct ModelFacts {
    pub config: ModelConfig,
    /// Bytes of the weight files (for synthetic models: the bytes their weights take, from
    /// the config and its quantization).
    pub weight_bytes: u64,
    pub description: String,
}

/// Reads a `--model` value's config and weight size (no weights are loaded).
pub fn inspect(spec: Option<&str>) -> Result<ModelFacts> {
    let io = |p: &std::path::Path, e: std::io::Error| ModelError::Io {
        path: p.to_path_buf(),
        source: e,
    };
    let file_len =
        |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).map_err(|e| io(p, e));
    let gguf = |p: std::path::PathBuf| -> Result<ModelFacts> {
        let g = GgufFile::open(&p)?;
        Ok(ModelFacts {
            config: ModelConfig::from_gguf(&g)?,
            weight_bytes: file_len(&p)?,
            description: p.display().to_string(),
        })
    };
    let dir = |d: std::path::PathBuf| -> Result<ModelFacts> {
        let mut bytes = 0;
        for f in safetensors_files(&d)? {
            bytes += file_len(&f)?;
        }
        Ok(ModelFacts {
            config: ModelConfig::from_hf_json(&d.join("config.json"))?,
            weight_bytes: bytes,
            description: d.display().to_string(),
        })
    };
    match ModelSource::parse(spec)? {
        ModelSource::Default => gguf(default_model()?),
        ModelSource::Gguf(p) => gguf(p),
        ModelSource::Dir(d) => dir(d),
        ModelSource::Hub(id) => dir(hub_model_dir(&id)?),
        ModelSource::Synthetic(s) => {
            let config = synthetic::config(&s)?;
            Ok(ModelFacts {
                weight_bytes: synthetic::weight_bytes(&config),
                config,
                description: format!("synthetic:{s}"),
            })
        }
    }
}

impl Model {
    /// Loads from a `--model` value (None = the default model).
    pub fn load(spec: Option<&str>, opts: &LoadOptions) -> Result<Model> {
        let source = ModelSource::parse(spec)?;
        let t0 = Instant::now();
        let model = match source {
            ModelSource::Default => Self::from_gguf(&default_model()?, opts)?,
            ModelSource::Gguf(p) => Self::from_gguf(&p, opts)?,
            ModelSource::Dir(d) => Self::from_dir(&d, opts)?,
            ModelSource::Hub(id) => Self::from_dir(&hub_model_dir(&id)?, opts)?,
            ModelSource::Synthetic(s) => {
                let cfg = synthetic::config(&s)?;
                tracing::info!("building synthetic weights for {s}");
                let mut w = synthetic::weights(&cfg, opts.format, opts.seed)?;
                let bytes = w.nbytes();
                Model {
                    net: build(&cfg, &mut w)?,
                    tokenizer: None,
                    description: format!("synthetic:{s}"),
                    weight_bytes: bytes,
                    synthetic: true,
                }
            }
        };
        tracing::info!(
            "loaded {} ({:.1} MB of weights, {:?}) in {:.2}s",
            model.description,
            model.weight_bytes as f64 / 1e6,
            opts.format,
            t0.elapsed().as_secs_f64()
        );
        Ok(model)
    }

    fn from_gguf(path: &std::path::Path, opts: &LoadOptions) -> Result<Model> {
        let g = GgufFile::open(path)?;
        let mut cfg = ModelConfig::from_gguf(&g)?;
        if let Some(f) = gguf_rope_factors(&g)? {
            cfg.rope_scaling = RopeScaling::Factors(f);
        }
        let tokenizer = gguf_bpe::from_gguf(&g)?;
        let mut w = load_gguf_weights(&g, &cfg, opts.format)?;
        let bytes = w.nbytes();
        Ok(Model {
            net: build(&cfg, &mut w)?,
            tokenizer: Some(tokenizer),
            description: path.display().to_string(),
            weight_bytes: bytes,
            synthetic: false,
        })
    }

    fn from_dir(dir: &std::path::Path, opts: &LoadOptions) -> Result<Model> {
        let cfg = ModelConfig::from_hf_json(&dir.join("config.json"))?;
        let tokenizer = if dir.join("tokenizer.json").is_file() {
            Some(Tokenizer::from_dir(dir, &cfg.eos_token_ids)?)
        } else {
            None
        };
        let mut w = load_safetensors_weights(dir, &cfg, opts.format)?;
        let bytes = w.nbytes();
        Ok(Model {
            net: build(&cfg, &mut w)?,
            tokenizer,
            description: dir.display().to_string(),
            weight_bytes: bytes,
            synthetic: false,
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.net.config
    }

    /// The tokenizer, or an error for models without one (synthetic).
    pub fn tokenizer(&self) -> Result<&Tokenizer> {
        self.tokenizer
            .as_ref()
            .ok_or_else(|| ModelError::Tokenizer(format!("{} has no tokenizer", self.description)))
    }

    /// One empty cache per layer in `kv`'s mode.
    pub fn new_caches(&self, kv: &KvConfig) -> Result<Vec<Box<dyn KvCache>>> {
        Ok(make_caches(&CacheSpec {
            mode: kv.mode,
            num_layers: self.config().num_layers,
            head_dim: self.config().head_dim,
            boundary_layers: kv.boundary_layers,
            boundary_mode: kv.boundary_mode,
        })?)
    }

    /// Logits of `ids` as a `[1, L]` batch (see [`Transformer::forward`]).
    pub fn forward(
        &self,
        ids: &[u32],
        caches: &mut [Box<dyn KvCache>],
        last_only: bool,
    ) -> Result<Array> {
        let toks: Vec<i32> = ids.iter().map(|&t| t as i32).collect();
        let x = Array::from_slice(&toks, &[1, toks.len() as i32])?;
        self.net.forward(&x, caches, last_only)
    }

    /// Logits of token ids that are still an array on the device (e.g. the argmax of the
    /// previous step, not yet evaluated): `ids` of any integer dtype (the embedding gathers
    /// with them as they are), any shape with `L` elements, taken as a `[1, L]` batch.
    pub fn forward_tokens(
        &self,
        ids: &Array,
        caches: &mut [Box<dyn KvCache>],
        last_only: bool,
    ) -> Result<Array> {
        self.net.forward(&ids.reshape(&[1, -1])?, caches, last_only)
    }
}
