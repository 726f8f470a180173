//! The kernel disk cache's compile path (`mlx::kernel_cache`, `cpp/kernel_disk_cache.cc`) on
//! a machine without a GPU: NVRTC compiles texts shaped as MLX 0.32's CUDA custom-kernel
//! generator writes them (its device header replaced by mlxcel's stand-in) to sm_90a cubins.
//! Whether MLX then loads those images, and the time it saves, only a GPU run shows
//! (`benchmarks/gpu/sessions/session62_call2.sh`).
//!
//! NVRTC and CUDA's headers come from PyPI (`nvidia-cuda-nvrtc`, `nvidia-cuda-runtime`,
//! `nvidia-cuda-cccl`, CUDA 13, ~65 MB), fetched once with `pip download` into the mlxcel
//! cache (`$MLXCEL_CACHE_DIR`, else `~/.cache/mlxcel`) and unpacked there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use mlxcel_core::mlx::kernel_cache::{module_image_path, nvrtc_compile, Compiled};

/// Pinned so that every run compiles with the same NVRTC.
const WHEELS: [&str; 3] = [
    "nvidia-cuda-nvrtc==13.5.37",
    "nvidia-cuda-runtime==13.5.37",
    "nvidia-cuda-cccl==13.3.5.0.6",
];

struct Toolkit {
    nvrtc: PathBuf,
    include: Vec<PathBuf>,
}

fn cache_root() -> PathBuf {
    if let Some(d) = std::env::var_os("MLXCEL_CACHE_DIR") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    PathBuf::from(home).join(".cache").join("mlxcel")
}

fn run(cmd: &mut Command, what: &str) {
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    assert!(status.success(), "{what} failed ({status})");
}

/// The unpacked wheels: fetched and unpacked on the first call (a marker file says done).
fn toolkit() -> &'static Toolkit {
    static T: OnceLock<Toolkit> = OnceLock::new();
    T.get_or_init(|| {
        let root = cache_root().join("nvrtc-13.5.37");
        let cu13 = root.join("nvidia").join("cu13");
        if !root.join("unpacked").exists() {
            let staging = root.with_extension(format!("staging{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&staging);
            std::fs::create_dir_all(&staging).expect("create the NVRTC staging folder");
            run(
                Command::new("python3")
                    .args(["-m", "pip", "download", "-q", "--no-deps"])
                    .args(["--only-binary=:all:", "--platform", "manylinux_2_17_x86_64"])
                    .args(["--platform", "manylinux2014_x86_64", "-d"])
                    .arg(&staging)
                    .args(WHEELS),
                "pip download of NVRTC and CUDA's headers (needs PyPI)",
            );
            for whl in std::fs::read_dir(&staging).unwrap() {
                let whl = whl.unwrap().path();
                if whl.extension().is_some_and(|e| e == "whl") {
                    run(
                        Command::new("python3")
                            .args(["-m", "zipfile", "-e"])
                            .arg(&whl)
                            .arg(&root),
                        "unpacking a CUDA wheel",
                    );
                }
            }
            std::fs::write(root.join("unpacked"), WHEELS.join("\n")).unwrap();
            let _ = std::fs::remove_dir_all(&staging);
        }
        let include = cu13.join("include");
        Toolkit {
            nvrtc: cu13.join("lib").join("libnvrtc.so.13"),
            include: vec![include.clone(), include.join("cccl")],
        }
    })
}

/// One input of an MLX-generated signature: name, CUDA type, and which of
/// `_shape` / `_strides` / `_ndim` the body uses.
struct In<'a>(&'a str, &'a str, bool, bool, bool);

/// A kernel text laid out as MLX 0.32's `build_kernel` writes it (backend/cuda/custom_kernel.cpp):
/// its default header, the kernel's header, `namespace mlx::core::cu`, the signature
/// (inputs with their shape parameters, outputs), the template constants, the body.
fn mlx_text(
    name: &str,
    header: &str,
    inputs: &[In],
    outputs: &[(&str, &str)],
    consts: &str,
    body: &str,
) -> String {
    let mut s = String::from(
        "\n#include \"mlx/backend/cuda/device/utils.cuh\"\n\n#include <cooperative_groups.h>\n\n",
    );
    s += header;
    s += "namespace mlx::core::cu {\n\nnamespace cg = cooperative_groups;\n\n";
    s += &format!("__global__ void {name}(\n");
    for In(n, t, shape, strides, ndim) in inputs {
        s += &format!("    const {t}* {n},\n");
        if *shape {
            s += &format!("    const __grid_constant__ Shape {n}_shape,\n");
        }
        if *strides {
            s += &format!("    const __grid_constant__ Strides {n}_strides,\n");
        }
        if *ndim {
            s += &format!("    const __grid_constant__ int {n}_ndim,\n");
        }
    }
    let outs: Vec<String> = outputs
        .iter()
        .map(|(n, t)| format!("    {t}* {n}"))
        .collect();
    s += &outs.join(",\n");
    s += ") {\n";
    s += consts;
    s += "\n";
    s += body;
    s += "\n}\n\n} // namespace mlx::core::cu\n";
    s
}

/// A kernel of one float input `x` (no shape parameters) and one float output `out`.
fn float_kernel(name: &str, body: &str) -> String {
    mlx_text(
        name,
        "",
        &[In("x", "float", false, false, false)],
        &[("out", "float")],
        "",
        body,
    )
}

fn tk() -> (&'static Path, &'static [PathBuf]) {
    let t = toolkit();
    (&t.nvrtc, &t.include)
}

/// `text`'s kernel `mlx::core::cu::<name>` compiled for `arch` with the PyPI toolkit.
fn compile(text: &str, name: &str, arch: &str) -> mlxcel_core::Result<Compiled> {
    let (nvrtc, include) = tk();
    nvrtc_compile(
        text,
        &format!("mlx::core::cu::{name}"),
        arch,
        include,
        Some(nvrtc),
    )
}

#[test]
fn mlx_shaped_argmax_kernel_compiles_to_a_cubin_with_the_stand_in_header() {
    // The real argmax kernel (fp16 logits) as MLX generates it: it reads x_shape, x_ndim and
    // slot_marker_shape, passed by value as MLX's Shape.
    let text = mlx_text(
        "custom_kernel_mlxcel_argmax_token_8_float16",
        "",
        &[
            In("x", "__half", true, false, true),
            In("tickets", "uint32_t", false, false, false),
            In("slot_marker", "uint8_t", true, false, false),
        ],
        &[("out", "uint32_t")],
        "  constexpr int SLOT_WORDS = 8;\n  using T_x = __half;\n",
        include_str!("../src/kernels/cuda/argmax.cu"),
    );
    let kernel = "custom_kernel_mlxcel_argmax_token_8_float16";
    let c = compile(&text, kernel, "sm_90a").unwrap_or_else(|e| panic!("{e}"));
    // A C++-mangled name inside mlx::core::cu, as MLX's own compile would look it up.
    assert!(
        c.lowered.starts_with("_ZN3mlx4core2cu") && c.lowered.contains("argmax_token"),
        "{}",
        c.lowered
    );
    // An ELF cubin of some size, not an empty or PTX image.
    assert!(c.image_len > 1000, "image of {} bytes", c.image_len);
    // PTX for a compute_ target (MLX's choice when NVRTC cannot emit SASS for the device).
    let ptx = compile(&text, kernel, "compute_90a").unwrap();
    assert!(ptx.image_len > 1000);
}

#[test]
fn shape_and_strides_parameters_are_indexed_as_mlx_passes_them() {
    // Strides are 64-bit; Shape entries 32-bit; both indexable with a runtime index, the
    // size() of MLX's arrays too.
    let text = mlx_text(
        "custom_kernel_shapes_bfloat16",
        "__device__ inline int twice(int v) { return 2 * v; }\n",
        &[In("a", "__nv_bfloat16", true, true, true)],
        &[("out", "float"), ("n", "int64_t")],
        "  using T_a = __nv_bfloat16;\n",
        "const int i = threadIdx.x % a_ndim;\nout[0] = static_cast<float>(a[0]) + twice(a_shape[i]);\nn[0] = a_strides[i] + a_shape.size();\n",
    );
    compile(&text, "custom_kernel_shapes_bfloat16", "sm_90a").unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_text_that_does_not_compile_is_an_error_with_nvrtc_s_log() {
    let (_, include) = tk();
    let text = float_kernel(
        "custom_kernel_broken",
        "out[0] = helper_mlx_does_not_define(x[0]);\n",
    );
    let err = compile(&text, "custom_kernel_broken", "sm_90a")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("helper_mlx_does_not_define") && err.contains("custom_kernel_broken"),
        "{err}"
    );
    // A library that is not there: a clear error, not a crash.
    let err = nvrtc_compile(
        &text,
        "mlx::core::cu::custom_kernel_broken",
        "sm_90a",
        include,
        Some(Path::new("/nonexistent/libnvrtc.so.13")),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("cannot load NVRTC"), "{err}");
}

#[test]
fn module_images_are_named_as_mlx_reads_them() {
    let dir = Path::new("/tmp/ptx");
    assert_eq!(
        module_image_path(dir, "custom_kernel_k_4_ab12"),
        Path::new("/tmp/ptx/custom_kernel_k_4_ab12.ptx")
    );
    // Over 245 characters: folders of 245, the rest as the file name.
    let long = "x".repeat(300);
    assert_eq!(
        module_image_path(dir, &long),
        dir.join("x".repeat(245))
            .join(format!("{}.ptx", "x".repeat(55)))
    );
}

#[test]
fn images_are_counted_by_mlx_s_custom_kernel_prefix_and_the_lasting_folder_names_version_and_gpu() {
    use mlxcel_core::mlx::kernel_cache::{images_in, lasting_dir};
    let dir = std::env::temp_dir().join(format!("mlxcel-kcache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("custom_kernel_a_1_ff.ptx"), [0u8; 100]).unwrap();
    std::fs::write(dir.join("custom_kernel_a_1_ff.txt"), b"names").unwrap();
    std::fs::write(dir.join("custom_kernel_b_2_ee.ptx"), [0u8; 50]).unwrap();
    // MLX's own kernels: not mlxcel's.
    std::fs::write(dir.join("binary_ops_add.ptx"), [0u8; 999]).unwrap();
    assert_eq!(images_in(&dir), (2, 150));
    assert_eq!(images_in(&dir.join("missing")), (0, 0));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        lasting_dir(Path::new("/home/u/.cache/mlxcel"), "0.32.4", "sm_90"),
        Path::new("/home/u/.cache/mlxcel/mlx-ptx/0.32.4/sm_90")
    );
}

#[test]
fn queued_compiles_run_side_by_side_and_write_mlx_s_two_files() {
    use mlxcel_core::mlx::kernel_cache::{queue_compile, take_failure, wait};
    let (nvrtc, include) = tk();
    let dir = std::env::temp_dir().join(format!("mlxcel-kcache-queue-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let names: Vec<String> = (0..6).map(|i| format!("custom_kernel_q{i}")).collect();
    let started = std::time::Instant::now();
    for (i, name) in names.iter().enumerate() {
        let text = mlx_text(
            name,
            "",
            &[In("x", "float", true, false, false)],
            &[("out", "float")],
            &format!("  constexpr int K = {i};\n"),
            "out[threadIdx.x] = x[threadIdx.x % x_shape[0]] * K;\n",
        );
        // A nested folder that does not exist yet: the worker makes it.
        let image = module_image_path(&dir.join("nested"), &format!("{name}_{i:x}"));
        queue_compile(name, &text, &image, "sm_90a", include, Some(nvrtc));
    }
    // One that fails: reported through take_failure, the others still written.
    let broken = float_kernel("custom_kernel_qbad", "out[0] = not_declared_anywhere;\n");
    queue_compile(
        "custom_kernel_qbad",
        &broken,
        &module_image_path(&dir, "custom_kernel_qbad_0"),
        "sm_90a",
        include,
        Some(nvrtc),
    );
    wait();
    let waited = started.elapsed();
    // The profile's counters: this test's seven compiles (other tests of this binary queue none).
    let stats = mlxcel_core::mlx::kernel_cache::stats();
    assert_eq!(stats.compiled, 7, "{stats:?}");
    assert!(
        stats.compile_seconds > 0.0 && stats.waited_seconds > 0.0,
        "{stats:?}"
    );
    assert!(
        stats.waited_seconds <= waited.as_secs_f64() + 1e-3,
        "{stats:?}"
    );
    for (i, name) in names.iter().enumerate() {
        let image = module_image_path(&dir.join("nested"), &format!("{name}_{i:x}"));
        let bytes = std::fs::read(&image).unwrap_or_else(|e| panic!("{}: {e}", image.display()));
        assert!(
            bytes.starts_with(b"\x7fELF"),
            "{} is no cubin",
            image.display()
        );
        // MLX's names file: `<kernel name>\t<lowered name>` per line.
        let names_file = std::fs::read_to_string(image.with_extension("txt")).unwrap();
        let (kernel, lowered) = names_file.trim_end().split_once('\t').unwrap();
        assert_eq!(kernel, format!("mlx::core::cu::{name}"));
        assert!(lowered.starts_with("_ZN3mlx4core2cu"), "{lowered}");
    }
    assert!(!module_image_path(&dir, "custom_kernel_qbad_0").exists());
    let failure = take_failure().expect("the broken kernel's failure");
    assert!(
        failure.contains("custom_kernel_qbad") && failure.contains("not_declared_anywhere"),
        "{failure}"
    );
    assert_eq!(take_failure(), None);
    // No temporary files left beside the images.
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("nested"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    eprintln!("7 queued compiles in {waited:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
