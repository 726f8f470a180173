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
//! 5. relabel each index to its sign-magnitude code ([`stored_code`]) and pack the codes
//!    ([`pack`]).
//!
//! Decode in the rotated basis is `book[code] * norm` with the book in code order
//! ([`stored_order`]); in the original basis apply `R^T`.
//!
//! Why sign-magnitude codes: the books are symmetric (`c[n-1-i] = -c[i]`), so with the top
//! bit meaning "positive" and the low bits ranking the magnitude, the fused CUDA kernel
//! decodes a 4-bit code with one byte permute over an 8-entry magnitude table held in
//! registers plus a sign flip (`kernels/cuda/decode_attention_mma.cu`); sorted indices
//! would cost it ~3 more instructions per 8 values. The relabelling is a bijection: the
//! split paths, which look codes up in the book, give identical results.

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
    /// The centroids in stored-code order.
    centroids: Array,
    midpoints: Array,
    /// Maps a sorted centroid index to its stored code.
    relabel: Array,
    /// The centroids in stored-code order padded to 16 entries (fused kernels' codebook).
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

/// The stored code of sorted centroid index `i` of an `n`-entry symmetric book: the top
/// bit set for the positive half, the low bits the rank of the magnitude (0 = smallest).
/// An involution: applied to a code it gives the sorted index back.
pub fn stored_code(i: usize, n: usize) -> u8 {
    let half = n / 2;
    if i >= half {
        i as u8
    } else {
        (half - 1 - i) as u8
    }
}

/// A sorted book rearranged into stored-code order (`out[stored_code(i)] = sorted[i]`).
pub fn stored_order(sorted: &[f32]) -> Vec<f32> {
    let n = sorted.len();
    (0..n)
        .map(|code| sorted[stored_code(code, n) as usize])
        .collect()
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
        let ordered = stored_order(&book.centroids);
        let mut padded = ordered.clone();
        padded.resize(16, 0.0);
        let n = book.centroids.len();
        let relabel: Vec<u8> = (0..n).map(|i| stored_code(i, n)).collect();
        Ok(TurboCodec {
            lut16: Array::from_slice(&padded, &[16])?,
            bits,
            head_dim,
            centroids: Array::from_slice(&ordered, &[n as i32])?,
            relabel: Array::from_slice(&relabel, &[n as i32])?,
            midpoints: Array::from_slice(&book.midpoints, &[book.midpoints.len() as i32])?,
            rotation: Rotation::new(seed, group)?,
            book,
        })
    }

    /// The codebook as a 16-entry f32 array (built once).
    pub fn lut16(&self) -> &Array {
        &self.lut16
    }

    /// The sorted midpoints between centroids (f32, on the device).
    pub fn midpoints(&self) -> &Array {
        &self.midpoints
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
        let idx = self.relabel.take(&idx, 0)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_codes_are_sign_magnitude() {
        for bits in [2u32, 3, 4] {
            let book = codebook(bits, 128);
            let n = book.centroids.len();
            let half = n / 2;
            let ordered = stored_order(&book.centroids);
            for code in 0..n {
                // An involution over 0..n.
                assert_eq!(stored_code(stored_code(code, n) as usize, n) as usize, code);
                // Top bit = positive; low bits rank the magnitude.
                assert_eq!(ordered[code] > 0.0, code >= half, "bits {bits} code {code}");
                let rank = code % half;
                if rank > 0 {
                    assert!(ordered[code].abs() > ordered[code - 1].abs());
                }
            }
        }
    }

    #[test]
    fn relabelled_codes_decode_to_the_nearest_centroid() {
        // One vector along a basis direction after rotation is hard to build; instead check
        // the decoded (rotated-basis) values against a host nearest-centroid search.
        let codec = TurboCodec::new(4, 128, 7).unwrap();
        let x: Vec<f32> = (0..128)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0)
            .collect();
        let a = Array::from_slice(&x, &[1, 128]).unwrap();
        let e = codec.encode(&a).unwrap();
        let y = codec
            .rotation
            .forward(
                &a.divide(&a.square().unwrap().sum(&[1], true).unwrap().sqrt().unwrap())
                    .unwrap(),
            )
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let dec = codec
            .decode_rotated(&e, Dtype::F32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let norm = e.norms.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap()[0];
        for (yj, dj) in y.iter().zip(&dec) {
            let nearest = codec
                .book
                .centroids
                .iter()
                .copied()
                .min_by(|a, b| (a - yj).abs().total_cmp(&(b - yj).abs()))
                .unwrap();
            assert!(
                (dj / norm - nearest).abs() < 1e-6,
                "{yj}: {} vs {nearest}",
                dj / norm
            );
        }
    }
}
