//! TurboQuant-style storage: per head vector, per rotation group of G (128, or 64 when
//! head_dim is 64), a corrected fp16 norm and 2/3/4-bit Lloyd-Max indices of the
//! randomly rotated coordinates. See [`codec`] for the exact encode/decode.

pub mod codebook;
pub mod codec;
pub mod pack;
pub mod rotation;

use crate::flags;
use crate::kv::buffer::GrowBuffer;
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

    /// The in-place decode-step append ([`PendingWrite::append_one`]); with `rope`, x is
    /// the key before RoPE and the encoder applies it.
    fn append_in_place(&mut self, x: &Array, rope: Option<&RopeSpec>) -> Result<()> {
        let s = x.shape();
        let codec = &self.codec;
        self.pending.append_one(
            &mut self.packed,
            &mut self.norms,
            [s[0], s[1]],
            [(codec.head_dim / 2) as i32, 1],
            |packed, norms, pos, after| {
                crate::kernels::turbo_encode::fused_encode_into(
                    codec, x, packed, norms, pos, after, rope,
                )
            },
        )
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
    fn append_before_rope(&mut self, x: &Array, rope: &RopeSpec) -> Result<bool> {
        let one_position = x.ndim() == 4 && x.dim(2) == 1;
        if one_position
            && flags::FUSED_ROPE.enabled()
            && crate::kernels::turbo_encode::applies_in_place(&self.codec)
            && rope.fits_warp_layout(self.codec.head_dim)
        {
            self.append_in_place(x, Some(rope))?;
            return Ok(true);
        }
        Ok(false)
    }

    fn append(&mut self, x: &Array) -> Result<()> {
        let one_position = x.ndim() == 4 && x.dim(2) == 1;
        if one_position && crate::kernels::turbo_encode::applies_in_place(&self.codec) {
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
