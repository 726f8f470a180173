//! [`KvSide`]: the storage of one side (keys or values) of a layer's cache. A cache mode
//! is a pair of sides ([`SplitKvCache`](super::split::SplitKvCache)); each storage format
//! is one module (`fp16`, `int8`, `turbo`, `delegated`).

use crate::kv::fp16::Fp16Side;
use crate::kv::int8::Int8Side;
use crate::kv::turbo::rotation::Rotation;
use crate::kv::turbo::TurboSide;
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::Result;

/// Storage format codes shared with the CUDA kernels (`decode_attention.cuh`).
pub const FORMAT_FP16: i32 = 0;
pub const FORMAT_INT8: i32 = 1;

/// Direct access to a side's device buffers, for fused kernels.
pub struct RawSide<'a> {
    /// [`FORMAT_FP16`], [`FORMAT_INT8`], or the turbo bit width (2, 3, 4).
    pub format: i32,
    /// The whole buffer `[B, H, capacity, row]`.
    pub data: &'a Array,
    /// fp16 `[B, H, capacity, n]`: per-row scales (int8) or per-group norms (turbo).
    pub aux: Option<&'a Array>,
    pub capacity: usize,
    /// The codebook (turbo), as 16 f32 on the device.
    pub lut_array: Option<&'a Array>,
    pub rotation: Option<&'a Rotation>,
    /// The token of the last in-place append ([`crate::kv::pending`]): a kernel reading
    /// `data`/`aux` must take it as an input so that MLX runs it after every append.
    pub pending: Option<&'a Array>,
}

pub trait KvSide {
    /// Appends `[B, H, L, D]` vectors (keys after RoPE, or values).
    fn append(&mut self, x: &Array) -> Result<()>;

    /// Appends keys given *before* RoPE, applying `rope` inside the side's own encoder
    /// (one MLX op fewer per layer and step; `MLXCEL_FUSED_ROPE`). Returns `false`, having
    /// appended nothing, where the side cannot: the caller then applies MLX's RoPE and
    /// calls [`KvSide::append`].
    fn append_before_rope(&mut self, _x: &Array, _rope: &RopeSpec) -> Result<bool> {
        Ok(false)
    }

    /// Number of stored positions.
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps only the first `len` positions (at most [`KvSide::len`]), waiting for any
    /// in-place write first. Storage that cannot drop positions exactly (results would differ
    /// from a cache filled with the first `len` positions only) returns an error and is left
    /// as it was.
    fn truncate(&mut self, len: usize) -> Result<()>;

    /// Bytes of the stored positions as stored.
    fn bytes(&self) -> usize;

    /// Bytes allocated (including unused capacity).
    fn capacity_bytes(&self) -> usize;

    /// Storage name (`fp16`, `int8`, `turbo4`, `turbo4-delegated`, ...).
    fn name(&self) -> &'static str;

    /// The rotation of the stored basis, when values are stored rotated (turbo).
    fn rotation(&self) -> Option<&Rotation>;

    /// All stored positions in the original basis, `[B, H, len, D]` of `dtype`.
    fn dense(&self, dtype: Dtype) -> Result<Array>;

    /// All stored positions in the stored basis (rotated for turbo; equal to
    /// [`KvSide::dense`] otherwise). Skips the inverse rotation.
    fn dense_rotated(&self, dtype: Dtype) -> Result<Array>;

    /// This side as turbo storage, for launches that write a key and a value side
    /// together ([`TurboSide::append_pair_in_place`]).
    fn as_turbo_mut(&mut self) -> Option<&mut TurboSide> {
        None
    }

    /// This side as int8 storage, for the same reason ([`Int8Side::append_pair_in_place`]).
    fn as_int8_mut(&mut self) -> Option<&mut Int8Side> {
        None
    }

    /// This side as unquantized storage: the key side of turbo4-asym
    /// ([`TurboSide::append_asym_pair_in_place`]).
    fn as_fp16_mut(&mut self) -> Option<&mut Fp16Side> {
        None
    }

    /// The raw buffers, for formats a fused kernel can read (None otherwise).
    fn raw(&self) -> Option<RawSide<'_>> {
        None
    }
}
