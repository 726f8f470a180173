//! A dense KV cache: keys and values stored unquantized in one dtype (fp16 by default).

use crate::attention::dense_attention;
use crate::mlx::ops::concatenate;
use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

use super::{KvCache, GROWTH_STEP};

/// Keys and values in `[B, Hkv, capacity, D]` buffers of `dtype`.
pub struct DenseKvCache {
    dtype: Dtype,
    keys: Option<Array>,
    values: Option<Array>,
    len: usize,
    capacity: usize,
}

impl DenseKvCache {
    /// An empty cache storing in `dtype` (e.g. `Dtype::F16` for the fp16 mode).
    pub fn new(dtype: Dtype) -> DenseKvCache {
        DenseKvCache {
            dtype,
            keys: None,
            values: None,
            len: 0,
            capacity: 0,
        }
    }

    /// Views of the cached keys and values, `[B, Hkv, len, D]`.
    pub fn state(&self) -> Result<Option<(Array, Array)>> {
        match (&self.keys, &self.values) {
            (Some(k), Some(v)) => Ok(Some((
                k.slice_axis(2, 0, self.len as i32)?,
                v.slice_axis(2, 0, self.len as i32)?,
            ))),
            _ => Ok(None),
        }
    }

    fn grow(buf: &Option<Array>, like: &Array, extra: usize, dtype: Dtype) -> Result<Array> {
        let s = like.shape();
        let block = Array::zeros(&[s[0], s[1], extra as i32, s[3]], dtype)?;
        match buf {
            Some(b) => concatenate(&[b, &block], 2),
            None => Ok(block),
        }
    }
}

impl KvCache for DenseKvCache {
    fn append(&mut self, k: &Array, v: &Array) -> Result<()> {
        if k.ndim() != 4 || k.shape() != v.shape() {
            return Err(Error::invalid(
                "kv append",
                format!(
                    "keys {:?} and values {:?} must both be [B, Hkv, L, D]",
                    k.shape(),
                    v.shape()
                ),
            ));
        }
        let l = k.dim(2) as usize;
        if self.len + l > self.capacity {
            let need = self.len + l - self.capacity;
            let extra = need.div_ceil(GROWTH_STEP) * GROWTH_STEP;
            self.keys = Some(Self::grow(&self.keys, k, extra, self.dtype)?);
            self.values = Some(Self::grow(&self.values, v, extra, self.dtype)?);
            self.capacity += extra;
        }
        let s = k.shape();
        let start = [0, 0, self.len as i32, 0];
        let stop = [s[0], s[1], (self.len + l) as i32, s[3]];
        let kb = self.keys.take().expect("allocated above");
        let vb = self.values.take().expect("allocated above");
        self.keys = Some(kb.slice_update(&k.astype(self.dtype)?, &start, &stop)?);
        self.values = Some(vb.slice_update(&v.astype(self.dtype)?, &start, &stop)?);
        self.len += l;
        Ok(())
    }

    fn attend(&self, q: &Array, scale: f32) -> Result<Array> {
        let (k, v) = self
            .state()?
            .ok_or_else(|| Error::invalid("kv attend", "the cache is empty"))?;
        dense_attention(q, &k, &v, scale)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> usize {
        match &self.keys {
            Some(k) => {
                let s = k.shape();
                2 * (s[0] * s[1] * s[3]) as usize * self.len * self.dtype.size()
            }
            None => 0,
        }
    }

    fn capacity_bytes(&self) -> usize {
        self.keys.as_ref().map_or(0, |k| k.nbytes())
            + self.values.as_ref().map_or(0, |v| v.nbytes())
    }

    fn mode_name(&self) -> &'static str {
        match self.dtype {
            Dtype::F16 => "fp16",
            Dtype::BF16 => "bf16",
            Dtype::F32 => "fp32",
            _ => "dense",
        }
    }
}
