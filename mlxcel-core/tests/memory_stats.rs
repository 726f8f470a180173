//! MLX allocator statistics. A test binary of its own: the counters are process-wide,
//! so tests allocating in parallel threads would disturb them.

use mlxcel_core::mlx::{device, memory};
use mlxcel_core::{Array, Dtype};

#[test]
fn memory_statistics_track_allocations() {
    memory::reset_peak_memory().unwrap();
    let before = memory::active_memory().unwrap();
    let n = 4 << 20; // 16 MiB of f32
    let a = Array::full(&[n], 1.5, Dtype::F32).unwrap();
    a.eval().unwrap();
    let during = memory::active_memory().unwrap();
    assert!(
        during >= before + 16 * 1024 * 1024,
        "active {before} -> {during}"
    );
    assert!(memory::peak_memory().unwrap() >= during);
    drop(a);
    // The CUDA allocator frees on the stream: wait for it before reading the counter.
    device::synchronize().unwrap();
    memory::clear_cache().unwrap();
    assert!(memory::active_memory().unwrap() < during);
}
