//! In-place cache appends and the token that orders them.
//!
//! Decode-step appends on CUDA (`MLXCEL_INPLACE_APPEND`) write the new position straight into
//! a side's cache buffers from a fused kernel, through the kernel's input pointers: outside
//! MLX's value semantics, and one launch instead of an encode plus a `slice_update` per
//! buffer. Each such launch returns a small token array. MLX orders GPU work by the arrays a
//! launch reads and writes, so these rules keep the results exact:
//! - each in-place write takes the previous write's token as an input, so the tokens form a
//!   chain, and the fused decode kernels take the last token
//!   ([`RawSide::pending`](super::side::RawSide::pending)): they run after every write, even
//!   when several appends were queued without evaluation;
//! - every other reader or writer of the buffers (split attention paths, `slice_update`
//!   appends, growth by concatenation) first waits for the last token ([`PendingWrite::settle`]);
//! - a write only touches positions no earlier launch still reads (the previous step's fused
//!   kernel reads positions below the new one; rows past the length are masked out of the
//!   softmax and every value ever stored there is finite).

use crate::kv::buffer::GrowBuffer;
use crate::mlx::Array;
use crate::{Error, Result};

/// The token of the last in-place write to one side's buffers, if any.
#[derive(Default)]
pub struct PendingWrite(Option<Array>);

impl PendingWrite {
    /// Waits for the last in-place write; a no-op when there was none or it already ran.
    pub fn settle(&self) -> Result<()> {
        match &self.0 {
            Some(t) => t.eval(),
            None => Ok(()),
        }
    }

    /// The token readers and the next write must take as an input.
    pub fn token(&self) -> Option<&Array> {
        self.0.as_ref()
    }

    /// Appends one position to a side's buffer pair (`data` rows `[B, H, _, widths[0]]`,
    /// `aux` rows `[B, H, _, widths[1]]`, `bh` = `[B, H]`) through `write`, an in-place
    /// kernel called as `write(data, aux, pos, previous token)` that returns its token:
    /// [`PendingWrite::reserve_one`], the write, then [`PendingWrite::commit_one`].
    pub fn append_one(
        &mut self,
        data: &mut GrowBuffer,
        aux: &mut GrowBuffer,
        bh: [i32; 2],
        widths: [i32; 2],
        write: impl FnOnce(&Array, &Array, usize, Option<&Array>) -> Result<Array>,
    ) -> Result<()> {
        let (d, a, pos) = self.reserve_one(data, aux, bh, widths)?;
        let token = write(&d, &a, pos, self.token())?;
        self.commit_one(data, aux, token)
    }

    /// Reserves one more position in the buffer pair (waiting for the last write first when
    /// that reallocates) and returns the full buffers and the position to write. A launch
    /// may write several sides' reserved positions; each side then calls
    /// [`PendingWrite::commit_one`] with that launch's token (which took every side's
    /// previous token as an input).
    pub fn reserve_one(
        &self,
        data: &mut GrowBuffer,
        aux: &mut GrowBuffer,
        bh: [i32; 2],
        widths: [i32; 2],
    ) -> Result<(Array, Array, usize)> {
        if data.will_grow(1) || aux.will_grow(1) {
            // Growth copies the buffers: the last in-place write must have landed.
            self.settle()?;
        }
        data.reserve([bh[0], bh[1], widths[0]], 1)?;
        aux.reserve([bh[0], bh[1], widths[1]], 1)?;
        match (data.full(), aux.full()) {
            (Some(d), Some(a)) => Ok((d.clone(), a.clone(), data.len())),
            _ => Err(Error::invalid("kv", "cache buffers missing after reserve")),
        }
    }

    /// Counts the reserved position and records `token` as the last write.
    pub fn commit_one(
        &mut self,
        data: &mut GrowBuffer,
        aux: &mut GrowBuffer,
        token: Array,
    ) -> Result<()> {
        data.advance(1)?;
        aux.advance(1)?;
        self.0 = Some(token);
        Ok(())
    }
}

/// One side of [`append_pair_one`]: its last-write token and its buffer pair, with the
/// buffers' row widths.
pub struct PairSide<'a> {
    pub pending: &'a mut PendingWrite,
    pub data: &'a mut GrowBuffer,
    pub aux: &'a mut GrowBuffer,
    pub widths: [i32; 2],
}

/// A key side and a value side each get one position from one launch: both reserve it,
/// `write([k_data, k_aux], [v_data, v_aux], pos, [k_token, v_token])` queues the launch and
/// returns its token, and both sides commit that token (it took both previous tokens as
/// inputs). `bh` = `[B, H]` of both sides.
pub fn append_pair_one(
    k: PairSide<'_>,
    v: PairSide<'_>,
    bh: [i32; 2],
    write: impl FnOnce([&Array; 2], [&Array; 2], usize, [Option<&Array>; 2]) -> Result<Array>,
) -> Result<()> {
    let (kd, ka, pos) = k.pending.reserve_one(k.data, k.aux, bh, k.widths)?;
    let (vd, va, v_pos) = v.pending.reserve_one(v.data, v.aux, bh, v.widths)?;
    if v_pos != pos {
        return Err(Error::invalid(
            "kv",
            format!("key and value sides at different lengths ({pos} and {v_pos})"),
        ));
    }
    let token = write(
        [&kd, &ka],
        [&vd, &va],
        pos,
        [k.pending.token(), v.pending.token()],
    )?;
    k.pending.commit_one(k.data, k.aux, token.clone())?;
    v.pending.commit_one(v.data, v.aux, token)
}
