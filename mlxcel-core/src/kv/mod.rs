//! KV caches: one trait for a layer's cache, one module per storage mode.
//!
//! A cache owns its device buffers; `append` writes new keys/values into preallocated
//! storage (grown in steps, never re-concatenated per token) and `attend` computes the
//! layer's attention output for new queries over everything cached so far.

pub mod dense;

use crate::mlx::Array;
use crate::Result;

pub use dense::DenseKvCache;

/// What a layer's attention needs from its cache.
pub trait KvCache {
    /// Appends keys and values `[B, Hkv, L, D]` for the next `L` positions.
    fn append(&mut self, k: &Array, v: &Array) -> Result<()>;

    /// Attention of queries `[B, Hq, L, D]` (the last `L` positions, already appended)
    /// over the cache, causal within the new block. Returns `[B, Hq, L, D]`.
    fn attend(&self, q: &Array, scale: f32) -> Result<Array>;

    /// Number of cached positions.
    fn len(&self) -> usize;

    /// True when nothing is cached.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the cached positions as stored (not the preallocated capacity).
    fn bytes(&self) -> usize;

    /// Bytes allocated on the device, including unused capacity.
    fn capacity_bytes(&self) -> usize;

    /// Short name of the storage (`fp16`, ...), for reports.
    fn mode_name(&self) -> &'static str;
}

/// Positions by which a cache's buffers grow: preallocation amortizes the copy that
/// growing costs, and bounds the waste to one step per layer.
pub const GROWTH_STEP: usize = 256;
