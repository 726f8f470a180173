//! `mlxcel recommend-quant` / `mlxcel --recommend-quant`: the pick follows the context and the
//! memory, every mode's size is listed, and bad input is refused with a reason.

use std::process::Command;

fn recommend(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mlxcel"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_pick_follows_context_and_memory() {
    let m = ["--model", "synthetic:llama3-8b-4bit"];
    // 8K in plenty of memory: fp16.
    let (ok, out, err) = recommend(
        &[
            &["--recommend-quant"][..],
            &m,
            &["--context", "8192", "--memory-gb", "80"],
        ]
        .concat(),
    );
    assert!(ok, "{err}");
    assert!(out.contains("recommended: --kv fp16"), "{out}");
    for mode in ["fp16", "int8", "turbo4-asym", "turbo4", "turbo3"] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{mode} "))),
            "{mode}: {out}"
        );
    }
    // 128K: a compressed mode even with room for fp16.
    let (ok, out, _) = recommend(
        &[
            &["recommend-quant"][..],
            &m,
            &["--context", "131072", "--memory-gb", "80"],
        ]
        .concat(),
    );
    assert!(ok && out.contains("recommended: --kv turbo4-asym"), "{out}");
    // 32K in 8 GB: fp16 does not fit; the pick is a mode marked as fitting.
    let (ok, out, _) = recommend(
        &[
            &["recommend-quant"][..],
            &m,
            &["--context", "32768", "--memory-gb", "8"],
        ]
        .concat(),
    );
    assert!(ok, "{out}");
    let fp16 = out.lines().find(|l| l.starts_with("fp16 ")).unwrap();
    assert!(fp16.contains(" no "), "{fp16}");
    let pick = out
        .lines()
        .find_map(|l| l.strip_prefix("recommended: --kv "))
        .unwrap()
        .trim();
    let row = out
        .lines()
        .find(|l| l.starts_with(&format!("{pick} ")))
        .unwrap();
    assert!(row.contains(" yes "), "{row}");
    // Nothing fits: no pick, and the reason says so.
    let (ok, out, _) = recommend(
        &[
            &["recommend-quant"][..],
            &m,
            &["--context", "4096", "--memory-gb", "2"],
        ]
        .concat(),
    );
    assert!(
        ok && out.contains("no recommendation: the weights alone"),
        "{out}"
    );
}

#[test]
fn bad_input_is_refused() {
    let (ok, _, err) = recommend(&["recommend-quant", "--model", "synthetic:nope"]);
    assert!(!ok && err.contains("not a preset"), "{err}");
    let (ok, _, err) = recommend(&[
        "recommend-quant",
        "--model",
        "synthetic:llama3-8b-4bit",
        "--memory-gb=-3",
    ]);
    assert!(
        !ok && err.contains("--memory-gb must be a positive"),
        "{err}"
    );
    let (ok, _, err) = recommend(&[
        "recommend-quant",
        "--model",
        "synthetic:llama3-8b-4bit",
        "--context",
        "0",
    ]);
    assert!(!ok && err.contains("--context must be at least 1"), "{err}");
}
