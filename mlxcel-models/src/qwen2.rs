//! Qwen2 / Qwen2.5: the Llama decoder of `llama3.rs` with biases on the q/k/v projections.

use crate::config::ModelConfig;
use crate::error::Result;
use crate::llama3::{AttentionOptions, Transformer};
use crate::weights::Weights;

pub fn load(cfg: &ModelConfig, w: &mut Weights) -> Result<Transformer> {
    Transformer::load(
        cfg,
        w,
        AttentionOptions {
            qkv_bias: true,
            qk_norm: false,
        },
    )
}
