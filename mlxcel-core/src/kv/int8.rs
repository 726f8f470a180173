//! int8 storage with one fp16 scale per vector (`absmax / 127`, symmetric), optionally of
//! the rotated vector (`int8r`: the turbo codec's randomized Hadamard rotation first).

use crate::kv::buffer::GrowBuffer;
use crate::kv::fp16::Fp16Side;
use crate::kv::pending::{PairSide, PendingWrite};
use crate::kv::side::{KvSide, RawSide, FORMAT_INT8};
use crate::kv::turbo::rotation::Rotation;
use crate::mlx::ops::where_;
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::{Error, Result};

/// One int8 side. Decode-step appends on CUDA write the buffers in place
/// ([`crate::kv::pending`] has the rules).
pub struct Int8Side {
    q: GrowBuffer,
    scale: GrowBuffer,
    pending: PendingWrite,
    /// `int8r`: vectors are stored as int8 of `R x`. A per-vector absmax scale spends its
    /// range on the largest channel; the rotation spreads a few large channels (Qwen2.5's
    /// keys) over all coordinates first. With `MLXCEL_INT8R_FUSED` (default on; checked on the
    /// H200 in session 15) such a side takes the CUDA pair append and exposes raw buffers to
    /// the fused decode kernel; otherwise, and on other backends, it is encoded by MLX ops and
    /// attended by the rotated-SDPA path.
    rotation: Option<Rotation>,
}

impl Default for Int8Side {
    fn default() -> Self {
        Self::new()
    }
}

impl Int8Side {
    pub fn new() -> Int8Side {
        Int8Side {
            q: GrowBuffer::new(Dtype::I8),
            scale: GrowBuffer::new(Dtype::F16),
            pending: PendingWrite::default(),
            rotation: None,
        }
    }

    /// A rotated int8 side (`int8r`) for head vectors of `head_dim`: the turbo rotation of
    /// group `group_for(head_dim)` with signs from `seed`.
    pub fn rotated(head_dim: usize, seed: u64) -> Result<Int8Side> {
        let group = crate::kv::turbo::codec::group_for(head_dim)?;
        Ok(Int8Side {
            rotation: Some(Rotation::new(seed, group)?),
            ..Int8Side::new()
        })
    }

    /// `(q, scale)` of `x [.., D]`: `x ~ q * scale`, `scale = absmax / 127` (fp16).
    pub fn quantize(x: &Array) -> Result<(Array, Array)> {
        let xf = x.astype(Dtype::F32)?;
        let amax = xf.abs()?.max(&[-1], true)?;
        // Round the scale to fp16 first so that q is computed against the stored scale.
        let scale = amax.mul_scalar(1.0 / 127.0)?.astype(Dtype::F16)?;
        let s32 = scale.astype(Dtype::F32)?;
        let safe = where_(
            &s32.greater(&Array::scalar(0f32)?)?,
            &s32,
            &Array::scalar(1f32)?,
        )?;
        let lim = Array::scalar(127f32)?;
        let q = xf
            .divide(&safe)?
            .round()?
            .clip(&lim.negative()?, &lim)?
            .astype(Dtype::I8)?;
        Ok((q, scale))
    }
}

impl Int8Side {
    /// The in-place decode-step append; with `rope`, x is the key before RoPE.
    fn append_in_place(&mut self, x: &Array, rope: Option<&RopeSpec>) -> Result<()> {
        let s = x.shape();
        self.pending.append_one(
            &mut self.q,
            &mut self.scale,
            [s[0], s[1]],
            [s[3], 1],
            |q, scale, pos, after| {
                crate::kernels::int8_encode::encode_into(x, q, scale, pos, after, rope)
            },
        )
    }

    /// This side's state for [`append_pair_one`] (vectors of `d` values).
    fn pair_side(&mut self, d: i32) -> PairSide<'_> {
        PairSide {
            pending: &mut self.pending,
            data: &mut self.q,
            aux: Some(&mut self.scale),
            widths: [d, 1],
        }
    }

    /// Whether a decode-step append of `x` goes to the one-side in-place CUDA encoder
    /// (never for a rotated side: that encoder does not rotate).
    fn in_place_applies(&self, x: &Array) -> bool {
        self.rotation.is_none() && Self::in_place_shape(x)
    }

    fn in_place_shape(x: &Array) -> bool {
        let s = x.shape();
        s.len() == 4 && s[2] == 1 && crate::kernels::int8_encode::applies_in_place(s[3] as usize)
    }

    /// Whether this side's CUDA kernels apply to head vectors of `d`: always for plain int8;
    /// for int8r only with `MLXCEL_INT8R_FUSED` and one rotation group per head (the pair
    /// encoder rotates one warp's vector, the decode kernel needs group == head_dim).
    fn kernels_apply(&self, d: usize) -> bool {
        self.rotation
            .as_ref()
            .is_none_or(|r| crate::flags::INT8R_FUSED.enabled() && r.group == d)
    }

    /// The rotation signs the pair encoder takes (`None` for plain int8).
    fn signs(&self) -> Option<&Array> {
        self.rotation.as_ref().map(|r| r.signs_array())
    }

    /// Whether this side, as the value side of a pair whose key side holds `k_len` positions,
    /// takes a launch's `[1, H, 1, D]` append of `kv_shape` (one batch, no rotation, lengths and
    /// RoPE the pair launches take, a head_dim the int8 writer takes): the part of
    /// [`Int8Side::pair_target`]'s and [`Int8Side::fp16_pair_target`]'s checks that does not
    /// depend on the key side's format.
    fn value_pair_applies(&self, k_len: usize, kv_shape: &[i32; 4], rope: &RopeSpec) -> bool {
        kv_shape[0] == 1
            && self.rotation.is_none()
            && crate::kv::pending::pair_shape_applies(kv_shape, [k_len, self.len()], Some(rope))
            && crate::kernels::int8_encode::applies_in_place(kv_shape[3] as usize)
    }

    /// The next position of an int8 cache (key side `k`, value side `v`) for an append the
    /// attention launch or the qkv GEMV performs (see `TurboSide::pair_target`). `None`, with
    /// nothing appended, where the in-place pair append would not apply to `[1, H, 1, D]`.
    pub fn pair_target(
        k: &mut Int8Side,
        v: &mut Int8Side,
        kv_shape: [i32; 4],
        rope: &RopeSpec,
    ) -> Result<Option<crate::kernels::folded_append::PairTarget>> {
        use crate::kernels::folded_append::{PairFormat, PairTarget, SideTarget};
        if !(k.rotation.is_none() && v.value_pair_applies(k.len(), &kv_shape, rope)) {
            return Ok(None);
        }
        let d = kv_shape[3];
        let (heads, hd) = (kv_shape[1], d as usize);
        let int8 = |[q, s]: [Array; 2], after, pos| SideTarget::int8(q, s, after, heads, hd, pos);
        PairTarget::reserve(
            PairFormat::Int8,
            &mut k.pair_side(d),
            &mut v.pair_side(d),
            heads,
            hd,
            int8,
            int8,
        )
    }

    /// Counts the position [`Int8Side::pair_target`] reserved on both sides as written by
    /// the launch whose token is `token` (the widths only matter to a reservation).
    pub fn commit_pair(k: &mut Int8Side, v: &mut Int8Side, token: Array) -> Result<()> {
        crate::kv::pending::commit_pair(k.pair_side(0), v.pair_side(0), token)
    }

    /// Appends one decode-step position to an int8 cache's key side `k` and value side `v`
    /// with one launch (`kernels::int8_encode::fused_encode_kv_into`); with `rope`, `xk` is
    /// the key before RoPE. Returns false, having appended nothing, where that path does not
    /// apply (then each side appends on its own).
    pub fn append_pair_in_place(
        k: &mut Int8Side,
        v: &mut Int8Side,
        xk: &Array,
        xv: &Array,
        rope: Option<&RopeSpec>,
    ) -> Result<bool> {
        use crate::kernels::int8_encode::{fused_encode_kv_into, SideBuffers};
        use crate::kv::pending::{append_pair_one, pair_step_applies};
        let d = xk.dim(-1) as usize;
        if !(pair_step_applies(xk, xv, [k.len(), v.len()], rope)
            && Self::in_place_shape(xk)
            && k.kernels_apply(d)
            && v.kernels_apply(d)
            && k.rotation.is_some() == v.rotation.is_some())
        {
            return Ok(false);
        }
        let s = xk.shape();
        let (k_signs, v_signs) = (k.signs().cloned(), v.signs().cloned());
        let (kp, vp) = (k.pair_side(s[3]), v.pair_side(s[3]));
        append_pair_one(kp, vp, [s[0], s[1]], |[kq, ks], [vq, vs], pos, [ka, va]| {
            fused_encode_kv_into(
                xk,
                xv,
                SideBuffers {
                    q: kq,
                    scale: ks,
                    after: ka,
                    signs: k_signs.as_ref(),
                },
                SideBuffers {
                    q: vq,
                    scale: vs,
                    after: va,
                    signs: v_signs.as_ref(),
                },
                pos,
                rope,
            )
        })?;
        Ok(true)
    }
}

impl Int8Side {
    /// [`Int8Side::pair_target`] for fp16 keys `k` (rotated by RoPE by the launch) and int8
    /// values `v` (the turbo modes' boundary layers), for the attention launch's append
    /// (`MLXCEL_ATTN_APPEND`; the qkv GEMV's fold does not write this pair).
    pub fn fp16_pair_target(
        k: &mut Fp16Side,
        v: &mut Int8Side,
        kv_shape: [i32; 4],
        rope: &RopeSpec,
    ) -> Result<Option<crate::kernels::folded_append::PairTarget>> {
        use crate::kernels::folded_append::{PairFormat, PairTarget, SideTarget};
        if !(k.dtype() == Dtype::F16 && v.value_pair_applies(k.len(), &kv_shape, rope)) {
            return Ok(None);
        }
        let d = kv_shape[3];
        let (heads, hd) = (kv_shape[1], d as usize);
        PairTarget::reserve(
            PairFormat::Fp16Int8,
            &mut k.pair_side(d),
            &mut v.pair_side(d),
            heads,
            hd,
            |[kd, _], after, pos| SideTarget::fp16(kd, after, heads, hd, pos),
            |[vq, vs], after, pos| SideTarget::int8(vq, vs, after, heads, hd, pos),
        )
    }

    /// Counts the position [`Int8Side::fp16_pair_target`] reserved as written by the launch
    /// whose token is `token`.
    pub fn commit_fp16_pair(k: &mut Fp16Side, v: &mut Int8Side, token: Array) -> Result<()> {
        crate::kv::pending::commit_pair(k.pair_side(0), v.pair_side(0), token)
    }

    /// Appends one decode-step position to an fp16-key / int8-value cache (the turbo modes'
    /// boundary layers, `fp16+int8`) with one in-place launch
    /// (`kernels::fp16_append::append_kv_into`); with `rope`, `xk` is the key before
    /// RoPE. Returns false, having appended nothing, where that path does not apply (a
    /// rotated value side, `MLXCEL_FP16_INPLACE_APPEND` or `MLXCEL_INPLACE_APPEND` off, not
    /// CUDA): then each side appends on its own.
    pub fn append_fp16_pair_in_place(
        k: &mut Fp16Side,
        v: &mut Int8Side,
        xk: &Array,
        xv: &Array,
        rope: Option<&RopeSpec>,
    ) -> Result<bool> {
        use crate::kernels::fp16_append::ValueBuffers;
        if !(Self::in_place_shape(xk) && v.rotation.is_none()) {
            return Ok(false);
        }
        let v_len = v.len();
        Fp16Side::append_key_pair_in_place(
            k,
            v_len,
            |d| v.pair_side(d),
            xk,
            xv,
            rope,
            |[q, scale]| ValueBuffers::Int8 { q, scale },
        )
    }
}

impl KvSide for Int8Side {
    fn as_int8_mut(&mut self) -> Option<&mut Int8Side> {
        Some(self)
    }

    fn append_before_rope(&mut self, x: &Array, rope: &RopeSpec) -> Result<bool> {
        if self.in_place_applies(x)
            && crate::flags::FUSED_ROPE.enabled()
            && rope.fits_warp_layout(x.dim(3) as usize)
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
        let (q, s) = match &self.rotation {
            Some(r) => Self::quantize(&r.forward(&x.astype(Dtype::F32)?)?)?,
            None => Self::quantize(x)?,
        };
        self.q.append(&q)?;
        self.scale.append(&s)
    }

    fn len(&self) -> usize {
        self.q.len()
    }

    fn truncate(&mut self, len: usize) -> Result<()> {
        self.pending.settle()?;
        self.q.truncate(len)?;
        self.scale.truncate(len)
    }

    fn bytes(&self) -> usize {
        self.q.bytes() + self.scale.bytes()
    }

    fn capacity_bytes(&self) -> usize {
        self.q.capacity_bytes() + self.scale.capacity_bytes()
    }

    fn name(&self) -> &'static str {
        if self.rotation.is_some() {
            "int8r"
        } else {
            "int8"
        }
    }

    fn rotation(&self) -> Option<&Rotation> {
        self.rotation.as_ref()
    }

    fn dense(&self, dtype: Dtype) -> Result<Array> {
        let stored = self.dense_rotated(dtype)?;
        match &self.rotation {
            Some(r) => r.inverse(&stored),
            None => Ok(stored),
        }
    }

    fn dense_rotated(&self, dtype: Dtype) -> Result<Array> {
        self.pending.settle()?;
        let q = self
            .q
            .view()?
            .ok_or_else(|| Error::invalid("kv", "empty cache"))?;
        let s = self
            .scale
            .view()?
            .ok_or_else(|| Error::invalid("kv", "empty cache"))?;
        q.astype(dtype)?.multiply(&s.astype(dtype)?)
    }

    fn raw(&self) -> Option<RawSide<'_>> {
        let d = self.q.full()?.dim(-1) as usize;
        if !self.kernels_apply(d) {
            return None;
        }
        Some(RawSide {
            format: FORMAT_INT8,
            data: self.q.full()?,
            aux: Some(self.scale.full()?),
            capacity: self.q.capacity(),
            lut_array: None,
            rotation: self.rotation.as_ref(),
            pending: self.pending.token(),
        })
    }
}
