//! Attention entry points used by the KV caches.

use crate::mlx::fast::{scaled_dot_product_attention, AttentionMask};
use crate::mlx::Array;
use crate::Result;

/// Attention of `q [B, Hq, L, D]` over dense `k, v [B, Hkv, S, D]` (S >= L), causal for the
/// last `L` keys. K and V are cast to q's dtype when they are stored in another one.
pub fn dense_attention(q: &Array, k: &Array, v: &Array, scale: f32) -> Result<Array> {
    let (k, v) = if k.dtype() != q.dtype() {
        (k.astype(q.dtype())?, v.astype(q.dtype())?)
    } else {
        (k.clone(), v.clone())
    };
    let mask = if q.dim(2) > 1 {
        AttentionMask::Causal
    } else {
        AttentionMask::None
    };
    scaled_dot_product_attention(q, &k, &v, scale, mask)
}
