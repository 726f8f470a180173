//! The host-side record of a generation's decode steps: build, submit and wait times,
//! the CUDA profiler range around chosen steps, the device-clock timeline and the build
//! profile per model part; and the statistics `--profile` derives from them.

use std::time::Instant;

use mlxcel_core::build_profile;
use mlxcel_core::flags;
use mlxcel_core::mlx::array::async_eval_all;
use mlxcel_core::mlx::device;
use mlxcel_core::mlx::submit::{SubmitThread, Submitted};
use mlxcel_core::Array;

use super::step_ab::{StepAb, StepAbStats};
use super::BuiltStep;
use crate::error::Result;

/// One pipelined decode step's timestamps (ns). Host times are the Unix clock; device
/// times the GPU's `%globaltimer` (Unix-based too on Linux drivers, but with an unknown
/// offset that `benchmarks/gpu/timeline.py` estimates from the waits: a wait cannot end
/// before the step's last node ran).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct StepTimeline {
    /// Host: the step's graph building started (the previous step is on the device).
    pub host_build_start: u64,
    /// Host: MLX's `async_eval` of the step was entered (on the submit thread when there is
    /// one) ...
    pub host_submit_start: u64,
    /// ... and returned (every CUDA graph of the step launched).
    pub host_submit_end: u64,
    /// Host: the loop started waiting for this step's token (after queueing the next) ...
    pub host_wait_start: u64,
    /// ... and had it (0 for both when the step was never waited for).
    pub host_wait_end: u64,
    /// Device: the step's first CUDA graph started (a probe with no input from the step).
    pub device_launch: u64,
    /// Device: the step's first node ran (the probe on its input token) ...
    pub device_first: u64,
    /// ... and its last (the probe on its output token).
    pub device_last: u64,
}

#[cfg(test)]
impl StepTimeline {
    /// A step known only by its device span `first..last` (ns; host marks 0), for tests.
    pub(super) fn device_only(first: u64, last: u64) -> StepTimeline {
        StepTimeline {
            host_build_start: 0,
            host_submit_start: 0,
            host_submit_end: 0,
            host_wait_start: 0,
            host_wait_end: 0,
            device_launch: first,
            device_first: first,
            device_last: last,
        }
    }
}

/// `seconds` before the Unix time `end_ns`.
fn before(end_ns: u64, seconds: f64) -> u64 {
    end_ns.saturating_sub((seconds * 1e9) as u64)
}

/// The host's Unix clock in nanoseconds (for [`StepTimeline`]).
fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Where the pipelined loop's steps are scheduled.
pub(super) enum Submitter {
    /// MLX's `async_eval` on the loop's thread, between building one step and the next.
    OnThisThread,
    /// On a second thread, while the loop builds the next step (`mlx::submit`).
    Worker(SubmitThread),
}

/// The host-side record of the decode steps: how long building each took, and the CUDA
/// profiler range around chosen steps ([`flags::CUDA_PROFILE_STEPS`]).
pub(super) struct StepRecorder {
    pub(super) build_times: Vec<f64>,
    /// Pipelined loop: time in `async_eval` per step (part of `build_times`).
    pub(super) submit_times: Vec<f64>,
    /// Pipelined loop: time waiting for the device's token per step.
    pub(super) wait_times: Vec<f64>,
    /// Pipelined loop with `MLXCEL_DEVICE_CLOCK`: each step's (launch, first node, last node)
    /// device timestamps, still on the device ...
    clocks: Vec<[Array; 3]>,
    /// ... and its host timestamps: (build start, submit start, submit end) per queued step
    /// and (start, end) per wait.
    host_marks: Vec<[u64; 3]>,
    wait_marks: Vec<[u64; 2]>,
    /// With the build profile on: each step's build time per model part ...
    parts: Vec<Vec<(&'static str, f64)>>,
    /// ... and the MLX operations each pipelined step queued.
    ops: Vec<usize>,
    profile: Option<(usize, usize)>,
    /// The in-process A/B, if any: [`StepRecorder::queue`] sets its flag for each step.
    step_ab: Option<StepAb>,
}

impl StepRecorder {
    pub(super) fn new(capacity: usize, step_ab: Option<StepAb>) -> StepRecorder {
        StepRecorder {
            build_times: Vec::with_capacity(capacity),
            submit_times: Vec::with_capacity(capacity),
            wait_times: Vec::with_capacity(capacity),
            clocks: Vec::new(),
            host_marks: Vec::new(),
            wait_marks: Vec::new(),
            parts: Vec::new(),
            ops: Vec::new(),
            profile: flags::cuda_profile_steps(),
            step_ab,
        }
    }

    /// Runs `build` as the next decode step, timing it, then `finish` on its result (the
    /// synchronous loop's evaluation: inside the profiler range, outside the build time).
    pub(super) fn step<T, U>(
        &mut self,
        build: impl FnOnce() -> Result<T>,
        finish: impl FnOnce(T) -> Result<U>,
    ) -> Result<U> {
        self.profile_boundary(true);
        let t = Instant::now();
        let built = build()?;
        self.build_times.push(t.elapsed().as_secs_f64());
        let parts = build_profile::take();
        if !parts.is_empty() {
            self.parts.push(parts);
        }
        let out = finish(built)?;
        self.profile_boundary(false);
        Ok(out)
    }

    /// The pipelined loop's step: builds it (timed, inside the profiler range like
    /// [`StepRecorder::step`]), schedules it through `submitter` and keeps its device clocks,
    /// if any, with its host marks (read off the Unix clock once per step and placed by the
    /// measured durations; steps without clocks read no wall clock). Returns the step's token
    /// and the array to read it from.
    pub(super) fn queue(
        &mut self,
        build: impl FnOnce() -> Result<BuiltStep>,
        submitter: &mut Submitter,
    ) -> Result<(Array, Array)> {
        if let Some(ab) = self.step_ab.as_mut() {
            ab.before_step();
        }
        self.profile_boundary(true);
        let t = Instant::now();
        let step = build()?;
        let built = t.elapsed().as_secs_f64();
        let parts = build_profile::take();
        if !parts.is_empty() {
            self.parts.push(parts);
        }
        self.ops.extend(step.ops);
        let outputs = step.outputs();
        match submitter {
            Submitter::OnThisThread => {
                let ts = Instant::now();
                async_eval_all(&outputs.iter().collect::<Vec<_>>())?;
                let submit = ts.elapsed().as_secs_f64();
                self.build_times.push(t.elapsed().as_secs_f64());
                self.submit_times.push(submit);
                if step.clocks.is_some() {
                    let end = unix_ns();
                    self.host_marks
                        .push([before(end, built + submit), before(end, submit), end]);
                }
            }
            Submitter::Worker(worker) => {
                let previous = worker.submit(outputs)?;
                let host = t.elapsed().as_secs_f64();
                self.build_times.push(host);
                if let Some(p) = previous {
                    self.submitted(p);
                }
                if step.clocks.is_some() {
                    // The submit marks arrive with the worker's report (`submitted`).
                    self.host_marks.push([before(unix_ns(), host), 0, 0]);
                }
            }
        }
        self.clocks.extend(step.clocks);
        self.profile_boundary(false);
        let read = step.read.unwrap_or_else(|| step.next.clone());
        Ok((step.next, read))
    }

    /// The worker's report on the oldest step it had not reported yet (its submit marks
    /// placed on the Unix clock from the report's instant, for clocked steps only).
    fn submitted(&mut self, s: Submitted) {
        let i = self.submit_times.len();
        self.submit_times.push(s.seconds);
        if let Some(m) = self.host_marks.get_mut(i) {
            let (now, ago) = (unix_ns(), s.started.elapsed().as_secs_f64());
            m[1] = before(now, ago);
            m[2] = before(now, ago - s.seconds);
        }
    }

    /// Waits for the worker's last hand-off, if any (before reading its token, or at the end).
    pub(super) fn finish(&mut self, submitter: &mut Submitter) -> Result<()> {
        if let Submitter::Worker(worker) = submitter {
            if let Some(p) = worker.wait()? {
                self.submitted(p);
            }
        }
        Ok(())
    }

    /// Records one wait of `seconds` for a queued step's token (and its host marks when the
    /// steps carry device clocks).
    pub(super) fn waited(&mut self, seconds: f64) {
        self.wait_times.push(seconds);
        if !self.clocks.is_empty() {
            let end = unix_ns();
            self.wait_marks.push([before(end, seconds), end]);
        }
    }

    /// The recorded device clocks as (launch, first, last) nanoseconds; read once the steps
    /// are done.
    pub(super) fn device_clocks(&self) -> Result<Vec<[u64; 3]>> {
        self.clocks
            .iter()
            .map(|c| {
                Ok([
                    c[0].item::<u64>()?,
                    c[1].item::<u64>()?,
                    c[2].item::<u64>()?,
                ])
            })
            .collect()
    }

    /// The A/B's per-arm means over the queued steps ([`StepAb::stats`]); `None` without one.
    pub(super) fn step_ab_stats(&self, timeline: Option<&[StepTimeline]>) -> Option<StepAbStats> {
        self.step_ab
            .as_ref()
            .map(|ab| ab.stats(&self.build_times, &self.submit_times, timeline))
    }

    /// Mean seconds per part over the second half of the profiled steps; `None` without.
    /// Mean MLX operations per step over the second half of the counted steps.
    pub(super) fn ops_per_step(&self) -> Option<f64> {
        let tail = &self.ops[self.ops.len() / 2..];
        (!tail.is_empty()).then(|| tail.iter().sum::<usize>() as f64 / tail.len() as f64)
    }

    pub(super) fn build_parts(&self) -> Option<Vec<(String, f64)>> {
        let tail = &self.parts[self.parts.len() / 2..];
        if tail.is_empty() {
            return None;
        }
        let mut sums: Vec<(String, f64)> = Vec::new();
        for (part, s) in tail.iter().flatten() {
            match sums.iter_mut().find(|(p, _)| p == part) {
                Some((_, total)) => *total += s,
                None => sums.push((part.to_string(), *s)),
            }
        }
        Some(
            sums.into_iter()
                .map(|(p, s)| (p, s / tail.len() as f64))
                .collect(),
        )
    }

    /// Every clocked step's timestamps; `None` without device clocks. The loop waits for
    /// step i's token right after queueing step i + 1, so the i-th wait is step i's.
    pub(super) fn timeline(&self) -> Result<Option<Vec<StepTimeline>>> {
        if self.clocks.is_empty() {
            return Ok(None);
        }
        let device = self.device_clocks()?;
        Ok(Some(
            device
                .iter()
                .zip(&self.host_marks)
                .enumerate()
                .map(|(i, (d, h))| {
                    let w = self.wait_marks.get(i).copied().unwrap_or([0, 0]);
                    StepTimeline {
                        host_build_start: h[0],
                        host_submit_start: h[1],
                        host_submit_end: h[2],
                        host_wait_start: w[0],
                        host_wait_end: w[1],
                        device_launch: d[0],
                        device_first: d[1],
                        device_last: d[2],
                    }
                })
                .collect(),
        ))
    }

    /// Opens the profiler range before step `first` is built (`opening`) and closes it once
    /// `first + count` steps are built. Profiling never changes results, so a failure is
    /// only logged.
    fn profile_boundary(&self, opening: bool) {
        let Some((first, count)) = self.profile else {
            return;
        };
        let steps = self.build_times.len();
        if steps == if opening { first } else { first + count } {
            match device::cuda_profiler(opening) {
                Ok(true) => tracing::info!(
                    "CUDA profiler {} at decode step {steps}",
                    if opening { "started" } else { "stopped" }
                ),
                _ => tracing::warn!("CUDA profiler range requested, but no CUDA driver answered"),
            }
        }
    }
}

pub(super) fn mean_of_second_half(x: &[f64]) -> f64 {
    let tail = &x[x.len() / 2..];
    if tail.is_empty() {
        0.0
    } else {
        tail.iter().sum::<f64>() / tail.len() as f64
    }
}

/// (p50, p90) of the step durations over the second half of `ends` (the loop's elapsed
/// time at the end of each step); (0, 0) with fewer than 4 steps.
pub(super) fn step_percentiles(ends: &[f64]) -> (f64, f64) {
    if ends.len() < 4 {
        return (0.0, 0.0);
    }
    let half = ends.len() / 2;
    let mut d: Vec<f64> = ends[half - 1..].windows(2).map(|w| w[1] - w[0]).collect();
    d.sort_by(f64::total_cmp);
    let at = |q: f64| d[((d.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9))
}

/// Device time per step from the probes' timestamps (ns), over the second half of the
/// steps: (mean first-to-last-node time inside a step, mean time from a step's last node to
/// the next step's first node).
pub(super) fn device_clock_stats(steps: &[StepTimeline]) -> Option<(f64, f64)> {
    let tail = &steps[steps.len() / 2..];
    if tail.len() < 2 {
        return None;
    }
    let inside = tail
        .iter()
        .map(|s| s.device_last.saturating_sub(s.device_first) as f64)
        .sum::<f64>()
        / tail.len() as f64;
    let between = tail
        .windows(2)
        .map(|w| w[1].device_first.saturating_sub(w[0].device_last) as f64)
        .sum::<f64>()
        / (tail.len() - 1) as f64;
    Some((inside * 1e-9, between * 1e-9))
}

#[cfg(test)]
mod tests {
    use super::{device_clock_stats, step_percentiles, StepTimeline};

    #[test]
    fn step_percentiles_cover_the_second_half() {
        // Ends of 10 steps: a slow first half, then steps of 2 ms with one 10 ms stall.
        let mut ends = vec![1.0, 2.0, 3.0, 4.0, 5.0];
        for d in [0.002, 0.002, 0.010, 0.002, 0.002] {
            let last = *ends.last().unwrap();
            ends.push(last + d);
        }
        let (p50, p90) = step_percentiles(&ends);
        assert!((p50 - 0.002).abs() < 1e-9, "{p50}");
        assert!((p90 - 0.010).abs() < 1e-9, "{p90}");
        assert_eq!(step_percentiles(&ends[..3]), (0.0, 0.0));
    }

    #[test]
    fn device_clock_stats_split_inside_and_between_steps_over_the_second_half() {
        // Steps of 3 ms on the device with 1 ms idle between them; the first half (a slow
        // JIT step) is ignored.
        let ms = 1_000_000u64;
        let step = StepTimeline::device_only;
        let mut clocks = vec![step(0, 500 * ms)];
        let mut t = 600 * ms;
        for _ in 0..7 {
            clocks.push(step(t, t + 3 * ms));
            t += 4 * ms;
        }
        let (inside, between) = device_clock_stats(&clocks).unwrap();
        assert!((inside - 3e-3).abs() < 1e-9, "{inside}");
        assert!((between - 1e-3).abs() < 1e-9, "{between}");
        assert_eq!(device_clock_stats(&clocks[..2]), None);
    }
}
