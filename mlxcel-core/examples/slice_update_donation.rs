//! Does a decode step's `slice_update` of an fp16 KV cache write in place, or copy the cache?
//!
//! MLX writes a `slice_update` into its input's buffer only when it may take that buffer over
//! ("donation": nothing else holds it); otherwise it copies the whole input into a new buffer
//! first. The fp16 cache (`kv::buffer::GrowBuffer`) appends each decode token that way. On
//! CUDA, MLX decides when it encodes the op on the host; if the previous step's attention
//! still holds the buffer then (the pipelined decode loop queues step n+1 before step n has
//! run), the append copies the layer's cache: 268 MB per side per layer at 128K for a
//! Llama-3-8B shape. Session 22 saw fp16's 128K decode step take ~6.2 ms while the host was
//! less than ~3 ms ahead of the GPU and ~9 ms once it was a whole step ahead; this probe
//! tells whether such copies happen.
//!
//! It runs `--steps` decode-like steps over `--layers` K and V caches of `--ctx` positions
//! (B 1, 8 KV heads, 32 query heads, D 128): per layer one `GrowBuffer::append` of K and V
//! (the fp16 cache's own append) and MLX's SDPA over the filled part, first synchronously (each step waited for) and then pipelined
//! like `generate` (step n+1 queued before waiting for step n), and last as a control that
//! holds each step's previous caches on the host until the step is queued (no donation is
//! possible: every append must count as a copy, or the probe cannot see copies). It prints
//! `kv::buffer::append_copies` (the count `generate --profile` reports as `kv appends`: the
//! appends whose output landed in another buffer than their input) and the wall time per step.
//!
//!     cargo run --release -p mlxcel-core --example slice_update_donation -- --ctx 4096 --layers 4 --steps 16

use std::error::Error;
use std::time::Instant;

use mlxcel_core::attention::dense_attention;
use mlxcel_core::kv::buffer::{append_copies, reset_append_copies, GrowBuffer};
use mlxcel_core::mlx::array::async_eval_all;
use mlxcel_core::mlx::device::synchronize;
use mlxcel_core::mlx::random::normal;
use mlxcel_core::{Array, Dtype};

const KV_HEADS: i32 = 8;
const Q_HEADS: i32 = 32;
const HEAD_DIM: i32 = 128;

/// How a run waits and what it holds.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Each step waited for before the next is built.
    Sync,
    /// Step n+1 queued before waiting for step n (the `generate` loop).
    Pipelined,
    /// Sync, with the previous caches held until the step is queued (forces copies).
    HeldControl,
}

/// One run: returns (appends that copied, appends whose outcome was seen, ms per step).
fn run(
    ctx: usize,
    layers: usize,
    steps: usize,
    mode: Mode,
) -> Result<(usize, usize, f64), Box<dyn Error>> {
    let mut caches = Vec::with_capacity(layers);
    for _ in 0..layers {
        let (mut k, mut v) = (GrowBuffer::new(Dtype::F16), GrowBuffer::new(Dtype::F16));
        for b in [&mut k, &mut v] {
            // Every position allocated up front and all but the last `steps` counted as
            // filled, so that each step's attention reads almost the whole cache.
            b.reserve([1, KV_HEADS, HEAD_DIM], ctx)?;
            b.advance(ctx - steps)?;
        }
        async_eval_all(&[full(&k)?, full(&v)?])?;
        caches.push((k, v));
    }
    synchronize()?;
    reset_append_copies();
    let scale = 1.0 / (HEAD_DIM as f32).sqrt();
    let mut pending: Option<Array> = None;
    let t = Instant::now();
    for _ in 0..steps {
        let mut x = normal(&[1, Q_HEADS, 1, HEAD_DIM], Dtype::F16, None)?;
        let mut held = Vec::new();
        for (k, v) in caches.iter_mut() {
            if mode == Mode::HeldControl {
                held.extend([full(k)?.clone(), full(v)?.clone()]);
            }
            let new = normal(&[1, KV_HEADS, 1, HEAD_DIM], Dtype::F16, None)?;
            k.append(&new)?;
            v.append(&new)?;
            x = dense_attention(&x, &filled(k)?, &filled(v)?, scale)?;
        }
        async_eval_all(&[&x])?;
        drop(held);
        if mode == Mode::Pipelined {
            if let Some(previous) = pending.replace(x) {
                previous.eval()?;
            }
        } else {
            x.eval()?;
        }
    }
    if let Some(last) = pending {
        last.eval()?;
    }
    synchronize()?;
    // Each append's outcome is seen at the buffer's next append (kv::buffer::append_copies).
    let (seen, copied) = append_copies();
    Ok((copied, seen, t.elapsed().as_secs_f64() * 1e3 / steps as f64))
}

/// The whole allocated buffer of a cache side.
fn full(b: &GrowBuffer) -> Result<&Array, Box<dyn Error>> {
    b.full().ok_or_else(|| "cache buffer not allocated".into())
}

/// The filled positions of a cache side.
fn filled(b: &GrowBuffer) -> Result<Array, Box<dyn Error>> {
    b.view()?.ok_or_else(|| "empty cache".into())
}

/// The positive integer after `name` in `args`, or `default` when `name` is absent.
fn arg(args: &[String], name: &str, default: usize) -> Result<usize, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .filter(|&v| v > 0)
            .ok_or_else(|| format!("{name} takes a positive integer")),
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let ctx = arg(&args, "--ctx", 4096)?;
    let layers = arg(&args, "--layers", 4)?;
    let steps = arg(&args, "--steps", 16)?;
    if steps >= ctx {
        return Err(format!("--steps {steps} must be below --ctx {ctx}").into());
    }
    println!(
        "ctx {ctx}, {layers} layers, {steps} steps, {} MB of K+V per layer",
        2 * ctx * (KV_HEADS * HEAD_DIM) as usize * 2 / 1_000_000
    );
    for (mode, name) in [
        (Mode::Sync, "sync"),
        (Mode::Pipelined, "pipelined"),
        (Mode::HeldControl, "control"),
    ] {
        let (copies, appends, ms) = run(ctx, layers, steps, mode)?;
        println!("{name:<10} {copies} of {appends} appends copied the cache; {ms:.3} ms per step");
    }
    Ok(())
}
