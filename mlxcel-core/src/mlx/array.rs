//! [`Array`]: an owned handle to one `mlx::core::array`, and the ways to make one and to
//! read it back into Rust.

use cxx::UniquePtr;

use super::dtype::{as_bytes, as_bytes_mut, Dtype, Element};
use super::ffi::bridge as ffi;
use crate::error::{Error, MlxContext, Result};

/// An MLX array. Cloning copies the handle, not the data (MLX arrays are immutable
/// values that share buffers), so clones are cheap.
pub struct Array {
    pub(crate) inner: UniquePtr<ffi::Array>,
}

impl Drop for Array {
    fn drop(&mut self) {
        // While the decode loop's submit thread has a hand-off in flight, the handle is kept
        // and released later (`submit` says why).
        super::submit::defer_drop(&mut self.inner);
    }
}

impl Clone for Array {
    fn clone(&self) -> Self {
        Array {
            inner: ffi::array_clone(self.raw()),
        }
    }
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Array(shape={:?}, dtype={:?})",
            self.shape(),
            self.dtype()
        )
    }
}

pub(crate) fn check_shape(op: &'static str, shape: &[i32]) -> Result<usize> {
    let mut n: usize = 1;
    for &d in shape {
        if d < 0 {
            return Err(Error::invalid(
                op,
                format!("negative dimension in shape {shape:?}"),
            ));
        }
        n = n
            .checked_mul(d as usize)
            .ok_or_else(|| Error::invalid(op, format!("shape {shape:?} overflows")))?;
    }
    Ok(n)
}

impl Array {
    pub(crate) fn from_ptr(inner: UniquePtr<ffi::Array>) -> Array {
        debug_assert!(!inner.is_null());
        Array { inner }
    }

    pub(crate) fn raw(&self) -> &ffi::Array {
        self.inner
            .as_ref()
            .expect("Array handles are never null: every constructor checks the bridge result")
    }

    /// Copies `data` (row-major) into a new array of `shape`.
    pub fn from_slice<T: Element>(data: &[T], shape: &[i32]) -> Result<Array> {
        let n = check_shape("from_slice", shape)?;
        if n != data.len() {
            return Err(Error::invalid(
                "from_slice",
                format!("{} elements do not fill shape {shape:?} ({n})", data.len()),
            ));
        }
        ffi::array_from_bytes(as_bytes(data), shape, T::DTYPE.code())
            .op("from_slice")
            .map(Array::from_ptr)
    }

    /// A 0-d array holding `value`.
    pub fn scalar<T: Element>(value: T) -> Result<Array> {
        Array::from_slice(&[value], &[])
    }

    /// An array of `shape` filled with `value`, converted to `dtype`.
    pub fn full(shape: &[i32], value: f64, dtype: Dtype) -> Result<Array> {
        check_shape("full", shape)?;
        ffi::array_full(shape, value, dtype.code())
            .op("full")
            .map(Array::from_ptr)
    }

    /// Zeros of `shape` and `dtype`.
    pub fn zeros(shape: &[i32], dtype: Dtype) -> Result<Array> {
        Array::full(shape, 0.0, dtype)
    }

    /// Ones of `shape` and `dtype`.
    pub fn ones(shape: &[i32], dtype: Dtype) -> Result<Array> {
        Array::full(shape, 1.0, dtype)
    }

    /// `start, start + step, ...` up to (not including) `stop`.
    pub fn arange(start: f64, stop: f64, step: f64, dtype: Dtype) -> Result<Array> {
        ffi::array_arange(start, stop, step, dtype.code())
            .op("arange")
            .map(Array::from_ptr)
    }

    /// The dimensions.
    pub fn shape(&self) -> Vec<i32> {
        ffi::array_shape(self.raw())
    }

    /// One dimension; negative `axis` counts from the end.
    pub fn dim(&self, axis: i32) -> i32 {
        // Without building the shape (a vector per call): the decode step's host code asks
        // for dimensions many times per layer.
        let n = self.ndim() as i32;
        let ax = if axis < 0 { axis + n } else { axis };
        assert!(
            (0..n).contains(&ax),
            "axis {axis} out of range for shape {:?}",
            self.shape()
        );
        ffi::array_dim(self.raw(), ax as usize)
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        ffi::array_ndim(self.raw())
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        // The bridge only fails for a dtype it has no code for; MLX has no such dtype today.
        ffi::array_dtype(self.raw())
            .ok()
            .and_then(Dtype::from_code)
            .expect("MLX array with a dtype unknown to mlxcel")
    }

    /// Number of elements.
    pub fn size(&self) -> usize {
        ffi::array_size(self.raw())
    }

    /// Bytes of the logical array (elements x element size).
    pub fn nbytes(&self) -> usize {
        ffi::array_nbytes(self.raw())
    }

    /// The number of operations evaluating this array would schedule: the not yet
    /// scheduled ops it depends on, itself included (an op with several outputs once). A
    /// diagnostic of graph size (each op is host work when MLX encodes a step); it walks the
    /// graph, so it costs time proportional to that count.
    pub fn pending_ops(&self) -> Result<usize> {
        ffi::array_graph_nodes(self.raw()).op("graph nodes")
    }

    /// The allocator's handle of this array's buffer (0 before MLX scheduled the array), read
    /// without waiting for its value. A diagnostic: whether an op such as `slice_update`
    /// reused its input's buffer (MLX donates it when nothing else holds it) or copied the
    /// input into a new one (`examples/slice_update_donation.rs`).
    pub fn buffer_id(&self) -> Result<usize> {
        ffi::array_buffer_id(self.raw()).op("buffer id")
    }

    /// Runs the graph that produces this array.
    pub fn eval(&self) -> Result<()> {
        super::submit::exclusive(|| ffi::array_eval(self.raw())).op("eval")
    }

    /// Evaluates the array and says whether its elements are stored row-contiguously. MLX's
    /// CUDA kernels refuse some strided inputs (its `quantized_matmul` has no kernel for strided
    /// scales or biases) where the CPU backend takes any strides, so code that builds views for
    /// such ops checks them with this on every backend.
    pub fn is_row_contiguous(&self) -> Result<bool> {
        super::submit::exclusive(|| ffi::array_is_row_contiguous(self.raw())).op("eval")
    }

    /// Evaluates and copies the elements out in row-major order. `T` must be the array's
    /// dtype (use [`Array::astype`] first to convert).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.dtype() != T::DTYPE {
            return Err(Error::invalid(
                "to_vec",
                format!("array has dtype {}, asked for {}", self.dtype(), T::DTYPE),
            ));
        }
        let mut out = vec![T::default(); self.size()];
        let mut copy = || ffi::array_copy_to(self.raw(), as_bytes_mut(&mut out));
        // An unscheduled array is evaluated first, which encodes work (`submit`).
        if ffi::array_is_scheduled(self.raw()) {
            copy()
        } else {
            super::submit::exclusive(copy)
        }
        .op("to_vec")?;
        Ok(out)
    }

    /// Converts to f32 and copies out: the usual way to compare against Rust math.
    pub fn to_f32_vec(&self) -> Result<Vec<f32>> {
        self.astype(Dtype::F32)?.to_vec::<f32>()
    }

    /// The single element of a one-element array.
    pub fn item<T: Element>(&self) -> Result<T> {
        if self.size() != 1 {
            return Err(Error::invalid(
                "item",
                format!(
                    "array of shape {:?} has {} elements",
                    self.shape(),
                    self.size()
                ),
            ));
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// MLX's own printout of the array (evaluates it).
    pub fn to_string_lossy(&self) -> Result<String> {
        ffi::array_to_string(self.raw()).op("to_string")
    }
}

/// Evaluates several arrays in one graph run.
pub fn eval_all(arrays: &[&Array]) -> Result<()> {
    let v = array_vec(arrays);
    super::submit::exclusive(|| ffi::eval_all(&v)).op("eval")
}

/// Schedules several arrays for evaluation and returns without waiting: the host can build
/// the next graph while the device runs this one. Reading an array (`item`, `to_vec`) or
/// evaluating it later waits for it.
pub fn async_eval_all(arrays: &[&Array]) -> Result<()> {
    let v = array_vec(arrays);
    super::submit::exclusive(|| ffi::async_eval_all(&v)).op("async_eval")
}

pub(crate) fn array_vec(arrays: &[&Array]) -> UniquePtr<ffi::ArrayVec> {
    let mut v = ffi::array_vec_with_capacity(arrays.len());
    for a in arrays {
        ffi::array_vec_push(v.pin_mut(), a.raw());
    }
    v
}

pub(crate) fn from_array_vec(v: &ffi::ArrayVec, op: &'static str) -> Result<Vec<Array>> {
    (0..ffi::array_vec_len(v))
        .map(|i| ffi::array_vec_get(v, i).op(op).map(Array::from_ptr))
        .collect()
}
