//! [`SplitKvCache`]: a layer's cache made of a key side and a value side, each in its own
//! storage format. Attention goes through [`crate::attention::attend`], which picks the path.

use crate::attention::{append_attend_before_rope, attend, attend_before_rope};
use crate::kernels::decode_attention::AttnAppend;
use crate::kv::fp16::Fp16Side;
use crate::kv::int8::Int8Side;
use crate::kv::side::KvSide;
use crate::kv::turbo::TurboSide;
use crate::kv::{flatten_heads, rope_queries, KvCache};
use crate::mlx::kernel::KernelBackend;
use crate::mlx::Array;
use crate::rope::RopeSpec;
use crate::{Error, Result};

pub struct SplitKvCache {
    pub k: Box<dyn KvSide>,
    pub v: Box<dyn KvSide>,
    name: String,
}

impl SplitKvCache {
    /// Attention of `q` before RoPE: rotated inside the fused kernel where it can be, else
    /// MLX's rope, then [`KvCache::attend`]. With `flat` the output is `[B, L, Hq * D]`
    /// (the fused kernel declares it so; other paths reshape).
    fn attend_before_rope_as(
        &self,
        q: &Array,
        scale: f32,
        rope: &RopeSpec,
        flat: bool,
    ) -> Result<Array> {
        if let Some(o) = attend_before_rope(q, self.k.as_ref(), self.v.as_ref(), scale, rope, flat)?
        {
            return Ok(o);
        }
        let o = self.attend(&rope_queries(q, rope, self.len())?, scale)?;
        if flat {
            flatten_heads(&o)
        } else {
            Ok(o)
        }
    }

    /// The next position of a pair the qkv GEMV's folded append or the attention launch
    /// writes, reserved ([`TurboSide::pair_target`], [`TurboSide::asym_pair_target`],
    /// [`Int8Side::pair_target`], and with `boundary` [`Int8Side::fp16_pair_target`], which
    /// only the attention launch writes); `None`, with nothing reserved, for other sides.
    fn pair_target(
        &mut self,
        kv_shape: [i32; 4],
        rope: &RopeSpec,
        boundary: bool,
    ) -> Result<Option<crate::kernels::folded_append::PairTarget>> {
        if let (Some(kt), Some(vt)) = (self.k.as_turbo_mut(), self.v.as_turbo_mut()) {
            return TurboSide::pair_target(kt, vt, kv_shape, rope);
        }
        if let (Some(kf), Some(vt)) = (self.k.as_fp16_mut(), self.v.as_turbo_mut()) {
            return TurboSide::asym_pair_target(kf, vt, kv_shape, rope);
        }
        if let (Some(ki), Some(vi)) = (self.k.as_int8_mut(), self.v.as_int8_mut()) {
            return Int8Side::pair_target(ki, vi, kv_shape, rope);
        }
        match (self.k.as_fp16_mut(), self.v.as_int8_mut()) {
            (Some(kf), Some(vi)) if boundary => Int8Side::fp16_pair_target(kf, vi, kv_shape, rope),
            _ => Ok(None),
        }
    }

    pub fn new(k: Box<dyn KvSide>, v: Box<dyn KvSide>, name: String) -> SplitKvCache {
        SplitKvCache { k, v, name }
    }

    /// Both sides' decode-step append in one launch where both are turbo4, both int8, fp16
    /// keys with turbo4 values (turbo4-asym), or fp16 keys with fp16 or int8 values
    /// (`MLXCEL_FP16_INPLACE_APPEND`; the turbo modes' boundary layers are `fp16+int8`),
    /// with in-place appends (`MLXCEL_FUSED_KV_APPEND`); false when that does not apply.
    fn append_pair(&mut self, k: &Array, v: &Array, rope: Option<&RopeSpec>) -> Result<bool> {
        if let (Some(kt), Some(vt)) = (self.k.as_turbo_mut(), self.v.as_turbo_mut()) {
            return TurboSide::append_pair_in_place(kt, vt, k, v, rope);
        }
        if let (Some(kf), Some(vt)) = (self.k.as_fp16_mut(), self.v.as_turbo_mut()) {
            return TurboSide::append_asym_pair_in_place(kf, vt, k, v, rope);
        }
        if let (Some(ki), Some(vi)) = (self.k.as_int8_mut(), self.v.as_int8_mut()) {
            return Int8Side::append_pair_in_place(ki, vi, k, v, rope);
        }
        if let (Some(kf), Some(vi)) = (self.k.as_fp16_mut(), self.v.as_int8_mut()) {
            return Int8Side::append_fp16_pair_in_place(kf, vi, k, v, rope);
        }
        // fp16 sides only with RoPE given: their in-place write is ordered before MLX's SDPA
        // by the query RoPE launch (`attention::attend_before_rope`), which needs q before RoPE.
        match (self.k.as_fp16_mut(), self.v.as_fp16_mut(), rope) {
            (Some(kf), Some(vf), Some(r)) => Fp16Side::append_pair_in_place(kf, vf, k, v, r),
            _ => Ok(false),
        }
    }
}

fn check_shapes(k: &Array, v: &Array) -> Result<()> {
    if k.ndim() != 4 || v.ndim() != 4 || k.dim(2) != v.dim(2) {
        return Err(Error::invalid(
            "kv append",
            format!(
                "keys {:?} and values {:?} must be [B, Hkv, L, D] with the same L",
                k.shape(),
                v.shape()
            ),
        ));
    }
    Ok(())
}

impl KvCache for SplitKvCache {
    fn append_rope(&mut self, k: &Array, v: &Array, rope: &RopeSpec) -> Result<()> {
        check_shapes(k, v)?;
        if crate::flags::FUSED_ROPE.enabled() {
            if self.append_pair(k, v, Some(rope))? {
                return Ok(());
            }
            if self.k.append_before_rope(k, rope)? {
                return self.v.append(v);
            }
        }
        let k = rope.apply(k, self.k.len())?;
        self.append(&k, v)
    }

    fn attend_rope(&self, q: &Array, scale: f32, rope: &RopeSpec) -> Result<Array> {
        self.attend_before_rope_as(q, scale, rope, false)
    }

    fn attend_rope_flat(&self, q: &Array, scale: f32, rope: &RopeSpec) -> Result<Array> {
        self.attend_before_rope_as(q, scale, rope, true)
    }

    fn fused_append_target(
        &mut self,
        kv_shape: [i32; 4],
        rope: &RopeSpec,
    ) -> Result<Option<crate::kernels::folded_append::PairTarget>> {
        // The flag first: with it off (the default) a decode step's layers pay nothing more.
        // The folded append rotates the keys itself, as the other in-kernel RoPE paths do.
        if !crate::flags::QKV_ENCODE.enabled() || !crate::flags::FUSED_ROPE.enabled() {
            return Ok(None);
        }
        // The attention launch takes the append (append_attend_rope_flat) where it runs.
        if self.attention_appends() {
            return Ok(None);
        }
        self.pair_target(kv_shape, rope, false)
    }

    /// Whether a decode step's append goes to the attention launch (`MLXCEL_ATTN_APPEND` on,
    /// CUDA, in-kernel RoPE on, sides the qkv GEMV's folded append writes: turbo4, turbo4-asym,
    /// int8; and fp16-K / int8-V pairs): that fold then declines
    /// ([`KvCache::fused_append_target`]).
    fn attention_appends(&self) -> bool {
        use crate::kernels::decode_attention::append_formats_fit;
        use crate::kernels::folded_append::PairFormat;
        if !(crate::flags::ATTN_APPEND.enabled()
            && crate::flags::FUSED_ROPE.enabled()
            && KernelBackend::current() == Some(KernelBackend::Cuda))
        {
            return false;
        }
        let (Some(kr), Some(vr)) = (self.k.raw(), self.v.raw()) else {
            return false;
        };
        [
            PairFormat::Turbo4,
            PairFormat::Turbo4Asym,
            PairFormat::Int8,
            PairFormat::Fp16Int8,
        ]
        .into_iter()
        .any(|f| append_formats_fit(f, &kr, &vr))
    }

    fn append_attend_rope_flat(
        &mut self,
        q: &Array,
        k: &Array,
        v: &Array,
        scale: f32,
        rope: &RopeSpec,
    ) -> Result<Option<Array>> {
        if !self.attention_appends() {
            return Ok(None);
        }
        check_shapes(k, v)?;
        let s = k.shape();
        if s != v.shape() {
            return Ok(None);
        }
        // An unused reservation appends nothing.
        let Some(target) = self.pair_target([s[0], s[1], s[2], s[3]], rope, true)? else {
            return Ok(None);
        };
        let append = AttnAppend {
            target: &target,
            k_new: k,
            v_new: v,
        };
        match append_attend_before_rope(
            q,
            self.k.as_ref(),
            self.v.as_ref(),
            scale,
            rope,
            true,
            &append,
        )? {
            Some((o, token)) => {
                self.commit_fused_append(token)?;
                Ok(Some(o))
            }
            None => Ok(None),
        }
    }

    fn commit_fused_append(&mut self, token: Array) -> Result<()> {
        if let (Some(kt), Some(vt)) = (self.k.as_turbo_mut(), self.v.as_turbo_mut()) {
            return TurboSide::commit_pair(kt, vt, token);
        }
        if let (Some(kf), Some(vt)) = (self.k.as_fp16_mut(), self.v.as_turbo_mut()) {
            return TurboSide::commit_asym_pair(kf, vt, token);
        }
        if let (Some(ki), Some(vi)) = (self.k.as_int8_mut(), self.v.as_int8_mut()) {
            return Int8Side::commit_pair(ki, vi, token);
        }
        match (self.k.as_fp16_mut(), self.v.as_int8_mut()) {
            (Some(kf), Some(vi)) => Int8Side::commit_fp16_pair(kf, vi, token),
            _ => Err(Error::invalid(
                "kv append",
                format!("{} caches take no folded appends", self.name),
            )),
        }
    }

    fn append(&mut self, k: &Array, v: &Array) -> Result<()> {
        check_shapes(k, v)?;
        if self.append_pair(k, v, None)? {
            return Ok(());
        }
        self.k.append(k)?;
        self.v.append(v)
    }

    fn attend(&self, q: &Array, scale: f32) -> Result<Array> {
        attend(q, self.k.as_ref(), self.v.as_ref(), scale)
    }

    fn len(&self) -> usize {
        self.k.len()
    }

    fn truncate(&mut self, len: usize) -> Result<()> {
        if len > self.len() {
            return Err(Error::invalid(
                "kv truncate",
                format!("cannot truncate {} positions to {len}", self.len()),
            ));
        }
        // Values first: only a value side (turbo4-delegated) may refuse, and then the keys
        // are still untouched.
        self.v.truncate(len)?;
        self.k.truncate(len)
    }

    fn bytes(&self) -> usize {
        self.k.bytes() + self.v.bytes()
    }

    fn capacity_bytes(&self) -> usize {
        self.k.capacity_bytes() + self.v.capacity_bytes()
    }

    fn mode_name(&self) -> String {
        self.name.clone()
    }
}
