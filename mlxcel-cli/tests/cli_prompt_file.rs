//! `mlxcel generate --prompt-file`: a prompt from a file or stdin gives the same token ids as
//! the same text on the command line (with --prompt appended after a blank line), and a bad
//! file is refused with its name.

mod common;

use std::process::Output;

fn generate(args: &[&str], stdin: Option<&str>) -> Output {
    let mut all = vec!["generate", "--max-tokens", "1", "--json"];
    all.extend_from_slice(args);
    common::mlxcel_with_stdin(&all, stdin)
}

fn prompt_ids(out: &Output) -> Vec<u64> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["prompt_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn a_prompt_file_reads_as_the_same_text_on_the_command_line() {
    let dir = common::fresh_dir("prompt-file");
    let doc = "The keeper of the lighthouse wrote one word in the log: lantern.\nThen he slept.";
    let path = dir.join("doc.txt");
    std::fs::write(&path, doc).unwrap();
    let path = path.to_str().unwrap();
    let question = "Which word did the keeper write?";

    let inline = prompt_ids(&generate(
        &["--prompt", &format!("{doc}\n\n{question}")],
        None,
    ));
    let from_file = prompt_ids(&generate(
        &["--prompt-file", path, "--prompt", question],
        None,
    ));
    assert_eq!(from_file, inline);
    let from_stdin = prompt_ids(&generate(
        &["--prompt-file", "-", "--prompt", question],
        Some(doc),
    ));
    assert_eq!(from_stdin, inline);
    // The file alone is the whole message.
    let alone = prompt_ids(&generate(&["--prompt-file", path], None));
    assert_eq!(alone, prompt_ids(&generate(&["--prompt", doc], None)));
    assert!(alone.len() < inline.len());
}

#[test]
fn bad_prompt_files_are_refused_with_their_name() {
    let dir = common::fresh_dir("prompt-bad");
    let binary = dir.join("binary.txt");
    std::fs::write(&binary, [b'o', b'k', 0xff, 0xfe]).unwrap();
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "  \n").unwrap();
    for (path, want) in [
        (
            "/nonexistent/prompt.txt",
            "--prompt-file /nonexistent/prompt.txt",
        ),
        (
            binary.to_str().unwrap(),
            "not UTF-8 text (invalid byte at offset 2)",
        ),
        (empty.to_str().unwrap(), "the file is empty"),
    ] {
        let out = generate(&["--prompt-file", path], None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(want), "{path}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let out = generate(&["--prompt-file", "/x", "--prompt-tokens", "3"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--prompt-tokens replaces the prompt"), "{err}");
}
