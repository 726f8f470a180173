//! MLX's CUDA graph commit limits, tuned for compressed KV caches.
//!
//! MLX's CUDA backend records a decode step's kernels into CUDA graphs and closes
//! (commits) the graph it is recording after `MLX_MAX_OPS_PER_BUFFER` nodes or once the
//! inputs it has seen pass `MLX_MAX_MB_PER_BUFFER` MB (100 and 1000 on sm_90 in MLX
//! 0.32). Every input counts its whole buffer, so at long context the cache buffers
//! trigger the byte limit every few layers: a turbo4 step at 128K passes ~16 GB of inputs
//! (the packed caches twice per layer, once read by attention and once handed to the
//! in-place append, plus the weights), about 16 commits on top of the ~5 the node limit
//! makes. Each commit is host work (graph update and launch), and at 128K turbo4 is
//! host-bound. Lifting the limit is opt-in (`MLXCEL_LIFT_GRAPH_BYTES=1`): on the H200 it
//! measured 127.7 -> 162.5 tok/s in one call and 150.6 -> 115.1 in the next, because host
//! time per step varies between runs of one configuration by more than the effect
//! (session 8, `benchmarks/results/2026-11-30-h200-session8.md`, ADR 0007). Session 15's
//! interleaved A/B with the device clock settled it: lifted, turbo4's 128K step was 0.19 ms
//! longer (the device idles while the larger graphs are built).
//!
//! MLX reads the variable once, when its CUDA command encoder is created, so
//! [`lift_for_compressed_kv`] must run before the first GPU operation. It leaves fp16
//! caches on MLX's default: for them the same setting made the device slower (fp16 at
//! 128K: 99.2 -> 76.7 tok/s, session 7), so fp16 baselines keep MLX's best-measured
//! configuration. It also leaves Metal alone (MLX's Metal backend reads the same variable
//! for its command buffers; never measured here) and never overrides a value the user set.

use super::device::{gpu_backend, GpuBackend};
use crate::flags;

/// MLX's environment variable for the per-graph input byte limit (MB).
pub const MAX_MB_VAR: &str = "MLX_MAX_MB_PER_BUFFER";

/// The value set when the limit is lifted: far above any step's input bytes.
pub const LIFTED_MB: &str = "1000000";

/// What [`lift_for_compressed_kv`] decided, for `--profile` and the JSON stats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphLimit {
    /// MLX's own default limit.
    MlxDefault,
    /// Lifted by mlxcel (`MLX_MAX_MB_PER_BUFFER=1000000`).
    Lifted,
    /// The user set `MLX_MAX_MB_PER_BUFFER` (value kept).
    UserSet(String),
}

impl GraphLimit {
    /// One line for the profile.
    pub fn describe(&self) -> String {
        match self {
            GraphLimit::MlxDefault => "MLX default".to_string(),
            GraphLimit::Lifted => format!("lifted ({MAX_MB_VAR}={LIFTED_MB})"),
            GraphLimit::UserSet(v) => format!("{MAX_MB_VAR}={v} (set by the user)"),
        }
    }
}

/// The decision, without side effects: lift only on CUDA, only for a compressed KV cache,
/// only with `MLXCEL_LIFT_GRAPH_BYTES=1`, and never over a user's value.
pub fn decide(
    flag_on: bool,
    compressed_kv: bool,
    backend: GpuBackend,
    user_value: Option<String>,
) -> GraphLimit {
    match user_value {
        Some(v) => GraphLimit::UserSet(v),
        None if flag_on && compressed_kv && backend == GpuBackend::Cuda => GraphLimit::Lifted,
        None => GraphLimit::MlxDefault,
    }
}

/// Sets `MLX_MAX_MB_PER_BUFFER` for a compressed KV cache on CUDA ([`decide`]). Call it
/// from the main thread before any MLX GPU work and before other threads start (it writes
/// the process environment).
pub fn lift_for_compressed_kv(compressed_kv: bool) -> GraphLimit {
    let limit = decide(
        flags::LIFT_GRAPH_BYTES.enabled(),
        compressed_kv,
        gpu_backend(),
        std::env::var(MAX_MB_VAR).ok(),
    );
    if limit == GraphLimit::Lifted {
        std::env::set_var(MAX_MB_VAR, LIFTED_MB);
        tracing::debug!("{MAX_MB_VAR}={LIFTED_MB} (compressed KV cache on CUDA)");
    }
    limit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifts_only_for_compressed_kv_on_cuda_and_never_over_the_user() {
        use GpuBackend::{Cuda, Metal};
        assert_eq!(decide(true, true, Cuda, None), GraphLimit::Lifted);
        assert_eq!(decide(true, false, Cuda, None), GraphLimit::MlxDefault);
        assert_eq!(decide(false, true, Cuda, None), GraphLimit::MlxDefault);
        assert_eq!(decide(true, true, Metal, None), GraphLimit::MlxDefault);
        assert_eq!(
            decide(true, true, GpuBackend::None, None),
            GraphLimit::MlxDefault
        );
        assert_eq!(
            decide(true, true, Cuda, Some("50".into())),
            GraphLimit::UserSet("50".into())
        );
        assert!(GraphLimit::Lifted.describe().contains(LIFTED_MB));
    }

    #[test]
    fn nothing_is_set_without_a_cuda_backend() {
        // On the CPU-only build the process environment must stay untouched.
        if gpu_backend() == GpuBackend::Cuda || std::env::var(MAX_MB_VAR).is_ok() {
            return;
        }
        assert_eq!(lift_for_compressed_kv(true), GraphLimit::MlxDefault);
        assert!(std::env::var(MAX_MB_VAR).is_err());
    }
}
