//! Device-side timestamps of a decode step (`MLXCEL_DEVICE_CLOCK`): a one-thread CUDA kernel
//! that passes a token through and records the GPU's global nanosecond timer
//! (`%globaltimer`) when it runs.
//!
//! Why: on the H200 the pipelined decode loop waits for the device after every step although
//! a step's kernels (ncu) take about half the step time (benchmarks/results/
//! 2026-11-29-h200-session5.md). Whether the rest is spent inside a step (gaps between
//! kernels and CUDA graphs) or between steps (the device idle until the host launches the
//! next one) cannot be read from host clocks or from ncu. Putting the probe on the step's
//! input token (first node) and on its output token (last node) measures both on the device.
//! The token passes through the probe so that graph order follows data order: a probe with
//! no consumer could run anywhere in its CUDA graph.

use crate::error::{Error, Result};
use crate::mlx::kernel::{cached_by_name, KernelBackend, KernelSource, Launch};
use crate::mlx::{Array, Dtype};

const BODY: &str = include_str!("cuda/device_clock.cu");

fn source() -> KernelSource {
    KernelSource::new(
        "mlxcel_device_clock",
        &["tok", "after"],
        &["tok_out", "clock"],
        BODY,
    )
}

thread_local! {
    /// The launch probe's input: an evaluated constant, so the probe depends on nothing of
    /// the step and is a root of the first CUDA graph the step is encoded into.
    static LAUNCH_INPUT: std::cell::RefCell<Option<Array>> = const { std::cell::RefCell::new(None) };
}

/// `(token, clock)`: the token (a `[1]` uint32 array) passed through the probe and a `[1]`
/// uint64 array holding the device time in nanoseconds at which the probe ran. `None` when
/// the loaded backend is not CUDA (the probe exists only there).
pub fn probe(token: &Array) -> Result<Option<(Array, Array)>> {
    probe_after(token, token)
}

/// A probe with no input from the step (a constant token): fed into the step's first
/// probe as its `after` input ([`probe_after`]), it is encoded first and runs as soon as
/// the step's first CUDA graph starts on the device, while the first probe waits for the
/// previous step's token. The gap between the two shows whether the device was late to
/// start the step's graph or to get its token. Returns `(token, clock)` like [`probe`].
pub fn launch_probe() -> Result<Option<(Array, Array)>> {
    let input = match LAUNCH_INPUT.with(|c| c.borrow().clone()) {
        Some(a) => a,
        None => {
            let a = Array::from_slice(&[0u32], &[1])?;
            a.eval()?;
            LAUNCH_INPUT.with(|c| *c.borrow_mut() = Some(a.clone()));
            a
        }
    };
    probe(&input)
}

/// [`probe`] that also runs after `after` (any evaluated-or-pending array, only ordered
/// after, never read).
pub fn probe_after(token: &Array, after: &Array) -> Result<Option<(Array, Array)>> {
    if KernelBackend::current() != Some(KernelBackend::Cuda) {
        return Ok(None);
    }
    if token.dtype() != Dtype::U32 || token.size() != 1 {
        return Err(Error::invalid(
            "device_clock",
            format!(
                "expected a one-element uint32 token, got {} of shape {:?}",
                token.dtype(),
                token.shape()
            ),
        ));
    }
    let kernel = cached_by_name(KernelBackend::Cuda, "device_clock", 0, source)?;
    let launch = Launch::new(&[token, after], [32, 1, 1], [32, 1, 1])
        .output(&token.shape(), Dtype::U32)
        .output(&[1], Dtype::U64);
    let mut out = kernel.call(&launch)?;
    let clock = out.pop();
    let tok = out.pop();
    match (tok, clock) {
        (Some(t), Some(c)) => Ok(Some((t, c))),
        _ => Err(Error::invalid(
            "device_clock",
            "kernel returned too few outputs",
        )),
    }
}
