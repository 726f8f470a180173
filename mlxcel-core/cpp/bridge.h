// Thin C++ glue between the cxx bridge (src/mlx/ffi.rs) and MLX's C++ API.
// Every function that may throw is declared `Result<...>` on the Rust side; the
// trycatch below turns any C++ exception into a Rust Err with its message.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "mlx/mlx.h"
#include "rust/cxx.h"

namespace rust {
namespace behavior {
// Overrides cxx's default so that exceptions not derived from std::exception are
// caught too: no C++ exception may unwind into Rust.
template <typename Try, typename Fail>
static void trycatch(Try&& func, Fail&& fail) noexcept try {
  func();
} catch (const std::exception& e) {
  fail(e.what());
} catch (...) {
  fail("unknown C++ exception thrown inside MLX");
}
} // namespace behavior
} // namespace rust

namespace mlxcel {

struct Array {
  mlx::core::array inner;
  explicit Array(mlx::core::array a) : inner(std::move(a)) {}
};

struct ArrayVec {
  std::vector<mlx::core::array> items;
};

struct KernelFn {
  mlx::core::fast::CustomKernelFunction fn;
  bool is_cuda;
  // CUDA: the primitive MLX built at the first launch of each instantiation and launch
  // shape, keyed by a hash of everything it depends on (kernel_call, `cache_primitive`).
  mutable std::unordered_map<uint64_t, std::shared_ptr<mlx::core::Primitive>> primitives;
};

struct TensorFile {
  std::vector<std::string> names;
  std::unordered_map<std::string, mlx::core::array> arrays;
  std::vector<std::string> meta_keys;
  std::unordered_map<std::string, mlx::core::GGUFMetaData> meta;
};

using ArrayPtr = std::unique_ptr<Array>;
using I32s = rust::Slice<const int32_t>;

// library, devices, memory
rust::String mlx_version();
rust::String mlx_library_path();
rust::String gpu_backend();
int32_t device_count(bool gpu);
bool default_device_is_gpu();
void set_default_device(bool gpu, int32_t index);
rust::Vec<rust::String> device_info(bool gpu, int32_t index);
void synchronize();
int32_t stream_new_shared();
int32_t stream_default_index();
void stream_set_default(int32_t index);
bool cuda_profiler(bool start);
size_t active_memory();
size_t peak_memory();
void reset_peak_memory();
size_t cache_memory();
void clear_cache();
size_t set_memory_limit(size_t limit);
size_t set_cache_limit(size_t limit);

// arrays
ArrayPtr array_from_bytes(rust::Slice<const uint8_t> data, I32s shape, uint8_t dtype);
ArrayPtr array_full(I32s shape, double value, uint8_t dtype);
ArrayPtr array_arange(double start, double stop, double step, uint8_t dtype);
ArrayPtr array_clone(const Array& a);
size_t array_ndim(const Array& a);
rust::Vec<int32_t> array_shape(const Array& a);
int32_t array_dim(const Array& a, size_t axis);
uint8_t array_dtype(const Array& a);
size_t array_size(const Array& a);
size_t array_nbytes(const Array& a);
size_t array_graph_nodes(const Array& a);
size_t array_buffer_id(const Array& a);
bool array_is_scheduled(const Array& a);
void array_eval(const Array& a);
bool array_is_row_contiguous(const Array& a);
void array_copy_to(const Array& a, rust::Slice<uint8_t> dst);
rust::String array_to_string(const Array& a);

std::unique_ptr<ArrayVec> array_vec_with_capacity(size_t n);
void array_vec_push(ArrayVec& v, const Array& a);
size_t array_vec_len(const ArrayVec& v);
ArrayPtr array_vec_get(const ArrayVec& v, size_t i);
void eval_all(const ArrayVec& v);
void async_eval_all(const ArrayVec& v);

// elementwise, reductions, shapes
ArrayPtr unary(uint8_t op, const Array& a);
ArrayPtr binary(uint8_t op, const Array& a, const Array& b);
ArrayPtr reduce(uint8_t op, const Array& a, I32s axes, bool keepdims);
ArrayPtr astype(const Array& a, uint8_t dtype);
ArrayPtr where_(const Array& c, const Array& x, const Array& y);
ArrayPtr matmul(const Array& a, const Array& b);
ArrayPtr softmax(const Array& a, I32s axes, bool precise);
ArrayPtr cumsum(const Array& a, int32_t axis, bool reverse, bool inclusive);
ArrayPtr argsort(const Array& a, int32_t axis);
ArrayPtr sort(const Array& a, int32_t axis);
ArrayPtr argpartition(const Array& a, int32_t kth, int32_t axis);
ArrayPtr topk(const Array& a, int32_t k, int32_t axis);
ArrayPtr clip(const Array& a, const Array& lo, const Array& hi);

ArrayPtr reshape(const Array& a, I32s shape);
ArrayPtr transpose(const Array& a, I32s axes);
ArrayPtr expand_dims(const Array& a, I32s axes);
ArrayPtr squeeze(const Array& a, I32s axes);
ArrayPtr broadcast_to(const Array& a, I32s shape);
ArrayPtr contiguous(const Array& a);
ArrayPtr slice(const Array& a, I32s start, I32s stop, I32s strides);
ArrayPtr slice_update(const Array& src, const Array& update, I32s start, I32s stop, I32s strides);
ArrayPtr slice_update_dynamic(const Array& src, const Array& update, const Array& start, I32s axes);
ArrayPtr concatenate(const ArrayVec& v, int32_t axis);
ArrayPtr stack(const ArrayVec& v, int32_t axis);
std::unique_ptr<ArrayVec> split_sections(const Array& a, I32s indices, int32_t axis);
ArrayPtr take(const Array& a, const Array& indices, int32_t axis);
ArrayPtr take_along_axis(const Array& a, const Array& indices, int32_t axis);
ArrayPtr put_along_axis(const Array& a, const Array& indices, const Array& values, int32_t axis);

// quantization, transforms
std::unique_ptr<ArrayVec> quantize(const Array& w, int32_t group_size, int32_t bits);
ArrayPtr dequantize(const Array& w, const Array& scales, const Array& biases, int32_t group_size,
                    int32_t bits, uint8_t dtype);
ArrayPtr quantized_matmul(const Array& x, const Array& w, const Array& scales, const Array& biases,
                          bool transpose, int32_t group_size, int32_t bits);
ArrayPtr hadamard_transform(const Array& a, bool has_scale, float scale);

// fast ops
ArrayPtr rms_norm(const Array& x, const Array& weight, bool has_weight, float eps);
ArrayPtr rope(const Array& x, int32_t dims, bool traditional, float base, float scale, int32_t offset);
ArrayPtr rope_array_offset(const Array& x, int32_t dims, bool traditional, float base, float scale,
                           const Array& offset);
ArrayPtr rope_freqs(const Array& x, int32_t dims, bool traditional, float scale, const Array& offset,
                    const Array& freqs);
ArrayPtr sdpa(const Array& q, const Array& k, const Array& v, float scale, rust::Str mask_mode);
ArrayPtr sdpa_masked(const Array& q, const Array& k, const Array& v, float scale, const Array& mask);

// custom kernels
std::unique_ptr<KernelFn> cuda_kernel_new(rust::Str name, rust::Vec<rust::String> input_names,
                                          rust::Vec<rust::String> output_names, rust::Str source,
                                          rust::Str header, bool ensure_row_contiguous,
                                          int32_t shared_memory);
std::unique_ptr<KernelFn> metal_kernel_new(rust::Str name, rust::Vec<rust::String> input_names,
                                           rust::Vec<rust::String> output_names, rust::Str source,
                                           rust::Str header, bool ensure_row_contiguous,
                                           bool atomic_outputs);
std::unique_ptr<ArrayVec> kernel_call(const KernelFn& k, const ArrayVec& inputs, I32s output_shapes,
                                      I32s output_ranks, rust::Slice<const uint8_t> output_dtypes,
                                      I32s grid, I32s threadgroup,
                                      rust::Slice<const rust::Str> template_names,
                                      rust::Slice<const uint8_t> template_kinds,
                                      I32s template_values, float init_value, bool has_init_value,
                                      bool verbose, bool cache_primitive,
                                      bool disk_cache);
rust::String take_kernel_cache_note();
struct NvrtcOutcome;
NvrtcOutcome nvrtc_compile_check(rust::Str source, rust::Str name_expr, rust::Str arch,
                                 rust::Vec<rust::String> include_dirs, rust::Str nvrtc_lib);
rust::String kernel_module_image_path(rust::Str dir, rust::Str module);
rust::String kernel_ptx_cache_dir();
void kernel_cache_queue(rust::Str name, rust::Str source, rust::Str image, rust::Str arch,
                        rust::Vec<rust::String> include_dirs, rust::Str nvrtc_lib);
void kernel_cache_wait();
rust::Vec<uint64_t> kernel_cache_stats();
rust::String kernel_cache_take_failure();

// random
void random_seed(uint64_t seed);
ArrayPtr random_key(uint64_t seed);
ArrayPtr random_split(const Array& key, int32_t num);
ArrayPtr random_normal(I32s shape, uint8_t dtype, const Array& key, bool has_key);
ArrayPtr random_uniform(I32s shape, uint8_t dtype, const Array& key, bool has_key);
ArrayPtr random_categorical(const Array& logits, int32_t axis, const Array& key, bool has_key);

// files
std::unique_ptr<TensorFile> load_safetensors(rust::Str path);
std::unique_ptr<TensorFile> load_gguf(rust::Str path);
rust::Vec<rust::String> tensor_file_names(const TensorFile& f);
ArrayPtr tensor_file_get(const TensorFile& f, rust::Str name);
rust::Vec<rust::String> tensor_file_meta_keys(const TensorFile& f);
uint8_t tensor_file_meta_kind(const TensorFile& f, rust::Str key);
rust::String tensor_file_meta_string(const TensorFile& f, rust::Str key);
rust::Vec<rust::String> tensor_file_meta_strings(const TensorFile& f, rust::Str key);
ArrayPtr tensor_file_meta_array(const TensorFile& f, rust::Str key);
void save_safetensors(rust::Str path, rust::Vec<rust::String> names, const ArrayVec& arrays,
                      rust::Vec<rust::String> meta_keys, rust::Vec<rust::String> meta_values);
void save_gguf(rust::Str path, rust::Vec<rust::String> names, const ArrayVec& arrays,
               rust::Vec<rust::String> meta_string_keys, rust::Vec<rust::String> meta_string_values,
               rust::Vec<rust::String> meta_array_keys, const ArrayVec& meta_arrays);

} // namespace mlxcel
