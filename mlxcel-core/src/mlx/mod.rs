//! The safe MLX API. One module per concern:
//! [`array`] (the handle, construction, read-back), [`dtype`], [`ops`] (math, shapes,
//! quantization), [`fast`] (fused MLX kernels: RMSNorm, RoPE, SDPA), [`kernel`] (custom
//! CUDA/Metal kernels), [`kernel_cache`] (their compiled images on disk), [`io`] (safetensors, GGUF), [`device`], [`graph_limits`] (MLX's CUDA graph commit limits), [`memory`],
//! [`random`], [`submit`] (the decode loop's submit thread).
//!
//! MLX is lazy: ops build a graph and nothing runs until [`Array::eval`] (or a read-back).
//! Errors that MLX detects while building the graph (shapes, dtypes) come back from the op
//! itself; errors at run time (e.g. a custom kernel that fails to compile) come back from
//! `eval`.

pub mod array;
pub mod device;
pub mod dtype;
pub mod fast;
pub(crate) mod ffi;
pub mod graph_limits;
pub mod io;
pub mod kernel;
pub mod kernel_cache;
pub mod memory;
pub mod ops;
pub mod random;
pub mod submit;

pub use array::Array;
pub use dtype::{Dtype, Element};
