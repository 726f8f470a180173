//! `mlxcel chat` over piped stdin on the default model (SmolLM2-135M-Instruct, fetched once
//! into the mlxcel cache): replies on stdout, per-turn numbers on stderr, the second turn
//! reusing the first's cache; a model without a tokenizer is refused with a reason.

mod common;

use std::path::PathBuf;
use std::process::Output;

fn chat(args: &[&str], input: &str) -> Output {
    let mut all = vec!["chat"];
    all.extend_from_slice(args);
    common::mlxcel_with_stdin(&all, Some(input))
}

/// The numbers in a `--profile` line: (prompt tokens, reused).
fn turn_numbers(line: &str) -> (usize, usize) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = |w: &str| words.iter().position(|x| *x == w).unwrap();
    let prompt = words[at("[prompt") + 1].parse().unwrap();
    let reused = words[at("reused") - 1].parse().unwrap();
    (prompt, reused)
}

#[test]
fn piped_turns_reply_and_reuse_the_cache() {
    let out = chat(
        &["--max-tokens", "24", "--profile", "--kv", "turbo4"],
        "What is the capital of France?\n\n/stats\nAnd of Italy?\n/quit\nNever sent.\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let replies: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(replies.len(), 2, "two replies: {stdout}");
    assert!(replies[0].contains("Paris"), "{stdout}");
    let turns: Vec<(usize, usize)> = stderr
        .lines()
        .filter(|l| l.starts_with("[prompt"))
        .map(turn_numbers)
        .collect();
    assert_eq!(turns.len(), 2, "{stderr}");
    assert_eq!(turns[0].1, 0, "nothing to reuse in the first turn");
    assert!(
        turns[1].1 >= turns[0].0 && turns[1].1 < turns[1].0,
        "the second turn reuses at least the first's prompt: {turns:?}"
    );
    assert!(
        stderr.contains("2 messages;"),
        "/stats after one turn: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_model_without_a_tokenizer_is_refused() {
    let cfg = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../mlxcel-models/tests/fixtures/tiny/llama3/config.json");
    let out = chat(
        &["--model", &format!("synthetic:{}", cfg.display())],
        "hi\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("has no tokenizer (synthetic weights)"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
