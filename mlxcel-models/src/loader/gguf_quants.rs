//! Decoding ggml block formats.
//!
//! - Q4_0, Q4_1 and Q8_0 map *losslessly* onto MLX affine quantization with group size 32
//!   (`x = scale * q + bias`, q unsigned): [`to_mlx_affine`] repacks them without rounding.
//! - Every supported type can be dequantized to f32 ([`dequantize`]); the K-quants and
//!   Q5_0/Q5_1 are only loaded that way (then kept dense, or re-quantized by the caller).
//!
//! Layouts follow ggml's reference C dequantizers; the tests check them against values
//! produced by the PyPI `gguf` package (`gguf.quants.dequantize`) on real model blocks.

use half::f16;

use super::gguf::GgmlType;
use crate::error::{ModelError, Result};

fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// Dequantizes `data` (whole blocks of `ty`) into `n` f32 values.
pub fn dequantize(ty: GgmlType, data: &[u8], n: usize) -> Result<Vec<f32>> {
    let (per, bytes) = ty
        .block()
        .ok_or_else(|| ModelError::Unsupported(format!("cannot decode {}", ty.name())))?;
    if !n.is_multiple_of(per) || data.len() != n / per * bytes {
        return Err(ModelError::Unsupported(format!(
            "{}: {} bytes do not hold {n} values",
            ty.name(),
            data.len()
        )));
    }
    let mut out = vec![0f32; n];
    match ty {
        GgmlType::F32 => {
            for (o, c) in out.iter_mut().zip(data.chunks_exact(4)) {
                *o = f32::from_le_bytes(c.try_into().unwrap());
            }
        }
        GgmlType::F16 => {
            for (o, c) in out.iter_mut().zip(data.chunks_exact(2)) {
                *o = f16::from_le_bytes([c[0], c[1]]).to_f32();
            }
        }
        GgmlType::BF16 => {
            for (o, c) in out.iter_mut().zip(data.chunks_exact(2)) {
                *o = half::bf16::from_le_bytes([c[0], c[1]]).to_f32();
            }
        }
        _ => {
            for (y, b) in out.chunks_exact_mut(per).zip(data.chunks_exact(bytes)) {
                match ty {
                    GgmlType::Q4_0 => q4_0(b, y),
                    GgmlType::Q4_1 => q4_1(b, y),
                    GgmlType::Q5_0 => q5_0(b, y),
                    GgmlType::Q5_1 => q5_1(b, y),
                    GgmlType::Q8_0 => q8_0(b, y),
                    GgmlType::Q4K => q4_k(b, y),
                    GgmlType::Q5K => q5_k(b, y),
                    GgmlType::Q6K => q6_k(b, y),
                    _ => unreachable!("handled above"),
                }
            }
        }
    }
    Ok(out)
}

// Q4_0: d f16, qs[16]; low nibbles are elements 0..16, high nibbles 16..32; x = d*(q-8).
fn q4_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for j in 0..16 {
        let q = b[2 + j];
        y[j] = ((q & 0x0F) as i32 - 8) as f32 * d;
        y[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
    }
}

// Q4_1: d, m f16, qs[16]; x = d*q + m.
fn q4_1(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let m = f16_at(b, 2);
    for j in 0..16 {
        let q = b[4 + j];
        y[j] = (q & 0x0F) as f32 * d + m;
        y[j + 16] = (q >> 4) as f32 * d + m;
    }
}

// Q5_0: d f16, qh u32 (5th bits), qs[16]; x = d*(q-16).
fn q5_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    for j in 0..16 {
        let q = b[6 + j];
        let h0 = ((qh >> j) << 4) & 0x10;
        let h1 = (qh >> (j + 12)) & 0x10;
        y[j] = (((q & 0x0F) as u32 | h0) as i32 - 16) as f32 * d;
        y[j + 16] = (((q >> 4) as u32 | h1) as i32 - 16) as f32 * d;
    }
}

// Q5_1: d, m f16, qh u32, qs[16]; x = d*q + m.
fn q5_1(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let m = f16_at(b, 2);
    let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    for j in 0..16 {
        let q = b[8 + j];
        let h0 = ((qh >> j) << 4) & 0x10;
        let h1 = (qh >> (j + 12)) & 0x10;
        y[j] = ((q & 0x0F) as u32 | h0) as f32 * d + m;
        y[j + 16] = ((q >> 4) as u32 | h1) as f32 * d + m;
    }
}

// Q8_0: d f16, qs i8[32]; x = d*q.
fn q8_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for j in 0..32 {
        y[j] = (b[2 + j] as i8) as f32 * d;
    }
}

/// The 6-bit (scale, min) pair `j` of a K-quant super-block's 12 packed scale bytes.
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Q4_K and Q5_K share their layout but for Q5_K's plane of fifth bits: 8 sub-blocks of
/// 32 with 6-bit scales and mins, `x = d*sc*q - dmin*m`.
fn k_quant_4_5(d: f32, dmin: f32, scales: &[u8], qh: Option<&[u8]>, qs: &[u8], y: &mut [f32]) {
    for chunk in 0..4 {
        let (sc1, m1) = scale_min_k4(2 * chunk, scales);
        let (sc2, m2) = scale_min_k4(2 * chunk + 1, scales);
        let (d1, mm1) = (d * sc1 as f32, dmin * m1 as f32);
        let (d2, mm2) = (d * sc2 as f32, dmin * m2 as f32);
        let (u1, u2) = (1u8 << (2 * chunk), 2u8 << (2 * chunk));
        let q = &qs[chunk * 32..chunk * 32 + 32];
        let out = &mut y[chunk * 64..chunk * 64 + 64];
        for l in 0..32 {
            let (h1, h2) = match qh {
                Some(h) => (
                    if h[l] & u1 != 0 { 16 } else { 0 },
                    if h[l] & u2 != 0 { 16 } else { 0 },
                ),
                None => (0, 0),
            };
            out[l] = d1 * ((q[l] & 0x0F) + h1) as f32 - mm1;
            out[l + 32] = d2 * ((q[l] >> 4) + h2) as f32 - mm2;
        }
    }
}

// Q4_K: d, dmin f16, scales[12], qs[128].
fn q4_k(b: &[u8], y: &mut [f32]) {
    k_quant_4_5(f16_at(b, 0), f16_at(b, 2), &b[4..16], None, &b[16..144], y);
}

// Q5_K: d, dmin f16, scales[12], qh[32], qs[128].
fn q5_k(b: &[u8], y: &mut [f32]) {
    k_quant_4_5(
        f16_at(b, 0),
        f16_at(b, 2),
        &b[4..16],
        Some(&b[16..48]),
        &b[48..176],
        y,
    );
}

// Q6_K: ql[128], qh[64], scales i8[16], d f16; x = d*sc*(q-32).
fn q6_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 208);
    for half in 0..2 {
        let ql = &b[half * 64..half * 64 + 64];
        let qh = &b[128 + half * 32..128 + half * 32 + 32];
        let sc = &b[192 + half * 8..192 + half * 8 + 8];
        let out = &mut y[half * 128..half * 128 + 128];
        for l in 0..32 {
            let is = l / 16;
            let q1 = ((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) as i32 - 32;
            let q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) as i32 - 32;
            let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i32 - 32;
            let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i32 - 32;
            out[l] = d * (sc[is] as i8) as f32 * q1 as f32;
            out[l + 32] = d * (sc[is + 2] as i8) as f32 * q2 as f32;
            out[l + 64] = d * (sc[is + 4] as i8) as f32 * q3 as f32;
            out[l + 96] = d * (sc[is + 6] as i8) as f32 * q4 as f32;
        }
    }
}

/// MLX affine parts (group size 32): packed words, and one scale and bias per group.
pub struct AffineParts {
    /// `rows * cols * bits / 32` words, MLX packing: element `j` of a word holds bits
    /// `[bits*j, bits*(j+1))`, elements in row order.
    pub words: Vec<u32>,
    pub scales: Vec<f32>,
    pub biases: Vec<f32>,
    pub bits: i32,
}

/// Packs 32 `bits`-bit values (4 or 8) into u32 words, value 0 in the lowest bits: MLX's
/// affine-quantized layout.
fn push_words(q: &[u8; 32], bits: usize, words: &mut Vec<u32>) {
    let per = 32 / bits;
    for chunk in q.chunks_exact(per) {
        let word = chunk
            .iter()
            .enumerate()
            .fold(0u32, |w, (e, &v)| w | (v as u32) << (bits * e));
        words.push(word);
    }
}

/// Repacks Q4_0 / Q4_1 / Q8_0 blocks into MLX affine quantization without loss.
/// Returns None for other types.
pub fn to_mlx_affine(ty: GgmlType, data: &[u8], n: usize) -> Option<AffineParts> {
    let (per, bytes) = ty.block()?;
    if !matches!(ty, GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q8_0)
        || !n.is_multiple_of(per)
        || data.len() != n / per * bytes
    {
        return None;
    }
    let groups = n / 32;
    let bits = if ty == GgmlType::Q8_0 { 8 } else { 4 };
    let mut words = Vec::with_capacity(n * bits / 32);
    let mut scales = Vec::with_capacity(groups);
    let mut biases = Vec::with_capacity(groups);
    let mut q = [0u8; 32];
    for b in data.chunks_exact(bytes) {
        let d = f16_at(b, 0);
        match ty {
            GgmlType::Q4_0 | GgmlType::Q4_1 => {
                let (bias, qs) = if ty == GgmlType::Q4_0 {
                    (-8.0 * d, &b[2..18])
                } else {
                    (f16_at(b, 2), &b[4..20])
                };
                for j in 0..16 {
                    q[j] = qs[j] & 0x0F;
                    q[j + 16] = qs[j] >> 4;
                }
                push_words(&q, 4, &mut words);
                scales.push(d);
                biases.push(bias);
            }
            _ => {
                // Signed int8 q becomes unsigned q + 128 with bias -128 d.
                for j in 0..32 {
                    q[j] = (b[2 + j] as i8 as i16 + 128) as u8;
                }
                push_words(&q, 8, &mut words);
                scales.push(d);
                biases.push(-128.0 * d);
            }
        }
    }
    Some(AffineParts {
        words,
        scales,
        biases,
        bits: bits as i32,
    })
}
