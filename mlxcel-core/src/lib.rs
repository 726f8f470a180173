//! mlxcel-core: the MLX binding and the pieces of the runtime that sit on it.
//!
//! - [`mlx`]: a safe Rust API over MLX's C++ library (arrays, ops, fast ops, custom
//!   GPU kernels, safetensors/GGUF I/O, devices, memory, random).
//! - [`kernels`]: custom GPU kernels (CUDA/Metal sources JIT-compiled by MLX).
//! - [`kv`]: KV caches, one module per storage mode, behind one trait.
//! - [`attention`]: the attention paths the caches call.
//! - [`rope`]: a model's rotary embedding, shared by the models and the fused kernels.
//! - [`flags`]: every `MLXCEL_*` switch.
//! - [`build_profile`]: host time of building a decode step, per part of the model.
//! - [`error`]: the one error type of the crate.

pub mod attention;
pub mod build_profile;
pub mod error;
pub mod flags;
pub mod kernels;
pub mod kv;
pub mod mlx;
pub mod rope;

pub use error::{Error, Result};
pub use mlx::{Array, Dtype};
