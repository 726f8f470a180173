//! The thread that owns the model and its one KV cache, and runs the server's requests one
//! at a time.
//!
//! Why one thread and one cache: a decode step of one sequence already uses the whole device
//! (mlxcel has no batching), and MLX's arrays and streams are used from the thread that made
//! them. Why keep the cache between requests: a chat client sends the whole conversation each
//! turn, and agents resend the same long system prompt; `generate_in` reuses the longest
//! prefix the cache holds and cuts it back where the new prompt diverges, so a follow-up turn
//! costs only its new tokens, and its reply is that of a fresh run over the same prompt.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use anyhow::{anyhow, Result};
use mlxcel_models::generate::{
    generate_in, Cancel, GenerateParams, Generation, KvContext, Progress, StopReason,
};
use mlxcel_models::sampler::SamplingParams;
use mlxcel_models::tokenizer::chat::{apply_chat_template_with, Message};
use mlxcel_models::{KvConfig, LoadOptions, Model};
use tokio::sync::mpsc::UnboundedSender;

use super::api::{ApiError, Usage};
use super::slots::Slots;

/// What a request asks to run through the model.
#[derive(Debug, Clone)]
pub enum JobPrompt {
    /// (role, text) pairs, rendered with the model's chat template and these extra template
    /// variables.
    Chat(
        Vec<(String, String)>,
        serde_json::Map<String, serde_json::Value>,
    ),
    /// Raw text, tokenized as is.
    Text(String),
    /// Token ids.
    Tokens(Vec<u32>),
}

/// One request's generation, as the API layer checked it.
#[derive(Debug, Clone)]
pub struct Job {
    pub prompt: JobPrompt,
    /// Requested reply length; the prompt plus it must fit the model's context.
    pub max_tokens: Option<usize>,
    /// Reply length when none was requested (cut to what the context leaves).
    pub default_max_tokens: usize,
    pub sampling: SamplingParams,
    pub stop: Vec<String>,
    pub stream: bool,
    pub include_usage: bool,
}

/// What the worker tells a request's handler, in order: `Started` (or `Failed`), then `Text`
/// pieces, then `Done` (or `Failed`).
#[derive(Debug)]
pub enum Event {
    /// The prompt was accepted; the generation starts.
    Started,
    Text(String),
    Done {
        usage: Usage,
        finish_reason: &'static str,
    },
    Failed(ApiError),
}

/// A job and where its events go. When the receiving side is dropped (the client went away)
/// the worker stops the generation at its next token, or skips a job it had not started.
pub struct Request {
    pub job: Job,
    pub events: UnboundedSender<Event>,
}

/// What the server learns of the model once it has loaded.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub description: String,
    pub context: usize,
    pub kv_mode: String,
}

/// Where and how to load the model.
pub struct WorkerConfig {
    pub model: Option<String>,
    pub load: LoadOptions,
    pub prefill_chunk: usize,
    /// How many KV caches to keep (`slots`).
    pub slots: usize,
    /// The KV cache's configuration for the model's head_dim (known once it has loaded).
    pub kv_for_head_dim: Box<dyn Fn(usize) -> Result<KvConfig> + Send>,
}

/// Loads the model on a new thread and returns the queue its requests go to, once it is
/// loaded (or the reason it could not be).
pub fn start(config: WorkerConfig) -> Result<(mpsc::Sender<Request>, ModelInfo)> {
    let (jobs_tx, jobs_rx) = mpsc::channel::<Request>();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<ModelInfo, String>>();
    std::thread::Builder::new()
        .name("mlxcel-model".into())
        .spawn(move || {
            let loaded = Model::load(config.model.as_deref(), &config.load)
                .map_err(|e| format!("{e:#}"))
                .and_then(|model| {
                    let kv = (config.kv_for_head_dim)(model.config().head_dim)
                        .map_err(|e| format!("{e:#}"))?;
                    let contexts = (0..config.slots.max(1))
                        .map(|_| KvContext::new(&model, &kv))
                        .collect::<mlxcel_models::Result<Vec<_>>>()
                        .map_err(|e| format!("{e:#}"))?;
                    Ok((model, kv, Slots::new(contexts)))
                });
            let (model, kv, mut slots) = match loaded {
                Ok(x) => x,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let info = ModelInfo {
                description: model.description.clone(),
                context: model.config().max_position_embeddings,
                kv_mode: kv.mode.name(),
            };
            if ready_tx.send(Ok(info)).is_err() {
                return;
            }
            for req in jobs_rx {
                // A panic is a bug, but one request's bug should not take the server down:
                // its handler sees its events end (a 500), and the cache, whose state is then
                // unknown, starts over.
                let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    serve_one(&model, &mut slots, kv, config.prefill_chunk, req)
                }));
                if served.is_err() {
                    tracing::error!("a request panicked; the KV caches start over");
                    if let Err(e) = slots.iter_mut().try_for_each(|c| c.clear(&model)) {
                        tracing::error!("the KV caches could not be renewed ({e}); stopping");
                        return;
                    }
                }
            }
        })?;
    let info = ready_rx
        .recv()
        .map_err(|_| anyhow!("the model thread stopped while loading"))?
        .map_err(|e| anyhow!("{e}"))?;
    Ok((jobs_tx, info))
}

/// The prompt's token ids, or a 400 saying why there are none.
fn prompt_ids(model: &Model, prompt: &JobPrompt) -> Result<Vec<u32>, ApiError> {
    let tokenizer = || {
        model.tokenizer.as_ref().ok_or_else(|| {
            ApiError::bad_request(
                Some("prompt"),
                format!(
                    "{} has no tokenizer: send token ids to /v1/completions",
                    model.description
                ),
            )
        })
    };
    let ids = match prompt {
        JobPrompt::Tokens(ids) => {
            let vocab = model.config().vocab_size;
            if let Some(bad) = ids.iter().find(|&&t| t as usize >= vocab) {
                return Err(ApiError::bad_request(
                    Some("prompt"),
                    format!("token id {bad} is outside the vocabulary (size {vocab})"),
                ));
            }
            ids.clone()
        }
        JobPrompt::Text(text) => tokenizer()?
            .encode(text)
            .map_err(|e| ApiError::bad_request(Some("prompt"), format!("{e}")))?,
        JobPrompt::Chat(messages, extra) => {
            let tok = tokenizer()?;
            if tok.chat_template.is_none() {
                return Err(ApiError::bad_request(
                    Some("messages"),
                    format!(
                        "{} has no chat template: send raw text to /v1/completions",
                        model.description
                    ),
                ));
            }
            let msgs: Vec<Message> = messages
                .iter()
                .map(|(role, text)| Message::new(role, text))
                .collect();
            let text = apply_chat_template_with(tok, &msgs, extra)
                .map_err(|e| ApiError::bad_request(Some("messages"), format!("{e}")))?;
            tok.encode(&text)
                .map_err(|e| ApiError::bad_request(Some("messages"), format!("{e}")))?
        }
    };
    if ids.is_empty() {
        return Err(ApiError::bad_request(
            Some("prompt"),
            "the prompt is empty (no tokens)",
        ));
    }
    Ok(ids)
}

/// The reply length for `job` with a prompt of `prompt` tokens in a context of `context`.
fn reply_budget(job: &Job, prompt: usize, context: usize) -> Result<usize, ApiError> {
    let left = context.saturating_sub(prompt);
    if left == 0 {
        return Err(ApiError::bad_request(
            Some("messages"),
            format!("the prompt has {prompt} tokens; the model's context holds {context}"),
        ));
    }
    match job.max_tokens {
        Some(n) if n > left => Err(ApiError::bad_request(
            Some("max_tokens"),
            format!(
                "the prompt has {prompt} tokens and `max_tokens` asks for {n} more; the model's \
                 context holds {context} (at most {left} more)"
            ),
        )),
        Some(n) => Ok(n),
        None => Ok(job.default_max_tokens.min(left)),
    }
}

fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::MaxTokens => "length",
        StopReason::Eos | StopReason::StopString | StopReason::Cancelled => "stop",
    }
}

/// Logs a long prefill's progress every few seconds, so that the server's log says what it is
/// doing during a minute-long prompt rather than nothing.
fn prefill_log() -> Progress {
    let last = std::sync::Mutex::new(std::time::Instant::now());
    Progress::new(move |done, total| {
        let Ok(mut last) = last.lock() else { return };
        if done < total && last.elapsed().as_secs_f64() >= 5.0 {
            tracing::info!("prefill: {done} of {total} prompt tokens");
            *last = std::time::Instant::now();
        }
    })
}

fn serve_one(model: &Model, slots: &mut Slots, kv: KvConfig, prefill_chunk: usize, req: Request) {
    let Request { job, events } = req;
    if events.is_closed() {
        tracing::info!("request dropped before it started (the client went away)");
        return;
    }
    let checked = prompt_ids(model, &job.prompt).and_then(|ids| {
        let n = reply_budget(&job, ids.len(), model.config().max_position_embeddings)?;
        Ok((ids, n))
    });
    let (ids, max_tokens) = match checked {
        Ok(x) => x,
        Err(e) => {
            let _ = events.send(Event::Failed(e));
            return;
        }
    };
    let _ = events.send(Event::Started);
    let n_slots = slots.len();
    let (slot, ctx) = slots.take(&ids);
    let cancel = Cancel::new();
    let params = GenerateParams {
        max_tokens,
        stop: job.stop.clone(),
        prefill_chunk,
        sampling: job.sampling.clone(),
        kv,
        cancel: Some(cancel.clone()),
        on_prefill: Some(prefill_log()),
        ..Default::default()
    };
    // One way to notice a client that left, for every reply: the watcher polls the channel,
    // so replies without text (token-id prompts on synthetic weights) and a client that leaves
    // during the prefill (the generation then stops at its first token) are covered too.
    let finished = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (events, cancel, finished) = (events.clone(), cancel.clone(), finished.clone());
        std::thread::spawn(move || {
            while !finished.load(Ordering::Relaxed) {
                if events.is_closed() {
                    cancel.cancel();
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
    };
    let out: mlxcel_models::Result<Generation> = generate_in(model, ctx, &ids, &params, |piece| {
        // A failed send means the client left; the watcher cancels.
        let _ = events.send(Event::Text(piece.to_string()));
    });
    finished.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    match out {
        Ok(g) => {
            let s = &g.stats;
            let at = if n_slots > 1 {
                format!(" in slot {slot}")
            } else {
                String::new()
            };
            tracing::info!(
                "prompt {} tokens ({} from the cache{at}), {} generated at {:.1} tok/s, stop: {:?}",
                s.prompt_tokens,
                s.prompt_tokens_reused,
                s.generated_tokens,
                s.decode_tokens_per_second,
                s.stop_reason
            );
            let _ = events.send(Event::Done {
                usage: Usage::new(s.prompt_tokens, s.prompt_tokens_reused, s.generated_tokens),
                finish_reason: finish_reason(s.stop_reason),
            });
        }
        Err(e) => {
            tracing::error!("generation failed: {e:#}");
            let _ = events.send(Event::Failed(ApiError {
                status: 500,
                message: format!("generation failed: {e:#}"),
                param: None,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(max_tokens: Option<usize>) -> Job {
        Job {
            prompt: JobPrompt::Tokens(vec![1]),
            max_tokens,
            default_max_tokens: 100,
            sampling: SamplingParams::default(),
            stop: vec![],
            stream: false,
            include_usage: false,
        }
    }

    #[test]
    fn the_reply_fits_the_context() {
        assert_eq!(reply_budget(&job(None), 10, 1000), Ok(100));
        assert_eq!(reply_budget(&job(None), 950, 1000), Ok(50));
        assert_eq!(reply_budget(&job(Some(990)), 10, 1000), Ok(990));
        let err = reply_budget(&job(Some(991)), 10, 1000).unwrap_err();
        assert_eq!(err.param, Some("max_tokens"));
        assert!(err.message.contains("at most 990 more"), "{err:?}");
        let err = reply_budget(&job(None), 1000, 1000).unwrap_err();
        assert!(err.message.contains("holds 1000"), "{err:?}");
    }
}
