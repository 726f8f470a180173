//! mlxcel-models: model families (Llama-3, Qwen2/2.5, Qwen3) and everything around them.
//!
//! - [`config`]: HF `config.json` / GGUF metadata -> [`config::ModelConfig`].
//! - [`loader`]: model sources (directory, `.gguf`, HF hub, default, synthetic) and weights.
//! - [`tokenizer`]: `tokenizer.json` or GGUF BPE, chat templates, streaming decode.
//! - [`layers`], [`llama3`], [`qwen2`], [`qwen3`]: the networks.
//! - [`model`]: a loaded model; [`generate`], [`sampler`], [`perplexity`]: what runs it;
//!   [`chat`]: a multi-turn conversation over one KV cache.

pub mod chat;
pub mod config;
pub mod error;
pub mod generate;
pub mod layers;
pub mod llama3;
pub mod loader;
pub mod model;
pub mod niah;
pub mod perplexity;
pub mod qwen2;
pub mod qwen3;
pub mod sampler;
pub mod tokenizer;
pub mod weights;

pub use error::{ModelError, Result};
pub use model::{KvConfig, LoadOptions, Model};
