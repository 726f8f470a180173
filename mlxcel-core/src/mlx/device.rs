//! Devices: which backend this `libmlx` was built with, what GPUs it sees, and which
//! device ops run on by default.

use super::ffi::bridge as ffi;
use crate::error::{MlxContext, Result};

/// The MLX version of the library loaded at run time (not the one linked at build time:
/// the GPU host swaps in the CUDA build of the same version).
pub fn mlx_version() -> String {
    ffi::mlx_version()
}

/// The MLX version mlxcel was built against.
pub fn pinned_mlx_version() -> &'static str {
    env!("MLXCEL_MLX_PINNED_VERSION")
}

/// Where the build found MLX (MLX_DIR, a site-packages or the mlxcel cache).
pub fn linked_from() -> &'static str {
    env!("MLXCEL_MLX_LINKED_FROM")
}

/// Path of the `libmlx` shared library actually loaded in this process.
pub fn library_path() -> String {
    ffi::mlx_library_path()
}

/// The GPU backend compiled into the loaded `libmlx`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuBackend {
    Cuda,
    Metal,
    None,
}

impl GpuBackend {
    pub fn name(self) -> &'static str {
        match self {
            GpuBackend::Cuda => "cuda",
            GpuBackend::Metal => "metal",
            GpuBackend::None => "cpu",
        }
    }
}

/// Which GPU backend the loaded library has (`None` for the CPU-only build). Asked once:
/// the loaded library cannot change, and attention dispatch asks per layer per step.
pub fn gpu_backend() -> GpuBackend {
    static BACKEND: std::sync::OnceLock<GpuBackend> = std::sync::OnceLock::new();
    *BACKEND.get_or_init(|| match ffi::gpu_backend().as_str() {
        "cuda" => GpuBackend::Cuda,
        "metal" => GpuBackend::Metal,
        _ => GpuBackend::None,
    })
}

/// Kind of device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    Cpu,
    Gpu,
}

/// Number of devices of a kind.
pub fn device_count(kind: DeviceKind) -> Result<i32> {
    ffi::device_count(kind == DeviceKind::Gpu).op("device_count")
}

/// True when at least one GPU is usable.
pub fn gpu_available() -> bool {
    gpu_backend() != GpuBackend::None && device_count(DeviceKind::Gpu).unwrap_or(0) > 0
}

/// The default device's kind.
pub fn default_device() -> Result<DeviceKind> {
    ffi::default_device_is_gpu()
        .op("default_device")
        .map(|gpu| {
            if gpu {
                DeviceKind::Gpu
            } else {
                DeviceKind::Cpu
            }
        })
}

/// Makes ops run on `kind:index` by default. Fails if that device does not exist.
pub fn set_default_device(kind: DeviceKind, index: i32) -> Result<()> {
    ffi::set_default_device(kind == DeviceKind::Gpu, index).op("set_default_device")
}

/// MLX's description of a device as (key, value) pairs (name, architecture, memory...).
pub fn device_info(kind: DeviceKind, index: i32) -> Result<Vec<(String, String)>> {
    let flat = ffi::device_info(kind == DeviceKind::Gpu, index).op("device_info")?;
    Ok(flat
        .chunks(2)
        .map(|kv| (kv[0].clone(), kv.get(1).cloned().unwrap_or_default()))
        .collect())
}

/// The default GPU's compute capability major version as MLX reports it
/// (`compute_capability_major` in [`device_info`]), read once per process; `None` without a
/// GPU or where MLX does not report it (Metal). Kernels that use an architecture's features
/// (thread-block clusters: 9) check it before they are built.
pub fn gpu_compute_capability_major() -> Option<u32> {
    static MAJOR: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *MAJOR.get_or_init(|| gpu_info("compute_capability_major")?.trim().parse().ok())
}

/// The default GPU's architecture as MLX's CUDA backend names it (`architecture` in
/// [`device_info`], e.g. `sm_90`); `None` without a GPU or where MLX does not report it.
pub fn gpu_architecture() -> Option<String> {
    gpu_info("architecture").filter(|v| !v.is_empty())
}

/// One property of GPU 0 from [`device_info`].
fn gpu_info(key: &str) -> Option<String> {
    device_info(DeviceKind::Gpu, 0)
        .ok()?
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

/// Starts (`true`) or stops the CUDA profiler's capture range (`cuProfilerStart/Stop`), for
/// `ncu --profile-from-start off` around chosen decode steps. Returns false when no CUDA
/// driver is loaded (CPU backend) or the call failed; it never changes results.
pub fn cuda_profiler(start: bool) -> Result<bool> {
    ffi::cuda_profiler(start).op("cuda_profiler")
}

/// Waits for all queued work on the default stream.
pub fn synchronize() -> Result<()> {
    super::submit::exclusive(ffi::synchronize).op("synchronize")
}
