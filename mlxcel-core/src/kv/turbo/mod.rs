//! TurboQuant-style storage: per head vector, per rotation group of G (128, or 64 when
//! head_dim is 64), a corrected fp16 norm and 2/3/4-bit Lloyd-Max indices of the
//! randomly rotated coordinates. See [`codec`] for the exact encode/decode.

pub mod codebook;
pub mod codec;
pub mod pack;
pub mod rotation;

use crate::flags;
use crate::kv::buffer::GrowBuffer;
use crate::kv::fp16::Fp16Side;
use crate::kv::pending::PendingWrite;
use crate::kv::side::{KvSide, RawSide};
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::{Error, Result};
use codec::{Encoded, TurboCodec};
use rotation::Rotation;

/// One side of a turbo cache. Decode-step appends of 4-bit sides on CUDA write the buffers
/// in place ([`crate::kv::pending`] has the rules).
pub struct TurboSide {
    codec: TurboCodec,
    packed: GrowBuffer,
    norms: GrowBuffer,
    pending: PendingWrite,
}

impl TurboSide {
    /// `bits`-bit storage for head vectors of `head_dim`, rotating with `seed`.
    pub fn new(bits: u32, head_dim: usize, seed: u64) -> Result<TurboSide> {
        Ok(TurboSide {
            codec: TurboCodec::new(bits, head_dim, seed)?,
            packed: GrowBuffer::new(Dtype::U8),
            norms: GrowBuffer::new(Dtype::F16),
            pending: PendingWrite::default(),
        })
    }

    /// The in-place decode-step append; with `rope`, x is the key before RoPE and the
    /// encoder applies it.
    fn append_in_place(&mut self, x: &Array, rope: Option<&RopeSpec>) -> Result<()> {
        let s = x.shape();
        let codec = &self.codec;
        self.pending.append_one(
            &mut self.packed,
            &mut self.norms,
            [s[0], s[1]],
            [pack::packed_bytes(codec.bits, codec.head_dim) as i32, 1],
            |packed, norms, pos, after| {
                crate::kernels::turbo_encode::fused_encode_into(
                    codec, x, packed, norms, pos, after, rope,
                )
            },
        )
    }

    /// Whether a decode-step append of `x` writes the buffers in place.
    fn in_place_applies(&self, x: &Array) -> bool {
        x.ndim() == 4
            && x.dim(2) == 1
            && crate::kernels::turbo_encode::applies_in_place(&self.codec)
    }

    /// This side's codec and its state for
    /// [`append_pair_one`](crate::kv::pending::append_pair_one), borrowed together.
    fn pair_side(&mut self) -> (&TurboCodec, crate::kv::pending::PairSide<'_>) {
        let widths = [
            pack::packed_bytes(self.codec.bits, self.codec.head_dim) as i32,
            1,
        ];
        (
            &self.codec,
            crate::kv::pending::PairSide {
                pending: &mut self.pending,
                data: &mut self.packed,
                aux: Some(&mut self.norms),
                widths,
            },
        )
    }

    /// Appends one decode-step position to a turbo cache of one bit width (turbo4; turbo3 and
    /// turbo2 with `MLXCEL_LOWBIT_CUDA`), key side `k` and value
    /// side `v` with one launch (`kernels::turbo_encode::fused_encode_kv_into`); with `rope`,
    /// `xk` is the key before RoPE. Returns false, having appended nothing, where that path
    /// does not apply (then each side appends on its own).
    pub fn append_pair_in_place(
        k: &mut TurboSide,
        v: &mut TurboSide,
        xk: &Array,
        xv: &Array,
        rope: Option<&RopeSpec>,
    ) -> Result<bool> {
        use crate::kernels::turbo_encode::{applies_in_place, fused_encode_kv_into, SideBuffers};
        use crate::kv::pending::{append_pair_one, pair_step_applies};
        // One launch encodes both sides with one bit width (its BITS template): mixed caches
        // (e.g. turbo4 keys with turbo3 values) append each side on its own.
        if !(pair_step_applies(xk, xv, [k.len(), v.len()], rope)
            && applies_in_place(&k.codec)
            && applies_in_place(&v.codec)
            && k.codec.head_dim == v.codec.head_dim
            && k.codec.bits == v.codec.bits)
        {
            return Ok(false);
        }
        let s = xk.shape();
        let ((kc, kp), (vc, vp)) = (k.pair_side(), v.pair_side());
        append_pair_one(kp, vp, [s[0], s[1]], |[kd, kn], [vd, vn], pos, [ka, va]| {
            fused_encode_kv_into(
                xk,
                xv,
                SideBuffers {
                    codec: kc,
                    packed: kd,
                    norms: kn,
                    after: ka,
                },
                SideBuffers {
                    codec: vc,
                    packed: vd,
                    norms: vn,
                    after: va,
                },
                pos,
                rope,
            )
        })?;
        Ok(true)
    }

    /// The next position of a symmetric turbo4 cache (key side `k`, value side `v`) for an
    /// append that another launch performs (the attention launch, `MLXCEL_ATTN_APPEND`, or the
    /// qkv GEMV, `MLXCEL_QKV_ENCODE`; checked by the caller, `kv::split`;
    /// `kernels::quantized_gemv::try_gemv_parts_encode`): both sides reserve it
    /// and hand out their buffers, codecs and last tokens (`kv::pending::reserve_pair`);
    /// [`TurboSide::commit_pair`] counts it. `None`, with nothing appended, where the
    /// in-place pair append would not apply to `[1, H, 1, D]` keys and values.
    pub fn pair_target(
        k: &mut TurboSide,
        v: &mut TurboSide,
        kv_shape: [i32; 4],
        rope: &RopeSpec,
    ) -> Result<Option<crate::kernels::folded_append::PairTarget>> {
        use crate::kernels::folded_append::{folds_turbo, PairFormat, PairTarget, SideTarget};
        use crate::kernels::turbo_encode::applies_in_place;
        use crate::kv::pending::pair_shape_applies;
        let d = k.codec.head_dim;
        // Checked before reserving: SideTarget::turbo4 would decline only after it.
        if !(kv_shape[0] == 1
            && folds_turbo(&k.codec)
            && folds_turbo(&v.codec)
            && kv_shape[3] as usize == d
            && pair_shape_applies(&kv_shape, [k.len(), v.len()], Some(rope))
            && applies_in_place(&k.codec)
            && applies_in_place(&v.codec)
            && v.codec.head_dim == d)
        {
            return Ok(None);
        }
        let heads = kv_shape[1];
        let ((kc, mut kp), (vc, mut vp)) = (k.pair_side(), v.pair_side());
        PairTarget::reserve(
            PairFormat::Turbo4,
            &mut kp,
            &mut vp,
            heads,
            d,
            |[kd, ka], after, pos| Ok(SideTarget::turbo4(kc, kd, ka, after, heads, pos)),
            |[vd, va], after, pos| Ok(SideTarget::turbo4(vc, vd, va, after, heads, pos)),
        )
    }

    /// [`TurboSide::pair_target`] for a turbo4-asym cache: fp16 key side `k` (stored by the
    /// launch, rotated by RoPE), turbo4 value side `v`.
    pub fn asym_pair_target(
        k: &mut Fp16Side,
        v: &mut TurboSide,
        kv_shape: [i32; 4],
        rope: &RopeSpec,
    ) -> Result<Option<crate::kernels::folded_append::PairTarget>> {
        use crate::kernels::folded_append::{folds_turbo, PairFormat, PairTarget, SideTarget};
        use crate::kernels::turbo_encode::applies_in_place;
        use crate::kv::pending::pair_shape_applies;
        let d = v.codec.head_dim;
        if !(kv_shape[0] == 1
            && folds_turbo(&v.codec)
            && kv_shape[3] as usize == d
            && k.dtype() == Dtype::F16
            && pair_shape_applies(&kv_shape, [k.len(), v.len()], Some(rope))
            && applies_in_place(&v.codec))
        {
            return Ok(None);
        }
        let heads = kv_shape[1];
        let (mut kp, (vc, mut vp)) = (k.pair_side(d as i32), v.pair_side());
        PairTarget::reserve(
            PairFormat::Turbo4Asym,
            &mut kp,
            &mut vp,
            heads,
            d,
            |[kd, _], after, pos| SideTarget::fp16(kd, after, heads, d, pos),
            |[vd, va], after, pos| Ok(SideTarget::turbo4(vc, vd, va, after, heads, pos)),
        )
    }

    /// Counts the position [`TurboSide::asym_pair_target`] reserved as written by the launch
    /// whose token is `token`.
    pub fn commit_asym_pair(k: &mut Fp16Side, v: &mut TurboSide, token: Array) -> Result<()> {
        let d = v.codec.head_dim as i32;
        crate::kv::pending::commit_pair(k.pair_side(d), v.pair_side().1, token)
    }

    /// Counts the position [`TurboSide::pair_target`] reserved on both sides as written by
    /// the launch whose token is `token`.
    pub fn commit_pair(k: &mut TurboSide, v: &mut TurboSide, token: Array) -> Result<()> {
        crate::kv::pending::commit_pair(k.pair_side().1, v.pair_side().1, token)
    }

    /// Appends one decode-step position to a turbo4-asym cache, fp16 key side `k` and turbo4
    /// value side `v`, with one launch (`kernels::turbo_encode::fused_append_asym_into`);
    /// with `rope`, `xk` is the key before RoPE. Returns false, having appended nothing,
    /// where that path does not apply (then each side appends on its own).
    pub fn append_asym_pair_in_place(
        k: &mut Fp16Side,
        v: &mut TurboSide,
        xk: &Array,
        xv: &Array,
        rope: Option<&RopeSpec>,
    ) -> Result<bool> {
        use crate::kernels::turbo_encode::{applies_in_place, fused_append_asym_into, SideBuffers};
        use crate::kv::pending::{append_pair_one, pair_step_applies};
        let d = v.codec.head_dim;
        if !(pair_step_applies(xk, xv, [k.len(), v.len()], rope)
            && xk.dim(3) as usize == d
            && k.dtype() == Dtype::F16
            && applies_in_place(&v.codec))
        {
            return Ok(false);
        }
        let s = xk.shape();
        let kp = k.pair_side(d as i32);
        let (vc, vp) = v.pair_side();
        append_pair_one(kp, vp, [s[0], s[1]], |[kd, _], [vd, vn], pos, [ka, va]| {
            fused_append_asym_into(
                xk,
                xv,
                kd,
                ka,
                SideBuffers {
                    codec: vc,
                    packed: vd,
                    norms: vn,
                    after: va,
                },
                pos,
                rope,
            )
        })?;
        Ok(true)
    }

    pub fn codec(&self) -> &TurboCodec {
        &self.codec
    }

    /// The stored packed indices and norms of all positions (after any in-place append
    /// has landed).
    pub fn encoded(&self) -> Result<Encoded> {
        self.pending.settle()?;
        Ok(Encoded {
            packed: self
                .packed
                .view()?
                .ok_or_else(|| Error::invalid("kv", "empty cache"))?,
            norms: self
                .norms
                .view()?
                .ok_or_else(|| Error::invalid("kv", "empty cache"))?,
        })
    }
}

impl KvSide for TurboSide {
    fn as_turbo_mut(&mut self) -> Option<&mut TurboSide> {
        Some(self)
    }

    fn append_before_rope(&mut self, x: &Array, rope: &RopeSpec) -> Result<bool> {
        if self.in_place_applies(x)
            && flags::FUSED_ROPE.enabled()
            && rope.fits_warp_layout(self.codec.head_dim)
        {
            self.append_in_place(x, Some(rope))?;
            return Ok(true);
        }
        Ok(false)
    }

    fn append(&mut self, x: &Array) -> Result<()> {
        if self.in_place_applies(x) {
            return self.append_in_place(x, None);
        }
        self.pending.settle()?;
        let e = if crate::kernels::turbo_encode::applies(&self.codec) {
            crate::kernels::turbo_encode::fused_encode(&self.codec, x)?
        } else {
            self.codec.encode(x)?
        };
        self.packed.append(&e.packed)?;
        self.norms.append(&e.norms)
    }

    fn len(&self) -> usize {
        self.packed.len()
    }

    fn truncate(&mut self, len: usize) -> Result<()> {
        self.pending.settle()?;
        self.packed.truncate(len)?;
        self.norms.truncate(len)
    }

    fn bytes(&self) -> usize {
        self.packed.bytes() + self.norms.bytes()
    }

    fn capacity_bytes(&self) -> usize {
        self.packed.capacity_bytes() + self.norms.capacity_bytes()
    }

    fn name(&self) -> &'static str {
        match self.codec.bits {
            2 => "turbo2",
            3 => "turbo3",
            _ => "turbo4",
        }
    }

    fn rotation(&self) -> Option<&Rotation> {
        Some(&self.codec.rotation)
    }

    fn dense(&self, dtype: Dtype) -> Result<Array> {
        self.codec.decode(&self.encoded()?, dtype)
    }

    fn dense_rotated(&self, dtype: Dtype) -> Result<Array> {
        self.codec.decode_rotated(&self.encoded()?, dtype)
    }

    fn raw(&self) -> Option<RawSide<'_>> {
        Some(RawSide {
            format: self.codec.bits as i32,
            data: self.packed.full()?,
            aux: Some(self.norms.full()?),
            capacity: self.packed.capacity(),
            lut_array: Some(self.codec.lut16()),
            rotation: Some(&self.codec.rotation),
            pending: self.pending.token(),
        })
    }
}
