// See kernel_disk_cache.h for why this exists and what of MLX it relies on.
#include "mlxcel-core/cpp/kernel_disk_cache.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "mlx/fast_primitives.h"
#include "mlx/mlx.h"
#include "mlx/version.h"

namespace mx = mlx::core;
namespace fs = std::filesystem;

namespace mlxcel::kcache {
namespace {

// The subset of NVRTC's C API used here (nvrtc.h is not on the CPU build machine).
using Prog = void*;
struct Nvrtc {
  int (*create)(Prog*, const char*, const char*, int, const char* const*, const char* const*);
  int (*compile)(Prog, int, const char* const*);
  int (*log_size)(Prog, size_t*);
  int (*log)(Prog, char*);
  int (*add_name)(Prog, const char*);
  int (*lowered)(Prog, const char*, const char**);
  int (*cubin_size)(Prog, size_t*);
  int (*cubin)(Prog, char*);
  int (*ptx_size)(Prog, size_t*);
  int (*ptx)(Prog, char*);
  int (*destroy)(Prog*);
  const char* (*error)(int);
  // Optional (NVRTC 11.2+): the architectures it can emit SASS for.
  int (*num_archs)(int*) = nullptr;
  int (*archs)(int*) = nullptr;
  std::string why;  // non-empty: not loaded, and why
};

template <typename F>
bool sym(void* h, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(h, name));
  return f != nullptr;
}

Nvrtc load_nvrtc(const std::string& lib) {
  Nvrtc n{};
  void* h = nullptr;
  if (!lib.empty()) {
    h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  } else {
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    }
  }
  if (!h) {
    const char* e = dlerror();
    n.why = std::string("cannot load NVRTC") + (lib.empty() ? "" : " from " + lib) + ": " +
            (e ? e : "not found");
    return n;
  }
  bool ok = sym(h, "nvrtcCreateProgram", n.create) && sym(h, "nvrtcCompileProgram", n.compile) &&
            sym(h, "nvrtcGetProgramLogSize", n.log_size) && sym(h, "nvrtcGetProgramLog", n.log) &&
            sym(h, "nvrtcAddNameExpression", n.add_name) &&
            sym(h, "nvrtcGetLoweredName", n.lowered) && sym(h, "nvrtcGetCUBINSize", n.cubin_size) &&
            sym(h, "nvrtcGetCUBIN", n.cubin) && sym(h, "nvrtcGetPTXSize", n.ptx_size) &&
            sym(h, "nvrtcGetPTX", n.ptx) && sym(h, "nvrtcDestroyProgram", n.destroy) &&
            sym(h, "nvrtcGetErrorString", n.error);
  if (!ok) n.why = "the NVRTC library lacks a function this cache calls";
  sym(h, "nvrtcGetNumSupportedArchs", n.num_archs);
  sym(h, "nvrtcGetSupportedArchs", n.archs);
  return n;
}

const Nvrtc& nvrtc(const std::string& lib) {
  // One per library path; the process keeps them (as MLX keeps its own NVRTC loaded).
  static std::mutex m;
  static auto* libs = new std::unordered_map<std::string, Nvrtc>;
  std::lock_guard<std::mutex> g(m);
  auto it = libs->find(lib);
  if (it == libs->end()) it = libs->emplace(lib, load_nvrtc(lib)).first;
  return it->second;
}

// The header compiled in place of MLX's device utils. Only what MLX's generated signature
// names: the element types (fp16/bf16 and the fixed-width integers) and the by-value
// `Shape` / `Strides` parameters, whose layout must equal MLX's (cuda::std::array of 10
// int32 / int64 entries: the launch copies MLX's arrays into the parameter buffer).
constexpr const char* kUtils = R"(#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/cstdint>
using cuda::std::int8_t;
using cuda::std::int16_t;
using cuda::std::int32_t;
using cuda::std::int64_t;
using cuda::std::uint8_t;
using cuda::std::uint16_t;
using cuda::std::uint32_t;
using cuda::std::uint64_t;
namespace mlx::core::cu {
template <typename T>
struct MlxcelNdim {
  T v[10];
  __device__ T operator[](int i) const { return v[i]; }
  __device__ static constexpr int size() { return 10; }
};
using Shape = MlxcelNdim<int32_t>;
using Strides = MlxcelNdim<int64_t>;
} // namespace mlx::core::cu
)";

std::string program_log(const Nvrtc& n, Prog p) {
  size_t size = 0;
  if (n.log_size(p, &size) != 0 || size <= 1) return "";
  std::string log(size, '\0');
  if (n.log(p, log.data()) != 0) return "";
  log.resize(size - 1);
  return log;
}

// MLX's include paths for NVRTC (jit_module.cpp's include_path_args): the headers next to
// libmlx, CCCL, then the CUDA runtime headers of the pip layout or of $CUDA_HOME.
std::vector<std::string> mlx_include_dirs() {
  std::vector<std::string> dirs;
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&mx::version), &info) || !info.dli_fname) return dirs;
  fs::path root = fs::path(info.dli_fname).parent_path().parent_path();
  for (auto p : {root / "include", root / "include" / "cccl"}) {
    if (fs::exists(p)) dirs.push_back(p.string());
  }
  fs::path cuda = root.parent_path() / "nvidia" / "cu13" / "include";
  if (!fs::exists(cuda)) {
    const char* home = std::getenv("CUDA_HOME");
    if (!home) home = std::getenv("CUDA_PATH");
    cuda = fs::path(home ? home : "/usr/local/cuda") / "include";
  }
  if (fs::exists(cuda)) dirs.push_back(cuda.string());
  if (fs::exists(cuda / "cccl")) dirs.push_back((cuda / "cccl").string());
  return dirs;
}

// The device's NVRTC target as MLX picks it: "sm_XYa" (cubin) when NVRTC lists the
// architecture, else "compute_XYa" (PTX); the "a" suffix from compute capability 9 on.
std::string device_arch(const Nvrtc& n, std::string& why) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!cuda) cuda = dlopen("libcuda.so.1", RTLD_NOW);
  int (*init)(unsigned) = nullptr;
  int (*get)(int*, int) = nullptr;
  int (*attr)(int*, int, int) = nullptr;
  if (!cuda || !sym(cuda, "cuInit", init) || !sym(cuda, "cuDeviceGet", get) ||
      !sym(cuda, "cuDeviceGetAttribute", attr)) {
    why = "cannot load the CUDA driver's device queries";
    return "";
  }
  int dev = 0, major = 0, minor = 0;
  int ordinal = mx::default_device().index;
  // 75 / 76: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR.
  if (init(0) != 0 || get(&dev, ordinal) != 0 || attr(&major, 75, dev) != 0 ||
      attr(&minor, 76, dev) != 0) {
    why = "the CUDA driver did not report the device's compute capability";
    return "";
  }
  bool sass = false;
  int k = 0;
  if (n.num_archs && n.archs && n.num_archs(&k) == 0 && k > 0) {
    std::vector<int> list(k);
    if (n.archs(list.data()) == 0) {
      sass = std::find(list.begin(), list.end(), major * 10 + minor) != list.end();
    }
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s_%d%d%s", sass ? "sm" : "compute", major, minor,
                major >= 9 ? "a" : "");
  return buf;
}

// Writes `data` to `path` through a temporary name and a rename, so that another process
// (or MLX in this one) never reads a half-written file.
bool write_atomic(const fs::path& path, const std::string& data) {
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f.write(data.data(), static_cast<std::streamsize>(data.size()))) return false;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

fs::path ptx_cache_dir() {
  if (const char* d = std::getenv("MLX_PTX_CACHE_DIR"); d && *d) return fs::absolute(d);
  return fs::temp_directory_path() / "mlx" / mx::version() / "ptx";
}

} // namespace

std::string ptx_cache_dir_path() { return ptx_cache_dir().string(); }

std::string module_image_path(const std::string& dir, const std::string& module) {
  constexpr size_t max_len = 245;
  fs::path p = dir;
  if (module.size() <= max_len) return (p / (module + ".ptx")).string();
  size_t off = 0;
  while (module.size() - off > max_len) {
    p /= module.substr(off, max_len);
    off += max_len;
  }
  p /= module.substr(off) + ".ptx";
  return p.string();
}

Compiled nvrtc_compile(const std::string& source, const std::string& name_expr,
                       const std::string& arch, const std::vector<std::string>& include_dirs,
                       const std::string& nvrtc_lib) {
  Compiled c;
  const Nvrtc& n = nvrtc(nvrtc_lib);
  if (!n.why.empty()) {
    c.log = n.why;
    return c;
  }
  const char* header_names[] = {"mlx/backend/cuda/device/utils.cuh"};
  const char* headers[] = {kUtils};
  Prog p = nullptr;
  if (int r = n.create(&p, source.c_str(), "mlxcel_kernel.cu", 1, headers, header_names); r != 0) {
    c.log = std::string("nvrtcCreateProgram: ") + n.error(r);
    return c;
  }
  struct Free {
    const Nvrtc& n;
    Prog& p;
    ~Free() { n.destroy(&p); }
  } free_prog{n, p};
  if (int r = n.add_name(p, name_expr.c_str()); r != 0) {
    c.log = std::string("nvrtcAddNameExpression: ") + n.error(r);
    return c;
  }
  std::vector<std::string> opts = {"--device-as-default-execution-space",
                                   "--gpu-architecture=" + arch};
  for (const auto& d : include_dirs) opts.push_back("--include-path=" + d);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  int r = n.compile(p, static_cast<int>(argv.size()), argv.data());
  c.log = program_log(n, p);
  if (r != 0) {
    c.log = std::string("nvrtcCompileProgram: ") + n.error(r) + "\n" + c.log;
    return c;
  }
  const char* lowered = nullptr;
  if (n.lowered(p, name_expr.c_str(), &lowered) != 0 || !lowered) {
    c.log = "nvrtcGetLoweredName found no " + name_expr;
    return c;
  }
  c.lowered = lowered;
  bool cubin = arch.rfind("sm_", 0) == 0;
  size_t size = 0;
  if ((cubin ? n.cubin_size(p, &size) : n.ptx_size(p, &size)) != 0 || size == 0) {
    c.log = "NVRTC returned no image";
    return c;
  }
  c.image.resize(size);
  if ((cubin ? n.cubin(p, c.image.data()) : n.ptx(p, c.image.data())) != 0) {
    c.log = "NVRTC could not copy the image";
    return c;
  }
  c.ok = true;
  return c;
}

namespace {

// Compiles run on worker threads so that the instantiations one graph needs (12 for a decode
// step) compile side by side; wait_pending() holds every evaluation until they are written.
// The pool is leaked on purpose (its threads may outlive static destruction at exit).
struct Pool {
  std::mutex m;
  std::condition_variable work, idle;
  // A job returns why it failed ("" when it did not).
  std::deque<std::function<std::string()>> jobs;
  std::deque<std::string> failures;
  // Both changed under `m`; atomic so that the hot paths (every evaluation, every launch's
  // note) can read them without the lock.
  std::atomic<size_t> unfinished{0}, failure_count{0};
  bool started = false;
  // Compiles finished, their summed wall time and the time evaluations waited (ns).
  std::atomic<uint64_t> compiled{0}, compile_ns{0}, wait_ns{0};
};

uint64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Pool& pool() {
  static auto* p = new Pool;
  return *p;
}

void worker(Pool* p) {
  for (;;) {
    std::function<std::string()> job;
    {
      std::unique_lock<std::mutex> l(p->m);
      p->work.wait(l, [p] { return !p->jobs.empty(); });
      job = std::move(p->jobs.front());
      p->jobs.pop_front();
    }
    uint64_t t0 = now_ns();
    // An exception must not leave a detached thread (that would end the process).
    std::string failure;
    try {
      failure = job();
    } catch (const std::exception& e) {
      failure = std::string("kernel disk cache worker: ") + e.what();
    } catch (...) {
      failure = "kernel disk cache worker: unknown error";
    }
    p->compile_ns += now_ns() - t0;
    ++p->compiled;
    std::lock_guard<std::mutex> l(p->m);
    if (!failure.empty()) {
      p->failures.push_back(std::move(failure));
      ++p->failure_count;
    }
    if (--p->unfinished == 0) p->idle.notify_all();
  }
}

void submit(std::function<std::string()> job) {
  Pool& p = pool();
  std::lock_guard<std::mutex> l(p.m);
  if (!p.started) {
    // NVRTC is thread-safe across programs; a compile takes one core and ~0.2-0.5 GB.
    unsigned n = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
    for (unsigned i = 0; i < n; ++i) std::thread(worker, &p).detach();
    p.started = true;
  }
  p.jobs.push_back(std::move(job));
  ++p.unfinished;
  p.work.notify_one();
}

// Compiles `source` and writes MLX's two files for `module`; "" or why not.
std::string compile_and_write(const std::string& name, const std::string& source,
                              const fs::path& image, const std::string& arch,
                              const std::vector<std::string>& include_dirs,
                              const std::string& nvrtc_lib) {
  std::string kernel = "mlx::core::cu::" + name;
  Compiled c = nvrtc_compile(source, kernel, arch, include_dirs, nvrtc_lib);
  if (!c.ok) return "compiling " + name + " for the disk cache failed: " + c.log;
  std::error_code ec;
  fs::create_directories(image.parent_path(), ec);
  fs::path txt = image;
  txt.replace_extension(".txt");
  // The names file first: MLX reads it only after finding the image.
  if (!write_atomic(txt, kernel + "\t" + c.lowered + "\n") || !write_atomic(image, c.image)) {
    return "cannot write the compiled kernel to " + image.string();
  }
  return "";
}

} // namespace

void queue_compile(std::string name, std::string source, std::string image, std::string arch,
                   std::vector<std::string> include_dirs, std::string nvrtc_lib) {
  submit([name = std::move(name), source = std::move(source), image = std::move(image),
          arch = std::move(arch), dirs = std::move(include_dirs), lib = std::move(nvrtc_lib)] {
    return compile_and_write(name, source, image, arch, dirs, lib);
  });
}

void wait_pending() {
  Pool& p = pool();
  if (p.unfinished.load() == 0) return;
  uint64_t t0 = now_ns();
  std::unique_lock<std::mutex> l(p.m);
  p.idle.wait(l, [&p] { return p.unfinished == 0; });
  p.wait_ns += now_ns() - t0;
}

std::array<uint64_t, 3> stats() {
  Pool& p = pool();
  return {p.compiled.load(), p.compile_ns.load(), p.wait_ns.load()};
}

std::string take_failure() {
  Pool& p = pool();
  if (p.failure_count.load() == 0) return "";
  std::lock_guard<std::mutex> l(p.m);
  if (p.failures.empty()) return "";
  std::string f = std::move(p.failures.front());
  p.failures.pop_front();
  --p.failure_count;
  return f;
}

namespace {
std::string ensure_cached_impl(const mx::array& out) {
  if (!out.has_primitive()) return "the launch's output has no primitive";
  const auto& prim = out.primitive();
  if (std::strcmp(prim.name(), "CustomKernel") != 0) {
    return std::string("the launch's primitive is ") + prim.name() + ", not CustomKernel";
  }
  auto state = static_cast<const mx::fast::CustomKernel&>(prim).state();
  std::string name = std::get<0>(state);
  std::string source = std::get<1>(state);
  if (std::get<8>(state)) return "";  // precompiled: nothing for NVRTC to do
  char hash[24];
  std::snprintf(hash, sizeof hash, "%zx", std::hash<std::string>{}(source));
  std::string module = name + "_" + hash;

  // Each module once per process.
  static std::mutex m;
  static auto* done = new std::unordered_set<std::string>;
  std::lock_guard<std::mutex> g(m);
  // Tried once: a failure is reported once, and MLX compiles that module itself.
  if (!done->insert(module).second) return "";
  fs::path image = module_image_path(ptx_cache_dir().string(), module);
  std::error_code ec;
  if (fs::exists(image, ec)) return "";
  const Nvrtc& n = nvrtc("");
  if (!n.why.empty()) return n.why;
  // The device and include paths once, here on the launching thread.
  static std::string arch_why;
  static const std::string arch = device_arch(n, arch_why);
  if (arch.empty()) return arch_why;
  static const std::vector<std::string> include_dirs = mlx_include_dirs();
  queue_compile(std::move(name), std::move(source), image.string(), arch, include_dirs, "");
  return "";
}
} // namespace

std::string ensure_cached(const mx::array& out) {
  // Nothing here may fail the launch: any error becomes a note, and MLX compiles as before.
  try {
    return ensure_cached_impl(out);
  } catch (const std::exception& e) {
    return std::string("kernel disk cache: ") + e.what();
  } catch (...) {
    return "kernel disk cache: unknown error";
  }
}

} // namespace mlxcel::kcache
