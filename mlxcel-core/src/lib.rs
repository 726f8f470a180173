//! mlxcel-core: the MLX binding and the pieces of the runtime that sit on it.
//!
//! - [`mlx`]: a safe Rust API over MLX's C++ library (arrays, ops, fast ops, custom
//!   GPU kernels, safetensors/GGUF I/O, devices, memory, random).
//! - [`error`]: the one error type of the crate.

pub mod error;
pub mod mlx;

pub use error::{Error, Result};
pub use mlx::{Array, Dtype};
