//! `mlxcel info`: what MLX build is loaded, on which backend, with which devices.
//! On the GPU host this is the first thing to run: it shows whether the CUDA `libmlx.so`
//! was picked up (the `libmlx` path) and, with `--kernel-check`, that MLX's JIT compiles
//! and runs a custom kernel through mlxcel's wrapper. It also lists every `MLXCEL_*` switch
//! with its value in this environment, so a benchmark's output says which paths ran.

use std::collections::BTreeMap;

use anyhow::Result;
use clap::Args;
use mlxcel_core::flags;
use mlxcel_core::kernels::selftest;
use mlxcel_core::mlx::device::{self, DeviceKind};
use mlxcel_core::mlx::kernel::KernelBackend;
use mlxcel_core::mlx::kernel_cache;
use mlxcel_core::mlx::memory;
use serde::Serialize;

#[derive(Args)]
pub struct InfoArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also build, JIT-compile and run a small custom GPU kernel (f32/f16/bf16) and
    /// compare it with MLX ops. Reports "unavailable" without a GPU backend.
    #[arg(long)]
    kernel_check: bool,
}

#[derive(Serialize)]
struct GpuInfo {
    index: i32,
    properties: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct KernelCheck {
    status: String,
    backend: Option<String>,
    results: Vec<KernelDtypeResult>,
}

#[derive(Serialize)]
struct KernelDtypeResult {
    dtype: String,
    elements: usize,
    max_abs_err: f32,
    passed: bool,
}

#[derive(Serialize)]
struct Switch {
    name: String,
    enabled: bool,
    /// Whether the value comes from the environment (else the default).
    from_env: bool,
    doc: String,
}

#[derive(Serialize)]
struct Info {
    mlxcel_version: String,
    mlx_version: String,
    mlx_version_built_against: String,
    mlx_linked_from: String,
    libmlx_path: String,
    allocator: String,
    backend: String,
    default_device: String,
    gpu_available: bool,
    gpu_count: i32,
    gpus: Vec<GpuInfo>,
    cpu: BTreeMap<String, String>,
    active_memory_bytes: usize,
    peak_memory_bytes: usize,
    kernel_check: Option<KernelCheck>,
    kernel_cache: KernelCache,
    switches: Vec<Switch>,
}

/// MLX's compiled-kernel folder and the images mlxcel put there (ADR 0029).
#[derive(Serialize)]
struct KernelCache {
    dir: String,
    mlxcel_images: usize,
    mlxcel_image_bytes: u64,
}

fn kernel_cache() -> KernelCache {
    let dir = kernel_cache::ptx_cache_dir();
    let (n, bytes) = kernel_cache::images_in(&dir);
    KernelCache {
        dir: dir.display().to_string(),
        mlxcel_images: n,
        mlxcel_image_bytes: bytes,
    }
}

fn switches() -> Vec<Switch> {
    flags::ALL
        .iter()
        .map(|f| Switch {
            name: f.name.to_string(),
            enabled: f.enabled(),
            from_env: std::env::var_os(f.name).is_some(),
            doc: f.doc.to_string(),
        })
        .collect()
}

fn collect(kernel_check: bool) -> Result<Info> {
    let backend = device::gpu_backend();
    let gpu_count = if backend == device::GpuBackend::None {
        0
    } else {
        device::device_count(DeviceKind::Gpu)?
    };
    let mut gpus = Vec::new();
    for i in 0..gpu_count {
        gpus.push(GpuInfo {
            index: i,
            properties: device::device_info(DeviceKind::Gpu, i)?
                .into_iter()
                .collect(),
        });
    }
    let kernel_check = if kernel_check {
        Some(run_kernel_check()?)
    } else {
        None
    };
    Ok(Info {
        mlxcel_version: env!("CARGO_PKG_VERSION").to_string(),
        mlx_version: device::mlx_version(),
        mlx_version_built_against: device::pinned_mlx_version().to_string(),
        mlx_linked_from: device::linked_from().to_string(),
        libmlx_path: device::library_path(),
        allocator: crate::allocator::name().to_string(),
        backend: backend.name().to_string(),
        default_device: match device::default_device()? {
            DeviceKind::Gpu => "gpu".into(),
            DeviceKind::Cpu => "cpu".into(),
        },
        gpu_available: device::gpu_available(),
        gpu_count,
        gpus,
        cpu: device::device_info(DeviceKind::Cpu, 0)
            .unwrap_or_default()
            .into_iter()
            .collect(),
        active_memory_bytes: memory::active_memory()?,
        peak_memory_bytes: memory::peak_memory()?,
        kernel_check,
        kernel_cache: kernel_cache(),
        switches: switches(),
    })
}

fn run_kernel_check() -> Result<KernelCheck> {
    let Some(backend) = KernelBackend::current() else {
        return Ok(KernelCheck {
            status: "unavailable: this libmlx has no GPU backend".into(),
            backend: None,
            results: Vec::new(),
        });
    };
    let results = selftest::run(backend, 1 << 20)?;
    let passed = results.iter().all(|r| r.passed);
    Ok(KernelCheck {
        status: if passed { "passed" } else { "FAILED" }.into(),
        backend: Some(format!("{backend:?}").to_lowercase()),
        results: results
            .into_iter()
            .map(|r| KernelDtypeResult {
                dtype: r.dtype.name().into(),
                elements: r.elements,
                max_abs_err: r.max_abs_err,
                passed: r.passed,
            })
            .collect(),
    })
}

fn human_bytes(text: &str) -> String {
    match text.parse::<f64>() {
        Ok(b) if b >= 1024.0 * 1024.0 * 1024.0 => {
            format!("{:.1} GiB", b / (1024.0 * 1024.0 * 1024.0))
        }
        Ok(b) if b >= 1024.0 * 1024.0 => format!("{:.1} MiB", b / (1024.0 * 1024.0)),
        _ => text.to_string(),
    }
}

fn print_text(info: &Info) {
    println!("mlxcel        {}", info.mlxcel_version);
    println!(
        "MLX           {} (built against {}, from {})",
        info.mlx_version, info.mlx_version_built_against, info.mlx_linked_from
    );
    println!("libmlx        {}", info.libmlx_path);
    println!("allocator     {}", info.allocator);
    println!("backend       {}", info.backend);
    println!("default dev.  {}", info.default_device);
    for (k, v) in &info.cpu {
        println!("cpu:0         {k} = {v}");
    }
    if info.gpus.is_empty() {
        println!("gpu           not available");
    }
    for g in &info.gpus {
        for (k, v) in &g.properties {
            let shown = if k.contains("memory") {
                human_bytes(v)
            } else {
                v.clone()
            };
            println!("gpu:{}         {k} = {shown}", g.index);
        }
    }
    println!(
        "memory        active {} B, peak {} B",
        info.active_memory_bytes, info.peak_memory_bytes
    );
    let kc = &info.kernel_cache;
    println!(
        "kernel cache  {} ({} mlxcel kernel images, {:.1} MiB; CUDA only)",
        kc.dir,
        kc.mlxcel_images,
        kc.mlxcel_image_bytes as f64 / (1024.0 * 1024.0)
    );
    println!("switches      (0 turns a fast path off; see docs/usage.md)");
    for s in &info.switches {
        println!(
            "  {:<26} {:<3} {:<9} {}",
            s.name,
            if s.enabled { "on" } else { "off" },
            if s.from_env { "(env)" } else { "(default)" },
            s.doc
        );
    }
    if let Some(kc) = &info.kernel_check {
        println!("kernel check  {}", kc.status);
        for r in &kc.results {
            println!(
                "  {:<9} n={} max|err|={:.3e} {}",
                r.dtype,
                r.elements,
                r.max_abs_err,
                if r.passed { "ok" } else { "MISMATCH" }
            );
        }
    }
}

pub fn run(args: &InfoArgs) -> Result<()> {
    let info = collect(args.kernel_check)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print_text(&info);
    }
    if let Some(kc) = &info.kernel_check {
        if kc.status == "FAILED" {
            anyhow::bail!("the custom-kernel check produced wrong results");
        }
    }
    Ok(())
}
