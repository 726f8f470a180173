// Shared by the build scripts of every crate that links libmlx (included with `include!`).
// `cargo:rustc-link-arg` does not propagate to dependent crates, so each crate whose
// binaries or tests load libmlx sets the RUNPATH itself from what mlxcel-core found.

/// Emits the linker arguments for binaries and tests of the calling crate.
/// `lib` is the folder holding libmlx; `backend` is "cpu", "cuda" or "metal".
#[allow(dead_code)]
fn emit_mlx_link_args(lib: &str, backend: &str) {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
        return;
    }
    // RUNPATH (not RPATH) so LD_LIBRARY_PATH can swap in the CUDA libmlx.so of the same
    // MLX version at run time (../shared/device/activate.sh relies on this).
    println!("cargo:rustc-link-arg=-Wl,--enable-new-dtags,-rpath,{lib}");
    if backend == "cuda" {
        // The CUDA libmlx.so resolves the CUDA runtime pip packages at run time only.
        println!("cargo:rustc-link-arg=-Wl,--allow-shlib-undefined");
    }
}

/// For dependent crates: read what mlxcel-core's build script exported (`links = "mlx"`).
#[allow(dead_code)]
fn emit_mlx_link_args_from_dep() {
    let lib = std::env::var("DEP_MLX_LIBDIR")
        .expect("DEP_MLX_LIBDIR is unset: this crate must depend on mlxcel-core directly");
    let backend = std::env::var("DEP_MLX_BACKEND").unwrap_or_else(|_| "cpu".into());
    emit_mlx_link_args(&lib, &backend);
}
