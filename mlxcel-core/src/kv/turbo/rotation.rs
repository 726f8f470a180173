//! The randomized Walsh–Hadamard rotation `R x = s2 ⊙ H (s1 ⊙ x) / sqrt(G)` applied to each
//! group of G consecutive coordinates of a head vector (orthogonal, so `R^-1 = R^T`:
//! `x = s1 ⊙ H (s2 ⊙ y) / sqrt(G)`).
//!
//! Sign vectors are fixed and reproducible: bit `i` of a SplitMix64 stream seeded with
//! [`K_SEED`] / [`V_SEED`] (plus 1 for `s2`) gives the sign of coordinate `i` (set = -1).
//! K and V use different signs. `s1` is what spreads structured inputs; `s2` does not
//! change the quantization error (the codebook is symmetric) but keeps R a generic
//! rotation.

use crate::mlx::{Array, Dtype};
use crate::Result;

/// Seed of K's sign vectors ("K rot").
pub const K_SEED: u64 = 0x4B5F_524F_5400_0001;
/// Seed of V's sign vectors ("V rot").
pub const V_SEED: u64 = 0x565F_524F_5400_0001;

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` signs (+1/-1) from `seed`.
pub fn signs(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed;
    let mut out = Vec::with_capacity(n);
    let mut word = 0u64;
    for i in 0..n {
        if i % 64 == 0 {
            word = splitmix64(&mut state);
        }
        out.push(if (word >> (i % 64)) & 1 == 1 {
            -1.0
        } else {
            1.0
        });
    }
    out
}

/// A blockwise randomized Hadamard rotation over the last axis.
#[derive(Clone)]
pub struct Rotation {
    pub group: usize,
    pub s1: Vec<f32>,
    pub s2: Vec<f32>,
    s1a: Array,
    s2a: Array,
    /// `[2, G]`: s1 then s2 (fused kernels' input; built once).
    both: Array,
}

impl std::fmt::Debug for Rotation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rotation(G={})", self.group)
    }
}

impl Rotation {
    /// The rotation with signs from `seed` for groups of `group` (a power of two).
    pub fn new(seed: u64, group: usize) -> Result<Rotation> {
        let s1 = signs(seed, group);
        let s2 = signs(seed.wrapping_add(1), group);
        let both: Vec<f32> = s1.iter().chain(&s2).copied().collect();
        Ok(Rotation {
            group,
            both: Array::from_slice(&both, &[2, group as i32])?,
            s1a: Array::from_slice(&s1, &[group as i32])?,
            s2a: Array::from_slice(&s2, &[group as i32])?,
            s1,
            s2,
        })
    }

    /// The sign vectors as one `[2, G]` array (s1; s2).
    pub fn signs_array(&self) -> &Array {
        &self.both
    }

    fn grouped(&self, x: &Array) -> Result<(Array, Vec<i32>)> {
        let shape = x.shape();
        let d = *shape.last().expect("rotation needs at least one axis");
        let mut g = shape[..shape.len() - 1].to_vec();
        g.push(d / self.group as i32);
        g.push(self.group as i32);
        Ok((x.reshape(&g)?, shape))
    }

    fn signs_as(&self, a: &Array, dtype: Dtype) -> Result<Array> {
        if dtype == Dtype::F32 {
            Ok(a.clone())
        } else {
            a.astype(dtype)
        }
    }

    /// `R x` over the last axis (its length a multiple of `group`).
    pub fn forward(&self, x: &Array) -> Result<Array> {
        let (g, shape) = self.grouped(x)?;
        let s1 = self.signs_as(&self.s1a, x.dtype())?;
        let s2 = self.signs_as(&self.s2a, x.dtype())?;
        g.multiply(&s1)?
            .hadamard_transform(None)?
            .multiply(&s2)?
            .reshape(&shape)
    }

    /// `R^T y` over the last axis.
    pub fn inverse(&self, y: &Array) -> Result<Array> {
        let (g, shape) = self.grouped(y)?;
        let s1 = self.signs_as(&self.s1a, y.dtype())?;
        let s2 = self.signs_as(&self.s2a, y.dtype())?;
        g.multiply(&s2)?
            .hadamard_transform(None)?
            .multiply(&s1)?
            .reshape(&shape)
    }
}
