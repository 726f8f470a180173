//! MLX allocator statistics and limits (bytes). Used by `--profile` and to show that a
//! compressed KV cache never materializes a full-size fp16 transient.

use super::ffi::bridge as ffi;
use crate::error::{MlxContext, Result};

/// Bytes held by live arrays.
pub fn active_memory() -> Result<usize> {
    ffi::active_memory().op("get_active_memory")
}

/// Highest active memory since start or the last [`reset_peak_memory`].
pub fn peak_memory() -> Result<usize> {
    ffi::peak_memory().op("get_peak_memory")
}

/// Restarts peak tracking from the current active memory.
pub fn reset_peak_memory() -> Result<()> {
    ffi::reset_peak_memory().op("reset_peak_memory")
}

/// Bytes kept in MLX's buffer cache for reuse.
pub fn cache_memory() -> Result<usize> {
    ffi::cache_memory().op("get_cache_memory")
}

/// Frees MLX's buffer cache.
pub fn clear_cache() -> Result<()> {
    ffi::clear_cache().op("clear_cache")
}

/// Sets the allocation limit; returns the previous one.
pub fn set_memory_limit(bytes: usize) -> Result<usize> {
    ffi::set_memory_limit(bytes).op("set_memory_limit")
}

/// Sets the buffer-cache limit; returns the previous one.
pub fn set_cache_limit(bytes: usize) -> Result<usize> {
    ffi::set_cache_limit(bytes).op("set_cache_limit")
}
