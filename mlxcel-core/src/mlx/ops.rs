//! Array operations: elementwise math, comparisons, bitwise ops, reductions, shape
//! manipulation, indexing, sorting and MLX's affine quantization. All are lazy.
//!
//! The op codes below cross the bridge and must match `unary`/`binary`/`reduce` in
//! `cpp/bridge.cc`.

use std::borrow::Cow;

use super::array::{array_vec, from_array_vec, Array};
use super::dtype::Dtype;
use super::ffi::bridge as ffi;
use crate::error::{Error, MlxContext, Result};

#[derive(Clone, Copy)]
#[repr(u8)]
enum Unary {
    Negative = 0,
    Abs = 1,
    Exp = 2,
    Log = 3,
    Sqrt = 4,
    Rsqrt = 5,
    Sin = 6,
    Cos = 7,
    Tanh = 8,
    Sigmoid = 9,
    Floor = 10,
    Ceil = 11,
    Round = 12,
    LogicalNot = 13,
    Erf = 14,
    Square = 15,
    Reciprocal = 16,
    BitwiseInvert = 17,
    Sign = 18,
    Log1p = 19,
    IsNan = 20,
    StopGradient = 21,
    Copy = 22,
    IsInf = 23,
}

#[derive(Clone, Copy)]
#[repr(u8)]
enum Binary {
    Add = 0,
    Subtract = 1,
    Multiply = 2,
    Divide = 3,
    Maximum = 4,
    Minimum = 5,
    Power = 6,
    Equal = 7,
    NotEqual = 8,
    Less = 9,
    LessEqual = 10,
    Greater = 11,
    GreaterEqual = 12,
    LogicalAnd = 13,
    LogicalOr = 14,
    BitwiseAnd = 15,
    BitwiseOr = 16,
    BitwiseXor = 17,
    LeftShift = 18,
    RightShift = 19,
    Remainder = 20,
    FloorDivide = 21,
    LogAddExp = 22,
}

#[derive(Clone, Copy)]
#[repr(u8)]
enum Reduce {
    Sum = 0,
    Mean = 1,
    Max = 2,
    Min = 3,
    Prod = 4,
    ArgMax = 5,
    ArgMin = 6,
    LogSumExp = 7,
    All = 8,
    Any = 9,
}

macro_rules! unary_ops {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl Array {
            $($(#[$doc])* pub fn $name(&self) -> Result<Array> {
                ffi::unary(Unary::$op as u8, self.raw())
                    .op(stringify!($name))
                    .map(Array::from_ptr)
            })*
        }
    };
}

macro_rules! binary_ops {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl Array {
            $($(#[$doc])* pub fn $name(&self, other: &Array) -> Result<Array> {
                ffi::binary(Binary::$op as u8, self.raw(), other.raw())
                    .op(stringify!($name))
                    .map(Array::from_ptr)
            })*
        }
    };
}

macro_rules! reduce_ops {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl Array {
            $($(#[$doc])* pub fn $name(&self, axes: &[i32], keepdims: bool) -> Result<Array> {
                ffi::reduce(Reduce::$op as u8, self.raw(), axes, keepdims)
                    .op(stringify!($name))
                    .map(Array::from_ptr)
            })*
        }
    };
}

unary_ops!(
    /// `-x`
    negative => Negative,
    abs => Abs,
    exp => Exp,
    log => Log,
    sqrt => Sqrt,
    rsqrt => Rsqrt,
    sin => Sin,
    cos => Cos,
    tanh => Tanh,
    sigmoid => Sigmoid,
    floor => Floor,
    ceil => Ceil,
    /// Round half to even.
    round => Round,
    logical_not => LogicalNot,
    erf => Erf,
    square => Square,
    reciprocal => Reciprocal,
    bitwise_invert => BitwiseInvert,
    sign => Sign,
    log1p => Log1p,
    isnan => IsNan,
    isinf => IsInf,
    stop_gradient => StopGradient,
    /// A new array with the same values (a graph node, not a handle clone).
    copy => Copy,
);

binary_ops!(
    add => Add,
    subtract => Subtract,
    multiply => Multiply,
    divide => Divide,
    maximum => Maximum,
    minimum => Minimum,
    power => Power,
    equal => Equal,
    not_equal => NotEqual,
    less => Less,
    less_equal => LessEqual,
    greater => Greater,
    greater_equal => GreaterEqual,
    logical_and => LogicalAnd,
    logical_or => LogicalOr,
    bitwise_and => BitwiseAnd,
    bitwise_or => BitwiseOr,
    bitwise_xor => BitwiseXor,
    left_shift => LeftShift,
    right_shift => RightShift,
    remainder => Remainder,
    floor_divide => FloorDivide,
    logaddexp => LogAddExp,
);

reduce_ops!(
    sum => Sum,
    mean => Mean,
    max => Max,
    min => Min,
    prod => Prod,
    /// Index of the largest element along the one axis in `axes` (uint32).
    argmax => ArgMax,
    /// Index of the smallest element along the one axis in `axes` (uint32).
    argmin => ArgMin,
    logsumexp => LogSumExp,
    all => All,
    any => Any,
);

impl Array {
    /// `x * sigmoid(x)` (SiLU / swish).
    pub fn silu(&self) -> Result<Array> {
        self.multiply(&self.sigmoid()?)
    }

    /// Adds a scalar (converted to this array's dtype).
    pub fn add_scalar(&self, v: f64) -> Result<Array> {
        self.add(&Array::full(&[], v, self.dtype())?)
    }

    /// Multiplies by a scalar (converted to this array's dtype).
    pub fn mul_scalar(&self, v: f64) -> Result<Array> {
        self.multiply(&Array::full(&[], v, self.dtype())?)
    }

    /// Converts to `dtype`.
    pub fn astype(&self, dtype: Dtype) -> Result<Array> {
        ffi::astype(self.raw(), dtype.code())
            .op("astype")
            .map(Array::from_ptr)
    }

    /// Matrix product with NumPy broadcasting of batch dimensions.
    pub fn matmul(&self, other: &Array) -> Result<Array> {
        ffi::matmul(self.raw(), other.raw())
            .op("matmul")
            .map(Array::from_ptr)
    }

    /// Softmax over `axes`; `precise` accumulates in f32 for half inputs.
    pub fn softmax(&self, axes: &[i32], precise: bool) -> Result<Array> {
        ffi::softmax(self.raw(), axes, precise)
            .op("softmax")
            .map(Array::from_ptr)
    }

    /// Cumulative sum along `axis`.
    pub fn cumsum(&self, axis: i32, reverse: bool, inclusive: bool) -> Result<Array> {
        ffi::cumsum(self.raw(), axis, reverse, inclusive)
            .op("cumsum")
            .map(Array::from_ptr)
    }

    /// Indices that sort along `axis` (ascending).
    pub fn argsort(&self, axis: i32) -> Result<Array> {
        ffi::argsort(self.raw(), axis)
            .op("argsort")
            .map(Array::from_ptr)
    }

    /// Sorted copy along `axis` (ascending).
    pub fn sort(&self, axis: i32) -> Result<Array> {
        ffi::sort(self.raw(), axis).op("sort").map(Array::from_ptr)
    }

    /// Indices such that the element at `kth` is in sorted position, smaller ones before.
    pub fn argpartition(&self, kth: i32, axis: i32) -> Result<Array> {
        ffi::argpartition(self.raw(), kth, axis)
            .op("argpartition")
            .map(Array::from_ptr)
    }

    /// The `k` largest values along `axis` (unordered).
    pub fn topk(&self, k: i32, axis: i32) -> Result<Array> {
        ffi::topk(self.raw(), k, axis)
            .op("topk")
            .map(Array::from_ptr)
    }

    /// Clamps into `[lo, hi]`.
    pub fn clip(&self, lo: &Array, hi: &Array) -> Result<Array> {
        ffi::clip(self.raw(), lo.raw(), hi.raw())
            .op("clip")
            .map(Array::from_ptr)
    }

    /// Same data, new shape (one dimension may be -1).
    pub fn reshape(&self, shape: &[i32]) -> Result<Array> {
        ffi::reshape(self.raw(), shape)
            .op("reshape")
            .map(Array::from_ptr)
    }

    /// Permutes the axes.
    pub fn transpose(&self, axes: &[i32]) -> Result<Array> {
        ffi::transpose(self.raw(), axes)
            .op("transpose")
            .map(Array::from_ptr)
    }

    /// Swaps the last two axes.
    pub fn t(&self) -> Result<Array> {
        let n = self.ndim() as i32;
        if n < 2 {
            return Err(Error::invalid("t", "needs at least 2 dimensions"));
        }
        let mut axes: Vec<i32> = (0..n).collect();
        axes.swap((n - 2) as usize, (n - 1) as usize);
        self.transpose(&axes)
    }

    /// Inserts size-1 axes.
    pub fn expand_dims(&self, axes: &[i32]) -> Result<Array> {
        ffi::expand_dims(self.raw(), axes)
            .op("expand_dims")
            .map(Array::from_ptr)
    }

    /// Removes size-1 axes.
    pub fn squeeze(&self, axes: &[i32]) -> Result<Array> {
        ffi::squeeze(self.raw(), axes)
            .op("squeeze")
            .map(Array::from_ptr)
    }

    /// Broadcasts to `shape`.
    pub fn broadcast_to(&self, shape: &[i32]) -> Result<Array> {
        ffi::broadcast_to(self.raw(), shape)
            .op("broadcast_to")
            .map(Array::from_ptr)
    }

    /// A row-contiguous copy (or the array itself when it already is).
    pub fn contiguous(&self) -> Result<Array> {
        ffi::contiguous(self.raw())
            .op("contiguous")
            .map(Array::from_ptr)
    }

    /// `a[start:stop]` per axis with unit strides.
    pub fn slice(&self, start: &[i32], stop: &[i32]) -> Result<Array> {
        let strides = vec![1; start.len()];
        self.slice_strided(start, stop, &strides)
    }

    /// `a[start:stop:strides]` per axis.
    pub fn slice_strided(&self, start: &[i32], stop: &[i32], strides: &[i32]) -> Result<Array> {
        ffi::slice(self.raw(), start, stop, strides)
            .op("slice")
            .map(Array::from_ptr)
    }

    /// A slice along one axis: `a[..., start:stop, ...]`.
    pub fn slice_axis(&self, axis: i32, start: i32, stop: i32) -> Result<Array> {
        let shape = self.shape();
        let n = shape.len() as i32;
        let ax = if axis < 0 { axis + n } else { axis };
        if !(0..n).contains(&ax) {
            return Err(Error::invalid(
                "slice_axis",
                format!("axis {axis} out of range"),
            ));
        }
        let mut lo = vec![0; shape.len()];
        let mut hi = shape.clone();
        lo[ax as usize] = start;
        hi[ax as usize] = stop;
        self.slice(&lo, &hi)
    }

    /// A copy of `self` with `update` written into `[start, stop)` (unit strides).
    /// MLX performs this in place when `self` has no other references, which is what a
    /// preallocated KV cache relies on.
    pub fn slice_update(&self, update: &Array, start: &[i32], stop: &[i32]) -> Result<Array> {
        let strides = vec![1; start.len()];
        ffi::slice_update(self.raw(), update.raw(), start, stop, &strides)
            .op("slice_update")
            .map(Array::from_ptr)
    }

    /// Like [`Array::slice_update`] but with start indices held in an array (no host sync
    /// when the position lives on the device).
    pub fn slice_update_dynamic(
        &self,
        update: &Array,
        start: &Array,
        axes: &[i32],
    ) -> Result<Array> {
        ffi::slice_update_dynamic(self.raw(), update.raw(), start.raw(), axes)
            .op("slice_update")
            .map(Array::from_ptr)
    }

    /// Gathers slices at `indices` along `axis`.
    pub fn take(&self, indices: &Array, axis: i32) -> Result<Array> {
        ffi::take(self.raw(), indices.raw(), axis)
            .op("take")
            .map(Array::from_ptr)
    }

    /// Gathers element-wise along `axis` with indices of the same rank.
    pub fn take_along_axis(&self, indices: &Array, axis: i32) -> Result<Array> {
        ffi::take_along_axis(self.raw(), indices.raw(), axis)
            .op("take_along_axis")
            .map(Array::from_ptr)
    }

    /// Scatters `values` at `indices` along `axis`.
    pub fn put_along_axis(&self, indices: &Array, values: &Array, axis: i32) -> Result<Array> {
        ffi::put_along_axis(self.raw(), indices.raw(), values.raw(), axis)
            .op("put_along_axis")
            .map(Array::from_ptr)
    }

    /// Splits at the given indices along `axis`.
    pub fn split_at(&self, indices: &[i32], axis: i32) -> Result<Vec<Array>> {
        let v = ffi::split_sections(self.raw(), indices, axis).op("split")?;
        from_array_vec(&v, "split")
    }

    /// Fast Walsh–Hadamard transform over the last axis (size must be a power of two
    /// times 1, 12, 20 or 28). `scale` defaults to `1/sqrt(n)` (orthonormal).
    pub fn hadamard_transform(&self, scale: Option<f32>) -> Result<Array> {
        ffi::hadamard_transform(self.raw(), scale.is_some(), scale.unwrap_or(0.0))
            .op("hadamard_transform")
            .map(Array::from_ptr)
    }
}

/// `where(cond, x, y)`.
pub fn where_(cond: &Array, x: &Array, y: &Array) -> Result<Array> {
    ffi::where_(cond.raw(), x.raw(), y.raw())
        .op("where")
        .map(Array::from_ptr)
}

/// Joins arrays along `axis`.
pub fn concatenate(arrays: &[&Array], axis: i32) -> Result<Array> {
    if arrays.is_empty() {
        return Err(Error::invalid("concatenate", "no arrays"));
    }
    ffi::concatenate(&array_vec(arrays), axis)
        .op("concatenate")
        .map(Array::from_ptr)
}

/// Stacks arrays along a new `axis`.
pub fn stack(arrays: &[&Array], axis: i32) -> Result<Array> {
    if arrays.is_empty() {
        return Err(Error::invalid("stack", "no arrays"));
    }
    ffi::stack(&array_vec(arrays), axis)
        .op("stack")
        .map(Array::from_ptr)
}

/// The order of a [`Quantized`] weight's packed words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WeightLayout {
    /// MLX's: row-major `[N, K * bits / 32]`, what `quantized_matmul` reads.
    #[default]
    Mlx,
    /// 4-bit words reordered so that each 16-row x 128-value tile is 1 KiB of contiguous
    /// memory (the CUDA GEMV kernels' `TILED` input; see
    /// `kernels::quantized_gemv::tile_rows16`). Same shape as [`WeightLayout::Mlx`]; MLX's
    /// ops see it through [`Quantized::untiled`].
    Rows16Tiles,
    /// The words as [`WeightLayout::Rows16Tiles`], and the (scale, bias) pairs interleaved in
    /// the same tiles' order (`scales` holds them as `[N, 2 K / group]` fp16, `biases` is the same
    /// array; see `kernels::quantized_gemv::tile_tables16`): the CUDA GEMV kernels' `RT` input,
    /// whose lanes copy each tile's pairs with its words. MLX's ops see both through
    /// [`Quantized::untiled`] and [`Quantized::untiled_tables`].
    Rows16TilesPairs,
}

impl WeightLayout {
    /// Whether the packed words are in the 16-row tiles' order.
    pub fn tiled_words(self) -> bool {
        matches!(self, Self::Rows16Tiles | Self::Rows16TilesPairs)
    }
}

/// MLX's affine quantization of `w` along its last axis.
pub struct Quantized {
    /// Packed `bits`-bit values in uint32 words, ordered as `layout` says.
    pub w: Array,
    /// One scale per group.
    pub scales: Array,
    /// One bias per group.
    pub biases: Array,
    pub group_size: i32,
    pub bits: i32,
    pub layout: WeightLayout,
}

/// Quantizes `w` (last axis divisible by `group_size`) to `bits` per element.
pub fn quantize(w: &Array, group_size: i32, bits: i32) -> Result<Quantized> {
    let v = ffi::quantize(w.raw(), group_size, bits).op("quantize")?;
    let mut parts = from_array_vec(&v, "quantize")?.into_iter();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(w), Some(scales), Some(biases)) => Ok(Quantized {
            w,
            scales,
            biases,
            group_size,
            bits,
            layout: WeightLayout::Mlx,
        }),
        _ => Err(Error::invalid(
            "quantize",
            "MLX returned fewer than 3 arrays for affine mode",
        )),
    }
}

impl Quantized {
    /// The packed words in MLX's order: `w` itself (borrowed: MLX-layout weights, every call
    /// on the CPU and Metal backends, pay nothing here), or for [`WeightLayout::Rows16Tiles`]
    /// the inverse reorder (a lazy copy: a prefill chunk's matmuls pay one read and write of
    /// the weight, small beside their arithmetic).
    pub fn untiled(&self) -> Result<Cow<'_, Array>> {
        match self.layout {
            WeightLayout::Mlx => Ok(Cow::Borrowed(&self.w)),
            WeightLayout::Rows16Tiles | WeightLayout::Rows16TilesPairs => {
                let (n, words) = (self.w.dim(0), self.w.dim(-1));
                let w = self
                    .w
                    .reshape(&[n / 16, words / 16, 16, 16])?
                    .transpose(&[0, 2, 1, 3])?
                    .reshape(&[n, words])?
                    .contiguous()?;
                Ok(Cow::Owned(w))
            }
        }
    }

    /// The scales and biases as MLX's ops take them, `[N, K / group]` each: borrowed, or for
    /// [`WeightLayout::Rows16TilesPairs`] the inverse reorder of the pairs (lazy, as
    /// [`Quantized::untiled`]'s).
    pub fn untiled_tables(&self) -> Result<(Cow<'_, Array>, Cow<'_, Array>)> {
        if self.layout != WeightLayout::Rows16TilesPairs {
            return Ok((Cow::Borrowed(&self.scales), Cow::Borrowed(&self.biases)));
        }
        let (n, k) = (self.w.dim(0), self.w.dim(-1) * 32 / self.bits);
        let (kg, tiles) = (k / self.group_size, k / 128);
        let pairs = self
            .scales
            .reshape(&[n / 16, tiles, kg / tiles, 8, 2, 2])?
            .transpose(&[0, 4, 3, 1, 2, 5])?
            .reshape(&[n, kg, 2])?;
        // Row-contiguous copies: the slices alone are views with a stride of 2, which MLX's
        // CUDA `quantized_matmul` has no kernel for ("No implementation for problem shape"),
        // so every prefill through it failed there with paired tables (session 60).
        let scales = pairs.slice_axis(2, 0, 1)?.reshape(&[n, kg])?.contiguous()?;
        let biases = pairs.slice_axis(2, 1, 2)?.reshape(&[n, kg])?.contiguous()?;
        Ok((Cow::Owned(scales), Cow::Owned(biases)))
    }

    /// Bytes held: words and tables, the paired tables ([`WeightLayout::Rows16TilesPairs`],
    /// where `biases` is `scales` itself) once.
    pub fn nbytes(&self) -> usize {
        let tables = if self.layout == WeightLayout::Rows16TilesPairs {
            self.scales.nbytes()
        } else {
            self.scales.nbytes() + self.biases.nbytes()
        };
        self.w.nbytes() + tables
    }

    /// Back to a dense array of `dtype`.
    pub fn dequantize(&self, dtype: Dtype) -> Result<Array> {
        let w = self.untiled()?;
        let (scales, biases) = self.untiled_tables()?;
        ffi::dequantize(
            w.raw(),
            scales.raw(),
            biases.raw(),
            self.group_size,
            self.bits,
            dtype.code(),
        )
        .op("dequantize")
        .map(Array::from_ptr)
    }

    /// `x @ W.T` (when `transpose`) without materializing `W`.
    pub fn matmul(&self, x: &Array, transpose: bool) -> Result<Array> {
        let w = self.untiled()?;
        let (scales, biases) = self.untiled_tables()?;
        ffi::quantized_matmul(
            x.raw(),
            w.raw(),
            scales.raw(),
            biases.raw(),
            transpose,
            self.group_size,
            self.bits,
        )
        .op("quantized_matmul")
        .map(Array::from_ptr)
    }
}
