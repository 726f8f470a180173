//! The OpenAI-compatible request and response bodies `mlxcel serve` speaks, and the checks
//! that turn a request into a [`Job`] or a 400 that says which field is wrong.
//!
//! Why this subset: it is what OpenAI's client libraries, LangChain-style tools and chat UIs
//! send to a local server (chat completions, plain completions, streaming, stop, the usual
//! sampling knobs). Fields a request sets that mlxcel cannot honour (n > 1, penalties, tools,
//! logprobs, images) are refused by name rather than ignored: ignoring them would change the
//! result the client asked for without a word. Fields that do not change the result (user,
//! metadata, ...) are ignored.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::worker::{Job, JobPrompt};
use crate::sampling_args::SamplingArgs;

/// An error as OpenAI's API returns it: an HTTP status and `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub param: Option<&'static str>,
}

impl ApiError {
    pub fn bad_request(param: Option<&'static str>, message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
            param,
        }
    }

    pub fn body(&self) -> Value {
        let kind = match self.status {
            400..=499 => "invalid_request_error",
            _ => "server_error",
        };
        json!({"error": {"message": self.message, "type": kind, "param": self.param, "code": null}})
    }
}

/// `stop`: one string or a list of them.
#[derive(Deserialize, Debug)]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

/// A message's `content`: a string, or a list of parts of which mlxcel takes the text ones.
#[derive(Deserialize, Debug)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Value>),
}

#[derive(Deserialize, Debug)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<Content>,
}

#[derive(Deserialize, Debug, Default)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

/// The fields both endpoints share.
#[derive(Deserialize, Debug, Default)]
pub struct Common {
    pub max_tokens: Option<u64>,
    pub max_completion_tokens: Option<u64>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    /// Not OpenAI's, but what llama.cpp's and vLLM's servers accept.
    pub top_k: Option<usize>,
    pub min_p: Option<f32>,
    pub repetition_penalty: Option<f32>,
    pub seed: Option<u64>,
    pub stop: Option<Stop>,
    /// `null` as well as absent (some clients send every field).
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    pub n: Option<u64>,
    pub presence_penalty: Option<f32>,
    pub frequency_penalty: Option<f32>,
    pub logprobs: Option<Value>,
    pub top_logprobs: Option<Value>,
    pub logit_bias: Option<Value>,
    pub tools: Option<Value>,
    pub tool_choice: Option<Value>,
    pub functions: Option<Value>,
    pub response_format: Option<Value>,
    pub suffix: Option<Value>,
    pub echo: Option<bool>,
    pub best_of: Option<u64>,
}

#[derive(Deserialize, Debug)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    /// Extra chat-template variables (vLLM's and SGLang's name for them), e.g.
    /// `{"enable_thinking": false}` for Qwen3.
    pub chat_template_kwargs: Option<serde_json::Map<String, Value>>,
    #[serde(flatten)]
    pub common: Common,
}

#[derive(Deserialize, Debug)]
pub struct CompletionRequest {
    pub prompt: Value,
    #[serde(flatten)]
    pub common: Common,
}

/// Server-side settings a request starts from.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// Reply length when the request sets none.
    pub max_tokens: usize,
    /// The command line's sampling options: what a request's missing fields take.
    pub sampling: SamplingArgs,
    /// Stop strings every request gets besides its own.
    pub stop: Vec<String>,
}

/// Parses a request body, naming the position of a JSON error.
pub fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(None, format!("the request body is not valid: {e}")))
}

fn refuse_if(set: bool, param: &'static str, why: &str) -> Result<(), ApiError> {
    if set {
        Err(ApiError::bad_request(
            Some(param),
            format!("`{param}` is not supported by mlxcel: {why}"),
        ))
    } else {
        Ok(())
    }
}

fn in_range(v: Option<f32>, param: &'static str, lo: f32, hi: f32) -> Result<(), ApiError> {
    match v {
        Some(x) if !(lo..=hi).contains(&x) || x.is_nan() => Err(ApiError::bad_request(
            Some(param),
            format!("`{param}` must be between {lo} and {hi}, got {x}"),
        )),
        _ => Ok(()),
    }
}

impl Common {
    /// The generation settings, or the first field that cannot be honoured.
    fn job(self, prompt: JobPrompt, defaults: &Defaults) -> Result<Job, ApiError> {
        refuse_if(
            self.n.is_some_and(|n| n != 1),
            "n",
            "one choice per request",
        )?;
        refuse_if(
            self.best_of.is_some_and(|n| n != 1),
            "best_of",
            "one choice per request",
        )?;
        refuse_if(
            self.presence_penalty.is_some_and(|p| p != 0.0),
            "presence_penalty",
            "use `repetition_penalty`",
        )?;
        refuse_if(
            self.frequency_penalty.is_some_and(|p| p != 0.0),
            "frequency_penalty",
            "use `repetition_penalty`",
        )?;
        refuse_if(
            self.logprobs
                .as_ref()
                .is_some_and(|v| !v.is_null() && *v != Value::Bool(false)),
            "logprobs",
            "log-probabilities are not returned",
        )?;
        refuse_if(
            self.top_logprobs.as_ref().is_some_and(|v| !v.is_null()),
            "top_logprobs",
            "log-probabilities are not returned",
        )?;
        refuse_if(
            self.logit_bias
                .as_ref()
                .is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty())),
            "logit_bias",
            "no logit biases",
        )?;
        refuse_if(
            self.tools
                .as_ref()
                .is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty())),
            "tools",
            "no tool calling",
        )?;
        refuse_if(
            self.functions.as_ref().is_some_and(|v| !v.is_null()),
            "functions",
            "no function calling",
        )?;
        refuse_if(
            self.tool_choice
                .as_ref()
                .is_some_and(|v| !v.is_null() && v != "none" && v != "auto"),
            "tool_choice",
            "no tool calling",
        )?;
        refuse_if(
            self.response_format.as_ref().is_some_and(|v| {
                !v.is_null() && v.get("type").and_then(Value::as_str) != Some("text")
            }),
            "response_format",
            "only plain text replies (no JSON mode or schemas)",
        )?;
        refuse_if(
            self.suffix.as_ref().is_some_and(|v| !v.is_null()),
            "suffix",
            "no insertion",
        )?;
        refuse_if(self.echo == Some(true), "echo", "the prompt is not echoed")?;
        in_range(self.temperature, "temperature", 0.0, 2.0)?;
        in_range(self.top_p, "top_p", 0.0, 1.0)?;
        in_range(self.min_p, "min_p", 0.0, 1.0)?;
        in_range(self.repetition_penalty, "repetition_penalty", 0.0, 10.0)?;
        if self.top_p == Some(0.0) {
            return Err(ApiError::bad_request(
                Some("top_p"),
                "`top_p` must be above 0 (use temperature 0 for greedy decoding)",
            ));
        }
        let max_tokens = match (self.max_completion_tokens, self.max_tokens) {
            (Some(n), _) | (None, Some(n)) => {
                if n == 0 {
                    return Err(ApiError::bad_request(
                        Some("max_tokens"),
                        "`max_tokens` must be at least 1",
                    ));
                }
                Some(usize::try_from(n).unwrap_or(usize::MAX))
            }
            (None, None) => None,
        };
        let mut sampling = defaults.sampling.params();
        if let Some(t) = self.temperature {
            sampling.temperature = t;
        }
        if let Some(p) = self.top_p {
            sampling.top_p = p;
        }
        if let Some(k) = self.top_k {
            sampling.top_k = k;
        }
        if let Some(p) = self.min_p {
            sampling.min_p = p;
        }
        if let Some(p) = self.repetition_penalty {
            sampling.repetition_penalty = p;
        }
        // Without a seed each sampled request draws its own, so that two identical requests
        // at a temperature above 0 can differ, as clients expect from OpenAI's API.
        sampling.seed = self.seed.unwrap_or_else(rand::random);
        let mut stop = defaults.stop.clone();
        match self.stop {
            Some(Stop::One(s)) => stop.push(s),
            Some(Stop::Many(v)) => stop.extend(v),
            None => {}
        }
        if stop.iter().any(String::is_empty) {
            return Err(ApiError::bad_request(
                Some("stop"),
                "`stop` strings must not be empty",
            ));
        }
        Ok(Job {
            prompt,
            max_tokens,
            default_max_tokens: defaults.max_tokens,
            sampling,
            stop,
            stream: self.stream == Some(true),
            include_usage: self.stream_options.is_some_and(|o| o.include_usage),
        })
    }
}

/// The text of a message's content (text parts joined), or which message is unusable.
fn message_text(i: usize, content: Option<Content>) -> Result<String, ApiError> {
    match content {
        None => Ok(String::new()),
        Some(Content::Text(s)) => Ok(s),
        Some(Content::Parts(parts)) => {
            let mut text = String::new();
            for p in parts {
                match (
                    p.get("type").and_then(Value::as_str),
                    p.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(t)) => text.push_str(t),
                    (kind, _) => {
                        return Err(ApiError::bad_request(
                            Some("messages"),
                            format!(
                                "messages[{i}]: only text content parts are supported, got {}",
                                kind.map_or("a part without a type".to_string(), |k| format!(
                                    "type \"{k}\""
                                ))
                            ),
                        ))
                    }
                }
            }
            Ok(text)
        }
    }
}

impl ChatRequest {
    pub fn into_job(self, defaults: &Defaults) -> Result<Job, ApiError> {
        if self.messages.is_empty() {
            return Err(ApiError::bad_request(
                Some("messages"),
                "`messages` must hold at least one message",
            ));
        }
        let mut messages = Vec::with_capacity(self.messages.len());
        for (i, m) in self.messages.into_iter().enumerate() {
            // "developer" is OpenAI's newer name for the system role.
            let role = match m.role.as_str() {
                "system" | "developer" => "system",
                "user" => "user",
                "assistant" => "assistant",
                other => {
                    return Err(ApiError::bad_request(
                        Some("messages"),
                        format!(
                            "messages[{i}]: role \"{other}\" is not supported (system, developer, \
                             user, assistant)"
                        ),
                    ))
                }
            };
            messages.push((role.to_string(), message_text(i, m.content)?));
        }
        let extra = self.chat_template_kwargs.unwrap_or_default();
        if let Some(name) = mlxcel_models::tokenizer::chat::reserved_variable(&extra) {
            return Err(ApiError::bad_request(
                Some("chat_template_kwargs"),
                format!("`chat_template_kwargs` may not set `{name}`: mlxcel sets it"),
            ));
        }
        self.common.job(JobPrompt::Chat(messages, extra), defaults)
    }
}

impl CompletionRequest {
    pub fn into_job(self, defaults: &Defaults) -> Result<Job, ApiError> {
        let prompt = match self.prompt {
            Value::String(s) => JobPrompt::Text(s),
            Value::Array(a) if a.len() == 1 && a[0].is_string() => {
                JobPrompt::Text(a[0].as_str().unwrap_or_default().to_string())
            }
            Value::Array(a) if !a.is_empty() && a.iter().all(|v| v.as_u64().is_some()) => {
                let mut ids = Vec::with_capacity(a.len());
                for v in a {
                    let id = v
                        .as_u64()
                        .and_then(|x| u32::try_from(x).ok())
                        .ok_or_else(|| {
                            ApiError::bad_request(
                                Some("prompt"),
                                format!("token id {v} is too large"),
                            )
                        })?;
                    ids.push(id);
                }
                JobPrompt::Tokens(ids)
            }
            _ => {
                return Err(ApiError::bad_request(
                    Some("prompt"),
                    "`prompt` must be a string, a list of one string, or a list of token ids \
                     (one prompt per request)",
                ))
            }
        };
        self.common.job(prompt, defaults)
    }
}

/// Token counts as OpenAI reports them; `cached_tokens` is the prompt's prefix that the KV
/// cache already held (not run again).
#[derive(Serialize, Debug, Clone, Copy)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
    pub prompt_tokens_details: CachedTokens,
}

#[derive(Serialize, Debug, Clone, Copy)]
pub struct CachedTokens {
    pub cached_tokens: usize,
}

impl Usage {
    pub fn new(prompt: usize, cached: usize, completion: usize) -> Usage {
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            prompt_tokens_details: CachedTokens {
                cached_tokens: cached,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Defaults {
        use clap::Parser;
        #[derive(Parser)]
        struct A {
            #[command(flatten)]
            s: SamplingArgs,
        }
        Defaults {
            max_tokens: 100,
            sampling: A::parse_from(["x"]).s,
            stop: vec![],
        }
    }

    fn chat(body: &str) -> Result<Job, ApiError> {
        parse::<ChatRequest>(body.as_bytes())?.into_job(&defaults())
    }

    #[test]
    fn a_chat_request_becomes_a_job() {
        let job = chat(
            r#"{"model":"x","messages":[{"role":"developer","content":"Be brief."},
            {"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]}],
            "temperature":0,"max_tokens":7,"stop":"\n","seed":3,"stream":true,
            "stream_options":{"include_usage":true},"user":"ignored","n":1,"top_k":null,
            "chat_template_kwargs":{"enable_thinking":false}}"#,
        )
        .unwrap();
        match &job.prompt {
            JobPrompt::Chat(m, extra) => {
                assert_eq!(
                    m,
                    &[
                        ("system".to_string(), "Be brief.".to_string()),
                        ("user".to_string(), "Hi there".to_string())
                    ]
                );
                assert_eq!(extra["enable_thinking"], false);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(job.max_tokens, Some(7));
        assert_eq!(job.sampling.temperature, 0.0);
        assert_eq!(job.sampling.seed, 3);
        assert_eq!(job.stop, ["\n"]);
        assert!(job.stream && job.include_usage);
    }

    #[test]
    fn unsupported_or_invalid_fields_are_named() {
        for (body, param) in [
            (r#"{"messages":[{"role":"user","content":"a"}],"n":2}"#, "n"),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"temperature":3}"#,
                "temperature",
            ),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"presence_penalty":0.5}"#,
                "presence_penalty",
            ),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"tools":[{"type":"function"}]}"#,
                "tools",
            ),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"max_tokens":0}"#,
                "max_tokens",
            ),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"stop":["", "x"]}"#,
                "stop",
            ),
            (r#"{"messages":[]}"#, "messages"),
            (
                r#"{"messages":[{"role":"user","content":"a"}],"chat_template_kwargs":{"messages":1}}"#,
                "chat_template_kwargs",
            ),
            (
                r#"{"messages":[{"role":"tool","content":"a"}]}"#,
                "messages",
            ),
            (
                r#"{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}"#,
                "messages",
            ),
        ] {
            let err = chat(body).unwrap_err();
            assert_eq!(
                (err.status, err.param),
                (400, Some(param)),
                "{body}: {err:?}"
            );
            assert!(
                err.message.contains(param) || param == "messages",
                "{err:?}"
            );
        }
        let err = chat(r#"{"messages": [}"#).unwrap_err();
        assert!(err.message.contains("line 1 column"), "{err:?}");
        let err = chat(r#"{"model":"x"}"#).unwrap_err();
        assert!(err.message.contains("messages"), "{err:?}");
    }

    #[test]
    fn completion_prompts_take_text_or_token_ids() {
        let d = defaults();
        let job = |b: &str| parse::<CompletionRequest>(b.as_bytes())?.into_job(&d);
        // Clients that send every field send nulls.
        let nulls = job(r#"{"prompt":"x","stream":null,"stop":null,"n":null,"max_tokens":null}"#);
        assert!(!nulls.unwrap().stream);
        assert!(matches!(
            job(r#"{"prompt":"Once"}"#).unwrap().prompt,
            JobPrompt::Text(t) if t == "Once"
        ));
        assert!(matches!(
            job(r#"{"prompt":[1,2,3]}"#).unwrap().prompt,
            JobPrompt::Tokens(t) if t == [1, 2, 3]
        ));
        let err = job(r#"{"prompt":["a","b"]}"#).unwrap_err();
        assert_eq!(err.param, Some("prompt"));
        // Without a seed, requests draw different ones.
        let (a, b) = (
            job(r#"{"prompt":"x"}"#).unwrap(),
            job(r#"{"prompt":"x"}"#).unwrap(),
        );
        assert_ne!(a.sampling.seed, b.sampling.seed);
    }
}
