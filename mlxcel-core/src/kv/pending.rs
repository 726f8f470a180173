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
//!   when several appends were queued without evaluation; so does the query RoPE launch in
//!   front of MLX's SDPA over fp16 sides (`kernels::fp16_append::rope_q_after`). Taking the
//!   token as an input is what orders a node: MLX's CUDA graphs link a node to the nodes that
//!   produced the buffers it reads, and the write produces only its token (an MLX `depends`
//!   node launches nothing and orders nothing there: session 23 read a stale position
//!   through one);
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
        match self.reserve(data, Some(aux), bh, widths)? {
            (d, Some(a), pos) => Ok((d, a, pos)),
            _ => Err(Error::invalid("kv", "cache buffers missing after reserve")),
        }
    }

    /// [`PendingWrite::reserve_one`] for a side with or without an aux buffer (an fp16
    /// side has none; `widths[1]` is then unused).
    fn reserve(
        &self,
        data: &mut GrowBuffer,
        mut aux: Option<&mut GrowBuffer>,
        bh: [i32; 2],
        widths: [i32; 2],
    ) -> Result<(Array, Option<Array>, usize)> {
        if data.will_grow(1) || aux.as_ref().is_some_and(|a| a.will_grow(1)) {
            // Growth copies the buffers: the last in-place write must have landed.
            self.settle()?;
        }
        data.reserve([bh[0], bh[1], widths[0]], 1)?;
        if let Some(a) = aux.as_mut() {
            a.reserve([bh[0], bh[1], widths[1]], 1)?;
        }
        let missing = || Error::invalid("kv", "cache buffers missing after reserve");
        let d = data.full().ok_or_else(missing)?.clone();
        let a = match aux {
            Some(a) => Some(a.full().ok_or_else(missing)?.clone()),
            None => None,
        };
        Ok((d, a, data.len()))
    }

    /// Counts the reserved position and records `token` as the last write.
    pub fn commit_one(
        &mut self,
        data: &mut GrowBuffer,
        aux: &mut GrowBuffer,
        token: Array,
    ) -> Result<()> {
        self.commit(data, Some(aux), token)
    }

    /// [`PendingWrite::commit_one`] for a side with or without an aux buffer.
    fn commit(
        &mut self,
        data: &mut GrowBuffer,
        aux: Option<&mut GrowBuffer>,
        token: Array,
    ) -> Result<()> {
        data.advance(1)?;
        if let Some(a) = aux {
            a.advance(1)?;
        }
        self.0 = Some(token);
        Ok(())
    }
}

/// Whether a decode step's keys `xk` and values `xv` can take [`append_pair_one`] (which
/// reserves exactly one position): `MLXCEL_FUSED_KV_APPEND` on, `[B, H, 1, D]` of one shape,
/// sides of one length, and `rope`, if any, fitting the kernels' warp layout for D. The
/// format-specific conditions are each pair's own.
pub fn pair_step_applies(
    xk: &Array,
    xv: &Array,
    lens: [usize; 2],
    rope: Option<&crate::rope::RopeSpec>,
) -> bool {
    xv.shape() == xk.shape() && pair_shape_applies(&xk.shape(), lens, rope)
}

/// [`pair_step_applies`] for K and V of one shape `kv_shape`, given as a shape (an append
/// whose k and v another launch computes).
pub fn pair_shape_applies(
    kv_shape: &[i32],
    lens: [usize; 2],
    rope: Option<&crate::rope::RopeSpec>,
) -> bool {
    crate::flags::FUSED_KV_APPEND.enabled()
        && kv_shape.len() == 4
        && kv_shape[2] == 1
        && lens[0] == lens[1]
        && rope.is_none_or(|r| r.fits_warp_layout(kv_shape[3] as usize))
}

/// One side of [`append_pair_one`]: its last-write token and its buffers (`aux`: none for
/// an fp16 side), with the buffers' row widths.
pub struct PairSide<'a> {
    pub pending: &'a mut PendingWrite,
    pub data: &'a mut GrowBuffer,
    pub aux: Option<&'a mut GrowBuffer>,
    pub widths: [i32; 2],
}

/// A side's reserved buffers as [`append_pair_one`] hands them to the launch: `[data, aux]`,
/// with `data` again in place of a missing aux.
pub(crate) type Reserved<'a> = [&'a Array; 2];

/// A key side and a value side each get one position from one launch: both sides reserve
/// it ([`reserve_pair`]), `write(k_buffers, v_buffers, pos, [k_token, v_token])` queues the
/// launch and returns its token, and both sides commit that token (it took both previous
/// tokens as inputs). `bh` = `[B, H]` of both sides.
pub fn append_pair_one(
    mut k: PairSide<'_>,
    mut v: PairSide<'_>,
    bh: [i32; 2],
    write: impl FnOnce(Reserved<'_>, Reserved<'_>, usize, [Option<&Array>; 2]) -> Result<Array>,
) -> Result<()> {
    let ([kd, ka], [vd, va], pos) = reserve_pair(&mut k, &mut v, bh)?;
    let token = write(
        [&kd, &ka],
        [&vd, &va],
        pos,
        [k.pending.token(), v.pending.token()],
    )?;
    commit_pair(k, v, token)
}

/// Both sides reserve the next position (waiting for their last write where a buffer grows)
/// and hand out their whole buffers `[data, aux]` (`data` again for a side without aux) and
/// the position, for a launch that writes it: [`append_pair_one`], or a launch the model
/// queues (the qkv GEMV's folded append, `KvCache::fused_append_target`; the attention launch,
/// `KvCache::append_attend_rope_flat`). Nothing counts until [`commit_pair`]. Sides at
/// different lengths are an error.
pub fn reserve_pair(
    k: &mut PairSide<'_>,
    v: &mut PairSide<'_>,
    bh: [i32; 2],
) -> Result<([Array; 2], [Array; 2], usize)> {
    let (kd, ka, pos) = k
        .pending
        .reserve(k.data, k.aux.as_deref_mut(), bh, k.widths)?;
    let (vd, va, v_pos) = v
        .pending
        .reserve(v.data, v.aux.as_deref_mut(), bh, v.widths)?;
    if v_pos != pos {
        return Err(Error::invalid(
            "kv",
            format!("key and value sides at different lengths ({pos} and {v_pos})"),
        ));
    }
    let ka = ka.unwrap_or_else(|| kd.clone());
    let va = va.unwrap_or_else(|| vd.clone());
    Ok(([kd, ka], [vd, va], pos))
}

/// A side's reserved buffers `[data, aux]`, the position, and both sides' last write tokens
/// (owned): what [`reserve_queued`] hands a launch the model queues.
pub type QueuedPair = ([Array; 2], [Array; 2], usize, [Option<Array>; 2]);

/// [`reserve_pair`] for a launch the model queues itself (the qkv GEMV's folded append,
/// `KvCache::fused_append_target`): the same reservation, with both sides' last write tokens
/// cloned out, since that launch takes them as inputs after the sides are released.
pub fn reserve_queued(
    k: &mut PairSide<'_>,
    v: &mut PairSide<'_>,
    bh: [i32; 2],
) -> Result<QueuedPair> {
    let (kb, vb, pos) = reserve_pair(k, v, bh)?;
    let afters = [k.pending.token().cloned(), v.pending.token().cloned()];
    Ok((kb, vb, pos, afters))
}

/// Counts the position [`reserve_pair`] reserved on both sides as written by the launch whose
/// token is `token` (it took both sides' previous tokens as inputs).
pub fn commit_pair(k: PairSide<'_>, v: PairSide<'_>, token: Array) -> Result<()> {
    k.pending.commit(k.data, k.aux, token.clone())?;
    v.pending.commit(v.data, v.aux, token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx::Dtype;

    fn filled(dtype: Dtype, shape: &[i32]) -> GrowBuffer {
        let mut b = GrowBuffer::new(dtype);
        b.append(&Array::zeros(shape, dtype).unwrap()).unwrap();
        b
    }

    fn side<'a>(
        pending: &'a mut PendingWrite,
        data: &'a mut GrowBuffer,
        aux: Option<&'a mut GrowBuffer>,
        widths: [i32; 2],
    ) -> PairSide<'a> {
        PairSide {
            pending,
            data,
            aux,
            widths,
        }
    }

    #[test]
    fn a_pair_append_reserves_both_sides_and_records_one_token() {
        // An fp16 key side (no aux) and a turbo-like value side (data + aux), 3 positions.
        let (mut kp, mut vp) = (PendingWrite::default(), PendingWrite::default());
        let mut kd = filled(Dtype::F16, &[1, 2, 3, 8]);
        let mut vd = filled(Dtype::U8, &[1, 2, 3, 4]);
        let mut va = filled(Dtype::F16, &[1, 2, 3, 1]);
        let mut seen = None;
        append_pair_one(
            side(&mut kp, &mut kd, None, [8, 0]),
            side(&mut vp, &mut vd, Some(&mut va), [4, 1]),
            [1, 2],
            |[k0, k1], [v0, v1], pos, [ka, vb]| {
                // A side without aux gets its data twice; no earlier write, no token.
                seen = Some((k0.shape(), k1.shape(), v0.shape(), v1.shape(), pos));
                assert!(ka.is_none() && vb.is_none());
                Array::zeros(&[4], Dtype::I32)
            },
        )
        .unwrap();
        let (k0, k1, v0, v1, pos) = seen.expect("the write ran");
        assert_eq!(pos, 3);
        assert_eq!((&k0[..2], k0[3], &k1), (&[1, 2][..], 8, &k0));
        assert_eq!((v0[3], v1[3]), (4, 1));
        assert_eq!((kd.len(), vd.len(), va.len()), (4, 4, 4));
        assert!(kp.token().is_some() && vp.token().is_some());
        // The next pair write takes both tokens.
        append_pair_one(
            side(&mut kp, &mut kd, None, [8, 0]),
            side(&mut vp, &mut vd, Some(&mut va), [4, 1]),
            [1, 2],
            |_, _, pos, [ka, vb]| {
                assert_eq!(pos, 4);
                assert!(ka.is_some() && vb.is_some());
                Array::zeros(&[4], Dtype::I32)
            },
        )
        .unwrap();
        // Sides of different lengths are an error, and the write does not run.
        let mut short = filled(Dtype::F16, &[1, 2, 2, 8]);
        let mut p = PendingWrite::default();
        let r = append_pair_one(
            side(&mut p, &mut short, None, [8, 0]),
            side(&mut vp, &mut vd, Some(&mut va), [4, 1]),
            [1, 2],
            |_, _, _, _| panic!("must not write"),
        );
        assert!(r.is_err());
    }
}
