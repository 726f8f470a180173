//! `turbo4-delegated` value storage: the most recent positions stay fp16 in a hot window;
//! older positions are folded, a block at a time, into turbo4 storage. Recent tokens,
//! which usually carry the largest attention weights, stay exact, while the bulk of a
//! long context is compressed. Attention sees one sequence: the cold part in the
//! rotated basis followed by the hot part rotated on the fly (a few hundred vectors).

use crate::kv::buffer::GrowBuffer;
use crate::kv::side::KvSide;
use crate::kv::turbo::rotation::Rotation;
use crate::kv::turbo::TurboSide;
use crate::mlx::ops::concatenate;
use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

/// Positions kept fp16 after a fold.
pub const HOT_WINDOW: usize = 256;
/// Positions moved to turbo4 per fold (a fold happens at HOT_WINDOW + FOLD_BLOCK).
pub const FOLD_BLOCK: usize = 128;

/// Positions in turbo4 storage once `len` positions were appended: folds leave the window
/// between HOT_WINDOW and HOT_WINDOW + FOLD_BLOCK - 1 positions, whatever the append sizes.
pub fn folded_at(len: usize) -> usize {
    if len < HOT_WINDOW + FOLD_BLOCK {
        0
    } else {
        (len - HOT_WINDOW) / FOLD_BLOCK * FOLD_BLOCK
    }
}

pub struct DelegatedSide {
    cold: TurboSide,
    hot: GrowBuffer,
}

impl DelegatedSide {
    pub fn new(head_dim: usize, seed: u64) -> Result<DelegatedSide> {
        Ok(DelegatedSide {
            cold: TurboSide::new(4, head_dim, seed)?,
            hot: GrowBuffer::new(Dtype::F16),
        })
    }

    /// Positions currently in the fp16 window.
    pub fn hot_len(&self) -> usize {
        self.hot.len()
    }

    fn fold(&mut self) -> Result<()> {
        while self.hot.len() >= HOT_WINDOW + FOLD_BLOCK {
            let n = self.hot.len();
            let old = self.hot.range(0, FOLD_BLOCK)?.expect("non-empty");
            let keep = self.hot.range(FOLD_BLOCK, n)?.expect("non-empty");
            self.cold.append(&old)?;
            let mut fresh = GrowBuffer::new(Dtype::F16);
            fresh.append(&keep)?;
            self.hot = fresh;
        }
        Ok(())
    }

    fn join(&self, cold: Option<Array>, hot: Option<Array>) -> Result<Array> {
        match (cold, hot) {
            (Some(c), Some(h)) => concatenate(&[&c, &h], 2),
            (Some(c), None) => Ok(c),
            (None, Some(h)) => Ok(h),
            (None, None) => Err(Error::invalid("kv", "empty cache")),
        }
    }
}

impl KvSide for DelegatedSide {
    fn append(&mut self, x: &Array) -> Result<()> {
        self.hot.append(x)?;
        self.fold()
    }

    fn len(&self) -> usize {
        self.cold.len() + self.hot.len()
    }

    /// Exact only where the positions already folded into turbo4 are the ones a cache
    /// filled with the first `len` positions would have folded ([`folded_at`]); otherwise
    /// some positions would stay turbo4 that such a cache holds in fp16, so it refuses.
    fn truncate(&mut self, len: usize) -> Result<()> {
        let cold = self.cold.len();
        if len > self.len() || cold != folded_at(len) {
            return Err(Error::invalid(
                "kv truncate",
                format!(
                    "turbo4-delegated holds {} positions, {cold} of them folded into turbo4; \
                     {len} positions would fold {}: cannot truncate exactly",
                    self.len(),
                    folded_at(len)
                ),
            ));
        }
        self.hot.truncate(len - cold)
    }

    fn bytes(&self) -> usize {
        self.cold.bytes() + self.hot.bytes()
    }

    fn capacity_bytes(&self) -> usize {
        self.cold.capacity_bytes() + self.hot.capacity_bytes()
    }

    fn name(&self) -> &'static str {
        "turbo4-delegated"
    }

    fn rotation(&self) -> Option<&Rotation> {
        self.cold.rotation()
    }

    fn dense(&self, dtype: Dtype) -> Result<Array> {
        let cold = if self.cold.is_empty() {
            None
        } else {
            Some(self.cold.dense(dtype)?)
        };
        let hot = self.hot.view()?.map(|h| h.astype(dtype)).transpose()?;
        self.join(cold, hot)
    }

    fn dense_rotated(&self, dtype: Dtype) -> Result<Array> {
        let cold = if self.cold.is_empty() {
            None
        } else {
            Some(self.cold.dense_rotated(dtype)?)
        };
        let rot = &self.cold.codec().rotation;
        let hot = self
            .hot
            .view()?
            .map(|h| rot.forward(&h.astype(dtype)?))
            .transpose()?;
        self.join(cold, hot)
    }
}
