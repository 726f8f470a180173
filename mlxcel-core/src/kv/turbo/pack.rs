//! Bit packing of codebook indices along the last axis, on the device (MLX ops):
//! - 4-bit: two per byte, element `2i` in the low nibble;
//! - 3-bit: a 2-bit plane (four per byte) followed by a 1-bit plane (eight per byte), so
//!   every field is byte-aligned (`3D/8` bytes per vector);
//! - 2-bit: four per byte, element `4i + j` in bits `2j..2j+2`.

use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

/// Bytes of one packed vector of `d` indices.
pub fn packed_bytes(bits: u32, d: usize) -> usize {
    d * bits as usize / 8
}

fn shifts(step: u8, n: usize) -> Result<Array> {
    let v: Vec<u8> = (0..n).map(|j| j as u8 * step).collect();
    Array::from_slice(&v, &[n as i32])
}

/// Packs `per_byte` fields of `width` bits (low first) of the last axis into bytes.
fn pack_fields(idx: &Array, width: u8, per_byte: usize) -> Result<Array> {
    let mut shape = idx.shape();
    let d = shape
        .pop()
        .ok_or_else(|| Error::invalid("pack", "scalar input"))?;
    let mut grouped = shape.clone();
    grouped.push(d / per_byte as i32);
    grouped.push(per_byte as i32);
    let g = idx.reshape(&grouped)?.astype(Dtype::U8)?;
    let axis = grouped.len() as i32 - 1;
    g.left_shift(&shifts(width, per_byte)?)?
        .sum(&[axis], false)?
        .astype(Dtype::U8)
}

/// Unpacks bytes holding `per_byte` fields of `width` bits into `[.., bytes * per_byte]`.
fn unpack_fields(p: &Array, width: u8, per_byte: usize) -> Result<Array> {
    let mut shape = p.shape();
    let n = shape
        .pop()
        .ok_or_else(|| Error::invalid("unpack", "scalar input"))?;
    shape.push(n * per_byte as i32);
    let mask = Array::scalar(((1u16 << width) - 1) as u8)?;
    p.expand_dims(&[-1])?
        .right_shift(&shifts(width, per_byte)?)?
        .bitwise_and(&mask)?
        .reshape(&shape)
}

/// Packs `bits`-bit indices (`uint8`, last axis `d`) into `packed_bytes(bits, d)` bytes.
pub fn pack(idx: &Array, bits: u32) -> Result<Array> {
    let d = idx.dim(-1);
    match bits {
        4 => pack_fields(idx, 4, 2),
        2 => pack_fields(idx, 2, 4),
        3 => {
            if d % 8 != 0 {
                return Err(Error::invalid(
                    "pack",
                    format!("3-bit packing needs a multiple of 8, got {d}"),
                ));
            }
            let three = Array::scalar(3u8)?;
            let two = Array::scalar(2u8)?;
            let low = pack_fields(&idx.bitwise_and(&three)?, 2, 4)?;
            let high = pack_fields(&idx.right_shift(&two)?, 1, 8)?;
            crate::mlx::ops::concatenate(&[&low, &high], -1)
        }
        b => Err(Error::invalid(
            "pack",
            format!("{b}-bit indices are not supported (2, 3, 4)"),
        )),
    }
}

/// Inverse of [`pack`]: `[.., packed_bytes(bits, d)]` -> `[.., d]` uint8 indices.
pub fn unpack(p: &Array, bits: u32, d: usize) -> Result<Array> {
    match bits {
        4 => unpack_fields(p, 4, 2),
        2 => unpack_fields(p, 2, 4),
        3 => {
            let n = p.dim(-1);
            let split = (d / 4) as i32;
            let low = unpack_fields(&p.slice_axis(-1, 0, split)?, 2, 4)?;
            let high = unpack_fields(&p.slice_axis(-1, split, n)?, 1, 8)?;
            low.bitwise_or(&high.left_shift(&Array::scalar(2u8)?)?)
        }
        b => Err(Error::invalid(
            "unpack",
            format!("{b}-bit indices are not supported (2, 3, 4)"),
        )),
    }
}
