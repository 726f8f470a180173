//! The GGUF-rebuilt tokenizer and minijinja chat rendering against HF transformers
//! (`fixtures/smollm2_chat_reference.json`, made by `make_smollm2_chat_reference.py`).

mod common;

use mlxcel_models::loader::gguf::GgufFile;
use mlxcel_models::tokenizer::chat::{apply_chat_template, Message};
use mlxcel_models::tokenizer::{gguf_bpe, StreamDecoder};
use serde_json::Value;

fn tokenizer() -> mlxcel_models::tokenizer::Tokenizer {
    let path = common::smollm2_gguf();
    gguf_bpe::from_gguf(&GgufFile::open(&path).unwrap()).unwrap()
}

#[test]
fn chat_template_and_special_tokens_match_transformers() {
    let tok = tokenizer();
    let refs: Value =
        serde_json::from_str(include_str!("fixtures/smollm2_chat_reference.json")).unwrap();
    for r in refs.as_array().unwrap() {
        let msgs: Vec<Message> = r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| Message::new(m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        let text = apply_chat_template(&tok, &msgs).unwrap();
        assert_eq!(text, r["text"].as_str().unwrap());
        let ids = tok.encode(&text).unwrap();
        let want: Vec<u32> = r["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(ids, want, "ids of {text:?}");
    }
}

#[test]
fn tokenizer_round_trips_text_and_streams_whole_characters() {
    let tok = tokenizer();
    let text = "Digits 12345, accents café, emoji 🚀 and\nnew lines.";
    let ids = tok.encode(text).unwrap();
    // SmolLM2 splits digits one per token.
    let digits: Vec<String> = tok
        .encode("12345")
        .unwrap()
        .iter()
        .map(|&i| tok.decode(&[i], false).unwrap())
        .collect();
    assert_eq!(digits, vec!["1", "2", "3", "4", "5"]);
    assert_eq!(tok.decode(&ids, false).unwrap(), text);
    let mut sd = StreamDecoder::new();
    let mut streamed = String::new();
    for &i in &ids {
        let piece = sd.push(&tok, i).unwrap();
        assert!(
            !piece.contains('\u{FFFD}'),
            "a partial character was emitted"
        );
        streamed.push_str(&piece);
    }
    assert_eq!(streamed, text);
    assert!(tok.is_eos(tok.token_to_id("<|im_end|>").unwrap()));
}

#[test]
fn extra_template_variables_reach_the_template_and_cannot_replace_its_own() {
    use mlxcel_models::tokenizer::chat::apply_chat_template_with;
    let mut tok = tokenizer();
    // A template that reads a variable as Qwen3's does (`enable_thinking`).
    tok.chat_template = Some(
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}\
         {% if add_generation_prompt %}<assistant>{% if enable_thinking is defined and \
         enable_thinking is false %}<think></think>{% endif %}{% endif %}"
            .into(),
    );
    let msgs = [Message::new("user", "Hi")];
    let extra = |v: Value| v.as_object().unwrap().clone();
    let plain = apply_chat_template(&tok, &msgs).unwrap();
    assert_eq!(plain, "<user>Hi<assistant>");
    let off = apply_chat_template_with(
        &tok,
        &msgs,
        &extra(serde_json::json!({"enable_thinking": false})),
    );
    assert_eq!(off.unwrap(), "<user>Hi<assistant><think></think>");
    let on = apply_chat_template_with(
        &tok,
        &msgs,
        &extra(serde_json::json!({"enable_thinking": true})),
    );
    assert_eq!(on.unwrap(), plain);
    let err = apply_chat_template_with(&tok, &msgs, &extra(serde_json::json!({"messages": []})))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`messages`"), "{err}");
}
