//! The decode loop's submit thread: MLX's `async_eval` of step t on a second thread while
//! the loop's thread builds step t + 1.
//!
//! Why: on the H200 a 32K turbo4 step takes ~2.45 ms of device time, and its host side
//! ~1.1-1.5 ms of graph building (mlxcel) plus ~1.45-1.9 ms of `async_eval` (MLX: graph
//! traversal, kernel nodes, CUDA-graph commits). On one thread those add up past the device
//! time, so the GPU idles every step (session 35's sampler). On two threads a step's host
//! cost is the larger of the two halves instead of their sum. Measured on the H200 (session
//! 36, ADR 0015): with jemalloc as the process's `malloc` (the `mlxcel` binary's default)
//! every 4K-128K run became device-bound, turbo4 at 32K 304-347 -> 407 tok/s on a slow host.
//! With glibc's the worker's `async_eval` ran 1.6-1.8x slower than on one thread (it frees
//! the graph the loop's thread allocated, under glibc's arena locks) and the thread could
//! lose on a fast host.
//!
//! What makes it safe, read in MLX 0.32's source (`transforms.cpp`'s `eval_impl`,
//! `backend/cuda/eval.cpp`, `stream.cpp`, `array.cpp`):
//! - **One encoder, one thread at a time.** MLX keeps a stream's command encoder in the
//!   thread that made the stream, except for streams made by `new_thread_unsafe_stream`.
//!   [`SubmitThread::start`] makes one such stream and makes it the default of both threads,
//!   so the loop's thread builds every op on it and the worker encodes them. Anything that
//!   encodes on the loop's thread while a hand-off is in flight (an `eval` of a new
//!   placeholder, a read of an unscheduled array) first takes the lock the worker holds
//!   through each `async_eval` ([`exclusive`]).
//! - **What the worker writes, the loop's thread does not touch.** `eval_impl` writes the
//!   status, event, inputs and siblings of the arrays of the graph it encodes, and of the
//!   inputs it waits on. The loop's thread only reads their shapes and dtypes (fixed at
//!   construction) and copies their handles (atomic reference counts), with three rules:
//!   it reads a step's token from a copy that no later step takes as an input (the caller's
//!   part: [`SubmitThread::submit`]'s doc); it never waits on an array of a hand-off still
//!   in flight; and while one is in flight, arrays it drops are kept
//!   ([`defer_drop`]) and released once the worker is idle, since an array's destructor
//!   reads its inputs' siblings, which the worker clears as it encodes them.
//!
//! The worker only calls `async_eval`; the MLX allocator it and the building thread share
//! takes its own lock. Off with `MLXCEL_SUBMIT_THREAD=0` (the loop then submits on its own
//! thread, the reference); the generation tests compare the two loops' tokens.

use std::cell::{Cell, RefCell};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use cxx::UniquePtr;

use super::array::{async_eval_all, Array};
use super::ffi::bridge as ffi;
use crate::error::{Error, MlxContext, Result};

thread_local! {
    /// On the loop's thread while it has a submit thread: the lock the worker holds through
    /// each `async_eval`.
    static ENCODER_LOCK: RefCell<Option<Arc<Mutex<()>>>> = const { RefCell::new(None) };
    /// While a hand-off is in flight: arrays dropped on this thread are kept here ...
    static DEFERRING: Cell<bool> = const { Cell::new(false) };
    /// ... until the worker is idle again.
    static DEFERRED: RefCell<Vec<UniquePtr<ffi::Array>>> = const { RefCell::new(Vec::new()) };
    /// This thread's shared stream, made once and reused by each of its submit threads (MLX
    /// never frees a stream's encoder, and primitives cached for a stream stay useful).
    static SHARED_STREAM: Cell<Option<i32>> = const { Cell::new(None) };
}

/// Runs `f`, which may encode work on the default stream, after the worker's current
/// `async_eval` (if this thread has a submit thread) and keeps the worker out until it
/// returns. Elsewhere it just runs `f`.
pub(crate) fn exclusive<T>(f: impl FnOnce() -> T) -> T {
    let lock = ENCODER_LOCK.with(|l| l.borrow().clone());
    match lock {
        Some(lock) => {
            // A poisoned lock only means the worker panicked; the encoder is still ours.
            let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
            f()
        }
        None => f(),
    }
}

/// Called by [`Array`]'s `Drop`: while a hand-off is in flight, takes the handle (the array
/// is released later, by [`release_deferred`]); otherwise leaves it to drop at once.
pub(crate) fn defer_drop(inner: &mut UniquePtr<ffi::Array>) {
    // `try_with`: a thread-local already torn down (thread exit) drops at once.
    if DEFERRING.try_with(|d| d.get()).unwrap_or(false) {
        let _ = DEFERRED.try_with(|v| {
            v.borrow_mut()
                .push(std::mem::replace(inner, UniquePtr::null()))
        });
    }
}

/// Releases the arrays kept while the last hand-off was in flight.
fn release_deferred() {
    DEFERRING.with(|d| d.set(false));
    let kept = DEFERRED.with(|v| std::mem::take(&mut *v.borrow_mut()));
    drop(kept);
}

/// A step's arrays on their way to the worker. MLX arrays are handles to reference-counted
/// graph nodes; the module doc says why handing them to the worker is sound.
struct Job(Vec<Array>);
// SAFETY: see the module doc: the worker only `async_eval`s and then drops these handles
// (atomic reference counts); the loop's thread keeps to the rules above.
unsafe impl Send for Job {}

/// One finished hand-off: when the worker's `async_eval` started and how long it took (a
/// monotonic instant: callers that want wall-clock marks place them from it, and steps without
/// marks read no wall clock).
#[derive(Debug, Clone, Copy)]
pub struct Submitted {
    pub started: Instant,
    pub seconds: f64,
}

/// The worker thread and its shared stream. Dropping it waits for the last hand-off, stops
/// the worker and gives the loop's thread its previous default stream back.
pub struct SubmitThread {
    jobs: Option<mpsc::Sender<Job>>,
    done: mpsc::Receiver<Result<Submitted>>,
    worker: Option<JoinHandle<()>>,
    in_flight: bool,
    previous_stream: i32,
}

impl SubmitThread {
    /// Makes the shared stream, makes it this thread's default (so build the graphs to be
    /// handed off after this call: primitives built earlier carry the old stream), and
    /// starts the worker.
    pub fn start() -> Result<SubmitThread> {
        if ENCODER_LOCK.with(|l| l.borrow().is_some()) {
            // Two workers would encode on the one shared stream at once.
            return Err(Error::invalid(
                "submit thread",
                "this thread already has one running",
            ));
        }
        let previous_stream = ffi::stream_default_index().op("default stream")?;
        let stream = match SHARED_STREAM.with(|s| s.get()) {
            Some(s) => s,
            None => {
                let s = ffi::stream_new_shared().op("new shared stream")?;
                SHARED_STREAM.with(|c| c.set(Some(s)));
                s
            }
        };
        ffi::stream_set_default(stream).op("set default stream")?;
        let lock = Arc::new(Mutex::new(()));
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (done_tx, done) = mpsc::channel::<Result<Submitted>>();
        let worker_lock = lock.clone();
        let worker = std::thread::Builder::new()
            .name("mlxcel-submit".into())
            .spawn(move || {
                if let Err(e) = ffi::stream_set_default(stream).op("set default stream") {
                    let _ = done_tx.send(Err(e));
                    return;
                }
                while let Ok(Job(arrays)) = job_rx.recv() {
                    let t = Instant::now();
                    let r = {
                        let _held = worker_lock.lock().unwrap_or_else(|p| p.into_inner());
                        let refs: Vec<&Array> = arrays.iter().collect();
                        async_eval_all(&refs)
                    };
                    let seconds = t.elapsed().as_secs_f64();
                    drop(arrays);
                    let msg = r.map(|()| Submitted {
                        started: t,
                        seconds,
                    });
                    if done_tx.send(msg).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| Error::invalid("submit thread", format!("cannot start it: {e}")))?;
        ENCODER_LOCK.with(|l| *l.borrow_mut() = Some(lock));
        Ok(SubmitThread {
            jobs: Some(jobs),
            done,
            worker: Some(worker),
            in_flight: false,
            previous_stream,
        })
    }

    /// Waits for the worker to finish the previous hand-off (returned, if there was one),
    /// then hands it `arrays` to `async_eval`. The caller must not wait on, or read, any of
    /// `arrays` that a later hand-off's graph takes as an input (read a copy made for the
    /// purpose instead), and must not read any of them before the next [`SubmitThread::wait`]
    /// or `submit` returns.
    pub fn submit(&mut self, arrays: Vec<Array>) -> Result<Option<Submitted>> {
        let previous = self.wait()?;
        let jobs = self
            .jobs
            .as_ref()
            .ok_or_else(|| Error::invalid("submit thread", "already stopped"))?;
        DEFERRING.with(|d| d.set(true));
        if jobs.send(Job(arrays)).is_err() {
            release_deferred();
            return Err(Error::invalid("submit thread", "the worker has stopped"));
        }
        self.in_flight = true;
        Ok(previous)
    }

    /// Waits for the hand-off in flight, if any, and returns its record.
    pub fn wait(&mut self) -> Result<Option<Submitted>> {
        if !self.in_flight {
            return Ok(None);
        }
        self.in_flight = false;
        let r = self.done.recv();
        release_deferred();
        match r {
            Ok(r) => r.map(Some),
            Err(_) => Err(Error::invalid("submit thread", "the worker has stopped")),
        }
    }
}

impl Drop for SubmitThread {
    fn drop(&mut self) {
        if let Err(e) = self.wait() {
            tracing::warn!("submit thread: {e}");
        }
        drop(self.jobs.take());
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        ENCODER_LOCK.with(|l| *l.borrow_mut() = None);
        release_deferred();
        if let Err(e) = ffi::stream_set_default(self.previous_stream).op("set default stream") {
            tracing::warn!("submit thread: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx::Dtype;

    /// Graphs built on this thread while the worker encodes the previous ones give the same
    /// values as on one thread: a chain of 200 steps, each on top of the last one's result
    /// (as a decode step is on top of the previous token), read back through copies one step
    /// late, with intermediate arrays dropped while hand-offs are in flight (kept, then
    /// released) and a placeholder evaluated on this thread mid-chain (the encoder lock).
    #[test]
    fn chained_steps_handed_to_the_worker_give_the_one_thread_values() {
        let mut sub = SubmitThread::start().unwrap();
        let mut x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
        let mut expect = vec![1.0f32, 2.0, 3.0, 4.0];
        let mut pending: Option<(Array, Vec<f32>)> = None;
        let mut handed = 0;
        for i in 0..200 {
            let k = (i % 7) as f32;
            let scaled = x.mul_scalar(k as f64).unwrap();
            let next = scaled
                .add(&x)
                .unwrap()
                .divide(&Array::full(&[4], (k + 1.0) as f64, Dtype::F32).unwrap())
                .unwrap()
                .add_scalar(0.5)
                .unwrap();
            drop(scaled);
            if i % 50 == 25 {
                let placeholder = Array::zeros(&[8], Dtype::F32).unwrap();
                placeholder.eval().unwrap();
                assert_eq!(placeholder.to_vec::<f32>().unwrap(), vec![0.0; 8]);
            }
            expect = expect
                .iter()
                .map(|v| (v * k + v) / (k + 1.0) + 0.5)
                .collect();
            let read = next.copy().unwrap();
            handed += sub
                .submit(vec![next.clone(), read.clone()])
                .unwrap()
                .is_some() as usize;
            if let Some((r, want)) = pending.take() {
                assert_eq!(r.to_vec::<f32>().unwrap(), want, "step {i}");
            }
            pending = Some((read, expect.clone()));
            x = next;
        }
        handed += sub.wait().unwrap().is_some() as usize;
        assert_eq!(handed, 200, "every hand-off reported once");
        let (r, want) = pending.unwrap();
        assert_eq!(r.to_vec::<f32>().unwrap(), want);
        assert!(
            SubmitThread::start().is_err(),
            "one submit thread per thread at a time"
        );
        drop(sub);
        // The loop's thread is back on its own stream and evaluates as before.
        assert_eq!(
            x.add_scalar(1.0).unwrap().to_vec::<f32>().unwrap(),
            want.iter().map(|v| v + 1.0).collect::<Vec<_>>()
        );
        // A later submit thread on this thread reuses the shared stream.
        let stream = SHARED_STREAM.with(|s| s.get());
        let mut again = SubmitThread::start().unwrap();
        assert_eq!(SHARED_STREAM.with(|s| s.get()), stream);
        let y = x.add_scalar(2.0).unwrap();
        let read = y.copy().unwrap();
        again.submit(vec![y, read.clone()]).unwrap();
        again.wait().unwrap();
        assert_eq!(
            read.to_vec::<f32>().unwrap(),
            want.iter().map(|v| v + 2.0).collect::<Vec<_>>()
        );
    }
}
