//! CPU time of the decode loop, from `getrusage`: tells a host-bound step that is busy
//! (the loop's thread used its whole wall time) from one that was descheduled or shared its
//! core (thread CPU time below the wall time, involuntary context switches), and shows
//! other threads' CPU use (process minus loop thread: MLX's and the CUDA driver's threads).
//! H200 runs of one configuration differed by up to 45% in host time per step (session 8);
//! these numbers say whether the host's CPU, or the process, made the difference.

/// Cumulative CPU use at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuSnapshot {
    /// CPU seconds (user + system) of the calling thread.
    pub thread_seconds: f64,
    /// CPU seconds (user + system) of the whole process.
    pub process_seconds: f64,
    /// Times the calling thread was preempted (involuntary context switches).
    pub thread_preemptions: i64,
}

impl CpuSnapshot {
    /// Now, for the calling thread and the process; `None` where the per-thread count is not
    /// available (it needs Linux's `RUSAGE_THREAD`).
    #[cfg(target_os = "linux")]
    pub fn now() -> Option<CpuSnapshot> {
        let thread = rusage(libc::RUSAGE_THREAD)?;
        let process = rusage(libc::RUSAGE_SELF)?;
        Some(CpuSnapshot {
            thread_seconds: cpu_seconds(&thread),
            process_seconds: cpu_seconds(&process),
            thread_preemptions: thread.ru_nivcsw,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn now() -> Option<CpuSnapshot> {
        None
    }
}

#[cfg(target_os = "linux")]
fn rusage(who: libc::c_int) -> Option<libc::rusage> {
    // SAFETY: getrusage only writes the struct it is given; an all-zero rusage is valid.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    (unsafe { libc::getrusage(who, &mut u) } == 0).then_some(u)
}

#[cfg(target_os = "linux")]
fn cpu_seconds(u: &libc::rusage) -> f64 {
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Per-step means between two snapshots `steps` steps apart: (loop thread CPU seconds,
/// process CPU seconds, loop thread preemptions).
pub fn per_step(from: CpuSnapshot, to: CpuSnapshot, steps: usize) -> Option<(f64, f64, f64)> {
    (steps > 0).then(|| {
        let n = steps as f64;
        (
            (to.thread_seconds - from.thread_seconds) / n,
            (to.process_seconds - from.process_seconds) / n,
            (to.thread_preemptions - from.thread_preemptions) as f64 / n,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_busy_thread_accrues_cpu_time_and_a_sleeping_one_does_not() {
        let busy = |d: std::time::Duration| {
            let t = std::time::Instant::now();
            let mut x = 0u64;
            while t.elapsed() < d {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        };
        let a = CpuSnapshot::now().expect("getrusage");
        busy(std::time::Duration::from_millis(200));
        let b = CpuSnapshot::now().expect("getrusage");
        std::thread::sleep(std::time::Duration::from_millis(200));
        let c = CpuSnapshot::now().expect("getrusage");
        let spun = b.thread_seconds - a.thread_seconds;
        let slept = c.thread_seconds - b.thread_seconds;
        // Generous bounds: CI shares its 2 cores, so the spin may be preempted a little.
        assert!(
            spun > 0.05,
            "200 ms of spinning counted {spun} s of thread CPU"
        );
        assert!(
            slept < 0.05,
            "200 ms of sleep counted {slept} s of thread CPU"
        );
        assert!(c.process_seconds - a.process_seconds >= spun * 0.99);
        let (thread, process, _) = per_step(a, c, 2).unwrap();
        assert!((thread - (c.thread_seconds - a.thread_seconds) / 2.0).abs() < 1e-12);
        assert!(process >= thread * 0.99);
        assert_eq!(per_step(a, c, 0), None);
    }
}
