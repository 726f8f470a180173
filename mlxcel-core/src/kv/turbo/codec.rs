//! The TurboQuant-style vector codec, on the device (MLX ops, no host read-back):
//! per group of G coordinates store a corrected norm and `bits`-bit codebook indices of
//! the rotated, normalized vector.
//!
//! Encode, for each group `x` of G coordinates:
//! 1. `n = |x|`, `u = x / n` (u = 0 when n <= 1e-10);
//! 2. `y = R u` (randomized Walsh–Hadamard, [`Rotation`]);
//! 3. `idx_j` = index of the nearest centroid of the Lloyd-Max book for N(0, 1/G)
//!    (= number of midpoints <= y_j; ties go up);
//! 4. store `fp16(n / |c[idx]|)` (the corrected norm: the reconstruction keeps |x|);
//! 5. pack the indices ([`pack`]).
//!
//! Decode in the rotated basis is `c[idx] * norm`; in the original basis apply `R^T`.

use super::codebook::{codebook, Codebook};
use super::pack::{pack, packed_bytes, unpack};
use super::rotation::Rotation;
use crate::mlx::ops::where_;
use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

/// Packed indices and per-group corrected norms of a batch of vectors.
#[derive(Clone, Debug)]
pub struct Encoded {
    /// `[.., packed_bytes(bits, D)]` uint8.
    pub packed: Array,
    /// `[.., D / G]` float16.
    pub norms: Array,
}

/// Encoder/decoder for one side (K or V) of a cache.
#[derive(Clone, Debug)]
pub struct TurboCodec {
    pub bits: u32,
    pub head_dim: usize,
    pub book: Codebook,
    pub rotation: Rotation,
    centroids: Array,
    midpoints: Array,
    /// The centroids padded to 16 entries (fused kernels' codebook input).
    lut16: Array,
}

/// Rotation group for a head dimension: 128 when it divides it, else 64.
pub fn group_for(head_dim: usize) -> Result<usize> {
    if head_dim.is_multiple_of(128) {
        Ok(128)
    } else if head_dim.is_multiple_of(64) {
        Ok(64)
    } else {
        Err(Error::invalid(
            "turbo KV cache",
            format!("head_dim {head_dim} is not a multiple of 64; turbo modes need 64 or 128 per rotation group"),
        ))
    }
}

impl TurboCodec {
    /// A codec for `bits` (2, 3, 4) over head vectors of `head_dim`, rotating with `seed`.
    pub fn new(bits: u32, head_dim: usize, seed: u64) -> Result<TurboCodec> {
        if !(2..=4).contains(&bits) {
            return Err(Error::invalid(
                "turbo KV cache",
                format!("{bits} bits (supported: 2, 3, 4)"),
            ));
        }
        let group = group_for(head_dim)?;
        let book = codebook(bits, group);
        let mut padded = book.centroids.clone();
        padded.resize(16, 0.0);
        Ok(TurboCodec {
            lut16: Array::from_slice(&padded, &[16])?,
            bits,
            head_dim,
            centroids: Array::from_slice(&book.centroids, &[book.centroids.len() as i32])?,
            midpoints: Array::from_slice(&book.midpoints, &[book.midpoints.len() as i32])?,
            rotation: Rotation::new(seed, group)?,
            book,
        })
    }

    /// The codebook as a 16-entry f32 array (built once).
    pub fn lut16(&self) -> &Array {
        &self.lut16
    }

    pub fn group(&self) -> usize {
        self.book.group
    }

    /// Bytes stored per head vector (indices + fp16 norms).
    pub fn bytes_per_vector(&self) -> usize {
        packed_bytes(self.bits, self.head_dim) + 2 * (self.head_dim / self.group())
    }

    fn grouped_shape(&self, shape: &[i32]) -> Vec<i32> {
        let mut s = shape[..shape.len() - 1].to_vec();
        s.push((self.head_dim / self.group()) as i32);
        s.push(self.group() as i32);
        s
    }

    /// Encodes `x [.., head_dim]` (any float dtype).
    pub fn encode(&self, x: &Array) -> Result<Encoded> {
        let shape = x.shape();
        if *shape.last().unwrap_or(&0) != self.head_dim as i32 {
            return Err(Error::invalid(
                "turbo encode",
                format!("last axis of {shape:?} is not {}", self.head_dim),
            ));
        }
        let g = x.astype(Dtype::F32)?.reshape(&self.grouped_shape(&shape))?;
        let last = g.ndim() as i32 - 1;
        let n = g.square()?.sum(&[last], true)?.sqrt()?;
        let tiny = Array::scalar(1e-10f32)?;
        let ok = n.greater(&tiny)?;
        let u = g.divide(&where_(&ok, &n, &Array::scalar(1f32)?)?)?;
        let y = self.rotation.forward(&u)?;
        let idx = y
            .expand_dims(&[-1])?
            .greater_equal(&self.midpoints)?
            .astype(Dtype::U8)?
            .sum(&[last + 1], false)?
            .astype(Dtype::U8)?;
        let c = self.centroids.take(&idx, 0)?;
        let r2 = c.square()?.sum(&[last], true)?;
        let norm = where_(&r2.greater(&tiny)?, &n.divide(&r2.sqrt()?)?, &n)?;
        let norms = norm.squeeze(&[last])?.astype(Dtype::F16)?;
        let packed = pack(&idx.reshape(&shape)?, self.bits)?;
        Ok(Encoded { packed, norms })
    }

    /// Reconstruction in the rotated basis, `[.., head_dim]` in `dtype`.
    pub fn decode_rotated(&self, e: &Encoded, dtype: Dtype) -> Result<Array> {
        let idx = unpack(&e.packed, self.bits, self.head_dim)?;
        let mut shape = idx.shape();
        let c = self.centroids.astype(dtype)?.take(&idx, 0)?;
        let g = c.reshape(&self.grouped_shape(&shape))?;
        let out = g.multiply(&e.norms.astype(dtype)?.expand_dims(&[-1])?)?;
        shape.truncate(shape.len());
        out.reshape(&shape)
    }

    /// Reconstruction in the original basis.
    pub fn decode(&self, e: &Encoded, dtype: Dtype) -> Result<Array> {
        self.rotation.inverse(&self.decode_rotated(e, dtype)?)
    }
}
