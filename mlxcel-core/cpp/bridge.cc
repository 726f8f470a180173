// Implementation of the cxx bridge glue. Each function converts the bridge's plain
// types (slices, u8 codes) to MLX types and calls one MLX function; no logic lives here
// except the graph walk of array_graph_nodes, which needs MLX's per-array internals.
#include "mlxcel-core/cpp/bridge.h"
#include "mlxcel-core/cpp/kernel_disk_cache.h"

#include <dlfcn.h>

#include <cstring>
#include <sstream>
#include <stdexcept>
#include <unordered_set>

#include "mlx/backend/cuda/cuda.h"
#include "mlx/backend/metal/metal.h"
#include "mlxcel-core/src/mlx/ffi.rs.h"

namespace mx = mlx::core;

namespace mlxcel {
namespace {

// Dtype codes shared with src/mlx/dtype.rs. Independent of the order of mx::Dtype::Val.
mx::Dtype to_dtype(uint8_t code) {
  switch (code) {
    case 0: return mx::bool_;
    case 1: return mx::uint8;
    case 2: return mx::uint16;
    case 3: return mx::uint32;
    case 4: return mx::uint64;
    case 5: return mx::int8;
    case 6: return mx::int16;
    case 7: return mx::int32;
    case 8: return mx::int64;
    case 9: return mx::float16;
    case 10: return mx::float32;
    case 11: return mx::float64;
    case 12: return mx::bfloat16;
    case 13: return mx::complex64;
  }
  throw std::invalid_argument("[mlxcel] unknown dtype code " + std::to_string(code));
}

uint8_t from_dtype(mx::Dtype d) {
  switch (d.val()) {
    case mx::Dtype::Val::bool_: return 0;
    case mx::Dtype::Val::uint8: return 1;
    case mx::Dtype::Val::uint16: return 2;
    case mx::Dtype::Val::uint32: return 3;
    case mx::Dtype::Val::uint64: return 4;
    case mx::Dtype::Val::int8: return 5;
    case mx::Dtype::Val::int16: return 6;
    case mx::Dtype::Val::int32: return 7;
    case mx::Dtype::Val::int64: return 8;
    case mx::Dtype::Val::float16: return 9;
    case mx::Dtype::Val::float32: return 10;
    case mx::Dtype::Val::float64: return 11;
    case mx::Dtype::Val::bfloat16: return 12;
    case mx::Dtype::Val::complex64: return 13;
  }
  throw std::invalid_argument("[mlxcel] MLX dtype has no mlxcel code");
}

mx::Shape to_shape(I32s s) { return mx::Shape(s.begin(), s.end()); }
std::vector<int> to_ints(I32s s) { return std::vector<int>(s.begin(), s.end()); }
ArrayPtr wrap(mx::array a) { return std::make_unique<Array>(std::move(a)); }
mx::Device device_of(bool gpu, int32_t index) {
  return mx::Device(gpu ? mx::Device::gpu : mx::Device::cpu, index);
}

template <typename T>
mx::array from_typed(const uint8_t* data, mx::Shape shape, mx::Dtype dtype) {
  return mx::array(reinterpret_cast<const T*>(data), std::move(shape), dtype);
}

} // namespace

// ---- library, devices, memory ------------------------------------------------------

rust::String mlx_version() { return rust::String(mx::version()); }

rust::String mlx_library_path() {
  // The libmlx.so actually loaded: tells whether the CUDA drop-in was picked up.
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&mx::version), &info) != 0 && info.dli_fname) {
    return rust::String(info.dli_fname);
  }
  return rust::String("");
}

rust::String gpu_backend() {
  if (mx::cu::is_available()) return rust::String("cuda");
  if (mx::metal::is_available()) return rust::String("metal");
  return rust::String("none");
}

int32_t device_count(bool gpu) {
  return mx::device_count(gpu ? mx::Device::gpu : mx::Device::cpu);
}

bool default_device_is_gpu() { return mx::default_device().type == mx::Device::gpu; }

void set_default_device(bool gpu, int32_t index) {
  auto d = device_of(gpu, index);
  if (!mx::is_available(d)) {
    throw std::invalid_argument(std::string("[mlxcel] device ") + (gpu ? "gpu" : "cpu") + ":" +
                                std::to_string(index) + " is not available in this MLX build");
  }
  mx::set_default_device(d);
}

rust::Vec<rust::String> device_info(bool gpu, int32_t index) {
  rust::Vec<rust::String> out;
  const auto& info = mx::device_info(device_of(gpu, index));
  for (const auto& [k, v] : info) {
    out.push_back(rust::String(k));
    if (std::holds_alternative<std::string>(v)) {
      out.push_back(rust::String(std::get<std::string>(v)));
    } else {
      out.push_back(rust::String(std::to_string(std::get<size_t>(v))));
    }
  }
  return out;
}

void synchronize() { mx::synchronize(); }

// Streams for the decode loop's submit thread (mlx/submit.rs). MLX keeps each stream's
// command encoder in the thread that made it unless the stream is made with
// new_thread_unsafe_stream: then any thread may encode on it, one at a time.
int32_t stream_new_shared() { return mx::new_thread_unsafe_stream(mx::default_device()).index; }
int32_t stream_default_index() { return mx::default_stream(mx::default_device()).index; }
void stream_set_default(int32_t index) {
  mx::set_default_stream(mx::Stream(index, mx::default_device()));
}

// cuProfilerStart/Stop from the CUDA driver, looked up only if the driver is already loaded
// (it is on MLX's CUDA backend; never on the CPU wheel), so the CPU build needs no CUDA.
bool cuda_profiler(bool start) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) {
    return false;
  }
  using Fn = int (*)();
  auto f = reinterpret_cast<Fn>(dlsym(h, start ? "cuProfilerStart" : "cuProfilerStop"));
  bool ok = f != nullptr && f() == 0;
  dlclose(h);
  return ok;
}
size_t active_memory() { return mx::get_active_memory(); }
size_t peak_memory() { return mx::get_peak_memory(); }
void reset_peak_memory() { mx::reset_peak_memory(); }
size_t cache_memory() { return mx::get_cache_memory(); }
void clear_cache() { mx::clear_cache(); }
size_t set_memory_limit(size_t limit) { return mx::set_memory_limit(limit); }
size_t set_cache_limit(size_t limit) { return mx::set_cache_limit(limit); }

// ---- arrays --------------------------------------------------------------------------

ArrayPtr array_from_bytes(rust::Slice<const uint8_t> data, I32s shape, uint8_t code) {
  auto dtype = to_dtype(code);
  auto sh = to_shape(shape);
  size_t n = 1;
  for (auto d : sh) {
    if (d < 0) throw std::invalid_argument("[mlxcel] negative dimension in shape");
    n *= static_cast<size_t>(d);
  }
  if (n * dtype.size() != data.size()) {
    throw std::invalid_argument("[mlxcel] " + std::to_string(data.size()) +
                                " bytes do not fill the shape (" + std::to_string(n) +
                                " elements of " + std::to_string(dtype.size()) + " bytes)");
  }
  const uint8_t* p = data.data();
  switch (code) {
    case 0: return wrap(from_typed<bool>(p, sh, dtype));
    case 1: return wrap(from_typed<uint8_t>(p, sh, dtype));
    case 2: return wrap(from_typed<uint16_t>(p, sh, dtype));
    case 3: return wrap(from_typed<uint32_t>(p, sh, dtype));
    case 4: return wrap(from_typed<uint64_t>(p, sh, dtype));
    case 5: return wrap(from_typed<int8_t>(p, sh, dtype));
    case 6: return wrap(from_typed<int16_t>(p, sh, dtype));
    case 7: return wrap(from_typed<int32_t>(p, sh, dtype));
    case 8: return wrap(from_typed<int64_t>(p, sh, dtype));
    case 9: return wrap(from_typed<mx::float16_t>(p, sh, dtype));
    case 10: return wrap(from_typed<float>(p, sh, dtype));
    case 11: return wrap(from_typed<double>(p, sh, dtype));
    case 12: return wrap(from_typed<mx::bfloat16_t>(p, sh, dtype));
    case 13: return wrap(from_typed<mx::complex64_t>(p, sh, dtype));
  }
  throw std::invalid_argument("[mlxcel] unsupported dtype code");
}

ArrayPtr array_full(I32s shape, double value, uint8_t code) {
  auto dtype = to_dtype(code);
  mx::array v = mx::issubdtype(dtype, mx::integer) || dtype == mx::bool_
                    ? mx::array(static_cast<int64_t>(value), mx::int64)
                    : mx::array(static_cast<float>(value), mx::float32);
  if (mx::issubdtype(dtype, mx::integer) && value >= -2147483648.0 && value <= 2147483647.0) {
    v = mx::array(static_cast<int32_t>(value), mx::int32);
  }
  return wrap(mx::full(to_shape(shape), v, dtype));
}

ArrayPtr array_arange(double start, double stop, double step, uint8_t code) {
  return wrap(mx::arange(start, stop, step, to_dtype(code)));
}

ArrayPtr array_clone(const Array& a) { return wrap(a.inner); }
size_t array_ndim(const Array& a) { return a.inner.ndim(); }
rust::Vec<int32_t> array_shape(const Array& a) {
  rust::Vec<int32_t> out;
  out.reserve(a.inner.ndim());
  for (auto d : a.inner.shape()) out.push_back(d);
  return out;
}
// One dimension without building the shape (the caller checked `axis < ndim`).
int32_t array_dim(const Array& a, size_t axis) { return a.inner.shape()[axis]; }
uint8_t array_dtype(const Array& a) { return from_dtype(a.inner.dtype()); }
size_t array_size(const Array& a) { return a.inner.size(); }
size_t array_nbytes(const Array& a) { return a.inner.nbytes(); }
size_t array_buffer_id(const Array& a) {
  // The allocator's handle of the array's buffer; 0 while MLX has not scheduled the array
  // (no buffer yet). Read without waiting for the array's value.
  if (a.inner.status() == mx::array::Status::unscheduled) return 0;
  return reinterpret_cast<std::uintptr_t>(a.inner.buffer().ptr());
}
size_t array_graph_nodes(const Array& a) {
  // Depth-first over the inputs, stopping at arrays already scheduled (evaluated or
  // available) or without a primitive; an op with several outputs counts once.
  std::unordered_set<std::uintptr_t> seen;
  std::vector<mx::array> stack{a.inner};
  size_t nodes = 0;
  while (!stack.empty()) {
    mx::array x = std::move(stack.back());
    stack.pop_back();
    if (x.status() != mx::array::Status::unscheduled || !x.has_primitive()) continue;
    if (!seen.insert(x.id()).second) continue;
    ++nodes;
    for (const auto& s : x.siblings()) seen.insert(s.id());
    for (const auto& in : x.inputs()) stack.push_back(in);
  }
  return nodes;
}
bool array_is_scheduled(const Array& a) {
  return a.inner.status() != mx::array::Status::unscheduled;
}

// Whether evaluating `a` may launch kernels not launched yet (only then must the kernel disk
// cache's queued compiles be waited for: an evaluated or already queued array launches none).
bool unscheduled(const mx::array& a) { return a.status() == mx::array::Status::unscheduled; }

void array_eval(const Array& a) {
  if (unscheduled(a.inner)) kcache::wait_pending();
  mx::array x = a.inner;
  x.eval();
}

bool array_is_row_contiguous(const Array& a) {
  // The flags are set when the array is computed, so evaluate first.
  if (unscheduled(a.inner)) kcache::wait_pending();
  mx::array x = a.inner;
  x.eval();
  return x.flags().row_contiguous;
}

void array_copy_to(const Array& a, rust::Slice<uint8_t> dst) {
  // Wait for the array itself first: an array queued by async_eval waits on its own event.
  // Only a strided array gets a contiguous copy, and that copy is a new eval whose wait
  // covers everything queued on the stream since (in the pipelined decode loop: the whole
  // next step, which is what made the loop wait a full step for each token).
  // (A strided array's contiguous copy below is MLX's own kernel: nothing to wait for.)
  if (unscheduled(a.inner)) kcache::wait_pending();
  mx::array c = a.inner;
  c.eval();
  if (!c.flags().row_contiguous) {
    c = mx::contiguous(c);
    c.eval();
  }
  if (c.nbytes() != dst.size()) {
    throw std::invalid_argument("[mlxcel] copy_to: array has " + std::to_string(c.nbytes()) +
                                " bytes, destination " + std::to_string(dst.size()));
  }
  if (c.nbytes() > 0) std::memcpy(dst.data(), c.data<uint8_t>(), c.nbytes());
}

rust::String array_to_string(const Array& a) {
  if (unscheduled(a.inner)) kcache::wait_pending();
  std::ostringstream os;
  os << a.inner;
  return rust::String(os.str());
}

// Sized once: a decode step fills ~180 of these (up to ~20 inputs each), and growing a vector
// of arrays one push at a time reallocates and copies its reference-counted handles.
std::unique_ptr<ArrayVec> array_vec_with_capacity(size_t n) {
  auto v = std::make_unique<ArrayVec>();
  v->items.reserve(n);
  return v;
}
void array_vec_push(ArrayVec& v, const Array& a) { v.items.push_back(a.inner); }
size_t array_vec_len(const ArrayVec& v) { return v.items.size(); }
ArrayPtr array_vec_get(const ArrayVec& v, size_t i) {
  if (i >= v.items.size()) throw std::out_of_range("[mlxcel] ArrayVec index out of range");
  return wrap(v.items[i]);
}
// An evaluation that may launch new kernels first waits for the kernel disk cache's queued
// compiles (kernel_disk_cache.h): MLX then finds their images instead of compiling them itself.
void wait_for_compiles(const ArrayVec& v) {
  for (const auto& a : v.items) {
    if (unscheduled(a)) {
      kcache::wait_pending();
      return;
    }
  }
}
void eval_all(const ArrayVec& v) {
  wait_for_compiles(v);
  mx::eval(v.items);
}
void async_eval_all(const ArrayVec& v) {
  wait_for_compiles(v);
  mx::async_eval(v.items);
}

// ---- elementwise, reductions, shapes ---------------------------------------------------

// Op codes shared with src/mlx/ops.rs (UnaryOp, BinaryOp, ReduceOp).
ArrayPtr unary(uint8_t op, const Array& a) {
  const auto& x = a.inner;
  switch (op) {
    case 0: return wrap(mx::negative(x));
    case 1: return wrap(mx::abs(x));
    case 2: return wrap(mx::exp(x));
    case 3: return wrap(mx::log(x));
    case 4: return wrap(mx::sqrt(x));
    case 5: return wrap(mx::rsqrt(x));
    case 6: return wrap(mx::sin(x));
    case 7: return wrap(mx::cos(x));
    case 8: return wrap(mx::tanh(x));
    case 9: return wrap(mx::sigmoid(x));
    case 10: return wrap(mx::floor(x));
    case 11: return wrap(mx::ceil(x));
    case 12: return wrap(mx::round(x));
    case 13: return wrap(mx::logical_not(x));
    case 14: return wrap(mx::erf(x));
    case 15: return wrap(mx::square(x));
    case 16: return wrap(mx::reciprocal(x));
    case 17: return wrap(mx::bitwise_invert(x));
    case 18: return wrap(mx::sign(x));
    case 19: return wrap(mx::log1p(x));
    case 20: return wrap(mx::isnan(x));
    case 21: return wrap(mx::stop_gradient(x));
    case 22: return wrap(mx::copy(x));
    case 23: return wrap(mx::isinf(x));
  }
  throw std::invalid_argument("[mlxcel] unknown unary op code " + std::to_string(op));
}

ArrayPtr binary(uint8_t op, const Array& a, const Array& b) {
  const auto& x = a.inner;
  const auto& y = b.inner;
  switch (op) {
    case 0: return wrap(mx::add(x, y));
    case 1: return wrap(mx::subtract(x, y));
    case 2: return wrap(mx::multiply(x, y));
    case 3: return wrap(mx::divide(x, y));
    case 4: return wrap(mx::maximum(x, y));
    case 5: return wrap(mx::minimum(x, y));
    case 6: return wrap(mx::power(x, y));
    case 7: return wrap(mx::equal(x, y));
    case 8: return wrap(mx::not_equal(x, y));
    case 9: return wrap(mx::less(x, y));
    case 10: return wrap(mx::less_equal(x, y));
    case 11: return wrap(mx::greater(x, y));
    case 12: return wrap(mx::greater_equal(x, y));
    case 13: return wrap(mx::logical_and(x, y));
    case 14: return wrap(mx::logical_or(x, y));
    case 15: return wrap(mx::bitwise_and(x, y));
    case 16: return wrap(mx::bitwise_or(x, y));
    case 17: return wrap(mx::bitwise_xor(x, y));
    case 18: return wrap(mx::left_shift(x, y));
    case 19: return wrap(mx::right_shift(x, y));
    case 20: return wrap(mx::remainder(x, y));
    case 21: return wrap(mx::floor_divide(x, y));
    case 22: return wrap(mx::logaddexp(x, y));
  }
  throw std::invalid_argument("[mlxcel] unknown binary op code " + std::to_string(op));
}

ArrayPtr reduce(uint8_t op, const Array& a, I32s axes_s, bool keepdims) {
  auto axes = to_ints(axes_s);
  const auto& x = a.inner;
  auto single_axis = [&]() {
    if (axes.size() != 1) {
      throw std::invalid_argument("[mlxcel] argmax/argmin take exactly one axis");
    }
    return axes[0];
  };
  switch (op) {
    case 0: return wrap(mx::sum(x, axes, keepdims));
    case 1: return wrap(mx::mean(x, axes, keepdims));
    case 2: return wrap(mx::max(x, axes, keepdims));
    case 3: return wrap(mx::min(x, axes, keepdims));
    case 4: return wrap(mx::prod(x, axes, keepdims));
    case 5: return wrap(mx::argmax(x, single_axis(), keepdims));
    case 6: return wrap(mx::argmin(x, single_axis(), keepdims));
    case 7: return wrap(mx::logsumexp(x, axes, keepdims));
    case 8: return wrap(mx::all(x, axes, keepdims));
    case 9: return wrap(mx::any(x, axes, keepdims));
  }
  throw std::invalid_argument("[mlxcel] unknown reduce op code " + std::to_string(op));
}

ArrayPtr astype(const Array& a, uint8_t dtype) { return wrap(mx::astype(a.inner, to_dtype(dtype))); }
ArrayPtr where_(const Array& c, const Array& x, const Array& y) {
  return wrap(mx::where(c.inner, x.inner, y.inner));
}
ArrayPtr matmul(const Array& a, const Array& b) { return wrap(mx::matmul(a.inner, b.inner)); }
ArrayPtr softmax(const Array& a, I32s axes, bool precise) {
  return wrap(mx::softmax(a.inner, to_ints(axes), precise));
}
ArrayPtr cumsum(const Array& a, int32_t axis, bool reverse, bool inclusive) {
  return wrap(mx::cumsum(a.inner, axis, reverse, inclusive));
}
ArrayPtr argsort(const Array& a, int32_t axis) { return wrap(mx::argsort(a.inner, axis)); }
ArrayPtr sort(const Array& a, int32_t axis) { return wrap(mx::sort(a.inner, axis)); }
ArrayPtr argpartition(const Array& a, int32_t kth, int32_t axis) {
  return wrap(mx::argpartition(a.inner, kth, axis));
}
ArrayPtr topk(const Array& a, int32_t k, int32_t axis) { return wrap(mx::topk(a.inner, k, axis)); }
ArrayPtr clip(const Array& a, const Array& lo, const Array& hi) {
  return wrap(mx::clip(a.inner, lo.inner, hi.inner));
}

ArrayPtr reshape(const Array& a, I32s shape) { return wrap(mx::reshape(a.inner, to_shape(shape))); }
ArrayPtr transpose(const Array& a, I32s axes) { return wrap(mx::transpose(a.inner, to_ints(axes))); }
ArrayPtr expand_dims(const Array& a, I32s axes) {
  return wrap(mx::expand_dims(a.inner, to_ints(axes)));
}
ArrayPtr squeeze(const Array& a, I32s axes) { return wrap(mx::squeeze(a.inner, to_ints(axes))); }
ArrayPtr broadcast_to(const Array& a, I32s shape) {
  return wrap(mx::broadcast_to(a.inner, to_shape(shape)));
}
ArrayPtr contiguous(const Array& a) { return wrap(mx::contiguous(a.inner)); }
ArrayPtr slice(const Array& a, I32s start, I32s stop, I32s strides) {
  return wrap(mx::slice(a.inner, to_shape(start), to_shape(stop), to_shape(strides)));
}
ArrayPtr slice_update(const Array& src, const Array& update, I32s start, I32s stop, I32s strides) {
  return wrap(mx::slice_update(src.inner, update.inner, to_shape(start), to_shape(stop),
                               to_shape(strides)));
}
ArrayPtr slice_update_dynamic(const Array& src, const Array& update, const Array& start,
                              I32s axes) {
  return wrap(mx::slice_update(src.inner, update.inner, start.inner, to_ints(axes)));
}
ArrayPtr concatenate(const ArrayVec& v, int32_t axis) { return wrap(mx::concatenate(v.items, axis)); }
ArrayPtr stack(const ArrayVec& v, int32_t axis) { return wrap(mx::stack(v.items, axis)); }
std::unique_ptr<ArrayVec> split_sections(const Array& a, I32s indices, int32_t axis) {
  auto out = std::make_unique<ArrayVec>();
  out->items = mx::split(a.inner, to_shape(indices), axis);
  return out;
}
ArrayPtr take(const Array& a, const Array& indices, int32_t axis) {
  return wrap(mx::take(a.inner, indices.inner, axis));
}
ArrayPtr take_along_axis(const Array& a, const Array& indices, int32_t axis) {
  return wrap(mx::take_along_axis(a.inner, indices.inner, axis));
}
ArrayPtr put_along_axis(const Array& a, const Array& indices, const Array& values, int32_t axis) {
  return wrap(mx::put_along_axis(a.inner, indices.inner, values.inner, axis));
}

// ---- quantization, transforms -------------------------------------------------------------

std::unique_ptr<ArrayVec> quantize(const Array& w, int32_t group_size, int32_t bits) {
  auto out = std::make_unique<ArrayVec>();
  out->items = mx::quantize(w.inner, group_size, bits, "affine");
  return out;
}

ArrayPtr dequantize(const Array& w, const Array& scales, const Array& biases, int32_t group_size,
                    int32_t bits, uint8_t dtype) {
  return wrap(mx::dequantize(w.inner, scales.inner, biases.inner, group_size, bits, "affine",
                             std::nullopt, to_dtype(dtype)));
}

ArrayPtr quantized_matmul(const Array& x, const Array& w, const Array& scales, const Array& biases,
                          bool transpose, int32_t group_size, int32_t bits) {
  return wrap(mx::quantized_matmul(x.inner, w.inner, scales.inner, biases.inner, transpose,
                                   group_size, bits, "affine"));
}

ArrayPtr hadamard_transform(const Array& a, bool has_scale, float scale) {
  return wrap(mx::hadamard_transform(a.inner, has_scale ? std::optional<float>(scale)
                                                        : std::nullopt));
}

// ---- fast ops -----------------------------------------------------------------------------

ArrayPtr rms_norm(const Array& x, const Array& weight, bool has_weight, float eps) {
  return wrap(mx::fast::rms_norm(
      x.inner, has_weight ? std::optional<mx::array>(weight.inner) : std::nullopt, eps));
}

ArrayPtr rope(const Array& x, int32_t dims, bool traditional, float base, float scale,
              int32_t offset) {
  return wrap(mx::fast::rope(x.inner, dims, traditional, base, scale, offset));
}

ArrayPtr rope_array_offset(const Array& x, int32_t dims, bool traditional, float base, float scale,
                           const Array& offset) {
  return wrap(mx::fast::rope(x.inner, dims, traditional, base, scale, offset.inner));
}

ArrayPtr rope_freqs(const Array& x, int32_t dims, bool traditional, float scale, const Array& offset,
                    const Array& freqs) {
  return wrap(
      mx::fast::rope(x.inner, dims, traditional, std::nullopt, scale, offset.inner, freqs.inner));
}

ArrayPtr sdpa(const Array& q, const Array& k, const Array& v, float scale, rust::Str mask_mode) {
  return wrap(mx::fast::scaled_dot_product_attention(q.inner, k.inner, v.inner, scale,
                                                     std::string(mask_mode)));
}

ArrayPtr sdpa_masked(const Array& q, const Array& k, const Array& v, float scale,
                     const Array& mask) {
  return wrap(
      mx::fast::scaled_dot_product_attention(q.inner, k.inner, v.inner, scale, "array", mask.inner));
}

// ---- custom kernels --------------------------------------------------------------------------

namespace {
std::vector<std::string> to_strings(const rust::Vec<rust::String>& v) {
  std::vector<std::string> out;
  out.reserve(v.size());
  for (const auto& s : v) out.emplace_back(std::string(s));
  return out;
}
} // namespace

std::unique_ptr<KernelFn> cuda_kernel_new(rust::Str name, rust::Vec<rust::String> input_names,
                                          rust::Vec<rust::String> output_names, rust::Str source,
                                          rust::Str header, bool ensure_row_contiguous,
                                          int32_t shared_memory) {
  auto fn = mx::fast::cuda_kernel(std::string(name), to_strings(input_names),
                                  to_strings(output_names), std::string(source),
                                  std::string(header), ensure_row_contiguous, shared_memory);
  return std::make_unique<KernelFn>(KernelFn{std::move(fn), true, {}});
}

std::unique_ptr<KernelFn> metal_kernel_new(rust::Str name, rust::Vec<rust::String> input_names,
                                           rust::Vec<rust::String> output_names, rust::Str source,
                                           rust::Str header, bool ensure_row_contiguous,
                                           bool atomic_outputs) {
  auto fn = mx::fast::metal_kernel(std::string(name), to_strings(input_names),
                                   to_strings(output_names), std::string(source),
                                   std::string(header), ensure_row_contiguous, atomic_outputs);
  return std::make_unique<KernelFn>(KernelFn{std::move(fn), false, {}});
}

namespace {
// kernel_call's last disk-cache note on this thread (take_kernel_cache_note).
std::string& kernel_cache_note() {
  thread_local std::string note;
  return note;
}

// FNV-1a over everything MLX 0.32's CUDA custom-kernel primitive holds besides what the
// kernel object fixes (name, header, body, contiguity, shared memory): what build_kernel
// (backend/cuda/custom_kernel.cpp) makes the text and name from (template argument names
// and values, each input's dtype and whether it has dimensions, the output dtypes), and
// the launch's grid, threadgroup and init value.
uint64_t primitive_key(const ArrayVec& inputs, rust::Slice<const uint8_t> output_dtypes,
                       rust::Slice<const rust::Str> template_names,
                       rust::Slice<const uint8_t> template_kinds, I32s template_values,
                       I32s grid, I32s threadgroup, float init_value, bool has_init_value) {
  uint64_t h = 1469598103934665603ull;
  auto mix_byte = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  auto mix = [&mix_byte](uint64_t v) {
    for (int i = 0; i < 8; ++i) mix_byte(static_cast<unsigned char>(v >> (8 * i)));
  };
  for (size_t i = 0; i < template_names.size(); ++i) {
    // One round per character (names are short ASCII), the length closing each name.
    for (unsigned char c : template_names[i]) mix_byte(c);
    mix(template_names[i].size());
    mix(template_kinds[i]);
    mix(static_cast<uint32_t>(template_values[i]));
  }
  mix(0xfeedull);
  for (const auto& a : inputs.items) {
    mix(static_cast<uint64_t>(a.dtype().val()));
    mix(a.ndim() > 0);
  }
  mix(0xbeefull);
  for (auto d : output_dtypes) mix(d);
  // A primitive carries the stream it was made on: a launch on another default stream (the
  // submit thread's shared one, mlx/submit.rs) needs its own.
  mix(0x5eedull);
  mix(static_cast<uint32_t>(mx::default_stream(mx::default_device()).index));
  for (auto g : grid) mix(static_cast<uint32_t>(g));
  for (auto t : threadgroup) mix(static_cast<uint32_t>(t));
  uint32_t init_bits = 0;
  std::memcpy(&init_bits, &init_value, sizeof(init_bits));
  mix(has_init_value ? (0x100000000ull | init_bits) : 0);
  return h;
}
} // namespace

std::unique_ptr<ArrayVec> kernel_call(const KernelFn& k, const ArrayVec& inputs, I32s output_shapes,
                                      I32s output_ranks, rust::Slice<const uint8_t> output_dtypes,
                                      I32s grid, I32s threadgroup,
                                      rust::Slice<const rust::Str> template_names,
                                      rust::Slice<const uint8_t> template_kinds,
                                      I32s template_values, float init_value, bool has_init_value,
                                      bool verbose, bool cache_primitive,
                                      bool disk_cache) {
  if (grid.size() != 3 || threadgroup.size() != 3) {
    throw std::invalid_argument("[mlxcel] kernel grid and threadgroup must have 3 entries");
  }
  if (output_ranks.size() != output_dtypes.size()) {
    throw std::invalid_argument("[mlxcel] one rank per output dtype expected");
  }
  std::vector<mx::Shape> shapes;
  shapes.reserve(output_ranks.size());
  size_t pos = 0;
  for (auto r : output_ranks) {
    if (r < 0 || pos + static_cast<size_t>(r) > output_shapes.size()) {
      throw std::invalid_argument("[mlxcel] kernel output shapes do not match their ranks");
    }
    shapes.emplace_back(output_shapes.begin() + pos, output_shapes.begin() + pos + r);
    pos += r;
  }
  std::vector<mx::Dtype> dtypes;
  dtypes.reserve(output_dtypes.size());
  for (auto d : output_dtypes) dtypes.push_back(to_dtype(d));
  if (template_names.size() != template_kinds.size() ||
      template_names.size() != template_values.size()) {
    throw std::invalid_argument("[mlxcel] template names, kinds and values differ in length");
  }
  // A CUDA launch of an instantiation MLX has built before with the same grid, threadgroup
  // and init value: new output arrays on MLX's own primitive object from that launch,
  // instead of having MLX regenerate the kernel text (its CustomKernel is immutable; the
  // inputs and outputs come with each eval_gpu call).
  const bool cacheable = cache_primitive && k.is_cuda && !verbose;
  uint64_t key = 0;
  if (cacheable) {
    key = primitive_key(inputs, output_dtypes, template_names, template_kinds, template_values,
                        grid, threadgroup, init_value, has_init_value);
    auto hit = k.primitives.find(key);
    if (hit != k.primitives.end()) {
      auto out = std::make_unique<ArrayVec>();
      out->items = mx::array::make_arrays(std::move(shapes), dtypes, hit->second, inputs.items);
      return out;
    }
  }
  std::vector<std::pair<std::string, mx::fast::TemplateArg>> targs;
  for (size_t i = 0; i < template_names.size(); ++i) {
    std::string n(template_names[i]);
    switch (template_kinds[i]) {
      case 0: targs.emplace_back(n, mx::fast::TemplateArg(static_cast<int>(template_values[i]))); break;
      case 1: targs.emplace_back(n, mx::fast::TemplateArg(template_values[i] != 0)); break;
      case 2:
        targs.emplace_back(n, mx::fast::TemplateArg(to_dtype(static_cast<uint8_t>(template_values[i]))));
        break;
      default: throw std::invalid_argument("[mlxcel] unknown template argument kind");
    }
  }
  auto out = std::make_unique<ArrayVec>();
  out->items = k.fn(inputs.items, shapes, dtypes, {grid[0], grid[1], grid[2]},
                    {threadgroup[0], threadgroup[1], threadgroup[2]}, targs,
                    has_init_value ? std::optional<float>(init_value) : std::nullopt, verbose,
                    mx::StreamOrDevice{});
  if (cacheable && !out->items.empty() && out->items[0].has_primitive()) {
    k.primitives.emplace(key, out->items[0].primitive_ptr());
  }
  // A new instantiation (or, without the primitive cache, every launch): put its compiled
  // module where MLX reads it, before MLX evaluates the launch (kernel_disk_cache.h).
  kernel_cache_note().clear();
  if (disk_cache && k.is_cuda && !out->items.empty()) {
    kernel_cache_note() = kcache::ensure_cached(out->items[0]);
  }
  return out;
}

rust::String take_kernel_cache_note() {
  std::string note = kernel_cache_note();
  kernel_cache_note().clear();
  if (note.empty()) note = kcache::take_failure();
  return rust::String(note);
}

NvrtcOutcome nvrtc_compile_check(rust::Str source, rust::Str name_expr, rust::Str arch,
                                 rust::Vec<rust::String> include_dirs, rust::Str nvrtc_lib) {
  auto c = kcache::nvrtc_compile(std::string(source), std::string(name_expr), std::string(arch),
                                 to_strings(include_dirs), std::string(nvrtc_lib));
  return NvrtcOutcome{c.ok, rust::String(c.lowered), c.image.size(), rust::String(c.log)};
}

void kernel_cache_queue(rust::Str name, rust::Str source, rust::Str image, rust::Str arch,
                        rust::Vec<rust::String> include_dirs, rust::Str nvrtc_lib) {
  kcache::queue_compile(std::string(name), std::string(source), std::string(image),
                        std::string(arch), to_strings(include_dirs), std::string(nvrtc_lib));
}
void kernel_cache_wait() { kcache::wait_pending(); }
rust::Vec<uint64_t> kernel_cache_stats() {
  rust::Vec<uint64_t> v;
  for (auto x : kcache::stats()) v.push_back(x);
  return v;
}
rust::String kernel_cache_take_failure() { return rust::String(kcache::take_failure()); }

rust::String kernel_ptx_cache_dir() { return rust::String(kcache::ptx_cache_dir_path()); }

rust::String kernel_module_image_path(rust::Str dir, rust::Str module) {
  return rust::String(kcache::module_image_path(std::string(dir), std::string(module)));
}

// ---- random ---------------------------------------------------------------------------------

namespace {
std::optional<mx::array> opt_key(const Array& key, bool has_key) {
  return has_key ? std::optional<mx::array>(key.inner) : std::nullopt;
}
} // namespace

void random_seed(uint64_t seed) { mx::random::seed(seed); }
ArrayPtr random_key(uint64_t seed) { return wrap(mx::random::key(seed)); }
ArrayPtr random_split(const Array& key, int32_t num) {
  return wrap(mx::random::split(key.inner, num));
}
ArrayPtr random_normal(I32s shape, uint8_t dtype, const Array& key, bool has_key) {
  return wrap(mx::random::normal(to_shape(shape), to_dtype(dtype), opt_key(key, has_key)));
}
ArrayPtr random_uniform(I32s shape, uint8_t dtype, const Array& key, bool has_key) {
  return wrap(mx::random::uniform(to_shape(shape), to_dtype(dtype), opt_key(key, has_key)));
}
ArrayPtr random_categorical(const Array& logits, int32_t axis, const Array& key, bool has_key) {
  return wrap(mx::random::categorical(logits.inner, axis, opt_key(key, has_key)));
}

// ---- files ----------------------------------------------------------------------------------

std::unique_ptr<TensorFile> load_safetensors(rust::Str path) {
  auto [arrays, meta] = mx::load_safetensors(std::string(path));
  auto f = std::make_unique<TensorFile>();
  for (auto& [k, v] : arrays) {
    f->names.push_back(k);
    f->arrays.emplace(k, v);
  }
  for (auto& [k, v] : meta) {
    f->meta_keys.push_back(k);
    f->meta.emplace(k, mx::GGUFMetaData(v));
  }
  std::sort(f->names.begin(), f->names.end());
  std::sort(f->meta_keys.begin(), f->meta_keys.end());
  return f;
}

std::unique_ptr<TensorFile> load_gguf(rust::Str path) {
  auto [arrays, meta] = mx::load_gguf(std::string(path));
  auto f = std::make_unique<TensorFile>();
  for (auto& [k, v] : arrays) {
    f->names.push_back(k);
    f->arrays.emplace(k, v);
  }
  for (auto& [k, v] : meta) {
    f->meta_keys.push_back(k);
    f->meta.emplace(k, v);
  }
  std::sort(f->names.begin(), f->names.end());
  std::sort(f->meta_keys.begin(), f->meta_keys.end());
  return f;
}

rust::Vec<rust::String> tensor_file_names(const TensorFile& f) {
  rust::Vec<rust::String> out;
  for (const auto& n : f.names) out.push_back(rust::String(n));
  return out;
}

ArrayPtr tensor_file_get(const TensorFile& f, rust::Str name) {
  auto it = f.arrays.find(std::string(name));
  if (it == f.arrays.end()) {
    throw std::out_of_range("[mlxcel] no tensor named '" + std::string(name) + "' in the file");
  }
  return wrap(it->second);
}

rust::Vec<rust::String> tensor_file_meta_keys(const TensorFile& f) {
  rust::Vec<rust::String> out;
  for (const auto& k : f.meta_keys) out.push_back(rust::String(k));
  return out;
}

uint8_t tensor_file_meta_kind(const TensorFile& f, rust::Str key) {
  auto it = f.meta.find(std::string(key));
  if (it == f.meta.end()) return 0;
  const auto& v = it->second;
  if (std::holds_alternative<std::string>(v)) return 1;
  if (std::holds_alternative<std::vector<std::string>>(v)) return 2;
  if (std::holds_alternative<mx::array>(v)) return 3;
  return 0;
}

namespace {
const mx::GGUFMetaData& meta_of(const TensorFile& f, rust::Str key) {
  auto it = f.meta.find(std::string(key));
  if (it == f.meta.end()) {
    throw std::out_of_range("[mlxcel] no metadata key '" + std::string(key) + "'");
  }
  return it->second;
}
} // namespace

rust::String tensor_file_meta_string(const TensorFile& f, rust::Str key) {
  const auto& v = meta_of(f, key);
  if (!std::holds_alternative<std::string>(v)) {
    throw std::invalid_argument("[mlxcel] metadata '" + std::string(key) + "' is not a string");
  }
  return rust::String(std::get<std::string>(v));
}

rust::Vec<rust::String> tensor_file_meta_strings(const TensorFile& f, rust::Str key) {
  const auto& v = meta_of(f, key);
  if (!std::holds_alternative<std::vector<std::string>>(v)) {
    throw std::invalid_argument("[mlxcel] metadata '" + std::string(key) +
                                "' is not a list of strings");
  }
  rust::Vec<rust::String> out;
  for (const auto& s : std::get<std::vector<std::string>>(v)) {
    // GGUF token lists may hold bytes that are not UTF-8; keep them lossily.
    out.push_back(rust::String::lossy(s));
  }
  return out;
}

ArrayPtr tensor_file_meta_array(const TensorFile& f, rust::Str key) {
  const auto& v = meta_of(f, key);
  if (!std::holds_alternative<mx::array>(v)) {
    throw std::invalid_argument("[mlxcel] metadata '" + std::string(key) + "' is not an array");
  }
  return wrap(std::get<mx::array>(v));
}

namespace {
std::unordered_map<std::string, mx::array> to_map(const rust::Vec<rust::String>& names,
                                                  const ArrayVec& arrays) {
  if (names.size() != arrays.items.size()) {
    throw std::invalid_argument("[mlxcel] one name per array expected");
  }
  std::unordered_map<std::string, mx::array> m;
  for (size_t i = 0; i < names.size(); ++i) m.emplace(std::string(names[i]), arrays.items[i]);
  return m;
}
} // namespace

void save_safetensors(rust::Str path, rust::Vec<rust::String> names, const ArrayVec& arrays,
                      rust::Vec<rust::String> meta_keys, rust::Vec<rust::String> meta_values) {
  if (meta_keys.size() != meta_values.size()) {
    throw std::invalid_argument("[mlxcel] one value per metadata key expected");
  }
  std::unordered_map<std::string, std::string> meta;
  for (size_t i = 0; i < meta_keys.size(); ++i) {
    meta.emplace(std::string(meta_keys[i]), std::string(meta_values[i]));
  }
  kcache::wait_pending();
  mx::save_safetensors(std::string(path), to_map(names, arrays), meta);
}

void save_gguf(rust::Str path, rust::Vec<rust::String> names, const ArrayVec& arrays,
               rust::Vec<rust::String> meta_string_keys, rust::Vec<rust::String> meta_string_values,
               rust::Vec<rust::String> meta_array_keys, const ArrayVec& meta_arrays) {
  if (meta_string_keys.size() != meta_string_values.size() ||
      meta_array_keys.size() != meta_arrays.items.size()) {
    throw std::invalid_argument("[mlxcel] one value per metadata key expected");
  }
  std::unordered_map<std::string, mx::GGUFMetaData> meta;
  for (size_t i = 0; i < meta_string_keys.size(); ++i) {
    meta.emplace(std::string(meta_string_keys[i]), std::string(meta_string_values[i]));
  }
  for (size_t i = 0; i < meta_array_keys.size(); ++i) {
    meta.emplace(std::string(meta_array_keys[i]), meta_arrays.items[i]);
  }
  kcache::wait_pending();
  mx::save_gguf(std::string(path), to_map(names, arrays), meta);
}

} // namespace mlxcel
