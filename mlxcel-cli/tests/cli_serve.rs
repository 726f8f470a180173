//! `mlxcel serve` on the default model (SmolLM2-135M-Instruct), spoken to over HTTP as an
//! OpenAI client would: a greedy chat reply equals `mlxcel generate`'s for the same message
//! (a separate process and code path), its streamed form carries the same text, a follow-up
//! turn reuses the first turn's cache, bad requests get a 400 that names the field, and a
//! client that disconnects stops its generation.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A running server: its base URL and everything it has written to stderr so far. Killed
/// when dropped.
struct Server {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mlxcel"))
            .args(["serve", "--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("at http://") {
                    let _ = tx.send(line[at + 3..].trim().to_string());
                }
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        // The first run may fetch the default model.
        let url = match rx.recv_timeout(Duration::from_secs(600)) {
            Ok(u) => u,
            Err(_) => {
                let _ = child.kill();
                panic!("the server did not start: {}", log.lock().unwrap());
            }
        };
        Server { child, url, log }
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        match ureq::post(&format!("{}{path}", self.url)).send_json(body.clone()) {
            Ok(r) => (r.status(), r.into_json().unwrap()),
            Err(ureq::Error::Status(code, r)) => (code, r.into_json().unwrap()),
            Err(e) => panic!("{path}: {e}"),
        }
    }

    /// Waits up to `secs` for `needle` in the server's log.
    fn log_shows(&self, needle: &str, secs: u64) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(secs) {
            if self.log.lock().unwrap().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

/// The `data:` payloads of a server-sent event stream.
fn events(body: &str) -> Vec<&str> {
    body.split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: "))
        .collect()
}

const QUESTION: &str = "What is the capital of France?";

#[test]
fn chat_completions_match_generate_stream_and_reuse_the_cache() {
    let server = Server::start(&["--kv", "turbo4"]);
    let ask = json!({
        "model": "anything",
        "messages": [{"role": "user", "content": QUESTION}],
        "temperature": 0,
        "max_tokens": 24,
    });
    let (status, reply) = server.post("/chat/completions", &ask);
    assert_eq!(status, 200, "{reply}");
    let text = reply["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("Paris"), "{reply}");
    assert_eq!(reply["object"], "chat.completion");
    let usage = &reply["usage"];
    let prompt_tokens = usage["prompt_tokens"].as_u64().unwrap();
    assert_eq!(
        usage["completion_tokens"].as_u64().unwrap() + prompt_tokens,
        usage["total_tokens"].as_u64().unwrap()
    );

    // The same message through `mlxcel generate` (its own process and loop).
    let out = Command::new(env!("CARGO_BIN_EXE_mlxcel"))
        .args(["generate", "--kv", "turbo4", "--max-tokens", "24", "--json"])
        .args(["--prompt", QUESTION])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(text, generated["text"], "serve vs generate");
    assert_eq!(
        prompt_tokens,
        generated["prompt_tokens"].as_array().unwrap().len() as u64
    );

    // Streamed: the deltas join into the same text; usage last, then [DONE].
    let mut streamed = ask.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let r = ureq::post(&format!("{}/chat/completions", server.url))
        .send_json(streamed)
        .unwrap();
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let body = r.into_string().unwrap();
    let ev = events(&body);
    assert_eq!(ev.last(), Some(&"[DONE]"), "{body}");
    let chunks: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let joined: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(joined, text);
    let finish = &chunks[chunks.len() - 2]["choices"][0]["finish_reason"];
    assert_eq!(finish, &reply["choices"][0]["finish_reason"]);
    let last = &chunks[chunks.len() - 1];
    assert_eq!(
        last["usage"]["completion_tokens"],
        usage["completion_tokens"]
    );
    // The same prompt again: all but its last token came from the cache.
    assert_eq!(
        last["usage"]["prompt_tokens_details"]["cached_tokens"],
        prompt_tokens - 1
    );

    // A follow-up turn: the first turn's prompt is reused from the cache.
    let follow = json!({
        "messages": [
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": text},
            {"role": "user", "content": "And of Italy?"},
        ],
        "temperature": 0,
        "max_tokens": 16,
    });
    let (status, second) = server.post("/chat/completions", &follow);
    assert_eq!(status, 200, "{second}");
    let cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    let prompt2 = second["usage"]["prompt_tokens"].as_u64().unwrap();
    assert!(
        cached >= prompt_tokens && cached < prompt2,
        "cached {cached} of {prompt2}; the first prompt had {prompt_tokens}"
    );
    assert!(!server.log.lock().unwrap().contains("panicked"));
}

#[test]
fn bad_requests_are_refused_by_name_and_disconnects_stop_the_generation() {
    let server = Server::start(&[]);
    let user = json!([{"role": "user", "content": "Hi"}]);
    for (path, body, param) in [
        ("/chat/completions", json!({"messages": user, "n": 2}), "n"),
        (
            "/chat/completions",
            json!({"messages": user, "max_tokens": 100000}),
            "max_tokens",
        ),
        (
            "/chat/completions",
            json!({"messages": [{"role": "tool", "content": "x"}]}),
            "messages",
        ),
        ("/completions", json!({"prompt": [1, 2, 999999]}), "prompt"),
        ("/completions", json!({"prompt": {"a": 1}}), "prompt"),
    ] {
        let (status, v) = server.post(path, &body);
        assert_eq!(status, 400, "{body}: {v}");
        assert_eq!(v["error"]["param"], param, "{v}");
        assert_eq!(v["error"]["type"], "invalid_request_error");
    }
    let (status, v) = match ureq::post(&format!("{}/chat/completions", server.url))
        .set("content-type", "application/json")
        .send_string("{\"messages\": [")
    {
        Err(ureq::Error::Status(c, r)) => (c, r.into_json::<Value>().unwrap()),
        other => panic!("{other:?}"),
    };
    assert_eq!(status, 400);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("line 1"),
        "{v}"
    );
    match ureq::get(&format!("{}/nowhere", server.url)).call() {
        Err(ureq::Error::Status(404, _)) => {}
        other => panic!("{other:?}"),
    }
    let models: Value = ureq::get(&format!("{}/models", server.url))
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    assert_eq!(models["data"][0]["object"], "model");

    // A long reply, read for a few events and then dropped.
    let r = ureq::post(&format!("{}/chat/completions", server.url))
        .send_json(json!({
            "messages": [{"role": "user", "content": "Count from 1 to 500, separated by commas."}],
            "temperature": 0,
            "max_tokens": 4000,
            "stream": true,
        }))
        .unwrap();
    let mut reader = r.into_reader();
    let mut buf = [0u8; 256];
    let mut got = 0;
    while got < 600 {
        let n = reader.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended early");
        got += n;
    }
    drop(reader);
    assert!(
        server.log_shows("stop: Cancelled", 120),
        "{}",
        server.log.lock().unwrap()
    );
    // The server goes on serving.
    let (status, v) = server.post(
        "/completions",
        &json!({"prompt": "The capital of France is", "max_tokens": 4, "temperature": 0}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
}

#[test]
fn an_api_key_guards_the_v1_endpoints() {
    let server = Server::start(&["--api-key", "sesame"]);
    let models = format!("{}/models", server.url);
    let status = |auth: Option<&str>| {
        let mut r = ureq::get(&models);
        if let Some(a) = auth {
            r = r.set("authorization", a);
        }
        match r.call() {
            Ok(r) => r.status(),
            Err(ureq::Error::Status(c, r)) => {
                let v: Value = r.into_json().unwrap();
                assert!(v["error"]["message"].as_str().unwrap().contains("API key"));
                c
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(status(None), 401);
    assert_eq!(status(Some("Bearer wrong")), 401);
    assert_eq!(status(Some("Bearer sesame")), 200);
    let health = server.url.trim_end_matches("/v1").to_string() + "/health";
    assert_eq!(ureq::get(&health).call().unwrap().status(), 200);
}

#[test]
fn kv_slots_keep_alternating_conversations_warm() {
    // With one slot this fails: A's second turn reuses only the opening B shares with it.
    let server = Server::start(&["--kv-slots", "2", "--kv", "turbo4"]);
    let system = json!({"role": "system", "content": "You are a helpful assistant."});
    let ask = |messages: Value| {
        let (status, v) = server.post(
            "/chat/completions",
            &json!({"messages": messages, "temperature": 0, "max_tokens": 12}),
        );
        assert_eq!(status, 200, "{v}");
        let reply = v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_string();
        let usage = &v["usage"];
        (
            reply,
            usage["prompt_tokens"].as_u64().unwrap(),
            usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap(),
        )
    };
    let first = |q: &str| ask(json!([system, {"role": "user", "content": q}]));
    let second = |q: &str, r: &str, q2: &str| {
        ask(json!([system, {"role": "user", "content": q},
            {"role": "assistant", "content": r}, {"role": "user", "content": q2}]))
    };
    let (qa, qb, qc) = (QUESTION, "Name a prime number.", "What colour is grass?");
    let (ra, pa, _) = first(qa);
    let (rb, pb, cb) = first(qb);
    // B shares only the opening with A: it took the empty slot, so A's history stays.
    assert!(cb < pa, "B reused {cb} of A's {pa}");
    let (_, _, ca2) = second(qa, &ra, "And of Italy?");
    assert!(
        ca2 >= pa,
        "A's second turn reused {ca2}; its first prompt had {pa}"
    );
    // A third conversation takes the least recently used slot (B's): B starts over.
    let _ = first(qc);
    let (_, _, cb2) = second(qb, &rb, "And another one?");
    assert!(
        cb2 < pb,
        "B's second turn reused {cb2} after eviction (its first prompt: {pb})"
    );
    assert!(
        server.log_shows("in slot 1", 1),
        "{}",
        server.log.lock().unwrap()
    );
}

#[test]
fn a_reply_without_text_is_cancelled_too_when_its_client_leaves() {
    // Synthetic weights have no tokenizer: their replies send no text, so only the worker's
    // watcher can notice the closed connection.
    let cfg = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../mlxcel-models/tests/fixtures/tiny/llama3/config.json");
    let server = Server::start(&["--model", &format!("synthetic:{}", cfg.display())]);
    let agent = ureq::AgentBuilder::new()
        .timeout_read(Duration::from_millis(500))
        .build();
    let r = agent
        .post(&format!("{}/completions", server.url))
        .send_json(json!({"prompt": [1, 2, 3, 4, 5], "max_tokens": 4000, "temperature": 0}));
    assert!(
        r.is_err(),
        "a 4000-token reply came back within the timeout"
    );
    assert!(
        server.log_shows("stop: Cancelled", 60),
        "{}",
        server.log.lock().unwrap()
    );
    assert!(!server.log.lock().unwrap().contains("4000 generated"));
}
