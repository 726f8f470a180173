//! Unquantized storage (fp16 by default): the reference every other mode is measured against.

use crate::kv::buffer::GrowBuffer;
use crate::kv::pending::{PairSide, PendingWrite};
use crate::kv::side::{KvSide, RawSide, FORMAT_FP16};
use crate::kv::turbo::rotation::Rotation;
use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

/// One unquantized side. Its only in-place writer is the turbo4-asym K+V launch
/// (`TurboSide::append_asym_pair_in_place`: the key side of turbo4-asym on CUDA, read by
/// the fused decode kernel, which takes the write token); every other reader and writer
/// waits for that write first ([`crate::kv::pending`] has the rules).
pub struct Fp16Side {
    buf: GrowBuffer,
    pending: PendingWrite,
}

impl Fp16Side {
    /// Stores in `dtype` (fp16 for the `fp16` mode).
    pub fn new(dtype: Dtype) -> Fp16Side {
        Fp16Side {
            buf: GrowBuffer::new(dtype),
            pending: PendingWrite::default(),
        }
    }

    /// The storage dtype.
    pub fn dtype(&self) -> Dtype {
        self.buf.dtype()
    }

    /// This side's state for [`crate::kv::pending::append_pair_one`] (vectors of `d`
    /// values; no aux buffer).
    pub(crate) fn pair_side(&mut self, d: i32) -> PairSide<'_> {
        PairSide {
            pending: &mut self.pending,
            data: &mut self.buf,
            aux: None,
            widths: [d, 0],
        }
    }
}

impl KvSide for Fp16Side {
    fn as_fp16_mut(&mut self) -> Option<&mut Fp16Side> {
        Some(self)
    }

    fn append(&mut self, x: &Array) -> Result<()> {
        self.pending.settle()?;
        self.buf.append(x)
    }

    fn len(&self) -> usize {
        self.buf.len()
    }

    fn bytes(&self) -> usize {
        self.buf.bytes()
    }

    fn capacity_bytes(&self) -> usize {
        self.buf.capacity_bytes()
    }

    fn name(&self) -> &'static str {
        match self.buf.dtype() {
            Dtype::F16 => "fp16",
            Dtype::BF16 => "bf16",
            _ => "fp32",
        }
    }

    fn rotation(&self) -> Option<&Rotation> {
        None
    }

    fn dense(&self, dtype: Dtype) -> Result<Array> {
        self.pending.settle()?;
        let v = self
            .buf
            .view()?
            .ok_or_else(|| Error::invalid("kv", "empty cache"))?;
        if v.dtype() == dtype {
            Ok(v)
        } else {
            v.astype(dtype)
        }
    }

    fn dense_rotated(&self, dtype: Dtype) -> Result<Array> {
        self.dense(dtype)
    }

    fn raw(&self) -> Option<RawSide<'_>> {
        (self.buf.dtype() == Dtype::F16).then_some(())?;
        Some(RawSide {
            format: FORMAT_FP16,
            data: self.buf.full()?,
            aux: None,
            capacity: self.buf.capacity(),
            lut_array: None,
            rotation: None,
            pending: self.pending.token(),
        })
    }
}
