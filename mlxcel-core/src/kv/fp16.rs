//! Unquantized storage (fp16 by default): the reference every other mode is measured against.

use crate::kv::buffer::GrowBuffer;
use crate::kv::side::{KvSide, RawSide, FORMAT_FP16};
use crate::kv::turbo::rotation::Rotation;
use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

pub struct Fp16Side {
    buf: GrowBuffer,
}

impl Fp16Side {
    /// Stores in `dtype` (fp16 for the `fp16` mode).
    pub fn new(dtype: Dtype) -> Fp16Side {
        Fp16Side {
            buf: GrowBuffer::new(dtype),
        }
    }
}

impl KvSide for Fp16Side {
    fn append(&mut self, x: &Array) -> Result<()> {
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
            pending: None,
        })
    }
}
