//! `MLXCEL_HOST_PROFILE=FILE`: a sampling profile of the host CPU during decoding, written
//! as collapsed stacks (`frame;frame;... count` per line, the input of flamegraph tools).
//!
//! Why: a decode step's host time (building the step's graph, then MLX submitting it) sets
//! tok/s whenever it exceeds the GPU's time per step, as it did for turbo4 at 32K on the H200
//! in sessions 30-35 (2.6-3.5 ms of host against 2.45 ms of device time). The build profile
//! (`MLXCEL_BUILD_PROFILE`) splits it by model part; this says which functions, down into
//! MLX and the CUDA driver. The device machines have no `perf`, so the sampler is in-process
//! (the `pprof` crate: `SIGPROF` timer, stack unwinding). Built only with the cargo feature
//! `host-profile` (a diagnostic; the default binary does not carry the sampler).

use anyhow::Result;

/// The env variable naming the output file.
pub const ENV: &str = "MLXCEL_HOST_PROFILE";

/// A running profile, if `MLXCEL_HOST_PROFILE` is set.
pub struct HostProfile {
    #[cfg(feature = "host-profile")]
    guard: pprof::ProfilerGuard<'static>,
    #[cfg(feature = "host-profile")]
    path: std::path::PathBuf,
}

/// An error where `MLXCEL_HOST_PROFILE` is set but this binary cannot sample: said before a
/// run starts, not after it.
pub fn check() -> Result<()> {
    if cfg!(feature = "host-profile") || !requested() {
        return Ok(());
    }
    // Without the feature this is the error that says how to rebuild.
    start_at(std::env::var_os(ENV).unwrap_or_default().into(), HZ).map(|_| ())
}

/// Whether `MLXCEL_HOST_PROFILE` asks for a profile.
pub fn requested() -> bool {
    std::env::var_os(ENV).is_some()
}

/// Samples per second.
const HZ: i32 = 997;

thread_local! {
    /// The running profile (started and finished on the decode loop's thread), or why it
    /// could not start.
    static RUNNING: std::cell::RefCell<Option<Result<HostProfile>>> =
        const { std::cell::RefCell::new(None) };
}

/// Starts sampling now (a `GenerateParams::on_steady_decode` hook: no arguments, no result;
/// a failure to start is kept for [`finish`] to report).
pub fn start_now() {
    if let Some(path) = std::env::var_os(ENV) {
        let started = start_at(path.into(), HZ);
        RUNNING.with(|r| *r.borrow_mut() = Some(started));
    }
}

/// Stops the profile [`start_now`] started and writes it; the number of samples, `None` if
/// none ran (not requested, or decoding ended before steady steps).
pub fn finish() -> Result<Option<usize>> {
    match RUNNING.with(|r| r.borrow_mut().take()) {
        None => Ok(None),
        Some(started) => started?.finish().map(Some),
    }
}

#[cfg(feature = "host-profile")]
fn start_at(path: std::path::PathBuf, hz: i32) -> Result<HostProfile> {
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(hz)
        // libgcc: its unwinder is what the sampler calls; malloc and friends (libc) stay in.
        .blocklist(&["libgcc", "vdso"])
        .build()
        .map_err(|e| anyhow::anyhow!("{ENV}: cannot start the sampler: {e}"))?;
    Ok(HostProfile { guard, path })
}

#[cfg(not(feature = "host-profile"))]
fn start_at(_path: std::path::PathBuf, _hz: i32) -> Result<HostProfile> {
    anyhow::bail!(
        "{ENV} is set, but this mlxcel was built without the sampler: rebuild with \
         `cargo build --release -p mlxcel-cli --features host-profile`"
    )
}

impl HostProfile {
    /// Stops sampling and writes the collapsed stacks (root first, per thread), heaviest
    /// first; returns the number of samples.
    #[cfg(feature = "host-profile")]
    fn finish(self) -> Result<usize> {
        use std::io::Write;
        let report = self
            .guard
            .report()
            .build()
            .map_err(|e| anyhow::anyhow!("{ENV}: cannot build the report: {e}"))?;
        let mut lines: Vec<(isize, String)> = report
            .data
            .iter()
            .map(|(frames, &count)| {
                let mut stack = vec![frames.thread_name.replace(';', ":")];
                for frame in frames.frames.iter().rev() {
                    // Inlined functions come innermost first within one frame.
                    for sym in frame.iter().rev() {
                        stack.push(sym.name().replace(';', ":"));
                    }
                }
                (count, stack.join(";"))
            })
            .collect();
        lines.sort_by_key(|l| std::cmp::Reverse(l.0));
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(&self.path).map_err(|e| {
                anyhow::anyhow!("{ENV}: cannot create {}: {e}", self.path.display())
            })?);
        let mut total = 0usize;
        for (count, stack) in &lines {
            writeln!(out, "{stack} {count}")?;
            total += *count as usize;
        }
        out.flush()?;
        Ok(total)
    }

    #[cfg(not(feature = "host-profile"))]
    fn finish(self) -> Result<usize> {
        Ok(0)
    }
}
