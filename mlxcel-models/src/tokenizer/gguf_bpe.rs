//! Rebuilds an HF byte-level BPE tokenizer from GGUF metadata (`tokenizer.ggml.*`).
//!
//! llama.cpp names the pre-tokenizer in `tokenizer.ggml.pre`; each name maps to the
//! splitting rule of the original HF tokenizer. The tokenizer is assembled as a
//! `tokenizer.json` document and handed to the `tokenizers` crate, so encoding is the
//! same code path as for HF checkpoints.

use serde_json::{json, Value};

use super::Tokenizer;
use crate::error::{ModelError, Result};
use crate::loader::gguf::{GgufFile, GgufValue};

/// GPT-2's split rule, also used by SmolLM2 after splitting digits.
const GPT2_SPLIT: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// Qwen2: like Llama-3's rule but one digit per piece.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Llama-3: numbers in pieces of up to three digits.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn split(pattern: &str) -> Value {
    json!({"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": false})
}

fn byte_level(use_regex: bool) -> Value {
    json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": use_regex})
}

/// The pre-tokenizer for a `tokenizer.ggml.pre` name.
fn pre_tokenizer(pre: &str) -> Result<Value> {
    Ok(match pre {
        "smollm" => json!({"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": true}, byte_level(true)]}),
        "qwen2" | "deepseek-r1-qwen" => json!({"type": "Sequence", "pretokenizers": [
            split(QWEN2_SPLIT), byte_level(false)]}),
        "llama-bpe" | "llama3" | "smaug-bpe" => json!({"type": "Sequence", "pretokenizers": [
            split(LLAMA3_SPLIT), byte_level(false)]}),
        "gpt2" | "default" => json!({"type": "Sequence", "pretokenizers": [
            split(GPT2_SPLIT), byte_level(false)]}),
        other => {
            return Err(ModelError::Tokenizer(format!(
                "GGUF pre-tokenizer '{other}' is not supported (supported: smollm, qwen2, llama-bpe, gpt2)"
            )))
        }
    })
}

fn strings(g: &GgufFile, key: &str) -> Result<Vec<String>> {
    let arr = g
        .get(key)
        .and_then(GgufValue::as_array)
        .ok_or_else(|| ModelError::MissingField {
            path: g.path.clone(),
            field: key.into(),
            expected: "an array of strings".into(),
        })?;
    arr.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| ModelError::MissingField {
                    path: g.path.clone(),
                    field: key.into(),
                    expected: "an array of strings".into(),
                })
        })
        .collect()
}

/// Builds the tokenizer of a GGUF model.
pub fn from_gguf(g: &GgufFile) -> Result<Tokenizer> {
    let model = g.get_str("tokenizer.ggml.model")?;
    if model != "gpt2" {
        return Err(ModelError::Tokenizer(format!(
            "{}: tokenizer.ggml.model '{model}' is not supported (only byte-level BPE, 'gpt2')",
            g.path.display()
        )));
    }
    let tokens = strings(g, "tokenizer.ggml.tokens")?;
    let merges = strings(g, "tokenizer.ggml.merges")?;
    let types: Vec<u64> = g
        .get("tokenizer.ggml.token_type")
        .and_then(GgufValue::as_array)
        .map(|a| a.iter().map(|v| v.as_u64().unwrap_or(1)).collect())
        .unwrap_or_else(|| vec![1; tokens.len()]);
    let pre = g
        .get("tokenizer.ggml.pre")
        .and_then(GgufValue::as_str)
        .unwrap_or("default");
    let vocab: serde_json::Map<String, Value> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), json!(i)))
        .collect();
    // Control (3) and user-defined (4) tokens are matched whole, before BPE.
    let added: Vec<Value> = tokens
        .iter()
        .enumerate()
        .filter(|(i, _)| matches!(types.get(*i), Some(3) | Some(4)))
        .map(|(i, t)| {
            json!({"id": i, "content": t, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": types[i] == 3})
        })
        .collect();
    let doc = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": pre_tokenizer(pre)?,
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
                  "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                  "vocab": vocab, "merges": merges}
    });
    let inner: tokenizers::Tokenizer = serde_json::from_value(doc)
        .map_err(|e| ModelError::Tokenizer(format!("{}: {e}", g.path.display())))?;
    let id = |key: &str| g.get(key).and_then(GgufValue::as_u64).map(|x| x as u32);
    let name = |i: u32| tokens.get(i as usize).cloned().unwrap_or_default();
    let bos = id("tokenizer.ggml.bos_token_id");
    let eos = id("tokenizer.ggml.eos_token_id");
    let mut eos_ids: Vec<u32> = eos.into_iter().collect();
    // Chat models end a turn with <|im_end|> / <|eot_id|> even when EOS is another token.
    for t in ["<|im_end|>", "<|eot_id|>", "<|endoftext|>"] {
        if let Some(i) = inner.token_to_id(t) {
            if !eos_ids.contains(&i) {
                eos_ids.push(i);
            }
        }
    }
    Ok(Tokenizer {
        inner,
        bos_token: bos.map(|b| (b, name(b))),
        add_bos: g
            .get("tokenizer.ggml.add_bos_token")
            .and_then(|v| match v {
                GgufValue::Bool(b) => Some(*b),
                _ => None,
            })
            .unwrap_or(false),
        eos_ids,
        eos_token: eos.map(name),
        chat_template: g
            .get("tokenizer.chat_template")
            .and_then(GgufValue::as_str)
            .map(str::to_string),
    })
}
