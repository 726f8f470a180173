//! A preallocated, growable device buffer along the sequence axis (axis 2 of
//! `[B, H, T, W]`): new positions are written in place with `slice_update`; the buffer
//! grows by [`GROWTH_STEP`](super::GROWTH_STEP) positions at a time, so the cache is never
//! re-concatenated per token.

use std::cell::Cell;

use crate::mlx::ops::concatenate;
use crate::mlx::{Array, Dtype};
use crate::{Error, Result};

use super::GROWTH_STEP;

thread_local! {
    /// This thread's `slice_update` appends whose outcome was seen (a later append found
    /// the output scheduled), and those among them that copied the buffer.
    static APPENDS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// `(seen, copied)`: of this thread's [`GrowBuffer::append`]s whose outcome was seen since its
/// last [`reset_append_copies`], how many copied the whole buffer instead of writing in place.
/// Why: MLX writes a `slice_update` into its input's buffer only when nothing else holds that
/// buffer as it encodes the op; a pipelined decode loop that queues step n+1 while step n's
/// attention still holds a layer's cache makes MLX copy that cache (268 MB per side and layer
/// at 128K for Llama-3-8B): session 22's lead for fp16's slow 128K steps. Per thread, because
/// a model's appends are built on the thread that runs its decode loop. Always on: the count
/// costs one `Array::buffer_id` call per append (24 ns on this CPU, ~1.5 us per Llama-3-8B
/// decode step against milliseconds of host time).
pub fn append_copies() -> (usize, usize) {
    APPENDS.with(Cell::get)
}

/// Zeroes this thread's counts of [`append_copies`].
pub fn reset_append_copies() {
    APPENDS.with(|c| c.set((0, 0)));
}

pub struct GrowBuffer {
    dtype: Dtype,
    data: Option<Array>,
    len: usize,
    capacity: usize,
    /// The buffer handle of the array the last `append` updated (0: none, or it was not yet
    /// scheduled): the next append compares it with the output's buffer.
    appended_from: usize,
}

impl GrowBuffer {
    pub fn new(dtype: Dtype) -> GrowBuffer {
        GrowBuffer {
            dtype,
            data: None,
            len: 0,
            capacity: 0,
            appended_from: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Appends `x [B, H, L, W]` (converted to the buffer's dtype).
    pub fn append(&mut self, x: &Array) -> Result<()> {
        let s = x.shape();
        if s.len() != 4 {
            return Err(Error::invalid(
                "kv buffer",
                format!("expected [B, H, L, W], got {s:?}"),
            ));
        }
        let l = s[2] as usize;
        self.reserve([s[0], s[1], s[3]], l)?;
        let x = if x.dtype() == self.dtype {
            x.clone()
        } else {
            x.astype(self.dtype)?
        };
        let start = [0, 0, self.len as i32, 0];
        let stop = [s[0], s[1], (self.len + l) as i32, s[3]];
        let d = self.data.take().expect("allocated above");
        // d is the last append's output (unless growth replaced it; in-place writes keep it):
        // once scheduled, its buffer tells whether that append wrote in place.
        let id = d.buffer_id()?;
        if self.appended_from != 0 && id != 0 {
            let copied = usize::from(id != self.appended_from);
            APPENDS.with(|c| {
                let (seen, n) = c.get();
                c.set((seen + 1, n + copied));
            });
        }
        self.appended_from = id;
        self.data = Some(d.slice_update(&x, &start, &stop)?);
        self.len += l;
        Ok(())
    }

    /// Keeps only the first `len` positions. The capacity stays: the next append writes at
    /// `len`, over what was stored there (readers never look past the length). Why: a chat's
    /// next turn reuses the cache up to where its tokens diverge from what was cached.
    pub fn truncate(&mut self, len: usize) -> Result<()> {
        if len > self.len {
            return Err(Error::invalid(
                "kv buffer",
                format!("cannot truncate {} positions to {len}", self.len),
            ));
        }
        self.len = len;
        Ok(())
    }

    /// Whether appending `l` positions reallocates the buffer (copying what it holds).
    pub fn will_grow(&self, l: usize) -> bool {
        self.len + l > self.capacity
    }

    /// Makes room for `l` more positions of rows `[B, H, _, W]` (`bhw`), growing by whole
    /// [`GROWTH_STEP`]s; the positions stay unwritten (zero) until an append or a kernel
    /// writing in place fills them ([`Self::advance`] then counts them).
    pub fn reserve(&mut self, bhw: [i32; 3], l: usize) -> Result<()> {
        if let Some(d) = &self.data {
            let ds = d.shape();
            if ds[0] != bhw[0] || ds[1] != bhw[1] || ds[3] != bhw[2] {
                return Err(Error::invalid(
                    "kv buffer",
                    format!("appending rows of [B, H, W] = {bhw:?} to a buffer of {ds:?}"),
                ));
            }
        }
        if self.will_grow(l) {
            let extra = (self.len + l - self.capacity).div_ceil(GROWTH_STEP) * GROWTH_STEP;
            let block = Array::zeros(&[bhw[0], bhw[1], extra as i32, bhw[2]], self.dtype)?;
            self.data = Some(match self.data.take() {
                Some(d) => concatenate(&[&d, &block], 2)?,
                None => block,
            });
            self.capacity += extra;
            // A new buffer on purpose: not an append's copy.
            self.appended_from = 0;
        }
        Ok(())
    }

    /// Counts `l` positions written in place after [`Self::reserve`].
    pub fn advance(&mut self, l: usize) -> Result<()> {
        if self.len + l > self.capacity {
            return Err(Error::invalid(
                "kv buffer",
                format!(
                    "advancing {l} past the capacity {} (len {})",
                    self.capacity, self.len
                ),
            ));
        }
        self.len += l;
        Ok(())
    }

    /// The filled positions `[B, H, len, W]` (a view).
    pub fn view(&self) -> Result<Option<Array>> {
        self.range(0, self.len)
    }

    /// Positions `[from, to)`.
    pub fn range(&self, from: usize, to: usize) -> Result<Option<Array>> {
        match &self.data {
            Some(d) if to > from => Ok(Some(d.slice_axis(2, from as i32, to as i32)?)),
            _ => Ok(None),
        }
    }

    /// The whole allocated buffer `[B, H, capacity, W]` (fused kernels index it directly,
    /// so no slice of it is ever copied).
    pub fn full(&self) -> Option<&Array> {
        self.data.as_ref()
    }

    /// Allocated positions.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes of the filled positions.
    pub fn bytes(&self) -> usize {
        match &self.data {
            Some(d) => {
                let s = d.shape();
                (s[0] * s[1] * s[3]) as usize * self.len * self.dtype.size()
            }
            None => 0,
        }
    }

    /// Bytes allocated.
    pub fn capacity_bytes(&self) -> usize {
        self.data.as_ref().map_or(0, |d| d.nbytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_grows_by_whole_steps_and_advance_counts_in_place_writes() {
        let mut b = GrowBuffer::new(Dtype::U8);
        assert!(b.will_grow(1));
        b.reserve([1, 2, 4], 1).unwrap();
        assert_eq!((b.len(), b.capacity()), (0, GROWTH_STEP));
        b.advance(1).unwrap();
        assert_eq!(b.len(), 1);
        assert!(!b.will_grow(GROWTH_STEP - 1) && b.will_grow(GROWTH_STEP));
        // Rows of another shape are refused, and so is counting past the capacity.
        assert!(b.reserve([1, 3, 4], 1).is_err());
        assert!(b.advance(GROWTH_STEP).is_err());
        b.reserve([1, 2, 4], GROWTH_STEP).unwrap();
        assert_eq!(b.capacity(), 2 * GROWTH_STEP);
        // The reserved positions read as zeros; an append lands after the counted ones.
        let x = Array::from_slice(&[7u8; 8], &[1, 2, 1, 4]).unwrap();
        b.append(&x).unwrap();
        let v = b.view().unwrap().unwrap().to_vec::<u8>().unwrap();
        assert_eq!(v, [0, 0, 0, 0, 7, 7, 7, 7, 0, 0, 0, 0, 7, 7, 7, 7]);
    }

    /// An append's output in the input's buffer counts as in place; while a view of the
    /// buffer is held across the next append's evaluation, MLX copies and it counts as copied.
    /// Each outcome is seen at the append after it.
    #[test]
    fn appends_count_the_copies_mlx_made() {
        reset_append_copies();
        let mut b = GrowBuffer::new(Dtype::F32);
        let x = Array::from_slice(&[1.0f32; 8], &[1, 2, 1, 4]).unwrap();
        b.append(&x).unwrap();
        b.full().unwrap().eval().unwrap();
        b.append(&x).unwrap(); // sees nothing yet: the first output came from growth
        b.full().unwrap().eval().unwrap();
        // A view of the second output, held while the third append evaluates: a copy.
        let held = b.view().unwrap().unwrap();
        b.append(&x).unwrap(); // sees the second append: in place
        assert_eq!(append_copies(), (1, 0));
        b.full().unwrap().eval().unwrap();
        b.append(&x).unwrap(); // sees the third
        assert_eq!(append_copies(), (2, 1));
        assert_eq!(held.shape(), vec![1, 2, 2, 4]);
        assert_eq!(b.len(), 4);
        reset_append_copies();
        assert_eq!(append_copies(), (0, 0));
    }
}
