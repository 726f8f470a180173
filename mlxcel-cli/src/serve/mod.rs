//! `mlxcel serve`: an OpenAI-compatible HTTP server (`/v1/chat/completions`,
//! `/v1/completions`, `/v1/models`, `/health`), with streaming (server-sent events) and the
//! KV cache kept between requests (`worker`: one model thread, requests in arrival order).

mod api;
mod slots;
mod worker;

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Args;
use futures_util::StreamExt;
use mlxcel_core::kv::KvMode;
use mlxcel_core::mlx::graph_limits;
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::kv_args::KvArgs;
use crate::model_args::ModelArgs;
use crate::sampling_args::SamplingArgs;
use api::{ApiError, ChatRequest, CompletionRequest, Defaults};
use worker::{Event, Job, Request, WorkerConfig};

#[derive(Args, Debug)]
#[command(
    after_help = "Endpoints: POST /v1/chat/completions, POST /v1/completions (text or \
    token ids), GET /v1/models, GET /health. Requests may stream (\"stream\": true, server-sent \
    events as OpenAI sends them). Requests run one at a time, in arrival order, on one model \
    and one KV cache in --kv's mode (or --kv-slots of them); each reuses the longest prefix of \
    its prompt that the cache already holds (a conversation's earlier turns, a shared system \
    prompt), reported as usage.prompt_tokens_details.cached_tokens, and its reply equals that \
    of a fresh run over the same prompt. A request's sampling fields override the options below; without a seed \
    each request draws its own. Fields mlxcel cannot honour (n > 1, penalties other than \
    repetition_penalty, tools, logprobs, images) get a 400 that names them. A client that \
    disconnects stops its generation at the next token."
)]
pub struct ServeArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub kv: KvArgs,
    /// Address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface, open to
    /// anyone who can reach it unless --api-key is given).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Require this key from clients (`Authorization: Bearer KEY`, what OpenAI clients send
    /// as their API key) on every /v1 endpoint; /health stays open. Without it anyone who can
    /// reach the port can use the model.
    #[arg(long, env = "MLXCEL_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Port to listen on (0 picks a free one; the address is printed at start).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The model's name in responses and /v1/models (default: what --model says, or the
    /// default model's name).
    #[arg(long)]
    pub served_name: Option<String>,
    /// Reply length for requests that set no max_tokens (cut to what the context leaves).
    #[arg(long, default_value_t = 1024)]
    pub max_tokens: usize,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// A stop string every request gets besides its own (repeatable).
    #[arg(long)]
    pub stop: Vec<String>,
    /// Prompt tokens per prefill step (bounds memory on long prompts).
    #[arg(long, default_value_t = 512)]
    pub prefill_chunk: usize,
    /// KV caches kept at once: each request goes to the one that holds most of its prompt
    /// (a conversation's history), else to an empty or the least recently used one, so N
    /// conversations can alternate without paying their history again. Each costs the memory
    /// of what it caches (a compressed --kv holds more of them).
    #[arg(long, default_value_t = 1)]
    pub kv_slots: usize,
}

struct AppState {
    jobs: mpsc::Sender<Request>,
    api_key: Option<String>,
    defaults: Defaults,
    model_id: String,
    created: u64,
    next_id: AtomicU64,
}

impl AppState {
    fn new_id(&self, prefix: &str) -> String {
        format!(
            "{prefix}-{:x}{:04x}",
            self.created,
            self.next_id.fetch_add(1, Ordering::Relaxed)
        )
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(e.body())).into_response()
}

pub fn run(args: &ServeArgs) -> Result<()> {
    if args.max_tokens == 0 {
        bail!("--max-tokens must be at least 1");
    }
    if args.prefill_chunk == 0 {
        bail!("--prefill-chunk must be at least 1");
    }
    if args.kv_slots == 0 {
        bail!("--kv-slots must be at least 1");
    }
    if args.api_key.as_deref() == Some("") {
        bail!("--api-key must not be empty");
    }
    if args.api_key.is_none() && !is_loopback(&args.host) {
        tracing::warn!(
            "listening on {} without --api-key: anyone who can reach the port can use the model",
            args.host
        );
    }
    // The port is taken before the model loads, so that a port in use fails at once rather
    // than after minutes of loading.
    let addr = format!("{}:{}", args.host, args.port);
    let listener =
        std::net::TcpListener::bind(&addr).with_context(|| format!("listening on {addr}"))?;
    listener.set_nonblocking(true)?;
    // Before the model loads: MLX reads its graph limits when the GPU is first used.
    graph_limits::lift_for_compressed_kv(args.kv.config()?.mode != KvMode::FP16);
    let kv_args = args.kv.clone();
    let (jobs, info) = worker::start(WorkerConfig {
        model: args.model.model.clone(),
        load: args.model.load_options(),
        prefill_chunk: args.prefill_chunk,
        slots: args.kv_slots,
        kv_for_head_dim: Box::new(move |d| kv_args.config_for(d)),
    })?;
    let model_id = args.served_name.clone().unwrap_or_else(|| {
        args.model
            .model
            .clone()
            .unwrap_or_else(|| "SmolLM2-135M-Instruct".to_string())
    });
    let state = Arc::new(AppState {
        jobs,
        api_key: args.api_key.clone(),
        defaults: Defaults {
            max_tokens: args.max_tokens,
            sampling: args.sampling.clone(),
            stop: args.stop.clone(),
        },
        model_id,
        created: now_secs(),
        next_id: AtomicU64::new(0),
    });
    let v1 = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/completions", post(completions))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_key));
    let app = Router::new()
        .route("/health", get(|| async { Json(json!({"status": "ok"})) }))
        .merge(v1)
        .fallback(|| async {
            error_response(&ApiError {
                status: 404,
                message: "no such endpoint (POST /v1/chat/completions, POST /v1/completions, \
                          GET /v1/models, GET /health)"
                    .into(),
                param: None,
            })
        })
        // Long documents in a prompt: the default 2 MB would refuse a 500K-token text.
        .layer(DefaultBodyLimit::max(64 << 20))
        .with_state(state);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("starting the HTTP runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let bound = listener.local_addr()?;
        let slots = match args.kv_slots {
            1 => String::new(),
            n => format!(", {n} slots"),
        };
        eprintln!(
            "mlxcel serve: {} (KV cache {}{slots}, context {} tokens) at http://{bound}/v1",
            info.description, info.kv_mode, info.context
        );
        axum::serve(listener, app).await.context("serving HTTP")
    })
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Refuses a /v1 request without the server's key (when it has one) with OpenAI's 401.
async fn require_key(
    State(st): State<Arc<AppState>>,
    req: axum::extract::Request,
    next: Next,
) -> Response {
    if let Some(key) = &st.api_key {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(key.as_str()) {
            return error_response(&ApiError {
                status: 401,
                message: "this server needs an API key: send `Authorization: Bearer <key>` \
                          with the key given to `mlxcel serve --api-key`"
                    .into(),
                param: None,
            });
        }
    }
    next.run(req).await
}

async fn models(State(st): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{"id": st.model_id, "object": "model", "created": st.created, "owned_by": "mlxcel"}]
    }))
}

/// Which endpoint a response is for: their JSON differs only in a few names.
#[derive(Clone, Copy)]
enum Kind {
    Chat,
    Text,
}

impl Kind {
    fn object(self, chunk: bool) -> &'static str {
        match (self, chunk) {
            (Kind::Chat, false) => "chat.completion",
            (Kind::Chat, true) => "chat.completion.chunk",
            (Kind::Text, _) => "text_completion",
        }
    }

    /// A choice holding all of a reply (`delta` = false) or one piece of it.
    fn choice(self, text: Option<&str>, delta: bool, finish: Option<&str>) -> Value {
        match self {
            Kind::Chat if delta => {
                json!({"index": 0, "delta": text.map_or(json!({}), |t| json!({"content": t})), "finish_reason": finish})
            }
            Kind::Chat => json!({
                "index": 0,
                "message": {"role": "assistant", "content": text.unwrap_or("")},
                "finish_reason": finish
            }),
            Kind::Text => json!({
                "index": 0,
                "text": text.unwrap_or(""),
                "logprobs": null,
                "finish_reason": finish
            }),
        }
    }
}

async fn chat_completions(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    let job = api::parse::<ChatRequest>(&body).and_then(|r| r.into_job(&st.defaults));
    respond(st, Kind::Chat, job).await
}

async fn completions(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    let job = api::parse::<CompletionRequest>(&body).and_then(|r| r.into_job(&st.defaults));
    respond(st, Kind::Text, job).await
}

/// Queues `job` and answers once the worker has accepted or refused its prompt: a stream of
/// events, or the whole reply once it is done.
async fn respond(st: Arc<AppState>, kind: Kind, job: Result<Job, ApiError>) -> Response {
    let job = match job {
        Ok(j) => j,
        Err(e) => return error_response(&e),
    };
    let (stream, include_usage) = (job.stream, job.include_usage);
    let (tx, mut rx) = unbounded_channel();
    let gone = ApiError {
        status: 503,
        message: "the model thread has stopped; restart the server".into(),
        param: None,
    };
    if st.jobs.send(Request { job, events: tx }).is_err() {
        return error_response(&gone);
    }
    // The worker dropped the request's events without a result (a panic; the log has it).
    let dropped = ApiError {
        status: 500,
        message: "the request ended without a result; the server's log says why".into(),
        param: None,
    };
    match rx.recv().await {
        Some(Event::Started) => {}
        Some(Event::Failed(e)) => return error_response(&e),
        Some(_) | None => return error_response(&dropped),
    }
    let id = st.new_id(match kind {
        Kind::Chat => "chatcmpl",
        Kind::Text => "cmpl",
    });
    let head = Head {
        id,
        created: now_secs(),
        model: st.model_id.clone(),
        kind,
    };
    if stream {
        return sse(head, rx, include_usage);
    }
    let mut text = String::new();
    loop {
        match rx.recv().await {
            Some(Event::Text(t)) => text.push_str(&t),
            Some(Event::Done {
                usage,
                finish_reason,
            }) => {
                let mut v = head.body(
                    false,
                    vec![kind.choice(Some(&text), false, Some(finish_reason))],
                );
                v["usage"] = json!(usage);
                return Json(v).into_response();
            }
            Some(Event::Failed(e)) => return error_response(&e),
            Some(Event::Started) | None => return error_response(&dropped),
        }
    }
}

/// The fields every response and chunk of one request share.
struct Head {
    id: String,
    created: u64,
    model: String,
    kind: Kind,
}

impl Head {
    fn body(&self, chunk: bool, choices: Vec<Value>) -> Value {
        json!({
            "id": self.id,
            "object": self.kind.object(chunk),
            "created": self.created,
            "model": self.model,
            "choices": choices,
        })
    }

    fn event(&self, v: &Value) -> Bytes {
        Bytes::from(format!("data: {v}\n\n"))
    }
}

/// Server-sent events as OpenAI streams them: a chunk per text piece, one with the finish
/// reason, optionally one with the usage, then `[DONE]`. An error after the stream started
/// goes out as an `{"error": ...}` event.
fn sse(head: Head, rx: UnboundedReceiver<Event>, include_usage: bool) -> Response {
    let first = match head.kind {
        Kind::Chat => Some(head.event(&head.body(
            true,
            vec![json!({"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null})],
        ))),
        Kind::Text => None,
    };
    let rest = futures_util::stream::unfold(Some((head, rx)), move |state| async move {
        let (head, mut rx) = state?;
        let kind = head.kind;
        let chunk = match rx.recv().await {
            Some(Event::Text(t)) => {
                head.event(&head.body(true, vec![kind.choice(Some(&t), true, None)]))
            }
            Some(Event::Done {
                usage,
                finish_reason,
            }) => {
                let mut out = head
                    .event(&head.body(true, vec![kind.choice(None, true, Some(finish_reason))]))
                    .to_vec();
                if include_usage {
                    let mut v = head.body(true, vec![]);
                    v["usage"] = json!(usage);
                    out.extend_from_slice(&head.event(&v));
                }
                out.extend_from_slice(b"data: [DONE]\n\n");
                return Some((Bytes::from(out), None));
            }
            Some(Event::Failed(e)) => return Some((head.event(&e.body()), None)),
            Some(Event::Started) | None => {
                let e = ApiError {
                    status: 500,
                    message: "the reply ended without a result; the server's log says why".into(),
                    param: None,
                };
                return Some((head.event(&e.body()), None));
            }
        };
        Some((chunk, Some((head, rx))))
    });
    let body = futures_util::stream::iter(first)
        .chain(rest)
        .map(Ok::<_, Infallible>);
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|e| {
            error_response(&ApiError {
                status: 500,
                message: format!("building the response: {e}"),
                param: None,
            })
        })
}
