//! Host cost of building MLX graph nodes through mlxcel's bridge, per op kind: the part of
//! a decode step's host time that does not depend on the backend (graph construction; on
//! CUDA, evaluation adds MLX's per-node encoding). Prints microseconds per op. On the CPU
//! backend MLX's fast ops (rms_norm, rope, SDPA) build their multi-op fallback graphs, so
//! their numbers here overstate what they cost on a GPU backend (one primitive each).
//!
//!     cargo run --release -p mlxcel-core --example host_op_cost

use std::time::Instant;

use mlxcel_core::mlx::fast::rms_norm;
use mlxcel_core::{Array, Dtype, Result};

fn time(name: &str, n: usize, mut f: impl FnMut() -> Result<Array>) -> Result<()> {
    let mut keep = Vec::with_capacity(n);
    for _ in 0..50 {
        keep.push(f()?);
    }
    keep.clear();
    let t = Instant::now();
    for _ in 0..n {
        keep.push(f()?);
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!("{name:<28} {us:6.2} us per op (graph build only)");
    Ok(())
}

fn main() -> Result<()> {
    let x = Array::zeros(&[1, 1, 4096], Dtype::F16)?;
    let w = Array::zeros(&[4096], Dtype::F16)?;
    x.eval()?;
    w.eval()?;
    let n = 20_000;
    time("add", n, || x.add(&x))?;
    time("reshape", n, || x.reshape(&[1, 1, 32, 128]))?;
    time("transpose", n, || {
        x.reshape(&[1, 1, 32, 128])?.transpose(&[0, 2, 1, 3])
    })?;
    time("slice_axis", n, || x.slice_axis(2, 0, 1024))?;
    time("rms_norm", n, || rms_norm(&x, Some(&w), 1e-5))?;
    time("shape() query x4", n, || {
        let s = x.shape();
        let _ = (x.shape(), x.shape(), x.shape());
        x.reshape(&s)
    })?;
    // Evaluating a chain on the CPU backend, for scale (not the CUDA encoding cost).
    let t = Instant::now();
    let mut y = x.clone();
    for _ in 0..1000 {
        y = y.add(&x)?;
    }
    let built = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    y.eval()?;
    println!(
        "1000-add chain: built in {built:.2} ms, evaluated (CPU backend) in {:.2} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}
