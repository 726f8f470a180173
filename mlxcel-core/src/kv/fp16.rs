//! Unquantized storage (fp16 by default): the reference every other mode is measured against.

use crate::kernels::fp16_append::{append_kv_into, applies, ValueBuffers};
use crate::kv::buffer::GrowBuffer;
use crate::kv::pending::{append_pair_one, pair_step_applies, PairSide, PendingWrite, Reserved};
use crate::kv::side::{KvSide, RawSide, FORMAT_FP16};
use crate::kv::turbo::rotation::Rotation;
use crate::mlx::{Array, Dtype};
use crate::rope::RopeSpec;
use crate::{Error, Result};

/// One unquantized side. Its in-place writers on CUDA are the turbo4-asym K+V launch
/// (`TurboSide::append_asym_pair_in_place`, the key side) and the fp16 K+V launch
/// ([`Fp16Side::append_pair_in_place`], both sides of an fp16 cache). The readers that run
/// after such a write without a host wait take its token as an input: the fused decode
/// kernel, and the RoPE launch whose queries MLX's SDPA reads
/// (`attention::attend_fp16_after_write`); every other reader and writer waits for the
/// write on the host first ([`crate::kv::pending`] has the rules).
pub struct Fp16Side {
    buf: GrowBuffer,
    pending: PendingWrite,
}

impl Fp16Side {
    /// Stores in `dtype` (fp16 for the `fp16` mode).
    pub fn new(dtype: Dtype) -> Fp16Side {
        Fp16Side {
            buf: GrowBuffer::new(dtype),
            pending: PendingWrite::default(),
        }
    }

    /// The storage dtype.
    pub fn dtype(&self) -> Dtype {
        self.buf.dtype()
    }

    /// Appends one decode-step position to an fp16 cache's key side `k` and value side `v`
    /// with one in-place launch (`kernels::fp16_append::append_kv_into`); `xk` is the key
    /// before `rope`. Returns false, having appended nothing, where that path does not apply
    /// (then each side appends on its own through `slice_update`). Only with RoPE: the
    /// attention that reads the write is ordered after it by its query RoPE launch.
    pub fn append_pair_in_place(
        k: &mut Fp16Side,
        v: &mut Fp16Side,
        xk: &Array,
        xv: &Array,
        rope: &RopeSpec,
    ) -> Result<bool> {
        if v.dtype() != k.dtype() {
            return Ok(false);
        }
        let v_len = v.len();
        Fp16Side::append_key_pair_in_place(
            k,
            v_len,
            |d| v.pair_side(d),
            xk,
            xv,
            Some(rope),
            |[vd, _]| ValueBuffers::Fp16(vd),
        )
    }

    /// The in-place append of a pair with fp16 keys (this side) and a value side of `v_len`
    /// positions whose state `v_side(head_dim)` gives, shared by the fp16 mode and the turbo
    /// modes' fp16-key / int8-value boundary layers
    /// (`Int8Side::append_fp16_pair_in_place`): the decode-step checks of both, then one
    /// `append_kv_into` with the value buffers `values` makes of the value side's reserved
    /// `[data, aux]`. Returns false, having appended nothing, where the checks fail.
    pub(crate) fn append_key_pair_in_place<'v>(
        k: &mut Fp16Side,
        v_len: usize,
        v_side: impl FnOnce(i32) -> PairSide<'v>,
        xk: &Array,
        xv: &Array,
        rope: Option<&RopeSpec>,
        values: for<'a> fn(Reserved<'a>) -> ValueBuffers<'a>,
    ) -> Result<bool> {
        let s = xk.shape();
        let d = s.get(3).copied().unwrap_or(0);
        if !(pair_step_applies(xk, xv, [k.len(), v_len], rope) && applies(d as usize, k.dtype())) {
            return Ok(false);
        }
        append_pair_one(
            k.pair_side(d),
            v_side(d),
            [s[0], s[1]],
            |[kd, _], vb, pos, afters| append_kv_into(xk, xv, kd, values(vb), pos, afters, rope),
        )?;
        Ok(true)
    }

    /// This side's state for [`crate::kv::pending::append_pair_one`] (vectors of `d`
    /// values; no aux buffer).
    pub(crate) fn pair_side(&mut self, d: i32) -> PairSide<'_> {
        PairSide {
            pending: &mut self.pending,
            data: &mut self.buf,
            aux: None,
            widths: [d, 0],
        }
    }
}

impl KvSide for Fp16Side {
    fn as_fp16_mut(&mut self) -> Option<&mut Fp16Side> {
        Some(self)
    }

    fn append(&mut self, x: &Array) -> Result<()> {
        self.pending.settle()?;
        self.buf.append(x)
    }

    fn len(&self) -> usize {
        self.buf.len()
    }

    fn truncate(&mut self, len: usize) -> Result<()> {
        self.pending.settle()?;
        self.buf.truncate(len)
    }

    fn bytes(&self) -> usize {
        self.buf.bytes()
    }

    fn capacity_bytes(&self) -> usize {
        self.buf.capacity_bytes()
    }

    fn name(&self) -> &'static str {
        match self.buf.dtype() {
            Dtype::F16 => "fp16",
            Dtype::BF16 => "bf16",
            _ => "fp32",
        }
    }

    fn rotation(&self) -> Option<&Rotation> {
        None
    }

    fn dense(&self, dtype: Dtype) -> Result<Array> {
        self.pending.settle()?;
        let v = self
            .buf
            .view()?
            .ok_or_else(|| Error::invalid("kv", "empty cache"))?;
        if v.dtype() == dtype {
            Ok(v)
        } else {
            v.astype(dtype)
        }
    }

    fn dense_rotated(&self, dtype: Dtype) -> Result<Array> {
        self.dense(dtype)
    }

    fn raw(&self) -> Option<RawSide<'_>> {
        (self.buf.dtype() == Dtype::F16).then_some(())?;
        Some(RawSide {
            format: FORMAT_FP16,
            data: self.buf.full()?,
            aux: None,
            capacity: self.buf.capacity(),
            lut_array: None,
            rotation: None,
            pending: self.pending.token(),
        })
    }
}
