//! mlxcel-core: the MLX binding and the pieces of the runtime that sit on it.
//!
//! - [`mlx`]: a safe Rust API over MLX's C++ library (arrays, ops, fast ops, custom
//!   GPU kernels, safetensors/GGUF I/O, devices, memory, random).
//! - [`kernels`]: custom GPU kernels (CUDA/Metal sources JIT-compiled by MLX).
//! - [`error`]: the one error type of the crate.

pub mod error;
pub mod kernels;
pub mod mlx;

pub use error::{Error, Result};
pub use mlx::{Array, Dtype};
