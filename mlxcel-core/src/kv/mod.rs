//! KV caches: one trait for a layer's cache ([`KvCache`]), one trait for the storage of
//! each side ([`side::KvSide`]), one module per storage format:
//! [`fp16`], [`int8`], [`turbo`] (the TurboQuant codec), [`delegated`] (fp16 hot window +
//! turbo4 cold blocks). [`mode`] maps `--kv` names to formats and builds the caches.
//!
//! Buffers are preallocated and grown in steps of [`GROWTH_STEP`] positions; new
//! positions are written with `slice_update` ([`buffer`]), never by re-concatenating the
//! cache. Encoding runs on the device.

pub mod advisor;
pub mod buffer;
pub mod delegated;
pub mod fp16;
pub mod int8;
pub mod mode;
pub mod pending;
pub mod side;
pub mod split;
pub mod turbo;

use crate::mlx::Array;
use crate::rope::RopeSpec;
use crate::Result;

pub use mode::{make_caches, CacheSpec, KvMode, SideFormat};

/// MLX's RoPE on queries `[B, H, L, D]` of the last `L` of `len` cached positions (the
/// fallback of [`KvCache::attend_rope`]).
pub(crate) fn rope_queries(q: &Array, rope: &RopeSpec, len: usize) -> Result<Array> {
    rope.apply(q, len.saturating_sub(q.dim(2).max(0) as usize))
}

/// What a layer's attention needs from its cache.
pub trait KvCache {
    /// Appends keys and values `[B, Hkv, L, D]` for the next `L` positions.
    fn append(&mut self, k: &Array, v: &Array) -> Result<()>;

    /// Attention of queries `[B, Hq, L, D]` (the last `L` positions, already appended)
    /// over the cache, causal within the new block. Returns `[B, Hq, L, D]`.
    fn attend(&self, q: &Array, scale: f32) -> Result<Array>;

    /// [`KvCache::append`] with keys before RoPE (positions `len..len + L`). Caches whose
    /// encoder can rotate the keys itself do so; the default applies MLX's RoPE first.
    fn append_rope(&mut self, k: &Array, v: &Array, rope: &RopeSpec) -> Result<()> {
        let k = rope.apply(k, self.len())?;
        self.append(&k, v)
    }

    /// [`KvCache::attend`] with queries before RoPE (the last `L` positions). Paths whose
    /// kernel can rotate q itself do so; the default applies MLX's RoPE first.
    fn attend_rope(&self, q: &Array, scale: f32, rope: &RopeSpec) -> Result<Array> {
        self.attend(&rope_queries(q, rope, self.len())?, scale)
    }

    /// [`KvCache::attend_rope`] with the output as `[B, L, Hq * D]`, the layout the output
    /// projection takes. The default transposes (L > 1) and reshapes; fused decode paths
    /// declare their output in this shape and save the reshape node.
    fn attend_rope_flat(&self, q: &Array, scale: f32, rope: &RopeSpec) -> Result<Array> {
        flatten_heads(&self.attend_rope(q, scale, rope)?)
    }

    /// A decode step's append that the launch computing k and v performs itself (the qkv
    /// GEMV with `MLXCEL_QKV_ENCODE`): the next position of `[B, H, 1, D]` keys (before
    /// `rope`) and values is reserved and its buffers handed out. Nothing counts as appended
    /// until [`KvCache::commit_fused_append`]; a target that is not used leaves the cache as
    /// it was. `None` (the default) where the cache cannot take such an append.
    fn fused_append_target(
        &mut self,
        _kv_shape: [i32; 4],
        _rope: &RopeSpec,
    ) -> Result<Option<crate::kernels::folded_append::PairTarget>> {
        Ok(None)
    }

    /// Counts the position [`KvCache::fused_append_target`] handed out as written by the
    /// launch whose token is `token` (later readers run after it).
    fn commit_fused_append(&mut self, _token: Array) -> Result<()> {
        Err(crate::Error::invalid(
            "kv append",
            format!("{} caches take no folded appends", self.mode_name()),
        ))
    }

    /// Whether [`KvCache::append_attend_rope_flat`] can take a decode step's append here (a
    /// cheap check the model makes first: where it cannot, the model appends and attends
    /// apart, each under its own build-profile span).
    fn attention_appends(&self) -> bool {
        false
    }

    /// A decode step's append and attention in one launch (`MLXCEL_ATTN_APPEND`): keys
    /// (before `rope`) and values `[B, Hkv, 1, D]` written by the fused attention kernel that
    /// attends `q` (before `rope`) over the cache and the new position. Returns the output
    /// as [`KvCache::attend_rope_flat`] does; `None`, with nothing appended, where the cache
    /// or the kernel cannot (the caller appends and attends apart).
    fn append_attend_rope_flat(
        &mut self,
        _q: &Array,
        _k: &Array,
        _v: &Array,
        _scale: f32,
        _rope: &RopeSpec,
    ) -> Result<Option<Array>> {
        Ok(None)
    }

    /// Number of cached positions.
    fn len(&self) -> usize;

    /// Keeps only the first `len` cached positions, exactly as if only those had been
    /// appended; the next append goes to position `len`. An error, with the cache unchanged,
    /// where the storage cannot drop positions exactly (`turbo4-delegated` values past their
    /// fp16 window) or `len` exceeds [`KvCache::len`].
    fn truncate(&mut self, len: usize) -> Result<()>;

    /// True when nothing is cached.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the cached positions as stored (not the preallocated capacity).
    fn bytes(&self) -> usize;

    /// Bytes allocated on the device, including unused capacity.
    fn capacity_bytes(&self) -> usize;

    /// The mode of this layer (`fp16` for boundary layers of turbo modes).
    fn mode_name(&self) -> String;
}

/// `[B, Hq, L, D]` -> `[B, L, Hq * D]` (for L = 1 one reshape: the memory order is the same).
pub fn flatten_heads(o: &Array) -> Result<Array> {
    let s = o.shape();
    if s.len() != 4 {
        return Err(crate::Error::invalid(
            "attention output",
            format!("expected [B, Hq, L, D], got {s:?}"),
        ));
    }
    let (b, hq, l, d) = (s[0], s[1], s[2], s[3]);
    if l == 1 {
        o.reshape(&[b, 1, hq * d])
    } else {
        o.transpose(&[0, 2, 1, 3])?.reshape(&[b, l, hq * d])
    }
}

/// Positions by which a cache's buffers grow: preallocation amortizes the copy that
/// growing costs, and bounds the waste to one step per layer.
pub const GROWTH_STEP: usize = 256;
