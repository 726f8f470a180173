//! MLX's counter-based random numbers. Functions take an optional explicit key so that
//! tests and `--seed` are reproducible; without one they use MLX's global key.

use super::array::{check_shape, Array};
use super::dtype::Dtype;
use super::ffi::bridge as ffi;
use crate::error::{MlxContext, Result};

/// Seeds MLX's global generator.
pub fn seed(seed: u64) -> Result<()> {
    ffi::random_seed(seed).op("random::seed")
}

/// A key for the explicit-key functions.
pub fn key(seed: u64) -> Result<Array> {
    ffi::random_key(seed).op("random::key").map(Array::from_ptr)
}

/// Splits a key into `num` independent keys (stacked on axis 0).
pub fn split(key: &Array, num: i32) -> Result<Array> {
    ffi::random_split(key.raw(), num)
        .op("random::split")
        .map(Array::from_ptr)
}

/// Standard normal samples.
pub fn normal(shape: &[i32], dtype: Dtype, key: Option<&Array>) -> Result<Array> {
    check_shape("random::normal", shape)?;
    let k = match key {
        Some(k) => k.clone(),
        None => Array::scalar(0u32)?,
    };
    ffi::random_normal(shape, dtype.code(), k.raw(), key.is_some())
        .op("random::normal")
        .map(Array::from_ptr)
}

/// Uniform samples in `[0, 1)`.
pub fn uniform(shape: &[i32], dtype: Dtype, key: Option<&Array>) -> Result<Array> {
    check_shape("random::uniform", shape)?;
    let k = match key {
        Some(k) => k.clone(),
        None => Array::scalar(0u32)?,
    };
    ffi::random_uniform(shape, dtype.code(), k.raw(), key.is_some())
        .op("random::uniform")
        .map(Array::from_ptr)
}

/// Samples indices from unnormalized log-probabilities along `axis`.
pub fn categorical(logits: &Array, axis: i32, key: Option<&Array>) -> Result<Array> {
    let k = match key {
        Some(k) => k.clone(),
        None => Array::scalar(0u32)?,
    };
    ffi::random_categorical(logits.raw(), axis, k.raw(), key.is_some())
        .op("random::categorical")
        .map(Array::from_ptr)
}
