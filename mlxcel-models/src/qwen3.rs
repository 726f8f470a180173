//! Qwen3 (dense): the Llama decoder of `llama3.rs` with a per-head RMSNorm on q and k
//! (`q_norm`, `k_norm`, applied before RoPE) and no projection biases.

use crate::config::ModelConfig;
use crate::error::Result;
use crate::llama3::{AttentionOptions, Transformer};
use crate::weights::Weights;

pub fn load(cfg: &ModelConfig, w: &mut Weights) -> Result<Transformer> {
    Transformer::load(
        cfg,
        w,
        AttentionOptions {
            qkv_bias: false,
            qk_norm: true,
        },
    )
}
