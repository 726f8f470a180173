//! Text generation: chunked prefill, then a decode loop that samples, streams and stops on
//! EOS, a stop string, or the token limit.

use std::time::Instant;

use mlxcel_core::build_profile;
use mlxcel_core::flags;
use mlxcel_core::kernels::{argmax, device_clock};
use mlxcel_core::kv::KvCache;
use mlxcel_core::mlx::{device, memory};
use mlxcel_core::{Array, Dtype};

use crate::error::Result;
use crate::model::{KvConfig, Model};
use crate::sampler::{Sampler, SamplingParams};
use crate::tokenizer::StreamDecoder;

mod cpu_time;
mod kv_fill;
pub use kv_fill::{fill_random, PromptFill};
mod step_ab;
mod steps;
use cpu_time::CpuSnapshot;
use step_ab::StepAb;
pub use step_ab::{StepAbArm, StepAbStats, STEP_AB, STEP_AB_BLOCK};
pub use steps::StepTimeline;
use steps::{device_clock_stats, mean_of_second_half, step_percentiles, StepRecorder, Submitter};

/// A callback `(positions done, positions in all)` as a prefill (or a random-kv fill)
/// advances, called once per chunk after the chunk was evaluated: long prompts take seconds
/// to minutes, and a caller may show how far they got.
#[derive(Clone)]
pub struct Progress(std::sync::Arc<dyn Fn(usize, usize) + Send + Sync>);

impl Progress {
    pub fn new(f: impl Fn(usize, usize) + Send + Sync + 'static) -> Progress {
        Progress(std::sync::Arc::new(f))
    }

    fn report(&self, done: usize, total: usize) {
        (self.0)(done, total)
    }
}

/// Asks a running generation to stop after its current decode step (`StopReason::Cancelled`):
/// a server's client that went away should not keep the model busy until `max_tokens`. The
/// tokens generated so far stay in the result and in the `KvContext`, as with any other stop.
#[derive(Clone, Debug, Default)]
pub struct Cancel(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Stops the generation at its next decode step (safe from any thread).
    pub fn cancel(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

/// Generation settings.
#[derive(Debug, Clone)]
pub struct GenerateParams {
    pub max_tokens: usize,
    pub stop: Vec<String>,
    /// Prompt tokens per prefill step (bounds prefill memory).
    pub prefill_chunk: usize,
    /// Keep decoding past EOS (always on for synthetic models).
    pub ignore_eos: bool,
    pub sampling: SamplingParams,
    pub kv: KvConfig,
    /// Pipelined greedy decoding on or off; `None` follows `MLXCEL_PIPELINED_DECODE`
    /// (on by default). Only greedy sampling pipelines.
    pub pipelined: Option<bool>,
    /// The pipelined loop's submit thread (`mlxcel_core::mlx::submit`) on or off; `None`
    /// follows `MLXCEL_SUBMIT_THREAD` (by default on with a GPU, off on the CPU backend).
    /// Never with the build profile on.
    pub submit_thread: Option<bool>,
    /// Time the host's graph building of each decode step per model part
    /// ([`mlxcel_core::build_profile`]); `None` follows `MLXCEL_BUILD_PROFILE` (off).
    pub build_profile: Option<bool>,
    /// How the prompt reaches the KV cache ([`PromptFill`]; random keys and values are for
    /// decode-speed benchmarks only).
    pub prompt_fill: PromptFill,
    /// Alternate a flag (its `MLXCEL_*` name) off and on in blocks of this many decode steps
    /// and report each arm (`step_ab`); `None` follows `MLXCEL_STEP_AB` /
    /// `MLXCEL_STEP_AB_BLOCK` (unset: no A/B).
    pub step_ab: Option<(String, usize)>,
    /// Called once on the loop's thread when the second decode step's token is out (the
    /// first step's JIT compiles behind it): where a diagnostic that should see steady decoding
    /// only starts (the CLI's host sampler, `MLXCEL_HOST_PROFILE`).
    pub on_steady_decode: Option<fn()>,
    /// Told how far the prefill (or the random-kv fill) of the uncached prompt got.
    pub on_prefill: Option<Progress>,
    /// Checked once per generated token; when set the generation ends there.
    pub cancel: Option<Cancel>,
}

impl Default for GenerateParams {
    fn default() -> Self {
        GenerateParams {
            max_tokens: 256,
            stop: Vec::new(),
            prefill_chunk: 512,
            ignore_eos: false,
            sampling: SamplingParams::default(),
            kv: KvConfig::default(),
            pipelined: None,
            submit_thread: None,
            build_profile: None,
            prompt_fill: PromptFill::Model,
            step_ab: None,
            on_steady_decode: None,
            on_prefill: None,
            cancel: None,
        }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Eos,
    StopString,
    MaxTokens,
    /// [`GenerateParams::cancel`] was set.
    Cancelled,
}

/// Numbers for `--profile`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GenerationStats {
    pub prompt_tokens: usize,
    /// Of `prompt_tokens`, those whose keys and values were already cached from an earlier
    /// turn ([`generate_in`]): not run again. The prefill rate counts only the others.
    pub prompt_tokens_reused: usize,
    pub generated_tokens: usize,
    pub prefill_seconds: f64,
    pub prefill_tokens_per_second: f64,
    pub decode_seconds: f64,
    pub decode_tokens_per_second: f64,
    /// Over the second half of the decode steps only: excludes one-time costs of the first
    /// steps (on CUDA, MLX JIT-compiles kernels then; seconds for an 8B model).
    pub decode_steady_tokens_per_second: f64,
    pub time_to_first_token_seconds: f64,
    pub peak_memory_bytes: usize,
    pub kv_cache_bytes: usize,
    pub kv_cache_mode: String,
    /// How the prompt reached the cache (`random-kv`: benchmarks, meaningless tokens).
    pub prompt_fill: PromptFill,
    pub stop_reason: StopReason,
    /// Host time spent building decode-step graphs (model code and MLX op construction,
    /// no evaluation). The synchronous loop adds it to every step; the pipelined loop
    /// hides it behind the device's work on the previous step.
    pub decode_graph_build_seconds: f64,
    /// Mean host time per decode step over the second half of the steps (past JIT warm-up) on
    /// the loop's thread: graph building, plus in the pipelined loop MLX's encoding and
    /// launching of the step (`async_eval` returns once the step is queued) or, with the
    /// submit thread, the wait for the worker to finish the previous step's. When it is close
    /// to the step time (1 / steady tok/s) the decode is host-bound: the device waits for the
    /// host.
    pub decode_host_seconds_per_step_steady: f64,
    /// Mean seconds per step in MLX's `async_eval` (encoding and launching the step's
    /// kernels) in the pipelined loop: part of `decode_host_seconds_per_step_steady` on one
    /// thread, the worker's time with the submit thread (overlapping the next step's build).
    /// 0 in the synchronous loop.
    pub decode_submit_seconds_per_step_steady: f64,
    /// Mean time per step (second half) the pipelined loop waits for the device's token after
    /// queueing the next step. Near 0: host-bound (the device finished first); otherwise the
    /// device's step time is about host + wait. 0 in the synchronous loop.
    pub decode_wait_seconds_per_step_steady: f64,
    /// Median and 90th percentile of the decode step times over the second half of the
    /// steps: a run that is slow throughout has a slow median, one with occasional stalls
    /// only a slow p90 (the mean, `decode_steady_tokens_per_second`, mixes both).
    pub decode_step_seconds_p50_steady: f64,
    pub decode_step_seconds_p90_steady: f64,
    /// With `MLXCEL_DEVICE_CLOCK` on CUDA (second half of the steps): device time from a
    /// step's first node to its last (kernels plus every gap inside the step) ...
    pub decode_device_seconds_inside_step_steady: Option<f64>,
    /// ... and from a step's last node to the next step's first (the device idle, waiting
    /// for the host to launch the next step). `None` when not measured.
    pub decode_device_seconds_between_steps_steady: Option<f64>,
    /// Whether the pipelined greedy loop ran (see `MLXCEL_PIPELINED_DECODE`).
    pub decode_pipelined: bool,
    /// Whether it submitted each step on a second thread (`MLXCEL_SUBMIT_THREAD`).
    pub decode_submit_thread: bool,
    /// With `MLXCEL_DEVICE_CLOCK` on CUDA: every pipelined step's host and device
    /// timestamps, for `benchmarks/gpu/timeline.py` to put on one time axis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_timeline: Option<Vec<StepTimeline>>,
    /// With `MLXCEL_BUILD_PROFILE`: mean host seconds per decode step (second half) spent
    /// building each part of the model's graph, in the order the parts run. Their sum is
    /// part of `decode_host_seconds_per_step_steady` minus the submit time (the rest is the
    /// loop's own work and code outside the marked parts). Parts named `inside: ...`
    /// (`build_profile::inner_span`, e.g. the calls into MLX's custom-kernel API) ran inside
    /// the others and are not part of that sum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_build_parts_seconds_steady: Option<Vec<(String, f64)>>,
    /// With `MLXCEL_BUILD_PROFILE` in the pipelined loop: MLX operations per decode step
    /// (mean, second half), counted on the step's graph before it is queued
    /// (`Array::pending_ops`; the count's own time is the build part "op count").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_ops_per_step_steady: Option<f64>,
    /// CPU seconds per decode step (second half, Linux only) of the thread running the decode
    /// loop: near `decode_host_seconds_per_step_steady` when that thread was busy throughout,
    /// below it when it was descheduled or waited (`generate::cpu_time`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_loop_thread_cpu_seconds_per_step_steady: Option<f64>,
    /// CPU seconds per decode step of the whole process (all threads: MLX's and the CUDA
    /// driver's too), second half, Linux only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_process_cpu_seconds_per_step_steady: Option<f64>,
    /// Involuntary context switches of the decode loop's thread per step (second half,
    /// Linux only): its core was taken by another thread or process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_loop_thread_preemptions_per_step_steady: Option<f64>,
    /// Decode-step cache appends through `slice_update` (`kv::buffer::GrowBuffer`: the fp16
    /// cache everywhere, every cache on the split paths) whose outcome was seen, and how many
    /// of them copied the whole layer cache because MLX could not write in place (something
    /// still held the buffer when MLX encoded the append; see `kv::buffer::append_copies`).
    pub decode_kv_appends_seen: usize,
    pub decode_kv_appends_copied: usize,
    /// With `MLXCEL_STEP_AB=<flag>` in the pipelined loop: host and device time per step with
    /// the flag off and on, alternated in blocks of steps inside this run ([`StepAbStats`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_step_ab: Option<StepAbStats>,
}

/// What came out.
#[derive(Debug, Clone)]
pub struct Generation {
    pub tokens: Vec<u32>,
    pub text: String,
    pub stats: GenerationStats,
}

/// Runs the prompt through the model in chunks; returns the last position's logits (f32,
/// on the host). `progress` hears after each chunk.
pub fn prefill(
    model: &Model,
    prompt: &[u32],
    caches: &mut [Box<dyn KvCache>],
    chunk: usize,
    progress: Option<&Progress>,
) -> Result<Vec<f32>> {
    let chunk = chunk.max(1);
    let mut last = None;
    let mut done = 0;
    for piece in prompt.chunks(chunk) {
        let logits = model.forward(piece, caches, true)?;
        logits.eval()?;
        last = Some(logits);
        done += piece.len();
        if let Some(p) = progress {
            p.report(done, prompt.len());
        }
    }
    let logits =
        last.ok_or_else(|| crate::error::ModelError::Tokenizer("the prompt is empty".into()))?;
    Ok(logits.astype(Dtype::F32)?.to_vec::<f32>()?)
}

/// One built greedy decode step, not yet submitted.
pub(super) struct BuiltStep {
    /// The next token, a `[1]` uint32 array: the following step's input.
    next: Array,
    /// With a submit thread: a copy of `next` for the loop to read (no later step takes it
    /// as an input, which `mlx::submit`'s rules need); without one the loop reads `next`.
    read: Option<Array>,
    /// Device timestamps (ns) when the step's first graph started, at its first node and at
    /// its last node, with `MLXCEL_DEVICE_CLOCK`.
    clocks: Option<[Array; 3]>,
    /// With the build profile on: the MLX operations the step queued.
    ops: Option<usize>,
}

impl BuiltStep {
    /// The arrays to schedule: the token, its read copy and the clocks.
    fn outputs(&self) -> Vec<Array> {
        let mut v = vec![self.next.clone()];
        v.extend(self.read.iter().cloned());
        v.extend(self.clocks.iter().flatten().cloned());
        v
    }
}

/// Builds one greedy decode step on top of `token` (a device array, possibly not yet
/// evaluated); the caller schedules it. With `clock`, the token passes through a
/// device-clock probe on the way in and on the way out (CUDA only; elsewhere nothing is
/// added). With `read_copy`, the step also makes the copy of its token the loop reads.
fn build_greedy_step(
    model: &Model,
    token: &Array,
    caches: &mut [Box<dyn KvCache>],
    clock: bool,
    read_copy: bool,
) -> Result<BuiltStep> {
    let probe = |t: &Array, after: Option<&Array>| -> Result<(Array, Option<Array>)> {
        Ok(
            match clock
                .then(|| device_clock::probe_after(t, after.unwrap_or(t)))
                .transpose()?
                .flatten()
            {
                Some((t, c)) => (t, Some(c)),
                None => (t.clone(), None),
            },
        )
    };
    let launch = clock
        .then(device_clock::launch_probe)
        .transpose()?
        .flatten();
    let (token, start) = probe(token, launch.as_ref().map(|l| &l.0))?;
    let logits = model.forward_tokens(&token, caches, true)?;
    // The greedy token: mlxcel's argmax kernel where it applies (MLXCEL_FAST_ARGMAX), else MLX's.
    let next = match argmax::try_argmax_token(&logits)? {
        Some(t) => t,
        None => logits.argmax(&[-1], false)?.reshape(&[1])?,
    };
    let (next, end) = probe(&next, None)?;
    let read = read_copy.then(|| next.copy()).transpose()?;
    let ops = if build_profile::enabled() {
        let _span = build_profile::span("op count");
        Some(next.pending_ops()?)
    } else {
        None
    };
    let clocks = match (launch, start, end) {
        (Some((_, l)), Some(s), Some(e)) => Some([l, s, e]),
        _ => None,
    };
    Ok(BuiltStep {
        next,
        read,
        clocks,
        ops,
    })
}

/// A model's KV caches and the tokens whose keys and values they hold, kept between
/// generations so that a conversation's next turn runs only the tokens the cache lacks
/// ([`generate_in`]).
pub struct KvContext {
    caches: Vec<Box<dyn KvCache>>,
    tokens: Vec<u32>,
    kv: KvConfig,
}

impl KvContext {
    /// Empty caches of `kv`'s mode for `model`.
    pub fn new(model: &Model, kv: &KvConfig) -> Result<KvContext> {
        Ok(KvContext {
            caches: model.new_caches(kv)?,
            tokens: Vec::new(),
            kv: *kv,
        })
    }

    /// The tokens the caches hold, in order.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Bytes the caches hold (as stored).
    pub fn cache_bytes(&self) -> usize {
        self.caches.iter().map(|c| c.bytes()).sum()
    }

    /// Drops every cached token (new, empty caches).
    pub fn clear(&mut self, model: &Model) -> Result<()> {
        self.caches = model.new_caches(&self.kv)?;
        self.tokens.clear();
        Ok(())
    }

    /// Keeps the longest cached prefix of `prompt` that leaves at least its last token to run
    /// (the next logits come from running it), cutting the caches back to it. Returns how many
    /// tokens are kept. Where a cache cannot cut exactly (`KvCache::truncate`), it starts over
    /// with empty caches: slower, with the same results.
    fn reuse_prefix(&mut self, model: &Model, prompt: &[u32]) -> Result<usize> {
        let same = self
            .tokens
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count()
            .min(prompt.len().saturating_sub(1));
        if same < self.tokens.len() {
            let cut = self.caches.iter_mut().try_for_each(|c| c.truncate(same));
            if let Err(e) = cut {
                tracing::info!("starting the KV cache over ({e})");
                self.clear(model)?;
                return Ok(0);
            }
            self.tokens.truncate(same);
        }
        Ok(same)
    }
}

/// Generates from `prompt` token ids, calling `on_text` with each newly decoded piece.
pub fn generate(
    model: &Model,
    prompt: &[u32],
    params: &GenerateParams,
    on_text: impl FnMut(&str),
) -> Result<Generation> {
    let mut ctx = KvContext::new(model, &params.kv)?;
    generate_in(model, &mut ctx, prompt, params, on_text)
}

/// [`generate`] over the caches of `ctx`: the longest prefix of `prompt` they already hold
/// is reused (the statistics' `prompt_tokens_reused`), the rest is prefilled, and afterwards
/// `ctx` holds the prompt and the generated tokens that were run through the model (all but
/// possibly the last). `params.kv` is not read: the caches are `ctx`'s. On an error `ctx` is
/// emptied (what its caches hold is then unknown).
pub fn generate_in(
    model: &Model,
    ctx: &mut KvContext,
    prompt: &[u32],
    params: &GenerateParams,
    on_text: impl FnMut(&str),
) -> Result<Generation> {
    let out = generate_in_unguarded(model, ctx, prompt, params, on_text);
    if out.is_err() {
        ctx.clear(model)?;
    }
    out
}

fn generate_in_unguarded(
    model: &Model,
    ctx: &mut KvContext,
    prompt: &[u32],
    params: &GenerateParams,
    mut on_text: impl FnMut(&str),
) -> Result<Generation> {
    if prompt.is_empty() {
        return Err(crate::error::ModelError::Tokenizer(
            "the prompt is empty".into(),
        ));
    }
    if params.prompt_fill == PromptFill::RandomKv && !ctx.tokens.is_empty() {
        return Err(crate::error::ModelError::Unsupported(
            "random-kv prompt fill needs empty caches".into(),
        ));
    }
    let reused = ctx.reuse_prefix(model, prompt)?;
    let caches = &mut ctx.caches;
    memory::reset_peak_memory()?;
    let ignore_eos = params.ignore_eos || model.synthetic;
    let mut sampler = Sampler::new(params.sampling.clone());
    let pipelined = params
        .pipelined
        .unwrap_or_else(|| flags::PIPELINED_DECODE.enabled())
        && sampler.params().is_greedy();
    let profile_builds = params
        .build_profile
        .unwrap_or_else(|| flags::BUILD_PROFILE.enabled());
    // Started before the prefill, so that every op of this generation is on the worker's
    // shared stream. Not with the build profile: its op count walks graphs the worker may be
    // encoding.
    let want_thread = params.submit_thread.unwrap_or_else(|| {
        let flag = flags::SUBMIT_THREAD;
        flag.enabled()
            && (flag.is_set() || matches!(device::default_device(), Ok(device::DeviceKind::Gpu)))
    });
    let mut submitter = if pipelined && !profile_builds && want_thread {
        Submitter::Worker(mlxcel_core::mlx::submit::SubmitThread::start()?)
    } else {
        Submitter::OnThisThread
    };
    let t0 = Instant::now();
    let mut logits = match params.prompt_fill {
        PromptFill::Model => prefill(
            model,
            &prompt[reused..],
            caches,
            params.prefill_chunk,
            params.on_prefill.as_ref(),
        )?,
        PromptFill::RandomKv => {
            let (head, last) = prompt.split_at(prompt.len().saturating_sub(1));
            fill_random(
                model,
                caches,
                head.len(),
                params.prefill_chunk,
                params.sampling.seed,
                params.on_prefill.as_ref(),
            )?;
            prefill(model, last, caches, 1, None)?
        }
    };
    let prefill_s = t0.elapsed().as_secs_f64();
    let mut history: Vec<u32> = prompt.to_vec();
    let mut out: Vec<u32> = Vec::new();
    let mut decoder = StreamDecoder::new();
    let mut text = String::new();
    let mut stop_reason = StopReason::MaxTokens;
    let mut ttft = 0.0;
    let t1 = Instant::now();
    let mut step_times: Vec<f64> = Vec::with_capacity(params.max_tokens);
    // CPU use at each step end, aligned with `step_times`.
    let mut step_cpu: Vec<Option<CpuSnapshot>> = Vec::with_capacity(params.max_tokens);
    let clock = pipelined && flags::DEVICE_CLOCK.enabled();
    // Owned by the step recorder, which sets the flag for each step it queues.
    let mut step_ab = match &params.step_ab {
        Some((flag, block)) => Some(StepAb::new(flag, *block)?),
        None => StepAb::from_env()?,
    };
    if step_ab.is_some() && !pipelined {
        tracing::warn!("{STEP_AB} needs the pipelined greedy loop; no A/B in this run");
        step_ab = None;
    }
    // Only the decode steps are profiled: what the prefill built is dropped here.
    build_profile::set_enabled(profile_builds);
    // Only the decode steps' cache appends are counted (kv::buffer::append_copies).
    mlxcel_core::kv::buffer::reset_append_copies();
    // The queued step of the pipelined loop: its token (the next step's input) and the
    // array the loop reads it from, still on the device.
    let mut queued: Option<(Array, Array)> = None;
    let threaded = matches!(submitter, Submitter::Worker(_));
    let mut steps = StepRecorder::new(params.max_tokens, step_ab);
    while out.len() < params.max_tokens {
        let tok = match queued.take() {
            Some((pending, read)) => {
                // Queue the following step before waiting for this one.
                if out.len() + 1 < params.max_tokens {
                    queued = Some(steps.queue(
                        || build_greedy_step(model, &pending, caches, clock, threaded),
                        &mut submitter,
                    )?);
                } else {
                    steps.finish(&mut submitter)?;
                }
                let t = Instant::now();
                let tok = read.item::<u32>()?;
                steps.waited(t.elapsed().as_secs_f64());
                tok
            }
            None => sampler.sample(&mut logits, &history),
        };
        if out.is_empty() {
            ttft = t0.elapsed().as_secs_f64();
        }
        out.push(tok);
        history.push(tok);
        if out.len() > 1 {
            step_times.push(t1.elapsed().as_secs_f64());
            step_cpu.push(CpuSnapshot::now());
        }
        if out.len() == 3 {
            if let Some(hook) = params.on_steady_decode {
                hook();
            }
        }
        if !ignore_eos && model.tokenizer.as_ref().is_some_and(|t| t.is_eos(tok)) {
            stop_reason = StopReason::Eos;
            break;
        }
        if let Some(tk) = &model.tokenizer {
            let piece = decoder.push(tk, tok)?;
            if !piece.is_empty() {
                text.push_str(&piece);
                if let Some(pos) = params
                    .stop
                    .iter()
                    .filter_map(|s| text.find(s.as_str()))
                    .min()
                {
                    // Print only what precedes the stop string.
                    let printed = text.len() - piece.len();
                    if pos > printed {
                        on_text(&text[printed..pos]);
                    }
                    text.truncate(pos);
                    stop_reason = StopReason::StopString;
                    break;
                }
                on_text(&piece);
            }
        }
        if out.len() >= params.max_tokens {
            break;
        }
        if params.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
            stop_reason = StopReason::Cancelled;
            break;
        }
        if pipelined {
            // Only the first decode step starts from a host token; later ones were queued
            // above from the device token.
            if queued.is_none() {
                queued = Some(steps.queue(
                    || {
                        let token = Array::from_slice(&[tok], &[1])?;
                        build_greedy_step(model, &token, caches, clock, threaded)
                    },
                    &mut submitter,
                )?);
            }
        } else {
            logits = steps.step(
                || model.forward(&[tok], caches, true),
                |next| Ok(next.astype(Dtype::F32)?.to_vec::<f32>()?),
            )?;
        }
    }
    steps.finish(&mut submitter)?;
    device::synchronize()?;
    let decode_s = t1.elapsed().as_secs_f64();
    let appends = mlxcel_core::kv::buffer::append_copies();
    let n = out.len();
    // What the caches now hold: the prompt, then the generated tokens that were run (the
    // pipelined loop runs each token as it is read, the other loop all but the last).
    let held = caches.first().map_or(0, |c| c.len());
    let ran: Vec<u32> = prompt.iter().chain(&out).copied().collect();
    if held > ran.len() || caches.iter().any(|c| c.len() != held) {
        return Err(crate::error::ModelError::Unsupported(format!(
            "internal: the KV caches hold {held} positions for {} tokens run",
            ran.len()
        )));
    }
    ctx.tokens = ran[..held].to_vec();
    let caches = &ctx.caches;
    let half = step_times.len() / 2;
    let steady = if step_times.len() >= 4 {
        (step_times.len() - half) as f64
            / (step_times[step_times.len() - 1] - step_times[half - 1]).max(1e-9)
    } else {
        0.0
    };
    build_profile::set_enabled(false);
    let timeline = steps.timeline()?;
    let device_clock = timeline.as_deref().and_then(device_clock_stats);
    let step_ab_stats = steps.step_ab_stats(timeline.as_deref());
    let (step_p50, step_p90) = step_percentiles(&step_times);
    // CPU use over the same steps as the steady tok/s.
    let cpu = if step_times.len() >= 4 {
        match (step_cpu[half - 1], step_cpu[step_cpu.len() - 1]) {
            (Some(a), Some(b)) => cpu_time::per_step(a, b, step_times.len() - half),
            _ => None,
        }
    } else {
        None
    };
    let stats = GenerationStats {
        decode_steady_tokens_per_second: steady,
        prompt_tokens: prompt.len(),
        prompt_tokens_reused: reused,
        generated_tokens: n,
        prefill_seconds: prefill_s,
        prefill_tokens_per_second: (prompt.len() - reused) as f64 / prefill_s.max(1e-9),
        decode_seconds: decode_s,
        // The first token comes from the prefill logits: n tokens took n-1 decode steps.
        decode_tokens_per_second: n.saturating_sub(1) as f64 / decode_s.max(1e-9),
        time_to_first_token_seconds: ttft,
        peak_memory_bytes: memory::peak_memory()?,
        kv_cache_bytes: caches.iter().map(|c| c.bytes()).sum(),
        // The configured mode (the first layers may be boundary layers kept in fp16).
        kv_cache_mode: params.kv.mode.name().to_string(),
        prompt_fill: params.prompt_fill,
        stop_reason,
        decode_graph_build_seconds: steps.build_times.iter().sum(),
        decode_host_seconds_per_step_steady: mean_of_second_half(&steps.build_times),
        decode_submit_seconds_per_step_steady: mean_of_second_half(&steps.submit_times),
        decode_wait_seconds_per_step_steady: mean_of_second_half(&steps.wait_times),
        decode_step_seconds_p50_steady: step_p50,
        decode_step_seconds_p90_steady: step_p90,
        decode_device_seconds_inside_step_steady: device_clock.map(|c| c.0),
        decode_device_seconds_between_steps_steady: device_clock.map(|c| c.1),
        decode_pipelined: pipelined,
        decode_submit_thread: threaded,
        decode_timeline: timeline,
        decode_build_parts_seconds_steady: steps.build_parts(),
        decode_ops_per_step_steady: steps.ops_per_step(),
        decode_loop_thread_cpu_seconds_per_step_steady: cpu.map(|c| c.0),
        decode_process_cpu_seconds_per_step_steady: cpu.map(|c| c.1),
        decode_loop_thread_preemptions_per_step_steady: cpu.map(|c| c.2),
        decode_kv_appends_seen: appends.0,
        decode_kv_appends_copied: appends.1,
        decode_step_ab: step_ab_stats,
    };
    Ok(Generation {
        tokens: out,
        text,
        stats,
    })
}
