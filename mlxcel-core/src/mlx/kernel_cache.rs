//! The disk cache of compiled CUDA custom kernels (`MLXCEL_KERNEL_DISK_CACHE`, on by
//! default): each instantiation is compiled once per machine, not once per process.
//!
//! MLX 0.32 compiles a `fast::cuda_kernel` with NVRTC at its first launch in each process
//! and keeps the result in memory only; it does read its PTX cache directory
//! (`$MLX_PTX_CACHE_DIR`, else `<temp>/mlx/<version>/ptx`) for every module it builds. At a
//! new instantiation the bridge (`cpp/kernel_disk_cache.{h,cc}`) compiles MLX's own text for
//! it and writes the image there under the module name MLX will look up, before MLX
//! evaluates the launch. On an H100 this removed ~16 s of NVRTC from every `mlxcel
//! generate` after the first on a machine (session 62's results).
//!
//! MLX's generated text includes its device header, which exists only inside libmlx; the
//! bridge compiles against a stand-in that declares what the generated signature names
//! (element types; `Shape` / `Strides`, laid out as MLX's). The functions here let tests
//! compile MLX-shaped texts through that same path on a machine without a GPU.

use std::path::{Path, PathBuf};

use super::ffi::bridge as ffi;
use crate::error::{Error, Result};

/// What NVRTC made of a kernel text.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The kernel's lowered (C++-mangled) name, as written to the cache's names file.
    pub lowered: String,
    /// Bytes of the image (a cubin for an `sm_` target, PTX for `compute_`).
    pub image_len: usize,
    /// NVRTC's log (warnings).
    pub log: String,
}

/// The include folders and the NVRTC library as the bridge takes them (an empty library path:
/// the NVRTC MLX loaded).
fn bridge_paths(include_dirs: &[PathBuf], nvrtc: Option<&Path>) -> (Vec<String>, String) {
    let dirs = include_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    let lib = nvrtc.map(|p| p.display().to_string()).unwrap_or_default();
    (dirs, lib)
}

/// Compiles `source` (an MLX-generated kernel text) the way the disk cache does: MLX's
/// NVRTC options, the stand-in device header, `include_dirs` (CUDA's headers, CCCL), for
/// `arch` (e.g. `sm_90a`). `nvrtc` is the library to load (`None`: the one MLX loaded, else
/// `libnvrtc.so.13` from the loader's path). An error carries NVRTC's log.
pub fn nvrtc_compile(
    source: &str,
    kernel: &str,
    arch: &str,
    include_dirs: &[PathBuf],
    nvrtc: Option<&Path>,
) -> Result<Compiled> {
    let (dirs, lib) = bridge_paths(include_dirs, nvrtc);
    let out = ffi::nvrtc_compile_check(source, kernel, arch, dirs, &lib);
    if !out.ok {
        return Err(Error::invalid(
            "kernel disk cache",
            format!("NVRTC could not compile {kernel} for {arch}: {}", out.log),
        ));
    }
    Ok(Compiled {
        lowered: out.lowered,
        image_len: out.image_len,
        log: out.log,
    })
}

/// The file MLX reads a module's compiled image from, in cache directory `dir` (module names
/// longer than 245 characters become nested folders, as MLX names them).
pub fn module_image_path(dir: &Path, module: &str) -> PathBuf {
    PathBuf::from(ffi::kernel_module_image_path(
        &dir.display().to_string(),
        module,
    ))
}

/// MLX's PTX cache folder, where the images go: `$MLX_PTX_CACHE_DIR`, else
/// `<temp>/mlx/<version>/ptx` (MLX's own rule, read the way MLX reads it).
pub fn ptx_cache_dir() -> PathBuf {
    PathBuf::from(ffi::kernel_ptx_cache_dir())
}

/// The images mlxcel wrote in `dir` (MLX names custom-kernel modules `custom_kernel_*`; its
/// own kernels have other names): how many, and their bytes. Zero for a missing folder.
pub fn images_in(dir: &Path) -> (usize, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    entries
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("custom_kernel_") && n.ends_with(".ptx")
        })
        .fold((0, 0), |(k, b), e| {
            (k + 1, b + e.metadata().map(|m| m.len()).unwrap_or(0))
        })
}

/// The folder the `mlxcel` binary points MLX's PTX cache at when `MLX_PTX_CACHE_DIR` is unset:
/// `<mlxcel cache>/mlx-ptx/<MLX version>/<GPU architecture>`. MLX's default lies in the
/// temporary folder, which a reboot may empty, and then the first run compiles MLX's kernels and
/// mlxcel's again (~50 s on an H100, session 62). Neither MLX's module names nor mlxcel's hold
/// the MLX version or the GPU's architecture, and a home folder may be shared by machines with
/// other GPUs (an image built for sm_90a does not load on sm_80): both go into the path.
pub fn lasting_dir(mlxcel_cache: &Path, mlx_version: &str, gpu_arch: &str) -> PathBuf {
    mlxcel_cache
        .join("mlx-ptx")
        .join(mlx_version)
        .join(gpu_arch)
}

/// Queues a compile on the disk cache's worker pool, as a new instantiation does: kernel
/// `mlx::core::cu::<name>` of `source`, written as MLX's module files (`image`, a `.ptx` path
/// from [`module_image_path`], and the names file beside it). [`wait`] blocks until every queued
/// compile is done; [`take_failure`] returns their failures, one per call.
pub fn queue_compile(
    name: &str,
    source: &str,
    image: &Path,
    arch: &str,
    include_dirs: &[PathBuf],
    nvrtc: Option<&Path>,
) {
    let (dirs, lib) = bridge_paths(include_dirs, nvrtc);
    ffi::kernel_cache_queue(name, source, &image.display().to_string(), arch, dirs, &lib);
}

/// Blocks until the queued compiles have written their files (every evaluation does this first).
pub fn wait() {
    ffi::kernel_cache_wait();
}

/// A queued compile's failure, oldest first; `None` when there is none left.
pub fn take_failure() -> Option<String> {
    Some(ffi::kernel_cache_take_failure()).filter(|s| !s.is_empty())
}

/// What the disk cache compiled in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompileStats {
    /// Kernel instantiations compiled (and written) here.
    pub compiled: u64,
    /// Their compile times summed (they run up to 8 at once).
    pub compile_seconds: f64,
    /// Time evaluations spent waiting for them.
    pub waited_seconds: f64,
}

/// The disk cache's compiles so far in this process.
pub fn stats() -> CompileStats {
    let v = ffi::kernel_cache_stats();
    let s = |i: usize| v.get(i).copied().unwrap_or(0);
    CompileStats {
        compiled: s(0),
        compile_seconds: s(1) as f64 * 1e-9,
        waited_seconds: s(2) as f64 * 1e-9,
    }
}
