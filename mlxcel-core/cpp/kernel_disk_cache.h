// A disk cache for the compiled CUDA custom kernels, in the place MLX already reads.
//
// Why: MLX 0.32's CUDA backend compiles every `fast::cuda_kernel` instantiation with NVRTC
// in each process and keeps the result only in memory (its custom-kernel launch asks its JIT
// module cache not to write to disk), while it does *read* its PTX cache directory for every
// module it builds. A decode step of the 8B model needs ~30 instantiations at 0.3-3 s of
// NVRTC each: every `mlxcel generate` paid ~16 s before its second token (H100, session 62,
// fp16 and turbo4 alike). Writing the compiled image under the module name MLX will look up
// makes each instantiation compile once per machine instead of once per process.
//
// What MLX does (0.32.x, backend/cuda/custom_kernel.cpp and jit_module.cpp) and this file
// relies on; if a later MLX changes it, the files written here are never found and MLX
// compiles as before (slower, same results):
//   - the module name is `<name_>_<hex std::hash of source_>`, with `name_` and `source_`
//     the primitive's (`CustomKernel::state()`), and the kernel looked up in it is
//     `mlx::core::cu::<name_>`;
//   - the cache directory is $MLX_PTX_CACHE_DIR, else <temp>/mlx/<version>/ptx; a module's
//     image is `<module>.ptx` (a cubin when NVRTC can target the device), `<module>.txt`
//     holds `<kernel name>\t<lowered name>` lines.
// The text compiled here is MLX's own (`source_`), with one difference: MLX's generated
// text includes its device header "mlx/backend/cuda/device/utils.cuh", which exists only
// inside libmlx; this file hands NVRTC a small header of its own under that name, with the
// by-value `Shape` / `Strides` parameter types laid out as MLX's (10 entries each).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mlx/array.h"

namespace mlxcel::kcache {

struct Compiled {
  bool ok = false;
  // The cubin (or PTX) image; the kernel's lowered (mangled) name; NVRTC's log or the error.
  std::string image;
  std::string lowered;
  std::string log;
};

// NVRTC (loaded with dlopen: the CPU build of mlxcel has no CUDA toolkit at link time) on
// `source`, for `arch` ("sm_90a" gives a cubin, "compute_90a" PTX), with the options MLX
// passes and `include_dirs`; `name_expr` is the kernel whose lowered name is returned.
// `nvrtc_lib` empty: the NVRTC MLX loaded, else libnvrtc.so.13 / .12 from the loader path.
Compiled nvrtc_compile(const std::string& source, const std::string& name_expr,
                       const std::string& arch, const std::vector<std::string>& include_dirs,
                       const std::string& nvrtc_lib);

// MLX's PTX cache folder, as MLX picks it: $MLX_PTX_CACHE_DIR, else <temp>/mlx/<version>/ptx.
std::string ptx_cache_dir_path();

// `<dir>/<module>.ptx` as MLX names it (names over 245 characters become nested folders).
std::string module_image_path(const std::string& dir, const std::string& module);

// For the output of a CUDA custom-kernel launch that MLX has just built: makes sure MLX's
// PTX cache will hold the compiled module. A missing module is compiled on a worker thread
// (up to 8 at once); wait_pending() must run before MLX evaluates anything (the bridge's eval
// entry points call it). Returns "" when the module is cached or queued, else why not (the
// launch goes on: MLX compiles it in memory itself, as it always did).
std::string ensure_cached(const mlx::core::array& out);

// Queues the compile of kernel `mlx::core::cu::<name>` in `source` for `arch`, written as MLX
// reads a module: `image` (a .ptx path) and the names file beside it.
void queue_compile(std::string name, std::string source, std::string image, std::string arch,
                   std::vector<std::string> include_dirs, std::string nvrtc_lib);

// Blocks until every queued compile has written its files (or failed). Cheap when none is.
void wait_pending();

// Compiles done in this process, their summed wall time (ns) and the time evaluations spent
// waiting for them (ns).
std::array<uint64_t, 3> stats();

// A queued compile's failure not yet reported ("" when none), oldest first.
std::string take_failure();

} // namespace mlxcel::kcache
