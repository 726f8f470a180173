//! [`RopeSpec`]: a model's rotary position embedding, in one place for the model (MLX's
//! `fast::rope`) and for the fused CUDA kernels that apply it themselves instead of a
//! separate op per layer and step (the in-place cache encoders rotate the new key, the
//! fused decode-attention kernel the query; `MLXCEL_FUSED_ROPE`).
//!
//! The kernels compute the angle as MLX's CUDA rope does: `theta = position * inv_freq`
//! in f32 with `inv_freq = 2^(-(2i/dims) * log2(base))` (or `1 / period_i` for explicit
//! periods), then `cos`/`sin` of it.

use std::cell::RefCell;

use crate::mlx::fast::{rope, RopeFreqs, RopeOffset};
use crate::mlx::Array;
use crate::{Error, Result};

pub struct RopeSpec {
    /// Leading dimensions of each head that are rotated.
    pub dims: i32,
    /// Rotate adjacent pairs (2i, 2i+1) instead of halves (i, i + dims/2).
    pub traditional: bool,
    pub base: f32,
    /// Explicit periods (e.g. Llama-3 frequency scaling), `dims / 2` of them.
    periods: Option<Array>,
    /// `dims / 2` f32 inverse frequencies on the device, for the kernels.
    inv_freq: Array,
    /// The last decode step's (cos, sin) table with its length
    /// (`kernels::rope_table::step_table`): every layer of a step reads the same array.
    step_table: RefCell<Option<(usize, Array)>>,
}

impl RopeSpec {
    /// RoPE over `dims` dimensions with `base^(-2i/dims)` frequencies, or explicit `periods`.
    pub fn new(dims: i32, traditional: bool, base: f32, periods: Option<Vec<f32>>) -> Result<Self> {
        let half = (dims / 2).max(0) as usize;
        if dims <= 0 || dims % 2 != 0 {
            return Err(Error::invalid(
                "rope",
                format!("dims must be even and positive, got {dims}"),
            ));
        }
        let inv: Vec<f32> = match &periods {
            Some(p) if p.len() != half => {
                return Err(Error::invalid(
                    "rope",
                    format!("{} periods for {dims} dims, expected {half}", p.len()),
                ))
            }
            Some(p) => p.iter().map(|&t| 1.0 / t).collect(),
            None => {
                let log_base = base.log2();
                (0..half)
                    .map(|i| (-(i as f32 / half as f32) * log_base).exp2())
                    .collect()
            }
        };
        let inv_freq = Array::from_slice(&inv, &[half as i32])?;
        inv_freq.eval()?;
        Ok(RopeSpec {
            dims,
            traditional,
            base,
            periods: periods
                .map(|p| Array::from_slice(&p, &[p.len() as i32]))
                .transpose()?,
            inv_freq,
            step_table: RefCell::new(None),
        })
    }

    /// Rotates `x [B, H, L, D]` for positions `offset..offset + L` with MLX's op.
    pub fn apply(&self, x: &Array, offset: usize) -> Result<Array> {
        let freqs = match &self.periods {
            Some(p) => RopeFreqs::Custom(p),
            None => RopeFreqs::Base(self.base),
        };
        rope(
            x,
            self.dims,
            self.traditional,
            freqs,
            1.0,
            RopeOffset::Int(offset as i32),
        )
    }

    /// The inverse frequencies the kernels read (`dims / 2` f32).
    pub fn inv_freq(&self) -> &Array {
        &self.inv_freq
    }

    /// The table for length `len` made by `make`, or the one made last if it was for `len`
    /// (a table is a function of the spec and the length only).
    pub(crate) fn cached_step_table(
        &self,
        len: usize,
        make: impl FnOnce() -> Result<Array>,
    ) -> Result<Array> {
        if let Some((n, a)) = self.step_table.borrow().as_ref() {
            if *n == len {
                return Ok(a.clone());
            }
        }
        let a = make()?;
        *self.step_table.borrow_mut() = Some((len, a.clone()));
        Ok(a)
    }

    /// Whether a kernel with one warp per head vector of `head_dim` (lane l holding
    /// elements `[l * head_dim / 32, (l + 1) * head_dim / 32)`) can apply this RoPE: all
    /// dimensions rotated, and for adjacent pairs an even count per lane.
    pub fn fits_warp_layout(&self, head_dim: usize) -> bool {
        let per_lane = head_dim / 32;
        self.dims as usize == head_dim
            && head_dim.is_multiple_of(32)
            && (!self.traditional || per_lane.is_multiple_of(2))
    }
}

#[cfg(test)]
mod tests {
    use super::RopeSpec;
    use crate::mlx::Array;
    use std::cell::Cell;

    /// A step's table is made once per length: the layers of a step share it (one launch), and
    /// a new length makes a new one, never returning the previous step's.
    #[test]
    fn the_step_table_is_made_once_per_length() {
        let rope = RopeSpec::new(64, false, 10000.0, None).unwrap();
        let made = Cell::new(0);
        let table = |len: usize| {
            rope.cached_step_table(len, || {
                made.set(made.get() + 1);
                Array::from_slice(&[len as f32], &[1])
            })
            .unwrap()
            .to_vec::<f32>()
            .unwrap()
        };
        assert_eq!(table(100), vec![100.0]);
        assert_eq!(table(100), vec![100.0]);
        assert_eq!(made.get(), 1, "one table for the layers of a step");
        assert_eq!(table(101), vec![101.0]);
        assert_eq!(made.get(), 2, "a new length makes a new table");
        assert_eq!(table(100), vec![100.0]);
        assert_eq!(made.get(), 3);
    }
}
