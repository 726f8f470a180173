//! The device-clock probe (`kernels::device_clock`, `MLXCEL_DEVICE_CLOCK`): on CUDA it passes
//! the token through unchanged and records increasing device timestamps around work that
//! depends on the first probe and feeds the second; elsewhere it adds nothing (`None`).

use mlxcel_core::kernels::device_clock::probe;
use mlxcel_core::mlx::kernel::KernelBackend;
use mlxcel_core::{Array, Dtype};

#[test]
fn probe_passes_the_token_and_orders_its_clocks_or_is_absent() {
    let token = Array::from_slice(&[4242u32], &[1]).unwrap();
    let first = probe(&token).unwrap();
    if KernelBackend::current() != Some(KernelBackend::Cuda) {
        assert!(first.is_none(), "the probe exists only on CUDA");
        return;
    }
    let (tok, c0) = first.expect("CUDA backend: a probe");
    // Work that depends on the first probe: a 2048^2 matmul seeded by the token.
    let n = 2048;
    let seed = tok.astype(Dtype::F32).unwrap().reshape(&[1, 1]).unwrap();
    let a = Array::from_slice(&vec![1e-3f32; n * n], &[n as i32, n as i32])
        .unwrap()
        .multiply(&seed)
        .unwrap();
    // Averaging matrix: the values stay finite (every entry stays 4.242).
    let avg = Array::from_slice(&vec![1.0 / n as f32; n * n], &[n as i32, n as i32]).unwrap();
    let mut x = a;
    for _ in 0..8 {
        x = x.matmul(&avg).unwrap();
    }
    let after = x
        .sum(&[0, 1], false)
        .unwrap()
        .reshape(&[1])
        .unwrap()
        .add(&tok.astype(Dtype::F32).unwrap())
        .unwrap()
        .astype(Dtype::U32)
        .unwrap();
    let (_, c1) = probe(&after).unwrap().unwrap();
    assert_eq!(tok.item::<u32>().unwrap(), 4242);
    let (t0, t1) = (c0.item::<u64>().unwrap(), c1.item::<u64>().unwrap());
    eprintln!("device clock: {} ns around 8 matmuls of {n}^2", t1 - t0);
    assert!(t0 > 0 && t1 > t0, "clocks {t0} then {t1}");
    assert!(
        t1 - t0 < 10_000_000_000,
        "more than 10 s between the probes"
    );
}
