//! The cache append of a decode step when another launch performs it: the qkv GEMV with
//! `MLXCEL_QKV_ENCODE` (`quantized_gemv::try_gemv_parts_encode`,
//! `cuda/qgemv4_qkv_encode.cu`) writes the new keys and values into the cache buffers
//! itself. The cache reserves the position and hands out a [`PairTarget`]
//! (`KvCache::fused_append_target`); the model runs the projection with it and the cache
//! records the launch's token (`KvCache::commit_fused_append`). The arrays are owned
//! (reference-counted handles), so the cache is not borrowed while the projection runs.

use crate::kernels::decode_attention::unused_f32;
use crate::kernels::in_place::buffer_fits;
use crate::kernels::turbo_encode::side_fits;
use crate::kv::pending::{reserve_queued, PairSide};
use crate::kv::turbo::codec::TurboCodec;
use crate::mlx::{Array, Dtype};
use crate::Result;

/// The cache formats a folded append writes (the qkv kernel's `KVFMT`; the attention launch's
/// `MLXCEL_ATTN_APPEND` writes all four).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairFormat {
    /// turbo4 keys and values (`turbo_encode_kv.cu`'s writes).
    Turbo4 = 0,
    /// fp16 keys, turbo4 values (`turbo_encode_kv_asym.cu`'s writes).
    Turbo4Asym = 1,
    /// int8 keys and values with an fp16 scale per vector (`int8_encode_kv.cu`'s writes).
    Int8 = 2,
    /// fp16 keys, int8 values (`fp16_append_kv.cu`'s writes: the turbo modes' boundary
    /// layers). Only the attention launch writes it (`MLXCEL_ATTN_APPEND`); the qkv GEMV's
    /// fold has no such `KVFMT`.
    Fp16Int8 = 3,
}

/// A decode step's K+V append for another launch: both sides' reserved buffers, the
/// position and the sides' previous write tokens (`kv::pending`).
pub struct PairTarget {
    pub format: PairFormat,
    pub k: SideTarget,
    pub v: SideTarget,
    /// The cache position the launch writes.
    pub pos: usize,
    /// KV heads and head_dim of the new position (`[1, heads, 1, head_dim]` per side).
    pub heads: i32,
    pub head_dim: usize,
}

impl PairTarget {
    /// Both sides of `format` at `pos` for `[1, heads, 1, head_dim]` keys and values; `None`
    /// where a side's buffers did not fit (its constructor said so).
    pub fn new(
        format: PairFormat,
        k: Option<SideTarget>,
        v: Option<SideTarget>,
        pos: usize,
        heads: i32,
        head_dim: usize,
    ) -> Option<PairTarget> {
        Some(PairTarget {
            format,
            k: k?,
            v: v?,
            pos,
            heads,
            head_dim,
        })
    }

    /// Reserves the next position on the key side `k` and the value side `v`
    /// (`kv::pending::reserve_queued`) and builds the target of `format` from what they hand
    /// out: `k_side` and `v_side` make each side's [`SideTarget`] from its reserved buffers
    /// `[data, aux]`, its last write token and the position. `None` where a constructor said
    /// its buffers do not fit (the reservation then counts nothing: no commit follows). Why
    /// one function: the four formats' targets differ only in their side constructors.
    pub fn reserve(
        format: PairFormat,
        k: &mut PairSide<'_>,
        v: &mut PairSide<'_>,
        heads: i32,
        head_dim: usize,
        k_side: impl FnOnce([Array; 2], Option<Array>, usize) -> Result<Option<SideTarget>>,
        v_side: impl FnOnce([Array; 2], Option<Array>, usize) -> Result<Option<SideTarget>>,
    ) -> Result<Option<PairTarget>> {
        let (kb, vb, pos, [k_after, v_after]) = reserve_queued(k, v, [1, heads])?;
        let k = k_side(kb, k_after, pos)?;
        let v = v_side(vb, v_after, pos)?;
        Ok(PairTarget::new(format, k, v, pos, heads, head_dim))
    }
}

/// One side of a [`PairTarget`]: the whole cache buffers (`data [1, H, cap, _]`, `aux
/// [1, H, cap, 1]` f16 norms or scales), the turbo codec's arrays (placeholders for other
/// formats), and the previous write token.
pub struct SideTarget {
    pub mids: Array,
    pub lut: Array,
    pub signs: Array,
    pub data: Array,
    pub aux: Array,
    pub after: Option<Array>,
}

/// Whether the folded appends (the qkv GEMV's, `MLXCEL_QKV_ENCODE`, and the attention launch's,
/// `MLXCEL_ATTN_APPEND`) can write a turbo side of `codec`: their writer encodes 4-bit codes only
/// (`turbo4_vals`), while the one-launch encoders also take 2 and 3 bits with
/// `MLXCEL_LOWBIT_CUDA`, so `turbo_encode::side_fits` alone does not decide it.
pub fn folds_turbo(codec: &TurboCodec) -> bool {
    codec.bits == 4
}

impl SideTarget {
    /// A turbo4 side of `codec` (`data` u8 codes `[1, H, cap, D/2]`, `aux` f16 norms). `None`
    /// if the buffers do not fit one position of `[1, heads, 1, D]` at `pos`.
    pub fn turbo4(
        codec: &TurboCodec,
        data: Array,
        aux: Array,
        after: Option<Array>,
        heads: i32,
        pos: usize,
    ) -> Option<SideTarget> {
        let xs = [1, heads, 1, codec.head_dim as i32];
        (folds_turbo(codec) && side_fits(codec, &xs, &data, &aux, pos)).then(|| SideTarget {
            mids: codec.midpoints().clone(),
            lut: codec.lut16().clone(),
            signs: codec.rotation.signs_array().clone(),
            data,
            aux,
            after,
        })
    }

    /// An fp16 key side (turbo4-asym): `data [1, H, cap, head_dim]` f16, no aux.
    pub fn fp16(
        data: Array,
        after: Option<Array>,
        heads: i32,
        head_dim: usize,
        pos: usize,
    ) -> Result<Option<SideTarget>> {
        SideTarget::plain(data, Dtype::F16, None, after, heads, head_dim, pos)
    }

    /// An int8 side: `data [1, H, cap, head_dim]` int8 and `aux [1, H, cap, 1]` f16 scales.
    pub fn int8(
        data: Array,
        aux: Array,
        after: Option<Array>,
        heads: i32,
        head_dim: usize,
        pos: usize,
    ) -> Result<Option<SideTarget>> {
        SideTarget::plain(data, Dtype::I8, Some(aux), after, heads, head_dim, pos)
    }

    /// A side without a turbo codec: `data [1, H, cap, head_dim]` of `dtype` and an optional
    /// `aux [1, H, cap, 1]` f16, checked for `[1, heads, 1, head_dim]` at `pos` (`None` where
    /// they do not fit). Its codec inputs (and a missing `aux`) are placeholders the kernel
    /// does not read.
    fn plain(
        data: Array,
        dtype: Dtype,
        aux: Option<Array>,
        after: Option<Array>,
        heads: i32,
        head_dim: usize,
        pos: usize,
    ) -> Result<Option<SideTarget>> {
        let xs = [1, heads, 1, head_dim as i32];
        if !(buffer_fits(&xs, &data, head_dim as i32, dtype, pos)
            && aux
                .as_ref()
                .is_none_or(|a| buffer_fits(&xs, a, 1, Dtype::F16, pos)))
        {
            return Ok(None);
        }
        let unused = unused_f32()?;
        Ok(Some(SideTarget {
            mids: unused.clone(),
            lut: unused.clone(),
            aux: aux.unwrap_or_else(|| unused.clone()),
            signs: unused,
            data,
            after,
        }))
    }
}
