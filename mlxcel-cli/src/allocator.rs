//! The process's allocator: jemalloc instead of glibc's malloc, with the `jemalloc` feature
//! (default; `--no-default-features` builds with the system allocator).
//!
//! Why it matters: with the submit thread (`mlxcel_core::mlx::submit`) the loop's
//! thread allocates each step's graph (MLX array descriptions, primitives, vectors) and the
//! worker frees most of it while MLX encodes the step. glibc returns a chunk freed by another
//! thread to the arena of the thread that allocated it, under that arena's lock, while the
//! owner allocates from it: both threads contend on every overflowing free. jemalloc keeps
//! per-thread caches and batches frees of remote memory. Measured on the H200 (session 36, turbo4
//! at 32K): the worker's `async_eval` took 2.6 ms per step with glibc against 1.3-1.8 with
//! jemalloc, and only with jemalloc did the thread make the decode device-bound (407 tok/s
//! against 304-347 on one thread). The unprefixed symbols make it the `malloc` of the whole
//! process (libmlx's C++ `new` and the CUDA driver's included), not only of Rust's
//! allocations.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The allocator this binary was built with (for `mlxcel info` and the profile).
pub fn name() -> &'static str {
    if cfg!(feature = "jemalloc") {
        "jemalloc"
    } else {
        "system (glibc)"
    }
}
